#!/usr/bin/env node
// The `orch` entry point: registers tsx so the TypeScript sources run as they are, then hands
// over to the CLI's main(). Only main() decides the exit code.
import { register } from 'tsx/esm/api';
register();
const { main } = await import('../cli/main.ts');
await main(process.argv.slice(2));
