/* listener.h — an ingest listener: one producer format on one socket.
 *
 * A listener is a row of ic_listeners[] (daemon/ingest/listeners.c): its
 * config key under listen:, and the hooks the ingest core (ingest.c) calls
 * on the loop thread.  The listener reads its socket, cuts what it reads
 * into pl_items (setting pl_item.decode and dctx when its bytes are not
 * protocol v1 frames), hands them to pl_decode and, once decoded, to
 * pl_submit in arrival order; the pipeline does not know which listener an
 * item came from.
 *
 * Adding a producer format: one file with its ic_listener_kind, one line
 * in ic_listeners[], its config key (daemon/config/, etc/gpuaggd.yaml) and
 * its counters (fields of ga_ingest_stats in ingest.h, packed by its
 * pack_stats, named in docs/COUNTERS.md). */
#ifndef GA_LISTENER_H
#define GA_LISTENER_H

#include <msgpack.h>
#include <stddef.h>

struct ga_config;
struct ga_ingest;
struct ga_ingest_stats;

struct ic_listener_kind {
    const char *key;                   /* its config key, "listen.<key>" */
    /* The configured address ("" = off). */
    const char *(*addr)(const struct ga_config *cfg);
    /* Bind and start reading; *slot receives the listener's state (the
     * listener may clear it once its state is freed).  Counts its handles
     * in g->open_handles.  Returns 0 or GA_E* with err naming the key. */
    int (*start)(struct ga_ingest *g, const char *addr, void **slot, char *err, size_t errlen);
    /* Durable progress: submit decoded items, free finished ones, resume
     * reading.  NULL: nothing of its own in flight. */
    void (*pump)(void *state);
    /* The drain: the first call stops accepting and reading; every call
     * returns 1 once nothing is left in flight. */
    int (*drain)(void *state);
    /* Close every handle; as each closes, the listener lowers
     * g->open_handles and calls ic_check_stopped. */
    void (*close)(void *state);
    /* The bound port (for "port 0"), 0 when none. */
    int (*port)(const void *state);
    /* Its own counters from a stats snapshot, as flat "name": uint pairs
     * of the stats op (docs/COUNTERS.md); returns how many.  NULL: none
     * (protocol v1's are the core's ingest.* counters). */
    int (*pack_stats)(const struct ga_ingest_stats *st, msgpack_packer *pk);
};

/* The listeners, NULL-terminated. */
extern const struct ic_listener_kind *const ic_listeners[];

extern const struct ic_listener_kind ic_listener_unix, ic_listener_tcp, ic_listener_udp,
    ic_listener_ceilometer_tcp;

#endif
