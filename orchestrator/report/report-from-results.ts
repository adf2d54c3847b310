/** The `orch report --from DIR` command's work: check the arguments and rebuild DIR's report files. */
import { UserInputError } from '../../jobs/errors.ts';
import { type RebuiltReport, rebuildReport } from './rebuild-report.ts';

export async function reportFromResults(from: string | undefined, id: string | undefined): Promise<RebuiltReport> {
  if (from === undefined || id !== undefined) {
    throw new UserInputError(
      'CLI_USAGE',
      from === undefined
        ? 'orch report needs an experiment id, or --from <results dir>'
        : 'orch report takes an experiment id or --from <results dir>, not both',
      {
        hint: 'orch report <id> (from Redis), or orch report --from results/<id> (from the directory alone)',
      },
    );
  }
  return rebuildReport(from);
}
