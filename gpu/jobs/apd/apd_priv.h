/* apd_priv.h — internals shared by apd.c and apd_gpu.cu. */
#ifndef GA_APD_PRIV_H
#define GA_APD_PRIV_H

#include "gpu/jobs/apd/apd_impl.h"

#ifdef __cplusplus
extern "C" {
#endif

/* tab[p->n_lambda] for windows of p->window values. */
void apd_lambda_table(const struct apd_params *p, struct apd_lam *tab);
/* apd_validate plus: every series value finite (message names the index). */
int apd_check_input(const struct apd_params *p, const double *series, size_t n, char *err, size_t errlen);

#ifdef __cplusplus
}
#endif

#endif
