/**
 * One implementation of the rank protocol under the conformance suite (test/conformance/
 * rank-protocol.test.ts), spoken to as the worker speaks to it: request lines on stdin, raw lines
 * read from its protocol stream (stdout), with a deadline on every read. No schema here: the suite
 * judges what comes back.
 */
import { type ChildProcessWithoutNullStreams, spawn } from 'node:child_process';
import { createInterface } from 'node:readline';

export interface Exit {
  code: number | null;
  signal: NodeJS.Signals | null;
}

export class RankUnderTest {
  readonly child: ChildProcessWithoutNullStreams;
  stderr = '';
  readonly exited: Promise<Exit>;
  private readonly unread: string[] = [];
  private waiting: ((line: string | null) => void) | null = null;
  private ended = false;

  constructor(command: string, args: string[], env: Record<string, string>) {
    this.child = spawn(command, args, { stdio: 'pipe', env: { PATH: process.env.PATH ?? '', ...env } });
    this.child.stderr.on('data', (d: Buffer) => (this.stderr += d.toString()));
    this.child.stdin.on('error', () => {}); // a rank that exited: its answer (or none) is what is judged
    createInterface({ input: this.child.stdout, crlfDelay: Infinity })
      .on('line', (line) => this.deliver(line))
      .on('close', () => {
        this.ended = true;
        this.deliver(null);
      });
    this.exited = new Promise((resolve) => this.child.on('exit', (code, signal) => resolve({ code, signal })));
  }

  private deliver(line: string | null): void {
    const w = this.waiting;
    this.waiting = null;
    if (w !== null) w(line);
    else if (line !== null) this.unread.push(line);
  }

  /** The next line as parsed JSON; null when the stream closed. Fails after `ms`. */
  async next(ms = 20_000): Promise<Record<string, unknown> | null> {
    const queued = this.unread.shift();
    const line =
      queued ??
      (this.ended
        ? null
        : await new Promise<string | null>((resolve, reject) => {
            const timer = setTimeout(
              () => reject(new Error(`no line within ${ms} ms; stderr: ${this.stderr.slice(-2000)}`)),
              ms,
            );
            this.waiting = (l) => {
              clearTimeout(timer);
              resolve(l);
            };
          }));
    if (line === null) return null;
    const parsed: unknown = JSON.parse(line);
    if (typeof parsed !== 'object' || parsed === null || Array.isArray(parsed))
      throw new Error(`not a JSON object line: ${line.slice(0, 300)}`);
    return parsed as Record<string, unknown>;
  }

  write(line: string): void {
    this.child.stdin.write(`${line}\n`);
  }

  async send(request: Record<string, unknown> | string): Promise<Record<string, unknown> | null> {
    this.write(typeof request === 'string' ? request : JSON.stringify(request));
    return this.next();
  }

  async close(ms = 20_000): Promise<Exit> {
    this.child.stdin.end();
    return this.exitWithin(ms);
  }

  async exitWithin(ms = 20_000): Promise<Exit> {
    let timer: NodeJS.Timeout | undefined;
    const deadline = new Promise<never>((_, reject) => {
      timer = setTimeout(() => reject(new Error(`no exit within ${ms} ms; stderr: ${this.stderr.slice(-2000)}`)), ms);
    });
    try {
      return await Promise.race([this.exited, deadline]);
    } finally {
      clearTimeout(timer);
    }
  }

  kill(): void {
    if (this.child.exitCode === null && this.child.signalCode === null) this.child.kill('SIGKILL');
  }
}
