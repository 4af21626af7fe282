/* ops_render.c — /metrics, /healthz and /readyz bodies (see ops_render.h). */
#include "daemon/http/ops_render.h"

#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <jansson.h>

#include "proto/ga_err.h"

/* ---- a growable text buffer ------------------------------------------------ */

struct tbuf {
    char *p;
    size_t len, cap;
    int oom;
};

static void tb_reserve(struct tbuf *b, size_t more)
{
    if (b->oom || b->len + more + 1 <= b->cap)
        return;
    size_t ncap = b->cap ? b->cap : 4096;
    while (ncap < b->len + more + 1)
        ncap *= 2;
    char *np = realloc(b->p, ncap);
    if (!np) {
        b->oom = 1;
        return;
    }
    b->p = np;
    b->cap = ncap;
}

static void tb_put(struct tbuf *b, const char *s, size_t n)
{
    tb_reserve(b, n);
    if (b->oom)
        return;
    memcpy(b->p + b->len, s, n);
    b->len += n;
    b->p[b->len] = '\0';
}

static void tb_puts(struct tbuf *b, const char *s)
{
    tb_put(b, s, strlen(s));
}

static void tb_printf(struct tbuf *b, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void tb_printf(struct tbuf *b, const char *fmt, ...)
{
    char tmp[128];
    va_list ap;
    va_start(ap, fmt);
    int k = vsnprintf(tmp, sizeof tmp, fmt, ap);
    va_end(ap);
    if (k > 0)
        tb_put(b, tmp, (size_t)k < sizeof tmp ? (size_t)k : sizeof tmp - 1);
}

/* HELP text: backslash and line feed escaped (exposition format 0.0.4). */
static void tb_help(struct tbuf *b, const char *s)
{
    for (; *s; s++) {
        if (*s == '\\')
            tb_puts(b, "\\\\");
        else if (*s == '\n')
            tb_puts(b, "\\n");
        else
            tb_put(b, s, 1);
    }
}

/* ---- /metrics ----------------------------------------------------------------- */

/* The value of stats name `name` in the map, or NULL. */
static const msgpack_object *stats_value(const msgpack_object *stats, const char *name)
{
    size_t len = strlen(name);
    for (uint32_t i = 0; i < stats->via.map.size; i++) {
        const msgpack_object *k = &stats->via.map.ptr[i].key;
        if (k->type == MSGPACK_OBJECT_STR && k->via.str.size == len &&
            memcmp(k->via.str.ptr, name, len) == 0)
            return &stats->via.map.ptr[i].val;
    }
    return NULL;
}

/* A number × scale; integers as they are when scale is 1. */
static int put_value(struct tbuf *b, const msgpack_object *v, double scale)
{
    double d;
    switch (v->type) {
    case MSGPACK_OBJECT_POSITIVE_INTEGER:
        if (scale == 1) {
            tb_printf(b, "%llu", (unsigned long long)v->via.u64);
            return 0;
        }
        d = (double)v->via.u64;
        break;
    case MSGPACK_OBJECT_NEGATIVE_INTEGER:
        if (scale == 1) {
            tb_printf(b, "%lld", (long long)v->via.i64);
            return 0;
        }
        d = (double)v->via.i64;
        break;
    case MSGPACK_OBJECT_FLOAT32:
    case MSGPACK_OBJECT_FLOAT64:
        d = v->via.f64;
        break;
    case MSGPACK_OBJECT_BOOLEAN:
        d = v->via.boolean;
        break;
    default:
        return GA_EINVAL;
    }
    d *= scale;
    if (isnan(d))
        tb_puts(b, "NaN");
    else if (isinf(d))
        tb_puts(b, d > 0 ? "+Inf" : "-Inf");
    else
        tb_printf(b, "%.15g", d);
    return 0;
}

static void put_header(struct tbuf *b, const char *prom, const char *help, const char *type)
{
    tb_printf(b, "# HELP %s ", prom);
    tb_help(b, help);
    tb_printf(b, "\n# TYPE %s %s\n", prom, type);
}

/* One histogram family: _bucket{le}, _sum (seconds), _count. */
static void put_histogram(struct tbuf *b, const struct stat_def *d)
{
    struct histo_snap s;
    histo_read(d->histo, &s);
    char help[512];
    snprintf(help, sizeof help, "%s (gpuaggctl stats: %s.*)", d->help, d->name);
    put_header(b, d->prom, help, "histogram");
    for (int i = 0; i <= s.nbounds; i++) {
        tb_printf(b, "%s_bucket{le=\"", d->prom);
        if (i < s.nbounds)
            tb_printf(b, "%.15g", (double)s.bounds_ns[i] * d->scale);
        else
            tb_puts(b, "+Inf");
        tb_printf(b, "\"} %llu\n", (unsigned long long)s.cum[i]);
    }
    tb_printf(b, "%s_sum %.15g\n", d->prom, (double)s.sum_ns * d->scale);
    tb_printf(b, "%s_count %llu\n", d->prom, (unsigned long long)s.count);
}

/* The family help: the family's own for a labelled one, else the row's. */
static void family_help(const struct stat_def *d, const struct stat_family *fam, size_t nfam,
                        char *out, size_t n)
{
    for (size_t i = 0; d->labels && i < nfam; i++)
        if (strcmp(fam[i].prom, d->prom) == 0) {
            snprintf(out, n, "%s", fam[i].help);
            return;
        }
    if (strcmp(d->unit, "—") != 0 && d->unit[0])
        snprintf(out, n, "%s Unit: %s. (gpuaggctl stats: %s)", d->help,
                 d->scale != 1 ? "seconds" : d->unit, d->name);
    else
        snprintf(out, n, "%s (gpuaggctl stats: %s)", d->help, d->name);
}

int ops_prom_render(const msgpack_object *stats, const struct stat_def *table, size_t n,
                    const struct stat_family *fam, size_t nfam, char **out, size_t *outlen)
{
    *out = NULL;
    *outlen = 0;
    if (stats->type != MSGPACK_OBJECT_MAP)
        return GA_EINVAL;
    for (uint32_t i = 0; i < stats->via.map.size; i++) {
        const msgpack_object *k = &stats->via.map.ptr[i].key, *v = &stats->via.map.ptr[i].val;
        if (k->type != MSGPACK_OBJECT_STR || k->via.str.size == 0 || k->via.str.size > 200 ||
            memchr(k->via.str.ptr, '\0', k->via.str.size))
            return GA_EINVAL;
        if (v->type != MSGPACK_OBJECT_POSITIVE_INTEGER && v->type != MSGPACK_OBJECT_NEGATIVE_INTEGER &&
            v->type != MSGPACK_OBJECT_FLOAT32 && v->type != MSGPACK_OBJECT_FLOAT64 &&
            v->type != MSGPACK_OBJECT_BOOLEAN)
            return GA_EINVAL;
    }
    struct tbuf b = { 0 };
    tb_reserve(&b, 32768);
    char help[1024];
    /* the table's families, each once, its rows together */
    for (size_t i = 0; i < n; i++) {
        const struct stat_def *d = &table[i];
        if (!d->prom)
            continue;
        if (d->kind == STAT_HISTOGRAM) {
            if (d->histo)
                put_histogram(&b, d);
            continue;
        }
        size_t first = 0;
        while (first < i && !(table[first].prom && strcmp(table[first].prom, d->prom) == 0))
            first++;
        if (first < i)
            continue;                  /* family already out */
        family_help(d, fam, nfam, help, sizeof help);
        put_header(&b, d->prom, help, d->kind == STAT_COUNTER ? "counter" : "gauge");
        for (size_t j = i; j < n; j++) {
            const struct stat_def *e = &table[j];
            const msgpack_object *v;
            if (!e->prom || strcmp(e->prom, d->prom) != 0 || !(v = stats_value(stats, e->name)))
                continue;
            tb_puts(&b, e->prom);
            if (e->labels) {
                tb_puts(&b, "{");
                tb_puts(&b, e->labels);
                tb_puts(&b, "}");
            }
            tb_puts(&b, " ");
            put_value(&b, v, e->scale);
            tb_puts(&b, "\n");
        }
    }
    /* names the table does not know: untyped, so that nothing is hidden */
    for (uint32_t i = 0; i < stats->via.map.size; i++) {
        const msgpack_object *k = &stats->via.map.ptr[i].key;
        int known = 0;
        for (size_t j = 0; j < n && !known; j++)
            known = strlen(table[j].name) == k->via.str.size &&
                    memcmp(table[j].name, k->via.str.ptr, k->via.str.size) == 0;
        if (known)
            continue;
        char name[256], pname[320];
        memcpy(name, k->via.str.ptr, k->via.str.size);
        name[k->via.str.size] = '\0';
        size_t p = (size_t)snprintf(pname, sizeof pname, "gpuagg_");
        for (const char *c = name; *c; c++)
            pname[p++] = (*c >= 'a' && *c <= 'z') || (*c >= 'A' && *c <= 'Z') ||
                         (*c >= '0' && *c <= '9') || *c == '_' ? *c : '_';
        pname[p] = '\0';
        snprintf(help, sizeof help, "gpuaggctl stats name %s (not in the counter table)", name);
        put_header(&b, pname, help, "untyped");
        tb_printf(&b, "%s ", pname);
        put_value(&b, &stats->via.map.ptr[i].val, 1);
        tb_puts(&b, "\n");
    }
    if (b.oom) {
        free(b.p);
        return GA_ENOMEM;
    }
    *out = b.p;
    *outlen = b.len;
    return 0;
}

/* ---- /healthz and /readyz ------------------------------------------------------ */

static int finish(json_t *root, json_t *reasons, int ok, const char *good, const char *bad,
                  char **json)
{
    json_object_set_new(root, "status", json_string(ok ? good : bad));
    json_object_set_new(root, "reasons", reasons);
    *json = json_dumps(root, JSON_COMPACT | JSON_PRESERVE_ORDER);
    json_decref(root);
    return *json ? (ok ? 200 : 503) : GA_ENOMEM;
}

int ops_health_render(const struct ops_health *h, char **json)
{
    *json = NULL;
    json_t *root = json_object(), *reasons = json_array();
    if (!root || !reasons) {
        json_decref(root);
        json_decref(reasons);
        return GA_ENOMEM;
    }
    char why[160];
    int ok = h->loop_ok || h->draining;
    if (!h->loop_ok) {
        snprintf(why, sizeof why, "the event loop did not run a request within %.0f ms%s", h->limit_ms,
                 h->draining ? " (expected while draining: the final commit holds it)" : "");
        json_array_append_new(reasons, json_string(why));
    }
    json_object_set_new(root, "checks",
                        json_pack("{s:{s:b, s:f, s:f}, s:b}", "loop", "ok", h->loop_ok, "round_trip_ms",
                                  h->loop_ms, "limit_ms", h->limit_ms, "draining", h->draining));
    json_object_set_new(root, "uptime_s", json_real(h->uptime_s));
    json_object_set_new(root, "version", json_string(h->version ? h->version : ""));
    return finish(root, reasons, ok, "ok", "fail", json);
}

int ops_ready_render(const struct ops_ready *r, char **json)
{
    *json = NULL;
    json_t *root = json_object(), *reasons = json_array();
    if (!root || !reasons) {
        json_decref(root);
        json_decref(reasons);
        return GA_ENOMEM;
    }
    char why[768];
    int storage_ok = r->unread || r->storage_connected;
    int journal_writes = !r->journal_error || !r->journal_error[0];
    int journal_ok = r->unread ||
                     (journal_writes &&
                      r->journal_retained_bytes + r->journal_segment_bytes <= r->journal_max_bytes);
    int drain_ok = !r->draining;
    if (!storage_ok) {
        snprintf(why, sizeof why, "storage (PostgreSQL) is %s%s%s", r->storage_state,
                 r->storage_error && r->storage_error[0] ? ": " : "",
                 r->storage_error ? r->storage_error : "");
        json_array_append_new(reasons, json_string(why));
    }
    if (!r->unread && !journal_writes) {
        snprintf(why, sizeof why, "journal cannot write: %s (new batches are refused until it "
                 "can)", r->journal_error);
        json_array_append_new(reasons, json_string(why));
    } else if (!journal_ok) {
        snprintf(why, sizeof why, "journal full: %llu of %llu bytes (journal.max_bytes) retained, "
                 "less than one segment (%llu bytes) of room until storage catches up",
                 (unsigned long long)r->journal_retained_bytes, (unsigned long long)r->journal_max_bytes,
                 (unsigned long long)r->journal_segment_bytes);
        json_array_append_new(reasons, json_string(why));
    }
    if (!drain_ok)
        json_array_append_new(reasons, json_string("draining: the daemon is shutting down"));
    json_t *checks;
    if (r->unread) {
        static const char unread[] = "not read: the event loop is busy with the drain's final commit";
        checks = json_pack("{s:{s:n, s:s}, s:{s:n, s:s}, s:{s:b, s:s}}", "storage", "ok", "why", unread,
                           "journal", "ok", "why", unread, "draining", "ok", drain_ok, "state", r->state);
    } else {
        checks = json_pack("{s:{s:b, s:s, s:s}, s:{s:b, s:I, s:I, s:I, s:s}, s:{s:b, s:s}}",
                           "storage", "ok", storage_ok, "state", r->storage_state,
                           "last_error", r->storage_error ? r->storage_error : "",
                           "journal", "ok", journal_ok,
                           "retained_bytes", (json_int_t)r->journal_retained_bytes,
                           "max_bytes", (json_int_t)r->journal_max_bytes,
                           "segment_bytes", (json_int_t)r->journal_segment_bytes,
                           "error", journal_writes ? "" : r->journal_error,
                           "draining", "ok", drain_ok, "state", r->state);
    }
    if (!checks) {
        json_decref(root);
        json_decref(reasons);
        return GA_ENOMEM;
    }
    json_object_set_new(root, "checks", checks);
    return finish(root, reasons, storage_ok && journal_ok && drain_ok, "ready", "not ready", json);
}
