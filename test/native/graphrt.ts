/** Driving the real graphrt binary from tests: one `run`, or a resident `serve` process. */
import { type ChildProcessWithoutNullStreams, spawn, spawnSync } from 'node:child_process';
import { existsSync } from 'node:fs';
import { createInterface } from 'node:readline';
import { type GraphrtLine, parseGraphrtLine } from '../../jobs/graphrt-protocol.ts';

export const GRAPHRT = 'native/build/graphrt';
/**
 * node:test `skip` option: a reason when the binary is not built. Never under CI (which builds
 * it): there a missing binary must fail the graphrt tests, not skip them green.
 */
export const skipWithoutBinary: string | false =
  existsSync(GRAPHRT) || process.env.CI
    ? false
    : `${GRAPHRT} is missing: build it with \`npm run build\` (cmake + a C++20 compiler)`;

export interface RunResult {
  code: number | null;
  lines: GraphrtLine[];
  stderr: string;
}

/** `graphrt <args>`; every stdout line must parse as a protocol line. */
export function runGraphrt(args: string[]): RunResult {
  const r = spawnSync(GRAPHRT, args, { encoding: 'utf8', timeout: 120_000 });
  if (r.error) throw r.error;
  const lines = r.stdout
    .split('\n')
    .filter((l) => l.length > 0)
    .map(parseGraphrtLine);
  return { code: r.status, lines, stderr: r.stderr };
}

export function only<T extends GraphrtLine['type']>(lines: GraphrtLine[], type: T): Extract<GraphrtLine, { type: T }> {
  const found = lines.filter((l) => l.type === type);
  if (found.length !== 1) throw new Error(`expected one ${type} line, got ${found.length}: ${JSON.stringify(lines)}`);
  return found[0] as Extract<GraphrtLine, { type: T }>;
}

/** A resident `graphrt serve`: send a request, await its answer (the lines up to `final`). */
export class ServeProcess {
  readonly child: ChildProcessWithoutNullStreams;
  readonly exited: Promise<{ code: number | null; at: number }>;
  private readonly queue: GraphrtLine[] = [];
  private wake: (() => void) | null = null;

  constructor(args: string[] = ['--backend', 'cpu'], env: NodeJS.ProcessEnv = process.env) {
    this.child = spawn(GRAPHRT, ['serve', ...args], { env });
    this.exited = new Promise((resolve) => this.child.on('exit', (code) => resolve({ code, at: Date.now() })));
    createInterface({ input: this.child.stdout }).on('line', (l) => {
      this.queue.push(parseGraphrtLine(l));
      this.wake?.();
    });
  }

  async next(timeoutMs = 30_000): Promise<GraphrtLine> {
    const deadline = Date.now() + timeoutMs;
    while (this.queue.length === 0) {
      if (Date.now() > deadline) throw new Error(`graphrt serve: no line within ${timeoutMs} ms`);
      await new Promise<void>((resolve) => {
        const t = setTimeout(resolve, Math.max(1, deadline - Date.now()));
        this.wake = () => {
          clearTimeout(t);
          resolve();
        };
      });
      this.wake = null;
    }
    return this.queue.shift() as GraphrtLine;
  }

  /** Writes one raw line and collects the answer up to its final line. */
  async ask(request: unknown): Promise<GraphrtLine[]> {
    this.child.stdin.write(`${typeof request === 'string' ? request : JSON.stringify(request)}\n`);
    const answer: GraphrtLine[] = [];
    for (;;) {
      const line = await this.next();
      answer.push(line);
      if ('final' in line && line.final === true) return answer;
    }
  }
}
