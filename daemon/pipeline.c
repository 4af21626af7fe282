/* pipeline.c — decode workers, the sequencer, the engine queue (pipeline.h). */
#include "daemon/pipeline.h"

#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "daemon/ingest/admit.h"
#include "daemon/ingest/late_notice.h"
#include "proto/base/deadline.h"
#include "proto/base/log.h"
#include "proto/ga_err.h"
#include "proto/ga_partition.h"
#include "proto/ts_parse.h"
#include "storage/js_log.h"

#define PIPELINE_PREC_MAX_BYTES (256 * 1024)   /* one message's points (estimated) */
#define PIPELINE_GROUP_MAX_ITEMS 256

/* How long a batch waits for journal space before it is answered "busy". */
#define JOURNAL_FULL_BUSY_MS 1000

struct eq_node {
    struct pipeline_entry e;
    struct eq_node *next;
};

/* One engine worker's queue (a lane): the entries of its partitions, LSN
 * order; its bounds are the pipeline's divided by the lanes. */
struct lane {
    struct eq_node *head, *tail;
    size_t entries, bytes;
};

struct ga_pipeline {
    uv_loop_t *loop;
    struct journal *j;
    struct journal_commit *commit;
    uv_async_t notify;                 /* durable LSN moved or items sequenced */
    void (*on_durable)(void *ctx, uint64_t durable_lsn);
    void *ctx;

    pthread_mutex_t mu;
    pthread_cond_t seq_cv;             /* sequencer: work or stop */
    pthread_cond_t eng_cv;             /* engine: entries or durability */
    pthread_cond_t space_cv;           /* sequencer: journal released */
    pthread_t seq_thread;
    int stop;
    int draining;                      /* pipeline_drain: stop waiting for journal space */
    int stopped;                       /* pipeline_stop done: what is not durable now never will be */
    int journal_full;                  /* the last append found journal.max_bytes reached */
    struct ga_admit *admit;            /* limits.max_metrics, checked at decode; may be NULL */
    struct ga_late_notice *notice;     /* window floors for the ack's late; may be NULL */
    int64_t full_since_ns;             /* since when (monotonic) */

    struct pipeline_item *sq_head, *sq_tail; /* submitted, not yet sequenced */
    size_t sq_len;
    struct lane lanes[PIPELINE_MAX_LANES];   /* engine queues, one a worker */
    int nlanes;
    size_t max_entries, max_bytes;     /* per lane: the entries, a share of the bytes */
    uint64_t durable;                  /* guarded by mu */
    struct pipeline_stats st;
    struct js_log *jsl;                   /* cluster mode: publish here instead */
    uint64_t pub_ctr;                  /* cluster mode: items published */
    size_t max_group_bytes;
};

/* ---- decode workers ---------------------------------------------------- */

struct decode_ctx {
    struct ga_pipeline *p;
    const struct ing_limits *lim;
    void (*done)(struct pipeline_item *);
};

/* Keep the ack's rejections on the item; the batch goes to the engine. */
static int copy_rejections(struct pipeline_item *it, const struct ing_batch *b)
{
    size_t text = 0;
    for (size_t i = 0; i < b->nrejected; i++)
        text += strlen(b->rejected[i].reason) + 1;
    if (!b->nrejected)
        return 0;
    it->rejected = malloc(b->nrejected * sizeof *it->rejected + text);
    if (!it->rejected)
        return GA_ENOMEM;
    char *chars = (char *)(it->rejected + b->nrejected);
    for (size_t i = 0; i < b->nrejected; i++) {
        size_t n = strlen(b->rejected[i].reason) + 1;
        memcpy(chars, b->rejected[i].reason, n);
        it->rejected[i].index = b->rejected[i].index;
        it->rejected[i].reason = chars;
        chars += n;
    }
    it->nrejected = b->nrejected;
    return 0;
}

/* The ack's late: the accepted points of b before their metric's floor in
 * n, each with its metric's floor in the reason.  Flat positions are the
 * rejected ones (b->rejected, ascending) or the accepted points in order. */
static int note_late(struct pipeline_item *it, const struct ing_batch *b, const struct ga_late_notice *n)
{
    if (!b->n || !b->nnames || !ga_late_notice_posted(n))
        return 0;                      /* nothing posted yet: no allocation a batch */
    int64_t *floor = malloc(b->nnames * sizeof *floor);
    if (!floor)
        return GA_ENOMEM;
    int any = 0;
    for (uint32_t i = 0; i < b->nnames; i++) {
        floor[i] = INT64_MIN;
        any |= ga_late_notice_floor(n, b->names[i], b->name_len[i], &floor[i]);
    }
    size_t nlate = 0;
    for (size_t k = 0; any && k < b->n; k++)
        nlate += b->ts[k] < floor[b->name_idx[k]];
    if (!nlate) {
        free(floor);
        return 0;
    }
    /* one reason a metric, shared by its points */
    char **why = calloc(b->nnames, sizeof *why);
    it->late = why ? malloc(nlate * sizeof *it->late) : NULL;
    if (!it->late) {
        free(why);
        free(floor);
        return GA_ENOMEM;
    }
    size_t r = 0, k = 0, out = 0;
    for (uint64_t pos = 0; k < b->n; pos++) {
        if (r < b->nrejected && b->rejected[r].index == pos) {
            r++;
            continue;
        }
        uint32_t ni = b->name_idx[k];
        if (b->ts[k++] >= floor[ni])
            continue;
        if (!why[ni]) {
            char t[TS_RFC3339_LEN + 1];
            ts_format_rfc3339_short(floor[ni], t, sizeof t);
            if (asprintf(&why[ni], "behind its metric's window, which takes no point before %s: "
                         "stored as a late point, not aggregated", t) < 0)
                why[ni] = NULL;
        }
        it->late[out++] = (struct ing_reject){ pos, why[ni] ? why[ni] : "behind its metric's window" };
    }
    it->nlate = out;
    it->late_text = why;
    it->late_ntext = b->nnames;
    free(floor);
    return 0;
}

/* The journal payload of a batch: the columnar points message itself, so
 * replay decodes it with ing_decode like any frame. */
static int encode_record(struct pipeline_item *it, const struct ing_batch *b)
{
    msgpack_sbuffer sb;
    msgpack_packer pk;
    msgpack_sbuffer_init(&sb);
    msgpack_packer_init(&pk, &sb, msgpack_sbuffer_write);
    ing_pack_points_columnar(&pk, b->seq, b->nnames, b->names, b->name_idx, NULL, b->n, b->ts,
                             b->value);
    if (!sb.data) {
        msgpack_sbuffer_destroy(&sb);
        return GA_ENOMEM;
    }
    it->record = (uint8_t *)sb.data;
    it->record_len = sb.size;
    return 0;
}

/* Cluster mode: the batch as one columnar points message per partition
 * (more when a partition's points pass PIPELINE_PREC_MAX_BYTES), in point order. */
static int encode_parts(struct pipeline_item *it, const struct ing_batch *b)
{
    int rc = GA_ENOMEM;
    uint8_t *name_part = malloc(b->nnames ? b->nnames : 1);
    uint32_t *remap = malloc((b->nnames ? b->nnames : 1) * sizeof *remap);
    const char **names = malloc((b->nnames ? b->nnames : 1) * sizeof *names);
    uint32_t *idx = malloc((b->n ? b->n : 1) * sizeof *idx);
    int64_t *ts = malloc((b->n ? b->n : 1) * sizeof *ts);
    double *val = malloc((b->n ? b->n : 1) * sizeof *val);
    size_t cap = 0;
    if (!name_part || !remap || !names || !idx || !ts || !val)
        goto out;
    uint64_t present = 0;
    for (uint32_t i = 0; i < b->nnames; i++) {
        name_part[i] = (uint8_t)ga_partition_of(b->names[i], b->name_len[i]);
        present |= 1ULL << name_part[i];
    }
    for (int p = 0; p < GA_PARTITIONS; p++) {
        if (!(present >> p & 1))
            continue;
        size_t k = 0, est = 0;
        uint32_t nn = 0;
        for (uint32_t i = 0; i < b->nnames; i++)
            remap[i] = UINT32_MAX;
        for (size_t i = 0; i <= b->n; i++) {
            int last = i == b->n;
            if (!last && name_part[b->name_idx[i]] != p)
                continue;
            if (k && (last || est > PIPELINE_PREC_MAX_BYTES)) {
                msgpack_sbuffer sb;
                msgpack_packer pk;
                msgpack_sbuffer_init(&sb);
                msgpack_packer_init(&pk, &sb, msgpack_sbuffer_write);
                ing_pack_points_columnar(&pk, b->seq, nn, names, idx, NULL, k, ts, val);
                if (!sb.data)
                    goto out;
                if (it->nprecs == cap) {
                    size_t nc = cap ? cap * 2 : 4;
                    struct pipeline_prec *np = realloc(it->precs, nc * sizeof *np);
                    if (!np) {
                        msgpack_sbuffer_destroy(&sb);
                        goto out;
                    }
                    it->precs = np;
                    cap = nc;
                }
                it->precs[it->nprecs++] = (struct pipeline_prec){ p, (uint8_t *)sb.data, sb.size };
                for (uint32_t j = 0; j < b->nnames; j++)
                    remap[j] = UINT32_MAX;
                k = est = 0;
                nn = 0;
            }
            if (last)
                break;
            uint32_t ni = b->name_idx[i];
            if (remap[ni] == UINT32_MAX) {
                remap[ni] = nn;
                names[nn++] = b->names[ni];
                est += b->name_len[ni] + 8;
            }
            idx[k] = remap[ni];
            ts[k] = b->ts[i];
            val[k++] = b->value[i];
            est += 24;
        }
    }
    rc = 0;
out:
    free(name_part);
    free(remap);
    free(names);
    free(idx);
    free(ts);
    free(val);
    return rc;
}

/* The batch as one batch per lane (NULL where a lane has no point), each
 * with its names and points in the batch's order: the engine worker of a
 * lane takes only its own partitions' points, and the split runs here, on
 * the decode workers, not on a thread every point passes. */
static int split_lanes(struct pipeline_item *it, const struct ing_batch *b, int nlanes)
{
    size_t npts[PIPELINE_MAX_LANES] = { 0 }, nbytes[PIPELINE_MAX_LANES] = { 0 };
    uint32_t nnames[PIPELINE_MAX_LANES] = { 0 };
    uint8_t *lane = malloc(b->nnames ? b->nnames : 1);
    uint32_t *remap = malloc((b->nnames ? b->nnames : 1) * sizeof *remap);
    it->lane_batch = calloc((size_t)nlanes, sizeof *it->lane_batch);
    int rc = GA_ENOMEM;
    if (!lane || !remap || !it->lane_batch)
        goto out;
    for (uint32_t i = 0; i < b->nnames; i++) {
        lane[i] = (uint8_t)pipeline_lane_of(ga_partition_of(b->names[i], b->name_len[i]), nlanes);
        nnames[lane[i]]++;
        nbytes[lane[i]] += b->name_len[i];
    }
    for (size_t k = 0; k < b->n; k++)
        npts[lane[b->name_idx[k]]]++;
    for (int l = 0; l < nlanes; l++) {
        if (!npts[l])
            continue;
        struct ing_batch *nb = calloc(1, sizeof *nb);
        if (!nb || ing_batch_init(nb, nnames[l], nbytes[l], npts[l]) < 0) {
            free(nb);
            goto out;
        }
        nb->seq = b->seq;
        it->lane_batch[l] = nb;
    }
    for (uint32_t i = 0; i < b->nnames; i++) {
        struct ing_batch *nb = it->lane_batch[lane[i]];
        if (!nb)
            continue;                  /* a name whose points were all rejected */
        remap[i] = nb->nnames;
        ing_batch_add_name(nb, b->names[i], b->name_len[i]);
    }
    for (size_t k = 0; k < b->n; k++) {
        uint32_t ni = b->name_idx[k];
        struct ing_batch *nb = it->lane_batch[lane[ni]];
        nb->name_idx[nb->n] = remap[ni];
        nb->ts[nb->n] = b->ts[k];
        nb->value[nb->n++] = b->value[k];
    }
    rc = 0;
out:
    free(lane);
    free(remap);
    return rc;
}

static void free_lanes(struct pipeline_item *it, int nlanes)
{
    if (!it->lane_batch)
        return;
    for (int l = 0; l < nlanes; l++)
        if (it->lane_batch[l]) {
            ing_batch_free(it->lane_batch[l]);
            free(it->lane_batch[l]);
        }
    free(it->lane_batch);
    it->lane_batch = NULL;
}

static void decode_work(uv_work_t *w)
{
    struct pipeline_item *it = w->data;
    struct decode_ctx *dc = (struct decode_ctx *)it->owner_ctx;
    struct ing_batch *b = calloc(1, sizeof *b);
    if (!b) {
        it->rc = GA_ENOMEM;
        snprintf(it->err, sizeof it->err, "out of memory decoding a batch");
        return;
    }
    if (it->decode) {
        it->rc = it->decode(it, b);
        it->has_seq = 0;
        if (it->rc == 0 && dc->p->admit && ga_admit_batch(dc->p->admit, b) < 0)
            it->rc = GA_ENOMEM;
    } else {
        struct ing_msg m;
        int rc = ing_decode(it->frame, it->len, dc->lim, &m, it->err, sizeof it->err);
        it->has_seq = m.has_seq;
        it->seq = m.seq;
        if (rc == ING_POINTS) {
            *b = m.u.points;            /* move */
            if (dc->p->admit && ga_admit_batch(dc->p->admit, b) < 0) {
                snprintf(it->err, sizeof it->err, "out of memory checking a batch's metrics");
                rc = GA_ENOMEM;
            } else {
                rc = copy_rejections(it, b);
                if (rc == 0 && dc->p->notice)
                    rc = note_late(it, b, dc->p->notice);
            }
        } else if (rc >= 0) {
            static const char *const names[] = { "hello", "points", "ack", "error" };
            snprintf(it->err, sizeof it->err, "unexpected '%s' message: after hello only "
                     "'points' is accepted", names[rc]);
            ing_msg_free(&m);
            rc = GA_EPROTO;
        }
        it->rc = rc < 0 ? rc : 0;
    }
    free(it->frame);
    it->frame = NULL;
    if (it->rc < 0) {
        ing_batch_free(b);
        free(b);
        return;
    }
    it->accepted = b->n;
    if (b->n > 0 && dc->p->jsl) {
        if (encode_parts(it, b) < 0) {
            it->rc = GA_ENOMEM;
            snprintf(it->err, sizeof it->err, "out of memory encoding the partition messages");
        }
        ing_batch_free(b);             /* the engine worker reads the stream */
        free(b);
        return;
    }
    if (b->n > 0 && encode_record(it, b) == 0) {
        if (dc->p->nlanes <= 1) {
            it->batch = b;
            return;
        }
        it->nlanes = dc->p->nlanes;
        if (split_lanes(it, b, dc->p->nlanes) == 0) {
            ing_batch_free(b);
            free(b);
            return;
        }
        free_lanes(it, it->nlanes);
        free(it->record);
        it->record = NULL;
        it->rc = GA_ENOMEM;
        snprintf(it->err, sizeof it->err, "out of memory splitting a batch by partition");
        ing_batch_free(b);
        free(b);
        return;
    }
    if (b->n > 0) {
        it->rc = GA_ENOMEM;
        snprintf(it->err, sizeof it->err, "out of memory encoding a journal record");
    }
    ing_batch_free(b);
    free(b);
}

static void decode_after(uv_work_t *w, int status)
{
    struct pipeline_item *it = w->data;
    struct decode_ctx *dc = (struct decode_ctx *)it->owner_ctx;
    it->owner_ctx = NULL;
    it->state = it->rc < 0 ? PIPELINE_FAILED : PIPELINE_DECODED;
    if (status == UV_ECANCELED && it->rc == 0) {
        it->rc = GA_ECANCELED;
        it->state = PIPELINE_FAILED;
    }
    void (*done)(struct pipeline_item *) = dc->done;
    free(dc);
    done(it);
}

int pipeline_decode(struct ga_pipeline *p, struct pipeline_item *item, const struct ing_limits *lim,
              void (*done)(struct pipeline_item *))
{
    struct decode_ctx *dc = malloc(sizeof *dc);
    if (!dc)
        return GA_ENOMEM;
    *dc = (struct decode_ctx){ p, lim, done };
    item->state = PIPELINE_DECODING;
    item->owner_ctx = dc;
    item->work.data = item;
    int rc = uv_queue_work(p->loop, &item->work, decode_work, decode_after);
    if (rc < 0) {
        free(dc);
        item->owner_ctx = NULL;
        return GA_EIO;
    }
    return 0;
}

void pipeline_item_free(struct pipeline_item *it)
{
    if (!it)
        return;
    free(it->frame);
    free(it->rejected);
    free(it->late);
    for (size_t i = 0; i < it->late_ntext; i++)
        free(it->late_text[i]);
    free(it->late_text);
    free(it->record);
    for (size_t i = 0; i < it->nprecs; i++)
        free(it->precs[i].data);
    free(it->precs);
    if (it->dctx_free)
        it->dctx_free(it->dctx);
    else
        free(it->dctx);
    if (it->batch) {
        ing_batch_free(it->batch);
        free(it->batch);
    }
    free_lanes(it, it->nlanes);
    free(it);
}

/* ---- sequencer ----------------------------------------------------------- */

static size_t batch_bytes(const struct ing_batch *b)
{
    size_t names = 0;
    for (uint32_t i = 0; i < b->nnames; i++)
        names += b->name_len[i] + 1 + sizeof(char *) + sizeof(uint32_t);
    return sizeof *b + names + b->n * (sizeof(int64_t) + sizeof(double) + sizeof(uint32_t));
}

/* Push an entry onto a lane: a batch in memory if the lane has room, else
 * journal-only (coalesced with a journal-only tail); b NULL and skip set:
 * records with nothing for the lane (coalesced with a skip tail).  Called
 * with mu held. */
static void eq_push(struct ga_pipeline *p, int l, uint64_t lsn, uint64_t end,
                    struct ing_batch *b, int skip)
{
    struct lane *q = &p->lanes[l];
    size_t bytes = b ? batch_bytes(b) : 0;
    if (b && (q->entries >= p->max_entries || q->bytes + bytes > p->max_bytes)) {
        ing_batch_free(b);
        free(b);
        b = NULL;
        bytes = 0;
        skip = 0;                      /* read back from the journal */
        p->st.journal_only++;
    }
    if (!b && q->tail && !q->tail->e.batch && q->tail->e.skip == skip && q->tail->e.end == lsn) {
        q->tail->e.end = end;
        return;
    }
    struct eq_node *n = malloc(sizeof *n);
    if (!n) {
        /* Out of memory for a node: the engine finds the gap by LSN and
         * reads it from the journal (pipeline_engine_pop reports ranges). */
        if (b) {
            ing_batch_free(b);
            free(b);
        }
        ga_log(GA_LOG_ERROR, "engine_queue_oom", "lsn=%llu", (unsigned long long)lsn);
        return;
    }
    n->e = (struct pipeline_entry){ lsn, end, b, bytes, skip };
    n->next = NULL;
    if (q->tail)
        q->tail->next = n;
    else
        q->head = n;
    q->tail = n;
    if (b) {
        q->entries++;
        q->bytes += bytes;
    }
    pthread_cond_broadcast(&p->eng_cv);
}

/* Append one item's record; waits while the journal is full, up to
 * JOURNAL_FULL_BUSY_MS, then refuses the item with "busy". */
static void sequence_one(struct ga_pipeline *p, struct pipeline_item *it)
{
    if (!it->record)
        return;
    for (;;) {
        int rc = journal_append(p->j, it->record, it->record_len, &it->lsn, &it->end);
        if (rc == 0) {
            pthread_mutex_lock(&p->mu);
            p->journal_full = 0;
            pthread_mutex_unlock(&p->mu);
            break;
        }
        if (rc == GA_ENOSPC) {
            pthread_mutex_lock(&p->mu);
            if (p->stop || p->draining) {  /* draining with storage behind: never acked, so safe */
                pthread_mutex_unlock(&p->mu);
                it->rc = GA_ESHUTDOWN;
                snprintf(it->err, sizeof it->err, "journal full while shutting down; resend");
                return;
            }
            int64_t now = ga_now_mono_ns();
            if (!p->journal_full) {
                /* tell the loop: ingest pauses reading (backpressure) */
                p->journal_full = 1;
                p->full_since_ns = now;
                uv_async_send(&p->notify);
            }
            /* the batches behind the first one that waited a whole
             * JOURNAL_FULL_BUSY_MS are answered at once */
            if (now - p->full_since_ns >= (int64_t)JOURNAL_FULL_BUSY_MS * 1000000) {
                p->st.journal_full_busy++;
                pthread_mutex_unlock(&p->mu);
                it->rc = GA_EBUSY;
                snprintf(it->err, sizeof it->err, "busy: journal full (journal.max_bytes) while "
                         "storage catches up; batch not accepted, resend later");
                return;
            }
            p->st.journal_full_waits++;
            struct timespec ts = ga_deadline_ms(CLOCK_REALTIME, 100);
            pthread_cond_timedwait(&p->space_cv, &p->mu, &ts);
            pthread_mutex_unlock(&p->mu);
            continue;
        }
        it->rc = rc;
        if (rc == GA_EAGAIN) {
            /* the journal's file system is full: this batch is refused now
             * (the journal retries and recovers once space returns) */
            struct journal_stats js;
            journal_get_stats(p->j, &js);
            snprintf(it->err, sizeof it->err, "journal cannot write (%s): batch not accepted; "
                     "resend later", strerror(js.stalled_errno ? js.stalled_errno : ENOSPC));
            pthread_mutex_lock(&p->mu);
            p->st.journal_stall_refusals++;
            pthread_mutex_unlock(&p->mu);
            return;
        }
        snprintf(it->err, sizeof it->err, "journal append failed: %s", ga_strerror(rc));
        ga_log(GA_LOG_ERROR, "journal_append_failed", "error=\"%s\"", ga_strerror(rc));
        return;
    }
    free(it->record);
    it->record = NULL;
}

static void *sequencer_main(void *arg)
{
    struct ga_pipeline *p = arg;
    pthread_mutex_lock(&p->mu);
    for (;;) {
        while (!p->sq_head && !p->stop)
            pthread_cond_wait(&p->seq_cv, &p->mu);
        if (!p->sq_head)
            break;
        struct pipeline_item *it = p->sq_head;
        pthread_mutex_unlock(&p->mu);
        sequence_one(p, it);
        pthread_mutex_lock(&p->mu);
        p->sq_head = it->seq_next;
        if (!p->sq_head)
            p->sq_tail = NULL;
        p->sq_len--;
        if (it->rc == 0 && (it->batch || it->lane_batch)) {
            p->st.batches++;
            p->st.points += it->accepted;
            p->st.journal_bytes += it->end - it->lsn;
            if (it->batch) {
                eq_push(p, 0, it->lsn, it->end, it->batch, 0);
                it->batch = NULL;
            } else {
                for (int l = 0; l < p->nlanes; l++) {
                    eq_push(p, l, it->lsn, it->end, it->lane_batch[l], !it->lane_batch[l]);
                    it->lane_batch[l] = NULL;
                }
            }
        }
        p->st.rejected += it->nrejected;
        it->state = it->rc < 0 ? PIPELINE_FAILED : PIPELINE_SEQUENCED;
        pthread_mutex_unlock(&p->mu);
        uv_async_send(&p->notify);
        pthread_mutex_lock(&p->mu);
    }
    pthread_mutex_unlock(&p->mu);
    return NULL;
}

/* ---- cluster sequencer ------------------------------------------------------ */

static int publish_stop(void *ctx)
{
    struct ga_pipeline *p = ctx;
    pthread_mutex_lock(&p->mu);
    int s = p->stop || p->draining;
    pthread_mutex_unlock(&p->mu);
    return s;
}

/* Publish the items queued now as one group; ack them once JetStream
 * stored every message (js_log_publish retries until then or until stop). */
static void *cluster_sequencer_main(void *arg)
{
    struct ga_pipeline *p = arg;
    struct js_log_msg *msgs = NULL;
    size_t mcap = 0;
    pthread_mutex_lock(&p->mu);
    for (;;) {
        while (!p->sq_head && !p->stop)
            pthread_cond_wait(&p->seq_cv, &p->mu);
        if (!p->sq_head)
            break;
        /* the group: items at the head, up to the bounds (at least one) */
        size_t k = 0, n = 0, bytes = 0;
        struct pipeline_item *it = p->sq_head, *grp[PIPELINE_GROUP_MAX_ITEMS];
        for (; it && k < PIPELINE_GROUP_MAX_ITEMS; it = it->seq_next) {
            size_t b = 0;
            for (size_t i = 0; i < it->nprecs; i++)
                b += it->precs[i].len;
            if (k && bytes + b > p->max_group_bytes)
                break;
            bytes += b;
            n += it->nprecs;
            grp[k++] = it;
        }
        pthread_mutex_unlock(&p->mu);
        int rc = 0;
        if (n > mcap) {
            struct js_log_msg *nm = realloc(msgs, n * sizeof *nm);
            if (nm) {
                msgs = nm;
                mcap = n;
            } else {
                rc = GA_ENOMEM;
            }
        }
        size_t m = 0;
        for (size_t i = 0; rc == 0 && i < k; i++)   /* only this thread removes items */
            for (size_t j = 0; j < grp[i]->nprecs; j++)
                msgs[m++] = (struct js_log_msg){ grp[i]->precs[j].part, grp[i]->precs[j].data,
                                              grp[i]->precs[j].len };
        if (rc == 0)
            rc = js_log_publish(p->jsl, msgs, m, NULL, publish_stop, p);
        pthread_mutex_lock(&p->mu);
        for (size_t i = 0; i < k; i++) {
            it = p->sq_head;
            p->sq_head = it->seq_next;
            if (!p->sq_head)
                p->sq_tail = NULL;
            p->sq_len--;
            if (rc < 0 && it->nprecs) {
                it->rc = rc;
                snprintf(it->err, sizeof it->err, "%s",
                         rc == GA_ESHUTDOWN ? "JetStream did not acknowledge before shutdown; "
                                              "resend"
                                            : rc == GA_ETOOBIG ? "a partition message is over "
                                                                 "the NATS max_payload"
                                                               : "publishing to JetStream failed");
            } else if (it->nprecs) {
                it->lsn = p->pub_ctr;
                it->end = ++p->pub_ctr;
                p->st.batches++;
                p->st.points += it->accepted;
                for (size_t j = 0; j < it->nprecs; j++)
                    p->st.journal_bytes += it->precs[j].len;
            }
            for (size_t j = 0; j < it->nprecs; j++)
                free(it->precs[j].data);
            free(it->precs);
            it->precs = NULL;
            it->nprecs = 0;
            p->st.rejected += it->nrejected;
            it->state = it->rc < 0 ? PIPELINE_FAILED : PIPELINE_SEQUENCED;
        }
        if (rc == 0)
            p->durable = p->pub_ctr;
        pthread_mutex_unlock(&p->mu);
        uv_async_send(&p->notify);
        pthread_mutex_lock(&p->mu);
    }
    pthread_mutex_unlock(&p->mu);
    free(msgs);
    return NULL;
}

void pipeline_submit(struct ga_pipeline *p, struct pipeline_item *it)
{
    pthread_mutex_lock(&p->mu);
    it->state = PIPELINE_SEQUENCING;
    it->seq_next = NULL;
    if (p->sq_tail)
        p->sq_tail->seq_next = it;
    else
        p->sq_head = it;
    p->sq_tail = it;
    p->sq_len++;
    pthread_cond_signal(&p->seq_cv);
    pthread_mutex_unlock(&p->mu);
}

size_t pipeline_backlog(struct ga_pipeline *p)
{
    pthread_mutex_lock(&p->mu);
    size_t n = p->sq_len;
    pthread_mutex_unlock(&p->mu);
    return n;
}

enum pipeline_item_state pipeline_item_state(struct ga_pipeline *p, const struct pipeline_item *it)
{
    pthread_mutex_lock(&p->mu);
    enum pipeline_item_state s = it->state;
    pthread_mutex_unlock(&p->mu);
    return s;
}

void pipeline_set_admit(struct ga_pipeline *p, struct ga_admit *a)
{
    p->admit = a;
}

void pipeline_set_late_notice(struct ga_pipeline *p, struct ga_late_notice *n)
{
    p->notice = n;
}

int pipeline_journal_full(struct ga_pipeline *p)
{
    pthread_mutex_lock(&p->mu);
    int f = p->journal_full;
    pthread_mutex_unlock(&p->mu);
    return f;
}

uint64_t pipeline_durable_lsn(struct ga_pipeline *p)
{
    pthread_mutex_lock(&p->mu);
    uint64_t d = p->durable;
    pthread_mutex_unlock(&p->mu);
    return d;
}

/* ---- durability ---------------------------------------------------------- */

static void on_commit(void *ctx, uint64_t durable, int err)
{
    struct ga_pipeline *p = ctx;
    if (err == GA_EAGAIN) {
        ga_log(GA_LOG_WARN, "journal_sync_stalled", "durable_lsn=%llu msg=\"batches already "
               "appended are acknowledged once the journal can write again\"",
               (unsigned long long)durable);
        return;
    }
    if (err < 0) {
        ga_log(GA_LOG_ERROR, "journal_sync_failed", "error=\"%s\"", ga_strerror(err));
        return;
    }
    pthread_mutex_lock(&p->mu);
    if (durable > p->durable) {
        p->durable = durable;
        pthread_cond_broadcast(&p->eng_cv);
    }
    pthread_mutex_unlock(&p->mu);
    uv_async_send(&p->notify);
}

static void on_notify(uv_async_t *a)
{
    struct ga_pipeline *p = a->data;
    p->on_durable(p->ctx, pipeline_durable_lsn(p));
}

void pipeline_drain(struct ga_pipeline *p)
{
    pthread_mutex_lock(&p->mu);
    p->draining = 1;
    pthread_cond_broadcast(&p->space_cv);
    pthread_mutex_unlock(&p->mu);
}

void pipeline_journal_released(struct ga_pipeline *p)
{
    pthread_mutex_lock(&p->mu);
    pthread_cond_broadcast(&p->space_cv);
    pthread_mutex_unlock(&p->mu);
}

/* ---- engine side ---------------------------------------------------------- */

int pipeline_engine_pop(struct ga_pipeline *p, int lane, struct pipeline_entry *e, int timeout_ms)
{
    struct timespec until = ga_deadline_ms(CLOCK_REALTIME, timeout_ms);
    struct lane *q = &p->lanes[lane];
    pthread_mutex_lock(&p->mu);
    int rc = 0;
    for (;;) {
        struct eq_node *n = q->head;
        if (n && n->e.end <= p->durable) {
            *e = n->e;
            q->head = n->next;
            if (!q->head)
                q->tail = NULL;
            if (n->e.batch) {
                q->entries--;
                q->bytes -= n->e.bytes;
            }
            free(n);
            rc = 1;
            break;
        }
        if (p->stop && !n && !p->sq_head) {
            rc = GA_ESHUTDOWN;
            break;
        }
        /* stopped with records that never became durable (the journal
         * could not write them): they were never acknowledged; the engine
         * stops here */
        if (p->stopped && n && n->e.end > p->durable) {
            rc = GA_ESHUTDOWN;
            break;
        }
        if (pthread_cond_timedwait(&p->eng_cv, &p->mu, &until) != 0)
            break;
    }
    pthread_mutex_unlock(&p->mu);
    return rc;
}

int pipeline_lanes(const struct ga_pipeline *p)
{
    return p->nlanes;
}

void pipeline_get_stats(struct ga_pipeline *p, struct pipeline_stats *st)
{
    pthread_mutex_lock(&p->mu);
    *st = p->st;
    st->engine_queue = st->engine_queue_bytes = 0;
    for (int l = 0; l < p->nlanes; l++) {
        st->engine_queue += p->lanes[l].entries;
        st->engine_queue_bytes += p->lanes[l].bytes;
    }
    st->sequencer_backlog = p->sq_len;
    st->durable_lsn = p->durable;
    pthread_mutex_unlock(&p->mu);
}

/* ---- life ------------------------------------------------------------------ */

static void free_pipeline(uv_handle_t *h)
{
    struct ga_pipeline *p = h->data;
    pthread_cond_destroy(&p->seq_cv);
    pthread_cond_destroy(&p->eng_cv);
    pthread_cond_destroy(&p->space_cv);
    pthread_mutex_destroy(&p->mu);
    free(p);
}

/* What both kinds of pipeline share: locks, the loop's wake-up, the
 * callback.  NULL when out of memory. */
static struct ga_pipeline *new_pipeline(uv_loop_t *loop,
                                        void (*on_durable)(void *ctx, uint64_t durable_lsn),
                                        void *ctx)
{
    struct ga_pipeline *p = calloc(1, sizeof *p);
    if (!p)
        return NULL;
    p->loop = loop;
    p->on_durable = on_durable;
    p->ctx = ctx;
    p->max_entries = 1;
    p->nlanes = 1;
    pthread_mutex_init(&p->mu, NULL);
    pthread_cond_init(&p->seq_cv, NULL);
    pthread_cond_init(&p->eng_cv, NULL);
    pthread_cond_init(&p->space_cv, NULL);
    uv_async_init(loop, &p->notify, on_notify);
    p->notify.data = p;
    return p;
}

int pipeline_start(struct ga_pipeline **out, uv_loop_t *loop, struct journal *j, int fsync_interval_ms,
             int nlanes, size_t max_entries, size_t max_bytes,
             void (*on_durable)(void *ctx, uint64_t durable_lsn), void *ctx)
{
    if (nlanes < 1 || nlanes > PIPELINE_MAX_LANES)
        return GA_EINVAL;
    struct ga_pipeline *p = new_pipeline(loop, on_durable, ctx);
    if (!p)
        return GA_ENOMEM;
    p->j = j;
    p->nlanes = nlanes;
    /* a lane's entries are its share of each batch: as many of them as
     * the whole queue would hold, in its share of the bytes */
    p->max_entries = max_entries ? max_entries : 1;
    p->max_bytes = max_bytes / (size_t)nlanes;
    struct journal_stats js;
    journal_get_stats(j, &js);
    p->durable = js.durable_lsn;
    int rc = journal_commit_start(&p->commit, j, fsync_interval_ms, on_commit, p);
    if (rc < 0)
        goto fail;
    if (pthread_create(&p->seq_thread, NULL, sequencer_main, p) != 0) {
        journal_commit_stop(p->commit);
        rc = GA_ENOMEM;
        goto fail;
    }
    pthread_setname_np(p->seq_thread, "ga-sequencer");
    *out = p;
    return 0;
fail:
    uv_close((uv_handle_t *)&p->notify, free_pipeline);
    return rc;
}

int pipeline_start_cluster(struct ga_pipeline **out, uv_loop_t *loop, struct js_log *jsl,
                     size_t max_group_bytes,
                     void (*on_durable)(void *ctx, uint64_t durable_lsn), void *ctx)
{
    struct ga_pipeline *p = new_pipeline(loop, on_durable, ctx);
    if (!p)
        return GA_ENOMEM;
    p->jsl = jsl;
    p->max_group_bytes = max_group_bytes ? max_group_bytes : 1;
    if (pthread_create(&p->seq_thread, NULL, cluster_sequencer_main, p) != 0) {
        uv_close((uv_handle_t *)&p->notify, free_pipeline);
        return GA_ENOMEM;
    }
    pthread_setname_np(p->seq_thread, "ga-sequencer");
    *out = p;
    return 0;
}

void pipeline_stop(struct ga_pipeline *p)
{
    pthread_mutex_lock(&p->mu);
    p->stop = 1;
    pthread_cond_broadcast(&p->seq_cv);
    pthread_cond_broadcast(&p->space_cv);
    pthread_mutex_unlock(&p->mu);
    pthread_join(p->seq_thread, NULL);
    if (p->commit)
        journal_commit_stop(p->commit);    /* final sync + on_commit */
    pthread_mutex_lock(&p->mu);
    p->stopped = 1;
    pthread_cond_broadcast(&p->eng_cv);
    pthread_mutex_unlock(&p->mu);
}

void pipeline_close(struct ga_pipeline *p)
{
    for (int l = 0; l < p->nlanes; l++) {
        for (struct eq_node *n = p->lanes[l].head, *next; n; n = next) {
            next = n->next;
            if (n->e.batch) {
                ing_batch_free(n->e.batch);
                free(n->e.batch);
            }
            free(n);
        }
        p->lanes[l].head = p->lanes[l].tail = NULL;
    }
    uv_close((uv_handle_t *)&p->notify, free_pipeline);
}
