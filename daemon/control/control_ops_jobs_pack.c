/* control_ops_jobs_pack.c — encoders of the job.* ops (status maps, result
 * chunks), the params decoder, and the jobs sections of status and stats
 * (see control_ops_jobs.h). */
#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "daemon/control/control_ops_jobs.h"
#include "daemon/daemon.h"
#include "daemon/jobs/job_kinds.h"
#include "proto/ga_err.h"
#include "proto/mp_util.h"
#include "proto/ts_parse.h"

static void pack_time(msgpack_packer *pk, const char *key, int64_t ns)
{
    mp_pack_cstr(pk, key);
    if (ns == 0) {
        msgpack_pack_nil(pk);
        return;
    }
    char buf[TS_RFC3339_LEN + 1];
    ts_format_rfc3339(ns, buf, sizeof buf);
    mp_pack_cstr(pk, buf);
}

static void pack_ns(msgpack_packer *pk, const char *key, int64_t ns)
{
    mp_pack_cstr(pk, key);
    if (ns == 0)
        msgpack_pack_nil(pk);
    else
        msgpack_pack_int64(pk, ns);
}

void control_ops_jobs_pack_info(msgpack_packer *pk, const struct ga_job_info *i)
{
    msgpack_pack_map(pk, 14);
    mp_pack_kv_uint(pk, "id", i->id);
    mp_pack_kv_str(pk, "kind", i->kind);
    mp_pack_kv_str(pk, "state", ga_job_state_name(i->state));
    mp_pack_kv_int(pk, "priority", i->priority);
    mp_pack_kv_double(pk, "progress", i->progress);
    pack_time(pk, "submitted", i->submitted_ns);
    pack_time(pk, "started", i->started_ns);
    pack_time(pk, "finished", i->finished_ns);
    pack_ns(pk, "submitted_ns", i->submitted_ns);
    pack_ns(pk, "started_ns", i->started_ns);
    pack_ns(pk, "finished_ns", i->finished_ns);
    mp_pack_cstr(pk, "device");
    if (i->state == GA_JOB_QUEUED || (i->state == GA_JOB_CANCELLED && i->started_ns == 0)) {
        msgpack_pack_nil(pk);
    } else if (i->device < 0) {
        mp_pack_cstr(pk, "cpu");
    } else {
        char dev[16];
        snprintf(dev, sizeof dev, "cuda:%d", i->device);
        mp_pack_cstr(pk, dev);
    }
    mp_pack_kv_str(pk, "error", i->error);
    mp_pack_kv_uint(pk, "result_bytes", i->result_len);
}

void control_ops_jobs_pack_chunk(msgpack_packer *pk, const uint8_t *res, size_t len, uint64_t offset,
                                 size_t max)
{
    size_t n = offset < len ? len - (size_t)offset : 0;
    if (n > max)
        n = max;
    msgpack_pack_map(pk, 4);
    mp_pack_kv_uint(pk, "total", len);
    mp_pack_kv_uint(pk, "offset", offset);
    mp_pack_cstr(pk, "data");
    msgpack_pack_bin_with_body(pk, n ? (const void *)(res + offset) : (const void *)"", n);
    mp_pack_cstr(pk, "next");
    if (offset + n < len)
        msgpack_pack_uint64(pk, offset + n);
    else
        msgpack_pack_nil(pk);
}

/* One parameter value as text. */
static int value_text(const msgpack_object *v, char *buf, size_t cap)
{
    switch (v->type) {
    case MSGPACK_OBJECT_STR:
        if (v->via.str.size >= cap || memchr(v->via.str.ptr, '\0', v->via.str.size))
            return -1;
        memcpy(buf, v->via.str.ptr, v->via.str.size);
        buf[v->via.str.size] = '\0';
        return 0;
    case MSGPACK_OBJECT_POSITIVE_INTEGER:
        snprintf(buf, cap, "%" PRIu64, v->via.u64);
        return 0;
    case MSGPACK_OBJECT_NEGATIVE_INTEGER:
        snprintf(buf, cap, "%" PRId64, v->via.i64);
        return 0;
    case MSGPACK_OBJECT_FLOAT32:
    case MSGPACK_OBJECT_FLOAT64:
        if (!isfinite(v->via.f64))
            return -1;
        snprintf(buf, cap, "%.17g", v->via.f64);
        return 0;
    case MSGPACK_OBJECT_BOOLEAN:
        snprintf(buf, cap, "%d", v->via.boolean ? 1 : 0);
        return 0;
    default:
        return -1;
    }
}

int control_ops_jobs_parse_params(const msgpack_object *args, struct ga_job_params *p, char *err,
                                  size_t errlen)
{
    memset(p, 0, sizeof *p);
    const msgpack_object *o = mp_map_get(args, "params");
    if (!o || o->type == MSGPACK_OBJECT_NIL)
        return 0;
    if (o->type != MSGPACK_OBJECT_MAP) {
        snprintf(err, errlen, "'params' must be a map of name to value");
        return GA_EBADARG;
    }
    if (o->via.map.size > GA_JOB_MAX_PARAMS - 1) {
        snprintf(err, errlen, "'params': at most %d parameters, got %u", GA_JOB_MAX_PARAMS - 1,
                 o->via.map.size);
        return GA_EBADARG;
    }
    for (uint32_t i = 0; i < o->via.map.size; i++) {
        const msgpack_object *k = &o->via.map.ptr[i].key, *v = &o->via.map.ptr[i].val;
        if (k->type != MSGPACK_OBJECT_STR || k->via.str.size == 0 ||
            k->via.str.size >= GA_JOB_KEY_MAX || memchr(k->via.str.ptr, '\0', k->via.str.size)) {
            snprintf(err, errlen, "'params': names must be non-empty strings of at most %d bytes",
                     GA_JOB_KEY_MAX - 1);
            return GA_EBADARG;
        }
        char *key = p->kv[p->n].key;
        memcpy(key, k->via.str.ptr, k->via.str.size);
        key[k->via.str.size] = '\0';
        if (strcmp(key, JOB_KIND_INPUT_PATH) == 0) {
            snprintf(err, errlen, "param '%s' is reserved: give the file as job.submit's "
                     "input_path argument", key);
            return GA_EBADARG;
        }
        for (int j = 0; j < p->n; j++)
            if (strcmp(p->kv[j].key, key) == 0) {
                snprintf(err, errlen, "param '%s' given twice", key);
                return GA_EBADARG;
            }
        if (value_text(v, p->kv[p->n].value, GA_JOB_VALUE_MAX) < 0) {
            snprintf(err, errlen, "param '%s': the value must be a string (at most %d bytes), a "
                     "finite number or a boolean", key, GA_JOB_VALUE_MAX - 1);
            return GA_EBADARG;
        }
        p->n++;
    }
    return 0;
}

int control_ops_jobs_get_id(const msgpack_object *args, uint64_t *id, char *err, size_t errlen)
{
    int rc = mp_get_uint(args, "id", id);
    if (rc < 0 || *id == 0) {
        snprintf(err, errlen, "'id' %s", rc == GA_ENOENT ? "missing (the id job.submit returned)"
                                                          : "must be a positive integer");
        return GA_EBADARG;
    }
    return 0;
}

/* ---- status and stats ------------------------------------------------------- */

void control_ops_jobs_pack_status(struct ga_daemon *d, msgpack_packer *pk)
{
    struct ga_jobs_stats st = { 0 };
    if (d->jobs)
        ga_jobs_get_stats(d->jobs, &st);
    int nkinds = 0;
    for (const struct ga_job_kind *const *k = ga_job_kinds; *k; k++)
        nkinds++;
    msgpack_pack_map(pk, 13);
    mp_pack_kv_str(pk, "state", !d->jobs ? "stopped" : d->state == GA_STATE_DRAINING ? "draining"
                                                                                   : "running");
    mp_pack_kv_int(pk, "workers", d->cfg->jobs.workers);
    mp_pack_kv_int(pk, "max_queued", d->cfg->jobs.max_queued);
    mp_pack_kv_int(pk, "result_ttl_s", d->cfg->jobs.result_ttl_s);
    mp_pack_kv_uint(pk, "queued", st.queued);
    mp_pack_kv_uint(pk, "running", st.running);
    mp_pack_kv_uint(pk, "submitted", st.submitted);
    mp_pack_kv_uint(pk, "rejected", st.rejected);
    mp_pack_kv_uint(pk, "done", st.done);
    mp_pack_kv_uint(pk, "failed", st.failed);
    mp_pack_kv_uint(pk, "cancelled", st.cancelled);
    mp_pack_kv_uint(pk, "expired", st.expired);
    mp_pack_cstr(pk, "kinds");
    msgpack_pack_array(pk, (size_t)nkinds);
    for (const struct ga_job_kind *const *k = ga_job_kinds; *k; k++)
        mp_pack_cstr(pk, (*k)->name);
}
