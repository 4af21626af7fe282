/* listeners.c — the table of ingest listeners (listener.h): at most
 * IC_MAX_LISTENERS rows, started in this order; and the rendering of
 * their counters for the stats op and `status`. */
#include "daemon/ingest/listener.h"

#include <stddef.h>
#include <stdio.h>

#include "daemon/config/config.h"
#include "proto/mp_util.h"

const struct ic_listener_kind *const ic_listeners[] = {
    &ic_listener_unix,             /* protocol v1, Unix stream (ingest.c) */
    &ic_listener_tcp,              /* protocol v1, TCP (ingest.c) */
    &ic_listener_udp,              /* Ceilometer udp:// (ingest_udp.c) */
    &ic_listener_ceilometer_tcp,   /* Ceilometer tcp:// (ingest_ceilo_tcp.c) */
    NULL,
};

int ic_pack_status(const struct ga_ingest *g, const struct ga_config *cfg,
                   const struct ga_ingest_stats *st, msgpack_packer *pk)
{
    int n = 0;
    for (int i = 0; i < IC_MAX_LISTENERS && ic_listeners[i]; i++) {
        const struct ic_listener_kind *k = ic_listeners[i];
        char name[160];
        n++;
        if (pk && k->port) {
            snprintf(name, sizeof name, "%s_port", k->key);
            mp_pack_kv_int(pk, name, ga_ingest_port(g, k));
        } else if (pk) {
            mp_pack_kv_str(pk, k->key, k->addr(cfg));
        }
        for (const struct ic_counter *ct = k->counters; ct && ct->name; ct++) {
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
