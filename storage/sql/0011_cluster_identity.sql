-- Migration 11: cluster identity
--
-- Cluster mode's identity check (docs/CLUSTER.md): a random id of this
-- database, which the stream records in its description, and the stream
-- whose sequences the positions in `partitions` are (its name and creation
-- time, recorded by the first cluster daemon).

CREATE TABLE cluster_identity (
    id                integer PRIMARY KEY CHECK (id = 1),
    database_id       text NOT NULL,
    stream            text NOT NULL DEFAULT '',
    stream_created_ns bigint NOT NULL DEFAULT 0
);
INSERT INTO cluster_identity (id, database_id)
VALUES (1, md5(random()::text || clock_timestamp()::text || pg_backend_pid()::text));
