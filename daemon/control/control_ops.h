/* control_ops.h — op handlers defined outside control_ops.c (the op table),
 * and the result encoders the unit tests check against proto/PROTOCOL.md. */
#ifndef GA_CONTROL_OPS_H
#define GA_CONTROL_OPS_H

#include <msgpack.h>
#include <stddef.h>
#include <stdint.h>

#include "daemon/control/control.h"
#include "proto/ctl_proto.h"
#include "storage/pg_query.h"

#define CONTROL_OPS_QUERY_MAX_ROWS 50000        /* rows per query response (fits 1 MiB) */
#define CONTROL_OPS_QUERY_MAX_METRICS 100000    /* entries per metrics response */
/* bytes of entries per metrics response */
#define CONTROL_OPS_QUERY_METRICS_BUDGET (CTL_MAX_FRAME - 4096)

/* The result of op `stats` (a map: every row of the counter table,
 * daemon/stat_table.h, but the histograms → its number, in the table's
 * order) packed into pk.  Loop thread only (control_ops.c; also used by
 * /metrics). */
void ga_ctl_pack_stats(struct ga_daemon *d, msgpack_packer *pk);

/* Deferred handlers (control_ops_query.c); see ga_ctl_handler and
 * proto/PROTOCOL.md for their arguments and results. */
int ga_ctl_op_flush(struct ga_daemon *d, const msgpack_object *args, struct ga_ctl_req *req,
                    msgpack_packer *pk, char *err, size_t errlen);
int ga_ctl_op_metrics(struct ga_daemon *d, const msgpack_object *args, struct ga_ctl_req *req,
                      msgpack_packer *pk, char *err, size_t errlen);
int ga_ctl_op_query(struct ga_daemon *d, const msgpack_object *args, struct ga_ctl_req *req,
                    msgpack_packer *pk, char *err, size_t errlen);

/* Pack a `query` result: {"metric", "method", "granularity_ns", "rows":
 * [[ts_ns, value], ...], "next"}.  rows: the first min(n, limit) of p;
 * "next" is the ts of row `limit` when n > limit, else nil.  Borrows
 * everything. */
void control_ops_query_pack_rows(msgpack_packer *pk, const char *metric, const char *method,
                                 int64_t granularity_ns, const struct pg_query_point *p, size_t n, size_t limit);

/* Pack a `metrics` result: {"metrics": [{"name", "policy", "points"}, ...],
 * "next"} from the n entries of m (already filtered), at most limit of
 * them and at most budget bytes of entries; "next" is the name of the last
 * entry packed when some were left out, else nil.  Returns the entries
 * packed. */
size_t control_ops_query_pack_metrics(msgpack_packer *pk, const struct pg_query_metric *const *m, size_t n,
                                      size_t limit, size_t budget);

#endif
