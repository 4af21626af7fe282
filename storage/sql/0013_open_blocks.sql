-- Migration 13: open buckets packed into blocks
--
-- Open buckets packed into blocks (docs/STORAGE.md "Open buckets",
-- storage/pg_open.h).  A writer keeps the newest bucket of each (metric,
-- granularity) of its partitions in blocks of several metrics, one row a
-- block (entry k: metrics[k], msets[k], grans[k], tss[k], and its values
-- vals[offs[k] + 1 ..] up to the next entry's), so that rewriting a million
-- open buckets rewrites a few tens of thousands of rows.  A bucket is in a
-- block or in `buckets`, never both; `bucket_rows` is the union, and the
-- views read it.  metrics.open_block names a metric's block, so a reader of
-- one metric finds its open buckets by key; gpuagg_measures reads each
-- series through a lateral union of its rows and its block's entries (a
-- join to bucket_rows would be planned as a scan of every block).  A block
-- row stays below 2 kB (storage/pg_open.h) and fillfactor 20 leaves it alone
-- on its page: each rewrite's new version goes on the same page (HOT), where
-- the versions no snapshot sees any more are pruned as the next rewrites
-- come (two or three blocks a page, each rewritten every second, leave no
-- room for the versions the writers' snapshots still see, and every rewrite
-- grows the table).

CREATE TABLE open_blocks (
    id      bigint PRIMARY KEY,
    metrics integer[] NOT NULL,
    msets   integer[] NOT NULL,
    grans   bigint[] NOT NULL,
    tss     bigint[] NOT NULL,
    offs    integer[] NOT NULL,
    vals    double precision[] NOT NULL
) WITH (fillfactor = 20);
ALTER TABLE metrics ADD COLUMN open_block bigint;
CREATE VIEW bucket_rows AS
    SELECT metric, mset, granularity, ts, vals FROM buckets
    UNION ALL
    SELECT u.metric, u.mset, u.granularity, u.ts,
           o.vals[u.off + 1 : coalesce(o.offs[(u.i + 1)::int], cardinality(o.vals))]
      FROM metrics m
      JOIN open_blocks o ON o.id = m.open_block
      CROSS JOIN LATERAL unnest(o.metrics, o.msets, o.grans, o.tss, o.offs)
           WITH ORDINALITY u(metric, mset, granularity, ts, off, i)
     WHERE u.metric = m.id;
CREATE OR REPLACE VIEW aggregates AS
    SELECT b.metric, s.methods[i] AS method, b.granularity, b.ts, b.vals[i] AS value
      FROM bucket_rows b
      JOIN method_sets s ON s.id = b.mset
      CROSS JOIN LATERAL generate_subscripts(b.vals, 1) i;
CREATE OR REPLACE VIEW gpuagg_measures AS
    SELECT m.name AS metric, mt.name AS method,
           s.g / 1e9::double precision AS granularity_s,
           gpuagg_time(b.ts) AS time, v.value,
           b.ts AS ts_ns, s.g AS granularity_ns
      FROM metrics m
      JOIN archive_policies p ON p.name = m.policy
      CROSS JOIN LATERAL (SELECT (d->>'granularity_ns')::bigint AS g,
                                 (d->>'timespan_ns')::bigint AS span
                            FROM jsonb_array_elements(p.definition) d) s
      JOIN methods mt ON mt.name = ANY (p.methods)
      CROSS JOIN LATERAL (
          SELECT x.ts AS last FROM (
                  SELECT b.ts, b.mset FROM buckets b WHERE b.metric = m.id AND b.granularity = s.g
                  UNION ALL
                  SELECT u.ts, u.mset FROM open_blocks o,
                         unnest(o.metrics, o.msets, o.grans, o.tss) u(metric, mset, granularity, ts)
                   WHERE o.id = m.open_block AND u.metric = m.id AND u.granularity = s.g) x
            JOIN method_sets xs ON xs.id = x.mset
           WHERE mt.id = ANY (xs.methods)
           ORDER BY x.ts DESC LIMIT 1) l
      CROSS JOIN LATERAL (
          SELECT b.ts, b.mset, b.vals FROM buckets b
           WHERE b.metric = m.id AND b.granularity = s.g AND (s.span = 0 OR b.ts > l.last - s.span)
          UNION ALL
          SELECT u.ts, u.mset, o.vals[u.off + 1 : coalesce(o.offs[(u.i + 1)::int], cardinality(o.vals))]
            FROM open_blocks o,
                 unnest(o.metrics, o.msets, o.grans, o.tss, o.offs) WITH ORDINALITY
                     u(metric, mset, granularity, ts, off, i)
           WHERE o.id = m.open_block AND u.metric = m.id AND u.granularity = s.g
             AND (s.span = 0 OR u.ts > l.last - s.span)) b
      JOIN method_sets bs ON bs.id = b.mset
      CROSS JOIN LATERAL (SELECT b.vals[array_position(bs.methods, mt.id)] AS value) v
     WHERE v.value IS NOT NULL;
