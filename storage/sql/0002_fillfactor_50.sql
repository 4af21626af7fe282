-- Migration 2: partitions with fillfactor 50
--
-- Partitions with fillfactor 50 (was 80).  Each flush rewrites the open
-- buckets; one round of rewrites touches every row of the newest stretch,
-- and with 20% free room most new versions left their page (non-HOT: an
-- index insert each, then bottom-up index deletion).  At 50% they stay on
-- the page (HOT): ~1.9x faster updates for ~1.5x heap (docs/STORAGE.md
-- "Fresh buckets and HOT updates").  Existing partitions get the setting for
-- their future writes.

CREATE OR REPLACE FUNCTION gpuagg_ensure_partition(day bigint) RETURNS boolean
    LANGUAGE plpgsql AS $$
DECLARE
    lo bigint := day * 86400000000000;
    nm text := 'aggregates_' || to_char(timestamp '1970-01-01' + day * interval '1 day',
                                        'YYYYMMDD');
BEGIN
    PERFORM pg_advisory_xact_lock(106240213050983 + 1);
    IF EXISTS (SELECT 1 FROM aggregate_partitions WHERE from_ns = lo) THEN
        RETURN false;
    END IF;
    EXECUTE format('CREATE TABLE IF NOT EXISTS %I PARTITION OF aggregates '
                   'FOR VALUES FROM (%s) TO (%s) WITH (fillfactor = 50)',
                   nm, lo, lo + 86400000000000);
    INSERT INTO aggregate_partitions VALUES (nm, lo, lo + 86400000000000);
    RETURN true;
END $$;
DO $$
DECLARE r record;
BEGIN
    FOR r IN SELECT name FROM aggregate_partitions LOOP
        EXECUTE format('ALTER TABLE IF EXISTS %I SET (fillfactor = 50)', r.name);
    END LOOP;
END $$;
