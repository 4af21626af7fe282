-- Migration 14: a window's own position, for window sets over several transactions
--
-- Each stored window says which records it holds: `saved_lsn` on a
-- snapshot, `lsn` on a tail (the window set it was saved with; the window
-- holds every record below).  A partition's window set may then be written
-- over several transactions, each with some of its metrics, and a replay
-- skips a metric's points where its own position is past them
-- (docs/STORAGE.md "Window snapshots").  0: not known, the partition's
-- position counts.

ALTER TABLE metric_windows ADD COLUMN saved_lsn bigint NOT NULL DEFAULT 0;
ALTER TABLE metric_window_tails ADD COLUMN lsn bigint NOT NULL DEFAULT 0;
