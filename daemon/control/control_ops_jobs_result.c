/* control_ops_jobs_result.c — job.result (proto/PROTOCOL.md, "Jobs"): the
 * result object as the kind packed it, or a chunk of its bytes.  A result
 * over RESULT_ON_LOOP_MAX bytes is copied on the control server's blocking
 * threads, not on the loop. */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>

#include "daemon/control/control_ops_jobs.h"
#include "daemon/daemon.h"
#include "proto/ga_err.h"
#include "proto/mp_util.h"

#define RESULT_ON_LOOP_MAX (64 * 1024)

struct result_job {
    struct ga_ctl_req *req;
    struct ga_jobs *jobs;
    uint64_t id, offset;
    int chunked, ttl_s;
};

/* The result of r->id into sb, or an error; any thread. */
static int fetch_result(struct ga_jobs *jobs, uint64_t id, int chunked, uint64_t offset,
                        int ttl_s, msgpack_packer *pk, char *err, size_t errlen)
{
    uint8_t *bytes = NULL;
    size_t len = 0;
    struct ga_job_info info;
    int rc = ga_jobs_result(jobs, id, &bytes, &len, &info);
    if (rc == GA_ENOENT)
        snprintf(err, errlen, "no job %" PRIu64 " (unknown, or finished more than "
                 "jobs.result_ttl_s = %d s ago)", id, ttl_s);
    else if (rc == GA_EAGAIN)
        snprintf(err, errlen, "job %" PRIu64 " is %s (%.0f%%): no result yet", id,
                 ga_job_state_name(info.state), info.progress);
    else if (rc == GA_ECANCELED)
        snprintf(err, errlen, "job %" PRIu64 " was cancelled", id);
    else if (rc < 0)
        snprintf(err, errlen, "job %" PRIu64 " failed: %s", id,
                 info.error[0] ? info.error : ga_strerror(rc));
    else if (chunked && offset > len) {
        snprintf(err, errlen, "'offset' %" PRIu64 " is past the result's %zu bytes", offset, len);
        rc = GA_EBADARG;
    } else if (chunked)
        control_ops_jobs_pack_chunk(pk, bytes, len, offset, CONTROL_OPS_JOBS_CHUNK);
    else if (len > CONTROL_OPS_JOBS_CHUNK) {
        snprintf(err, errlen, "the result of job %" PRIu64 " is %zu bytes, over one response: "
                 "read it in chunks with {\"id\": %" PRIu64 ", \"offset\": 0}", id, len, id);
        rc = GA_ETOOBIG;
    } else
        msgpack_pack_str_body(pk, bytes, len);      /* the result object as the kind packed it */
    free(bytes);
    return rc;
}

static void result_run(void *arg)
{
    struct result_job *j = arg;
    char err[640] = "";
    msgpack_sbuffer sb;
    msgpack_packer pk;
    msgpack_sbuffer_init(&sb);
    msgpack_packer_init(&pk, &sb, msgpack_sbuffer_write);
    int rc = fetch_result(j->jobs, j->id, j->chunked, j->offset, j->ttl_s, &pk, err, sizeof err);
    ga_ctl_reply(j->req, rc, &sb, rc < 0 ? err : NULL);
    msgpack_sbuffer_destroy(&sb);
    free(j);
}

int ga_ctl_op_job_result(struct ga_daemon *d, const msgpack_object *args, struct ga_ctl_req *req,
                         msgpack_packer *pk, char *err, size_t errlen)
{
    uint64_t id, offset = 0;
    struct ga_job_info info;
    int rc = control_ops_jobs_get_id(args, &id, err, errlen);
    if (rc < 0)
        return rc;
    rc = mp_get_uint(args, "offset", &offset);
    int chunked = rc == 0;
    if (rc < 0 && rc != GA_ENOENT) {
        snprintf(err, errlen, "'offset' must be a non-negative integer (bytes)");
        return GA_EBADARG;
    }
    if (!d->jobs)
        return GA_ESHUTDOWN;
    int ttl = d->cfg->jobs.result_ttl_s;
    if (ga_jobs_info(d->jobs, id, &info) < 0 || info.result_len <= RESULT_ON_LOOP_MAX)
        return fetch_result(d->jobs, id, chunked, offset, ttl, pk, err, errlen);
    /* Copying a big result: not on the loop.  The manager outlives the
     * control server's threads (ga_job_service_stop runs after the loop). */
    struct result_job *j = malloc(sizeof *j);
    if (!j)
        return GA_ENOMEM;
    *j = (struct result_job){ req, d->jobs, id, offset, chunked, ttl };
    if ((rc = ga_ctl_run_blocking(req, result_run, j)) < 0) {
        free(j);
        snprintf(err, errlen, "%s", rc == GA_EBUSY ? "too many requests queued" : ga_strerror(rc));
        return rc;
    }
    return GA_CTL_DEFERRED;
}
