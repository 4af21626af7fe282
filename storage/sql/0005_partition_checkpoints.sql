-- Migration 5: window checkpoints per partition of the metric space
--
-- Window checkpoints per partition (proto/ga_partition.h).  Each of the 64
-- partitions of the metric space has the journal position its metrics'
-- window snapshots were taken at; checkpoints.window_lsn stays the lowest of
-- them, where replay starts.  They begin where the single checkpoint was.
-- (64 is GA_PARTITIONS; storage/pg_schema.c asserts it.)

CREATE TABLE partitions (
    id         integer PRIMARY KEY CHECK (id >= 0 AND id < 64),
    window_lsn bigint NOT NULL,
    updated    timestamptz NOT NULL DEFAULT now()
);
INSERT INTO partitions (id, window_lsn)
SELECT p, (SELECT window_lsn FROM checkpoints WHERE id = 1) FROM generate_series(0, 63) p;
