/* load_report.c — latency histogram, the report, record files (load.h). */
#include <inttypes.h>
#include <string.h>

#include "tools/load/load.h"

/* Bucket of v: exact below 128, then 64 buckets per power of two. */
static size_t bucket(uint64_t v)
{
    if (v < 128)
        return (size_t)v;
    int e = 63 - __builtin_clzll(v);
    return 128 + (size_t)(e - 7) * 64 + (size_t)((v >> (e - 6)) - 64);
}

static uint64_t bucket_top(size_t i)
{
    if (i < 128)
        return i;
    size_t e = (i - 128) / 64 + 7, sub = (i - 128) % 64;
    return ((uint64_t)(sub + 65) << (e - 6)) - 1;
}

void load_hist_add(struct load_hist *h, uint64_t ns)
{
    h->b[bucket(ns)]++;
    h->count++;
    if (ns > h->max)
        h->max = ns;
}

uint64_t load_hist_quantile(const struct load_hist *h, double q)
{
    if (!h->count)
        return 0;
    uint64_t rank = (uint64_t)(q * (double)h->count + 0.5);
    if (rank < 1)
        rank = 1;
    uint64_t seen = 0;
    for (size_t i = 0; i < sizeof h->b / sizeof h->b[0]; i++) {
        seen += h->b[i];
        if (seen >= rank) {
            uint64_t top = bucket_top(i);
            return top < h->max ? top : h->max;
        }
    }
    return h->max;
}

int load_record_batch(FILE *f, const struct load_batch *b, const struct ing_ack *a)
{
    size_t k = 0, r = 0;
    for (uint32_t gi = 0; gi < b->ngroups; gi++) {
        const char *name = load_name(b->gmetric[gi]);
        for (uint32_t j = 0; j < b->gcount[gi]; j++, k++) {
            if (a && r < a->nrejected && a->rejected[r].index == k) {
                r++;
                continue;
            }
            fprintf(f, "%s\t%" PRId64 "\t%.17g\n", name, b->ts[k], b->value[k]);
        }
    }
    return ferror(f) ? -1 : 0;
}

static double secs(int64_t from, int64_t to)
{
    return to > from ? (double)(to - from) / 1e9 : 0.0;
}

static double per_s(uint64_t n, double s)
{
    return s > 0 ? (double)n / s : 0.0;
}

void load_report(const struct load_opts *o, const struct load_totals *t, const struct load_hist *h)
{
    double send_s = secs(t->t_start_ns, t->t_send_end_ns);
    double ack_s = secs(t->t_start_ns, t->t_last_ack_ns);
    double ms[4] = { load_hist_quantile(h, 0.5) / 1e6, load_hist_quantile(h, 0.9) / 1e6,
                     load_hist_quantile(h, 0.99) / 1e6, h->max / 1e6 };
    const char *form = o->form == LOAD_FRIENDLY ? "friendly" : o->use_index ? "columnar-index"
                                                                            : "columnar";
    if (o->json) {
        printf("{\"connections\": %u, \"form\": \"%s\", \"batch\": %u, \"inflight\": %u, "
               "\"points_sent\": %" PRIu64 ", \"batches_sent\": %" PRIu64 ", \"bytes_sent\": %"
               PRIu64 ", \"points_acked\": %" PRIu64 ", \"batches_acked\": %" PRIu64
               ", \"points_rejected\": %" PRIu64 ", \"send_seconds\": %.6f, \"ack_seconds\": %.6f, "
               "\"sent_per_s\": %.1f, \"acked_per_s\": %.1f, \"latency_ms\": {\"p50\": %.3f, "
               "\"p90\": %.3f, \"p99\": %.3f, \"max\": %.3f}, \"failed_connections\": %d}\n",
               o->nconn, form, o->batch, o->inflight, t->points_sent, t->batches_sent,
               t->bytes_sent, t->points_acked, t->batches_acked, t->points_rejected, send_s, ack_s,
               per_s(t->points_sent, send_s), per_s(t->points_acked + t->points_rejected, ack_s),
               ms[0], ms[1], ms[2], ms[3], t->errors);
        return;
    }
    printf("gpuagg-load: %u connection%s to %s, %s, batch %u, inflight %u\n", o->nconn,
           o->nconn == 1 ? "" : "s", o->connect, form, o->batch, o->inflight);
    printf("%-10s %14s %10s %14s\n", "", "points", "seconds", "points/s");
    printf("%-10s %14" PRIu64 " %10.3f %14.0f\n", "sent", t->points_sent, send_s,
           per_s(t->points_sent, send_s));
    printf("%-10s %14" PRIu64 " %10.3f %14.0f\n", "acked", t->points_acked, ack_s,
           per_s(t->points_acked + t->points_rejected, ack_s));
    printf("%-10s %14" PRIu64 "\n", "rejected", t->points_rejected);
    printf("%-10s %14" PRIu64 " batches, %.1f MB sent\n", "", t->batches_acked,
           (double)t->bytes_sent / 1e6);
    printf("ack latency ms: p50 %.3f  p90 %.3f  p99 %.3f  max %.3f\n", ms[0], ms[1], ms[2], ms[3]);
    if (t->errors)
        printf("failed connections: %d\n", t->errors);
}
