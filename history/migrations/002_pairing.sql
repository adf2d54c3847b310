-- A paired nightly entry (against: last_good) says per row what it compared: tonight's commit
-- against the last good night's, or tonight's against itself before any night passed.
ALTER TABLE nightly_rows ADD COLUMN pairing TEXT;
