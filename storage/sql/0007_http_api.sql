-- Migration 7: resources and metric ids for the HTTP API
--
-- What the Gnocchi-compatible HTTP API reads (docs/API.md).
-- gpuagg_metric_uuid(name) is the metric's stable id: the name-based UUID
-- (RFC 4122 version 3, MD5) of the name in gpuagg's metric namespace
-- (GA_METRIC_NS in proto/uuid.h) -- version 3 because PostgreSQL computes
-- MD5 itself, so the id is an indexed expression and never stored.
-- resources are Gnocchi's resources as Ceilometer samples describe them (id
-- derived as Gnocchi's ResourceUUID does, in the daemon); resource_metrics
-- names a resource's metrics (Gnocchi's metric name within the resource)
-- and points at the gpuagg metric by name.

CREATE FUNCTION gpuagg_metric_uuid(name text) RETURNS uuid
    LANGUAGE sql IMMUTABLE STRICT PARALLEL SAFE
    AS $$ SELECT encode(set_byte(set_byte(h, 6, (get_byte(h, 6) & 15) | 48),
                                 8, (get_byte(h, 8) & 63) | 128), 'hex')::uuid
            FROM (SELECT decode(md5('\x5c1e5b8e07c54c53a2a53f2b1d6e9a47'::bytea
                                    || convert_to(name, 'UTF8')), 'hex') AS h) q $$;
CREATE INDEX metrics_uuid ON metrics (gpuagg_metric_uuid(name));
CREATE TABLE resources (
    id                   uuid PRIMARY KEY,
    original_resource_id text NOT NULL,
    type                 text NOT NULL DEFAULT 'generic',
    creator              text NOT NULL DEFAULT '',
    project_id           text,
    user_id              text,
    attributes           jsonb NOT NULL DEFAULT '{}',
    started_at           timestamptz NOT NULL DEFAULT now(),
    revision_start       timestamptz NOT NULL DEFAULT now()
);
CREATE INDEX resources_type ON resources (type);
CREATE INDEX resources_project ON resources (project_id);
CREATE TABLE resource_metrics (
    resource uuid NOT NULL REFERENCES resources (id) ON DELETE CASCADE,
    name     text NOT NULL,
    metric   text NOT NULL,
    unit     text,
    PRIMARY KEY (resource, name)
);
CREATE INDEX resource_metrics_metric ON resource_metrics (metric);
