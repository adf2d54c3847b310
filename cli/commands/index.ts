/** Every `orch` command, one module per file; adding a command is adding one line here. */
import type { RegisteredCommand } from '../command.ts';
import { cancelCommand } from './cancel.ts';
import { compareCommand } from './compare.ts';
import { dashboardCommand } from './dashboard.ts';
import { hostsCommand } from './hosts.ts';
import { nightlyCommand } from './nightly.ts';
import { planCommand } from './plan.ts';
import { pruneCommand } from './prune.ts';
import { reportCommand } from './report.ts';
import { serveCommand } from './serve.ts';
import { slurmCommand } from './slurm.ts';
import { statusCommand } from './status.ts';
import { submitCommand } from './submit.ts';
import { traceCommand } from './trace.ts';
import { validateCommand } from './validate.ts';
import { watchCommand } from './watch.ts';
import { workerCommand } from './worker.ts';

export const commands: RegisteredCommand[] = [
  validateCommand,
  planCommand,
  submitCommand,
  serveCommand,
  statusCommand,
  watchCommand,
  cancelCommand,
  reportCommand,
  compareCommand,
  workerCommand,
  hostsCommand,
  slurmCommand,
  nightlyCommand,
  dashboardCommand,
  traceCommand,
  pruneCommand,
];
