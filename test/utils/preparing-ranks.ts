/**
 * The processes of test/fixtures/ranks/startup-rank.py started in the host phase (ORCH_HOST_PHASE=1
 * in their environment): the python process of each, not the shell or wrapper of its process
 * group, oldest first.
 */
import { readdirSync, readFileSync } from 'node:fs';

export function preparingFixtureRanks(): number[] {
  const out: { pid: number; start: number }[] = [];
  for (const name of readdirSync('/proc')) {
    if (!/^\d+$/.test(name)) continue;
    try {
      const argv = readFileSync(`/proc/${name}/cmdline`, 'latin1').split('\0');
      if (!/python/.test(argv[0] ?? '') || !argv.some((a) => a.endsWith('startup-rank.py'))) continue;
      if (!readFileSync(`/proc/${name}/environ`, 'latin1').split('\0').includes('ORCH_HOST_PHASE=1')) continue;
      // field 22 of /proc/<pid>/stat, the start time in clock ticks (counted after the command's parentheses)
      const stat = readFileSync(`/proc/${name}/stat`, 'latin1');
      out.push({ pid: Number(name), start: Number(stat.slice(stat.lastIndexOf(')') + 2).split(' ')[19]) });
    } catch {
      // gone meanwhile
    }
  }
  return out.sort((a, b) => a.start - b.start).map((p) => p.pid);
}
