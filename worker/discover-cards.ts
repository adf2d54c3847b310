/**
 * Card discovery: the GPUs nvidia-smi lists (card id = GPU UUID, what CUDA_VISIBLE_DEVICES gets,
 * with its memory and compute capability for a spec's workload.requires), or, with no GPU,
 * `cpu:N@<host>` cards that run graphrt's CPU backend.
 *
 * `--cards auto` takes every GPU (or `--cpu-cards N` cpu cards when there is none); a list picks
 * cards by GPU index, UUID, or `cpu:N`, and refuses an entry that names no card of this host.
 */

import { execFile } from 'node:child_process';
import { promisify } from 'node:util';
import { UserInputError } from '../jobs/errors.ts';
import type { Card } from '../store/card-registry.ts';
import { helper } from './helper-paths.ts';

const run = promisify(execFile);

export interface GpuRow {
  index: number;
  uuid: string;
  name: string;
  /** memory.total in MiB, when reported */
  memory_mib?: number;
  /** compute_cap, "major.minor", when the driver reports it */
  compute_capability?: string;
}

/**
 * The queries tried in turn: drivers before compute_cap (added to nvidia-smi in 2021) refuse the
 * first, and a GPU still registers without it (a spec that requires a capability then waits with
 * "cc not reported"). The name goes last: the only field that might hold a comma.
 */
const GPU_QUERIES = [
  ['index', 'uuid', 'memory.total', 'compute_cap', 'name'],
  ['index', 'uuid', 'memory.total', 'name'],
] as const;

/** nvidia-smi's GPUs, or [] when there is no nvidia-smi or no GPU. */
export async function listGpus(nvidiaSmi = helper('nvidia-smi')): Promise<GpuRow[]> {
  for (const fields of GPU_QUERIES) {
    try {
      const { stdout } = await run(nvidiaSmi, [`--query-gpu=${fields.join(',')}`, '--format=csv,noheader,nounits'], {
        timeout: 15_000,
      });
      return parseGpuRows(stdout, fields);
    } catch {
      // the next, shorter query; none left: no GPU
    }
  }
  return [];
}

/** The rows of one query's output; a value nvidia-smi could not read ("[N/A]") is left out. */
function parseGpuRows(stdout: string, fields: readonly string[]): GpuRow[] {
  const nameAt = fields.indexOf('name');
  return stdout
    .split('\n')
    .map((l) => l.split(',').map((f) => f.trim()))
    .filter((f) => f.length >= fields.length && /^\d+$/.test(f[0] as string))
    .map((f) => {
      const at = (k: string) => f[fields.indexOf(k)] ?? '';
      const memory = Number(at('memory.total'));
      const cc = at('compute_cap');
      return {
        index: Number(f[0]),
        uuid: at('uuid'),
        name: f.slice(nameAt).join(','),
        ...(Number.isInteger(memory) && memory > 0 ? { memory_mib: memory } : {}),
        ...(/^\d+\.\d+$/.test(cc) ? { compute_capability: cc } : {}),
      };
    });
}

/** A GPU's card: what CUDA_VISIBLE_DEVICES gets, and what a spec's workload.requires is checked against. */
export function gpuCard(host: string, g: GpuRow): Card {
  return {
    id: g.uuid,
    host,
    backend: 'cuda',
    index: g.index,
    uuid: g.uuid,
    name: g.name,
    ...(g.memory_mib === undefined ? {} : { memory_mib: g.memory_mib }),
    ...(g.compute_capability === undefined ? {} : { compute_capability: g.compute_capability }),
  };
}

export function cpuCard(host: string, index: number): Card {
  const id = `cpu:${index}@${host}`;
  return { id, host, backend: 'cpu', index, uuid: id, name: 'graphrt CPU backend' };
}

export async function discoverCards(
  host: string,
  opts: { cards: 'auto' | string[]; cpuCards?: number; gpus?: GpuRow[] },
): Promise<Card[]> {
  const gpus = opts.gpus ?? (await listGpus());
  const gpuCards: Card[] = gpus.map((g) => gpuCard(host, g));
  if (opts.cards === 'auto') {
    if (gpuCards.length > 0) return gpuCards;
    const n = opts.cpuCards ?? 1;
    return Array.from({ length: n }, (_, i) => cpuCard(host, i));
  }
  const out: Card[] = [];
  for (const entry of opts.cards) {
    const cpu = /^cpu:(\d+)$/.exec(entry);
    const card = cpu
      ? cpuCard(host, Number(cpu[1]))
      : gpuCards.find((c) => c.uuid === entry || String(c.index) === entry);
    if (!card) {
      throw new UserInputError(
        'CARD_UNKNOWN',
        `--cards: "${entry}" is not a card of this host (GPUs: ${gpuCards.map((c) => `${c.index}=${c.uuid}`).join(', ') || 'none'})`,
        {
          hint: 'name a GPU by its nvidia-smi index or UUID, or a CPU card as cpu:N; or use --cards auto',
        },
      );
    }
    if (out.some((c) => c.id === card.id))
      throw new UserInputError('CARD_TWICE', `--cards: "${entry}" is listed twice`);
    out.push(card);
  }
  if (out.length === 0)
    throw new UserInputError('CARD_NONE', '--cards: the list is empty', { hint: 'use --cards auto' });
  return out;
}
