/* config.c — gpuaggd configuration: the static defaults, the key table,
 * sizes, policy lookups and SIGHUP reload.  The libyaml parser is in
 * config_parse.c, the rules in config_validate.c, the msgpack view in
 * config_pack.c.  See config.h. */
#include "daemon/config/config.h"

#include <ctype.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "proto/base/log.h"
#include "proto/ga_err.h"

#define KiB 1024LL
#define MiB (1024 * KiB)
#define GiB (1024 * MiB)

/* Ceilometer's gnocchi_resources.yaml sends cumulative meters to
 * ceilometer-low-rate.  Ceilometer's UDP publisher names a metric
 * resource_id + "/" + counter_name, hence the leading "*" + "/". */
#define CEILOMETER_RULES \
    { "*/cpu", "ceilometer-low-rate" }, \
    { "*/network.incoming.bytes", "ceilometer-low-rate" }, \
    { "*/network.outgoing.bytes", "ceilometer-low-rate" }, \
    { "*/network.incoming.packets", "ceilometer-low-rate" }, \
    { "*/network.outgoing.packets", "ceilometer-low-rate" }, \
    { "*/network.incoming.packets.drop", "ceilometer-low-rate" }, \
    { "*/network.outgoing.packets.drop", "ceilometer-low-rate" }, \
    { "*/network.incoming.packets.error", "ceilometer-low-rate" }, \
    { "*/network.outgoing.packets.error", "ceilometer-low-rate" }, \
    { "*/disk.device.read.bytes", "ceilometer-low-rate" }, \
    { "*/disk.device.write.bytes", "ceilometer-low-rate" }, \
    { "*/disk.device.read.requests", "ceilometer-low-rate" }, \
    { "*/disk.device.write.requests", "ceilometer-low-rate" }

static const struct ga_config defaults = {
    .log = { .level = GA_LOG_INFO },
    .control = { .socket = "/run/gpuagg/control.sock", .mode = 0660 },
    .listen = { .unix_path = "/run/gpuagg/ingest.sock", .tcp = "127.0.0.1:4951",
                .udp = "127.0.0.1:4952", .telemetry_secret = "", .token = "", .http = "" },
    .http = { .auth = "basic", .max_connections = 64, .timeout_s = 30, .header_timeout_s = 10,
              .max_connections_per_peer = 16, .max_body_bytes = 1 * MiB, .pool_size = 2,
              .max_points = 1000000, .resource_creator = "",
              .keystone = { .user_domain_name = "Default", .project_domain_name = "Default",
                            .token_cache_s = 300, .cache_entries = 10000, .timeout_ms = 3000,
                            .max_validations = 16 } },
    .storage = { .conninfo = "dbname=gpuagg", .flush_interval_ms = 1000, .flush_rows = 100000,
                 .window_snapshot_s = 300, .writers = GA_CONFIG_AUTO,
                 .open_buckets_max = 4000000,
                 .window_txn_bytes = 8 << 20, .coarse_delay_ms = 5000,
                 .pool_size = 2, .retry_initial_ms = 250, .retry_max_ms = 30000,
                 .stop_timeout_ms = 30000 },
    .journal = { .dir = "/var/lib/gpuagg/journal", .fsync_interval_ms = 5,
                 .segment_bytes = 64 * MiB, .max_bytes = GA_CONFIG_AUTO },
    .cluster = { .nats = "", .stream = "GPUAGG", .partitions = 64, .replicas = 3, .member = "",
                 .credentials = "", .token = "", .heartbeat_ms = 1000, .member_timeout_ms = 5000,
                 .publish_timeout_ms = 5000, .max_pending_bytes = 64 * MiB },
    .gpu = { .all = 1, .ndevices = 0, .streams = 2, .staging_bytes = 64 * MiB, .cpu_threads = 0 },
    .engine = { .workers = GA_CONFIG_AUTO },
    .limits = { .max_connections = 1024, .max_connections_per_peer = 256, .max_frame_bytes = 16 * MiB,
                .conn_buffer_bytes = 32 * MiB, .memory_budget_bytes = 1 * GiB,
                .idle_timeout_s = 300, .slow_client_timeout_s = 30, .queue_batches = 64,
                .max_future_s = 86400 },
    .jobs = { .max_queued = 64, .workers = 1, .result_ttl_s = 3600, .ninput_dirs = 0,
              .max_job_bytes = 4 * GiB, .results_max_bytes = 512 * MiB },
    .npolicies = 0,
    .nrules = (int)(sizeof((struct ga_rule[]){ CEILOMETER_RULES }) / sizeof(struct ga_rule)),
    .rules = { CEILOMETER_RULES },
    .default_policy = "ceilometer-low",
};

void ga_config_defaults(struct ga_config *c)
{
    *c = defaults;
}

/* ---- the key table ------------------------------------------------------ */

#define FLD(f) offsetof(struct ga_config, f), sizeof(((struct ga_config *)0)->f)

/* key, type, field, reload (SIGHUP applies it), auto_ok (takes "auto") */
const struct ga_config_key ga_config_keys[] = {
    { "log.level", GA_K_LEVEL, FLD(log.level), 1, 0 },
    { "control.socket", GA_K_SOCK, FLD(control.socket), 0, 0 },
    { "control.mode", GA_K_MODE, FLD(control.mode), 0, 0 },
    { "listen.unix", GA_K_SOCK, FLD(listen.unix_path), 0, 0 },
    { "listen.tcp", GA_K_STR, FLD(listen.tcp), 0, 0 },
    { "listen.udp", GA_K_STR, FLD(listen.udp), 0, 0 },
    { "listen.ceilometer_tcp", GA_K_STR, FLD(listen.ceilometer_tcp), 0, 0 },
    { "listen.telemetry_secret", GA_K_STR, FLD(listen.telemetry_secret), 0, 0 },
    { "listen.token", GA_K_STR, FLD(listen.token), 0, 0 },
    { "listen.http", GA_K_STR, FLD(listen.http), 0, 0 },
    { "http.auth", GA_K_STR, FLD(http.auth), 0, 0 },
    { "http.max_connections", GA_K_INT, FLD(http.max_connections), 0, 0 },
    { "http.timeout_s", GA_K_SEC, FLD(http.timeout_s), 0, 0 },
    { "http.header_timeout_s", GA_K_SEC, FLD(http.header_timeout_s), 0, 0 },
    { "http.max_connections_per_peer", GA_K_INT, FLD(http.max_connections_per_peer), 0, 0 },
    { "http.max_body_bytes", GA_K_SIZE, FLD(http.max_body_bytes), 0, 0 },
    { "http.pool_size", GA_K_INT, FLD(http.pool_size), 0, 0 },
    { "http.max_points", GA_K_INT, FLD(http.max_points), 0, 0 },
    { "http.resource_creator", GA_K_STR, FLD(http.resource_creator), 0, 0 },
    { "http.keystone.auth_url", GA_K_STR, FLD(http.keystone.auth_url), 0, 0 },
    { "http.keystone.www_authenticate_uri", GA_K_STR, FLD(http.keystone.www_authenticate_uri), 0, 0 },
    { "http.keystone.username", GA_K_STR, FLD(http.keystone.username), 0, 0 },
    { "http.keystone.password", GA_K_STR, FLD(http.keystone.password), 0, 0 },
    { "http.keystone.password_file", GA_K_STR, FLD(http.keystone.password_file), 0, 0 },
    { "http.keystone.project_name", GA_K_STR, FLD(http.keystone.project_name), 0, 0 },
    { "http.keystone.user_domain_name", GA_K_STR, FLD(http.keystone.user_domain_name), 0, 0 },
    { "http.keystone.project_domain_name", GA_K_STR, FLD(http.keystone.project_domain_name), 0, 0 },
    { "http.keystone.token_cache_s", GA_K_SEC, FLD(http.keystone.token_cache_s), 0, 0 },
    { "http.keystone.cache_entries", GA_K_INT, FLD(http.keystone.cache_entries), 0, 0 },
    { "http.keystone.timeout_ms", GA_K_MS, FLD(http.keystone.timeout_ms), 0, 0 },
    { "http.keystone.max_validations", GA_K_INT, FLD(http.keystone.max_validations), 0, 0 },
    { "storage.conninfo", GA_K_STR, FLD(storage.conninfo), 0, 0 },
    { "storage.flush_interval_ms", GA_K_MS, FLD(storage.flush_interval_ms), 1, 0 },
    { "storage.flush_rows", GA_K_INT, FLD(storage.flush_rows), 1, 0 },
    { "storage.queue_max_rows", GA_K_INT, FLD(storage.queue_max_rows), 0, 0 },
    { "storage.open_buckets_max", GA_K_INT, FLD(storage.open_buckets_max), 0, 0 },
    { "storage.window_txn_bytes", GA_K_INT, FLD(storage.window_txn_bytes), 0, 0 },
    { "storage.coarse_delay_ms", GA_K_MS, FLD(storage.coarse_delay_ms), 1, 0 },
    { "storage.window_snapshot_s", GA_K_SEC, FLD(storage.window_snapshot_s), 1, 0 },
    { "storage.writers", GA_K_INT, FLD(storage.writers), 0, 1 },
    { "storage.pool_size", GA_K_INT, FLD(storage.pool_size), 0, 0 },
    { "storage.retry_initial_ms", GA_K_MS, FLD(storage.retry_initial_ms), 0, 0 },
    { "storage.retry_max_ms", GA_K_MS, FLD(storage.retry_max_ms), 0, 0 },
    { "storage.stop_timeout_ms", GA_K_MS, FLD(storage.stop_timeout_ms), 1, 0 },
    { "journal.dir", GA_K_STR, FLD(journal.dir), 0, 0 },
    { "journal.fsync_interval_ms", GA_K_MS, FLD(journal.fsync_interval_ms), 0, 0 },
    { "journal.segment_bytes", GA_K_SIZE, FLD(journal.segment_bytes), 0, 0 },
    { "journal.max_bytes", GA_K_SIZE, FLD(journal.max_bytes), 0, 1 },
    { "cluster.nats", GA_K_STR, FLD(cluster.nats), 0, 0 },
    { "cluster.stream", GA_K_STR, FLD(cluster.stream), 0, 0 },
    { "cluster.partitions", GA_K_INT, FLD(cluster.partitions), 0, 0 },
    { "cluster.replicas", GA_K_INT, FLD(cluster.replicas), 0, 0 },
    { "cluster.member", GA_K_STR, FLD(cluster.member), 0, 0 },
    { "cluster.credentials", GA_K_STR, FLD(cluster.credentials), 0, 0 },
    { "cluster.token", GA_K_STR, FLD(cluster.token), 0, 0 },
    { "cluster.heartbeat_ms", GA_K_MS, FLD(cluster.heartbeat_ms), 0, 0 },
    { "cluster.member_timeout_ms", GA_K_MS, FLD(cluster.member_timeout_ms), 0, 0 },
    { "cluster.publish_timeout_ms", GA_K_MS, FLD(cluster.publish_timeout_ms), 0, 0 },
    { "cluster.max_pending_bytes", GA_K_SIZE, FLD(cluster.max_pending_bytes), 0, 0 },
    { "gpu.devices", GA_K_DEVICES, FLD(gpu.devices), 0, 0 },
    { "gpu.streams", GA_K_INT, FLD(gpu.streams), 0, 0 },
    { "gpu.staging_bytes", GA_K_SIZE, FLD(gpu.staging_bytes), 0, 0 },
    { "gpu.cpu_threads", GA_K_INT, FLD(gpu.cpu_threads), 0, 0 },
    { "engine.workers", GA_K_INT, FLD(engine.workers), 0, 1 },
    { "limits.max_connections", GA_K_INT, FLD(limits.max_connections), 1, 0 },
    { "limits.max_connections_per_peer", GA_K_INT, FLD(limits.max_connections_per_peer), 1, 0 },
    { "limits.max_metrics", GA_K_INT, FLD(limits.max_metrics), 1, 1 },
    { "limits.max_frame_bytes", GA_K_SIZE, FLD(limits.max_frame_bytes), 1, 0 },
    { "limits.conn_buffer_bytes", GA_K_SIZE, FLD(limits.conn_buffer_bytes), 1, 0 },
    { "limits.memory_budget_bytes", GA_K_SIZE, FLD(limits.memory_budget_bytes), 1, 0 },
    { "limits.idle_timeout_s", GA_K_SEC, FLD(limits.idle_timeout_s), 1, 0 },
    { "limits.slow_client_timeout_s", GA_K_SEC, FLD(limits.slow_client_timeout_s), 1, 0 },
    { "limits.queue_batches", GA_K_INT, FLD(limits.queue_batches), 1, 0 },
    { "limits.max_future_s", GA_K_SEC, FLD(limits.max_future_s), 1, 0 },
    { "jobs.max_queued", GA_K_INT, FLD(jobs.max_queued), 1, 0 },
    { "jobs.workers", GA_K_INT, FLD(jobs.workers), 0, 0 },
    { "jobs.result_ttl_s", GA_K_SEC, FLD(jobs.result_ttl_s), 1, 0 },
    { "jobs.max_job_bytes", GA_K_SIZE, FLD(jobs.max_job_bytes), 1, 0 },
    { "jobs.results_max_bytes", GA_K_SIZE, FLD(jobs.results_max_bytes), 1, 0 },
    { "jobs.input_dirs", GA_K_DIRS, FLD(jobs.input_dirs), 1, 0 },
    { "archive_policies", GA_K_POLICIES, FLD(policies), 1, 0 },
    { "archive_policy_rules", GA_K_RULES, FLD(rules), 1, 0 },
    { "default_archive_policy", GA_K_STR, FLD(default_policy), 1, 0 },
};
const int ga_config_nkeys = (int)(sizeof ga_config_keys / sizeof ga_config_keys[0]);

const struct ga_config_key *ga_config_find_key(const char *key)
{
    for (int i = 0; i < ga_config_nkeys; i++)
        if (strcmp(ga_config_keys[i].key, key) == 0)
            return &ga_config_keys[i];
    return NULL;
}

/* ---- small helpers ------------------------------------------------------ */

int ga_config_key_line(const struct ga_config *c, const char *key)
{
    for (int i = 0; i < c->nkeylines; i++)
        if (strcmp(c->keylines[i].key, key) == 0)
            return c->keylines[i].line;
    return 0;
}

int ga_parse_size(const char *s, int64_t *bytes)
{
    static const struct { const char *unit; int64_t mul; } units[] = {
        { "", 1 }, { "b", 1 }, { "kib", KiB }, { "mib", MiB }, { "gib", GiB }, { "tib", 1024 * GiB },
        { "kb", 1000LL }, { "mb", 1000000LL }, { "gb", 1000000000LL }, { "tb", 1000000000000LL },
    };
    char *end;
    while (isspace((unsigned char)*s))
        s++;
    if (!isdigit((unsigned char)*s))
        return GA_EINVAL;
    double v = strtod(s, &end);
    while (isspace((unsigned char)*end))
        end++;
    size_t ulen = strlen(end);
    while (ulen && isspace((unsigned char)end[ulen - 1]))
        ulen--;
    for (size_t i = 0; i < sizeof units / sizeof units[0]; i++) {
        if (strlen(units[i].unit) != ulen || strncasecmp(units[i].unit, end, ulen) != 0)
            continue;
        double r = v * (double)units[i].mul;
        if (!(r >= 0 && r < 9.0e18))
            return GA_EINVAL;
        *bytes = (int64_t)(r + 0.5);
        return 0;
    }
    return GA_EINVAL;
}

int ga_config_load(struct ga_config *c, const char *path, char *err, size_t errlen)
{
    ga_config_defaults(c);
    int rc = ga_config_parse_file(c, path, err, errlen);
    return rc < 0 ? rc : ga_config_validate(c, err, errlen);
}

/* ---- lookups and reload ------------------------------------------------- */

const struct ga_policy *ga_config_policy(const struct ga_config *c, const char *name)
{
    for (int i = 0; i < c->npolicies; i++)
        if (strcmp(c->policies[i].name, name) == 0)
            return &c->policies[i];
    return ga_policy_builtin(name);
}

const struct ga_policy *ga_config_policy_for(const struct ga_config *c, const char *metric)
{
    int i = ga_rule_match(c->rules, c->nrules, metric);
    return ga_config_policy(c, i >= 0 ? c->rules[i].policy : c->default_policy);
}

int64_t ga_config_int(const struct ga_config *c, const struct ga_config_key *kd)
{
    const char *p = (const char *)c + kd->off;
    if (kd->size == sizeof(int64_t)) {
        int64_t v;
        memcpy(&v, p, sizeof v);
        return v;
    }
    int v;
    memcpy(&v, p, sizeof v);
    return v;
}

/* a: the running config, b: the file just read. */
static int same(const struct ga_config *a, const struct ga_config *b, const struct ga_config_key *kd)
{
    const char *pa = (const char *)a + kd->off, *pb = (const char *)b + kd->off;
    const struct ga_config_sized *sz = kd->auto_ok ? ga_config_sized_of(a, kd->key) : NULL;
    if (sz) {
        /* a holds what auto resolved to: "auto" again is no change, and
         * neither is the number it resolved to; auto where a number was
         * set is one (sizing happens at start only). */
        int64_t vb = ga_config_int(b, kd);
        return vb <= 0 ? sz->is_auto : ga_config_int(a, kd) == vb;
    }
    switch (kd->type) {
    case GA_K_STR:
    case GA_K_SOCK:
        return strcmp(pa, pb) == 0;
    case GA_K_DEVICES:
        return a->gpu.all == b->gpu.all && a->gpu.ndevices == b->gpu.ndevices &&
               !memcmp(a->gpu.devices, b->gpu.devices, (size_t)a->gpu.ndevices * sizeof(int));
    case GA_K_DIRS:
    case GA_K_POLICIES:
    case GA_K_RULES:
        return 0;                       /* all reloadable: always copied */
    default:
        return memcmp(pa, pb, kd->size) == 0;
    }
}

int ga_config_apply_reload(struct ga_config *cur, const struct ga_config *next,
                           char *changed, size_t changedlen)
{
    int n = 0;
    size_t used = 0;
    if (changed && changedlen)
        changed[0] = '\0';
    for (size_t i = 0; i < (size_t)ga_config_nkeys; i++) {
        const struct ga_config_key *kd = &ga_config_keys[i];
        if (!kd->reload) {
            if (same(cur, next, kd))
                continue;
            n++;
            if (changed && used < changedlen) {
                int w = snprintf(changed + used, changedlen - used, "%s%s", used ? " " : "", kd->key);
                used += w > 0 ? (size_t)w : 0;
            }
            continue;
        }
        memcpy((char *)cur + kd->off, (const char *)next + kd->off, kd->size);
        if (kd->type == GA_K_DIRS)
            cur->jobs.ninput_dirs = next->jobs.ninput_dirs;
        else if (kd->type == GA_K_POLICIES)
            cur->npolicies = next->npolicies;
        else if (kd->type == GA_K_RULES)
            cur->nrules = next->nrules;
    }
    cur->nkeylines = next->nkeylines;
    memcpy(cur->keylines, next->keylines, sizeof cur->keylines);
    ga_config_size_reload(cur);
    return n;
}
