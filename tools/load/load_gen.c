/* load_gen.c — seeded points and their encoding (load.h).
 *
 * Values are uniform in ±[1, 1000) with random low bits (never zero, and
 * almost never equal to each other); each metric's timestamps advance by
 * --step from --start.  A --late fraction of points is stamped 1..late_steps
 * steps in the past plus a random part of a step, so a late point never
 * lands on a regular point's timestamp. */
#include <stdlib.h>
#include <string.h>

#include "proto/ts_parse.h"
#include "tools/load/load.h"

static char **names;
static uint32_t nnames;

int load_names_init(const struct load_opts *o)
{
    names = calloc(o->metrics, sizeof *names);
    if (!names)
        return -1;
    nnames = o->metrics;
    size_t plen = strlen(o->prefix);
    for (uint32_t i = 0; i < o->metrics; i++) {
        names[i] = malloc(plen + 11);
        if (!names[i])
            return -1;
        snprintf(names[i], plen + 11, "%s%u", o->prefix, i);
    }
    return 0;
}

const char *load_name(uint32_t metric)
{
    return metric < nnames ? names[metric] : "?";
}

void load_names_free(void)
{
    for (uint32_t i = 0; names && i < nnames; i++)
        free(names[i]);
    free(names);
    names = NULL;
    nnames = 0;
}

/* splitmix64: seeds; xorshift64*: draws. */
static uint64_t splitmix(uint64_t *s)
{
    uint64_t z = (*s += 0x9E3779B97F4A7C15ull);
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
    return z ^ (z >> 31);
}

static uint64_t rnd(struct load_gen *g)
{
    g->rng ^= g->rng >> 12;
    g->rng ^= g->rng << 25;
    g->rng ^= g->rng >> 27;
    return g->rng * 0x2545F4914F6CDD1Dull;
}

/* Uniform in [0, 1) with 53 random bits. */
static double unit(struct load_gen *g)
{
    return (double)(rnd(g) >> 11) * (1.0 / 9007199254740992.0);
}

int load_gen_init(struct load_gen *g, const struct load_opts *o, uint32_t conn)
{
    memset(g, 0, sizeof *g);
    uint64_t s = o->seed ^ ((uint64_t)conn * 0xD1B54A32D192ED03ull);
    g->rng = splitmix(&s) | 1;
    for (uint32_t i = conn; i < o->metrics; i += o->nconn)
        g->nmetrics++;
    g->metrics = malloc((g->nmetrics ? g->nmetrics : 1) * sizeof *g->metrics);
    g->next_ts = malloc((g->nmetrics ? g->nmetrics : 1) * sizeof *g->next_ts);
    if (!g->metrics || !g->next_ts)
        return -1;
    for (uint32_t i = conn, k = 0; i < o->metrics; i += o->nconn, k++) {
        g->metrics[k] = i;
        g->next_ts[k] = o->start_ns;
    }
    return 0;
}

void load_gen_free(struct load_gen *g)
{
    free(g->metrics);
    free(g->next_ts);
    free(g->names);
    free(g->index);
    memset(g, 0, sizeof *g);
}

void load_batch_free(struct load_batch *b)
{
    free(b->gmetric);
    free(b->gcount);
    free(b->ts);
    free(b->value);
    msgpack_sbuffer_destroy(&b->frame);
    memset(b, 0, sizeof *b);
}

static int grow(void **p, size_t *cap, size_t need, size_t elem)
{
    if (need <= *cap)
        return 0;
    size_t n = *cap ? *cap : 64;
    while (n < need)
        n *= 2;
    void *np = realloc(*p, n * elem);
    if (!np)
        return -1;
    *p = np;
    *cap = n;
    return 0;
}

static int reserve(struct load_gen *g, struct load_batch *b, size_t n, size_t groups)
{
    size_t pc = b->cap_points, gc = b->cap_groups;
    if (grow((void **)&b->ts, &pc, n, sizeof *b->ts) < 0)
        return -1;
    pc = b->cap_points;
    if (grow((void **)&b->value, &pc, n, sizeof *b->value) < 0)
        return -1;
    b->cap_points = pc;
    if (grow((void **)&b->gmetric, &gc, groups, sizeof *b->gmetric) < 0)
        return -1;
    gc = b->cap_groups;
    if (grow((void **)&b->gcount, &gc, groups, sizeof *b->gcount) < 0)
        return -1;
    b->cap_groups = gc;
    size_t nc = g->cap_names;
    if (grow((void **)&g->names, &nc, groups, sizeof *g->names) < 0)
        return -1;
    g->cap_names = nc;
    return 0;
}

static int64_t next_ts(struct load_gen *g, const struct load_opts *o, uint32_t k)
{
    int64_t ts = g->next_ts[k];
    g->next_ts[k] += o->step_ns;
    if (o->late > 0 && unit(g) < o->late) {
        int64_t back = (int64_t)(1 + rnd(g) % o->late_steps) * o->step_ns;
        if (o->step_ns > 1)
            back += 1 + (int64_t)(rnd(g) % (uint64_t)(o->step_ns - 1));
        ts = ts - back >= 0 ? ts - back : ts;
    }
    return ts;
}

int64_t load_gen_newest_ts(const struct load_gen *g, const struct load_opts *o, size_t n)
{
    size_t groups = (n + o->ppm - 1) / o->ppm, k = 0;
    int64_t newest = INT64_MIN;
    for (size_t gi = 0; gi < groups; gi++) {
        size_t pos = g->cursor + gi;
        uint32_t m = (uint32_t)(pos % g->nmetrics);
        int64_t wraps = (int64_t)(pos / g->nmetrics);      /* the metric comes back in this batch */
        uint32_t cnt = (uint32_t)(n - k < o->ppm ? n - k : o->ppm);
        int64_t ts = g->next_ts[m] + (wraps * o->ppm + cnt - 1) * o->step_ns;
        newest = ts > newest ? ts : newest;
        k += cnt;
    }
    return newest;
}

int load_gen_batch(struct load_gen *g, const struct load_opts *o, struct load_batch *b,
                   uint64_t seq, size_t n)
{
    size_t groups = (n + o->ppm - 1) / o->ppm;
    if (reserve(g, b, n, groups) < 0)
        return -1;
    b->seq = seq;
    b->n = n;
    b->ngroups = (uint32_t)groups;
    b->off = 0;
    size_t k = 0;
    for (size_t gi = 0; gi < groups; gi++) {
        uint32_t m = g->cursor;
        g->cursor = (g->cursor + 1) % g->nmetrics;
        uint32_t cnt = (uint32_t)(n - k < o->ppm ? n - k : o->ppm);
        b->gmetric[gi] = g->metrics[m];
        b->gcount[gi] = cnt;
        g->names[gi] = load_name(g->metrics[m]);
        for (uint32_t j = 0; j < cnt; j++, k++) {
            b->ts[k] = next_ts(g, o, m);
            double v = 1.0 + unit(g) * 999.0;
            b->value[k] = (rnd(g) & 3) == 0 ? -v : v;
        }
    }
    msgpack_sbuffer_clear(&b->frame);
    msgpack_packer pk;
    msgpack_packer_init(&pk, &b->frame, msgpack_sbuffer_write);
    if (o->form == LOAD_FRIENDLY) {
        ing_pack_points_friendly(&pk, seq, b->ngroups, g->names, b->gcount, b->ts, b->value,
                                 o->ts_form);
        if (o->ts_form == ING_TS_SECONDS) {
            /* What the daemon decodes from the double the encoder wrote. */
            for (size_t i = 0; i < n; i++)
                ts_from_seconds((double)b->ts[i] / 1e9, &b->ts[i]);
        }
    } else if (o->use_index) {
        size_t ic = g->cap_index;
        if (grow((void **)&g->index, &ic, n, sizeof *g->index) < 0)
            return -1;
        g->cap_index = ic;
        for (size_t gi = 0, p = 0; gi < groups; gi++)
            for (uint32_t j = 0; j < b->gcount[gi]; j++)
                g->index[p++] = (uint32_t)gi;
        ing_pack_points_columnar(&pk, seq, b->ngroups, g->names, g->index, NULL, n, b->ts,
                                 b->value);
    } else {
        ing_pack_points_columnar(&pk, seq, b->ngroups, g->names, NULL, b->gcount, n, b->ts,
                                 b->value);
    }
    return b->frame.data ? 0 : -1;
}
