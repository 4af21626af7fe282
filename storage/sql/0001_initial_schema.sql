-- Migration 1: initial schema
--
-- The first schema: a row per (metric, method, granularity, bucket) in
-- `aggregates`, partitioned by day, and the methods lookup table.
--
-- Lock keys: 106240213050983 is "gpuagg" in ASCII, the key under which
-- gpuaggd runs the migrations (pg_advisory_xact_lock); that key + 1 guards
-- the creation and the dropping of partitions.

CREATE TABLE methods (
    id   smallint PRIMARY KEY,
    name text NOT NULL UNIQUE
);
CREATE TABLE archive_policies (
    name        text PRIMARY KEY,
    back_window bigint NOT NULL,
    definition  jsonb NOT NULL,
    methods     text[] NOT NULL,
    updated     timestamptz NOT NULL DEFAULT now()
);
CREATE TABLE metrics (
    id      integer PRIMARY KEY CHECK (id >= 0),
    name    text NOT NULL UNIQUE,
    policy  text NOT NULL REFERENCES archive_policies (name),
    points  bigint NOT NULL DEFAULT 0,
    created timestamptz NOT NULL DEFAULT now()
);
-- columns and key ordered for alignment: 32-byte heap tuples, 24-byte
-- index keys
CREATE TABLE aggregates (
    metric      integer NOT NULL,
    method      smallint NOT NULL,
    granularity bigint NOT NULL,
    ts          bigint NOT NULL,
    value       double precision NOT NULL,
    PRIMARY KEY (metric, method, granularity, ts)
) PARTITION BY RANGE (ts);
CREATE TABLE aggregate_partitions (
    name    text PRIMARY KEY,
    from_ns bigint NOT NULL UNIQUE,
    to_ns   bigint NOT NULL
);
CREATE TABLE late_points (
    metric   integer NOT NULL,
    ts       bigint NOT NULL,
    value    double precision NOT NULL,
    reason   text NOT NULL,
    received timestamptz NOT NULL DEFAULT now(),
    PRIMARY KEY (metric, ts, reason, value)
);
CREATE TABLE checkpoints (
    id            smallint PRIMARY KEY CHECK (id = 1),
    committed_lsn bigint NOT NULL,
    window_lsn    bigint NOT NULL,
    last_batch    bigint NOT NULL,
    updated       timestamptz NOT NULL DEFAULT now()
);
INSERT INTO checkpoints (id, committed_lsn, window_lsn, last_batch) VALUES (1, 0, 0, 0);
CREATE TABLE metric_windows (
    metric   integer PRIMARY KEY,
    lsn      bigint NOT NULL,
    snapshot bytea NOT NULL,
    updated  timestamptz NOT NULL DEFAULT now()
);
CREATE FUNCTION gpuagg_ns(t timestamptz) RETURNS bigint
    LANGUAGE sql IMMUTABLE STRICT PARALLEL SAFE
    AS $$ SELECT (extract(epoch FROM t) * 1000000000)::bigint $$;
CREATE FUNCTION gpuagg_time(ns bigint) RETURNS timestamptz
    LANGUAGE sql IMMUTABLE STRICT PARALLEL SAFE
    AS $$ SELECT timestamptz '1970-01-01 00:00:00+00'
                 + (ns / 1000000000) * interval '1 second'
                 + (ns % 1000000000 / 1000) * interval '1 microsecond' $$;
CREATE VIEW gpuagg_measures AS
    SELECT m.name AS metric, mt.name AS method,
           a.granularity / 1e9::double precision AS granularity_s,
           gpuagg_time(a.ts) AS time, a.value,
           a.ts AS ts_ns, a.granularity AS granularity_ns
      FROM aggregates a
      JOIN metrics m ON m.id = a.metric
      JOIN methods mt ON mt.id = a.method;
-- gpuagg_ensure_partition(day): create the day's partition of aggregates
-- (fillfactor 80) once, under an advisory lock.
CREATE FUNCTION gpuagg_ensure_partition(day bigint) RETURNS boolean
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
                   'FOR VALUES FROM (%s) TO (%s) WITH (fillfactor = 80)',
                   nm, lo, lo + 86400000000000);
    INSERT INTO aggregate_partitions VALUES (nm, lo, lo + 86400000000000);
    RETURN true;
END $$;
CREATE FUNCTION gpuagg_retention(now_ns bigint) RETURNS SETOF text
    LANGUAGE plpgsql AS $$
DECLARE
    unbounded boolean;
    reach bigint;
    r record;
BEGIN
    SELECT bool_or((d->>'timespan_ns')::bigint = 0),
           max((d->>'timespan_ns')::bigint + (d->>'granularity_ns')::bigint)
      INTO unbounded, reach
      FROM archive_policies p CROSS JOIN LATERAL jsonb_array_elements(p.definition) d
     WHERE p.name IN (SELECT policy FROM metrics);
    IF reach IS NULL OR unbounded THEN
        RETURN;
    END IF;
    PERFORM pg_advisory_xact_lock(106240213050983 + 1);
    FOR r IN SELECT name FROM aggregate_partitions
              WHERE to_ns <= now_ns - reach ORDER BY from_ns LOOP
        EXECUTE format('DROP TABLE IF EXISTS %I', r.name);
        DELETE FROM aggregate_partitions WHERE name = r.name;
        RETURN NEXT r.name;
    END LOOP;
END $$;
-- Every method of proto/method.c's table (ga_method_t and its name): the
-- bases, the percentiles 1pct..99pct, then each as rate:.  A method added
-- later comes with a migration of its own inserting its rows;
-- tests/unit/test_pg_schema.c checks that the rows equal the table.
INSERT INTO methods (id, name) VALUES
    (1, 'mean'),
    (2, 'sum'),
    (3, 'min'),
    (4, 'max'),
    (5, 'count'),
    (6, 'first'),
    (7, 'last'),
    (8, 'std'),
    (9, 'median'),
    (101, '1pct'),
    (102, '2pct'),
    (103, '3pct'),
    (104, '4pct'),
    (105, '5pct'),
    (106, '6pct'),
    (107, '7pct'),
    (108, '8pct'),
    (109, '9pct'),
    (110, '10pct'),
    (111, '11pct'),
    (112, '12pct'),
    (113, '13pct'),
    (114, '14pct'),
    (115, '15pct'),
    (116, '16pct'),
    (117, '17pct'),
    (118, '18pct'),
    (119, '19pct'),
    (120, '20pct'),
    (121, '21pct'),
    (122, '22pct'),
    (123, '23pct'),
    (124, '24pct'),
    (125, '25pct'),
    (126, '26pct'),
    (127, '27pct'),
    (128, '28pct'),
    (129, '29pct'),
    (130, '30pct'),
    (131, '31pct'),
    (132, '32pct'),
    (133, '33pct'),
    (134, '34pct'),
    (135, '35pct'),
    (136, '36pct'),
    (137, '37pct'),
    (138, '38pct'),
    (139, '39pct'),
    (140, '40pct'),
    (141, '41pct'),
    (142, '42pct'),
    (143, '43pct'),
    (144, '44pct'),
    (145, '45pct'),
    (146, '46pct'),
    (147, '47pct'),
    (148, '48pct'),
    (149, '49pct'),
    (150, '50pct'),
    (151, '51pct'),
    (152, '52pct'),
    (153, '53pct'),
    (154, '54pct'),
    (155, '55pct'),
    (156, '56pct'),
    (157, '57pct'),
    (158, '58pct'),
    (159, '59pct'),
    (160, '60pct'),
    (161, '61pct'),
    (162, '62pct'),
    (163, '63pct'),
    (164, '64pct'),
    (165, '65pct'),
    (166, '66pct'),
    (167, '67pct'),
    (168, '68pct'),
    (169, '69pct'),
    (170, '70pct'),
    (171, '71pct'),
    (172, '72pct'),
    (173, '73pct'),
    (174, '74pct'),
    (175, '75pct'),
    (176, '76pct'),
    (177, '77pct'),
    (178, '78pct'),
    (179, '79pct'),
    (180, '80pct'),
    (181, '81pct'),
    (182, '82pct'),
    (183, '83pct'),
    (184, '84pct'),
    (185, '85pct'),
    (186, '86pct'),
    (187, '87pct'),
    (188, '88pct'),
    (189, '89pct'),
    (190, '90pct'),
    (191, '91pct'),
    (192, '92pct'),
    (193, '93pct'),
    (194, '94pct'),
    (195, '95pct'),
    (196, '96pct'),
    (197, '97pct'),
    (198, '98pct'),
    (199, '99pct'),
    (513, 'rate:mean'),
    (514, 'rate:sum'),
    (515, 'rate:min'),
    (516, 'rate:max'),
    (517, 'rate:count'),
    (518, 'rate:first'),
    (519, 'rate:last'),
    (520, 'rate:std'),
    (521, 'rate:median'),
    (613, 'rate:1pct'),
    (614, 'rate:2pct'),
    (615, 'rate:3pct'),
    (616, 'rate:4pct'),
    (617, 'rate:5pct'),
    (618, 'rate:6pct'),
    (619, 'rate:7pct'),
    (620, 'rate:8pct'),
    (621, 'rate:9pct'),
    (622, 'rate:10pct'),
    (623, 'rate:11pct'),
    (624, 'rate:12pct'),
    (625, 'rate:13pct'),
    (626, 'rate:14pct'),
    (627, 'rate:15pct'),
    (628, 'rate:16pct'),
    (629, 'rate:17pct'),
    (630, 'rate:18pct'),
    (631, 'rate:19pct'),
    (632, 'rate:20pct'),
    (633, 'rate:21pct'),
    (634, 'rate:22pct'),
    (635, 'rate:23pct'),
    (636, 'rate:24pct'),
    (637, 'rate:25pct'),
    (638, 'rate:26pct'),
    (639, 'rate:27pct'),
    (640, 'rate:28pct'),
    (641, 'rate:29pct'),
    (642, 'rate:30pct'),
    (643, 'rate:31pct'),
    (644, 'rate:32pct'),
    (645, 'rate:33pct'),
    (646, 'rate:34pct'),
    (647, 'rate:35pct'),
    (648, 'rate:36pct'),
    (649, 'rate:37pct'),
    (650, 'rate:38pct'),
    (651, 'rate:39pct'),
    (652, 'rate:40pct'),
    (653, 'rate:41pct'),
    (654, 'rate:42pct'),
    (655, 'rate:43pct'),
    (656, 'rate:44pct'),
    (657, 'rate:45pct'),
    (658, 'rate:46pct'),
    (659, 'rate:47pct'),
    (660, 'rate:48pct'),
    (661, 'rate:49pct'),
    (662, 'rate:50pct'),
    (663, 'rate:51pct'),
    (664, 'rate:52pct'),
    (665, 'rate:53pct'),
    (666, 'rate:54pct'),
    (667, 'rate:55pct'),
    (668, 'rate:56pct'),
    (669, 'rate:57pct'),
    (670, 'rate:58pct'),
    (671, 'rate:59pct'),
    (672, 'rate:60pct'),
    (673, 'rate:61pct'),
    (674, 'rate:62pct'),
    (675, 'rate:63pct'),
    (676, 'rate:64pct'),
    (677, 'rate:65pct'),
    (678, 'rate:66pct'),
    (679, 'rate:67pct'),
    (680, 'rate:68pct'),
    (681, 'rate:69pct'),
    (682, 'rate:70pct'),
    (683, 'rate:71pct'),
    (684, 'rate:72pct'),
    (685, 'rate:73pct'),
    (686, 'rate:74pct'),
    (687, 'rate:75pct'),
    (688, 'rate:76pct'),
    (689, 'rate:77pct'),
    (690, 'rate:78pct'),
    (691, 'rate:79pct'),
    (692, 'rate:80pct'),
    (693, 'rate:81pct'),
    (694, 'rate:82pct'),
    (695, 'rate:83pct'),
    (696, 'rate:84pct'),
    (697, 'rate:85pct'),
    (698, 'rate:86pct'),
    (699, 'rate:87pct'),
    (700, 'rate:88pct'),
    (701, 'rate:89pct'),
    (702, 'rate:90pct'),
    (703, 'rate:91pct'),
    (704, 'rate:92pct'),
    (705, 'rate:93pct'),
    (706, 'rate:94pct'),
    (707, 'rate:95pct'),
    (708, 'rate:96pct'),
    (709, 'rate:97pct'),
    (710, 'rate:98pct'),
    (711, 'rate:99pct');
