/* hmap.h — the one hash map: open addressing, linear probing, from a
 * 64-bit hash to a 32-bit value.
 *
 * The map holds no keys.  The caller keeps its keys (an array of names,
 * of rows, ...) and stores in the map each key's hash with a value,
 * usually the key's index in that array.  A lookup walks the values
 * stored under a hash and the caller compares the keys; a miss leaves the
 * walk on the free slot where the key goes:
 *
 *     struct ga_hmap_it it = ga_hmap_find(&m, h);
 *     uint32_t v;
 *     while (ga_hmap_next(&it, &v))
 *         if (same(&keys[v], key))
 *             return v;                          // found
 *     rc = ga_hmap_put(&m, &it, h, nkeys);       // new: value = its index
 *
 * The hash: 64 bits, of which the map keeps the high 32, so they must be
 * well mixed (ga_hash_fmix64 of the key, or of ga_hash_fnv1a of a string).
 *
 * A slot is one uint64_t: the hash's high 32 bits, then value + 1 (0 is a
 * free slot), so values go up to GA_HMAP_VALUE_MAX.  A key's first slot is
 * taken from the same 32 bits, so the map grows without asking for the keys,
 * and a walk hands back only values whose 32 bits match: the caller
 * compares keys for those alone (another key's value comes back about once
 * in 2^32 slots walked).
 *
 * Load: at most 3/4 of the slots are used; the map doubles (from 16 slots)
 * before a put would pass that, or reserves room ahead (ga_hmap_reserve:
 * then the next puts up to that count never allocate nor fail for memory).
 * A delete moves the entries after it back (no tombstones), so lookups stay
 * as short after deletes as after inserts.
 *
 * Bound: GA_HMAP_MAX_ENTRIES; a put past it fails with GA_ENOSPC and
 * changes nothing.  A caller with a bound of its own checks m->n before
 * putting.  Memory: 8 bytes a slot, so 10.7 to 21.3 bytes an entry (3/4 to
 * 3/8 full) once past the first 16 slots.
 *
 * A zeroed struct is an empty map; ga_hmap_free frees it.  No global state;
 * not thread-safe (the caller locks). */
#ifndef GA_BASE_HMAP_H
#define GA_BASE_HMAP_H

#include <stddef.h>
#include <stdint.h>

#include "proto/ga_err.h"

#define GA_HMAP_VALUE_MAX   ((uint32_t)0xfffffffe)
#define GA_HMAP_MAX_ENTRIES ((size_t)1 << 31)

struct ga_hmap {
    uint64_t *slot;                  /* cap slots: tag << 32 | (value + 1); 0 free */
    size_t cap;                      /* a power of two (2^32 at most), or 0 */
    size_t n;                        /* entries */
};

/* A walk over the values stored under one hash (ga_hmap_find). */
struct ga_hmap_it {
    const uint64_t *slot;            /* the map's slots when the walk began */
    size_t mask, i;                  /* i: the next slot to look at */
    uint64_t tag;                    /* the hash's high 32 bits, in place */
};

/* Start a walk over the values stored under hash h. */
static inline struct ga_hmap_it ga_hmap_find(const struct ga_hmap *m, uint64_t h)
{
    struct ga_hmap_it it = { m->slot, m->cap - 1, 0, h & 0xffffffff00000000ULL };
    it.i = (size_t)(h >> 32) & it.mask;
    return it;
}

/* The next value stored under the walk's hash: 1 and *v, or 0 when there
 * is none left (the walk then rests on the free slot where the hash goes,
 * for ga_hmap_put). */
static inline int ga_hmap_next(struct ga_hmap_it *it, uint32_t *v)
{
    if (!it->slot)
        return 0;
    for (;;) {
        uint64_t s = it->slot[it->i];
        if (!s)
            return 0;
        it->i = (it->i + 1) & it->mask;
        if ((s & 0xffffffff00000000ULL) == it->tag) {
            *v = (uint32_t)s - 1;
            return 1;
        }
    }
}

/* Grow and put: ga_hmap_put's slow path (hmap.c). */
int ga_hmap_put_grow(struct ga_hmap *m, uint64_t h, uint32_t v);

/* Store value v (<= GA_HMAP_VALUE_MAX) under hash h.  it: a walk for h
 * that ended (ga_hmap_next returned 0) with no change to the map since,
 * or NULL (the map then looks for the free slot itself).  The map does not
 * look for an equal key: putting one twice stores it twice.  0, GA_ENOSPC
 * at the bound, GA_ENOMEM, GA_EINVAL (v too big); on error nothing
 * changed. */
static inline int ga_hmap_put(struct ga_hmap *m, const struct ga_hmap_it *it, uint64_t h, uint32_t v)
{
    if (it && it->slot && it->slot == m->slot && !m->slot[it->i] && m->n < GA_HMAP_MAX_ENTRIES &&
        (m->n + 1) * 4 <= m->cap * 3 && v <= GA_HMAP_VALUE_MAX) {
        m->slot[it->i] = (h & 0xffffffff00000000ULL) | ((uint64_t)v + 1);
        m->n++;
        return 0;
    }
    return ga_hmap_put_grow(m, h, v);
}

/* Delete the entry the walk's last ga_hmap_next returned.  The walk may go
 * on: it looks next at the slot the deleted entry left (an entry after it
 * may have moved there).  The map must not have changed since that
 * ga_hmap_next. */
void ga_hmap_del(struct ga_hmap *m, struct ga_hmap_it *it);

/* Room for n entries in all: the puts that bring the map up to n entries
 * neither allocate nor fail for memory.  0, GA_ENOSPC (n over the bound),
 * GA_ENOMEM (the map unchanged). */
int ga_hmap_reserve(struct ga_hmap *m, size_t n);

/* Forget every entry, keeping the slots' memory (walks begun before are
 * void). */
void ga_hmap_clear(struct ga_hmap *m);

/* Free the slots; the map is left empty. */
void ga_hmap_free(struct ga_hmap *m);

#endif
