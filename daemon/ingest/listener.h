/* listener.h — an ingest listener: one producer format on one socket.
 *
 * A listener is a row of listeners[] (daemon/ingest/listeners.c): its
 * config key under listen:, and the hooks the ingest core (ingest.c) calls
 * on the loop thread.  The listener reads its socket, cuts what it reads
 * into pipeline_items (setting pipeline_item.decode and dctx when its bytes are not
 * protocol v1 frames), hands them to pipeline_decode and, once decoded, to
 * pipeline_submit in arrival order; the pipeline does not know which listener an
 * item came from.
 *
 * A listener's counters are its own: it declares them in its kind (a
 * table of struct listener_counter) and counts in the row of slots start hands
 * it (its row of ga_ingest_stats.listener[]); the stats op, `status` and
 * /metrics show them from the table (the stats op reads them through
 * daemon/stat_table.c's listener rows; status through listeners_pack_status).
 *
 * Adding a producer format: one file with its listener_kind (hooks and
 * counters), one line in listeners[], its config key (daemon/config/,
 * etc/gpuaggd.yaml) and its counters' names in docs/COUNTERS.md. */
#ifndef GA_LISTENER_H
#define GA_LISTENER_H

#include <msgpack.h>
#include <stddef.h>
#include <stdint.h>

#include "daemon/ingest/ingest.h"

struct ga_config;

/* One of a listener's counters: slot `slot` of its row, named
 * "<key>.<name>" in the stats op (and gpuagg_<key>_<name>_total in
 * /metrics).  A family (n > 0) is the slots slot + i for i in [first, n),
 * named "<key>.<name>.<sub(i)>".  status: also shown by `status` as
 * ingest.<key>_<name> (a single counter only).  A table of them ends with
 * a row whose name is NULL. */
struct listener_counter {
    const char *name;
    int slot;
    int first, n;
    const char *(*sub)(int i);
    int status;
};

struct listener_kind {
    const char *key;                   /* its config key, "listen.<key>" */
    /* The configured address ("" = off). */
    const char *(*addr)(const struct ga_config *cfg);
    /* Bind and start reading; *slot receives the listener's state (the
     * listener may clear it once its state is freed); counters is its row
     * of INGEST_MAX_COUNTERS slots (loop thread, lives as long as g).  Counts
     * its handles in g->open_handles.  Returns 0 or GA_E* with err naming
     * the key. */
    int (*start)(struct ga_ingest *g, const char *addr, void **slot, uint64_t *counters,
                 char *err, size_t errlen);
    /* Durable progress: submit decoded items, free finished ones, resume
     * reading.  NULL: nothing of its own in flight. */
    void (*pump)(void *state);
    /* The drain: the first call stops accepting and reading; every call
     * returns 1 once nothing is left in flight. */
    int (*drain)(void *state);
    /* Close every handle; as each closes, the listener lowers
     * g->open_handles and calls ingest_check_stopped. */
    void (*close)(void *state);
    /* The bound port (for "port 0"), 0 when none; `status` shows it as
     * ingest.<key>_port.  NULL: no port (a path); `status` shows the
     * configured address as ingest.<key>. */
    int (*port)(const void *state);
    /* Its counters (above), NULL-terminated; NULL: none of its own
     * (protocol v1's are the core's ingest.* counters).  Every slot is
     * below INGEST_MAX_COUNTERS. */
    const struct listener_counter *counters;
};

/* The listeners, NULL-terminated. */
extern const struct listener_kind *const listeners[];

/* Every listener's fields of `status` → ingest: its port or address, and
 * the counters marked status; returns how many pairs were packed.  g may
 * be NULL (no ingest: ports 0). */
int listeners_pack_status(const struct ga_ingest *g, const struct ga_config *cfg,
                          const struct ga_ingest_stats *st, msgpack_packer *pk);

extern const struct listener_kind ingest_unix_listener, ingest_tcp_listener, ingest_udp_listener,
    ingest_ceilo_tcp_listener;

#endif
