/* points.h — a batch of points, the unit every layer hands on: decoded by
 * ingest, journalled, fed to the engine. */
#ifndef GA_POINTS_H
#define GA_POINTS_H

#include <stddef.h>
#include <stdint.h>

/* A batch of points, columnar.  Index order is arrival order.  The
 * timestamps come one of two ways: ts, or (ts NULL) ts32 with ts_base and
 * ts_unit, point i at ts_base + ts32[i] * ts_unit, which
 * ga_points_pack_ts32 makes where a batch fits it: 16 bytes a point to
 * carry (and to upload to a GPU) instead of 20.  Every backend and the
 * engine's split take both; the engine refuses a batch of neither
 * (GA_EINVAL). */
struct ga_points {
    size_t n;
    const uint32_t *metric;      /* engine metric ids (ga_engine_metric_add) */
    const int64_t *ts;           /* ns since the Unix epoch; NULL: ts32 */
    const double *value;
    const uint32_t *ts32;        /* where ts is NULL */
    int64_t ts_base, ts_unit;    /* ns; ts_unit > 0 */
};

static inline int64_t ga_points_ts(const struct ga_points *p, size_t i)
{
    return p->ts ? p->ts[i] : p->ts_base + (int64_t)p->ts32[i] * p->ts_unit;
}

/* ts[0..n) as 32-bit offsets into ts32: from their minimum (*base), in the
 * coarsest of 1 s, 1 ms, 1 us and 1 ns (*unit) that each one is a whole
 * number of and whose span fits 32 bits.  0, or GA_ERANGE where none fits
 * (ts32 then undefined: carry ts as it is).  n = 0: base 0, unit 1. */
int ga_points_pack_ts32(const int64_t *ts, size_t n, uint32_t *ts32, int64_t *base, int64_t *unit);

#endif
