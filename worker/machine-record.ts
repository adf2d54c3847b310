/**
 * What this host is, read for each block as it starts (jobs/machine-record.ts): the host's fixed
 * part once per process (os, /etc/os-release, the CPU, Node, `cc --version`), the GPUs' state
 * from nvidia-smi each time (clocks and limits change between blocks). Never throws: what cannot
 * be read is null, and why the GPUs could not be read is said.
 */

import { execFile } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { arch, cpus, release, totalmem, type } from 'node:os';
import { promisify } from 'node:util';
import type { Card } from '../jobs/card.ts';
import type { GpuState, MachineRecord } from '../jobs/machine-record.ts';
import { messageOf } from '../jobs/message-of.ts';
import { helper } from './helper-paths.ts';

const run = promisify(execFile);

/** The nvidia-smi fields of a GpuState, in query order. */
export const GPU_QUERY = [
  'uuid',
  'name',
  'driver_version',
  'power.limit',
  'clocks.sm',
  'clocks.mem',
  'clocks.max.sm',
  'clocks.applications.graphics',
  'persistence_mode',
  'compute_mode',
] as const;

type HostPart = Omit<MachineRecord, 'gpus' | 'gpus_unread'>;
let host: Promise<HostPart> | null = null;

async function firstLine(cmd: string, args: string[]): Promise<string | null> {
  try {
    const { stdout } = await run(cmd, args, { timeout: 5000 });
    return stdout.split('\n')[0]?.trim() || null;
  } catch {
    return null;
  }
}

function distribution(): string | null {
  try {
    return /^PRETTY_NAME="?([^"\n]*)"?$/m.exec(readFileSync('/etc/os-release', 'utf8'))?.[1] ?? null;
  } catch {
    return null;
  }
}

async function readHost(): Promise<HostPart> {
  const cpu = cpus();
  return {
    os: type(),
    distribution: distribution(),
    kernel: release(),
    arch: arch(),
    cpu_model: cpu[0]?.model.trim() || null,
    cpu_threads: cpu.length || null,
    memory_bytes: totalmem(),
    node: process.version,
    compiler: await firstLine('cc', ['--version']),
  };
}

/** One nvidia-smi CSV row (noheader, nounits) as a GpuState; `[N/A]`, `[Not Supported]` and blanks are null. */
export function parseGpuRow(card: string, row: string): GpuState {
  const f = row.split(',').map((x) => x.trim());
  const at = (k: (typeof GPU_QUERY)[number]): string | null => {
    const v = f[GPU_QUERY.indexOf(k)];
    return v === undefined || v === '' || /^\[.*\]$/.test(v) || v === 'N/A' ? null : v;
  };
  const n = (k: (typeof GPU_QUERY)[number]): number | null => {
    const v = at(k);
    return v !== null && Number.isFinite(Number(v)) ? Number(v) : null;
  };
  return {
    card,
    uuid: at('uuid'),
    name: at('name'),
    driver: at('driver_version'),
    power_limit_w: n('power.limit'),
    sm_mhz: n('clocks.sm'),
    mem_mhz: n('clocks.mem'),
    max_sm_mhz: n('clocks.max.sm'),
    applications_sm_mhz: n('clocks.applications.graphics'),
    persistence_mode: at('persistence_mode'),
    compute_mode: at('compute_mode'),
  };
}

async function readGpus(cards: Card[], nvidiaSmi: string): Promise<{ gpus: GpuState[]; gpus_unread: string | null }> {
  const gpus = cards.filter((c) => c.backend === 'cuda');
  if (gpus.length === 0) return { gpus: [], gpus_unread: null };
  try {
    const { stdout } = await run(
      nvidiaSmi,
      [
        `--query-gpu=${GPU_QUERY.join(',')}`,
        '--format=csv,noheader,nounits',
        `--id=${gpus.map((c) => c.uuid).join(',')}`,
      ],
      { timeout: 15_000 },
    );
    const rows = stdout.split('\n').filter((l) => l.trim() !== '');
    const byUuid = new Map(rows.map((r) => [r.split(',')[0]!.trim(), r]));
    return { gpus: gpus.map((c) => parseGpuRow(c.id, byUuid.get(c.uuid) ?? '')), gpus_unread: null };
  } catch (err) {
    return { gpus: [], gpus_unread: `${nvidiaSmi} --query-gpu failed: ${messageOf(err).split('\n')[0]}` };
  }
}

export async function readMachineRecord(cards: Card[], nvidiaSmi = helper('nvidia-smi')): Promise<MachineRecord> {
  host ??= readHost();
  const [h, g] = await Promise.all([host, readGpus(cards, nvidiaSmi)]);
  return { ...h, ...g };
}
