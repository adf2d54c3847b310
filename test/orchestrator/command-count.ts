import { Redis } from 'ioredis';

/**
 * Every command any connection of this process sends, with its argument count, and how many of
 * them `isPass` marks (one per scheduler pass, say). Counted where every command passes, pipelined
 * or not (`Redis.prototype.sendCommand`), until `stop`.
 */
export function countCommands(isPass: (c: { name: string; args: unknown[] }) => boolean = () => false): {
  take: () => { commands: number; args: number; passes: number };
  stop: () => void;
} {
  const proto = Redis.prototype as unknown as {
    sendCommand: (this: Redis, c: { name: string; args: unknown[] }, ...rest: unknown[]) => unknown;
  };
  const original = proto.sendCommand;
  let commands = 0;
  let args = 0;
  let passes = 0;
  proto.sendCommand = function (this: Redis, c: { name: string; args: unknown[] }, ...rest: unknown[]) {
    commands++;
    args += c.args.length;
    if (isPass(c)) passes++;
    return original.call(this, c, ...rest);
  };
  return {
    take: () => {
      const r = { commands, args, passes };
      commands = args = passes = 0;
      return r;
    },
    stop: () => {
      proto.sendCommand = original;
    },
  };
}
