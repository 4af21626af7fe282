/* kinds.c — the table of job kinds (kind.h); a kind is one folder,
 * gpu/jobs/X/, and one line here. */
#include "daemon/jobs/kind.h"

#include <stddef.h>

const struct ga_job_kind *const ga_job_kinds[] = {
    &job_kind_resample,
    &job_kind_kmeans,
    &job_kind_dot,
    &job_kind_blackscholes,
    &job_kind_gf820,
    &job_kind_apd,
    NULL,
};
