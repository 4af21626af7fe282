/* ga_partition.h — the metric space in a fixed number of partitions.
 *
 * A metric belongs to partition ga_partition_of(name): FNV-1a (64-bit) of
 * the name's bytes, modulo GA_PARTITIONS.  The partition is the unit of
 * durable engine state: each has its own window checkpoint (the journal
 * position its metrics' window snapshots were taken at, table `partitions`
 * in docs/STORAGE.md), snapshotted on its own schedule, and the unit that a
 * cluster of daemons will hand from one owner to another.  The function and
 * the count are part of the on-disk format: a database written with one
 * mapping must be read with the same one. */
#ifndef GA_PARTITION_H
#define GA_PARTITION_H

#include <stddef.h>
#include <stdint.h>

#define GA_PARTITIONS 64

static inline int ga_partition_of(const char *name, size_t len)
{
    uint64_t h = 14695981039346656037ULL;
    for (size_t i = 0; i < len; i++)
        h = (h ^ (unsigned char)name[i]) * 1099511628211ULL;
    return (int)(h % GA_PARTITIONS);
}

#endif
