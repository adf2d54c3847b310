-- Nightly runs and their per-comparison rows. Plain SQL that SQLite and PostgreSQL both run:
-- times are epoch milliseconds (BIGINT), booleans 0/1 (INTEGER), lists JSON text.

-- One row per suite and scheduled time: the idempotency key of a nightly run. A stalled job
-- retried by another `orch serve` finds this row and never submits again.
CREATE TABLE nightly_runs (
  id TEXT PRIMARY KEY,
  suite TEXT NOT NULL,
  scheduled_at BIGINT NOT NULL,
  started_at BIGINT NOT NULL,
  heartbeat_at BIGINT NOT NULL,
  ended_at BIGINT,
  -- running | done | invalid | failed
  state TEXT NOT NULL,
  error TEXT,
  -- JSON [{file, experiment}] as submitted, so a retried run waits for these instead
  experiments TEXT NOT NULL DEFAULT '[]',
  alerts INTEGER NOT NULL DEFAULT 0,
  orch_version TEXT,
  orch_commit TEXT,
  serve_host TEXT,
  UNIQUE (suite, scheduled_at)
);
CREATE INDEX nightly_runs_suite ON nightly_runs (suite, scheduled_at);

-- One row per (run, spec, comparison); a spec that could not run has one row with arm = ''.
CREATE TABLE nightly_rows (
  run_id TEXT NOT NULL REFERENCES nightly_runs (id),
  suite TEXT NOT NULL,
  scheduled_at BIGINT NOT NULL,
  spec_file TEXT NOT NULL,
  spec_name TEXT,
  spec_hash TEXT,
  experiment TEXT,
  -- the experiment's end state (done | failed | cancelled), or not-run
  experiment_state TEXT NOT NULL,
  results_dir TEXT,
  arm TEXT NOT NULL,
  reference TEXT NOT NULL,
  metric TEXT,
  -- faster | slower | inconclusive | invalid, or null when nothing was compared
  verdict TEXT,
  -- relative change of arm against reference (0.05 = +5 %) and its CI
  change DOUBLE PRECISION,
  ci_low DOUBLE PRECISION,
  ci_high DOUBLE PRECISION,
  -- absolute values (the metric's statistic per arm), kept apart from the ratio
  arm_value DOUBLE PRECISION,
  reference_value DOUBLE PRECISION,
  aa_pass INTEGER,
  gates_pass INTEGER,
  gates TEXT,
  -- what the detector said for this comparison tonight (regression | invalid | machine-change | ...)
  finding TEXT,
  cards TEXT,
  hosts TEXT,
  commits TEXT,
  error TEXT,
  PRIMARY KEY (run_id, spec_file, arm, reference)
);
CREATE INDEX nightly_rows_series ON nightly_rows (suite, spec_file, arm, reference, scheduled_at);
