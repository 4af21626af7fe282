/* config_validate.c — ga_config_validate(): every range and cross-field rule
 * of gpuaggd's configuration, one clearly worded message per rule, pointing
 * at the line of the offending key when the file set it.  Also
 * ga_parse_hostport().  The rules are documented in etc/gpuaggd.yaml. */
#include "daemon/config/config.h"

#include <ctype.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "proto/base/log.h"
#include "proto/ga_err.h"

#define MiB (1024LL * 1024)
#define GiB (1024 * MiB)
#define TiB (1024 * GiB)

/* "FILE:LINE: KEY: reason".  The line is the key's, else its nearest
 * parent's ("storage" for "storage.pool_size"); none if the file never
 * mentioned either (the value is a default). */
static int verr(const struct ga_config *c, char *err, size_t errlen, const char *key, const char *fmt, ...)
    __attribute__((format(printf, 5, 6)));
static int verr(const struct ga_config *c, char *err, size_t errlen, const char *key, const char *fmt, ...)
{
    char msg[512], k[128];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    snprintf(k, sizeof k, "%s", key);
    int line = 0;
    for (;;) {
        if ((line = ga_config_key_line(c, k)) > 0)
            break;
        char *cut = strrchr(k, '.'), *br = strrchr(k, '[');
        if (br > cut)
            cut = br;
        if (!cut)
            break;
        *cut = '\0';
    }
    const char *name = c->path[0] ? c->path : "(defaults)";
    if (err && errlen) {
        if (line > 0)
            snprintf(err, errlen, "%s:%d: %s: %s", name, line, key, msg);
        else
            snprintf(err, errlen, "%s: %s: %s", name, key, msg);
    }
    return GA_ECONFIG;
}

/* ---- host:port ---------------------------------------------------------- */

/* Split "host:port" or "[v6]:port"; the port may be out of range. */
static int split_hostport(const char *s, char *host, size_t hostlen, long *port, const char **why)
{
    const char *hs = s, *colon;
    size_t hl;
    if (s[0] == '[') {
        const char *rb = strchr(s, ']');
        if (!rb || rb[1] != ':') {
            *why = "expected [address]:port";
            return -1;
        }
        hs = s + 1;
        hl = (size_t)(rb - hs);
        colon = rb + 1;
    } else {
        colon = strrchr(s, ':');
        if (!colon) {
            *why = "expected host:port";
            return -1;
        }
        hl = (size_t)(colon - s);
        if (memchr(s, ':', hl)) {
            *why = "write IPv6 addresses as [address]:port";
            return -1;
        }
    }
    if (hl == 0) {
        *why = "host is empty (use 0.0.0.0 or [::] for every address)";
        return -1;
    }
    if (hl >= hostlen) {
        *why = "host is too long";
        return -1;
    }
    const char *ps = colon + 1;
    size_t pl = strlen(ps);
    if (pl == 0 || pl > 9 || strspn(ps, "0123456789") != pl) {
        *why = "port is not a number";
        return -1;
    }
    memcpy(host, hs, hl);
    host[hl] = '\0';
    *port = strtol(ps, NULL, 10);
    return 0;
}

int ga_parse_hostport(const char *s, char *host, size_t hostlen, int *port)
{
    const char *why;
    long p;
    if (split_hostport(s, host, hostlen, &p, &why) < 0 || p > 65535)
        return GA_EINVAL;
    *port = (int)p;
    return 0;
}

/* ---- ranges ------------------------------------------------------------- */

struct range {
    const char *key;
    int64_t min, max;
    const char *unit;
};

/* Numeric keys: [min, max].  Cross-field rules are in the section checks. */
static const struct range ranges[] = {
    { "storage.flush_interval_ms", 10, 600000, "milliseconds" },
    { "storage.flush_rows", 1, 10000000, "rows" },
    { "storage.queue_max_rows", 0, 1000000000, "rows" },
    { "storage.open_buckets_max", 0, 1000000000, "open buckets" },
    { "storage.window_txn_bytes", 0, 1 << 30, "bytes" },
    { "storage.coarse_delay_ms", 0, 600000, "milliseconds" },
    { "storage.window_snapshot_s", 10, 86400, "seconds" },
    { "storage.writers", 1, 64, "connections" },
    { "storage.pool_size", 1, 64, "connections" },
    { "storage.retry_initial_ms", 1, 3600000, "milliseconds" },
    { "storage.retry_max_ms", 1, 3600000, "milliseconds" },
    { "storage.stop_timeout_ms", 1000, 600000, "milliseconds" },
    { "journal.fsync_interval_ms", 1, 60000, "milliseconds" },
    { "journal.segment_bytes", 1 * MiB, 4 * GiB, "bytes" },
    { "journal.max_bytes", 2 * MiB, 1024 * TiB, "bytes" },
    { "cluster.partitions", 64, 64, "partitions (fixed: the on-disk mapping)" },
    { "cluster.replicas", 1, 5, "replicas" },
    { "cluster.heartbeat_ms", 50, 60000, "milliseconds" },
    { "cluster.member_timeout_ms", 200, 600000, "milliseconds" },
    { "cluster.publish_timeout_ms", 100, 600000, "milliseconds" },
    { "cluster.max_pending_bytes", 1 * MiB, 64 * GiB, "bytes" },
    { "gpu.streams", 2, 64, "streams" },
    { "gpu.staging_bytes", 1 * MiB, 64 * GiB, "bytes" },
    { "gpu.cpu_threads", 0, 4096, "threads" },
    { "engine.workers", 0, 64, "partition workers, 0 = auto" },
    { "limits.max_connections", 1, 1000000, "connections" },
    { "limits.max_connections_per_peer", 1, 1000000, "connections" },
    { "limits.max_metrics", 0, 1000000000, "metrics, 0 = auto" },
    { "limits.max_frame_bytes", 1024, 4 * GiB, "bytes" },
    { "limits.conn_buffer_bytes", 1024, 64 * GiB, "bytes" },
    { "limits.memory_budget_bytes", 1 * MiB, 64 * TiB, "bytes" },
    { "limits.idle_timeout_s", 1, 7 * 86400, "seconds" },
    { "limits.slow_client_timeout_s", 1, 86400, "seconds" },
    { "limits.queue_batches", 1, 1000000, "batches" },
    { "limits.max_future_s", 0, 3650 * 86400, "seconds, 0 = no bound but 2200-01-01" },
    { "jobs.max_queued", 1, 1000000, "jobs" },
    { "jobs.workers", 1, 256, "workers" },
    { "jobs.result_ttl_s", 1, 30 * 86400, "seconds" },
    { "jobs.max_job_bytes", 1 * MiB, 1024 * GiB, "bytes" },
    { "jobs.results_max_bytes", 64 * MiB, 1024 * GiB, "bytes" },
    { "http.max_connections", 1, 65536, "connections" },
    { "http.timeout_s", 1, 86400, "seconds" },
    { "http.header_timeout_s", 1, 3600, "seconds" },
    { "http.max_connections_per_peer", 1, 65536, "connections" },
    { "http.max_body_bytes", 1024, 1 * GiB, "bytes" },
    { "http.pool_size", 1, 64, "connections" },
    { "http.max_points", 1, 100000000, "points" },
    { "http.keystone.token_cache_s", 0, 86400, "seconds, 0 = validate every request" },
    { "http.keystone.cache_entries", 16, 1000000, "tokens" },
    { "http.keystone.timeout_ms", 100, 60000, "milliseconds" },
    { "http.keystone.max_validations", 1, 1024, "requests" },
};

/* Range-check every numeric key of one section ("storage."). */
static int check_ranges(const struct ga_config *c, const char *section, char *err, size_t errlen)
{
    size_t sl = strlen(section);
    for (size_t i = 0; i < sizeof ranges / sizeof ranges[0]; i++) {
        const struct range *r = &ranges[i];
        if (strncmp(r->key, section, sl) != 0)
            continue;
        const struct ga_config_key *kd = ga_config_find_key(r->key);
        int64_t v = ga_config_int(c, kd);
        if (kd->auto_ok && v == GA_CONFIG_AUTO)
            continue;                           /* sized at start */
        if (v < r->min || v > r->max)
            return verr(c, err, errlen, r->key, "%lld out of range %lld..%lld (%s)%s",
                        (long long)v, (long long)r->min, (long long)r->max, r->unit,
                        kd->auto_ok ? " or auto" : "");
    }
    return 0;
}

/* ---- sections ----------------------------------------------------------- */

static int check_abs(const struct ga_config *c, const char *key, const char *path, int required,
                     char *err, size_t errlen)
{
    if (!path[0])
        return required ? verr(c, err, errlen, key, "must be set") : 0;
    if (path[0] != '/')
        return verr(c, err, errlen, key, "must be an absolute path, got \"%s\"", path);
    return 0;
}

static int check_sock(const struct ga_config *c, const char *key, const char *path, int required,
                      char *err, size_t errlen)
{
    int rc = check_abs(c, key, path, required, err, errlen);
    if (rc == 0 && strnlen(path, GA_SUN_PATH_MAX) >= GA_SUN_PATH_MAX)
        return verr(c, err, errlen, key, "socket path longer than sun_path allows (%d max)",
                    GA_SUN_PATH_MAX - 1);
    return rc;
}

static int check_inet(const struct ga_config *c, const char *key, const char *s, char *err, size_t errlen)
{
    char host[256];
    const char *why;
    long port;
    if (!s[0])
        return 0;                               /* disabled */
    if (split_hostport(s, host, sizeof host, &port, &why) < 0)
        return verr(c, err, errlen, key, "%s, got \"%s\"", why, s);
    if (port > 65535)
        return verr(c, err, errlen, key, "port %ld out of range 0..65535", port);
    return 0;
}

static int check_url(const struct ga_config *c, const char *key, const char *url, char *err,
                     size_t errlen)
{
    size_t scheme = !strncmp(url, "http://", 7) ? 7 : !strncmp(url, "https://", 8) ? 8 : 0;
    if (!scheme || !url[scheme] || url[scheme] == '/')
        return verr(c, err, errlen, key, "\"%s\" is not an http:// or https:// URL with a host",
                    url);
    for (const char *q = url; *q; q++)
        if ((unsigned char)*q <= ' ' || *q == '"' || *q == 0x7f)
            return verr(c, err, errlen, key, "\"%s\": spaces, quotes and control characters "
                        "are not allowed in a URL", url);
    return 0;
}

/* http.keystone: needed only with http.auth keystone; then the service
 * user's credentials and Keystone's URL must all be there. */
static int check_keystone(const struct ga_config *c, char *err, size_t errlen)
{
    const struct ga_keystone_config *k = &c->http.keystone;
    int rc;
    if (strcmp(c->http.auth, "keystone") != 0)
        return 0;
    if (!k->auth_url[0])
        return verr(c, err, errlen, "http.keystone.auth_url", "must be set with http.auth "
                    "keystone (Keystone's URL, e.g. http://keystone:5000)");
    if ((rc = check_url(c, "http.keystone.auth_url", k->auth_url, err, errlen)) < 0)
        return rc;
    if (k->www_authenticate_uri[0] &&
        (rc = check_url(c, "http.keystone.www_authenticate_uri", k->www_authenticate_uri, err,
                        errlen)) < 0)
        return rc;
    const struct { const char *key, *val; } need[] = {
        { "http.keystone.username", k->username },
        { "http.keystone.project_name", k->project_name },
        { "http.keystone.user_domain_name", k->user_domain_name },
        { "http.keystone.project_domain_name", k->project_domain_name },
    };
    for (size_t i = 0; i < sizeof need / sizeof need[0]; i++)
        if (!need[i].val[0])
            return verr(c, err, errlen, need[i].key, "must be set with http.auth keystone (the "
                        "service user that validates tokens)");
    if (!k->password[0] && !k->password_file[0])
        return verr(c, err, errlen, "http.keystone.password", "set password or password_file "
                    "with http.auth keystone");
    if (k->password[0] && k->password_file[0])
        return verr(c, err, errlen, "http.keystone.password_file", "set password or "
                    "password_file, not both");
    if (k->password_file[0])
        return check_abs(c, "http.keystone.password_file", k->password_file, 1, err, errlen);
    return 0;
}

static int check_daemon(const struct ga_config *c, char *err, size_t errlen)
{
    int rc;
    if (c->log.level < GA_LOG_DEBUG || c->log.level > GA_LOG_ERROR)
        return verr(c, err, errlen, "log.level", "unknown level %d", c->log.level);
    if ((rc = check_sock(c, "control.socket", c->control.socket, 1, err, errlen)) < 0)
        return rc;
    if (c->control.mode < 0 || c->control.mode > 0777)
        return verr(c, err, errlen, "control.mode", "mode 0%o out of range 0..0777", (unsigned)c->control.mode);
    if ((rc = check_sock(c, "listen.unix", c->listen.unix_path, 0, err, errlen)) < 0)
        return rc;
    if (c->listen.unix_path[0] && strcmp(c->listen.unix_path, c->control.socket) == 0)
        return verr(c, err, errlen, "listen.unix", "same path as control.socket");
    if ((rc = check_inet(c, "listen.tcp", c->listen.tcp, err, errlen)) < 0 ||
        (rc = check_inet(c, "listen.udp", c->listen.udp, err, errlen)) < 0 ||
        (rc = check_inet(c, "listen.ceilometer_tcp", c->listen.ceilometer_tcp, err, errlen)) < 0 ||
        (rc = check_inet(c, "listen.http", c->listen.http, err, errlen)) < 0)
        return rc;
    if (strcmp(c->http.auth, "basic") != 0 && strcmp(c->http.auth, "remoteuser") != 0 &&
        strcmp(c->http.auth, "noauth") != 0 && strcmp(c->http.auth, "keystone") != 0)
        return verr(c, err, errlen, "http.auth", "unknown mode \"%s\" (basic, remoteuser, noauth "
                    "or keystone)", c->http.auth);
    if ((rc = check_ranges(c, "http.", err, errlen)) < 0 ||
        (rc = check_keystone(c, err, errlen)) < 0)
        return rc;
    if (!c->listen.unix_path[0] && !c->listen.tcp[0] && !c->listen.udp[0] && !c->listen.ceilometer_tcp[0])
        return verr(c, err, errlen, "listen", "no ingest listener enabled: set at least one of unix, tcp, "
                    "udp, ceilometer_tcp");
    if (!c->storage.conninfo[0])
        return verr(c, err, errlen, "storage.conninfo", "must not be empty");
    if ((rc = check_ranges(c, "storage.", err, errlen)) < 0)
        return rc;
    if (c->storage.retry_initial_ms > c->storage.retry_max_ms)
        return verr(c, err, errlen, "storage.retry_initial_ms", "%d is greater than retry_max_ms (%d)",
                    c->storage.retry_initial_ms, c->storage.retry_max_ms);
    if ((rc = check_abs(c, "journal.dir", c->journal.dir, 1, err, errlen)) < 0 ||
        (rc = check_ranges(c, "journal.", err, errlen)) < 0)
        return rc;
    if (c->journal.max_bytes != GA_CONFIG_AUTO && c->journal.max_bytes < 2 * c->journal.segment_bytes)
        return verr(c, err, errlen, "journal.max_bytes", "%lld is less than twice segment_bytes (%lld)",
                    (long long)c->journal.max_bytes, (long long)c->journal.segment_bytes);
    return 0;
}

/* cluster: NATS URLs, stream name, timing. */
static int check_cluster(const struct ga_config *c, char *err, size_t errlen)
{
    int rc;
    if (!c->cluster.nats[0])
        return 0;
    if ((rc = check_ranges(c, "cluster.", err, errlen)) < 0)
        return rc;
    char urls[sizeof c->cluster.nats];
    snprintf(urls, sizeof urls, "%s", c->cluster.nats);
    for (char *save = NULL, *u = strtok_r(urls, ", ", &save); u; u = strtok_r(NULL, ", ", &save))
        if (strncmp(u, "nats://", 7) != 0 && strncmp(u, "tls://", 6) != 0)
            return verr(c, err, errlen, "cluster.nats", "\"%s\" is not a NATS URL "
                        "(nats://host:port or tls://host:port)", u);
    if (!c->cluster.stream[0])
        return verr(c, err, errlen, "cluster.stream", "must not be empty");
    for (const char *s = c->cluster.stream; *s; s++)
        if (!(isalnum((unsigned char)*s) || *s == '_' || *s == '-'))
            return verr(c, err, errlen, "cluster.stream", "\"%s\": only letters, digits, '_' "
                        "and '-' (it is also the subject prefix)", c->cluster.stream);
    if (c->cluster.member_timeout_ms < 2 * c->cluster.heartbeat_ms)
        return verr(c, err, errlen, "cluster.member_timeout_ms", "%d is less than twice "
                    "heartbeat_ms (%d)", c->cluster.member_timeout_ms, c->cluster.heartbeat_ms);
    if (c->cluster.credentials[0] && (rc = check_abs(c, "cluster.credentials",
                                                     c->cluster.credentials, 0, err, errlen)) < 0)
        return rc;
    return 0;
}

static int check_resources(const struct ga_config *c, char *err, size_t errlen)
{
    char k[64];
    int rc;
    if ((rc = check_ranges(c, "gpu.", err, errlen)) < 0)
        return rc;
    for (int i = 0; !c->gpu.all && i < c->gpu.ndevices; i++) {
        snprintf(k, sizeof k, "gpu.devices[%d]", i);
        if (c->gpu.devices[i] < 0)
            return verr(c, err, errlen, k, "device id %d is negative", c->gpu.devices[i]);
        for (int j = 0; j < i; j++)
            if (c->gpu.devices[j] == c->gpu.devices[i])
                return verr(c, err, errlen, k, "device %d is listed twice", c->gpu.devices[i]);
    }
    if ((rc = check_ranges(c, "engine.", err, errlen)) < 0 ||
        (rc = check_ranges(c, "limits.", err, errlen)) < 0)
        return rc;
    if (c->limits.max_frame_bytes > c->limits.conn_buffer_bytes)
        return verr(c, err, errlen, "limits.max_frame_bytes", "%lld is larger than conn_buffer_bytes (%lld)",
                    (long long)c->limits.max_frame_bytes, (long long)c->limits.conn_buffer_bytes);
    if (c->limits.conn_buffer_bytes > c->limits.memory_budget_bytes)
        return verr(c, err, errlen, "limits.conn_buffer_bytes",
                    "%lld is larger than memory_budget_bytes (%lld)",
                    (long long)c->limits.conn_buffer_bytes, (long long)c->limits.memory_budget_bytes);
    if ((rc = check_ranges(c, "jobs.", err, errlen)) < 0)
        return rc;
    for (int i = 0; i < c->jobs.ninput_dirs; i++) {
        snprintf(k, sizeof k, "jobs.input_dirs[%d]", i);
        if ((rc = check_abs(c, k, c->jobs.input_dirs[i], 1, err, errlen)) < 0)
            return rc;
    }
    return 0;
}

static int check_policies(const struct ga_config *c, char *err, size_t errlen)
{
    char k[128];
    for (int i = 0; i < c->npolicies; i++) {
        const struct ga_policy *p = &c->policies[i];
        snprintf(k, sizeof k, "archive_policies[%d].name", i);
        if (!p->name[0])
            return verr(c, err, errlen, k, "must not be empty");
        for (int j = 0; j < i; j++)
            if (strcmp(c->policies[j].name, p->name) == 0)
                return verr(c, err, errlen, k, "policy \"%s\" is defined twice (also archive_policies[%d])",
                            p->name, j);
        snprintf(k, sizeof k, "archive_policies[%d].back_window", i);
        if (p->back_window < 0)
            return verr(c, err, errlen, k, "%lld is negative", (long long)p->back_window);
        const char *why;
        if (ga_policy_check_range(p, &why) < 0)
            return verr(c, err, errlen, k, "policy \"%s\": %s", p->name, why);
        snprintf(k, sizeof k, "archive_policies[%d].definition", i);
        if (p->ndefs < 1)
            return verr(c, err, errlen, k, "policy \"%s\" has no definition", p->name);
        snprintf(k, sizeof k, "archive_policies[%d].aggregation_methods", i);
        if (p->nmethods < 1)
            return verr(c, err, errlen, k, "policy \"%s\" has no aggregation method left", p->name);
    }
    for (int i = 0; i < c->nrules; i++) {
        const struct ga_rule *r = &c->rules[i];
        snprintf(k, sizeof k, "archive_policy_rules[%d].metric_pattern", i);
        if (!r->pattern[0])
            return verr(c, err, errlen, k, "must not be empty");
        snprintf(k, sizeof k, "archive_policy_rules[%d].archive_policy_name", i);
        if (!ga_config_policy(c, r->policy))
            return verr(c, err, errlen, k, "no archive policy named \"%s\" (neither in archive_policies "
                        "nor built in)", r->policy);
    }
    if (!c->default_policy[0])
        return verr(c, err, errlen, "default_archive_policy", "must be set");
    if (!ga_config_policy(c, c->default_policy))
        return verr(c, err, errlen, "default_archive_policy", "no archive policy named \"%s\" (neither in "
                    "archive_policies nor built in)", c->default_policy);
    return 0;
}

int ga_config_validate(const struct ga_config *c, char *err, size_t errlen)
{
    int rc;
    if ((rc = check_daemon(c, err, errlen)) < 0 || (rc = check_cluster(c, err, errlen)) < 0 ||
        (rc = check_resources(c, err, errlen)) < 0 ||
        (rc = check_policies(c, err, errlen)) < 0)
        return rc;
    return 0;
}
