/* stat_table.h — the one table of the daemon's counters: every name
 * `gpuaggctl stats` prints, in the order it prints them, with where its
 * value is read from, its kind, unit and help, and how /metrics exports it
 * to Prometheus (family name, labels, scale to base units).  The stats op
 * (daemon/control/control_ops.c) packs one pair per row (but the
 * histograms) from a struct stat_snapshot (daemon/stat_snapshot.h); /metrics
 * (daemon/http/ops_render.c) renders from the rows and those values;
 * docs/COUNTERS.md describes each row at length and
 * tests/blackbox/test_counters_doc.py checks it against this table and a
 * running daemon.
 *
 * A counter is one row here, the field of struct stat_snapshot it reads
 * and its line in docs/COUNTERS.md (docs/LAYOUT.md, "A counter").
 *
 * Prometheus rules the rows follow: names start with gpuagg_, are in base
 * units (_seconds, _bytes), counters and only counters end in _total; a
 * dimension (a reason, a listener) is a label of one family, not one name
 * per value; a flag is a gauge of 0 or 1; latencies are histograms. */
#ifndef GA_STAT_TABLE_H
#define GA_STAT_TABLE_H

#include <stddef.h>
#include <stdint.h>

#include "proto/base/histo.h"

struct stat_snapshot;

enum stat_kind { STAT_COUNTER, STAT_GAUGE, STAT_FLAG, STAT_HISTOGRAM };

/* How a row's value is read from the struct stat_snapshot: most rows read
 * the field at their offset as it is; the table's macros check that the
 * field has the type the source reads. */
enum stat_src {
    STAT_SRC_NONE,        /* a histogram: no pair in stats (its summary rows have) */
    STAT_SRC_U64,         /* a uint64_t */
    STAT_SRC_I64,         /* an int64_t, as uint64_t */
    STAT_SRC_INT,         /* an int, as uint64_t */
    STAT_SRC_DOUBLE,      /* a double, packed as a float (uptime_s alone) */
    STAT_SRC_NS_MS,       /* a uint64_t of nanoseconds, in whole milliseconds */
    STAT_SRC_NONZERO,     /* an int: 1 if it is not 0, else 0 */
    STAT_SRC_COUNT,       /* a struct histo_snap: its count */
    STAT_SRC_P50_US,      /* and the upper bound of the bucket of its median, in µs */
    STAT_SRC_P99_US,      /* and of its 99th percentile */
    STAT_SRC_LISTENER,    /* an ingest listener's own counter, found by the row's
                             name "<key>.<name>[.<sub>]" in its struct listener_counter
                             table (daemon/ingest/listener.h), in in.listener */
    STAT_SRC_GET,         /* get(snapshot): computed from several fields */
};

struct stat_source {
    enum stat_src kind;
    size_t off;           /* the field's offset in struct stat_snapshot */
    uint64_t (*get)(const struct stat_snapshot *s);    /* STAT_SRC_GET */
};

struct stat_def {
    const char *name;        /* the stats name, "udp.rejected.bad_signature"; for a
                                histogram the stem of its summary names */
    enum stat_kind kind;
    const char *unit;        /* "points", "bytes", "ms", "—" */
    const char *help;        /* one sentence */
    const char *prom;        /* Prometheus family, "gpuagg_udp_rejected_total";
                                NULL: stats only (a sum of other rows, a summary) */
    const char *labels;      /* 'reason="bad_signature"'; NULL: none */
    double scale;            /* Prometheus value = stats value × scale (ms → s) */
    struct histo *histo;     /* STAT_HISTOGRAM: the histogram */
    struct stat_source src;  /* where the value comes from */
};

/* The help of a family whose rows carry labels (each row's help speaks of
 * its label's value). */
struct stat_family {
    const char *prom;
    const char *help;
};

extern const struct stat_def stat_table[];
extern const size_t stat_table_n;
extern const struct stat_family stat_table_families[];
extern const size_t stat_table_nfamilies;

/* The row of stats name name[len], or NULL. */
const struct stat_def *stat_table_find(const char *name, size_t len);

/* The family help of prom, or NULL. */
const char *stat_table_family_help(const char *prom);

/* The value of row d in s (a row whose source is neither STAT_SRC_NONE
 * nor STAT_SRC_DOUBLE; 0 for a listener counter no listener has). */
uint64_t stat_value(const struct stat_def *d, const struct stat_snapshot *s);

/* The value of a STAT_SRC_DOUBLE row. */
double stat_value_double(const struct stat_def *d, const struct stat_snapshot *s);

/* "counter", "gauge", "flag", "histogram". */
const char *stat_kind_name(enum stat_kind k);

#endif
