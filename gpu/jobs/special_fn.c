/* special_fn.c — host entry points of special_fn.h (bodies in special_fn_impl.h). */
#include "gpu/jobs/special_fn.h"

#include "gpu/jobs/special_fn_impl.h"

double ga_lgamma(double x)
{
    return ga_sf_lgamma(x);
}

double ga_gamma_p(double a, double x)
{
    return ga_sf_gamma_pq(a, x, 0);
}

double ga_gamma_q(double a, double x)
{
    return ga_sf_gamma_pq(a, x, 1);
}

double ga_gamma_p_inv(double a, double p)
{
    if (!(p >= 0.0 && p <= 1.0))
        return NAN;
    return ga_sf_gamma_inv(a, p, 1.0 - p);
}

double ga_gamma_q_inv(double a, double q)
{
    if (!(q >= 0.0 && q <= 1.0))
        return NAN;
    return ga_sf_gamma_inv(a, 1.0 - q, q);
}
