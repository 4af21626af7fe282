-- Migration 6: committed positions per partition, for parallel writers
--
-- Several writer connections, each owning some partitions: the committed
-- position and the last batch tag move from the single checkpoints row
-- (which every writer would have had to update, one after the other) to each
-- partition's row; checkpoints becomes a view of the lowest positions.

ALTER TABLE partitions ADD COLUMN committed_lsn bigint NOT NULL DEFAULT 0,
                       ADD COLUMN last_batch bigint NOT NULL DEFAULT 0;
UPDATE partitions SET committed_lsn = c.committed_lsn, last_batch = c.last_batch
  FROM checkpoints c WHERE c.id = 1;
DROP TABLE checkpoints;
CREATE VIEW checkpoints AS
    SELECT 1::smallint AS id, min(committed_lsn) AS committed_lsn,
           min(window_lsn) AS window_lsn, max(updated) AS updated
      FROM partitions;
