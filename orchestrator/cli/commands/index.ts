/** Every `orch` command, one module per file; adding a command is adding one line here. */
import type { OrchCommand } from '../command.ts';
import { planCommand } from './plan.ts';
import { validateCommand } from './validate.ts';

export const commands: OrchCommand[] = [
  validateCommand,
  planCommand,
];
