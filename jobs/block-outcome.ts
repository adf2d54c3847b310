/**
 * What a host job returns when its block attempt committed (BullMQ's return value, read by the
 * scheduler's attempt observer): the attempt, how many planned reps it measured and left not run,
 * and each identity gate's verdict.
 */
export interface BlockOutcome {
  experiment: string;
  block: number;
  attempt: number;
  epoch: number;
  measured: number;
  not_run: number;
  gates: { arm: string; pass: boolean }[];
}
