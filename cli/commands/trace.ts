/**
 * `orch trace <id> > trace.json`: an experiment as a Chrome / Perfetto trace (open it in
 * ui.perfetto.dev or chrome://tracing), from its committed records (reps, commit records, gates)
 * and event stream in Redis, or — without REDIS_URL, or with --from-results — from
 * results/<id>/reps.jsonl, summary.json and events.jsonl.
 */
import { existsSync } from 'node:fs';
import { join } from 'node:path';
import type { StreamEvent } from '../../jobs/stream-event.ts';
import type { TraceInput } from '../../orchestrator/trace/chrome-trace.ts';
import { defineCommand } from '../command.ts';
import { withRedisUrlFile } from '../redis-url-option.ts';
import { jsonLine } from '../terminal/json-line.ts';

async function fromResults(dir: string, id: string): Promise<TraceInput> {
  const { UserInputError } = await import('../../jobs/errors.ts');
  const file = join(dir, id, 'events.jsonl');
  if (!existsSync(file)) {
    throw new UserInputError('NO_SUCH_EXPERIMENT', `no ${file}, and no Redis to read experiment "${id}" from`, {
      hint: 'pass --results DIR holding results/<id>/, or export REDIS_URL of the cluster that ran it',
    });
  }
  const { importJsonl } = await import('../../store/event-log.ts');
  const events: StreamEvent[] = [];
  for await (const e of importJsonl(file)) events.push(e);
  const { readResultsDir } = await import('../../orchestrator/report/results-dir.ts');
  const r = readResultsDir(join(dir, id));
  return { events, reps: r.reps(), commits: r.commits, gates: r.gates };
}

export const traceCommand = defineCommand({
  command: 'trace <id>',
  describe: 'write an experiment as a Chrome/Perfetto trace (JSON) on stdout',
  builder: (y) =>
    withRedisUrlFile(y)
      .positional('id', { type: 'string', demandOption: true, describe: 'the experiment' })
      .option('results', { type: 'string', default: 'results', describe: 'folder holding results/<id>/events.jsonl' })
      .option('from-results', {
        type: 'boolean',
        default: false,
        describe: 'read events.jsonl even when REDIS_URL is set',
      }),
  handler: async (argv) => {
    // Loaded here, not at the top: every other command starts without them.
    const { redisUrlFromArgs, requireTarget } = await import('../embedded/redis-target.ts');
    const { chromeTrace } = await import('../../orchestrator/trace/chrome-trace.ts');
    let input: TraceInput;
    if (argv.fromResults || !redisUrlFromArgs(argv, 'trace')) input = await fromResults(argv.results, argv.id);
    else {
      const { orchLog } = await import('../embedded/log.ts');
      const { collectResults } = await import('../../orchestrator/results/collect-results.ts');
      const target = await requireTarget('trace', orchLog('trace'), argv);
      try {
        const c = await collectResults(target.redis, target.prefix, argv.id);
        input = { events: c.events, reps: Object.values(c.reps), commits: c.commits, gates: Object.values(c.gates) };
      } finally {
        await target.close();
      }
    }
    process.stdout.write(jsonLine(chromeTrace(argv.id, input)));
  },
});
