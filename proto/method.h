/* method.h — the aggregation methods: their numbers and the one table that
 * says what each needs and where it sits in a wide record.
 *
 * Methods are small integers (ga_method_t) so that kernels, the wire and
 * the database can carry them cheaply:
 *
 *   bits 0..7  base: GA_M_MEAN..GA_M_MEDIAN, or GA_M_PCT_BASE+N for "Npct"
 *   bit  9     GA_M_RATE: "rate:<base>" (aggregate of consecutive deltas)
 *
 * Adding a method: a row in the table of method.c, its compute cases in the
 * backends (gpu/agg_cpu_kernels.c, gpu/cuda/gk_bucket_priv.cuh), and
 * docs/SEMANTICS.md (docs/LAYOUT.md lists the rooms). */
#ifndef GA_METHOD_H
#define GA_METHOD_H

#include <stdint.h>

typedef uint16_t ga_method_t;

enum {
    GA_M_MEAN = 1, GA_M_SUM, GA_M_MIN, GA_M_MAX, GA_M_COUNT,
    GA_M_FIRST, GA_M_LAST, GA_M_STD, GA_M_MEDIAN,
    GA_M_PCT_BASE = 100,          /* GA_M_PCT_BASE + N, N in 1..99 */
    GA_M_RATE = 0x200,
    GA_M_WIDE = 0x400,            /* not a method: a wide record's header row (engine.h) */
    GA_M_PACKED = 0x800,          /* not a method: a packed wide record's header (engine.h),
                                     | its mask in bits 0..7 */
};
#define GA_M_BASE(m)   ((m) & 0xff)
#define GA_M_IS_RATE(m) (((m) & GA_M_RATE) != 0)
#define GA_M_IS_PCT(m) (GA_M_BASE(m) > GA_M_PCT_BASE && GA_M_BASE(m) < GA_M_PCT_BASE + 100)
#define GA_M_PCT_N(m)  (GA_M_BASE(m) - GA_M_PCT_BASE)
#define GA_METHOD_NAME_MAX 16       /* "rate:median" + NUL fits */

/* What a method reads per bucket.  GA_NEED_POINT: first or last (a point
 * read directly); count needs nothing (it is the length); median and Npct
 * read a sorted copy. */
enum { GA_NEED_SUM = 1, GA_NEED_MINMAX = 2, GA_NEED_SORT = 4, GA_NEED_POINT = 8 };
#define GA_NEED_VALUES (GA_NEED_SUM | GA_NEED_MINMAX | GA_NEED_POINT)

/* One row of the methods table. */
struct ga_method_info {
    const char *name;            /* "mean"; "Npct" for the percentiles' row */
    unsigned need;               /* GA_NEED_* */
    int wide_bit;                /* bit in a wide record's mask (proto/agg.h), -1: none */
};

/* The row of m's base method (rate: or not), or NULL for a number that is
 * no method. */
const struct ga_method_info *ga_method_info(ga_method_t m);
/* GA_NEED_* of methods ms[0..n), or-ed. */
unsigned ga_methods_need(const ga_method_t *ms, int n);

/* Parse a method name ("mean", "90pct", "rate:std").  Returns the method or
 * a negative GA_EINVAL for an unknown name. */
int ga_method_parse(const char *name);
/* Write a method's name into buf (at least GA_METHOD_NAME_MAX bytes);
 * returns buf. */
const char *ga_method_name(ga_method_t m, char *buf);

#endif
