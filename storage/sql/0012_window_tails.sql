-- Migration 12: window tails: a save writes what changed
--
-- A window save writes what changed (docs/STORAGE.md "Window snapshots"): a
-- row of tail records (storage/pg_window.h) for the points appended to a
-- metric's window since its snapshot in metric_windows, applied in id order
-- when loading; a whole snapshot deletes them.

CREATE TABLE metric_window_tails (
    metric integer NOT NULL,
    id     bigint GENERATED ALWAYS AS IDENTITY,
    rec    bytea NOT NULL,
    PRIMARY KEY (metric, id)
);
