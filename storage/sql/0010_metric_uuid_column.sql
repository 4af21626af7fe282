-- Migration 10: metric ids stored, no per-definition policy check
--
-- Registering a metric costs its row and plain index entries only.  Its id
-- is computed by the daemon (proto/uuid.h) and stored in metrics.uuid,
-- indexed as a column: the expression index of migration 7 ran the SQL MD5
-- function for every new metric.  The foreign key to archive_policies goes:
-- every definition checked it with a row lock on its policy's row, taken by
-- every writer at once while metrics are new; the writer stores a
-- definition's policy in the same transaction, before it (docs/STORAGE.md).
-- metrics leaves room on its pages (fillfactor 80) so that point-count
-- updates stay on the page (HOT) and add no index entries.

ALTER TABLE metrics ADD COLUMN uuid uuid;
UPDATE metrics SET uuid = gpuagg_metric_uuid(name);
ALTER TABLE metrics ALTER COLUMN uuid SET NOT NULL;
DROP INDEX metrics_uuid;
CREATE INDEX metrics_uuid ON metrics (uuid);
ALTER TABLE metrics DROP CONSTRAINT IF EXISTS metrics_policy_fkey;
ALTER TABLE metrics SET (fillfactor = 80);
