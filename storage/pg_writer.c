/* pg_writer.c — the storage writer thread (see pg_writer.h).
 *
 * pg_writer_submit copies a unit (pg_batch_copy) onto the inbox, under mu; the
 * writer's merge thread moves the inbox into the `filling` batch as units
 * arrive, where they coalesce (pg_batch_take: the hashing, off the submitter's
 * thread), also while the writer thread writes: a bucket rewritten by many
 * units while a transaction runs is one row in the next.  When `filling`
 * is due, the writer thread swaps it with `flushing` and writes that,
 * retrying until it commits.  `filling` is guarded by fill_mu, `flushing`
 * belongs to the writer thread; what other threads read of them (rows,
 * units, age) is mirrored under mu.  Lock order: fill_mu, then mu;
 * callbacks run with no lock held. */
#include "storage/pg_writer.h"

#include <inttypes.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <time.h>

#include "proto/base/deadline.h"
#include "proto/base/log.h"
#include "proto/ga_err.h"
#include "storage/pg_batch.h"
#include "storage/pg_isolate.h"
#include "storage/pg_txn.h"
#include "storage/pg_util.h"

#define IDLE_CHECK_MS 5000
#define DEFAULT_MAINT_MS 3600000
#define DEFAULT_AHEAD_DAYS 2

struct flush_req {
    uint64_t target_seq;
    void (*cb)(void *ctx, int rc, uint64_t committed_lsn);
    void *ctx;
    struct flush_req *next;
};

struct pg_writer {
    pthread_t thread, merger;
    pthread_mutex_t mu;
    pthread_mutex_t fill_mu;          /* filling, and taking the inbox in order */
    pthread_cond_t wake;              /* the writer waits on it */
    pthread_cond_t merge;             /* the merge thread waits on it */
    pthread_cond_t done;              /* pg_writer_flush_sync waits on it */
    char *conninfo;
    struct pg_writer_opts o;                /* tuning fields guarded by mu */

    /* guarded by mu */
    struct pg_batch_unit *inbox, *inbox_tail;  /* submitted, not yet taken into filling */
    size_t inbox_rows, filling_rows;  /* filling_*: the writer's mirror of filling */
    uint64_t inbox_units, filling_units;
    int64_t inbox_oldest_mono, filling_oldest_mono;
    uint64_t seq, committed_seq, flush_target;
    uint64_t skip_lsn;
    uint64_t skip_part[GA_PARTITIONS];  /* window sets at or below are in the database */
    uint64_t lsn_floor;               /* pg_writer_opts.lsn_floor */
    struct flush_req *reqs;
    int stopping, exited;
    int64_t stop_deadline_mono;       /* 0: none */
    PGcancel *cancel;                 /* the connection's, while connected: pg_writer_stop cancels
                                         a statement still running at its deadline */
    int cancel_sent;
    int64_t flushing_oldest_mono;     /* 0: nothing being written */
    uint64_t flushing_rows, flushing_units;
    size_t wrest_rows;                /* the windows of a set set aside (slice_windows) */
    struct pg_writer_status st;

    struct pg_batch filling;         /* guarded by fill_mu */
    /* writer thread only */
    struct pg_batch flushing;
    struct pg_batch wrest;           /* windows of a set not written yet (slice_windows) */
    uint64_t wrest_hold;              /* committed_seq while wrest holds windows */
    uint64_t seq_done;                /* the highest batch seq committed */
    struct pg_txn_conn tc;
    struct pg_fresh_map hw;                /* committed high water (pg_fresh.h) */
    struct pg_open open;                  /* open buckets in blocks (pg_open.h) */
    int open_loaded;
    uint64_t pairs_new;               /* pairs noted empty: their metric is new */
    int backoff_ms;
    int64_t next_maint_mono, last_activity_mono;
    int stop_rc;
};

static int64_t ms_to_ns(int64_t ms)
{
    return ms * 1000000;
}

static void set_state_locked(struct pg_writer *w, enum pg_conn_state s)
{
    if (w->st.state != s)
        w->st.since_real_ns = ga_now_real_ns();
    w->st.state = s;
}

static void set_state(struct pg_writer *w, enum pg_conn_state s, const char *err)
{
    pthread_mutex_lock(&w->mu);
    set_state_locked(w, s);
    if (err)
        pg_util_errcopy(w->st.last_error, sizeof w->st.last_error, err);
    pthread_mutex_unlock(&w->mu);
}

/* Sleep up to ms, or less when the stop deadline comes first.  Returns 1
 * when the stop deadline has passed. */
static int sleep_ms(struct pg_writer *w, int ms)
{
    struct timespec until;
    clock_gettime(CLOCK_REALTIME, &until);
    pthread_mutex_lock(&w->mu);
    int64_t dl = w->stop_deadline_mono, now = ga_now_mono_ns();
    if (w->stopping && dl && dl - now < ms_to_ns(ms))
        ms = dl > now ? (int)((dl - now) / 1000000) + 1 : 0;
    until = ga_timespec_add_ns(until, ms_to_ns(ms));
    for (;;) {
        if (pthread_cond_timedwait(&w->wake, &w->mu, &until) != 0)
            break;
        /* pg_writer_stop wakes us: end the sleep at its deadline, or at once when
         * nothing is left to write. */
        if (w->stopping && ((w->stop_deadline_mono && ga_now_mono_ns() >= w->stop_deadline_mono) ||
                            (!w->inbox && !w->filling_units && !w->flushing_units)))
            break;
    }
    int stop = w->stopping && w->stop_deadline_mono && ga_now_mono_ns() >= w->stop_deadline_mono;
    pthread_mutex_unlock(&w->mu);
    return stop;
}

/* Close the connection (writer thread), its cancel handle first. */
static void close_conn(struct pg_writer *w)
{
    pthread_mutex_lock(&w->mu);
    PGcancel *c = w->cancel;
    w->cancel = NULL;
    pthread_mutex_unlock(&w->mu);
    if (c)
        PQfreeCancel(c);
    pg_txn_close(&w->tc);
}

static int next_backoff(struct pg_writer *w)
{
    pthread_mutex_lock(&w->mu);
    int lo = w->o.retry_initial_ms, hi = w->o.retry_max_ms;
    pthread_mutex_unlock(&w->mu);
    w->backoff_ms = w->backoff_ms ? (w->backoff_ms > hi / 2 ? hi : w->backoff_ms * 2) : lo;
    return w->backoff_ms;
}

static uint64_t owned(const struct pg_writer *w)
{
    return w->o.parts ? w->o.parts : ~0ULL;
}

/* The lowest of v over the partitions w owns. */
static uint64_t lowest(const struct pg_writer *w, const uint64_t *v)
{
    uint64_t m = UINT64_MAX;
    for (int p = 0; p < GA_PARTITIONS; p++)
        if ((owned(w) >> p & 1) && v[p] < m)
            m = v[p];
    return m;
}

/* Connect if needed.  Returns 0 when connected; else GA_EIO after waiting
 * the backoff (or GA_ETIMEDOUT when the stop deadline passed). */
static int ensure_conn(struct pg_writer *w, struct pg_txn_checkpoint *cp_out)
{
    char err[256];
    struct pg_txn_checkpoint cp;
    if (w->tc.c)
        return 0;
    if (w->o.fence && w->st.connects) {
        /* The session that held the partition locks is gone: another daemon
         * may own them now.  Stay down; the daemon restarts its side. */
        pthread_mutex_lock(&w->mu);
        int first = !w->st.fenced;
        w->st.fenced = 1;
        pthread_mutex_unlock(&w->mu);
        if (first) {
            set_state(w, PG_CONN_DOWN, "fenced: the session holding the partition locks ended; "
                                   "nothing more is written by this writer");
            ga_log(GA_LOG_WARN, "storage_writer_fenced", "parts=0x%016" PRIx64 " msg=\"session "
                   "lost with its partition locks; not reconnecting\"", w->o.parts);
        }
        return sleep_ms(w, 100) ? GA_ETIMEDOUT : GA_EIO;
    }
    pthread_mutex_lock(&w->mu);
    set_state_locked(w, w->st.connects ? PG_CONN_CONNECTING : w->st.state);
    pthread_mutex_unlock(&w->mu);
    int rc = pg_txn_open(&w->tc, w->conninfo, w->o.parts, !w->o.no_instance_lock, &cp, err,
                      sizeof err);
    if (rc == 0 && !w->open_loaded) {
        /* the blocks of this writer's partitions, before its first flush */
        if ((rc = pg_open_load(&w->open, w->tc.c, w->o.parts, err, sizeof err)) < 0) {
            close_conn(w);
        } else {
            w->open_loaded = 1;
            pthread_mutex_lock(&w->mu);
            w->st.open_buckets = w->open.st.entries;
            w->st.open_blocks = w->open.st.blocks;
            pthread_mutex_unlock(&w->mu);
        }
    }
    if (rc == 0 && w->o.fence) {
        /* The server must notice a dead host soon, so that its partition
         * locks go to the next owner (TCP only; ignored on a Unix socket). */
        char ignore[128];
        pg_util_exec(w->tc.c, "SET tcp_keepalives_idle = 5; SET tcp_keepalives_interval = 1; "
                          "SET tcp_keepalives_count = 5", ignore, sizeof ignore);
    }
    if (rc == 0) {
        w->backoff_ms = 0;
        w->next_maint_mono = 0;
        w->last_activity_mono = ga_now_mono_ns();
        PGcancel *cancel = PQgetCancel(w->tc.c);
        pthread_mutex_lock(&w->mu);
        w->cancel = cancel;
        w->st.connects++;
        if (cp.committed_lsn > w->st.committed_lsn)
            w->st.committed_lsn = w->skip_lsn = cp.committed_lsn;
        for (int p = 0; p < GA_PARTITIONS; p++)
            if (cp.part_lsn[p] > w->st.part_window_lsn[p])
                w->st.part_window_lsn[p] = w->skip_part[p] = cp.part_lsn[p];
        w->st.window_lsn = lowest(w, w->st.part_window_lsn);
        set_state_locked(w, PG_CONN_CONNECTED);
        pthread_mutex_unlock(&w->mu);
        ga_log(GA_LOG_INFO, "storage_writer_connected", "committed_lsn=%" PRIu64 " window_lsn=%" PRIu64,
               cp.committed_lsn, cp.window_lsn);
        if (cp_out)
            *cp_out = cp;
        return 0;
    }
    int wait = next_backoff(w);
    set_state(w, PG_CONN_DOWN, err);
    ga_log(GA_LOG_WARN, "storage_writer_down", "retry_in_ms=%d error=\"%s\"", wait, err);
    return sleep_ms(w, wait) ? GA_ETIMEDOUT : GA_EIO;
}

static uint64_t new_batch_id(void)
{
    uint64_t id = 0;
    if (getrandom(&id, sizeof id, 0) != sizeof id)
        id = (uint64_t)ga_now_real_ns() * 0x9e3779b97f4a7c15ULL ^ (uint64_t)ga_now_mono_ns();
    id &= INT64_MAX;
    return id ? id : 1;
}

/* Before the first flush of (metric, granularity) pairs this process has
 * not committed: their high water from the database (-1 where it has no
 * bucket), so their new buckets are COPYed too (pg_fresh.h).  A metric
 * whose definition travels in this batch was created by this process and
 * has no rows yet: its pairs are noted empty without asking (registering a
 * million new metrics would otherwise cost an index descent per partition
 * of each pair).  A failure forgets every pair (only slower; the
 * connection error shows in the flush that follows). */
static void learn_pairs(struct pg_writer *w)
{
    const struct pg_batch *b = &w->flushing;
    struct ga_agg *u = NULL;
    size_t n = 0;
    char err[512];
    for (size_t i = 0; i < b->naggs; i++) {
        if (pg_fresh_known(&w->hw, &b->aggs[i]) ||
            pg_open_has(&w->open, b->aggs[i].metric, b->aggs[i].granularity_ns))
            continue;
        if (b->ndefs && pg_batch_has_def(b, b->aggs[i].metric)) {
            struct ga_agg none = b->aggs[i];
            none.ts = -1;
            if (pg_fresh_note(&w->hw, &none, 1)) {
                pg_fresh_clear(&w->hw);
                free(u);
                return;
            }
            w->pairs_new++;
            continue;
        }
        if (n && u[n - 1].metric == b->aggs[i].metric &&
            u[n - 1].granularity_ns == b->aggs[i].granularity_ns)
            continue;                       /* sorted: a pair's rows are adjacent */
        if (!u && !(u = malloc(b->naggs * sizeof *u)))
            return;
        u[n++] = b->aggs[i];
    }
    pthread_mutex_lock(&w->mu);
    w->st.pairs_asked += n;
    w->st.pairs_new = w->pairs_new;
    pthread_mutex_unlock(&w->mu);
    if (!n)
        return;
    for (size_t i = 0; i < n; i++) {
        struct ga_agg none = u[i];
        none.ts = -1;
        if (pg_fresh_note(&w->hw, &none, 1)) {
            pg_fresh_clear(&w->hw);
            free(u);
            return;
        }
    }
    if (pg_txn_high_water(&w->tc, u, n, &w->hw, err, sizeof err)) {
        ga_log(GA_LOG_WARN, "storage_high_water_failed", "error=\"%s\"", err);
        pg_fresh_clear(&w->hw);
    }
    free(u);
}

static int probe_cb(void *ctx, const struct pg_batch *sub, char *err, size_t errlen)
{
    struct pg_writer *w = ctx;
    return pg_txn_probe(&w->tc, sub, &w->hw, err, errlen);
}

/* The flush failed on its data (err): take the refused metrics' rows out
 * of w->flushing into its rejects.  0: write again at once; < 0: back off
 * and retry the batch as it is. */
static int isolate(struct pg_writer *w, const char *err, uint64_t *unrecorded)
{
    struct pg_isolate_result r;
    char why[512];
    size_t had = w->flushing.nrejects;
    int rc = pg_isolate(&w->flushing, probe_cb, w, &r, why, sizeof why);
    if (rc == 0) {
        const char *first = w->flushing.errors[w->flushing.rejects[had].error].text;
        pthread_mutex_lock(&w->mu);
        w->st.isolations++;
        char line[sizeof w->st.last_rejected + 32];
        snprintf(line, sizeof line, "metric %u: %s", r.first_metric, first);
        pg_util_errcopy(w->st.last_rejected, sizeof w->st.last_rejected, line);
        pthread_mutex_unlock(&w->mu);
        ga_log(GA_LOG_ERROR, "storage_rows_rejected",
               "metric=%u metrics=%zu rows=%zu probes=%d error=\"%s\" "
               "msg=\"recorded in rejected_rows; the other rows are written\"",
               r.first_metric, r.bad_items, r.rejected, r.probes, first);
        return 0;
    }
    if (rc == GA_EDB && had && !strstr(why, "without any metric")) {
        /* every item passes without the rejects: recording them is what
         * fails.  Count them and let them go (they are in the log). */
        ga_log(GA_LOG_ERROR, "storage_rejects_unrecorded", "rows=%zu error=\"%s\"", had, err);
        *unrecorded += had;
        w->flushing.nrejects = 0;
        return 0;
    }
    if (rc == GA_EIO)
        close_conn(w);
    ga_log(GA_LOG_WARN, "storage_isolation_failed", "probes=%d error=\"%s\"", r.probes, why);
    return rc;
}

/* Write w->flushing until it commits.  0, or GA_ETIMEDOUT when the stop
 * deadline passed first. */
static int write_batch(struct pg_writer *w)
{
    uint64_t id = new_batch_id();
    char err[512];
    struct pg_txn_timing t;
    int maybe_committed = 0, isolations = 0, routed = 0;
    size_t naggs = w->flushing.naggs;
    uint64_t unrecorded = 0;
    int64_t t0 = ga_now_mono_ns(), tl;
    double learn_ms = 0;
    pg_batch_sort(&w->flushing);
    double sort_ms = (double)(ga_now_mono_ns() - t0) / 1e6;
    /* the journal position this batch's commit lets go of */
    uint64_t after[GA_PARTITIONS];
    pthread_mutex_lock(&w->mu);
    for (int p = 0; p < GA_PARTITIONS; p++)
        after[p] = w->flushing.part_lsn[p] > w->st.part_window_lsn[p] ? w->flushing.part_lsn[p]
                                                                       : w->st.part_window_lsn[p];
    pthread_mutex_unlock(&w->mu);
    w->flushing.window_lsn = lowest(w, after);
    for (;;) {
        struct pg_txn_checkpoint cp = { 0 };
        int rc = ensure_conn(w, &cp);
        if (rc == GA_ETIMEDOUT)
            return rc;
        if (rc < 0)
            continue;
        if (maybe_committed && cp.last_batch == id) {
            ga_log(GA_LOG_INFO, "storage_commit_confirmed", "batch=%" PRIu64, id);
            memset(&t, 0, sizeof t);
            break;
        }
        maybe_committed = 0;
        tl = ga_now_mono_ns();
        learn_pairs(w);
        learn_ms = (double)(ga_now_mono_ns() - tl) / 1e6;
        if (!routed && (rc = pg_open_route(&w->open, &w->flushing, &w->hw)) < 0) {
            snprintf(err, sizeof err, "open buckets: %s", ga_strerror(rc));
        } else {
            routed = 1;
            rc = pg_txn_write(&w->tc, &w->flushing, &w->hw, &w->open, id, &t, err, sizeof err);
        }
        w->last_activity_mono = ga_now_mono_ns();
        if (rc == 0)
            break;
        if (rc == GA_EDB && pg_util_data_error(err) && isolations++ < 16 && w->tc.c &&
            isolate(w, err, &unrecorded) == 0)
            continue;
        if (rc == GA_EIO) {
            /* The commit may have happened before the link broke. */
            maybe_committed = 1;
            close_conn(w);
        }
        int wait = next_backoff(w);
        pthread_mutex_lock(&w->mu);
        w->st.retries++;
        pg_util_errcopy(w->st.last_error, sizeof w->st.last_error, err);
        set_state_locked(w, w->tc.c ? PG_CONN_CONNECTED : PG_CONN_CONNECTING);
        pthread_mutex_unlock(&w->mu);
        ga_log(GA_LOG_WARN, "storage_flush_failed", "rows=%zu retry_in_ms=%d error=\"%s\"",
               pg_batch_rows(&w->flushing), wait, err);
        if (sleep_ms(w, wait))
            return GA_ETIMEDOUT;
    }
    w->backoff_ms = 0;
    pg_open_commit(&w->open);
    if (pg_fresh_note(&w->hw, w->flushing.aggs, w->flushing.naggs))
        pg_fresh_clear(&w->hw);                  /* out of memory: forget (only slower) */
    else
        pg_txn_note_msets(&w->tc, &w->flushing, id, &w->hw);
    if (t.fresh_fallback && w->tc.c &&
        pg_txn_high_water(&w->tc, w->flushing.aggs, w->flushing.naggs, &w->hw, err, sizeof err))
        ga_log(GA_LOG_WARN, "storage_high_water_failed", "error=\"%s\"", err);
    pthread_mutex_lock(&w->mu);
    struct pg_writer_status *st = &w->st;
    st->transactions++;
    st->rows_committed += naggs;
    st->buckets_committed += t.rows + t.open_changed;
    st->open_buckets = w->open.st.entries;
    st->open_blocks = w->open.st.blocks;
    st->open_written = w->open.st.written;
    st->open_blocks_written = w->open.st.blocks_written;
    st->open_closed = w->open.st.closed;
    st->open_full = w->open.st.full;
    st->late_committed += w->flushing.nlate;
    st->windows_committed += w->flushing.nwindows;
    st->defs_committed += w->flushing.ndefs;
    st->partitions_created += (uint64_t)t.partitions_created;
    st->last_rows = naggs;
    st->rows_fresh += t.rows_fresh;
    st->rows_merged += t.rows_merged;
    st->rows_rejected += w->flushing.nrejects + unrecorded;
    st->fresh_fallbacks += (uint64_t)t.fresh_fallback;
    st->rows_updated += t.rows_updated;
    st->update_fallbacks += (uint64_t)t.update_fallback;
    st->last_fresh_ms = t.fresh_ms;
    st->last_flush_ms = t.total_ms;
    st->last_copy_ms = t.copy_ms;
    st->last_upsert_ms = t.upsert_ms;
    st->last_commit_ms = t.commit_ms;
    st->last_error[0] = '\0';
    if (w->flushing.lsn > st->committed_lsn)
        st->committed_lsn = w->flushing.lsn;
    for (int p = 0; p < GA_PARTITIONS; p++)
        if (w->flushing.part_lsn[p] > st->part_window_lsn[p])
            st->part_window_lsn[p] = w->flushing.part_lsn[p];
    st->window_lsn = lowest(w, st->part_window_lsn);
    set_state_locked(w, PG_CONN_CONNECTED);
    pthread_mutex_unlock(&w->mu);
    if (ga_log_get_level() <= GA_LOG_DEBUG) {
        char steps[PG_TXN_MAX_STEPS * 40] = "";
        size_t o = 0;
        for (int i = 0; i < t.nsteps && o < sizeof steps; i++)
            o += (size_t)snprintf(steps + o, sizeof steps - o, "%s%s:%.1f", i ? "," : "",
                                  t.step_what[i], t.step_ms[i]);
        ga_log(GA_LOG_DEBUG, "storage_commit",
               "rows=%zu buckets=%zu fresh=%zu open=%zu blocks=%zu defs=%zu counts=%zu late=%zu "
               "windows=%zu lsn=%" PRIu64 " ms=%.1f wall_ms=%.1f sort_ms=%.1f learn_ms=%.1f "
               "parts_ms=%.1f fresh_ms=%.1f copy_ms=%.1f blocks_ms=%.1f tails_ms=%.1f upsert_ms=%.1f "
               "steps=\"%s\"",
               naggs, t.rows, t.rows_fresh, t.open_changed, t.open_blocks, w->flushing.ndefs,
               w->flushing.ncounts,
               w->flushing.nlate, w->flushing.nwindows, w->flushing.lsn,
               t.total_ms, (double)(ga_now_mono_ns() - t0) / 1e6, sort_ms, learn_ms, t.partitions_ms,
               t.fresh_ms, t.copy_ms, t.blocks_ms, t.tails_ms, t.upsert_ms, steps);
    }
    return 0;
}

/* Writer thread: is part of a window set still to be written (slice_windows)? */
static int wrest_pending(const struct pg_writer *w)
{
    return w->wrest.nwindows || w->wrest.has_windows || w->wrest.ncounts;
}

/* After a commit (or at exit with rc != 0): complete the flush requests
 * that are satisfied, then call on_commit.  Called without the lock. */
static void complete(struct pg_writer *w, int committed, int rc)
{
    struct flush_req *done = NULL, **pp;
    pthread_mutex_lock(&w->mu);
    if (committed) {
        /* a unit is committed once its batch is, windows and all: while a
         * window set is still being written, no further than before it */
        if (w->flushing.last_seq > w->seq_done)
            w->seq_done = w->flushing.last_seq;
        uint64_t s = wrest_pending(w) && w->wrest_hold < w->seq_done ? w->wrest_hold : w->seq_done;
        w->committed_seq = s > w->committed_seq ? s : w->committed_seq;
        w->flushing_oldest_mono = 0;
        w->flushing_rows = w->flushing_units = 0;
    }
    for (pp = &w->reqs; *pp;) {
        struct flush_req *r = *pp;
        if (rc != 0 || r->target_seq <= w->committed_seq) {
            *pp = r->next;
            r->next = done;
            done = r;
        } else {
            pp = &r->next;
        }
    }
    uint64_t lsn = w->st.committed_lsn, wlsn = w->st.window_lsn;
    pthread_cond_broadcast(&w->done);
    pthread_mutex_unlock(&w->mu);
    if (committed && w->o.on_commit)
        w->o.on_commit(w->o.ctx, lsn, wlsn);
    while (done) {
        struct flush_req *r = done;
        done = r->next;
        r->cb(r->ctx, rc, lsn);
        free(r);
    }
}

/* Merge or writer thread: move the inbox into filling, in submission order
 * (fill_mu held from taking the inbox to its last unit merged).  A unit
 * that cannot be taken for want of memory goes back to the inbox head,
 * with the rest, for the next turn. */
static void take_inbox(struct pg_writer *w)
{
    pthread_mutex_lock(&w->fill_mu);
    pthread_mutex_lock(&w->mu);
    struct pg_batch_unit *q = w->inbox;
    w->inbox = w->inbox_tail = NULL;
    size_t rows = w->inbox_rows;
    uint64_t units = w->inbox_units;
    w->inbox_rows = w->inbox_units = 0;
    w->inbox_oldest_mono = 0;
    pthread_mutex_unlock(&w->mu);
    if (!q) {
        pthread_mutex_unlock(&w->fill_mu);
        return;
    }
    int rc = 0;
    while (q && rc == 0) {
        struct pg_batch_unit *next = q->next;
        size_t qrows = q->rows;              /* pg_batch_take frees q */
        if ((rc = pg_batch_take(&w->filling, q, q->seq, q->submit_mono_ns)) == 0) {
            rows -= qrows < rows ? qrows : rows;
            units--;
            q = next;
        }
    }
    pthread_mutex_lock(&w->mu);
    if (q) {                             /* out of memory: q and the rest wait */
        struct pg_batch_unit *last = q;
        while (last->next)
            last = last->next;
        last->next = w->inbox;
        if (!w->inbox)
            w->inbox_tail = last;
        w->inbox = q;
        w->inbox_rows += rows;
        w->inbox_units += units;
        w->inbox_oldest_mono = q->submit_mono_ns;
        ga_log(GA_LOG_WARN, "storage_writer_no_memory", "units_waiting=%" PRIu64, w->inbox_units);
    }
    w->filling_rows = pg_batch_rows(&w->filling);
    w->filling_units = w->filling.units;
    w->filling_oldest_mono = w->filling.oldest_mono_ns;
    if (w->filling_rows >= (size_t)w->o.flush_rows)
        pthread_cond_signal(&w->wake);     /* due by size */
    pthread_mutex_unlock(&w->mu);
    pthread_mutex_unlock(&w->fill_mu);
}

/* Merge thread: take units into filling as they come, until the writer
 * stops (its thread takes what is left). */
static void *merge_main(void *arg)
{
    struct pg_writer *w = arg;
    pthread_mutex_lock(&w->mu);
    while (!w->stopping) {
        if (!w->inbox) {
            pthread_cond_wait(&w->merge, &w->mu);
            continue;
        }
        pthread_mutex_unlock(&w->mu);
        take_inbox(w);
        pthread_mutex_lock(&w->mu);
    }
    pthread_mutex_unlock(&w->mu);
    return NULL;
}

/* Under fill_mu and mu, writer thread: is the filling batch due for writing?  When it
 * is not, *wait_ns is how long the writer may sleep: 0 while units wait
 * in the inbox (it takes them first).  The inbox never delays a due batch:
 * under a steady stream it is seldom empty. */
static int due_locked(struct pg_writer *w, int64_t now, int64_t *wait_ns)
{
    struct pg_batch *b = &w->filling;
    *wait_ns = w->inbox ? 0 : ms_to_ns(IDLE_CHECK_MS);
    if (wrest_pending(w))
        return 1;                           /* the rest of a window set */
    if (pg_batch_empty(b))
        return 0;
    if (w->stopping || w->flush_target > w->committed_seq ||
        pg_batch_rows(b) >= (size_t)w->o.flush_rows)
        return 1;
    int64_t age = now - b->oldest_mono_ns, iv = ms_to_ns(w->o.flush_interval_ms);
    if (age >= iv)
        return 1;
    *wait_ns = w->inbox ? 0 : iv - age;
    return 0;
}

static void maintain(struct pg_writer *w)
{
    int created = 0, dropped = 0;
    char err[512];
    pthread_mutex_lock(&w->mu);
    int iv = w->o.maintenance_interval_ms, ahead = w->o.partitions_ahead_days;
    pthread_mutex_unlock(&w->mu);
    if (iv < 0 || !w->tc.c || ga_now_mono_ns() < w->next_maint_mono)
        return;
    w->next_maint_mono = ga_now_mono_ns() + ms_to_ns(iv);
    int rc = pg_txn_maintain(&w->tc, ga_now_real_ns(), ahead, &created, &dropped, err, sizeof err);
    if (rc < 0) {
        ga_log(GA_LOG_WARN, "storage_maintenance_failed", "error=\"%s\"", err);
        if (rc == GA_EIO)
            close_conn(w);
        return;
    }
    pthread_mutex_lock(&w->mu);
    w->st.partitions_created += (uint64_t)created;
    w->st.partitions_dropped += (uint64_t)dropped;
    pthread_mutex_unlock(&w->mu);
}

/* When idle for a while, make sure the connection still works so that the
 * status tells the truth. */
static void idle_check(struct pg_writer *w)
{
    if (!w->tc.c || ga_now_mono_ns() - w->last_activity_mono < ms_to_ns(IDLE_CHECK_MS))
        return;
    char err[256];
    w->last_activity_mono = ga_now_mono_ns();
    if (pg_util_exec(w->tc.c, "SELECT 1", err, sizeof err) < 0) {
        ga_log(GA_LOG_WARN, "storage_writer_lost", "error=\"%s\"", err);
        close_conn(w);
        set_state(w, PG_CONN_CONNECTING, err);
    }
}

/* Writer thread, before writing flushing: a window set of more than
 * window_txn_bytes goes over several transactions (docs/STORAGE.md "A
 * window set over several transactions").  Its windows wait in wrest and each transaction
 * takes the next window_txn_bytes of them, with their metrics' counters,
 * beside the rows of the moment; the one that takes the last advances
 * the set's partitions.  Windows stored in between carry their own
 * position, so a restart skips their points and replays the others'.
 * Windows that come while a set is still being written go after it, all
 * in this transaction: a set is done by the time the next comes, so the
 * windows set aside stay one set's and the partitions' positions (which
 * release the journal) keep moving.  Out of memory: what could not be
 * moved is written with this batch. */
static void slice_windows(struct pg_writer *w)
{
    struct pg_batch *f = &w->flushing, *r = &w->wrest;
    size_t max = w->o.window_txn_bytes;
    int has = f->nwindows || f->has_windows || f->ncounts;
    if (wrest_pending(w) && has) {
        if (pg_batch_move_windows(r, f, 0, 1) == 0)
            pg_batch_move_windows(f, r, 0, 1);
    } else if (wrest_pending(w) || (max && pg_batch_window_bytes(f) > max)) {
        if (!wrest_pending(w)) {
            pthread_mutex_lock(&w->mu);
            w->wrest_hold = w->committed_seq;
            pthread_mutex_unlock(&w->mu);
            if (pg_batch_move_windows(r, f, 0, 1) < 0)
                return;                     /* out of memory: the set in one transaction */
        }
        if (pg_batch_move_windows(f, r, max, 0) < 0 && pg_batch_move_windows(f, r, 0, 1) < 0)
            ga_log(GA_LOG_WARN, "storage_writer_no_memory", "windows_waiting=%zu", r->nwindows);
    } else {
        return;
    }
    pthread_mutex_lock(&w->mu);
    w->wrest_rows = r->nwindows;
    pthread_mutex_unlock(&w->mu);
}

static void *writer_main(void *arg)
{
    struct pg_writer *w = arg;
    for (;;) {
        take_inbox(w);
        pthread_mutex_lock(&w->fill_mu);
        pthread_mutex_lock(&w->mu);
        int idle_stop = w->stopping && pg_batch_empty(&w->filling) && !w->inbox && !wrest_pending(w);
        pthread_mutex_unlock(&w->mu);
        pthread_mutex_unlock(&w->fill_mu);
        if (idle_stop)
            break;
        if (ensure_conn(w, NULL) == 0) {
            maintain(w);
            idle_check(w);
        }
        pthread_mutex_lock(&w->fill_mu);
        pthread_mutex_lock(&w->mu);
        int64_t wait_ns;
        int due = due_locked(w, ga_now_mono_ns(), &wait_ns);
        if (!due && w->stopping && !w->inbox) {
            pthread_mutex_unlock(&w->mu);
            pthread_mutex_unlock(&w->fill_mu);
            break;
        }
        if (!due) {
            pthread_mutex_unlock(&w->fill_mu);
            if (!w->tc.c)
                wait_ns = 0;                /* go back to ensure_conn's backoff */
            struct timespec until;
            clock_gettime(CLOCK_REALTIME, &until);
            until = ga_timespec_add_ns(until, wait_ns);
            if (wait_ns)
                pthread_cond_timedwait(&w->wake, &w->mu, &until);
            pthread_mutex_unlock(&w->mu);
            continue;
        }
        struct pg_batch tmp = w->flushing;
        w->flushing = w->filling;
        w->filling = tmp;
        w->flushing_oldest_mono = w->flushing.oldest_mono_ns;
        w->flushing_rows = pg_batch_rows(&w->flushing);
        w->flushing_units = w->flushing.units;
        w->filling_rows = w->filling_units = 0;
        w->filling_oldest_mono = 0;
        pthread_mutex_unlock(&w->mu);
        pthread_mutex_unlock(&w->fill_mu);
        slice_windows(w);
        if (write_batch(w) < 0) {
            w->stop_rc = GA_ETIMEDOUT;
            break;
        }
        complete(w, 1, 0);
        pg_batch_reset(&w->flushing);
    }
    if (w->stop_rc) {
        pthread_mutex_lock(&w->mu);
        ga_log(GA_LOG_ERROR, "storage_stop_uncommitted",
               "units=%" PRIu64 " rows=%zu committed_lsn=%" PRIu64
               " msg=\"left in the journal; replayed at next start\"",
               w->flushing.units + w->filling.units + w->inbox_units,
               pg_batch_rows(&w->flushing) + pg_batch_rows(&w->filling) + w->inbox_rows,
               w->st.committed_lsn);
        pthread_mutex_unlock(&w->mu);
    }
    complete(w, 0, GA_ESHUTDOWN);
    close_conn(w);
    pthread_mutex_lock(&w->mu);
    w->exited = 1;
    set_state_locked(w, PG_CONN_STOPPED);
    pthread_cond_broadcast(&w->done);
    pthread_mutex_unlock(&w->mu);
    return NULL;
}

int pg_writer_start(struct pg_writer **out, const struct pg_writer_opts *o)
{
    if (!o->conninfo || o->flush_rows <= 0 || o->flush_interval_ms <= 0 ||
        o->retry_initial_ms <= 0 || o->retry_max_ms < o->retry_initial_ms ||
        o->committed_lsn > INT64_MAX || o->window_lsn > INT64_MAX)
        return GA_EINVAL;
    for (int p = 0; o->part_window_lsn && p < GA_PARTITIONS; p++)
        if (o->part_window_lsn[p] > INT64_MAX)
            return GA_EINVAL;
    struct pg_writer *w = calloc(1, sizeof *w);
    if (!w)
        return GA_ENOMEM;
    w->o = *o;
    pg_open_init(&w->open, o->open_max);
    w->conninfo = strdup(o->conninfo);
    if (!w->conninfo)
        goto fail;
    w->o.conninfo = w->conninfo;
    if (!w->o.queue_max_rows)
        w->o.queue_max_rows = (size_t)o->flush_rows * PG_WRITER_QUEUE_FLUSHES;
    if (!w->o.maintenance_interval_ms)
        w->o.maintenance_interval_ms = DEFAULT_MAINT_MS;
    if (!w->o.partitions_ahead_days)
        w->o.partitions_ahead_days = DEFAULT_AHEAD_DAYS;
    w->skip_lsn = w->st.committed_lsn = o->committed_lsn;
    w->lsn_floor = o->lsn_floor;
    for (int p = 0; p < GA_PARTITIONS; p++)
        w->skip_part[p] = w->st.part_window_lsn[p] =
            o->part_window_lsn ? o->part_window_lsn[p] : o->window_lsn;
    w->st.window_lsn = lowest(w, w->st.part_window_lsn);
    w->st.state = PG_CONN_CONNECTING;
    w->st.since_real_ns = ga_now_real_ns();
    pthread_mutex_init(&w->mu, NULL);
    pthread_mutex_init(&w->fill_mu, NULL);
    pthread_cond_init(&w->wake, NULL);
    pthread_cond_init(&w->merge, NULL);
    pthread_cond_init(&w->done, NULL);
    if (pthread_create(&w->merger, NULL, merge_main, w) != 0)
        goto fail_sync;
    if (pthread_create(&w->thread, NULL, writer_main, w) != 0) {
        pthread_mutex_lock(&w->mu);
        w->stopping = 1;
        pthread_cond_signal(&w->merge);
        pthread_mutex_unlock(&w->mu);
        pthread_join(w->merger, NULL);
        goto fail_sync;
    }
    pthread_setname_np(w->thread, "ga-writer");
    pthread_setname_np(w->merger, "ga-merge");
    *out = w;
    return 0;
fail_sync:
    pthread_cond_destroy(&w->done);
    pthread_cond_destroy(&w->merge);
    pthread_cond_destroy(&w->wake);
    pthread_mutex_destroy(&w->fill_mu);
    pthread_mutex_destroy(&w->mu);
fail:
    free(w->conninfo);
    free(w);
    return GA_ENOMEM;
}

int pg_writer_submit(struct pg_writer *w, const struct pg_writer_unit *u)
{
    size_t add = ga_aggs_count(u->aggs, u->naggs) + u->nlate + u->nwindows;
    int rc;
    pthread_mutex_lock(&w->mu);
    if (w->stopping) {
        rc = GA_ESHUTDOWN;
        goto out;
    }
    if (u->lsn && u->lsn < w->st.submitted_lsn) {
        rc = GA_EINVAL;
        goto out;
    }
    size_t rows = w->filling_rows + w->inbox_rows;
    if (rows && rows + add > w->o.queue_max_rows) {
        w->st.busy_refusals++;
        rc = GA_EBUSY;
        goto out;
    }
    int skip_rows = u->lsn && u->lsn <= w->skip_lsn;
    /* a window set is dropped when every partition it covers has a newer one
     * in the database (where some do, the update keeps the newer position) */
    struct pg_writer_unit own = *u;        /* a window set covers the partitions this writer owns */
    own.window_parts = (u->window_parts ? u->window_parts : ~0ULL) & owned(w);
    int skip_windows = u->window_lsn != 0;
    for (int p = 0; skip_windows && p < GA_PARTITIONS; p++)
        if ((own.window_parts >> p & 1) && u->window_lsn > w->skip_part[p])
            skip_windows = 0;
    struct pg_batch_unit *q;
    rc = pg_batch_copy(&own, skip_rows, skip_windows, &q);
    if (rc < 0)
        goto out;
    q->seq = ++w->seq;
    q->submit_mono_ns = ga_now_mono_ns();
    if (w->inbox_tail)
        w->inbox_tail->next = q;
    else
        w->inbox = q, w->inbox_oldest_mono = q->submit_mono_ns;
    w->inbox_tail = q;
    w->inbox_rows += q->rows;
    w->inbox_units++;
    /* the merge thread takes it into the filling batch (for the first
     * unit, the flush interval starts) */
    pthread_cond_signal(&w->merge);
    pthread_cond_signal(&w->wake);
    w->st.units_skipped += (uint64_t)skip_rows;
    if (u->lsn > w->st.submitted_lsn)
        w->st.submitted_lsn = u->lsn;
out:
    pthread_mutex_unlock(&w->mu);
    return rc;
}

int pg_writer_flush(struct pg_writer *w, void (*cb)(void *ctx, int rc, uint64_t committed_lsn), void *ctx)
{
    pthread_mutex_lock(&w->mu);
    if (w->stopping) {
        pthread_mutex_unlock(&w->mu);
        return GA_ESHUTDOWN;
    }
    if (w->seq == w->committed_seq) {
        uint64_t lsn = w->st.committed_lsn;
        pthread_mutex_unlock(&w->mu);
        cb(ctx, 0, lsn);
        return 0;
    }
    struct flush_req *r = malloc(sizeof *r);
    if (!r) {
        pthread_mutex_unlock(&w->mu);
        return GA_ENOMEM;
    }
    *r = (struct flush_req){ w->seq, cb, ctx, w->reqs };
    w->reqs = r;
    w->flush_target = w->seq;
    pthread_cond_signal(&w->wake);
    pthread_mutex_unlock(&w->mu);
    return 0;
}

int pg_writer_flush_sync(struct pg_writer *w, int timeout_ms)
{
    struct timespec until = ga_deadline_ms(CLOCK_REALTIME, timeout_ms < 0 ? 0 : timeout_ms);
    int rc = 0;
    pthread_mutex_lock(&w->mu);
    if (w->stopping) {
        pthread_mutex_unlock(&w->mu);
        return GA_ESHUTDOWN;
    }
    uint64_t target = w->seq;
    if (target > w->flush_target)
        w->flush_target = target;
    pthread_cond_signal(&w->wake);
    while (w->committed_seq < target && !w->exited && rc == 0) {
        if (timeout_ms < 0)
            pthread_cond_wait(&w->done, &w->mu);
        else if (pthread_cond_timedwait(&w->done, &w->mu, &until) != 0)
            rc = GA_ETIMEDOUT;
    }
    if (rc == 0 && w->committed_seq < target)
        rc = GA_ESHUTDOWN;
    pthread_mutex_unlock(&w->mu);
    return rc;
}

void pg_writer_set_tuning(struct pg_writer *w, int flush_rows, int flush_interval_ms, int retry_initial_ms,
                    int retry_max_ms)
{
    pthread_mutex_lock(&w->mu);
    if (flush_rows > 0)
        w->o.flush_rows = flush_rows;
    if (flush_interval_ms > 0)
        w->o.flush_interval_ms = flush_interval_ms;
    if (retry_initial_ms > 0)
        w->o.retry_initial_ms = retry_initial_ms;
    if (retry_max_ms > 0)
        w->o.retry_max_ms = retry_max_ms;
    if (w->o.retry_max_ms < w->o.retry_initial_ms)
        w->o.retry_max_ms = w->o.retry_initial_ms;
    pthread_cond_signal(&w->wake);
    pthread_mutex_unlock(&w->mu);
}

void pg_writer_get_status(struct pg_writer *w, struct pg_writer_status *st)
{
    pthread_mutex_lock(&w->mu);
    *st = w->st;
    int64_t oldest = w->flushing_oldest_mono ? w->flushing_oldest_mono
                   : w->filling_oldest_mono ? w->filling_oldest_mono : w->inbox_oldest_mono;
    st->lag_s = oldest ? (double)(ga_now_mono_ns() - oldest) / 1e9 : 0;
    uint64_t base = st->committed_lsn > w->lsn_floor ? st->committed_lsn : w->lsn_floor;
    st->lag_lsn = st->submitted_lsn > base ? st->submitted_lsn - base : 0;
    st->pending_rows = w->flushing_rows + w->filling_rows + w->inbox_rows + w->wrest_rows;
    st->pending_units = w->flushing_units + w->filling_units + w->inbox_units;
    pthread_mutex_unlock(&w->mu);
}

void pg_writer_stop_begin(struct pg_writer *w, int timeout_ms)
{
    if (!w)
        return;
    pthread_mutex_lock(&w->mu);
    w->stopping = 1;
    if (timeout_ms >= 0) {
        int64_t dl = ga_now_mono_ns() + ms_to_ns(timeout_ms);
        if (!w->stop_deadline_mono || dl < w->stop_deadline_mono)
            w->stop_deadline_mono = dl;
    }
    pthread_cond_broadcast(&w->wake);
    pthread_cond_broadcast(&w->merge);
    pthread_mutex_unlock(&w->mu);
}

int pg_writer_stop(struct pg_writer *w, int timeout_ms)
{
    if (!w)
        return 0;
    pg_writer_stop_begin(w, timeout_ms);
    /* Past the deadline a statement still running (a lock, a server that
     * stopped answering) is cancelled: the writer then gives up as at any
     * failure past the deadline, and the stop keeps its bound. */
    pthread_mutex_lock(&w->mu);
    while (!w->exited) {
        int64_t dl = w->stop_deadline_mono, now = ga_now_mono_ns();
        if (dl && now >= dl && w->cancel && !w->cancel_sent) {
            char e[256] = "";
            w->cancel_sent = 1;
            int ok = PQcancel(w->cancel, e, sizeof e);
            ga_log(GA_LOG_WARN, "storage_stop_cancel", "parts=0x%016" PRIx64 " sent=%d error=\"%s\"",
                   w->o.parts, ok, e);
        }
        struct timespec until;
        clock_gettime(CLOCK_REALTIME, &until);
        int64_t wait = dl && dl > now ? dl - now : 100000000;
        until = ga_timespec_add_ns(until, wait < 100000000 ? wait : 100000000);
        pthread_cond_timedwait(&w->done, &w->mu, &until);
    }
    pthread_mutex_unlock(&w->mu);
    pthread_join(w->merger, NULL);
    pthread_join(w->thread, NULL);
    int rc = w->stop_rc;
    for (struct pg_batch_unit *q = w->inbox, *n; q; q = n) {
        n = q->next;
        pg_batch_unit_free(q);
    }
    pg_batch_free(&w->filling);
    pg_batch_free(&w->flushing);
    pg_batch_free(&w->wrest);
    pg_fresh_free(&w->hw);
    pg_open_free(&w->open);
    pthread_cond_destroy(&w->done);
    pthread_cond_destroy(&w->merge);
    pthread_cond_destroy(&w->wake);
    pthread_mutex_destroy(&w->fill_mu);
    pthread_mutex_destroy(&w->mu);
    free(w->conninfo);
    free(w);
    return rc;
}
