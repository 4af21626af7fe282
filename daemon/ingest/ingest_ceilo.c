/* ingest_ceilo.c — Ceilometer samples as pipeline items, shared by the
 * udp:// (ingest_udp.c) and tcp:// (ingest_ceilo_tcp.c) listeners: the
 * samples gathered on the loop thread as [u32 len][body]... are checked and
 * decoded on a decode worker (ceilo_decode, listen.telemetry_secret) into
 * one batch of one name per accepted sample.  A sample stamped more than
 * limits.max_future_s ahead of the clock as the bundle was gathered is
 * refused as CEILO_FUTURE. */
#include <stdlib.h>
#include <string.h>

#include "daemon/daemon.h"
#include "daemon/ingest/ceilo_resources.h"
#include "daemon/ingest/ingest_priv.h"
#include "proto/ceilometer.h"
#include "proto/ga_err.h"

struct ceilo_dctx {
    char *secret;                      /* NULL = unsigned accepted */
    uint32_t n;                        /* samples in the frame */
    struct ing_limits lim;             /* the clock as they were gathered, max_future_s */
    struct ceilo_resources *resources; /* every accepted sample, NULL = none */
    uint64_t rejects[16];              /* per ceilo_reject reason */
};

static void dctx_free(void *p)
{
    struct ceilo_dctx *x = p;
    if (x)
        free(x->secret);
    free(x);
}

static int decode(struct pipeline_item *it, struct ing_batch *b)
{
    struct ceilo_dctx *x = it->dctx;
    const char *secret = x->secret;
    size_t n = x->n, name_bytes = 0, off = 0, k = 0;
    struct ceilo_sample *s = malloc((n ? n : 1) * sizeof *s);
    if (!s)
        return GA_ENOMEM;
    for (size_t i = 0; i < n; i++) {
        uint32_t len;
        memcpy(&len, it->frame + off, 4);
        char err[128];
        int r = ceilo_decode(it->frame + off + 4, len, secret, secret ? strlen(secret) : 0, &s[k],
                             err, sizeof err);
        if (r == CEILO_OK && ing_ts_too_far_ahead(&x->lim, s[k].ts_ns))
            r = CEILO_FUTURE;
        if (r == CEILO_OK && x->resources)
            ceilo_resources_sample(x->resources, it->frame + off + 4, len);
        off += 4 + (size_t)len;
        if (r != CEILO_OK) {
            x->rejects[r < 16 ? r : 15]++;
            continue;
        }
        name_bytes += strlen(s[k].metric);
        k++;
    }
    int rc = ing_batch_init(b, (uint32_t)k, name_bytes, k);
    for (size_t i = 0; rc == 0 && i < k; i++) {
        ing_batch_add_name(b, s[i].metric, (uint32_t)strlen(s[i].metric));
        b->name_idx[i] = (uint32_t)i;
        b->ts[i] = s[i].ts_ns;
        b->value[i] = s[i].value;
    }
    if (rc == 0)
        b->n = k;
    free(s);
    return rc;
}

struct pipeline_item *ingest_ceilo_item(struct ga_ingest *g, uint8_t *buf, size_t len, uint32_t n)
{
    struct pipeline_item *it = calloc(1, sizeof *it);
    struct ceilo_dctx *x = calloc(1, sizeof *x);
    const char *secret = g->d->cfg->listen.telemetry_secret;
    if (!it || !x || (secret[0] && !(x->secret = strdup(secret)))) {
        free(it);
        dctx_free(x);
        return NULL;
    }
    x->n = n;
    x->lim = ingest_item_limits(g);
    x->resources = g->d->resources;
    it->decode = decode;
    it->dctx = x;
    it->dctx_free = dctx_free;
    it->frame = buf;
    it->len = len;
    return it;
}

uint32_t ingest_ceilo_samples(const struct pipeline_item *it)
{
    return ((const struct ceilo_dctx *)it->dctx)->n;
}

void ingest_ceilo_count_rejects(const struct pipeline_item *it, uint64_t *rejected)
{
    const struct ceilo_dctx *x = it->dctx;
    for (int r = 1; r < CEILO_NREASONS && r < 16; r++)
        rejected[r] += x->rejects[r];
}
