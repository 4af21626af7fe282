/* hmap.c — the hash map's growth and deletion (see hmap.h). */
#include "proto/base/hmap.h"

#include <stdlib.h>
#include <string.h>

#define TAG(s) ((size_t)((s) >> 32))

/* Move every entry into ncap fresh slots (ncap a power of two that holds
 * them).  0 or GA_ENOMEM (the map unchanged). */
static int rehash(struct ga_hmap *m, size_t ncap)
{
    if (ncap > ((size_t)1 << 32))
        return GA_ENOMEM;
    uint64_t *ns = calloc(ncap, sizeof *ns);
    if (!ns)
        return GA_ENOMEM;
    size_t mask = ncap - 1;
    for (size_t i = 0; i < m->cap; i++) {
        uint64_t s = m->slot[i];
        if (!s)
            continue;
        size_t j = TAG(s) & mask;
        while (ns[j])
            j = (j + 1) & mask;
        ns[j] = s;
    }
    free(m->slot);
    m->slot = ns;
    m->cap = ncap;
    return 0;
}

/* The smallest power of two >= 16 that holds n entries at 3/4 full. */
static size_t cap_for(size_t n)
{
    size_t c = 16;
    while (n * 4 > c * 3)
        c *= 2;
    return c;
}

int ga_hmap_reserve(struct ga_hmap *m, size_t n)
{
    if (n > GA_HMAP_MAX_ENTRIES)
        return GA_ENOSPC;
    if (n * 4 <= m->cap * 3)
        return 0;
    return rehash(m, cap_for(n));
}

int ga_hmap_put_grow(struct ga_hmap *m, uint64_t h, uint32_t v)
{
    if (v > GA_HMAP_VALUE_MAX)
        return GA_EINVAL;
    if (m->n >= GA_HMAP_MAX_ENTRIES)
        return GA_ENOSPC;
    if ((m->n + 1) * 4 > m->cap * 3) {
        int rc = rehash(m, m->cap ? m->cap * 2 : 16);
        if (rc < 0)
            return rc;
    }
    size_t mask = m->cap - 1, i = (size_t)(h >> 32) & mask;
    while (m->slot[i])
        i = (i + 1) & mask;
    m->slot[i] = (h & 0xffffffff00000000ULL) | ((uint64_t)v + 1);
    m->n++;
    return 0;
}

/* Backward-shift deletion: empty the slot, then walk the cluster after it
 * and move back into the hole each entry whose first slot is not between
 * the hole and where it sits (it was pushed past the hole). */
void ga_hmap_del(struct ga_hmap *m, struct ga_hmap_it *it)
{
    size_t mask = m->cap - 1;
    size_t at = (it->i - 1) & mask, hole = at;
    for (size_t j = (at + 1) & mask;; j = (j + 1) & mask) {
        uint64_t s = m->slot[j];
        if (!s)
            break;
        if (((j - TAG(s)) & mask) >= ((j - hole) & mask)) {
            m->slot[hole] = s;
            hole = j;
        }
    }
    m->slot[hole] = 0;
    m->n--;
    it->i = at;
}

void ga_hmap_clear(struct ga_hmap *m)
{
    if (m->cap)
        memset(m->slot, 0, m->cap * sizeof *m->slot);
    m->n = 0;
}

void ga_hmap_free(struct ga_hmap *m)
{
    free(m->slot);
    m->slot = NULL;
    m->cap = m->n = 0;
}
