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

/* ---- names ---------------------------------------------------------------- */

static int ends_with(const char *s, size_t n, const char *suf)
{
    size_t k = strlen(suf);
    return n >= k && memcmp(s + n - k, suf, k) == 0;
}

size_t ops_prom_name(const char *name, const struct ops_counter_doc *doc, char *out, size_t n)
{
    static const char prefix[] = "gpuagg_";
    size_t len = strlen(name), k = sizeof prefix - 1;
    if (k + len + sizeof "_seconds_bytes_total" > n)
        return 0;
    memcpy(out, prefix, k);
    for (size_t i = 0; i < len; i++) {
        char c = name[i];
        int ok = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '_';
        out[k++] = ok ? c : '_';
    }
    out[k] = '\0';
    if (!doc)
        return k;
    if (strncmp(doc->unit, "seconds", 7) == 0 && ends_with(out, k, "_s")) {
        k -= 2;
        k += (size_t)snprintf(out + k, n - k, "_seconds");
    } else if (strcmp(doc->unit, "bytes") == 0 && !strstr(out, "bytes")) {
        k += (size_t)snprintf(out + k, n - k, "_bytes");
    }
    if (strcmp(doc->kind, "counter") == 0 && !ends_with(out, k, "_total"))
        k += (size_t)snprintf(out + k, n - k, "_total");
    return k;
}

static const struct ops_counter_doc *find_doc(const struct ops_counter_doc *docs, size_t ndocs,
                                              const char *name, size_t len)
{
    for (size_t i = 0; i < ndocs; i++)
        if (strlen(docs[i].name) == len && memcmp(docs[i].name, name, len) == 0)
            return &docs[i];
    return NULL;
}

/* ---- /metrics ----------------------------------------------------------------- */

int ops_prom_render(const msgpack_object *stats, const struct ops_counter_doc *docs, size_t ndocs,
                    char **out, size_t *outlen)
{
    *out = NULL;
    *outlen = 0;
    if (stats->type != MSGPACK_OBJECT_MAP)
        return GA_EINVAL;
    struct tbuf b = { 0 };
    tb_reserve(&b, 16384);
    for (uint32_t i = 0; i < stats->via.map.size; i++) {
        const msgpack_object *k = &stats->via.map.ptr[i].key, *v = &stats->via.map.ptr[i].val;
        if (k->type != MSGPACK_OBJECT_STR || k->via.str.size == 0 || k->via.str.size > 200)
            goto bad;
        char name[256], pname[320];
        memcpy(name, k->via.str.ptr, k->via.str.size);
        name[k->via.str.size] = '\0';
        if (memchr(name, '\0', k->via.str.size))
            goto bad;
        const struct ops_counter_doc *doc = find_doc(docs, ndocs, name, k->via.str.size);
        if (!ops_prom_name(name, doc, pname, sizeof pname))
            goto bad;
        const char *type = !doc ? "untyped" : strcmp(doc->kind, "counter") == 0 ? "counter" : "gauge";
        tb_printf(&b, "# HELP %s ", pname);
        if (doc) {
            tb_help(&b, doc->help);
            if (strcmp(doc->unit, "—") != 0 && doc->unit[0]) {
                tb_puts(&b, " Unit: ");
                tb_help(&b, doc->unit);
                tb_puts(&b, ".");
            }
            tb_puts(&b, " (gpuaggctl stats: ");
            tb_help(&b, name);
            tb_puts(&b, ")");
        } else {
            tb_puts(&b, "gpuaggctl stats name ");
            tb_help(&b, name);
            tb_puts(&b, " (not in docs/COUNTERS.md)");
        }
        tb_printf(&b, "\n# TYPE %s %s\n%s ", pname, type, pname);
        switch (v->type) {
        case MSGPACK_OBJECT_POSITIVE_INTEGER:
            tb_printf(&b, "%llu\n", (unsigned long long)v->via.u64);
            break;
        case MSGPACK_OBJECT_NEGATIVE_INTEGER:
            tb_printf(&b, "%lld\n", (long long)v->via.i64);
            break;
        case MSGPACK_OBJECT_FLOAT32:
        case MSGPACK_OBJECT_FLOAT64: {
            double d = v->via.f64;
            if (isnan(d))
                tb_puts(&b, "NaN\n");
            else if (isinf(d))
                tb_puts(&b, d > 0 ? "+Inf\n" : "-Inf\n");
            else
                tb_printf(&b, "%.17g\n", d);
            break;
        }
        case MSGPACK_OBJECT_BOOLEAN:
            tb_puts(&b, v->via.boolean ? "1\n" : "0\n");
            break;
        default:
            goto bad;
        }
    }
    if (b.oom) {
        free(b.p);
        return GA_ENOMEM;
    }
    *out = b.p;
    *outlen = b.len;
    return 0;
bad:
    free(b.p);
    return GA_EINVAL;
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
