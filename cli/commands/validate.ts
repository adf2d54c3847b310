/** `orch validate FILE...`: check experiment specs, suites and cluster files; run nothing. */
import { SpecError, type SpecIssue } from '../../jobs/errors.ts';
import { loadConfigFile, type ConfigKind } from '../../jobs/load-spec.ts';
import { defineCommand } from '../command.ts';

interface FileResult {
  file: string;
  ok: boolean;
  kind?: ConfigKind;
  hash?: string;
  issues: SpecIssue[];
}

export const validateCommand = defineCommand<{ files: string[] }>({
  command: 'validate <files..>',
  describe: 'check spec, suite and cluster files (exit 0: all valid, 2: problems listed)',
  builder: (y) => y.positional('files', { type: 'string', array: true, demandOption: true, describe: 'YAML files' }) as never,
  handler: (argv) => {
    const results = argv.files.map(process.env.ORCH_VALIDATE_STATS === '1' ? validateFileWithStats : validateFile);
    if (argv.json) {
      process.stdout.write(`${JSON.stringify({ ok: results.every((r) => r.ok), files: results }, null, 2)}\n`);
    } else {
      for (const r of results.filter((r) => r.ok)) {
        process.stdout.write(`ok ${r.file} (${r.kind}${r.hash ? ` ${r.hash.slice(0, 12)}` : ''})\n`);
      }
    }
    const issues = results.flatMap((r) => r.issues);
    if (issues.length > 0) throw new SpecError(issues);
  },
});

/**
 * ORCH_VALIDATE_STATS=1: after each file, one stderr line `orch-validate-stats {file, ms,
 * maxrss_kb}` (maxrss: the process's peak so far, the kernel's ru_maxrss), so a test can show
 * that no file, however hostile, costs the reader time or memory.
 */
function validateFileWithStats(file: string): FileResult {
  const started = performance.now();
  const result = validateFile(file);
  const ms = Math.round((performance.now() - started) * 10) / 10;
  process.stderr.write(`orch-validate-stats ${JSON.stringify({ file, ms, maxrss_kb: process.resourceUsage().maxRSS })}\n`);
  return result;
}

function validateFile(file: string): FileResult {
  try {
    const loaded = loadConfigFile(file);
    return { file, ok: true, kind: loaded.kind, ...(loaded.kind === 'experiment' ? { hash: loaded.hash } : {}), issues: [] };
  } catch (err) {
    if (err instanceof SpecError) return { file, ok: false, issues: err.issues };
    throw err;
  }
}
