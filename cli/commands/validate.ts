/**
 * `orch validate FILE...`: check experiment specs, suites and cluster files; run nothing.
 * --json: `{ ok: true, files }` when all are valid; otherwise the one error object of
 * cli/print-error.ts, with every issue and every file's result in it.
 */
import { SpecError, type SpecIssue } from '../../jobs/errors.ts';
import type { ConfigKind, loadConfigFile as LoadConfigFile } from '../../orchestrator/spec/load-spec.ts';
import { defineCommand } from '../command.ts';
import { withJsonExtra } from '../print-error.ts';
import { jsonLine } from '../terminal/json-line.ts';

interface FileResult {
  file: string;
  ok: boolean;
  kind?: ConfigKind;
  hash?: string;
  issues: SpecIssue[];
}

export const validateCommand = defineCommand({
  command: 'validate <files..>',
  describe: 'check spec, suite and cluster files (exit 0: all valid, 2: problems listed)',
  builder: (y) => y.positional('files', { type: 'string', array: true, demandOption: true, describe: 'YAML files' }),
  handler: async (argv) => {
    // Loaded here, not at the top: `orch --help` starts without the spec schemas (cli/main.ts).
    const { loadConfigFile } = await import('../../orchestrator/spec/load-spec.ts');
    const check = (file: string) => validateFile(loadConfigFile, file);
    const results = argv.files.map(process.env.ORCH_VALIDATE_STATS === '1' ? (f) => withStats(f, check) : check);
    const issues = results.flatMap((r) => r.issues);
    if (argv.json) {
      if (issues.length > 0) throw withJsonExtra(new SpecError(issues), { files: results });
      process.stdout.write(jsonLine({ ok: true, files: results }, 2));
      return;
    }
    for (const r of results.filter((r) => r.ok)) {
      process.stdout.write(`ok ${r.file} (${r.kind}${r.hash ? ` ${r.hash.slice(0, 12)}` : ''})\n`);
    }
    if (issues.length > 0) throw new SpecError(issues);
  },
});

/**
 * ORCH_VALIDATE_STATS=1: after each file, one stderr line `orch-validate-stats {file, ms, cpu_ms,
 * maxrss_kb}` (wall time; the process's CPU time, user + system, which a loaded machine does not
 * inflate; maxrss: the process's peak so far, the kernel's ru_maxrss), so a test can show that no
 * file, however hostile, costs the reader time or memory.
 */
function withStats(file: string, check: (file: string) => FileResult): FileResult {
  const started = performance.now();
  const cpu = process.cpuUsage();
  const result = check(file);
  const ms = Math.round((performance.now() - started) * 10) / 10;
  const used = process.cpuUsage(cpu);
  const cpu_ms = Math.round((used.user + used.system) / 100) / 10;
  process.stderr.write(
    `orch-validate-stats ${JSON.stringify({ file, ms, cpu_ms, maxrss_kb: process.resourceUsage().maxRSS })}\n`,
  );
  return result;
}

function validateFile(loadConfigFile: typeof LoadConfigFile, file: string): FileResult {
  try {
    const loaded = loadConfigFile(file);
    return {
      file,
      ok: true,
      kind: loaded.kind,
      ...(loaded.kind === 'experiment' ? { hash: loaded.hash } : {}),
      issues: [],
    };
  } catch (err) {
    if (err instanceof SpecError) return { file, ok: false, issues: err.issues };
    throw err;
  }
}
