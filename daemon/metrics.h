/* metrics.h — the metric registry: name ↔ dense id, and each metric's policy.
 *
 * Ids are dense from 0 in order of first appearance, so engines can index
 * arrays by them (a restore may leave holes: ids of a database written
 * with other ids).  A metric's policy is fixed when it is created (the first
 * rule matching its name, else the default policy, as Gnocchi's
 * archive_policy_rule does); a reload changes the policy of new metrics
 * only.  Policies are copied into the registry, so config reloads never
 * pull one from under a metric.
 *
 * Not thread-safe: one thread (the engine worker) owns the registry. */
#ifndef GA_METRICS_H
#define GA_METRICS_H

#include <stddef.h>
#include <stdint.h>

#include "daemon/config/config.h"
#include "proto/policy.h"

#define GA_METRIC_NAME_MAX 255

struct ga_metrics;

struct ga_metric_info {
    const char *name;              /* NUL-terminated, owned by the registry */
    uint32_t len;
    const struct ga_policy *policy;
    uint64_t points;               /* points aggregated */
    uint64_t late;                 /* points reported late */
};

int ga_metrics_open(struct ga_metrics **out);
void ga_metrics_close(struct ga_metrics *m);

/* Find name, or create it with the policy cfg assigns to it.  Sets *id and
 * *created (may be NULL).  Returns 0, GA_EINVAL for an empty or too long
 * name, GA_ENOENT when no policy matches and there is no default,
 * GA_ENOMEM. */
int ga_metrics_intern(struct ga_metrics *m, const char *name, size_t len,
                      const struct ga_config *cfg, uint32_t *id, int *created);

/* Find an existing metric; GA_ENOENT if unknown. */
int ga_metrics_find(const struct ga_metrics *m, const char *name, size_t len, uint32_t *id);

/* Create with an explicit policy (restoring from storage); ids skipped
 * become holes, and new metrics get ids from one past the highest.
 * GA_EEXIST if the name exists with another id, GA_EINVAL when the id is
 * another name's. */
int ga_metrics_restore(struct ga_metrics *m, const char *name, size_t len, uint32_t id,
                       const struct ga_policy *p);

/* One past the highest id (holes included). */
uint32_t ga_metrics_count(const struct ga_metrics *m);
/* The metrics held: ids that are not holes. */
uint32_t ga_metrics_named(const struct ga_metrics *m);
/* Info for id < count that is not a hole; NULL otherwise.  The pointer stays valid until the
 * next intern/restore. */
struct ga_metric_info *ga_metrics_get(struct ga_metrics *m, uint32_t id);

#endif
