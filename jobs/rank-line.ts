/**
 * A line of a rank, whatever its runtime: graphrt's protocol lines (jobs/graphrt-protocol.ts) or
 * a command workload's (jobs/command-line.ts). The block executor narrows on `type`, then on
 * `backend`/`workload` where the two differ.
 */
import type { CommandLine } from './command-line.ts';
import type { GraphrtLine } from './graphrt-protocol.ts';

export type RankLine = GraphrtLine | CommandLine;
export type RankRepLine = Extract<RankLine, { type: 'rep' }>;
export type RankHelloLine = Extract<RankLine, { type: 'hello' }>;
