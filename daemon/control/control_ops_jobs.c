/* control_ops_jobs.c — the job.* control ops (proto/PROTOCOL.md, "Jobs").
 *
 * On the loop thread only cheap things happen: argument checks, the kind's
 * parameter validation, queuing (daemon/jobs/jobs.c), copying small results.
 * An input_path is resolved (realpath, inside jobs.input_dirs) on libuv's
 * pool; the file itself is read by the job worker.  Big results are copied
 * on the control server's blocking threads.  job.submit {"wait": true}
 * answers when the job ends: a timer polls the waiting jobs' states.
 * job.result is in control_ops_jobs_result.c. */
#include <errno.h>
#include <inttypes.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "daemon/control/control_ops_jobs.h"
#include "daemon/daemon.h"
#include "daemon/jobs/job_kinds.h"
#include "proto/base/log.h"
#include "proto/ga_err.h"
#include "proto/mp_util.h"

#define PRIORITY_MAX 1000000
#define WAIT_TIMEOUT_MAX_MS 86400000u

/* ---- waiting for a job ----------------------------------------------------- */

struct waiter {
    struct ga_ctl_req *req;
    uint64_t id;
    struct waiter *next;
};

struct control_ops_jobs_waiters {
    uv_timer_t timer;                    /* first: closed with free */
    struct ga_daemon *d;
    struct waiter *head;
};

/* Reply to a waiter with its job's status (or an error) and free it. */
static void answer(struct waiter *w, int rc, const struct ga_job_info *info, const char *msg)
{
    msgpack_sbuffer sb;
    msgpack_packer pk;
    msgpack_sbuffer_init(&sb);
    msgpack_packer_init(&pk, &sb, msgpack_sbuffer_write);
    if (rc == 0)
        control_ops_jobs_pack_info(&pk, info);
    ga_ctl_reply(w->req, rc == 0 && !sb.data ? GA_ENOMEM : rc, &sb, msg);
    msgpack_sbuffer_destroy(&sb);
    free(w);
}

static void on_poll(uv_timer_t *t)
{
    struct control_ops_jobs_waiters *ws = t->data;
    for (struct waiter **pp = &ws->head; *pp;) {
        struct waiter *w = *pp;
        struct ga_job_info info;
        int rc = ws->d->jobs ? ga_jobs_info(ws->d->jobs, w->id, &info) : GA_ESHUTDOWN;
        if (rc == 0 && (info.state == GA_JOB_QUEUED || info.state == GA_JOB_RUNNING)) {
            pp = &w->next;
            continue;
        }
        *pp = w->next;
        char msg[128];
        snprintf(msg, sizeof msg, "job %" PRIu64 " is gone (%s)", w->id, ga_strerror(rc));
        answer(w, rc, &info, rc ? msg : NULL);
    }
    if (!ws->head)
        uv_timer_stop(t);
}

/* Wait for job id on req's behalf.  0 or GA_ENOMEM. */
static int add_waiter(struct ga_daemon *d, struct ga_ctl_req *req, uint64_t id)
{
    struct waiter *w = malloc(sizeof *w);
    if (!w)
        return GA_ENOMEM;
    if (!d->job_waiters) {
        struct control_ops_jobs_waiters *ws = calloc(1, sizeof *ws);
        if (!ws) {
            free(w);
            return GA_ENOMEM;
        }
        uv_timer_init(d->loop, &ws->timer);
        ws->timer.data = ws;
        ws->d = d;
        d->job_waiters = ws;
    }
    struct control_ops_jobs_waiters *ws = d->job_waiters;
    *w = (struct waiter){ req, id, ws->head };
    ws->head = w;
    if (!uv_is_active((uv_handle_t *)&ws->timer))
        uv_timer_start(&ws->timer, on_poll, CONTROL_OPS_JOBS_WAIT_POLL_MS, CONTROL_OPS_JOBS_WAIT_POLL_MS);
    return 0;
}

void control_ops_jobs_waiters_close(struct ga_daemon *d)
{
    struct control_ops_jobs_waiters *ws = d->job_waiters;
    if (!ws)
        return;
    while (ws->head) {
        struct waiter *w = ws->head;
        char msg[128];
        ws->head = w->next;
        snprintf(msg, sizeof msg, "the daemon is stopping: job %" PRIu64 " is cancelled", w->id);
        answer(w, GA_ESHUTDOWN, NULL, msg);
    }
    uv_close((uv_handle_t *)&ws->timer, (uv_close_cb)free);
    d->job_waiters = NULL;
}

/* ---- job.submit -------------------------------------------------------------- */

struct submit {
    uv_work_t work;                      /* input_path resolution on libuv's pool */
    struct ga_daemon *d;
    struct ga_ctl_req *req;
    char kind[32];
    struct ga_job_params params;
    const uint8_t *input;                /* inline input (points into args: only used at once) */
    size_t input_len;
    int64_t priority;
    int wait;
    char path[PATH_MAX], resolved[PATH_MAX];
    int ndirs;
    char dirs[8][GA_PATH_MAX];
    int rc;
    char err[1024];
};


static int not_found(struct ga_daemon *d, uint64_t id, char *err, size_t errlen)
{
    snprintf(err, errlen, "no job %" PRIu64 " (unknown, or finished more than jobs.result_ttl_s = "
             "%d s ago)", id, d->cfg->jobs.result_ttl_s);
    return GA_ENOENT;
}

/* Queue s's job.  0 with *id, or GA_E* with s->err. */
static int queue_job(struct submit *s, uint64_t *id)
{
    if (!s->d->jobs || s->d->state == GA_STATE_DRAINING) {
        snprintf(s->err, sizeof s->err, "the daemon is shutting down");
        return GA_ESHUTDOWN;
    }
    return ga_jobs_submit(s->d->jobs, s->kind, &s->params, s->input, s->input_len,
                          (int)s->priority, id, s->err, sizeof s->err);
}

/* Refuse s->path: the client is told only that (whether the path exists,
 * where a link leads or why it could not be read would tell it about files
 * it may not see); the reason goes to the daemon's log. */
static void refuse_path(struct submit *s, const char *why)
{
    char list[512] = "";
    for (int i = 0; i < s->ndirs; i++)
        snprintf(list + strlen(list), sizeof list - strlen(list), "%s%s", i ? ", " : "",
                 s->dirs[i]);
    ga_log(GA_LOG_INFO, "job_input_refused", "path=\"%.300s\" reason=\"%s\"", s->path, why);
    snprintf(s->err, sizeof s->err, "input_path '%.300s' refused: jobs read only readable "
             "regular files inside jobs.input_dirs (%.300s)", s->path, list);
    s->rc = GA_EBADARG;
}

/* libuv pool: realpath, inside one of the input dirs, a readable regular
 * file. */
static void resolve_work(uv_work_t *w)
{
    struct submit *s = w->data;
    struct stat sb;
    if (!realpath(s->path, s->resolved)) {
        refuse_path(s, strerror(errno));
        return;
    }
    size_t rl = strlen(s->resolved);
    for (int i = 0; i < s->ndirs; i++) {
        char dir[PATH_MAX];
        if (!realpath(s->dirs[i], dir))
            continue;
        size_t dl = strlen(dir);
        if (strncmp(s->resolved, dir, dl) == 0 && rl > dl &&
            (s->resolved[dl] == '/' || (dl == 1 && dir[0] == '/'))) {
            if (stat(s->resolved, &sb) < 0 || !S_ISREG(sb.st_mode))
                refuse_path(s, "not a regular file");
            else if (access(s->resolved, R_OK) < 0)
                refuse_path(s, strerror(errno));
            return;
        }
    }
    refuse_path(s, "outside jobs.input_dirs");
}

static void reply_id(struct ga_ctl_req *req, uint64_t id)
{
    msgpack_sbuffer sb;
    msgpack_packer pk;
    msgpack_sbuffer_init(&sb);
    msgpack_packer_init(&pk, &sb, msgpack_sbuffer_write);
    msgpack_pack_map(&pk, 1);
    mp_pack_kv_uint(&pk, "id", id);
    ga_ctl_reply(req, sb.data ? 0 : GA_ENOMEM, &sb, NULL);
    msgpack_sbuffer_destroy(&sb);
}

/* Loop: the path is resolved (or not); queue the job and answer or wait. */
static void resolve_after(uv_work_t *w, int status)
{
    struct submit *s = w->data;
    uint64_t id = 0;
    int rc = s->rc;
    if (rc == 0 && status < 0) {
        snprintf(s->err, sizeof s->err, "input_path: %s", uv_strerror(status));
        rc = GA_ESHUTDOWN;
    }
    if (rc == 0) {
        struct ga_job_params *p = &s->params;
        size_t rl = strlen(s->resolved);
        if (rl >= GA_JOB_VALUE_MAX) {
            snprintf(s->err, sizeof s->err, "input_path: the resolved path is longer than %d "
                     "bytes", GA_JOB_VALUE_MAX - 1);
            rc = GA_EBADARG;
        } else {
            snprintf(p->kv[p->n].key, GA_JOB_KEY_MAX, "%s", JOB_KIND_INPUT_PATH);
            memcpy(p->kv[p->n].value, s->resolved, rl + 1);
            p->n++;
            rc = queue_job(s, &id);
        }
    }
    if (rc < 0)
        ga_ctl_reply(s->req, rc, NULL, s->err);
    else if (!s->wait)
        reply_id(s->req, id);
    else if ((rc = add_waiter(s->d, s->req, id)) < 0)
        ga_ctl_reply(s->req, rc, NULL, "out of memory waiting for the job");
    free(s);
}

/* Arguments of job.submit into s.  0 or GA_EBADARG with err. */
static int parse_submit(struct ga_daemon *d, const msgpack_object *args, struct submit *s,
                        uint64_t *timeout_ms, char *err, size_t errlen)
{
    const char *kind;
    size_t klen;
    int rc = mp_get_str(args, "kind", &kind, &klen);
    if (rc < 0 || klen == 0 || klen >= sizeof s->kind) {
        snprintf(err, errlen, "'kind' %s", rc == GA_ENOENT ? "missing (resample, kmeans, ...)"
                                                            : "must be a short string");
        return GA_EBADARG;
    }
    memcpy(s->kind, kind, klen);
    if ((rc = control_ops_jobs_parse_params(args, &s->params, err, errlen)) < 0)
        return rc;
    rc = mp_get_int(args, "priority", &s->priority);
    if ((rc < 0 && rc != GA_ENOENT) || s->priority < -PRIORITY_MAX || s->priority > PRIORITY_MAX) {
        snprintf(err, errlen, "'priority' must be an integer in %d..%d (higher runs first)",
                 -PRIORITY_MAX, PRIORITY_MAX);
        return GA_EBADARG;
    }
    rc = mp_get_bool(args, "wait", &s->wait);
    if (rc < 0 && rc != GA_ENOENT) {
        snprintf(err, errlen, "'wait' must be a boolean");
        return GA_EBADARG;
    }
    rc = mp_get_uint(args, "timeout_ms", timeout_ms);
    if ((rc < 0 && rc != GA_ENOENT) || *timeout_ms > WAIT_TIMEOUT_MAX_MS) {
        snprintf(err, errlen, "'timeout_ms' must be an integer 0..%u (milliseconds)",
                 WAIT_TIMEOUT_MAX_MS);
        return GA_EBADARG;
    }
    const msgpack_object *in = mp_map_get(args, "input");
    if (in && in->type == MSGPACK_OBJECT_BIN) {
        s->input = (const uint8_t *)in->via.bin.ptr;
        s->input_len = in->via.bin.size;
    } else if (in && in->type == MSGPACK_OBJECT_STR) {
        s->input = (const uint8_t *)in->via.str.ptr;
        s->input_len = in->via.str.size;
    } else if (in && in->type != MSGPACK_OBJECT_NIL) {
        snprintf(err, errlen, "'input' must be bin (or str): the input bytes");
        return GA_EBADARG;
    }
    const char *path;
    size_t plen;
    rc = mp_get_str(args, "input_path", &path, &plen);
    if (rc == GA_ENOENT)
        return 0;
    if (rc < 0 || plen == 0 || plen >= sizeof s->path || path[0] != '/' ||
        memchr(path, '\0', plen)) {
        snprintf(err, errlen, "'input_path' must be an absolute path");
        return GA_EBADARG;
    }
    if (in && in->type != MSGPACK_OBJECT_NIL) {
        snprintf(err, errlen, "give 'input' or 'input_path', not both");
        return GA_EBADARG;
    }
    if (d->cfg->jobs.ninput_dirs == 0) {
        snprintf(err, errlen, "'input_path': jobs may read no files here (jobs.input_dirs is "
                 "empty in %s); send the input inline", d->config_path);
        return GA_EBADARG;
    }
    memcpy(s->path, path, plen);
    s->ndirs = d->cfg->jobs.ninput_dirs;
    memcpy(s->dirs, d->cfg->jobs.input_dirs, sizeof s->dirs);
    return 0;
}

int ga_ctl_op_job_submit(struct ga_daemon *d, const msgpack_object *args, struct ga_ctl_req *req,
                         msgpack_packer *pk, char *err, size_t errlen)
{
    uint64_t timeout_ms = 0, id;
    struct submit *s = calloc(1, sizeof *s);
    if (!s)
        return GA_ENOMEM;
    s->d = d;
    s->req = req;
    int rc = parse_submit(d, args, s, &timeout_ms, err, errlen);
    if (rc < 0)
        goto fail;
    if (s->wait && timeout_ms) {
        char msg[128];
        snprintf(msg, sizeof msg, "the job did not finish within %" PRIu64 " ms (it goes on: "
                 "see job.status)", timeout_ms);
        ga_ctl_set_timeout(req, timeout_ms, msg);
    }
    if (s->path[0]) {
        /* Let the kind check its params now, before the path is resolved. */
        if (!d->jobs) {
            snprintf(err, errlen, "the daemon is shutting down");
            rc = GA_ESHUTDOWN;
            goto fail;
        }
        s->work.data = s;
        if ((rc = uv_queue_work(d->loop, &s->work, resolve_work, resolve_after)) < 0) {
            snprintf(err, errlen, "input_path: %s", uv_strerror(rc));
            rc = GA_ENOMEM;
            goto fail;
        }
        return GA_CTL_DEFERRED;
    }
    if ((rc = queue_job(s, &id)) < 0) {
        snprintf(err, errlen, "%s", s->err);
        goto fail;
    }
    if (s->wait) {
        rc = add_waiter(d, req, id);
        free(s);
        return rc < 0 ? rc : GA_CTL_DEFERRED;
    }
    free(s);
    msgpack_pack_map(pk, 1);
    mp_pack_kv_uint(pk, "id", id);
    return 0;
fail:
    free(s);
    return rc;
}

/* ---- job.status, job.cancel, job.list ----------------------------------------- */

int ga_ctl_op_job_status(struct ga_daemon *d, const msgpack_object *args, struct ga_ctl_req *req,
                         msgpack_packer *pk, char *err, size_t errlen)
{
    uint64_t id;
    struct ga_job_info info;
    int rc = control_ops_jobs_get_id(args, &id, err, errlen);
    if (rc < 0)
        return rc;
    if (!d->jobs)
        return GA_ESHUTDOWN;
    if (ga_jobs_info(d->jobs, id, &info) < 0)
        return not_found(d, id, err, errlen);
    control_ops_jobs_pack_info(pk, &info);
    return 0;
}

int ga_ctl_op_job_cancel(struct ga_daemon *d, const msgpack_object *args, struct ga_ctl_req *req,
                         msgpack_packer *pk, char *err, size_t errlen)
{
    uint64_t id;
    struct ga_job_info info;
    int rc = control_ops_jobs_get_id(args, &id, err, errlen);
    if (rc < 0)
        return rc;
    if (!d->jobs)
        return GA_ESHUTDOWN;
    rc = ga_jobs_cancel(d->jobs, id);
    if (rc == GA_ENOENT || (rc == 0 && ga_jobs_info(d->jobs, id, &info) < 0))
        return not_found(d, id, err, errlen);
    if (rc == GA_EINVAL) {
        ga_jobs_info(d->jobs, id, &info);
        snprintf(err, errlen, "job %" PRIu64 " already finished (%s)", id,
                 ga_job_state_name(info.state));
        return rc;
    }
    if (rc < 0)
        return rc;
    msgpack_pack_map(pk, 2);
    mp_pack_kv_uint(pk, "id", id);
    mp_pack_kv_str(pk, "state", ga_job_state_name(info.state));
    return 0;
}

int ga_ctl_op_job_list(struct ga_daemon *d, const msgpack_object *args, struct ga_ctl_req *req,
                       msgpack_packer *pk, char *err, size_t errlen)
{
    struct ga_job_info *all;
    size_t n;
    const char *state = NULL, *kind = NULL;
    size_t slen = 0, klen = 0;
    if ((mp_get_str(args, "state", &state, &slen) == GA_EBADARG) ||
        (mp_get_str(args, "kind", &kind, &klen) == GA_EBADARG)) {
        snprintf(err, errlen, "'state' and 'kind' must be strings");
        return GA_EBADARG;
    }
    if (!d->jobs)
        return GA_ESHUTDOWN;
    int rc = ga_jobs_list(d->jobs, &all, &n);
    if (rc < 0)
        return rc;
    msgpack_sbuffer sb;
    msgpack_packer epk;
    msgpack_sbuffer_init(&sb);
    msgpack_packer_init(&epk, &sb, msgpack_sbuffer_write);
    size_t k = 0, kept = 0;
    for (size_t i = 0; i < n; i++) {
        const char *st = ga_job_state_name(all[i].state);
        if ((state && (strlen(st) != slen || memcmp(st, state, slen))) ||
            (kind && (strlen(all[i].kind) != klen || memcmp(all[i].kind, kind, klen))))
            continue;
        control_ops_jobs_pack_info(&epk, &all[i]);
        if (sb.size > CONTROL_OPS_JOBS_LIST_BUDGET)
            break;                       /* the oldest are left out (documented) */
        kept = sb.size;
        k++;
    }
    msgpack_pack_array(pk, k);
    if (kept)
        msgpack_pack_str_body(pk, sb.data, kept);    /* the raw bytes of the k entries */
    msgpack_sbuffer_destroy(&sb);
    free(all);
    return 0;
}
