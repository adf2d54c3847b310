-- The two-sided p of a row's paired comparison (ln ratio, paired t): a night's comparisons are
-- corrected together (Benjamini–Hochberg, orchestrator/nightly/night-findings.ts) before a
-- regression is alerted. NULL: a row without a comparison, or recorded before this column.
ALTER TABLE nightly_rows ADD COLUMN p_value DOUBLE PRECISION;
