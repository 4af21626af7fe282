-- Migration 9: cluster members
--
-- Cluster mode (docs/CLUSTER.md): the daemons sharing this database, each
-- with a heartbeat (the database's clock) and the partitions it owns now,
-- which the others read to spread the partitions and status shows.

CREATE TABLE cluster_members (
    name      text PRIMARY KEY,
    started   timestamptz NOT NULL DEFAULT now(),
    heartbeat timestamptz NOT NULL DEFAULT now(),
    owned     bigint NOT NULL DEFAULT 0,
    stream_seq bigint NOT NULL DEFAULT 0,
    pid       integer NOT NULL DEFAULT 0,
    host      text NOT NULL DEFAULT ''
);
