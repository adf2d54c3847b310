-- Which orch ran the night: its commit alone does not say it, when the checkout that `orch serve`
-- ran from had uncommitted changes to tracked files (1), was clean (0), or is unknown (NULL: no
-- git checkout, or a run recorded before this column).
ALTER TABLE nightly_runs ADD COLUMN orch_dirty INTEGER;
