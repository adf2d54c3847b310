-- Where each row's experiment ran under Slurm: the jobs (allocations), the nodes its workers ran
-- on and the partitions, each a JSON list of distinct values, sorted; NULL when no worker of it ran
-- under Slurm (or the row was recorded before this migration). A row's absolute numbers are judged
-- against earlier nights only on the same nodes unless its spec allows a node change
-- (across_runs.allow_node_change); `node_change` says why tonight was not compared with the nights
-- before, or that it was across a change because the spec allows it (NULL: the nodes did not change).
ALTER TABLE nightly_rows ADD COLUMN slurm_jobs TEXT;
ALTER TABLE nightly_rows ADD COLUMN slurm_nodes TEXT;
ALTER TABLE nightly_rows ADD COLUMN slurm_partitions TEXT;
ALTER TABLE nightly_rows ADD COLUMN node_change TEXT;
