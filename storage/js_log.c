/* js_log.c — the JetStream log of cluster mode (js_log.h). */
#include "storage/js_log.h"

#include <inttypes.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <time.h>

#include <nats/nats.h>

#include "proto/base/log.h"
#include "proto/ga_err.h"
#include "proto/ga_partition.h"

#define JS_LOG_MAX_URLS 16
#define JS_LOG_DUP_WINDOW_NS (120LL * 1000000000)   /* the stream's duplicate window */

struct js_log {
    struct js_log_opts o;
    char urls_buf[1024], stream[64], subj_all[96], creds[4096], token[256], name[64];
    natsOptions *nopts;
    natsConnection *nc;
    jsCtx *js;
    int stream_ok;                    /* the stream exists with our subjects */
    char id_prefix[48];               /* Nats-Msg-Id: "<prefix>-<group>-<index>" */
    uint64_t group;                   /* publish group number */
    pthread_mutex_t mu;               /* guards the group's ack state and st */
    uint8_t *acked;                   /* per message of the current group */
    size_t nacked_cap, ngroup, nacked;
    uint64_t group_max_seq;
    char ack_err[200];
    struct js_log_stats st;
    uint64_t reconnects;              /* connection re-made (subscriptions re-created) */
    struct ga_ratelimit err_rl;       /* nats_async_error lines */
    char description[256];            /* of a stream we create (guarded by mu) */
};

#define JS_LOG_STALL_NS (2LL * 1000000000) /* silent this long with messages due: re-create */
/* The consumer's pending bound: above nats-server's flow-control window
 * (32 MiB of messages delivered and not yet taken), so the server's flow
 * control, not a drop, holds the delivery back. */
#define JS_LOG_SUB_PENDING_BYTES (64 * 1024 * 1024)
#define JS_LOG_SUB_HEARTBEAT_NS 1000000000LL   /* idle heartbeat: a flow-control stall ends */

struct js_log_sub {
    struct js_log *j;
    natsSubscription *sub;
    natsMsg *msg;                     /* the last message returned */
    uint64_t next;                    /* the sequence expected next */
    uint64_t stream_last;
    size_t prefix_len;
    uint64_t reconnects;              /* j->reconnects when subscribed */
    int64_t last_msg_ns, last_check_ns;
    int gap_reset;                    /* re-created once for a gap */
};

static int64_t mono_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
}

static void set_error(struct js_log *j, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void set_error(struct js_log *j, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    pthread_mutex_lock(&j->mu);
    vsnprintf(j->st.last_error, sizeof j->st.last_error, fmt, ap);
    pthread_mutex_unlock(&j->mu);
    va_end(ap);
}

static void sleep_ms(int ms)
{
    struct timespec ts = { ms / 1000, (long)(ms % 1000) * 1000000 };
    nanosleep(&ts, NULL);
}

/* ---- acks ------------------------------------------------------------------ */

static void on_ack(jsCtx *js, natsMsg *msg, jsPubAck *pa, jsPubAckErr *pae, void *closure)
{
    (void)js;
    struct js_log *j = closure;
    const char *id = NULL;
    unsigned long long g = 0, idx = 0;
    if (natsMsgHeader_Get(msg, "Nats-Msg-Id", &id) == NATS_OK && id) {
        const char *p = id + strlen(j->id_prefix);
        if (strncmp(id, j->id_prefix, strlen(j->id_prefix)) != 0 ||
            sscanf(p, "-%llu-%llu", &g, &idx) != 2)
            g = 0;
    }
    pthread_mutex_lock(&j->mu);
    if (g && g == j->group && idx < j->ngroup) {
        if (pa && !j->acked[idx]) {
            j->acked[idx] = 1;
            j->nacked++;
            if (pa->Sequence > j->group_max_seq)
                j->group_max_seq = pa->Sequence;
        } else if (!pa && pae) {
            snprintf(j->ack_err, sizeof j->ack_err, "JetStream refused a message: %s (%d)",
                     pae->ErrText ? pae->ErrText : natsStatus_GetText(pae->Err),
                     (int)pae->ErrCode);
        }
    }
    pthread_mutex_unlock(&j->mu);
    natsMsg_Destroy(msg);
}

/* ---- connection and stream --------------------------------------------------- */

static void on_disconnected(natsConnection *nc, void *closure)
{
    (void)nc;
    struct js_log *j = closure;
    pthread_mutex_lock(&j->mu);
    j->st.connected = 0;
    pthread_mutex_unlock(&j->mu);
    ga_log(GA_LOG_WARN, "nats_disconnected", "msg=\"reconnecting\"");
}

static void on_reconnected(natsConnection *nc, void *closure)
{
    struct js_log *j = closure;
    char url[128] = "";
    natsConnection_GetConnectedUrl(nc, url, sizeof url);
    pthread_mutex_lock(&j->mu);
    j->st.connected = 1;
    j->reconnects++;
    snprintf(j->st.server, sizeof j->st.server, "%s", url);
    pthread_mutex_unlock(&j->mu);
    ga_log(GA_LOG_INFO, "nats_connected", "server=\"%s\"", url);
}

static void on_async_error(natsConnection *nc, natsSubscription *sub, natsStatus err,
                           void *closure)
{
    (void)nc;
    (void)sub;
    struct js_log *j = closure;
    uint64_t suppressed;
    pthread_mutex_lock(&j->mu);
    j->st.async_errors++;
    int log = ga_ratelimit_ok(&j->err_rl, &suppressed);
    pthread_mutex_unlock(&j->mu);
    if (log)
        ga_log(GA_LOG_WARN, "nats_async_error", "error=\"%s\" suppressed_lines=%llu",
               natsStatus_GetText(err), (unsigned long long)suppressed);
}

/* Create the stream, or check that the existing one has our subjects.
 * 0 or GA_EIO / GA_ECONFIG with the reason in j's last_error. */
static int ensure_stream(struct js_log *j)
{
    if (j->stream_ok)
        return 0;
    jsStreamInfo *si = NULL;
    jsErrCode jerr = 0;
    natsStatus s = js_GetStreamInfo(&si, j->js, j->stream, NULL, &jerr);
    if (s == NATS_OK) {
        int ok = 0;
        for (int i = 0; si->Config && i < si->Config->SubjectsLen; i++)
            ok |= strcmp(si->Config->Subjects[i], j->subj_all) == 0;
        jsStreamInfo_Destroy(si);
        if (!ok) {
            set_error(j, "stream %s exists without the subject %s: another application's "
                      "stream? set cluster.stream", j->stream, j->subj_all);
            return GA_ECONFIG;
        }
        j->stream_ok = 1;
        return 0;
    }
    if (s != NATS_NOT_FOUND && jerr != JSStreamNotFoundErr) {
        set_error(j, "stream %s: %s (%d)", j->stream, natsStatus_GetText(s), (int)jerr);
        return GA_EIO;
    }
    jsStreamConfig cfg;
    jsStreamConfig_Init(&cfg);
    const char *subj[1] = { j->subj_all };
    cfg.Name = j->stream;
    cfg.Subjects = subj;
    cfg.SubjectsLen = 1;
    cfg.Storage = js_FileStorage;
    cfg.Replicas = j->o.replicas;
    cfg.Duplicates = JS_LOG_DUP_WINDOW_NS;
    char desc[sizeof j->description];
    pthread_mutex_lock(&j->mu);
    snprintf(desc, sizeof desc, "%s", j->description);
    pthread_mutex_unlock(&j->mu);
    if (desc[0])
        cfg.Description = desc;
    s = js_AddStream(&si, j->js, &cfg, NULL, &jerr);
    if (s != NATS_OK) {
        set_error(j, "creating stream %s (R=%d): %s (%d)", j->stream, j->o.replicas,
                  nats_GetLastError(NULL) ? nats_GetLastError(NULL) : natsStatus_GetText(s),
                  (int)jerr);
        return GA_EIO;
    }
    jsStreamInfo_Destroy(si);
    ga_log(GA_LOG_INFO, "nats_stream_created", "stream=%s subjects=%s replicas=%d", j->stream,
           j->subj_all, j->o.replicas);
    j->stream_ok = 1;
    return 0;
}

int js_log_open(struct js_log **out, const struct js_log_opts *o, char *err, size_t errlen)
{
    if (!o->urls || !o->urls[0] || !o->stream || !o->stream[0] || o->replicas < 1)
        return ga_fail(GA_EINVAL, err, errlen, "cluster: NATS URLs and a stream are needed");
    struct js_log *j = calloc(1, sizeof *j);
    if (!j)
        return ga_fail(GA_ENOMEM, err, errlen, "out of memory");
    j->o = *o;
    snprintf(j->urls_buf, sizeof j->urls_buf, "%s", o->urls);
    snprintf(j->stream, sizeof j->stream, "%s", o->stream);
    snprintf(j->subj_all, sizeof j->subj_all, "%s.p.*", o->stream);
    snprintf(j->creds, sizeof j->creds, "%s", o->credentials ? o->credentials : "");
    snprintf(j->token, sizeof j->token, "%s", o->token ? o->token : "");
    snprintf(j->name, sizeof j->name, "%s", o->name ? o->name : "gpuaggd");
    uint64_t rnd = 0;
    if (getrandom(&rnd, sizeof rnd, 0) != sizeof rnd)
        rnd = (uint64_t)time(NULL) ^ (uint64_t)(uintptr_t)j;
    snprintf(j->id_prefix, sizeof j->id_prefix, "%.20s-%016" PRIx64, j->name, rnd);
    pthread_mutex_init(&j->mu, NULL);
    j->err_rl = (struct ga_ratelimit)GA_RATELIMIT_INIT(10LL * 1000000000);

    const char *urls[JS_LOG_MAX_URLS];
    int nurls = 0;
    char tmp[1024];
    snprintf(tmp, sizeof tmp, "%s", o->urls);
    char *save = NULL;
    for (char *u = strtok_r(tmp, ", ", &save); u && nurls < JS_LOG_MAX_URLS;
         u = strtok_r(NULL, ", ", &save))
        urls[nurls++] = u;
    natsStatus s = natsOptions_Create(&j->nopts);
    if (s == NATS_OK)
        s = natsOptions_SetServers(j->nopts, urls, nurls);
    if (s == NATS_OK)
        s = natsOptions_SetName(j->nopts, j->name);
    if (s == NATS_OK)
        s = natsOptions_SetRetryOnFailedConnect(j->nopts, true, NULL, NULL);
    if (s == NATS_OK)
        s = natsOptions_SetMaxReconnect(j->nopts, -1);
    if (s == NATS_OK)
        s = natsOptions_SetReconnectWait(j->nopts, 250);
    if (s == NATS_OK)
        s = natsOptions_SetTimeout(j->nopts, 2000);
    if (s == NATS_OK)
        s = natsOptions_SetReconnectBufSize(j->nopts, 0);  /* fail fast; we resend */
    if (s == NATS_OK)
        s = natsOptions_SetDisconnectedCB(j->nopts, on_disconnected, j);
    if (s == NATS_OK)
        s = natsOptions_SetReconnectedCB(j->nopts, on_reconnected, j);
    if (s == NATS_OK)
        s = natsOptions_SetErrorHandler(j->nopts, on_async_error, j);
    if (s == NATS_OK && j->creds[0])
        s = natsOptions_SetUserCredentialsFromFiles(j->nopts, j->creds, NULL);
    if (s == NATS_OK && j->token[0])
        s = natsOptions_SetToken(j->nopts, j->token);
    if (s != NATS_OK) {
        ga_fail(GA_EINVAL, err, errlen, "cluster: NATS options: %s",
                nats_GetLastError(NULL) ? nats_GetLastError(NULL) : natsStatus_GetText(s));
        js_log_close(j);
        return GA_EINVAL;
    }
    s = natsConnection_Connect(&j->nc, j->nopts);
    if (s != NATS_OK && s != NATS_NOT_YET_CONNECTED) {
        ga_fail(GA_EIO, err, errlen, "cluster: connecting to %s: %s", o->urls,
                natsStatus_GetText(s));
        js_log_close(j);
        return GA_EIO;
    }
    if (s == NATS_OK)
        on_reconnected(j->nc, j);
    else
        ga_log(GA_LOG_WARN, "nats_not_connected", "urls=\"%s\" msg=\"no server answers yet; "
               "retrying in the background, producers wait\"", o->urls);
    jsOptions jo;
    jsOptions_Init(&jo);
    jo.Wait = o->publish_timeout_ms;
    jo.PublishAsync.AckHandler = on_ack;
    jo.PublishAsync.AckHandlerClosure = j;
    jo.PublishAsync.MaxPending = 1 << 16;
    s = natsConnection_JetStream(&j->js, j->nc, &jo);
    if (s != NATS_OK) {
        ga_fail(GA_EIO, err, errlen, "cluster: JetStream context: %s", natsStatus_GetText(s));
        js_log_close(j);
        return GA_EIO;
    }
    *out = j;
    return 0;
}

void js_log_close(struct js_log *j)
{
    if (!j)
        return;
    if (j->js)
        jsCtx_Destroy(j->js);
    if (j->nc) {
        natsConnection_Close(j->nc);
        natsConnection_Destroy(j->nc);
    }
    if (j->nopts)
        natsOptions_Destroy(j->nopts);
    free(j->acked);
    pthread_mutex_destroy(&j->mu);
    free(j);
}

/* ---- publishing -------------------------------------------------------------- */

/* Send the messages of the group not yet acknowledged.  0 or the first
 * nats error's code. */
static natsStatus send_unacked(struct js_log *j, const struct js_log_msg *m, size_t n)
{
    char subj[96], id[128];
    for (size_t i = 0; i < n; i++) {
        pthread_mutex_lock(&j->mu);
        int done = j->acked[i];
        pthread_mutex_unlock(&j->mu);
        if (done)
            continue;
        natsMsg *msg = NULL;
        snprintf(subj, sizeof subj, "%s.p.%d", j->stream, m[i].partition);
        snprintf(id, sizeof id, "%s-%" PRIu64 "-%zu", j->id_prefix, j->group, i);
        natsStatus s = natsMsg_Create(&msg, subj, NULL, (const char *)m[i].data, (int)m[i].len);
        if (s == NATS_OK)
            s = natsMsgHeader_Set(msg, "Nats-Msg-Id", id);
        if (s == NATS_OK)
            s = js_PublishMsgAsync(j->js, &msg, NULL);
        natsMsg_Destroy(msg);              /* NULL once the library took it */
        if (s != NATS_OK)
            return s;
    }
    return NATS_OK;
}

/* Drop what the library still holds of the group (timed out). */
static void drop_pending(struct js_log *j)
{
    natsMsgList pending = { 0 };
    if (js_PublishAsyncGetPendingList(&pending, j->js) == NATS_OK)
        natsMsgList_Destroy(&pending);
}

int js_log_publish(struct js_log *j, const struct js_log_msg *msgs, size_t n, uint64_t *last_seq,
                int (*stop)(void *sctx), void *sctx)
{
    if (n == 0)
        return 0;
    int64_t maxp = j->nc ? natsConnection_GetMaxPayload(j->nc) : 0;
    uint64_t bytes = 0;
    for (size_t i = 0; i < n; i++) {
        if (maxp > 0 && (int64_t)msgs[i].len + 512 > maxp)
            return GA_ETOOBIG;
        bytes += msgs[i].len;
    }
    pthread_mutex_lock(&j->mu);
    if (n > j->nacked_cap) {
        uint8_t *a = realloc(j->acked, n);
        if (!a) {
            pthread_mutex_unlock(&j->mu);
            return GA_ENOMEM;
        }
        j->acked = a;
        j->nacked_cap = n;
    }
    memset(j->acked, 0, n);
    j->group++;
    j->ngroup = n;
    j->nacked = 0;
    j->group_max_seq = 0;
    j->ack_err[0] = '\0';
    pthread_mutex_unlock(&j->mu);
    int backoff = 50, tries = 0;
    for (;;) {
        int rc = ensure_stream(j);
        natsStatus s = NATS_OK;
        if (rc == 0) {
            s = send_unacked(j, msgs, n);
            if (s == NATS_OK) {
                jsPubOptions po;
                jsPubOptions_Init(&po);
                po.MaxWait = j->o.publish_timeout_ms;
                s = js_PublishAsyncComplete(j->js, &po);
                if (s != NATS_OK)
                    drop_pending(j);
            }
        }
        pthread_mutex_lock(&j->mu);
        int all = j->nacked == n;
        uint64_t mx = j->group_max_seq;
        char aerr[200];
        snprintf(aerr, sizeof aerr, "%s", j->ack_err);
        j->ack_err[0] = '\0';
        if (all) {
            j->st.published += n;
            j->st.publish_bytes += bytes;
            j->st.publish_groups++;
            j->st.publish_retries += (uint64_t)tries;
            if (mx > j->st.last_acked_seq)
                j->st.last_acked_seq = mx;
            if (mx > j->st.stream_last_seq)
                j->st.stream_last_seq = mx;
            j->st.last_error[0] = '\0';
        }
        pthread_mutex_unlock(&j->mu);
        if (all) {
            if (last_seq)
                *last_seq = mx;
            return 0;
        }
        if (rc == 0) {
            if (aerr[0])
                set_error(j, "%s", aerr);
            else
                set_error(j, "publish to %s not acknowledged within %d ms: %s", j->stream,
                          j->o.publish_timeout_ms, natsStatus_GetText(s));
            if (aerr[0] && strstr(aerr, "stream not found"))
                j->stream_ok = 0;
        }
        tries++;
        if (tries == 1 || tries % 20 == 0) {
            char e[256];
            pthread_mutex_lock(&j->mu);
            snprintf(e, sizeof e, "%s", j->st.last_error);
            pthread_mutex_unlock(&j->mu);
            ga_log(GA_LOG_WARN, "nats_publish_retry", "tries=%d messages=%zu error=\"%s\" "
                   "msg=\"producers wait (backpressure) until JetStream acknowledges\"", tries, n,
                   e);
        }
        if (stop && stop(sctx))
            return GA_ESHUTDOWN;
        sleep_ms(backoff);
        backoff = backoff * 2 > 1000 ? 1000 : backoff * 2;
    }
}

/* ---- consuming ------------------------------------------------------------------ */

static int sub_create(struct js_log_sub *s, char *err, size_t errlen)
{
    struct js_log *j = s->j;
    int rc = ensure_stream(j);
    if (rc < 0) {
        pthread_mutex_lock(&j->mu);
        ga_fail(rc, err, errlen, "%s", j->st.last_error);
        pthread_mutex_unlock(&j->mu);
        return rc;
    }
    jsSubOptions so;
    jsSubOptions_Init(&so);
    so.Stream = j->stream;
    so.Ordered = true;
    so.Config.DeliverPolicy = js_DeliverByStartSequence;
    so.Config.OptStartSeq = s->next ? s->next : 1;
    so.Config.Heartbeat = JS_LOG_SUB_HEARTBEAT_NS;
    jsErrCode jerr = 0;
    natsStatus st = js_SubscribeSync(&s->sub, j->js, j->subj_all, NULL, &so, &jerr);
    if (st != NATS_OK) {
        s->sub = NULL;
        return ga_fail(GA_EIO, err, errlen, "subscribing to %s from %" PRIu64 ": %s (%d)",
                       j->subj_all, s->next, natsStatus_GetText(st), (int)jerr);
    }
    /* Bounded by bytes only, above the server's flow-control window: a
     * subscription that drops messages (slow consumer) loses the flow
     * control requests among them too, and the server then sends nothing
     * until the next idle heartbeat, so catching up would crawl. */
    natsSubscription_SetPendingLimits(s->sub, -1, JS_LOG_SUB_PENDING_BYTES);
    pthread_mutex_lock(&j->mu);
    s->reconnects = j->reconnects;
    pthread_mutex_unlock(&j->mu);
    s->last_msg_ns = s->last_check_ns = mono_ns();
    return 0;
}

/* The ordered consumer lives on one server: when that server or our
 * connection went away it may stay silent without an error.  Re-create it
 * after a reconnect, and when it was silent for JS_LOG_STALL_NS while the
 * stream has messages past the next expected one.  1: re-create. */
static int sub_stalled(struct js_log_sub *s)
{
    struct js_log *j = s->j;
    pthread_mutex_lock(&j->mu);
    int reconnected = j->reconnects != s->reconnects;
    pthread_mutex_unlock(&j->mu);
    if (reconnected)
        return 1;
    int64_t now = mono_ns();
    if (now - s->last_msg_ns < JS_LOG_STALL_NS || now - s->last_check_ns < JS_LOG_STALL_NS)
        return 0;
    s->last_check_ns = now;
    pthread_mutex_lock(&j->mu);
    uint64_t acked = j->st.last_acked_seq;
    pthread_mutex_unlock(&j->mu);
    if (acked >= s->next)
        return 1;                      /* we were told a message at or past it is stored */
    jsStreamInfo *si = NULL;
    jsErrCode jerr = 0;
    natsStatus st = js_GetStreamInfo(&si, j->js, j->stream, NULL, &jerr);
    if (st != NATS_OK) {
        ga_log(GA_LOG_WARN, "nats_stall_check_failed", "next_seq=%" PRIu64 " error=\"%s (%d)\" "
               "msg=\"the consumer has been silent; cannot tell whether messages are due\"",
               s->next, natsStatus_GetText(st), (int)jerr);
        return 0;
    }
    uint64_t last = si->State.LastSeq;
    jsStreamInfo_Destroy(si);
    return last >= s->next;
}

int js_log_sub_open(struct js_log_sub **out, struct js_log *j, uint64_t from, char *err, size_t errlen)
{
    struct js_log_sub *s = calloc(1, sizeof *s);
    if (!s)
        return ga_fail(GA_ENOMEM, err, errlen, "out of memory");
    s->j = j;
    s->next = from ? from : 1;
    s->prefix_len = strlen(j->stream) + 3;        /* "<stream>.p." */
    int rc = sub_create(s, err, errlen);
    if (rc < 0 && rc != GA_EIO) {
        free(s);
        return rc;
    }
    *out = s;                          /* GA_EIO: created on the next call */
    return 0;
}

static void sub_drop(struct js_log_sub *s)
{
    if (s->msg) {
        natsMsg_Destroy(s->msg);
        s->msg = NULL;
    }
    if (s->sub) {
        natsSubscription_Unsubscribe(s->sub);
        natsSubscription_Destroy(s->sub);
        s->sub = NULL;
    }
}

int js_log_sub_next(struct js_log_sub *s, uint64_t *seq, int *part, const void **data, size_t *len,
                 int timeout_ms)
{
    struct js_log *j = s->j;
    if (s->msg) {
        natsMsg_Destroy(s->msg);
        s->msg = NULL;
    }
    if (!s->sub) {
        char err[256];
        if (sub_create(s, err, sizeof err) < 0) {
            sleep_ms(timeout_ms < 200 ? timeout_ms : 200);
            return GA_EIO;
        }
    }
    for (;;) {
        natsMsg *m = NULL;
        natsStatus st = natsSubscription_NextMsg(&m, s->sub, timeout_ms);
        if (st == NATS_TIMEOUT && !sub_stalled(s))
            return 0;
        if (st != NATS_OK) {
            ga_log(GA_LOG_WARN, "nats_consumer_reset", "next_seq=%" PRIu64 " error=\"%s\"",
                   s->next, st == NATS_TIMEOUT ? "silent after a reconnect, or while the "
                                                 "stream has messages past it"
                                               : natsStatus_GetText(st));
            sub_drop(s);
            pthread_mutex_lock(&j->mu);
            j->st.consumer_resets++;
            pthread_mutex_unlock(&j->mu);
            return GA_EIO;
        }
        jsMsgMetaData *md = NULL;
        if (natsMsg_GetMetaData(&md, m) != NATS_OK) {
            natsMsg_Destroy(m);
            continue;                  /* not a stream message (status) */
        }
        uint64_t sq = md->Sequence.Stream, pend = md->NumPending;
        jsMsgMetaData_Destroy(md);
        s->last_msg_ns = mono_ns();
        if (sq < s->next) {            /* a re-delivery after a reset */
            natsMsg_Destroy(m);
            continue;
        }
        if (sq > s->next) {
            /* Every message of the stream matches our filter, so sequences are
             * contiguous: a gap is a message lost on the way (the client
             * dropped it).  Re-create once from the one expected; a gap that
             * stays is the stream's (retention removed what we needed). */
            if (!s->gap_reset) {
                ga_log(GA_LOG_WARN, "nats_consumer_gap", "expected_seq=%" PRIu64 " got_seq=%"
                       PRIu64 " action=resubscribe", s->next, sq);
                natsMsg_Destroy(m);
                sub_drop(s);
                s->gap_reset = 1;
                pthread_mutex_lock(&j->mu);
                j->st.consumer_resets++;
                pthread_mutex_unlock(&j->mu);
                return GA_EIO;
            }
            ga_log(GA_LOG_ERROR, "stream_messages_missing", "from_seq=%" PRIu64 " to_seq=%" PRIu64
                   " msg=\"the stream no longer holds them (retention shorter than the "
                   "checkpoint lag?); their points are lost to aggregation\"", s->next, sq - 1);
        }
        s->gap_reset = 0;
        s->next = sq + 1;
        s->stream_last = sq + pend;
        pthread_mutex_lock(&j->mu);
        j->st.consumed++;
        if (s->stream_last > j->st.stream_last_seq)
            j->st.stream_last_seq = s->stream_last;
        pthread_mutex_unlock(&j->mu);
        const char *subj = natsMsg_GetSubject(m);
        char *end = NULL;
        long p = -1;
        if (subj && strlen(subj) > s->prefix_len)
            p = strtol(subj + s->prefix_len, &end, 10);
        if (p < 0 || p >= GA_PARTITIONS || !end || *end) {
            *seq = sq;
            *part = -1;
            *data = NULL;
            *len = 0;
            natsMsg_Destroy(m);
            return 1;
        }
        s->msg = m;
        *seq = sq;
        *part = (int)p;
        *data = natsMsg_GetData(m);
        *len = (size_t)natsMsg_GetDataLength(m);
        return 1;
    }
}

uint64_t js_log_sub_stream_last(struct js_log_sub *s)
{
    return s->stream_last;
}

void js_log_sub_close(struct js_log_sub *s)
{
    if (!s)
        return;
    sub_drop(s);
    free(s);
}

void js_log_set_description(struct js_log *j, const char *desc)
{
    pthread_mutex_lock(&j->mu);
    snprintf(j->description, sizeof j->description, "%s", desc);
    pthread_mutex_unlock(&j->mu);
}

int js_log_stream_info(struct js_log *j, struct js_log_stream_info *out, int timeout_ms)
{
    jsStreamInfo *si = NULL;
    jsErrCode jerr = 0;
    jsOptions o;
    jsOptions_Init(&o);
    o.Wait = timeout_ms;
    pthread_mutex_lock(&j->mu);
    int up = j->st.connected;
    pthread_mutex_unlock(&j->mu);
    if (!up)
        return GA_EIO;
    int rc = ensure_stream(j);
    if (rc < 0)
        return rc;
    if (js_GetStreamInfo(&si, j->js, j->stream, &o, &jerr) != NATS_OK) {
        if (jerr == JSStreamNotFoundErr)
            j->stream_ok = 0;          /* deleted: made again on the next use */
        return GA_EIO;
    }
    memset(out, 0, sizeof *out);
    out->last_seq = si->State.LastSeq;
    out->created_ns = si->Created;
    if (si->Config && si->Config->Description)
        snprintf(out->description, sizeof out->description, "%s", si->Config->Description);
    if (si->Cluster && si->Cluster->Leader)
        snprintf(out->leader, sizeof out->leader, "%s", si->Cluster->Leader);
    jsStreamInfo_Destroy(si);
    return 0;
}

int js_log_stream_describe(struct js_log *j, const char *desc, int timeout_ms)
{
    jsStreamInfo *si = NULL;
    jsErrCode jerr = 0;
    jsOptions o;
    jsOptions_Init(&o);
    o.Wait = timeout_ms;
    if (js_GetStreamInfo(&si, j->js, j->stream, &o, &jerr) != NATS_OK)
        return GA_EIO;
    int rc = 0;
    if (si->Config) {
        jsStreamConfig cfg = *si->Config;      /* the same, but the description */
        cfg.Description = desc;
        jsStreamInfo *upd = NULL;
        if (js_UpdateStream(&upd, j->js, &cfg, &o, &jerr) != NATS_OK) {
            set_error(j, "setting the description of stream %s: %s (%d)", j->stream,
                      nats_GetLastError(NULL) ? nats_GetLastError(NULL) : "failed", (int)jerr);
            rc = GA_EIO;
        }
        jsStreamInfo_Destroy(upd);
    }
    jsStreamInfo_Destroy(si);
    return rc;
}

void js_log_get_stats(struct js_log *j, struct js_log_stats *st)
{
    pthread_mutex_lock(&j->mu);
    *st = j->st;
    pthread_mutex_unlock(&j->mu);
}
