/* control_ops.c — the control protocol's operations (proto/PROTOCOL.md).
 * Each handler packs one result object or returns a GA_E* code + message. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "daemon/control.h"
#include "daemon/daemon.h"
#include "daemon/log.h"
#include "proto/ga_err.h"
#include "proto/mp_util.h"
#include "storage/pg_conn.h"

static double uptime_s(const struct ga_daemon *d)
{
    return (double)(ga_now_mono_ns() - d->start_mono_ns) / 1e9;
}

static int op_ping(struct ga_daemon *d, const msgpack_object *args, msgpack_packer *pk,
                   char *err, size_t errlen)
{
    msgpack_pack_map(pk, 2);
    mp_pack_kv_bool(pk, "pong", 1);
    mp_pack_kv_str(pk, "version", GA_VERSION);
    return 0;
}

static void pack_storage(struct ga_daemon *d, msgpack_packer *pk)
{
    struct pgc_status st;
    pgc_get_status(d->storage, &st);
    msgpack_pack_map(pk, 6);
    mp_pack_kv_str(pk, "state", pgc_state_name(st.state));
    mp_pack_kv_str(pk, "last_error", st.last_error);
    mp_pack_kv_double(pk, "state_for_s", (double)(ga_now_real_ns() - st.since_real_ns) / 1e9);
    mp_pack_kv_uint(pk, "attempts", st.attempts);
    mp_pack_kv_uint(pk, "connects", st.connects);
    mp_pack_kv_int(pk, "server_version", st.server_version);
}

/* One entry per compute device: the CPU backend, then each GPU found. */
static void pack_backends(struct ga_daemon *d, msgpack_packer *pk)
{
    msgpack_pack_array(pk, 1 + (size_t)d->ngpus);
    msgpack_pack_map(pk, 5);
    mp_pack_kv_str(pk, "device", "cpu");
    mp_pack_kv_str(pk, "backend", "cpu");
    mp_pack_kv_str(pk, "name", "CPU reference backend");
    mp_pack_kv_int(pk, "threads", d->cpu_threads);
    mp_pack_kv_str(pk, "state", d->ngpus ? "standby" : "active");
    for (int i = 0; i < d->ngpus; i++) {
        const struct ga_gpu_info *g = &d->gpus[i];
        char dev[16];
        snprintf(dev, sizeof dev, "cuda:%d", g->index);
        msgpack_pack_map(pk, 7);
        mp_pack_kv_str(pk, "device", dev);
        mp_pack_kv_str(pk, "backend", "cuda");
        mp_pack_kv_str(pk, "name", g->name);
        mp_pack_kv_uint(pk, "memory_bytes", g->mem_total);
        char cc[16];
        snprintf(cc, sizeof cc, "%d.%d", g->cc_major, g->cc_minor);
        mp_pack_kv_str(pk, "compute_capability", cc);
        mp_pack_kv_str(pk, "state", g->usable ? "detected" : "unusable");
        mp_pack_kv_str(pk, "why", g->why);
    }
}

static void pack_counters(struct ga_daemon *d, msgpack_packer *pk)
{
    const struct ga_counters *c = &d->counters;
    msgpack_pack_map(pk, 6);
    mp_pack_kv_uint(pk, "ctl_connections", c->ctl_connections);
    mp_pack_kv_uint(pk, "ctl_requests", c->ctl_requests);
    mp_pack_kv_uint(pk, "ctl_errors", c->ctl_errors);
    mp_pack_kv_uint(pk, "ctl_protocol_errors", c->ctl_protocol_errors);
    mp_pack_kv_uint(pk, "reloads", c->reloads);
    mp_pack_kv_uint(pk, "reload_failures", c->reload_failures);
}

static int op_status(struct ga_daemon *d, const msgpack_object *args, msgpack_packer *pk,
                     char *err, size_t errlen)
{
    msgpack_pack_map(pk, 11);
    mp_pack_kv_str(pk, "version", GA_VERSION);
    mp_pack_kv_int(pk, "pid", getpid());
    mp_pack_kv_double(pk, "uptime_s", uptime_s(d));
    mp_pack_kv_str(pk, "state", ga_state_name(d->state));
    mp_pack_kv_str(pk, "config", d->config_path);
    mp_pack_kv_str(pk, "gpu_error", d->gpu_error);
    mp_pack_cstr(pk, "backends");
    pack_backends(d, pk);
    mp_pack_cstr(pk, "storage");
    pack_storage(d, pk);
    mp_pack_cstr(pk, "queues");
    msgpack_pack_map(pk, 1);
    mp_pack_kv_int(pk, "control_connections", ga_control_connections(d->control));
    mp_pack_cstr(pk, "counters");
    pack_counters(d, pk);
    mp_pack_kv_str(pk, "last_reload_error", d->last_reload_error);
    return 0;
}

static int op_stats(struct ga_daemon *d, const msgpack_object *args, msgpack_packer *pk,
                    char *err, size_t errlen)
{
    const struct ga_counters *c = &d->counters;
    struct pgc_status st;
    pgc_get_status(d->storage, &st);
    msgpack_pack_map(pk, 12);
    mp_pack_kv_double(pk, "uptime_s", uptime_s(d));
    mp_pack_kv_uint(pk, "ctl.connections_total", c->ctl_connections);
    mp_pack_kv_int(pk, "ctl.connections_open", ga_control_connections(d->control));
    mp_pack_kv_uint(pk, "ctl.requests", c->ctl_requests);
    mp_pack_kv_uint(pk, "ctl.errors", c->ctl_errors);
    mp_pack_kv_uint(pk, "ctl.protocol_errors", c->ctl_protocol_errors);
    mp_pack_kv_uint(pk, "config.reloads", c->reloads);
    mp_pack_kv_uint(pk, "config.reload_failures", c->reload_failures);
    mp_pack_kv_uint(pk, "storage.connect_attempts", st.attempts);
    mp_pack_kv_uint(pk, "storage.connects", st.connects);
    mp_pack_kv_int(pk, "storage.connected", st.state == PGC_CONNECTED);
    mp_pack_kv_int(pk, "gpu.devices", d->ngpus);
    return 0;
}

static int op_config_get(struct ga_daemon *d, const msgpack_object *args, msgpack_packer *pk,
                         char *err, size_t errlen)
{
    return ga_config_pack(d->cfg, pk);
}

static int op_reload(struct ga_daemon *d, const msgpack_object *args, msgpack_packer *pk,
                     char *err, size_t errlen)
{
    char restart[1024];
    int rc = ga_daemon_reload(d, restart, sizeof restart, err, errlen);
    if (rc < 0)
        return rc;
    int n = 0;
    for (char *p = restart; *p; p++)
        n += (p == restart || p[-1] == ' ') && *p != ' ';
    msgpack_pack_map(pk, 2);
    mp_pack_kv_bool(pk, "reloaded", 1);
    mp_pack_cstr(pk, "restart_needed");
    msgpack_pack_array(pk, (size_t)n);
    for (char *tok = strtok(restart, " "); tok; tok = strtok(NULL, " "))
        mp_pack_cstr(pk, tok);
    return 0;
}

static void on_shutdown_timer(uv_timer_t *t)
{
    struct ga_daemon *d = t->data;
    uv_close((uv_handle_t *)t, (uv_close_cb)free);
    ga_daemon_shutdown(d, "control");
}

static int op_shutdown(struct ga_daemon *d, const msgpack_object *args, msgpack_packer *pk,
                       char *err, size_t errlen)
{
    /* Start the drain on the next loop turn, after this reply is queued. */
    uv_timer_t *t = malloc(sizeof *t);
    if (!t)
        return GA_ENOMEM;
    uv_timer_init(d->loop, t);
    t->data = d;
    uv_timer_start(t, on_shutdown_timer, 0, 0);
    msgpack_pack_map(pk, 1);
    mp_pack_kv_bool(pk, "stopping", 1);
    return 0;
}

const struct ga_ctl_op ga_ctl_ops[] = {
    { "ping", op_ping },
    { "status", op_status },
    { "stats", op_stats },
    { "config.get", op_config_get },
    { "reload", op_reload },
    { "shutdown", op_shutdown },
    { NULL, NULL },
};
