/* listeners.c — the table of ingest listeners (listener.h): at most
 * INGEST_MAX_LISTENERS rows, started in this order; and the rendering of
 * their counters for the stats op and `status`. */
#include "daemon/ingest/listener.h"

#include <stddef.h>
#include <stdio.h>

#include "daemon/config/config.h"
#include "proto/mp_util.h"

const struct listener_kind *const listeners[] = {
    &ingest_unix_listener,         /* protocol v1, Unix stream (ingest.c) */
    &ingest_tcp_listener,          /* protocol v1, TCP (ingest.c) */
    &ingest_udp_listener,          /* Ceilometer udp:// (ingest_udp.c) */
    &ingest_ceilo_tcp_listener,    /* Ceilometer tcp:// (ingest_ceilo_tcp.c) */
    NULL,
};

int listeners_pack_status(const struct ga_ingest *g, const struct ga_config *cfg,
                          const struct ga_ingest_stats *st, msgpack_packer *pk)
{
    int n = 0;
    for (int i = 0; i < INGEST_MAX_LISTENERS && listeners[i]; i++) {
        const struct listener_kind *k = listeners[i];
        char name[160];
        n++;
        if (pk && k->port) {
            snprintf(name, sizeof name, "%s_port", k->key);
            mp_pack_kv_int(pk, name, ga_ingest_port(g, k));
        } else if (pk) {
            mp_pack_kv_str(pk, k->key, k->addr(cfg));
        }
        for (const struct listener_counter *ct = k->counters; ct && ct->name; ct++) {
            if (!ct->status || ct->n)
                continue;
            n++;
            if (pk) {
                snprintf(name, sizeof name, "%s_%s", k->key, ct->name);
                mp_pack_kv_uint(pk, name, st->listener[i][ct->slot]);
            }
        }
    }
    return n;
}
