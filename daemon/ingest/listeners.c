/* listeners.c — the table of ingest listeners (listener.h): at most
 * IC_MAX_LISTENERS rows (ingest_priv.h), started in this order. */
#include "daemon/ingest/listener.h"

#include <stddef.h>

const struct ic_listener_kind *const ic_listeners[] = {
    &ic_listener_unix,             /* protocol v1, Unix stream (ingest.c) */
    &ic_listener_tcp,              /* protocol v1, TCP (ingest.c) */
    &ic_listener_udp,              /* Ceilometer udp:// (ingest_udp.c) */
    &ic_listener_ceilometer_tcp,   /* Ceilometer tcp:// (ingest_ceilo_tcp.c) */
    NULL,
};
