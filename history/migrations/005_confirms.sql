-- A suspected regression is run again, paired, on the same spec and card class before it is
-- alerted (orchestrator/nightly/confirm-regressions.ts); the confirmation's rows are kept beside
-- the night's, `confirms` naming the experiment whose row they checked. NULL: an ordinary row.
ALTER TABLE nightly_rows ADD COLUMN confirms TEXT;
