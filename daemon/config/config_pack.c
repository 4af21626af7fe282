/* config_pack.c — ga_config_pack(): the effective configuration as one
 * msgpack map mirroring the YAML keys, for the control op config.get.
 *
 *   { "log": {"level": "info"}, "control": {"socket": "...", "mode": "0660"},
 *     ..., "gpu": {"devices": "all" | "none" | [0, 1], ...},
 *     "archive_policies": [{"name", "back_window", "definition":
 *         [{"granularity": 300, "timespan": 2592000, "points": 8640}],
 *       "aggregation_methods": ["mean", "rate:mean"]}],
 *     "archive_policy_rules": [{"metric_pattern", "archive_policy_name"}],
 *     "default_archive_policy": "ceilometer-low" }
 *
 * Sizes are bytes, *_ms / *_s keys integers in their unit, policy durations
 * seconds (an integer when whole, else a float; nil when unbounded).
 * listen.telemetry_secret, listen.token, cluster.token and
 * http.keystone.password read "***" when set; a password
 * inside storage.conninfo is replaced by "***".  A key sized by the machine
 * reads the number it was sized to once the daemon runs (ga_config_size),
 * "auto" before; limits.max_metrics keeps 0 for auto (status' "sizing"
 * has the number). */
#include "daemon/config/config.h"

#include <stdio.h>
#include <string.h>

#include "proto/base/log.h"
#include "proto/ga_err.h"

static int pack_str(msgpack_packer *pk, const char *s)
{
    size_t n = strlen(s);
    return msgpack_pack_str(pk, n) | msgpack_pack_str_body(pk, s, n);
}

/* Copy conninfo into out with any password's value replaced by "***":
 * keyword form (password=secret, password = 'sec ret') and URI form
 * (postgresql://user:secret@host/db?password=secret). */
static void mask_conninfo(const char *in, char *out, size_t outlen)
{
    size_t o = 0;
#define PUT(ch) do { if (o + 1 < outlen) out[o++] = (ch); } while (0)
#define PUTS(s) do { for (const char *_q = (s); *_q; _q++) PUT(*_q); } while (0)
    int uri = !strncmp(in, "postgresql://", 13) || !strncmp(in, "postgres://", 11);
    const char *p = in;
    if (uri) {
        const char *auth = strstr(in, "://") + 3;
        size_t alen = strcspn(auth, "/?");
        const char *at = NULL;
        for (const char *q = auth; q < auth + alen; q++)
            if (*q == '@')
                at = q;
        const char *colon = at ? memchr(auth, ':', (size_t)(at - auth)) : NULL;
        for (; p < (colon ? colon + 1 : in); p++)
            PUT(*p);
        if (colon) {
            PUTS("***");
            p = at;
        }
    }
    while (*p) {
        const char *kw = uri ? "password=" : "password";
        size_t kl = strlen(kw);
        int at_word = p == in || (uri ? (p[-1] == '?' || p[-1] == '&') : p[-1] == ' ' || p[-1] == '\t');
        if (!at_word || strncmp(p, kw, kl) != 0) {
            PUT(*p++);
            continue;
        }
        const char *v = p + kl;
        if (!uri) {
            while (*v == ' ' || *v == '\t')
                v++;
            if (*v != '=') {
                PUT(*p++);
                continue;
            }
            v++;
            while (*v == ' ' || *v == '\t')
                v++;
        }
        for (; p < v; p++)
            PUT(*p);
        PUTS("***");
        if (uri) {
            p += strcspn(p, "&");
        } else if (*p == '\'') {
            for (p++; *p && *p != '\''; p++)
                if (*p == '\\' && p[1])
                    p++;
            if (*p)
                p++;
        } else {
            p += strcspn(p, " \t");
        }
    }
    out[o < outlen ? o : outlen - 1] = '\0';
#undef PUT
#undef PUTS
}

static int pack_seconds(msgpack_packer *pk, int64_t ns)
{
    if (ns == 0)
        return msgpack_pack_nil(pk);
    if (ns % 1000000000 == 0)
        return msgpack_pack_int64(pk, ns / 1000000000);
    return msgpack_pack_double(pk, (double)ns / 1e9);
}

static int pack_policy(msgpack_packer *pk, const struct ga_policy *p)
{
    char mb[GA_METHOD_NAME_MAX];
    int rc = msgpack_pack_map(pk, 4);
    rc |= pack_str(pk, "name") | pack_str(pk, p->name);
    rc |= pack_str(pk, "back_window") | msgpack_pack_int64(pk, p->back_window);
    rc |= pack_str(pk, "definition") | msgpack_pack_array(pk, (size_t)p->ndefs);
    for (int i = 0; i < p->ndefs; i++) {
        const struct ga_policy_def *d = &p->defs[i];
        rc |= msgpack_pack_map(pk, 3);
        rc |= pack_str(pk, "granularity") | pack_seconds(pk, d->granularity_ns);
        rc |= pack_str(pk, "timespan") | pack_seconds(pk, d->timespan_ns);
        rc |= pack_str(pk, "points");
        rc |= d->points ? msgpack_pack_int64(pk, d->points) : msgpack_pack_nil(pk);
    }
    rc |= pack_str(pk, "aggregation_methods") | msgpack_pack_array(pk, (size_t)p->nmethods);
    for (int i = 0; i < p->nmethods; i++)
        rc |= pack_str(pk, ga_method_name(p->methods[i], mb));
    return rc;
}

static int pack_value(msgpack_packer *pk, const struct ga_config *c, const struct ga_config_key *kd)
{
    const char *f = (const char *)c + kd->off;
    char buf[1024];
    int rc = 0, iv;
    int64_t lv;
    switch (kd->type) {
    case GA_K_STR:
    case GA_K_SOCK:
        if (!strcmp(kd->key, "listen.telemetry_secret") || !strcmp(kd->key, "listen.token") ||
            !strcmp(kd->key, "cluster.token") || !strcmp(kd->key, "http.keystone.password"))
            return pack_str(pk, f[0] ? "***" : "");
        if (!strcmp(kd->key, "storage.conninfo")) {
            mask_conninfo(f, buf, sizeof buf);
            return pack_str(pk, buf);
        }
        return pack_str(pk, f);
    case GA_K_MODE:
        memcpy(&iv, f, sizeof iv);
        snprintf(buf, sizeof buf, "%04o", (unsigned)iv);
        return pack_str(pk, buf);
    case GA_K_LEVEL:
        memcpy(&iv, f, sizeof iv);
        return pack_str(pk, ga_log_level_name(iv));
    case GA_K_DEVICES:
        if (c->gpu.all || c->gpu.ndevices == 0)
            return pack_str(pk, c->gpu.all ? "all" : "none");
        rc = msgpack_pack_array(pk, (size_t)c->gpu.ndevices);
        for (int i = 0; i < c->gpu.ndevices; i++)
            rc |= msgpack_pack_int(pk, c->gpu.devices[i]);
        return rc;
    case GA_K_DIRS:
        rc = msgpack_pack_array(pk, (size_t)c->jobs.ninput_dirs);
        for (int i = 0; i < c->jobs.ninput_dirs; i++)
            rc |= pack_str(pk, c->jobs.input_dirs[i]);
        return rc;
    case GA_K_POLICIES:
        rc = msgpack_pack_array(pk, (size_t)c->npolicies);
        for (int i = 0; i < c->npolicies; i++)
            rc |= pack_policy(pk, &c->policies[i]);
        return rc;
    case GA_K_RULES:
        rc = msgpack_pack_array(pk, (size_t)c->nrules);
        for (int i = 0; i < c->nrules; i++) {
            rc |= msgpack_pack_map(pk, 2);
            rc |= pack_str(pk, "metric_pattern") | pack_str(pk, c->rules[i].pattern);
            rc |= pack_str(pk, "archive_policy_name") | pack_str(pk, c->rules[i].policy);
        }
        return rc;
    default:
        if (kd->size == sizeof(int64_t)) {
            memcpy(&lv, f, sizeof lv);
            if (kd->auto_ok && lv == GA_CONFIG_AUTO)
                return pack_str(pk, "auto");
            return msgpack_pack_int64(pk, lv);
        }
        memcpy(&iv, f, sizeof iv);
        if (kd->auto_ok && iv == GA_CONFIG_AUTO)
            return pack_str(pk, "auto");
        return msgpack_pack_int(pk, iv);
    }
}

/* Length of the section part of a dotted key ("listen" of "listen.tcp"),
 * 0 for a top-level key. */
static size_t section_len(const char *key)
{
    const char *dot = strchr(key, '.');
    return dot ? (size_t)(dot - key) : 0;
}

int ga_config_pack(const struct ga_config *c, msgpack_packer *pk)
{
    int rc = 0, ntop = 0;
    /* The table lists each section's keys together, so a section starts
     * wherever the section part changes. */
    for (int i = 0; i < ga_config_nkeys; i++) {
        const char *k = ga_config_keys[i].key, *prev = i ? ga_config_keys[i - 1].key : "";
        size_t sl = section_len(k);
        if (!sl || section_len(prev) != sl || strncmp(prev, k, sl) != 0)
            ntop++;
    }
    rc |= msgpack_pack_map(pk, (size_t)ntop);
    for (int i = 0; i < ga_config_nkeys;) {
        const struct ga_config_key *kd = &ga_config_keys[i];
        size_t sl = section_len(kd->key);
        if (!sl) {
            rc |= pack_str(pk, kd->key) | pack_value(pk, c, kd);
            i++;
            continue;
        }
        int n = 0;
        while (i + n < ga_config_nkeys && section_len(ga_config_keys[i + n].key) == sl &&
               !strncmp(ga_config_keys[i + n].key, kd->key, sl))
            n++;
        rc |= msgpack_pack_str(pk, sl) | msgpack_pack_str_body(pk, kd->key, sl);
        rc |= msgpack_pack_map(pk, (size_t)n);
        for (int j = i; j < i + n; j++) {
            const char *sub = ga_config_keys[j].key + sl + 1;
            rc |= pack_str(pk, sub) | pack_value(pk, c, &ga_config_keys[j]);
        }
        i += n;
    }
    return rc ? GA_ENOMEM : 0;
}
