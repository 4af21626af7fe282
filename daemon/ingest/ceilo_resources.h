/* ceilo_resources.h — the resource recorder: Gnocchi resources learnt from
 * Ceilometer samples (docs/API.md "Resources").
 *
 * Every Ceilometer datagram the ingest accepts is shown to ceilo_resources_sample()
 * (from the pipeline's decode workers).  It reads resource_id, project_id,
 * user_id, counter_name, counter_unit and resource_metadata; what it has
 * seen unchanged recently (a direct-mapped cache of 65536 hashes) stops
 * there.  The rest goes on a bounded queue (CEILO_RESOURCES_QUEUE entries; a full
 * queue drops the sample's resource update, counted, and the next sample
 * of that resource tries again) to one thread that upserts the resources
 * and resource_metrics rows (storage/pg_resources.h) on its own
 * PostgreSQL connection (application_name "gpuaggd-resources"), never the
 * writers'.  The
 * samples' points go through ingest as always: nothing here can delay or
 * lose a point.
 *
 * Resource id: Gnocchi's ResourceUUID(resource_id, creator), creator =
 * http.resource_creator or "user_id:project_id" of the sample.  Type from
 * the meter name (instance, instance_disk, instance_network_interface,
 * image, volume, else generic); attributes: the metadata's scalar values,
 * and those of its nested maps one level down as "parent_child"
 * (flavor.id becomes flavor_id, as Gnocchi's instance type names it), at
 * most 4 KiB of JSON. */
#ifndef GA_INGEST_CEILO_RESOURCES_H
#define GA_INGEST_CEILO_RESOURCES_H

#include <stddef.h>
#include <stdint.h>

#define CEILO_RESOURCES_QUEUE 4096

struct ceilo_resources;

struct ceilo_resources_stats {
    uint64_t seen, recorded, dropped, errors;
};

/* Start the recorder thread.  conninfo copied; creator ("" = per sample)
 * copied.  Returns 0, GA_ENOMEM or GA_EIO. */
int ceilo_resources_start(struct ceilo_resources **out, const char *conninfo, const char *creator);
/* Stop the thread (what is queued and not written is dropped: it is
 * learnt again from the next samples) and free.  NULL ok. */
void ceilo_resources_stop(struct ceilo_resources *c);
/* The pipeline's UDP sink (pipeline_set_udp_sink): ctx is the struct ceilo_resources. */
void ceilo_resources_sample(void *ctx, const void *dgram, size_t len);
void ceilo_resources_get_stats(struct ceilo_resources *c, struct ceilo_resources_stats *out);

#endif
