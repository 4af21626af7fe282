-- Migration 15: open buckets' blocks partitioned as the metric space
--
-- open_blocks partitioned by the metric space's partition (a block's id is
-- its partition << 32 | a number, storage/pg_open.h): one table and one key
-- per partition, so that writers creating blocks at once (every metric new)
-- extend their own tables, and a partition's blocks are one table to hand
-- over.  The views are replaced with the same text as in migration 13, now
-- over the partitioned table.  (64 is GA_PARTITIONS; storage/pg_schema.c
-- asserts it.)

ALTER TABLE open_blocks RENAME TO open_blocks_v13;
ALTER INDEX open_blocks_pkey RENAME TO open_blocks_v13_pkey;
CREATE TABLE open_blocks (
    id      bigint PRIMARY KEY,
    metrics integer[] NOT NULL,
    msets   integer[] NOT NULL,
    grans   bigint[] NOT NULL,
    tss     bigint[] NOT NULL,
    offs    integer[] NOT NULL,
    vals    double precision[] NOT NULL
) PARTITION BY RANGE (id);
DO $$ BEGIN
    FOR p IN 0 .. 64 - 1 LOOP
        EXECUTE format('CREATE TABLE open_blocks_p%s PARTITION OF open_blocks '
                       'FOR VALUES FROM (%s) TO (%s) WITH (fillfactor = 20)',
                       lpad(p::text, 2, '0'), p::int8 << 32, (p + 1)::int8 << 32);
    END LOOP;
END $$;
INSERT INTO open_blocks SELECT * FROM open_blocks_v13;
CREATE OR REPLACE VIEW bucket_rows AS
    SELECT metric, mset, granularity, ts, vals FROM buckets
    UNION ALL
    SELECT u.metric, u.mset, u.granularity, u.ts,
           o.vals[u.off + 1 : coalesce(o.offs[(u.i + 1)::int], cardinality(o.vals))]
      FROM metrics m
      JOIN open_blocks o ON o.id = m.open_block
      CROSS JOIN LATERAL unnest(o.metrics, o.msets, o.grans, o.tss, o.offs)
           WITH ORDINALITY u(metric, mset, granularity, ts, off, i)
     WHERE u.metric = m.id;
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
DROP TABLE open_blocks_v13;
