/* cluster.c — cluster mode's ownership and worker swaps (cluster.h). */
#include "daemon/cluster.h"

#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "daemon/daemon.h"
#include "daemon/engine_worker.h"
#include "proto/base/log.h"
#include "gpu/engine.h"
#include "proto/ga_err.h"
#include "proto/mp_util.h"
#include "storage/js_log.h"
#include "storage/pg_members.h"

struct ga_cluster {
    struct ga_daemon *d;
    struct js_log *jsl;
    struct ga_pipeline *pl;
    struct pg_members *pgm;
    char member[64];
    int heartbeat_ms, timeout_ms;
    pthread_t thread;
    pthread_mutex_t mu;               /* guards the fields below it */
    pthread_cond_t cv;
    int stop;
    uint64_t want;                    /* the partitions we should own */
    uint64_t have;                    /* the running worker's */
    uint64_t last_share;              /* the share the last heartbeat computed */
    int have_view;
    struct pg_members_view view;
    char last_error[600];
    int64_t last_ok_ns;               /* last successful heartbeat (monotonic) */
    uint64_t swaps;
    /* loop thread only */
    uv_async_t async;
    uv_work_t work;
    int swapping, frozen, fatal_seen;
    struct ga_engine_worker *old_w, *new_w;
    uint64_t swap_to;
    int swap_rc;
    int stop_timeout_ms;
    uint64_t stream_last;             /* the stream's last sequence, asked each heartbeat
                                         (0: unknown); guarded by mu */
    char stream_leader[64];           /* the server leading the stream, as last asked (mu) */
    uint64_t last_processed;          /* the worker's position, and since when */
    int64_t last_progress_ns;
    /* heartbeat thread only */
    char stream[64];
    int verified;                     /* database and stream found to belong together */
    /* guarded by mu: a reason to stop the daemon (name taken, identity) */
    int fatal_rc;
    char fatal_msg[512];
};

#define DESC_PREFIX "gpuagg database "

#define STALL_RESTART_NS (10LL * 1000000000)  /* no progress with messages due: restart */

static void free_cluster(uv_handle_t *h);

/* The identity check (docs/CLUSTER.md "Identity"): the stream's
 * description names the database its members share, and the database
 * names the stream its positions are of.  The first daemon records both;
 * a daemon whose database and stream do not belong together refuses.
 * Returns 0 (they belong together), GA_EAGAIN (recorded now: looked at
 * again next time), GA_ECONFIG with err, or pg_members's errors. */
static int check_identity(struct ga_cluster *c, const struct js_log_stream_info *si, char *err,
                          size_t errlen)
{
    const struct pg_members_identity *id = pg_members_identity(c->pgm);
    if (!id)
        return ga_fail(GA_EIO, err, errlen, "not connected to PostgreSQL");
    char want[256];
    snprintf(want, sizeof want, DESC_PREFIX "%s", id->database_id);
    if (!si->description[0]) {
        /* a stream without a description (one this daemon just made, or one
         * made without it): it records our database and is ours */
        int rc = js_log_stream_describe(c->jsl, want, c->heartbeat_ms);
        if (rc < 0)
            return ga_fail(rc, err, errlen, "cannot record the database in stream %s's "
                           "description", c->stream);
        ga_log(GA_LOG_INFO, "cluster_stream_described", "stream=%s description=\"%s\"",
               c->stream, want);
        return GA_EAGAIN;
    }
    if (strcmp(si->description, want) != 0) {
        if (strncmp(si->description, DESC_PREFIX, strlen(DESC_PREFIX)) == 0)
            return ga_fail(GA_ECONFIG, err, errlen, "stream %s belongs to the cluster whose "
                           "database has id %s, but storage.conninfo leads to the database "
                           "with id %s: every daemon of a cluster must use the same database "
                           "(or, for a cluster of its own, another cluster.stream)", c->stream,
                           si->description + strlen(DESC_PREFIX), id->database_id);
        return ga_fail(GA_ECONFIG, err, errlen, "stream %s has the description \"%s\", not "
                       "gpuagg's: another application's stream? (set cluster.stream)",
                       c->stream, si->description);
    }
    if (!id->stream[0]) {
        char e[256];
        int rc = pg_members_claim_stream(c->pgm, c->stream, si->created_ns, e, sizeof e);
        if (rc < 0)
            return ga_fail(rc, err, errlen, "recording the stream in cluster_identity: %s", e);
        id = pg_members_identity(c->pgm);
        if (!id)
            return ga_fail(GA_EIO, err, errlen, "not connected to PostgreSQL");
    }
    if (strcmp(id->stream, c->stream) != 0)
        return ga_fail(GA_ECONFIG, err, errlen, "this database holds the positions of stream "
                       "%s, but cluster.stream is %s: every daemon of a cluster must use the "
                       "same stream (a database serves one cluster)", id->stream, c->stream);
    if (id->stream_created_ns != si->created_ns)
        return ga_fail(GA_ECONFIG, err, errlen, "stream %s was created at %lld ns, but the "
                       "positions in this database are of a stream %s created at %lld ns: "
                       "the stream was deleted and made again (its sequences start over), or "
                       "this is another NATS cluster's stream", c->stream,
                       (long long)si->created_ns, c->stream, (long long)id->stream_created_ns);
    return 0;
}

/* A reason to stop: the loop thread drains the daemon and exits 1. */
static void set_fatal(struct ga_cluster *c, int rc, const char *msg)
{
    pthread_mutex_lock(&c->mu);
    if (!c->fatal_rc) {
        c->fatal_rc = rc;
        snprintf(c->fatal_msg, sizeof c->fatal_msg, "%s", msg);
    }
    c->want = 0;
    pthread_mutex_unlock(&c->mu);
}

/* One round before the heartbeat: connect (the member name's lock), ask
 * the stream, check the identity while not yet verified (and whenever the
 * stream answered).  0, or GA_E* with err. */
static int prepare(struct ga_cluster *c, int timeout_ms, struct js_log_stream_info *si, int *have_si,
                   char *err, size_t errlen)
{
    int rc = pg_members_connect(c->pgm, err, errlen);
    const struct pg_members_identity *id = rc == 0 ? pg_members_identity(c->pgm) : NULL;
    if (id) {
        char desc[256];
        snprintf(desc, sizeof desc, DESC_PREFIX "%s", id->database_id);
        js_log_set_description(c->jsl, desc);       /* for a stream we create */
    }
    *have_si = js_log_stream_info(c->jsl, si, timeout_ms) == 0;
    if (rc < 0)
        return rc;
    if (*have_si) {
        rc = check_identity(c, si, err, errlen);
        if (rc == 0 && !c->verified) {
            c->verified = 1;
            ga_log(GA_LOG_INFO, "cluster_identity_checked", "stream=%s database_id=%s",
                   c->stream, id->database_id);
        }
        if (rc < 0 && rc != GA_EAGAIN)
            return rc;
    }
    if (!c->verified)
        return ga_fail(GA_EAGAIN, err, errlen, "waiting for the stream %s to check that it "
                       "and the database belong together", c->stream);
    return 0;
}

static void *heartbeat_main(void *arg)
{
    struct ga_cluster *c = arg;
    pthread_mutex_lock(&c->mu);
    while (!c->stop && !c->fatal_rc) {
        uint64_t have = c->have;
        pthread_mutex_unlock(&c->mu);
        struct js_log_stats js;
        js_log_get_stats(c->jsl, &js);
        struct pg_members_view v;
        char err[512] = "";
        struct js_log_stream_info si;
        int have_si;
        int rc = prepare(c, c->heartbeat_ms / 4 + 1, &si, &have_si, err, sizeof err);
        if (rc == GA_EEXIST || rc == GA_ECONFIG) {
            set_fatal(c, rc, err);
            uv_async_send(&c->async);
            pthread_mutex_lock(&c->mu);
            break;
        }
        if (rc == 0)
            rc = pg_members_heartbeat(c->pgm, have, js.stream_last_seq, c->timeout_ms, &v, err,
                               sizeof err);
        int64_t now = ga_now_mono_ns();
        pthread_mutex_lock(&c->mu);
        c->stream_last = have_si ? si.last_seq : 0;
        if (have_si)
            snprintf(c->stream_leader, sizeof c->stream_leader, "%s", si.leader);
        uint64_t want = c->want;
        if (rc == 0) {
            c->view = v;
            c->have_view = 1;
            c->last_ok_ns = now;
            c->last_error[0] = '\0';
            /* A new share is taken once two heartbeats in a row computed
             * it: a member restarting within a heartbeat, or one heartbeat
             * read just too late, does not move partitions back and forth. */
            uint64_t share = pg_members_share(&v);
            if (share == c->last_share)
                want = share;
            c->last_share = share;
        } else {
            char line[sizeof c->last_error];
            snprintf(line, sizeof line, "heartbeat: %s", err);
            if (strcmp(c->last_error, line) != 0)   /* once per distinct error */
                ga_log(GA_LOG_WARN, "cluster_heartbeat_failed", "error=\"%s\"", err);
            snprintf(c->last_error, sizeof c->last_error, "%s", line);
            if (!c->verified || now - c->last_ok_ns > (int64_t)c->timeout_ms * 1000000)
                want = 0;              /* the others think we are dead: let go */
        }
        if (want != c->want) {
            ga_log(GA_LOG_INFO, "cluster_assignment", "member=%s live=%d index=%d "
                   "partitions=%d parts=0x%016llx", c->member, rc == 0 ? v.nlive : 0,
                   rc == 0 ? v.self_index : -1, __builtin_popcountll(want),
                   (unsigned long long)want);
            c->want = want;
        }
        pthread_mutex_unlock(&c->mu);
        uv_async_send(&c->async);      /* the loop compares and checks the fence */
        pthread_mutex_lock(&c->mu);
        struct timespec ts;
        clock_gettime(CLOCK_REALTIME, &ts);
        int64_t ns = ts.tv_nsec + (int64_t)c->heartbeat_ms * 1000000;
        ts.tv_sec += ns / 1000000000;
        ts.tv_nsec = ns % 1000000000;
        if (!c->stop)
            pthread_cond_timedwait(&c->cv, &c->mu, &ts);
    }
    pthread_mutex_unlock(&c->mu);
    return NULL;
}

/* ---- worker swaps (loop thread + pool) ------------------------------------ */

static void swap_work(uv_work_t *w)
{
    struct ga_cluster *c = w->data;
    if (c->old_w)                      /* window sets committed, locks released; a fenced
                                          writer cannot commit: do not wait long for it */
        engine_worker_stop(c->old_w, c->stop_timeout_ms);
    c->old_w = NULL;
    c->new_w = NULL;
    c->swap_rc = 0;
    if (!c->swap_to)
        return;
    c->swap_rc = engine_worker_start_cluster(&c->new_w, c->d, c->pl, c->jsl, c->swap_to);
}

static void check(struct ga_cluster *c);

static void swap_after(uv_work_t *w, int status)
{
    struct ga_cluster *c = w->data;
    c->swapping = 0;
    if (c->swap_rc < 0) {
        ga_log(GA_LOG_ERROR, "cluster_worker_start_failed", "error=\"%s\" msg=\"retrying at "
               "the next heartbeat\"", ga_strerror(c->swap_rc));
        pthread_mutex_lock(&c->mu);
        c->have = 0;
        pthread_mutex_unlock(&c->mu);
        return;
    }
    c->d->worker = c->new_w;
    c->new_w = NULL;
    pthread_mutex_lock(&c->mu);
    c->have = c->swap_to;
    c->swaps++;
    pthread_mutex_unlock(&c->mu);
    check(c);
}

/* Replace the worker when the assignment moved or a writer was fenced. */
static void check(struct ga_cluster *c)
{
    if (c->swapping || c->frozen)
        return;
    pthread_mutex_lock(&c->mu);
    uint64_t want = c->want, have = c->have;
    pthread_mutex_unlock(&c->mu);
    int fenced = 0, stalled = 0;
    if (c->d->worker) {
        struct engine_worker_status st;
        engine_worker_get_status(c->d->worker, &st);
        fenced = st.have_writer && st.writer.fenced;
        /* A worker whose stream position stays put while the stream holds
         * messages past it is stuck (seen after quick successive swaps):
         * replace it; it restarts from the committed positions. */
        int64_t now = ga_now_mono_ns();
        pthread_mutex_lock(&c->mu);
        uint64_t last = c->stream_last;
        pthread_mutex_unlock(&c->mu);
        if (st.state != ENGINE_WORKER_RUNNING || st.processed_lsn != c->last_processed || last == 0 ||
            last < st.processed_lsn) {          /* moving, or nothing due */
            c->last_processed = st.processed_lsn;
            c->last_progress_ns = now;
        } else if (now - c->last_progress_ns > STALL_RESTART_NS) {
            stalled = 1;
            c->last_progress_ns = now;
            ga_log(GA_LOG_WARN, "cluster_worker_stalled", "processed_seq=%llu stream_last_seq=%llu "
                   "msg=\"no progress for 10 s with messages due: restarting the worker\"",
                   (unsigned long long)st.processed_lsn, (unsigned long long)last);
        }
    }
    if (want == have && !fenced && !stalled && (c->d->worker || !want))
        return;
    if (fenced)
        ga_log(GA_LOG_WARN, "cluster_fenced", "parts=0x%016llx msg=\"a writer lost its session "
               "and locks: restarting on the current assignment\"", (unsigned long long)have);
    c->swapping = 1;
    c->old_w = c->d->worker;
    c->d->worker = NULL;
    c->swap_to = want;
    c->stop_timeout_ms = fenced ? 1000 : 10000;
    c->work.data = c;
    if (uv_queue_work(c->d->loop, &c->work, swap_work, swap_after) < 0) {
        c->d->worker = c->old_w;
        c->old_w = NULL;
        c->swapping = 0;
    }
}

static void on_async(uv_async_t *a)
{
    struct ga_cluster *c = a->data;
    char msg[sizeof c->fatal_msg];
    pthread_mutex_lock(&c->mu);
    int fatal = c->fatal_rc;
    snprintf(msg, sizeof msg, "%s", c->fatal_msg);
    pthread_mutex_unlock(&c->mu);
    if (fatal && !c->fatal_seen) {
        c->fatal_seen = 1;
        ga_log(GA_LOG_ERROR, "cluster_refused", "error=\"%s\" action=\"exit 1\"", msg);
        c->d->exit_code = 1;
        ga_daemon_shutdown(c->d, "cluster refused");
    }
    check(c);
}

int ga_cluster_start(struct ga_cluster **out, struct ga_daemon *d, struct js_log *jsl,
                     struct ga_pipeline *pl, char *err, size_t errlen)
{
    struct ga_cluster *c = calloc(1, sizeof *c);
    if (!c)
        return GA_ENOMEM;
    const struct ga_config *cfg = d->cfg;
    c->d = d;
    c->jsl = jsl;
    c->pl = pl;
    c->heartbeat_ms = cfg->cluster.heartbeat_ms;
    c->timeout_ms = cfg->cluster.member_timeout_ms;
    snprintf(c->member, sizeof c->member, "%s", cfg->cluster.member);
    if (!c->member[0] && gethostname(c->member, sizeof c->member) != 0)
        snprintf(c->member, sizeof c->member, "gpuaggd");
    c->member[sizeof c->member - 1] = '\0';
    c->last_ok_ns = ga_now_mono_ns();
    snprintf(c->stream, sizeof c->stream, "%s", cfg->cluster.stream);
    int rc = pg_members_open(&c->pgm, cfg->storage.conninfo, c->member);
    if (rc < 0) {
        free(c);
        return ga_fail(rc, err, errlen, "cluster: %s", ga_strerror(rc));
    }
    pthread_mutex_init(&c->mu, NULL);
    pthread_cond_init(&c->cv, NULL);
    /* Refuse at once what can be seen now: the member name in use, a
     * database and a stream that do not belong together.  PostgreSQL or
     * NATS not answering yet: the heartbeat thread checks before the daemon
     * joins, and stops the daemon if it must. */
    struct js_log_stream_info si;
    int have_si;
    char why[512] = "";
    rc = prepare(c, 2000, &si, &have_si, why, sizeof why);
    if (rc == GA_EEXIST || rc == GA_ECONFIG) {
        pg_members_close(c->pgm, 0);
        pthread_mutex_destroy(&c->mu);
        pthread_cond_destroy(&c->cv);
        free(c);
        return ga_fail(rc, err, errlen, "cluster: %s", why);
    }
    if (rc < 0)
        ga_log(GA_LOG_INFO, "cluster_check_deferred", "reason=\"%s\"", why);
    uv_async_init(d->loop, &c->async, on_async);
    c->async.data = c;
    if (pthread_create(&c->thread, NULL, heartbeat_main, c) != 0) {
        pg_members_close(c->pgm, 0);
        uv_close((uv_handle_t *)&c->async, free_cluster);
        return GA_ENOMEM;
    }
    ga_log(GA_LOG_INFO, "cluster_member", "member=%s heartbeat_ms=%d member_timeout_ms=%d",
           c->member, c->heartbeat_ms, c->timeout_ms);
    *out = c;
    return 0;
}

int ga_cluster_busy(struct ga_cluster *c)
{
    return c && c->swapping;
}

void ga_cluster_freeze(struct ga_cluster *c)
{
    if (c)
        c->frozen = 1;
}

static void free_cluster(uv_handle_t *h)
{
    struct ga_cluster *c = h->data;
    pthread_mutex_destroy(&c->mu);
    pthread_cond_destroy(&c->cv);
    free(c);
}

void ga_cluster_stop(struct ga_cluster *c, int leave)
{
    if (!c)
        return;
    pthread_mutex_lock(&c->mu);
    c->stop = 1;
    pthread_cond_broadcast(&c->cv);
    pthread_mutex_unlock(&c->mu);
    pthread_join(c->thread, NULL);
    pg_members_close(c->pgm, leave);
    uv_close((uv_handle_t *)&c->async, free_cluster);
}

/* ---- status ------------------------------------------------------------------ */

static void pack_parts(msgpack_packer *pk, uint64_t mask)
{
    msgpack_pack_array(pk, (size_t)__builtin_popcountll(mask));
    for (int p = 0; p < GA_PARTITIONS; p++)
        if (mask >> p & 1)
            msgpack_pack_int(pk, p);
}

void ga_cluster_pack_status(struct ga_cluster *c, msgpack_packer *pk)
{
    struct js_log_stats js;
    js_log_get_stats(c->jsl, &js);
    pthread_mutex_lock(&c->mu);
    struct pg_members_view v = c->view;
    int have_view = c->have_view;
    uint64_t want = c->want, have = c->have, swaps = c->swaps;
    char last_error[sizeof c->last_error], leader[sizeof c->stream_leader];
    snprintf(last_error, sizeof last_error, "%s", c->last_error);
    snprintf(leader, sizeof leader, "%s", c->stream_leader);
    pthread_mutex_unlock(&c->mu);
    uint64_t last = js.stream_last_seq;
    for (int i = 0; i < v.nmembers; i++)
        if (v.members[i].stream_seq > last)
            last = v.members[i].stream_seq;
    msgpack_pack_map(pk, 8);
    mp_pack_kv_str(pk, "member", c->member);
    mp_pack_kv_str(pk, "last_error", last_error);
    mp_pack_kv_bool(pk, "rebalancing", c->swapping || want != have);
    mp_pack_kv_uint(pk, "worker_swaps", swaps);
    mp_pack_cstr(pk, "owned");
    pack_parts(pk, have);
    mp_pack_cstr(pk, "members");
    msgpack_pack_array(pk, (size_t)(have_view ? v.nmembers : 0));
    for (int i = 0; have_view && i < v.nmembers; i++) {
        const struct pg_members_member *m = &v.members[i];
        msgpack_pack_map(pk, 7);
        mp_pack_kv_str(pk, "name", m->name);
        mp_pack_kv_str(pk, "host", m->host);
        mp_pack_kv_int(pk, "pid", m->pid);
        mp_pack_kv_bool(pk, "live", m->live);
        mp_pack_kv_double(pk, "heartbeat_age_s", m->heartbeat_age_s);
        mp_pack_kv_int(pk, "partitions", __builtin_popcountll(m->owned));
        mp_pack_cstr(pk, "owned");
        pack_parts(pk, m->owned);
    }
    struct engine_worker_status ws = { 0 };
    if (c->d->worker)
        engine_worker_get_status(c->d->worker, &ws);
    mp_pack_cstr(pk, "nats");
    msgpack_pack_map(pk, 12);
    mp_pack_kv_bool(pk, "connected", js.connected);
    mp_pack_kv_str(pk, "server", js.server);
    mp_pack_kv_uint(pk, "published", js.published);
    mp_pack_kv_uint(pk, "publish_groups", js.publish_groups);
    mp_pack_kv_uint(pk, "publish_retries", js.publish_retries);
    mp_pack_kv_uint(pk, "consumed", js.consumed);
    mp_pack_kv_uint(pk, "consumed_not_owned", ws.stream_not_owned);
    mp_pack_kv_uint(pk, "consumer_resets", js.consumer_resets);
    mp_pack_kv_uint(pk, "async_errors", js.async_errors);
    mp_pack_kv_uint(pk, "stream_last_seq", last);
    mp_pack_kv_str(pk, "stream_leader", leader);
    mp_pack_kv_str(pk, "last_error", js.last_error);
    /* lag: stream messages after the partition's committed position (of
     * every partition: a position moves past other partitions' messages
     * when its owner has read them) */
    mp_pack_cstr(pk, "partitions");
    msgpack_pack_array(pk, have_view ? GA_PARTITIONS : 0);
    for (int p = 0; have_view && p < GA_PARTITIONS; p++) {
        const char *owner = "";
        for (int i = 0; i < v.nmembers; i++)
            if (v.members[i].live && (v.members[i].owned >> p & 1))
                owner = v.members[i].name;
        uint64_t pos = v.committed_lsn[p] ? v.committed_lsn[p] : 1;
        msgpack_pack_map(pk, 5);
        mp_pack_kv_int(pk, "id", p);
        mp_pack_kv_str(pk, "owner", owner);
        mp_pack_kv_uint(pk, "committed_seq", v.committed_lsn[p]);
        mp_pack_kv_uint(pk, "window_seq", v.window_lsn[p]);
        mp_pack_kv_uint(pk, "lag", last + 1 > pos ? last + 1 - pos : 0);
    }
}
