/** A gang of resident `graphrt serve` ranks on the CPU backend, joined by one rendezvous socket. */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { GraphrtLine } from '../../jobs/graphrt-protocol.ts';
import { ServeProcess } from '../native/graphrt.ts';

export class Gang {
  readonly ranks: ServeProcess[];
  private readonly dir: string;

  constructor(world: number, env: NodeJS.ProcessEnv = {}) {
    this.dir = mkdtempSync(join(tmpdir(), 'orch-gang-'));
    const socket = join(this.dir, 'rv.sock');
    this.ranks = Array.from(
      { length: world },
      (_, rank) =>
        new ServeProcess(
          ['--backend', 'cpu', '--world', String(world), '--rank', String(rank), '--rendezvous', socket],
          { ...process.env, ...env },
        ),
    );
  }

  /** Every rank's hello (they come only once the whole gang has met). */
  hellos(): Promise<GraphrtLine[]> {
    return Promise.all(this.ranks.map((r) => r.next()));
  }

  /** The same request to every rank at once (a collective needs all of them); each rank's answer. */
  askAll(request: Record<string, unknown>): Promise<GraphrtLine[][]> {
    return Promise.all(this.ranks.map((r) => r.ask(request)));
  }

  close(): void {
    for (const r of this.ranks) r.child.kill('SIGKILL');
    rmSync(this.dir, { recursive: true, force: true });
  }
}

/** The one line of `type` in an answer. */
export function lineOf<T extends GraphrtLine['type']>(
  answer: GraphrtLine[],
  type: T,
): Extract<GraphrtLine, { type: T }> {
  const found = answer.filter((l) => l.type === type);
  if (found.length !== 1) throw new Error(`expected one ${type} line, got ${JSON.stringify(answer)}`);
  return found[0] as Extract<GraphrtLine, { type: T }>;
}
