-- Migration 8: rows a flush could not store
--
-- Rows a flush could not store.  A flush that fails on its data
-- (docs/STORAGE.md "Rows the database refuses") isolates the metrics whose
-- rows cause it, records their rows here with the error and commits the
-- rest.  kind: 'bucket' (granularity, ts, method, value: one row per value of
-- the bucket), 'late' (ts, value), 'definition' (value NULL), 'window'
-- (value: the points counted with it).

CREATE TABLE rejected_rows (
    metric      integer NOT NULL,
    method      smallint,
    granularity bigint,
    ts          bigint,
    value       double precision,
    kind        text NOT NULL,
    error       text NOT NULL,
    received    timestamptz NOT NULL DEFAULT now()
);
CREATE INDEX rejected_rows_metric ON rejected_rows (metric);
