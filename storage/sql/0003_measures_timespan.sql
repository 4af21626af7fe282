-- Migration 3: the measures view truncates each series to its timespan
--
-- The read side keeps what Gnocchi's get_aggregated_measures() keeps.  Rows
-- written by earlier batches stay in their partition until retention drops
-- it, but per (metric, granularity, method) only the buckets newer than the
-- newest stored bucket minus the archive's timespan are the series
-- (docs/SEMANTICS.md "Timespan").  The view walks the metric's policy (each
-- granularity with its timespan, each method), finds the newest bucket of
-- the series with one index descent, and reads the rows past its horizon;
-- quals on metric, method, granularity and ts_ns reach those scans, so a
-- filtered read stays an index range scan.  Columns as in migration 1;
-- gpuaggctl query reads this same view.

CREATE OR REPLACE VIEW gpuagg_measures AS
    SELECT m.name AS metric, mt.name AS method,
           a.granularity / 1e9::double precision AS granularity_s,
           gpuagg_time(a.ts) AS time, a.value,
           a.ts AS ts_ns, a.granularity AS granularity_ns
      FROM metrics m
      JOIN archive_policies p ON p.name = m.policy
      CROSS JOIN LATERAL (SELECT (d->>'granularity_ns')::bigint AS g,
                                 (d->>'timespan_ns')::bigint AS span
                            FROM jsonb_array_elements(p.definition) d) s
      JOIN methods mt ON mt.name = ANY (p.methods)
      CROSS JOIN LATERAL (SELECT max(x.ts) AS last FROM aggregates x
                           WHERE x.metric = m.id AND x.method = mt.id
                             AND x.granularity = s.g) l
      JOIN aggregates a ON a.metric = m.id AND a.method = mt.id AND a.granularity = s.g
                       AND (s.span = 0 OR a.ts > l.last - s.span);
