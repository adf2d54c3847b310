-- A suspected regression is run again, paired, on the same spec and card class before it is
-- alerted (orchestrator/nightly/confirm-regressions.ts); the confirmation's rows are kept beside
-- the night's, `confirms` naming the experiment whose row they checked ('' for the night's own
-- rows). A row is then one per (run, spec, comparison, confirms): the table is rebuilt with that
-- key (neither SQLite nor PostgreSQL changes a primary key in place), its rows copied as they are.
CREATE TABLE nightly_rows_005 (
  run_id TEXT NOT NULL REFERENCES nightly_runs (id),
  suite TEXT NOT NULL,
  scheduled_at BIGINT NOT NULL,
  spec_file TEXT NOT NULL,
  spec_name TEXT,
  spec_hash TEXT,
  experiment TEXT,
  experiment_state TEXT NOT NULL,
  results_dir TEXT,
  arm TEXT NOT NULL,
  reference TEXT NOT NULL,
  metric TEXT,
  verdict TEXT,
  change DOUBLE PRECISION,
  ci_low DOUBLE PRECISION,
  ci_high DOUBLE PRECISION,
  arm_value DOUBLE PRECISION,
  reference_value DOUBLE PRECISION,
  aa_pass INTEGER,
  gates_pass INTEGER,
  gates TEXT,
  finding TEXT,
  cards TEXT,
  hosts TEXT,
  commits TEXT,
  error TEXT,
  pairing TEXT,
  p_value DOUBLE PRECISION,
  confirms TEXT NOT NULL DEFAULT '',
  PRIMARY KEY (run_id, spec_file, arm, reference, confirms)
);
INSERT INTO nightly_rows_005 (run_id, suite, scheduled_at, spec_file, spec_name, spec_hash, experiment, experiment_state, results_dir,
  arm, reference, metric, verdict, change, ci_low, ci_high, arm_value, reference_value, aa_pass, gates_pass, gates, finding, cards, hosts,
  commits, error, pairing, p_value)
SELECT run_id, suite, scheduled_at, spec_file, spec_name, spec_hash, experiment, experiment_state, results_dir,
  arm, reference, metric, verdict, change, ci_low, ci_high, arm_value, reference_value, aa_pass, gates_pass, gates, finding, cards, hosts,
  commits, error, pairing, p_value
FROM nightly_rows;
DROP TABLE nightly_rows;
ALTER TABLE nightly_rows_005 RENAME TO nightly_rows;
CREATE INDEX nightly_rows_series ON nightly_rows (suite, spec_file, arm, reference, scheduled_at);
