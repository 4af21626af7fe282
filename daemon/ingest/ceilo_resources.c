/* ceilo_resources.c — the resource recorder (see ceilo_resources.h). */
#include "daemon/ingest/ceilo_resources.h"

#include <jansson.h>
#include <libpq-fe.h>
#include <msgpack.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "proto/base/log.h"
#include "proto/ga_err.h"
#include "proto/mp_util.h"
#include "proto/uuid.h"
#include "storage/pg_resources.h"
#include "storage/pg_util.h"

#define CACHE_SLOTS 65536
#define ATTRS_MAX 4096
#define FIELD_MAX 256

struct entry {
    char id[GA_UUID_STR];
    char raw[FIELD_MAX], type[40], creator[2 * FIELD_MAX + 2], project[FIELD_MAX], user[FIELD_MAX];
    char meter[FIELD_MAX], metric[2 * FIELD_MAX + 2], unit[64];
    char *attrs;                          /* JSON object text, malloc'ed */
    uint64_t hash;
};

struct ceilo_resources {
    char *conninfo;
    char creator[256];
    pthread_t thread;
    pthread_mutex_t mu;
    pthread_cond_t cv;
    int stop;
    struct entry *q[CEILO_RESOURCES_QUEUE];
    size_t head, len;
    uint64_t cache[CACHE_SLOTS];          /* guarded by mu */
    _Atomic uint64_t seen, recorded, dropped, errors;
};

/* Gnocchi's resource type for a Ceilometer meter (its gnocchi_resources.yaml,
 * the common meters). */
static const char *meter_type(const char *m)
{
    if (!strncmp(m, "disk.device.", 12))
        return "instance_disk";
    if (!strncmp(m, "network.", 8))
        return "instance_network_interface";
    if (!strncmp(m, "image.", 6) || !strcmp(m, "image"))
        return "image";
    if (!strncmp(m, "volume", 6))
        return "volume";
    if (!strcmp(m, "cpu") || !strncmp(m, "cpu_", 4) || !strncmp(m, "cpu.", 4) ||
        !strncmp(m, "memory", 6) || !strcmp(m, "vcpus") || !strncmp(m, "disk.", 5) ||
        !strncmp(m, "compute.", 8) || !strcmp(m, "instance") || !strncmp(m, "perf.", 5))
        return "instance";
    return "generic";
}

static uint64_t fnv(uint64_t h, const void *p, size_t n)
{
    const unsigned char *b = p;
    for (size_t i = 0; i < n; i++)
        h = (h ^ b[i]) * 1099511628211ULL;
    return h;
}

static void str_field(const msgpack_object *m, const char *key, char *out, size_t cap)
{
    const char *s;
    size_t n;
    out[0] = '\0';
    if (mp_get_str(m, key, &s, &n) == 0 && n < cap && !memchr(s, '\0', n)) {
        memcpy(out, s, n);
        out[n] = '\0';
    }
}

static json_t *scalar(const msgpack_object *o)
{
    switch (o->type) {
    case MSGPACK_OBJECT_NIL: return json_null();
    case MSGPACK_OBJECT_BOOLEAN: return json_boolean(o->via.boolean);
    case MSGPACK_OBJECT_POSITIVE_INTEGER: return json_integer((json_int_t)o->via.u64);
    case MSGPACK_OBJECT_NEGATIVE_INTEGER: return json_integer((json_int_t)o->via.i64);
    case MSGPACK_OBJECT_FLOAT32:
    case MSGPACK_OBJECT_FLOAT64: return json_real(o->via.f64);
    case MSGPACK_OBJECT_STR: return json_stringn_nocheck(o->via.str.ptr, o->via.str.size);
    default: return NULL;
    }
}

static void put(json_t *attrs, const char *k, size_t kn, const msgpack_object *v)
{
    char key[128];
    if (kn >= sizeof key || memchr(k, '\0', kn))
        return;
    memcpy(key, k, kn);
    key[kn] = '\0';
    json_t *j = scalar(v);
    if (!j)
        return;
    if (json_is_string(j) && !json_string_value(j)) {
        json_decref(j);
        return;
    }
    json_object_set_new(attrs, key, j);
}

/* The metadata's scalars, nested maps one level as parent_child. */
static json_t *attributes(const msgpack_object *md)
{
    json_t *a = json_object();
    if (!md || md->type != MSGPACK_OBJECT_MAP)
        return a;
    for (uint32_t i = 0; i < md->via.map.size; i++) {
        const msgpack_object *k = &md->via.map.ptr[i].key, *v = &md->via.map.ptr[i].val;
        if (k->type != MSGPACK_OBJECT_STR)
            continue;
        if (v->type == MSGPACK_OBJECT_MAP) {
            for (uint32_t j = 0; j < v->via.map.size; j++) {
                const msgpack_object *k2 = &v->via.map.ptr[j].key;
                char key[128];
                if (k2->type != MSGPACK_OBJECT_STR ||
                    k->via.str.size + k2->via.str.size + 2 > sizeof key)
                    continue;
                int n = snprintf(key, sizeof key, "%.*s_%.*s", (int)k->via.str.size, k->via.str.ptr,
                                 (int)k2->via.str.size, k2->via.str.ptr);
                put(a, key, (size_t)n, &v->via.map.ptr[j].val);
            }
        } else {
            put(a, k->via.str.ptr, k->via.str.size, v);
        }
    }
    return a;
}

void ceilo_resources_sample(void *ctx, const void *dgram, size_t len)
{
    struct ceilo_resources *c = ctx;
    c->seen++;
    msgpack_unpacked up;
    msgpack_unpacked_init(&up);
    if (msgpack_unpack_next(&up, dgram, len, NULL) != MSGPACK_UNPACK_SUCCESS ||
        up.data.type != MSGPACK_OBJECT_MAP) {
        msgpack_unpacked_destroy(&up);
        return;
    }
    const msgpack_object *m = &up.data;
    struct entry *e = calloc(1, sizeof *e);
    if (!e) {
        c->dropped++;
        msgpack_unpacked_destroy(&up);
        return;
    }
    str_field(m, "resource_id", e->raw, sizeof e->raw);
    str_field(m, "project_id", e->project, sizeof e->project);
    str_field(m, "user_id", e->user, sizeof e->user);
    str_field(m, "counter_name", e->meter, sizeof e->meter);
    str_field(m, "counter_unit", e->unit, sizeof e->unit);
    json_t *attrs = attributes(mp_map_get(m, "resource_metadata"));
    msgpack_unpacked_destroy(&up);
    e->attrs = json_dumps(attrs, JSON_COMPACT | JSON_SORT_KEYS);
    json_decref(attrs);
    if (e->attrs && strlen(e->attrs) > ATTRS_MAX) {
        free(e->attrs);
        e->attrs = strdup("{}");
    }
    if (c->creator[0])
        snprintf(e->creator, sizeof e->creator, "%s", c->creator);
    else
        snprintf(e->creator, sizeof e->creator, "%s:%s", e->user, e->project);
    char why[128];
    if (!e->attrs || !e->raw[0] || !e->meter[0] ||
        ga_resource_uuid(e->raw, e->creator, e->id, why, sizeof why) < 0) {
        free(e->attrs);
        free(e);
        c->errors++;                      /* a resource id Gnocchi would refuse ('/', too long) */
        return;
    }
    snprintf(e->type, sizeof e->type, "%s", meter_type(e->meter));
    snprintf(e->metric, sizeof e->metric, "%s/%s", e->raw, e->meter);
    uint64_t h = 14695981039346656037ULL;
    h = fnv(h, e->id, strlen(e->id) + 1);
    h = fnv(h, e->meter, strlen(e->meter) + 1);
    h = fnv(h, e->project, strlen(e->project) + 1);
    h = fnv(h, e->user, strlen(e->user) + 1);
    h = fnv(h, e->unit, strlen(e->unit) + 1);
    h = fnv(h, e->attrs, strlen(e->attrs));
    h |= 1;                               /* 0 is an empty slot */
    e->hash = h;
    pthread_mutex_lock(&c->mu);
    if (c->cache[h % CACHE_SLOTS] == h) {
        pthread_mutex_unlock(&c->mu);
        free(e->attrs);
        free(e);
        return;
    }
    if (c->len == CEILO_RESOURCES_QUEUE) {
        pthread_mutex_unlock(&c->mu);
        c->dropped++;
        free(e->attrs);
        free(e);
        return;
    }
    c->q[(c->head + c->len++) % CEILO_RESOURCES_QUEUE] = e;
    pthread_cond_signal(&c->cv);
    pthread_mutex_unlock(&c->mu);
}

static void *run(void *arg)
{
    struct ceilo_resources *c = arg;
    PGconn *pg = NULL;
    struct ga_ratelimit rl = GA_RATELIMIT_INIT(60LL * 1000000000);
    for (;;) {
        pthread_mutex_lock(&c->mu);
        while (!c->stop && !c->len)
            pthread_cond_wait(&c->cv, &c->mu);
        if (c->stop) {
            pthread_mutex_unlock(&c->mu);
            break;
        }
        struct entry *e = c->q[c->head];
        pthread_mutex_unlock(&c->mu);
        if (pg && PQstatus(pg) != CONNECTION_OK) {
            PQfinish(pg);
            pg = NULL;
        }
        if (!pg)
            pg = pg_util_connect(c->conninfo, "gpuaggd-resources");
        int ok = 0;
        char err[256] = "out of memory";
        if (pg && PQstatus(pg) == CONNECTION_OK) {
            struct pg_resources_sample ps = { e->id, e->raw, e->type, e->creator, e->project, e->user,
                                       e->attrs, e->meter, e->metric, e->unit };
            ok = pg_resources_upsert(pg, &ps, err, sizeof err) == 0;
        } else if (pg) {
            pg_util_errcopy(err, sizeof err, PQerrorMessage(pg));
        }
        uint64_t sup;
        if (!ok && ga_ratelimit_ok(&rl, &sup))
            ga_log(GA_LOG_WARN, "resources_write", "error=\"%s\" suppressed=%llu action=retry_1s",
                   err, (unsigned long long)sup);
        pthread_mutex_lock(&c->mu);
        if (ok) {
            c->head = (c->head + 1) % CEILO_RESOURCES_QUEUE;
            c->len--;
            c->cache[e->hash % CACHE_SLOTS] = e->hash;
        }
        pthread_mutex_unlock(&c->mu);
        if (ok) {
            c->recorded++;
            free(e->attrs);
            free(e);
        } else {
            c->errors++;                  /* kept at the head: retried */
            struct timespec ts = { 1, 0 };
            pthread_mutex_lock(&c->mu);
            if (!c->stop) {
                struct timespec until;
                clock_gettime(CLOCK_REALTIME, &until);
                until.tv_sec += ts.tv_sec;
                pthread_cond_timedwait(&c->cv, &c->mu, &until);
            }
            pthread_mutex_unlock(&c->mu);
        }
    }
    if (pg)
        PQfinish(pg);
    return NULL;
}

int ceilo_resources_start(struct ceilo_resources **out, const char *conninfo, const char *creator)
{
    struct ceilo_resources *c = calloc(1, sizeof *c);
    if (!c || !(c->conninfo = strdup(conninfo))) {
        free(c);
        return GA_ENOMEM;
    }
    snprintf(c->creator, sizeof c->creator, "%s", creator ? creator : "");
    pthread_mutex_init(&c->mu, NULL);
    pthread_cond_init(&c->cv, NULL);
    if (pthread_create(&c->thread, NULL, run, c) != 0) {
        pthread_mutex_destroy(&c->mu);
        pthread_cond_destroy(&c->cv);
        free(c->conninfo);
        free(c);
        return GA_EIO;
    }
    *out = c;
    return 0;
}

void ceilo_resources_stop(struct ceilo_resources *c)
{
    if (!c)
        return;
    pthread_mutex_lock(&c->mu);
    c->stop = 1;
    pthread_cond_signal(&c->cv);
    pthread_mutex_unlock(&c->mu);
    pthread_join(c->thread, NULL);
    for (size_t i = 0; i < c->len; i++) {
        struct entry *e = c->q[(c->head + i) % CEILO_RESOURCES_QUEUE];
        free(e->attrs);
        free(e);
    }
    pthread_mutex_destroy(&c->mu);
    pthread_cond_destroy(&c->cv);
    free(c->conninfo);
    free(c);
}

void ceilo_resources_get_stats(struct ceilo_resources *c, struct ceilo_resources_stats *o)
{
    o->seen = c->seen;
    o->recorded = c->recorded;
    o->dropped = c->dropped;
    o->errors = c->errors;
}
