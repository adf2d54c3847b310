#!/usr/bin/env node
// The `orch` entry point. It runs the CLI compiled into dist/ (scripts/build-cli.mjs, run by
// `npm ci` and `npm run build`) when that build is fresh, and the TypeScript sources through tsx
// otherwise: a start without compiling costs a fraction of one that compiles every file. A build
// older than any of its sources (after a `git pull`, or an edit) never runs: bin/dist-state.mjs
// decides, and orch says on stderr that it fell back. ORCH_FROM_SOURCE=1 always runs the sources
// (the tests do, so they test the files as they are). Only main() decides the exit code.
import { distState } from './dist-state.mjs';
import { startThreadpoolNudge } from './threadpool-nudge.mjs';

// before anything reads a file: a lost threadpool wakeup costs a second, not the run (threadpool-nudge.mjs)
startThreadpoolNudge();

const fromSource = process.env.ORCH_FROM_SOURCE === '1';
const dist = fromSource ? null : distState();
let main;
if (dist?.fresh) {
  ({ main } = await import(dist.main));
} else {
  if (dist && dist.reason !== 'dist/ is not built') {
    process.stderr.write(
      `orch: ${dist.reason}; running the sources instead (slower start): npm run build refreshes dist/\n`,
    );
  }
  const { register } = await import('tsx/esm/api');
  register();
  ({ main } = await import('../cli/main.ts'));
}
await main(process.argv.slice(2));
