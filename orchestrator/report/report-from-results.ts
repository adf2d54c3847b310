/** The `orch report --from DIR` command's work: rebuild, print, and the verdict's exit code. */
import { UserInputError } from '../../jobs/errors.ts';
import { rebuildReport } from './rebuild-report.ts';
import { verdictExitCode } from './verdict-exit-code.ts';

export async function reportFromResults(from: string | undefined, id: string | undefined, out: (s: string) => void, json: boolean): Promise<number> {
  if (from === undefined || id !== undefined) {
    throw new UserInputError('CLI_USAGE', from === undefined ? 'orch report needs an experiment id, or --from <results dir>' : 'orch report takes an experiment id or --from <results dir>, not both', {
      hint: 'orch report <id> (from Redis), or orch report --from results/<id> (from the directory alone)',
    });
  }
  const w = await rebuildReport(from);
  out(json ? `${JSON.stringify({ experiment: w.experiment, state: w.state, dir: w.dir, accounting: w.accounting, analysis: w.analysis })}\n` : `${w.report}\nresults: ${w.dir}\n`);
  return verdictExitCode(w.analysis);
}
