/**
 * Card discovery: the GPUs nvidia-smi lists (card id = GPU UUID, what CUDA_VISIBLE_DEVICES gets),
 * or, with no GPU, `cpu:N@<host>` cards that run graphrt's CPU backend.
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
}

/** nvidia-smi's GPUs, or [] when there is no nvidia-smi or no GPU. */
export async function listGpus(nvidiaSmi = helper('nvidia-smi')): Promise<GpuRow[]> {
  try {
    const { stdout } = await run(nvidiaSmi, ['--query-gpu=index,uuid,name', '--format=csv,noheader'], {
      timeout: 15_000,
    });
    return stdout
      .split('\n')
      .map((l) => l.split(',').map((f) => f.trim()))
      .filter((f) => f.length >= 3 && /^\d+$/.test(f[0] as string))
      .map((f) => ({ index: Number(f[0]), uuid: f[1] as string, name: f.slice(2).join(',') }));
  } catch {
    return [];
  }
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
  const gpuCards: Card[] = gpus.map((g) => ({
    id: g.uuid,
    host,
    backend: 'cuda',
    index: g.index,
    uuid: g.uuid,
    name: g.name,
  }));
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
