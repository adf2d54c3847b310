/**
 * What one command rep printed, as it prints it: the last lines (for the messages a failure
 * carries), the metric samples parsed from stdout, and the first parse failure, which kills the
 * rep's process group (nothing after it could be trusted). The user's regex runs off this event
 * loop (metric-regex-thread.ts) under a per-line budget, and its answers are taken in line order.
 */
import { UserInputError } from '../../jobs/errors.ts';
import { MAX_RANK_LINE_LABEL } from '../../jobs/line-limit.ts';
import type { MetricParser, MetricSample } from '../../jobs/metric-source.ts';
import { MetricRegexThread, type RegexGroups } from './metric-regex-thread.ts';

/** How many of the last output lines a failure's message shows. */
const TAIL_LINES = 15;

export class RepOutput {
  readonly samples: MetricSample[] = [];
  private readonly tail: string[] = [];
  private parseError: unknown = null;
  private matched: Promise<void> = Promise.resolve();
  private readonly regex: MetricRegexThread | null;

  constructor(
    private readonly parser: MetricParser,
    /** kills the rep's process group */
    private readonly kill: () => void,
    /** names the rep in messages: its arm and command */
    private readonly what: string,
    private readonly opts: {
      regexBudgetMs?: number;
      onLine?: (stream: 'stdout' | 'stderr', line: string) => void;
    } = {},
  ) {
    this.regex = parser.pattern === null ? null : new MetricRegexThread(parser.pattern, opts.regexBudgetMs);
  }

  /** A line of either stream, kept for the tail and passed on. */
  keep(stream: 'stdout' | 'stderr', line: string): void {
    this.tail.push(stream === 'stderr' ? `[stderr] ${line}` : line);
    if (this.tail.length > TAIL_LINES) this.tail.shift();
    this.opts.onLine?.(stream, line);
  }

  /** A stdout line: kept, and parsed for a metric sample. */
  stdout(line: string): void {
    this.keep('stdout', line);
    if (this.parseError) return;
    if (this.regex === null) {
      try {
        this.take(line, null);
      } catch (err) {
        this.fail(err);
      }
      return;
    }
    const groups = this.regex.match(line);
    // after a failure every later line's match rejects too; the first one was already taken
    groups.catch(() => undefined);
    this.matched = this.matched.then(async () => {
      if (this.parseError) return;
      try {
        this.take(line, await groups);
      } catch (err) {
        this.fail(err);
      }
    });
  }

  /** A stdout line over the line limit: the rep is killed, the line's head named. */
  stdoutTooLong(head: string): void {
    this.keep('stdout', `${head}…`);
    if (this.parseError) return;
    this.parseError = new UserInputError(
      'RANK_LINE_TOO_LONG',
      `workload.run.cmd printed a stdout line longer than ${MAX_RANK_LINE_LABEL}; killed (${this.what}); it starts: ${head}`,
      {
        hint: 'print metric lines of sane length; send bulk output to a file',
      },
    );
    this.kill();
  }

  /** Waits for the last lines' matches (each bounded by the regex budget) and stops the regex thread. */
  async settle(): Promise<void> {
    try {
      await this.matched;
    } finally {
      await this.regex?.close();
    }
  }

  /** The first parse failure, thrown once the process ended. */
  throwIfFailed(): void {
    if (this.parseError) throw this.parseError;
  }

  /** The last lines, indented for a message. */
  last(): string {
    return this.tail.map((l) => `  | ${l}`).join('\n') || '  | (no output)';
  }

  private take(line: string, groups: RegexGroups): void {
    const s = this.parser.parseMatched(line, groups);
    if (s) this.samples.push(s);
  }

  private fail(err: unknown): void {
    if (this.parseError) return;
    this.parseError = err;
    this.kill();
  }
}
