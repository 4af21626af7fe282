/* stat_table.h — the one table of the daemon's counters: every name
 * `gpuaggctl stats` prints, with its kind, unit and help, and how /metrics
 * exports it to Prometheus (family name, labels, scale to base units).
 * `stats` and `status` print the names; /metrics (daemon/http/ops_render.c)
 * renders from the rows; docs/COUNTERS.md describes each row at length and
 * tests/blackbox/test_counters_doc.py checks it against this table and a
 * running daemon.
 *
 * Prometheus rules the rows follow: names start with gpuagg_, are in base
 * units (_seconds, _bytes), counters and only counters end in _total; a
 * dimension (a reason, a listener) is a label of one family, not one name
 * per value; a flag is a gauge of 0 or 1; latencies are histograms. */
#ifndef GA_STAT_TABLE_H
#define GA_STAT_TABLE_H

#include <stddef.h>

#include "proto/base/histo.h"

enum stat_kind { STAT_COUNTER, STAT_GAUGE, STAT_FLAG, STAT_HISTOGRAM };

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

/* "counter", "gauge", "flag", "histogram". */
const char *stat_kind_name(enum stat_kind k);

#endif
