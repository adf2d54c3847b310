/**
 * A command gang failed at its hello deadline because some of its ranks never joined the
 * rendezvous the others waited in (worker/command/rendezvous-joins.ts): the message names them
 * first, the ranks waiting for them second, and keeps the deadline's own fault as its cause.
 */
import { OrchError } from '../../jobs/errors.ts';

export interface MissingRank {
  rank: number;
  card: string;
  /** its card's index in the block's cards of this host */
  cardIndex: number;
}

export class RankNeverJoinedError extends OrchError {
  constructor(
    readonly missing: readonly MissingRank[],
    waiting: readonly number[],
    port: number,
    withinMs: number,
    cause: Error,
  ) {
    const many = missing.length > 1;
    const who = missing.map((m) => `rank ${m.rank} on card ${m.card}`).join(', ');
    super(
      'RANK_NEVER_JOINED',
      `${who} never joined the rendezvous on MASTER_PORT ${port} within ${withinMs} ms (none of ${many ? 'their' : 'its'} processes opened a TCP connection to it); ${waiting.length > 1 ? 'ranks' : 'rank'} ${waiting.join(', ')} ${waiting.length > 1 ? 'were' : 'was'} waiting in it; every rank of the gang was ended`,
      {
        cause,
        hint: `the last lines of ${many ? 'those ranks' : 'that rank'} show where ${many ? 'they' : 'it'} stopped before init_process_group (or the program's own rendezvous); raise workload.run.hello_timeout_s if ${many ? 'their' : 'its'} start takes longer`,
      },
    );
  }
}
