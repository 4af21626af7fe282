/* kinds.c — the table of job kinds (kind.h); a kind is one folder,
 * gpu/jobs/X/, and one line here. */
#include "daemon/jobs/kind.h"

#include <stddef.h>

const struct ga_job_kind *const ga_job_kinds[] = {
    &jk_resample,
    &jk_kmeans,
    &jk_dot,
    &jk_blackscholes,
    &jk_gf820,
    &jk_apd,
    NULL,
};
