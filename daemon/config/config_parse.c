/* config_parse.c — the libyaml parser for gpuaggd's configuration.
 *
 * Document API: the whole file is loaded into a node tree, then walked
 * against the key table (ga_config_keys).  Unknown keys, duplicate keys and
 * values of the wrong type are errors naming FILE:LINE and the dotted key;
 * the line of every key seen is kept in c->keylines for the validator. */
#include "daemon/config/config.h"

#include <ctype.h>
#include <errno.h>
#include <limits.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <yaml.h>

#include "proto/base/log.h"
#include "proto/ga_err.h"
#include "proto/ts_parse.h"

static int is_section(const char *name)
{
    size_t len = strlen(name);
    for (int i = 0; i < ga_config_nkeys; i++)
        if (strncmp(ga_config_keys[i].key, name, len) == 0 && ga_config_keys[i].key[len] == '.')
            return 1;
    return 0;
}

/* ---- key lines ---------------------------------------------------------- */

static void keyline(struct ga_config *c, const char *key, const yaml_node_t *n)
{
    if (strlen(key) >= sizeof c->keylines[0].key || c->nkeylines >= GA_CONFIG_MAX_KEYLINES)
        return;
    int i = c->nkeylines++;
    snprintf(c->keylines[i].key, sizeof c->keylines[i].key, "%s", key);
    c->keylines[i].line = (int)n->start_mark.line + 1;
}

/* ---- scalars ------------------------------------------------------------ */

struct pctx {
    struct ga_config *c;
    yaml_document_t *doc;
    const char *name;
    char *err;
    size_t errlen;
};

static int perr(struct pctx *p, const yaml_node_t *n, const char *key, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));
static int perr(struct pctx *p, const yaml_node_t *n, const char *key, const char *fmt, ...)
{
    char msg[512];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    if (p->err && p->errlen)
        snprintf(p->err, p->errlen, "%s:%lu: %s: %s", p->name,
                 n ? (unsigned long)n->start_mark.line + 1 : 1UL, key, msg);
    return GA_ECONFIG;
}

static yaml_node_t *node_at(struct pctx *p, int idx)
{
    return yaml_document_get_node(p->doc, idx);
}

static const char *scalar(const yaml_node_t *n)
{
    return n->type == YAML_SCALAR_NODE ? (const char *)n->data.scalar.value : NULL;
}

/* A plain "", "~" or "null": YAML's null. */
static int is_null(const yaml_node_t *n)
{
    if (n->type != YAML_SCALAR_NODE || n->data.scalar.style != YAML_PLAIN_SCALAR_STYLE)
        return 0;
    const char *v = scalar(n);
    return !*v || !strcmp(v, "~") || !strcmp(v, "null") || !strcmp(v, "Null") || !strcmp(v, "NULL");
}

/* What a node is, for "expected X, got Y". */
static const char *got(const yaml_node_t *n, char *buf, size_t len)
{
    if (n->type == YAML_MAPPING_NODE)
        return "a mapping";
    if (n->type == YAML_SEQUENCE_NODE)
        return "a list";
    if (is_null(n))
        return "nothing";
    snprintf(buf, len, "\"%.60s\"", scalar(n));
    return buf;
}

static int parse_i64(const char *s, int64_t *v)
{
    char *end;
    if (!*s || isspace((unsigned char)*s))
        return -1;
    errno = 0;
    long long x = strtoll(s, &end, 10);
    if (errno || *end)
        return -1;
    *v = x;
    return 0;
}

/* An integer in the key's unit, or a duration with a unit ("5s"). */
static int parse_time(const char *s, int64_t unit_ns, int64_t *v)
{
    size_t len = strlen(s);
    if (parse_i64(s, v) == 0)
        return 0;
    int64_t ns;
    if (!len || !isalpha((unsigned char)s[len - 1]) || ts_parse_duration(s, &ns) < 0 || ns % unit_ns)
        return -1;
    *v = ns / unit_ns;
    return 0;
}

static int set_scalar(struct pctx *p, const struct ga_config_key *kd, const char *key, const yaml_node_t *n)
{
    char *dst = (char *)p->c + kd->off;
    char gbuf[80];
    const char *s = scalar(n);
    int64_t v = 0;

    if (kd->type == GA_K_STR || kd->type == GA_K_SOCK) {
        if (!s)
            return perr(p, n, key, "expected a string, got %s", got(n, gbuf, sizeof gbuf));
        if (is_null(n))
            s = "";
        size_t len = n->data.scalar.length;
        if (strlen(s) != len)
            return perr(p, n, key, "contains a NUL byte");
        if (kd->type == GA_K_SOCK && len >= kd->size)
            return perr(p, n, key, "socket path is %zu bytes, longer than sun_path allows (%zu max)",
                        len, kd->size - 1);
        if (len >= kd->size)
            return perr(p, n, key, "too long (%zu bytes, %zu max)", len, kd->size - 1);
        memcpy(dst, s, len + 1);
        return 0;
    }
    if (!s || is_null(n)) {
        static const char *const what[] = {
            [GA_K_INT] = "an integer", [GA_K_MS] = "milliseconds", [GA_K_SEC] = "seconds",
            [GA_K_SIZE] = "a size", [GA_K_MODE] = "an octal mode", [GA_K_LEVEL] = "a log level",
        };
        return perr(p, n, key, "expected %s%s, got %s", kd->auto_ok ? "auto or " : "", what[kd->type],
                    got(n, gbuf, sizeof gbuf));
    }
    if (kd->auto_ok && strcmp(s, "auto") == 0) {
        v = GA_CONFIG_AUTO;             /* sized at start: ga_config_size() */
        goto store;
    }
    switch (kd->type) {
    case GA_K_LEVEL:
        v = ga_log_parse_level(s);
        if (v < 0)
            return perr(p, n, key, "expected debug, info, warn or error, got \"%s\"", s);
        break;
    case GA_K_MODE:
        if (!*s || strlen(s) > 6 || strspn(s, "01234567") != strlen(s))
            return perr(p, n, key, "expected an octal mode like 0660, got \"%s\"", s);
        v = strtol(s, NULL, 8);
        break;
    case GA_K_SIZE:
        if (parse_i64(s, &v) < 0 && ga_parse_size(s, &v) < 0)
            return perr(p, n, key, "bad size \"%s\" (expected %sbytes or e.g. 64KiB, 16MiB, 1GiB, 10MB)", s,
                        kd->auto_ok ? "auto, " : "");
        break;
    case GA_K_MS:
    case GA_K_SEC:
        if (parse_time(s, kd->type == GA_K_MS ? 1000000 : 1000000000, &v) < 0)
            return perr(p, n, key, "bad duration \"%s\" (expected whole %s or e.g. \"%s\")", s,
                        kd->type == GA_K_MS ? "milliseconds" : "seconds",
                        kd->type == GA_K_MS ? "250ms" : "5min");
        break;
    default:
        if (parse_i64(s, &v) < 0)
            return perr(p, n, key, "expected %san integer, got \"%s\"", kd->auto_ok ? "auto or " : "", s);
        break;
    }
    if (kd->auto_ok && v < 0)
        return perr(p, n, key, "expected auto or %s, got \"%s\"",
                    kd->type == GA_K_SIZE ? "a size" : "a number >= 0", s);
store:
    if (kd->size == sizeof(int64_t)) {
        memcpy(dst, &v, sizeof v);
        return 0;
    }
    if (v < INT_MIN || v > INT_MAX)
        return perr(p, n, key, "%s is out of range for an integer", s);
    int iv = (int)v;
    memcpy(dst, &iv, sizeof iv);
    return 0;
}

/* ---- mappings and lists ------------------------------------------------- */

/* Keys of a mapping must be scalars and unique. */
static int map_check(struct pctx *p, const yaml_node_t *map, const char *prefix)
{
    char fk[128];
    for (yaml_node_pair_t *a = map->data.mapping.pairs.start; a < map->data.mapping.pairs.top; a++) {
        yaml_node_t *ka = node_at(p, a->key);
        if (!scalar(ka))
            return perr(p, ka, *prefix ? prefix : "(top level)", "mapping keys must be plain strings");
        for (yaml_node_pair_t *b = map->data.mapping.pairs.start; b < a; b++) {
            yaml_node_t *kb = node_at(p, b->key);
            if (!scalar(kb) || strcmp(scalar(ka), scalar(kb)) != 0)
                continue;
            snprintf(fk, sizeof fk, "%s%s%s", prefix, *prefix ? "." : "", scalar(ka));
            return perr(p, ka, fk, "duplicate key (first at line %lu)",
                        (unsigned long)kb->start_mark.line + 1);
        }
    }
    return 0;
}

#define FOR_PAIRS(pr, map) \
    for (yaml_node_pair_t *pr = (map)->data.mapping.pairs.start; pr < (map)->data.mapping.pairs.top; pr++)
#define FOR_ITEMS(it, seq) \
    for (yaml_node_item_t *it = (seq)->data.sequence.items.start; it < (seq)->data.sequence.items.top; it++)

static int set_devices(struct pctx *p, const char *key, const yaml_node_t *n)
{
    struct ga_config *c = p->c;
    char gbuf[80], ik[64];
    const char *s = scalar(n);
    if (s && (!strcmp(s, "all") || !strcmp(s, "none"))) {
        c->gpu.all = !strcmp(s, "all");
        c->gpu.ndevices = 0;
        return 0;
    }
    if (n->type != YAML_SEQUENCE_NODE)
        return perr(p, n, key, "expected all, none or a list of device ids, got %s",
                    got(n, gbuf, sizeof gbuf));
    c->gpu.all = 0;
    c->gpu.ndevices = 0;
    FOR_ITEMS(it, n) {
        yaml_node_t *d = node_at(p, *it);
        int64_t v;
        snprintf(ik, sizeof ik, "%s[%d]", key, c->gpu.ndevices);
        if (!scalar(d) || parse_i64(scalar(d), &v) < 0 || v < INT_MIN || v > INT_MAX)
            return perr(p, d, ik, "expected a device id (an integer), got %s", got(d, gbuf, sizeof gbuf));
        if (c->gpu.ndevices >= GA_CONFIG_MAX_GPUS)
            return perr(p, d, key, "too many devices (%d max)", GA_CONFIG_MAX_GPUS);
        keyline(c, ik, d);
        c->gpu.devices[c->gpu.ndevices++] = (int)v;
    }
    return 0;
}

static int set_dirs(struct pctx *p, const char *key, const yaml_node_t *n)
{
    struct ga_config *c = p->c;
    char gbuf[80], ik[64];
    c->jobs.ninput_dirs = 0;
    if (is_null(n))
        return 0;
    if (n->type != YAML_SEQUENCE_NODE)
        return perr(p, n, key, "expected a list of directories, got %s", got(n, gbuf, sizeof gbuf));
    int max = (int)(sizeof c->jobs.input_dirs / sizeof c->jobs.input_dirs[0]);
    FOR_ITEMS(it, n) {
        yaml_node_t *d = node_at(p, *it);
        snprintf(ik, sizeof ik, "%s[%d]", key, c->jobs.ninput_dirs);
        if (!scalar(d) || is_null(d))
            return perr(p, d, ik, "expected a directory path, got %s", got(d, gbuf, sizeof gbuf));
        if (c->jobs.ninput_dirs >= max)
            return perr(p, d, key, "too many directories (%d max)", max);
        if (d->data.scalar.length >= GA_PATH_MAX)
            return perr(p, d, ik, "path too long (%d max)", GA_PATH_MAX - 1);
        keyline(c, ik, d);
        snprintf(c->jobs.input_dirs[c->jobs.ninput_dirs++], GA_PATH_MAX, "%s", scalar(d));
    }
    return 0;
}

/* A string field of a list item (policy name, rule pattern). */
static int item_str(struct pctx *p, const yaml_node_t *n, const char *key, char *dst, size_t size)
{
    char gbuf[80];
    if (!scalar(n) || is_null(n))
        return perr(p, n, key, "expected a string, got %s", got(n, gbuf, sizeof gbuf));
    if (n->data.scalar.length >= size)
        return perr(p, n, key, "too long (%zu bytes, %zu max)", n->data.scalar.length, size - 1);
    snprintf(dst, size, "%s", scalar(n));
    return 0;
}

/* ---- archive policies and rules ----------------------------------------- */

/* Optional duration field of a definition: 0 when absent. */
static int def_duration(struct pctx *p, const yaml_node_t *n, const char *key, int64_t *ns)
{
    char gbuf[80];
    if (!scalar(n) || is_null(n) || ts_parse_duration(scalar(n), ns) < 0)
        return perr(p, n, key, "bad duration %s (expected seconds or e.g. \"5 minutes\", \"30 days\")",
                    got(n, gbuf, sizeof gbuf));
    if (*ns <= 0)
        return perr(p, n, key, "must be positive");
    return 0;
}

static int parse_def(struct pctx *p, const yaml_node_t *n, const char *dk, struct ga_policy *pol)
{
    char gbuf[80], fk[128];
    int64_t g = 0, ts = 0, pts = 0;
    const char *why = NULL;
    int rc;
    if (n->type != YAML_MAPPING_NODE)
        return perr(p, n, dk, "expected a mapping of granularity, timespan and/or points, got %s",
                    got(n, gbuf, sizeof gbuf));
    if ((rc = map_check(p, n, dk)) < 0)
        return rc;
    FOR_PAIRS(pr, n) {
        yaml_node_t *k = node_at(p, pr->key), *v = node_at(p, pr->value);
        snprintf(fk, sizeof fk, "%.100s.%s", dk, scalar(k));
        keyline(p->c, fk, k);
        if (!strcmp(scalar(k), "granularity"))
            rc = def_duration(p, v, fk, &g);
        else if (!strcmp(scalar(k), "timespan"))
            rc = def_duration(p, v, fk, &ts);
        else if (!strcmp(scalar(k), "points")) {
            if (!scalar(v) || parse_i64(scalar(v), &pts) < 0 || pts <= 0)
                rc = perr(p, v, fk, "expected a positive integer, got %s", got(v, gbuf, sizeof gbuf));
        } else
            rc = perr(p, k, fk, "unknown key (expected granularity, timespan, points)");
        if (rc < 0)
            return rc;
    }
    if (ga_policy_add_def(pol, g, ts, pts, &why) < 0)
        return perr(p, n, dk, "%s", why);
    return 0;
}

static int parse_policy(struct pctx *p, const yaml_node_t *n, const char *ik, struct ga_policy *pol)
{
    char gbuf[80], fk[128];
    const char *names[GA_POLICY_MAX_METHODS], *bad = NULL;
    const yaml_node_t *mnodes[GA_POLICY_MAX_METHODS], *mnode = NULL;
    int nnames = 0, rc;
    if (n->type != YAML_MAPPING_NODE)
        return perr(p, n, ik, "expected a mapping with name, definition, aggregation_methods, got %s",
                    got(n, gbuf, sizeof gbuf));
    if ((rc = map_check(p, n, ik)) < 0)
        return rc;
    memset(pol, 0, sizeof *pol);
    FOR_PAIRS(pr, n) {
        yaml_node_t *k = node_at(p, pr->key), *v = node_at(p, pr->value);
        const char *kn = (const char *)k->data.scalar.value;   /* map_check: a scalar */
        snprintf(fk, sizeof fk, "%s.%s", ik, kn);
        keyline(p->c, fk, k);
        if (!strcmp(kn, "name")) {
            rc = item_str(p, v, fk, pol->name, sizeof pol->name);
        } else if (!strcmp(kn, "back_window")) {
            if (!scalar(v) || parse_i64(scalar(v), &pol->back_window) < 0)
                rc = perr(p, v, fk, "expected an integer, got %s", got(v, gbuf, sizeof gbuf));
        } else if (!strcmp(kn, "definition")) {
            if (v->type != YAML_SEQUENCE_NODE)
                rc = perr(p, v, fk, "expected a list of definitions, got %s", got(v, gbuf, sizeof gbuf));
            int i = 0;
            FOR_ITEMS(it, v) {
                char dk[128];
                yaml_node_t *d = node_at(p, *it);
                snprintf(dk, sizeof dk, "%.100s[%d]", fk, i++);
                keyline(p->c, dk, d);
                if (rc < 0 || (rc = parse_def(p, d, dk, pol)) < 0)
                    break;
            }
        } else if (!strcmp(kn, "aggregation_methods")) {
            mnode = v;
            if (v->type != YAML_SEQUENCE_NODE)
                rc = perr(p, v, fk, "expected a list of method names, got %s", got(v, gbuf, sizeof gbuf));
            FOR_ITEMS(it, v) {
                yaml_node_t *m = node_at(p, *it);
                if (rc < 0)
                    break;
                if (!scalar(m) || is_null(m))
                    rc = perr(p, m, fk, "expected a method name, got %s", got(m, gbuf, sizeof gbuf));
                else if (nnames >= GA_POLICY_MAX_METHODS)
                    rc = perr(p, m, fk, "too many entries (%d max)", GA_POLICY_MAX_METHODS);
                else {
                    mnodes[nnames] = m;
                    names[nnames++] = scalar(m);
                }
            }
        } else {
            rc = perr(p, k, fk, "unknown key (expected name, back_window, definition, "
                      "aggregation_methods)");
        }
        if (rc < 0)
            return rc;
    }
    if (!pol->name[0])
        return perr(p, n, ik, "name is required");
    if (ga_policy_methods_from_list(pol, names, nnames, &bad) < 0) {
        for (int i = 0; i < nnames; i++)
            if (names[i] == bad)
                mnode = mnodes[i];              /* point at the bad entry */
        snprintf(fk, sizeof fk, "%s.aggregation_methods", ik);
        return perr(p, mnode ? mnode : n, fk, "unknown aggregation method \"%s\"", bad);
    }
    return 0;
}

static int set_policies(struct pctx *p, const char *key, const yaml_node_t *n)
{
    struct ga_config *c = p->c;
    char gbuf[80], ik[64];
    int rc;
    c->npolicies = 0;
    if (is_null(n))
        return 0;
    if (n->type != YAML_SEQUENCE_NODE)
        return perr(p, n, key, "expected a list of policies, got %s", got(n, gbuf, sizeof gbuf));
    FOR_ITEMS(it, n) {
        yaml_node_t *item = node_at(p, *it);
        if (c->npolicies >= GA_CONFIG_MAX_POLICIES)
            return perr(p, item, key, "too many archive policies (%d max)", GA_CONFIG_MAX_POLICIES);
        snprintf(ik, sizeof ik, "%s[%d]", key, c->npolicies);
        keyline(c, ik, item);
        if ((rc = parse_policy(p, item, ik, &c->policies[c->npolicies])) < 0)
            return rc;
        c->npolicies++;
    }
    return 0;
}

static int set_rules(struct pctx *p, const char *key, const yaml_node_t *n)
{
    struct ga_config *c = p->c;
    char gbuf[80], ik[64], fk[128];
    int rc;
    c->nrules = 0;
    if (is_null(n))
        return 0;
    if (n->type != YAML_SEQUENCE_NODE)
        return perr(p, n, key, "expected a list of rules, got %s", got(n, gbuf, sizeof gbuf));
    FOR_ITEMS(it, n) {
        yaml_node_t *item = node_at(p, *it);
        if (c->nrules >= GA_CONFIG_MAX_RULES)
            return perr(p, item, key, "too many rules (%d max)", GA_CONFIG_MAX_RULES);
        snprintf(ik, sizeof ik, "%s[%d]", key, c->nrules);
        keyline(c, ik, item);
        if (item->type != YAML_MAPPING_NODE)
            return perr(p, item, ik, "expected a mapping with metric_pattern and archive_policy_name, "
                        "got %s", got(item, gbuf, sizeof gbuf));
        if ((rc = map_check(p, item, ik)) < 0)
            return rc;
        struct ga_rule *r = &c->rules[c->nrules];
        memset(r, 0, sizeof *r);
        FOR_PAIRS(pr, item) {
            yaml_node_t *k = node_at(p, pr->key), *v = node_at(p, pr->value);
            snprintf(fk, sizeof fk, "%s.%s", ik, scalar(k));
            keyline(c, fk, k);
            if (!strcmp(scalar(k), "metric_pattern"))
                rc = item_str(p, v, fk, r->pattern, sizeof r->pattern);
            else if (!strcmp(scalar(k), "archive_policy_name"))
                rc = item_str(p, v, fk, r->policy, sizeof r->policy);
            else
                rc = perr(p, k, fk, "unknown key (expected metric_pattern, archive_policy_name)");
            if (rc < 0)
                return rc;
        }
        if (!r->pattern[0])
            return perr(p, item, ik, "metric_pattern is required");
        if (!r->policy[0])
            return perr(p, item, ik, "archive_policy_name is required");
        c->nrules++;
    }
    return 0;
}

/* ---- the document ------------------------------------------------------- */

static int set_value(struct pctx *p, const struct ga_config_key *kd, const char *key, const yaml_node_t *n)
{
    switch (kd->type) {
    case GA_K_DEVICES: return set_devices(p, key, n);
    case GA_K_DIRS: return set_dirs(p, key, n);
    case GA_K_POLICIES: return set_policies(p, key, n);
    case GA_K_RULES: return set_rules(p, key, n);
    default: return set_scalar(p, kd, key, n);
    }
}

static int parse_section(struct pctx *p, const char *sec, const yaml_node_t *n)
{
    char gbuf[80], fk[128];
    int rc;
    if (is_null(n))
        return 0;                       /* "gpu:" alone keeps the defaults */
    if (n->type != YAML_MAPPING_NODE)
        return perr(p, n, sec, "expected a mapping, got %s", got(n, gbuf, sizeof gbuf));
    if ((rc = map_check(p, n, sec)) < 0)
        return rc;
    FOR_PAIRS(pr, n) {
        yaml_node_t *k = node_at(p, pr->key);
        snprintf(fk, sizeof fk, "%s.%s", sec, scalar(k));
        const struct ga_config_key *kd = ga_config_find_key(fk);
        if (!kd && is_section(fk)) {    /* a section within: http.keystone */
            keyline(p->c, fk, k);
            if ((rc = parse_section(p, fk, node_at(p, pr->value))) < 0)
                return rc;
            continue;
        }
        if (!kd)
            return perr(p, k, fk, "unknown key");
        keyline(p->c, fk, k);
        if ((rc = set_value(p, kd, fk, node_at(p, pr->value))) < 0)
            return rc;
    }
    return 0;
}

static int parse_root(struct pctx *p, const yaml_node_t *root)
{
    char gbuf[80];
    int rc;
    if (!root || is_null(root))
        return 0;                       /* empty file: defaults */
    if (root->type != YAML_MAPPING_NODE)
        return perr(p, root, "(top level)", "expected a mapping of sections, got %s",
                    got(root, gbuf, sizeof gbuf));
    if ((rc = map_check(p, root, "")) < 0)
        return rc;
    FOR_PAIRS(pr, root) {
        yaml_node_t *k = node_at(p, pr->key), *v = node_at(p, pr->value);
        const char *kn = scalar(k);
        const struct ga_config_key *kd = strchr(kn, '.') ? NULL : ga_config_find_key(kn);
        keyline(p->c, kn, k);
        if (is_section(kn))
            rc = parse_section(p, kn, v);
        else if (kd)
            rc = set_value(p, kd, kn, v);
        else
            rc = perr(p, k, kn, "unknown key");
        if (rc < 0)
            return rc;
    }
    return 0;
}

static int syntax_error(yaml_parser_t *parser, const char *name, char *err, size_t errlen)
{
    if (err && errlen) {
        char ctx[160] = "";
        if (parser->context)
            snprintf(ctx, sizeof ctx, " (%s started at line %lu)", parser->context,
                     (unsigned long)parser->context_mark.line + 1);
        snprintf(err, errlen, "%s:%lu: yaml: %s%s", name, (unsigned long)parser->problem_mark.line + 1,
                 parser->problem ? parser->problem : "syntax error", ctx);
    }
    return parser->error == YAML_MEMORY_ERROR ? GA_ENOMEM : GA_ECONFIG;
}

static int parse(struct ga_config *c, yaml_parser_t *parser, const char *name, char *err, size_t errlen)
{
    yaml_document_t doc, extra;
    struct pctx p = { c, &doc, name, err, errlen };
    int rc;
    if (!yaml_parser_load(parser, &doc))
        return syntax_error(parser, name, err, errlen);
    snprintf(c->path, sizeof c->path, "%s", name);
    c->nkeylines = 0;
    rc = parse_root(&p, yaml_document_get_root_node(&doc));
    if (rc < 0)
        goto out;
    /* A second document would be ignored silently: refuse it. */
    if (!yaml_parser_load(parser, &extra)) {
        rc = syntax_error(parser, name, err, errlen);
        goto out;
    }
    yaml_node_t *root2 = yaml_document_get_root_node(&extra);
    if (root2)
        rc = perr(&p, root2, "yaml", "a second document; the file must hold exactly one");
    yaml_document_delete(&extra);
out:
    yaml_document_delete(&doc);
    return rc;
}

int ga_config_parse_string(struct ga_config *c, const char *yaml, size_t len, const char *name,
                           char *err, size_t errlen)
{
    yaml_parser_t parser;
    if (!yaml_parser_initialize(&parser))
        return GA_ENOMEM;
    yaml_parser_set_input_string(&parser, (const unsigned char *)yaml, len);
    int rc = parse(c, &parser, name, err, errlen);
    yaml_parser_delete(&parser);
    return rc;
}

int ga_config_parse_file(struct ga_config *c, const char *path, char *err, size_t errlen)
{
    yaml_parser_t parser;
    int rc = GA_ECONFIG;
    FILE *f = fopen(path, "rb");
    if (!f) {
        if (err && errlen)
            snprintf(err, errlen, "%s: cannot open: %s", path, strerror(errno));
        return GA_ECONFIG;
    }
    if (!yaml_parser_initialize(&parser)) {
        rc = GA_ENOMEM;
        goto out;
    }
    yaml_parser_set_input_file(&parser, f);
    rc = parse(c, &parser, path, err, errlen);
    yaml_parser_delete(&parser);
out:
    fclose(f);
    return rc;
}

