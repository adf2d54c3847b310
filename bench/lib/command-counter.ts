/**
 * BENCH_PROFILE: the Redis commands this process sends (the scheduler's, in scheduler-scale), by
 * name, with each EVALSHA named by its script (orch's Lua and BullMQ's alike: every script an
 * ioredis connection defined is in its `scriptsSet`). INFO commandstats counts every client of the
 * server, the stand-in hosts' included; this counts what the scheduler itself costs per block.
 * Counting wraps `Redis.prototype.sendCommand`, which every command passes, pipelined or not.
 */
import { Redis } from 'ioredis';

interface CommandLike {
  name: string;
  args: unknown[];
}

export class CommandCounter {
  private readonly counts = new Map<string, number>();
  private readonly scriptNames = new Map<string, string>();

  /** Counts from now on, for the rest of the process (a bench's life). */
  start(): void {
    const proto = Redis.prototype as unknown as {
      sendCommand: (this: Redis, command: CommandLike, ...rest: unknown[]) => unknown;
    };
    const original = proto.sendCommand;
    const self = this;
    proto.sendCommand = function (this: Redis, command: CommandLike, ...rest: unknown[]) {
      self.count(this, command);
      return original.call(this, command, ...rest);
    };
  }

  /** Commands by name, most first. */
  table(): { command: string; calls: number }[] {
    return [...this.counts].map(([command, calls]) => ({ command, calls })).sort((a, b) => b.calls - a.calls);
  }

  private count(redis: Redis, command: CommandLike): void {
    const name =
      command.name === 'evalsha' ? `evalsha ${this.scriptName(redis, String(command.args[0]))}` : command.name;
    this.counts.set(name, (this.counts.get(name) ?? 0) + 1);
  }

  private scriptName(redis: Redis, sha: string): string {
    let name = this.scriptNames.get(sha);
    if (!name) {
      const scripts = (redis as unknown as { scriptsSet?: Record<string, { sha?: string }> }).scriptsSet ?? {};
      for (const [n, s] of Object.entries(scripts)) if (s.sha) this.scriptNames.set(s.sha, n);
      name = this.scriptNames.get(sha) ?? sha.slice(0, 8);
    }
    return name;
  }
}
