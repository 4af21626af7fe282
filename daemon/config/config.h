/* config.h — gpuaggd configuration: defaults, libyaml parser, validator.
 *
 * Three steps, each separately testable:
 *   ga_config_defaults()  the static defaults (etc/gpuaggd.yaml documents them)
 *   ga_config_parse_*()   YAML → struct; unknown keys and bad types are errors
 *   ga_config_validate()  cross-field and range rules, one per message
 * Errors are written to `err` as "FILE:LINE: KEY: what was wrong".
 *
 * What SIGHUP may change (ga_config_reloadable()): log level, limits,
 * archive policies, rules, default policy, storage flush tuning, jobs
 * tuning.  Everything else (sockets, conninfo, journal dir, GPUs) is
 * reported as needing a restart and kept as it was.
 *
 * Keys sized by the machine (storage.writers, journal.max_bytes,
 * limits.max_metrics, engine.workers) take "auto", stored as
 * GA_CONFIG_AUTO until ga_config_size() resolves it once at start
 * (config_size.c); c->sizing records what was chosen and why. */
#ifndef GA_CONFIG_H
#define GA_CONFIG_H

#include <stddef.h>
#include <stdint.h>

#include <msgpack.h>

#include "proto/policy.h"

#define GA_PATH_MAX 4096
#define GA_SUN_PATH_MAX 108      /* sizeof(sockaddr_un.sun_path) */
#define GA_CONFIG_MAX_POLICIES 64
#define GA_CONFIG_MAX_RULES 256
#define GA_CONFIG_MAX_GPUS 64
#define GA_CONFIG_MAX_KEYLINES 1024

/* "auto" in the file: a key the machine sizes (its table entry has
 * auto_ok).  For such a key any value <= 0 means auto once validated:
 * GA_CONFIG_AUTO, and 0 where 0 is in range (engine.workers,
 * limits.max_metrics). */
#define GA_CONFIG_AUTO (-1)

/* What ga_config_size() reads of the machine; ga_machine_probe() fills it
 * from the running system, tests pass made-up ones. */
struct ga_machine {
    int ncpu;                       /* online CPUs (_SC_NPROCESSORS_ONLN) */
    uint64_t phys_bytes;            /* physical memory (_SC_PHYS_PAGES x _SC_PAGESIZE), 0 = unknown */
    int ngpus;                      /* usable GPUs found, -1 = not probed */
    /* The journal's file system: statvfs of journal.dir, or of its nearest
     * existing parent when it does not exist yet. */
    int fs_errno;                   /* 0, or statvfs's errno (the numbers below are then 0) */
    char fs_path[GA_PATH_MAX];      /* the directory statvfs was given */
    uint64_t fs_avail_bytes;        /* f_bavail x f_frsize: free to an unprivileged user */
    uint64_t journal_bytes;         /* bytes of segments (*.wal) already in journal.dir */
};

/* Which sized key a record is for (the order of status' "sizing"). */
enum ga_sized_key {
    GA_SIZED_WRITERS,               /* storage.writers */
    GA_SIZED_JOURNAL_MAX_BYTES,     /* journal.max_bytes */
    GA_SIZED_MAX_METRICS,           /* limits.max_metrics (ga_config_max_metrics) */
    GA_SIZED_ENGINE_WORKERS,        /* engine.workers */
    GA_SIZED_N
};

/* One key's resolution: the value in effect, whether "auto" chose it, and
 * why in words ("16 CPUs", "set in the config (line 12)"). */
struct ga_config_sized {
    const char *key;                /* the dotted key, static storage */
    int64_t value;
    int is_auto;
    char reason[256];
};

struct ga_config {
    char path[GA_PATH_MAX];                 /* file it came from, "" = defaults */

    struct {
        int level;                          /* GA_LOG_* ; key log.level: debug|info|warn|error */
    } log;

    struct {
        char socket[GA_SUN_PATH_MAX];       /* control.socket */
        int mode;                           /* control.mode, octal, default 0660 */
    } control;

    struct {
        char unix_path[GA_SUN_PATH_MAX];    /* listen.unix, "" = off */
        char tcp[256];                      /* listen.tcp "host:port", "" = off, port 0 = any */
        char udp[256];                      /* listen.udp "host:port", "" = off */
        char ceilometer_tcp[256];           /* listen.ceilometer_tcp "host:port", "" = off */
        char telemetry_secret[256];         /* listen.telemetry_secret, "" = unsigned accepted */
        char token[256];                    /* listen.token: TCP hello shared secret, "" = none */
        char http[256];                     /* listen.http "host:port", "" = off (daemon/http/) */
    } listen;

    struct {
        char auth[16];                      /* http.auth: basic | remoteuser | noauth | keystone */
        int max_connections;                /* http.max_connections, default 64 */
        int timeout_s;                      /* http.timeout_s, default 30 */
        int header_timeout_s;               /* http.header_timeout_s, default 10 */
        int max_connections_per_peer;       /* http.max_connections_per_peer, default 16 */
        int64_t max_body_bytes;             /* http.max_body_bytes, default 1 MiB */
        int pool_size;                      /* http.pool_size, default 2 */
        int max_points;                     /* http.max_points per response, default 1000000 */
        char resource_creator[256];         /* http.resource_creator, "" = sample's user:project */
        struct ga_keystone_config {         /* http.keystone.*: http.auth keystone (auth_keystone.h) */
            char auth_url[512];             /* Keystone's URL, without /v3 */
            char www_authenticate_uri[512]; /* WWW-Authenticate's uri, "" = auth_url */
            char username[256];             /* the service user */
            char password[256];             /* its password, or: */
            char password_file[GA_PATH_MAX];/* a file holding it (one line) */
            char project_name[256];         /* the service user's project */
            char user_domain_name[256];     /* default "Default" */
            char project_domain_name[256];  /* default "Default" */
            int token_cache_s;              /* default 300 */
            int cache_entries;              /* default 10000 */
            int timeout_ms;                 /* one Keystone request, default 3000 */
            int max_validations;            /* Keystone requests at once, default 16 */
        } keystone;
    } http;

    struct {
        char conninfo[1024];                /* storage.conninfo (libpq) */
        int flush_interval_ms;              /* storage.flush_interval_ms, default 1000 */
        int flush_rows;                     /* storage.flush_rows, default 100000 */
        int queue_max_rows;                 /* storage.queue_max_rows, 0 (default): 16 x flush_rows */
        int open_buckets_max;               /* storage.open_buckets_max, default 4,000,000 */
        int window_txn_bytes;               /* storage.window_txn_bytes, default 8 MiB */
        int coarse_delay_ms;                /* storage.coarse_delay_ms, default 5000 */
        int window_snapshot_s;              /* storage.window_snapshot_s, default 300 */
        int writers;                        /* storage.writers, default auto
                                               (GA_CONFIG_AUTO): see ga_config_size */
        int pool_size;                      /* storage.pool_size, default 2 */
        int retry_initial_ms;               /* storage.retry_initial_ms, default 250 */
        int retry_max_ms;                   /* storage.retry_max_ms, default 30000 */
        int stop_timeout_ms;                /* storage.stop_timeout_ms, default 30000 */
    } storage;

    struct {
        char dir[GA_PATH_MAX];              /* journal.dir */
        int fsync_interval_ms;              /* journal.fsync_interval_ms, default 5 */
        int64_t segment_bytes;              /* journal.segment_bytes, default 64 MiB */
        int64_t max_bytes;                  /* journal.max_bytes, default auto
                                               (GA_CONFIG_AUTO): see ga_config_size */
    } journal;

    struct {
        char nats[1024];                    /* cluster.nats: NATS URLs, comma-separated;
                                               "" = single node with the local journal */
        char stream[64];                    /* cluster.stream, default "GPUAGG" */
        int partitions;                     /* cluster.partitions: must be GA_PARTITIONS (64) */
        int replicas;                       /* cluster.replicas, default 3 */
        char member[64];                    /* cluster.member: this daemon's name, "" = host name */
        char credentials[GA_PATH_MAX];      /* cluster.credentials: NATS .creds file, "" = none */
        char token[256];                    /* cluster.token: NATS token, "" = none */
        int heartbeat_ms;                   /* cluster.heartbeat_ms, default 1000 */
        int member_timeout_ms;              /* cluster.member_timeout_ms, default 5000 */
        int publish_timeout_ms;             /* cluster.publish_timeout_ms, default 5000 */
        int64_t max_pending_bytes;          /* cluster.max_pending_bytes, default 64 MiB */
    } cluster;

    struct {
        int all;                            /* gpu.devices: all */
        int ndevices;                       /* gpu.devices: [0, 1] (or none → 0, all=0) */
        int devices[GA_CONFIG_MAX_GPUS];
        int streams;                        /* gpu.streams per device, default 2, >= 2 */
        int64_t staging_bytes;              /* gpu.staging_bytes per stream, default 64 MiB */
        int cpu_threads;                    /* gpu.cpu_threads for the CPU backend, 0 = cores */
    } gpu;

    struct {
        int workers;                        /* engine.workers: partition workers; default auto
                                               (GA_CONFIG_AUTO, 0 too); >= 1 once sized */
    } engine;

    struct {
        int max_connections;                /* limits.max_connections, default 1024 */
        int max_connections_per_peer;       /* ingest connections of one uid (unix socket)
                                               or one address (TCP), default 256 */
        int max_metrics;                    /* live metrics; 0 (default) or GA_CONFIG_AUTO:
                                               sized from the memory (ga_config_max_metrics) */
        int64_t max_frame_bytes;            /* limits.max_frame_bytes, default 16 MiB */
        int64_t conn_buffer_bytes;          /* limits.conn_buffer_bytes, default 32 MiB */
        int64_t memory_budget_bytes;        /* limits.memory_budget_bytes, default 1 GiB */
        int idle_timeout_s;                 /* limits.idle_timeout_s, default 300 */
        int slow_client_timeout_s;          /* limits.slow_client_timeout_s, default 30 */
        int queue_batches;                  /* limits.queue_batches, default 64 */
        int max_future_s;                   /* how far ahead of the daemon's clock a point's
                                               timestamp may be, default 86400; 0 = no bound
                                               but GA_TS_MAX */
    } limits;

    struct {
        int max_queued;                     /* jobs.max_queued, default 64 */
        int workers;                        /* jobs.workers, default 1 */
        int result_ttl_s;                   /* jobs.result_ttl_s, default 3600 */
        int64_t max_job_bytes;              /* jobs.max_job_bytes, default 4 GiB */
        int64_t results_max_bytes;          /* jobs.results_max_bytes, default 512 MiB */
        int ninput_dirs;                    /* jobs.input_dirs: paths jobs may read */
        char input_dirs[8][GA_PATH_MAX];
    } jobs;

    /* archive_policies: [{name, back_window, definition: [{granularity,
     * timespan, points}], aggregation_methods: [...]}] — Gnocchi's names.
     * Config policies may shadow built-ins of the same name. */
    int npolicies;
    struct ga_policy policies[GA_CONFIG_MAX_POLICIES];
    /* archive_policy_rules: [{metric_pattern, archive_policy_name}] */
    int nrules;
    struct ga_rule rules[GA_CONFIG_MAX_RULES];
    char default_policy[GA_POLICY_NAME_MAX];  /* default_archive_policy */

    /* What ga_config_size() chose for the sized keys; done = 0 before. */
    struct {
        int done;
        struct ga_machine machine;          /* what it was sized for */
        struct ga_config_sized key[GA_SIZED_N];
    } sizing;

    /* Where each key was found, for validator messages ("listen.tcp"). */
    int nkeylines;
    struct { char key[64]; int line; } keylines[GA_CONFIG_MAX_KEYLINES];
};

/* Fill c with the static defaults. */
void ga_config_defaults(struct ga_config *c);

/* Parse YAML over the current contents of c (call ga_config_defaults
 * first).  `name` is used in messages.  Returns 0 or GA_ECONFIG with
 * "name:line: key: reason" in err. */
int ga_config_parse_file(struct ga_config *c, const char *path, char *err, size_t errlen);
int ga_config_parse_string(struct ga_config *c, const char *yaml, size_t len, const char *name,
                           char *err, size_t errlen);

/* Check every rule (docs in etc/gpuaggd.yaml).  0 or GA_ECONFIG + err. */
int ga_config_validate(const struct ga_config *c, char *err, size_t errlen);

/* defaults + parse + validate.  The usual entry point. */
int ga_config_load(struct ga_config *c, const char *path, char *err, size_t errlen);

/* Line of a dotted key in the parsed file, 0 if unknown. */
int ga_config_key_line(const struct ga_config *c, const char *key);

/* Policy by name: config first, then built-ins; NULL if none. */
const struct ga_policy *ga_config_policy(const struct ga_config *c, const char *name);
/* Policy for a metric name: first matching rule, else the default policy. */
const struct ga_policy *ga_config_policy_for(const struct ga_config *c, const char *metric);

/* Copy into `cur` the reloadable parts of `next`; write into `changed` a
 * space-separated list of changed keys that need a restart (ignored).
 * Returns the number of such keys. */
int ga_config_apply_reload(struct ga_config *cur, const struct ga_config *next,
                           char *changed, size_t changedlen);

/* Pack the effective config as one msgpack map mirroring the YAML keys
 * (secrets replaced by "***" when set), for the control op config.get. */
int ga_config_pack(const struct ga_config *c, msgpack_packer *pk);

/* Parse "host:port" / "[v6]:port".  0 or GA_EINVAL. */
int ga_parse_hostport(const char *s, char *host, size_t hostlen, int *port);
/* Sizes: 1024, "64KiB", "16 MiB", "1GiB", "10MB" (SI).  0 or GA_EINVAL. */
int ga_parse_size(const char *s, int64_t *bytes);

/* The key table: every YAML key (dotted, "listen.tcp"), the kind of value
 * it takes, where it lives in struct ga_config and whether SIGHUP may
 * change it.  Shared by the parser, ga_config_apply_reload() and
 * ga_config_pack(); static storage, never freed. */
enum ga_config_ktype {
    GA_K_STR,        /* string, "" allowed */
    GA_K_SOCK,       /* unix socket path, shorter than sun_path */
    GA_K_INT,        /* int */
    GA_K_MS,         /* int milliseconds, or a duration with a unit ("250ms") */
    GA_K_SEC,        /* int seconds, or a duration with a unit ("5min") */
    GA_K_SIZE,       /* int64 bytes, or a size ("16MiB") */
    GA_K_MODE,       /* int, written in octal ("0660") */
    GA_K_LEVEL,      /* log level name */
    GA_K_DEVICES,    /* gpu.devices */
    GA_K_DIRS,       /* jobs.input_dirs */
    GA_K_POLICIES,   /* archive_policies */
    GA_K_RULES,      /* archive_policy_rules */
};
struct ga_config_key {
    const char *key;
    enum ga_config_ktype type;
    size_t off, size;        /* the field in struct ga_config */
    int reload;              /* 1: SIGHUP applies it */
    int auto_ok;             /* 1: also takes "auto" (GA_CONFIG_AUTO), sized at start */
};
extern const struct ga_config_key ga_config_keys[];
extern const int ga_config_nkeys;
/* The value of an integer key's field (int or int64_t) in c. */
int64_t ga_config_int(const struct ga_config *c, const struct ga_config_key *kd);
/* The table entry of a dotted key, NULL if there is none. */
const struct ga_config_key *ga_config_find_key(const char *key);

/* The live-metric bound in effect: limits.max_metrics when set, else its
 * auto value (one metric per KiB of a quarter of the physical memory; see
 * ga_config_size).  The one place callers read it. */
uint64_t ga_config_max_metrics(const struct ga_config *c);

/* ---- sizing by the machine (config_size.c) ------------------------------ */

/* Fill m from the running system: online CPUs, physical memory, statvfs of
 * journal_dir (or its nearest existing parent) and the bytes of the
 * journal's segments already there.  ngpus is stored as given.  Never
 * fails: what cannot be read is left 0 (fs_errno says why for statvfs). */
void ga_machine_probe(struct ga_machine *m, const char *journal_dir, int ngpus);

/* Resolve every "auto" of c for machine m, once, after validation, and
 * record each sized key's value, auto or set, and reason in c->sizing
 * (m is copied there).  The rules:
 *   storage.writers     clamp(ncpu, 4, 16)
 *   journal.max_bytes   window_snapshot_s of the rated ingest (65,536
 *                       points/s a CPU, 32 bytes a point), twice; at least
 *                       1 GiB, at most half of (free space + the journal's
 *                       segments) on its file system, never below 256 MiB
 *                       nor 2 x segment_bytes; 4 GiB if statvfs failed
 *   limits.max_metrics  phys_bytes / 4 / 1024 (one metric per KiB of a
 *                       quarter of the memory); memory_budget_bytes / 1024
 *                       if the memory is unknown
 *   engine.workers      clamp(ncpu / 4, 1, 16)
 * An explicit value is kept.  Returns 0; GA_EINVAL if c was sized before. */
int ga_config_size(struct ga_config *c, const struct ga_machine *m);

/* After SIGHUP applied next's reloadable keys to c: re-resolve the sized
 * keys SIGHUP may change (limits.max_metrics) for c's machine. */
void ga_config_size_reload(struct ga_config *c);

/* The record of a sized key ("storage.writers"); NULL if key is not sized
 * or c was never sized. */
const struct ga_config_sized *ga_config_sized_of(const struct ga_config *c, const char *key);

#endif
