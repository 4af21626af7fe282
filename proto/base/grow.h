/* grow.h — the one growable array: a realloc'd block of *cap elements.
 *
 * ga_grow makes room for need elements of elem bytes at *p: nothing when
 * need <= *cap, else the capacity doubles from `first` (when *cap is 0) or
 * from *cap until it holds need.  Contents are kept; ga_grow_zero also
 * zeroes the new elements.  0, or GA_ENOMEM (also when the size overflows)
 * with *p and *cap unchanged. */
#ifndef GA_BASE_GROW_H
#define GA_BASE_GROW_H

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "proto/ga_err.h"

static inline int ga_grow_impl(void **p, size_t *cap, size_t need, size_t elem, size_t first, int zero)
{
    if (need <= *cap)
        return 0;
    size_t c = *cap ? *cap : (first ? first : 1);
    while (c < need) {
        if (c > SIZE_MAX / 2)
            return GA_ENOMEM;
        c *= 2;
    }
    if (elem && c > SIZE_MAX / elem)
        return GA_ENOMEM;
    void *q = realloc(*p, c * elem);
    if (!q)
        return GA_ENOMEM;
    if (zero)
        memset((char *)q + *cap * elem, 0, (c - *cap) * elem);
    *p = q;
    *cap = c;
    return 0;
}

static inline int ga_grow(void **p, size_t *cap, size_t need, size_t elem, size_t first)
{
    return ga_grow_impl(p, cap, need, elem, first, 0);
}

static inline int ga_grow_zero(void **p, size_t *cap, size_t need, size_t elem, size_t first)
{
    return ga_grow_impl(p, cap, need, elem, first, 1);
}

#endif
