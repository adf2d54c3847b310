/**
 * `orch serve`: the scheduler service. One leader at a time; a second `serve` stands by and takes
 * over within seconds when the leader dies, re-attaching to the blocks in flight. Runs until
 * SIGINT/SIGTERM (then steps down at once, so a standby takes over without waiting for the TTL).
 */
import { startNightlyWorker } from '../../orchestrator/nightly/nightly-processor.ts';
import { Scheduler } from '../../orchestrator/scheduler/scheduler.ts';
import { orchLog } from '../embedded/log.ts';
import { requireTarget } from '../embedded/redis-target.ts';
import { defineCommand } from '../command.ts';

export const serveCommand = defineCommand<{ leaderTtl: number }>({
  command: 'serve',
  describe: 'run the scheduler (one leader per Redis; others stand by)',
  builder: (y) =>
    y.option('leader-ttl', { type: 'number', default: 3000, describe: 'leader lease TTL in ms (takeover time after a crash)' }) as never,
  handler: async (argv) => {
    const log = orchLog('serve', process.env.ORCH_LOG ?? 'info');
    const target = await requireTarget('serve', log);
    await target.close();
    const scheduler = new Scheduler({ url: target.url, prefix: target.prefix, log, leaderTtlMs: argv.leaderTtl });
    const say = (event: string, extra: Record<string, unknown> = {}) =>
      process.stdout.write(
        argv.json
          ? `${JSON.stringify({ event, id: scheduler.lease.id, at: new Date().toISOString(), ...extra })}\n`
          : `${new Date().toISOString()} ${event} (${scheduler.lease.id})${extra.why ? `: ${extra.why}` : ''}\n`,
      );
    scheduler.on('leading', () => say('leader'));
    scheduler.on('deposed', (why: string) => say('standby', { why }));
    say('standby');
    scheduler.start();
    // Nightly suite runs (queue `nightly`): every serve consumes; each run is submitted once.
    const nightly = startNightlyWorker({ url: target.url, prefix: target.prefix, log });
    await new Promise<void>((resolve) => {
      const stop = () => resolve();
      process.once('SIGINT', stop);
      process.once('SIGTERM', stop);
    });
    await nightly.close();
    await scheduler.stop();
    say('stopped');
  },
});
