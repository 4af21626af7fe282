/* api_resource_types.c — the resource types the API answers and their
 * attributes: Ceilometer's (ceilometer/gnocchi_client.py, resources_initial
 * with its update operations applied, what ceilometer-upgrade creates in
 * Gnocchi), for the types the Ceilometer recorder (ceilo_resources.c)
 * records.  One table feeds GET /v1/resource_type, the attributes a
 * resource shows and the attribute names a search filter may use. */
#include "daemon/http/api_resource.h"

#include <string.h>

#define S(n, req) { n, "string", req, 0, 255 }
#define U(n, req) { n, "uuid", req, 0, 0 }
#define D(n, req) { n, "datetime", req, 0, 0 }

static const struct api_attr instance[] = {
    S("flavor_id", 1), S("image_ref", 0), S("host", 1), S("display_name", 1),
    S("server_group", 0), S("flavor_name", 1), D("launched_at", 0), D("created_at", 0),
    D("deleted_at", 0), S("availability_zone", 0), { NULL, NULL, 0, 0, 0 } };
static const struct api_attr named_instance_part[] = {
    S("name", 1), U("instance_id", 1), { NULL, NULL, 0, 0, 0 } };
static const struct api_attr image[] = {
    S("name", 1), S("container_format", 1), S("disk_format", 1), { NULL, NULL, 0, 0, 0 } };
static const struct api_attr volume[] = {
    S("display_name", 0), S("volume_type", 0), U("image_id", 0), U("instance_id", 0),
    { NULL, NULL, 0, 0, 0 } };
static const struct api_attr host[] = { S("host_name", 1), { NULL, NULL, 0, 0, 0 } };
static const struct api_attr none[] = { { NULL, NULL, 0, 0, 0 } };

const struct api_resource_type api_resource_types[] = {
    { "generic", none },
    { "instance", instance },
    { "instance_disk", named_instance_part },
    { "instance_network_interface", named_instance_part },
    { "image", image },
    { "volume", volume },
    { "ceph_account", none },
    { "network", none },
    { "host", host },
    { "identity", none },
    { "stack", none },
    { "swift_account", none },
    { "ipmi", none },
};
const int api_nresource_types = (int)(sizeof api_resource_types / sizeof api_resource_types[0]);

const struct api_resource_type *api_resource_type(const char *name)
{
    for (int i = 0; i < api_nresource_types; i++)
        if (strcmp(api_resource_types[i].name, name) == 0)
            return &api_resource_types[i];
    return NULL;
}

int api_resource_type_known(const char *name)
{
    return api_resource_type(name) != NULL;
}

const struct api_attr *api_resource_attr(const struct api_resource_type *t, const char *name)
{
    for (const struct api_attr *a = t->attrs; a->name; a++)
        if (strcmp(a->name, name) == 0)
            return a;
    return NULL;
}

json_t *api_resource_type_json(const struct api_resource_type *t)
{
    json_t *attrs = json_object();
    for (const struct api_attr *a = t->attrs; a->name; a++) {
        json_t *o = json_pack("{s:s, s:b}", "type", a->type, "required", a->required);
        if (!strcmp(a->type, "string")) {    /* Gnocchi's key order: the CLI shows it */
            json_object_set_new(o, "max_length", json_integer(a->max));
            json_object_set_new(o, "min_length", json_integer(a->min));
        }
        json_object_set_new(attrs, a->name, o);
    }
    return json_pack("{s:s, s:s, s:o}", "name", t->name, "state", "active", "attributes", attrs);
}
