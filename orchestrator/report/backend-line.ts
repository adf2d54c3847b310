/**
 * The report header's line on what was measured on: the backend (graphrt's CPU emulation is not a
 * GPU, and its timings say nothing about a card), the device names, and the toggles the backend
 * lacked (the arm table marks the arms they touch).
 */
import type { Analysis } from '../stats/types.ts';

const BACKEND_NAMES: Record<string, string> = {
  cpu: 'cpu emulation (graphrt on host threads, no GPU)',
  cuda: 'cuda',
  command: "command (the user's binary)",
};

export function backendLine(a: Pick<Analysis, 'backend'>): string {
  const b = a.backend;
  if (b.backends.length === 0) return 'Backend: none (no rep was committed).';
  const names = b.backends.map((x) => BACKEND_NAMES[x] ?? x).join(', ');
  const devices = b.devices.length === 0 ? '' : `; device${b.devices.length === 1 ? '' : 's'}: ${b.devices.join(', ')}`;
  const lacking =
    b.unsupported.length === 0
      ? ''
      : ` Unsupported there, so not measured: ${b.unsupported.map((u) => `${u.toggle} (${u.backends.join(', ')})`).join(', ')}.`;
  return `Backend: ${names}${devices}.${lacking}`;
}
