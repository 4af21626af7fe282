/* config_size.c — the keys sized by the machine: ga_machine_probe() reads
 * the CPUs, the memory and the journal's file system; ga_config_size()
 * turns every "auto" of storage.writers, journal.max_bytes,
 * limits.max_metrics and engine.workers into a number for that machine,
 * once at start, and records for each whether auto chose it and why (status
 * shows the record).  The rules are in config.h and etc/gpuaggd.yaml. */
#include "daemon/config/config.h"

#include <dirent.h>
#include <errno.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/statvfs.h>
#include <unistd.h>

#include "proto/ga_err.h"

#define MiB (1024ULL * 1024)
#define GiB (1024 * MiB)

/* storage.writers: one PostgreSQL writer a CPU, within these. */
#define WRITERS_MIN 4
#define WRITERS_MAX 16

/* engine.workers: one partition worker per ENGINE_CPUS_PER_WORKER CPUs
 * (the rest feed it: listeners, sequencer, writers, backend threads). */
#define ENGINE_CPUS_PER_WORKER 4
#define ENGINE_WORKERS_MAX 16

/* journal.max_bytes.  The journal keeps every point newer than the oldest
 * partition's window save, so it must hold one storage.window_snapshot_s
 * round of ingest at the rate the daemon is rated for:
 *   JOURNAL_POINTS_PER_CPU  the rated ingest, points/s a CPU (1 M points/s
 *                           on 16 cores)
 *   JOURNAL_BYTES_PER_POINT a point in the journal, rounded up: about 30
 *                           bytes were measured (31 MB/s at 1 M points/s)
 *   JOURNAL_HEADROOM        room for twice that round, for a save that runs
 *                           late or a burst
 * then bounded by the disk (half of what is free to it) and floors. */
#define JOURNAL_POINTS_PER_CPU 65536ULL
#define JOURNAL_BYTES_PER_POINT 32ULL
#define JOURNAL_HEADROOM 2ULL
#define JOURNAL_FLOOR (1 * GiB)            /* what auto aims at least for */
#define JOURNAL_MIN (256 * MiB)            /* never less, even on a small disk */
#define JOURNAL_NO_STATVFS (4 * GiB)       /* the file system cannot be asked */

/* limits.max_metrics: one metric per METRICS_BYTES_EACH of
 * 1 / METRICS_MEMORY_SHARE of the physical memory. */
#define METRICS_MEMORY_SHARE 4
#define METRICS_BYTES_EACH 1024
#define METRICS_MAX 1000000000ULL          /* the key's range */

static const char *const sized_keys[GA_SIZED_N] = {
    [GA_SIZED_WRITERS] = "storage.writers",
    [GA_SIZED_JOURNAL_MAX_BYTES] = "journal.max_bytes",
    [GA_SIZED_MAX_METRICS] = "limits.max_metrics",
    [GA_SIZED_ENGINE_WORKERS] = "engine.workers",
};

/* ---- the machine -------------------------------------------------------- */

/* Bytes of the journal's segments (NNN.wal) in dir; 0 if it cannot be read. */
static uint64_t journal_bytes(const char *dir)
{
    uint64_t sum = 0;
    DIR *d = opendir(dir);
    if (!d)
        return 0;
    struct dirent *e;
    char path[GA_PATH_MAX + 256];
    while ((e = readdir(d))) {
        size_t n = strlen(e->d_name);
        struct stat st;
        if (n < 5 || strcmp(e->d_name + n - 4, ".wal") != 0)
            continue;
        snprintf(path, sizeof path, "%s/%s", dir, e->d_name);
        if (stat(path, &st) == 0 && S_ISREG(st.st_mode))
            sum += (uint64_t)st.st_size;
    }
    closedir(d);
    return sum;
}

void ga_machine_probe(struct ga_machine *m, const char *journal_dir, int ngpus)
{
    memset(m, 0, sizeof *m);
    long ncpu = sysconf(_SC_NPROCESSORS_ONLN), pages = sysconf(_SC_PHYS_PAGES),
         page = sysconf(_SC_PAGESIZE);
    m->ncpu = ncpu > 0 ? (int)ncpu : 1;
    m->phys_bytes = pages > 0 && page > 0 ? (uint64_t)pages * (uint64_t)page : 0;
    m->ngpus = ngpus;

    /* journal.dir, or the nearest parent that exists: the daemon creates
     * the directory later, on the same file system. */
    snprintf(m->fs_path, sizeof m->fs_path, "%s", journal_dir);
    struct statvfs vfs;
    for (;;) {
        if (statvfs(m->fs_path, &vfs) == 0) {
            m->fs_errno = 0;
            break;
        }
        m->fs_errno = errno;
        char *slash = strrchr(m->fs_path, '/');
        if (m->fs_errno != ENOENT || !slash || !m->fs_path[1]) {
            snprintf(m->fs_path, sizeof m->fs_path, "%s", journal_dir);
            return;
        }
        slash[slash == m->fs_path] = '\0';      /* "/a" -> "/", "/a/b" -> "/a" */
    }
    m->fs_avail_bytes = (uint64_t)vfs.f_bavail * (uint64_t)vfs.f_frsize;
    m->journal_bytes = journal_bytes(journal_dir);
}

/* ---- formatting --------------------------------------------------------- */

/* "52.1 GiB", "300.0 MiB", "512 bytes". */
static const char *human(uint64_t b, char *buf, size_t len)
{
    if (b >= GiB)
        snprintf(buf, len, "%.1f GiB", (double)b / (double)GiB);
    else if (b >= MiB)
        snprintf(buf, len, "%.1f MiB", (double)b / (double)MiB);
    else
        snprintf(buf, len, "%" PRIu64 " bytes", b);
    return buf;
}

static void set_reason(struct ga_config_sized *s, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));
static void set_reason(struct ga_config_sized *s, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(s->reason, sizeof s->reason, fmt, ap);
    va_end(ap);
}

/* ---- the rules ---------------------------------------------------------- */

/* clamp(ncpu / per, lo, hi) with its reason. */
static void size_by_cpus(struct ga_config_sized *s, int ncpu, int per, int lo, int hi)
{
    int v = ncpu / per;
    char base[64];
    if (per == 1)
        snprintf(base, sizeof base, "%d CPU%s", ncpu, ncpu == 1 ? "" : "s");
    else
        snprintf(base, sizeof base, "%d CPU%s / %d", ncpu, ncpu == 1 ? "" : "s", per);
    if (v < lo)
        set_reason(s, "%s, at least %d", base, (v = lo));
    else if (v > hi)
        set_reason(s, "%s, at most %d", base, (v = hi));
    else
        set_reason(s, "%s", base);
    s->value = v;
}

static void size_journal(struct ga_config_sized *s, const struct ga_config *c, const struct ga_machine *m)
{
    char a[32], b[32], held[64] = "";
    if (m->fs_errno) {
        s->value = (int64_t)JOURNAL_NO_STATVFS;
        set_reason(s, "statvfs of %s failed (%s): %s", m->fs_path, strerror(m->fs_errno),
                   human(JOURNAL_NO_STATVFS, a, sizeof a));
        return;
    }
    uint64_t rate = JOURNAL_POINTS_PER_CPU * (uint64_t)m->ncpu;
    uint64_t need = rate * JOURNAL_BYTES_PER_POINT * (uint64_t)c->storage.window_snapshot_s *
                    JOURNAL_HEADROOM;
    uint64_t free_bytes = m->fs_avail_bytes + m->journal_bytes;
    uint64_t room = free_bytes / 2 / MiB * MiB;
    uint64_t v = need;
    if (m->journal_bytes)
        snprintf(held, sizeof held, ", the journal's %s included", human(m->journal_bytes, b, sizeof b));
    set_reason(s, "%d s of %" PRIu64 " points/s (%d CPUs) at %llu bytes, twice: %s",
               c->storage.window_snapshot_s, rate, m->ncpu, JOURNAL_BYTES_PER_POINT,
               human(need, a, sizeof a));
    if (v < JOURNAL_FLOOR) {
        v = JOURNAL_FLOOR;
        set_reason(s, "at least %s (%d s of %" PRIu64 " points/s at %llu bytes, twice, is %s)",
                   human(JOURNAL_FLOOR, a, sizeof a), c->storage.window_snapshot_s, rate,
                   JOURNAL_BYTES_PER_POINT, human(need, b, sizeof b));
    }
    if (v > room) {
        v = room;
        set_reason(s, "half of %s free on %s%s (%s wanted)", human(free_bytes, a, sizeof a),
                   m->fs_path, held, human(need > JOURNAL_FLOOR ? need : JOURNAL_FLOOR, b, sizeof b));
    }
    uint64_t min = JOURNAL_MIN, seg2 = 2 * (uint64_t)c->journal.segment_bytes;
    if (seg2 > min)
        min = seg2;
    if (v < min) {
        v = min;
        set_reason(s, "at least %s%s (half of %s free on %s%s is less)", human(min, a, sizeof a),
                   min == seg2 && seg2 > JOURNAL_MIN ? ", twice segment_bytes" : "",
                   human(free_bytes, b, sizeof b), m->fs_path, held);
    }
    s->value = (int64_t)v;
}

static void size_max_metrics(struct ga_config_sized *s, const struct ga_config *c,
                             const struct ga_machine *m)
{
    char a[32];
    uint64_t v;
    if (!m->phys_bytes) {
        v = (uint64_t)c->limits.memory_budget_bytes / METRICS_BYTES_EACH;
        set_reason(s, "memory size unknown: one a KiB of limits.memory_budget_bytes (%s)",
                   human((uint64_t)c->limits.memory_budget_bytes, a, sizeof a));
    } else {
        v = m->phys_bytes / METRICS_MEMORY_SHARE / METRICS_BYTES_EACH;
        set_reason(s, "a quarter of %s RAM", human(m->phys_bytes, a, sizeof a));
    }
    if (v > METRICS_MAX) {
        v = METRICS_MAX;
        snprintf(s->reason + strlen(s->reason), sizeof s->reason - strlen(s->reason),
                 ", at most %llu", METRICS_MAX);
    }
    if (v < 1)
        v = 1;
    s->value = (int64_t)v;
}

/* One key's record for c and m: set keeps the file's value. */
static void size_key(struct ga_config *c, enum ga_sized_key k, const struct ga_machine *m)
{
    struct ga_config_sized *s = &c->sizing.key[k];
    const struct ga_config_key *kd = ga_config_find_key(sized_keys[k]);
    int64_t v;
    if (kd->size == sizeof(int64_t)) {
        memcpy(&v, (char *)c + kd->off, sizeof v);
    } else {
        int iv;
        memcpy(&iv, (char *)c + kd->off, sizeof iv);
        v = iv;
    }
    memset(s, 0, sizeof *s);
    s->key = sized_keys[k];
    s->is_auto = v <= 0;
    if (!s->is_auto) {
        int line = ga_config_key_line(c, s->key);
        s->value = v;
        if (line > 0)
            set_reason(s, "set in the config (line %d)", line);
        else
            set_reason(s, "set in the config");
        return;
    }
    switch (k) {
    case GA_SIZED_WRITERS:
        size_by_cpus(s, m->ncpu, 1, WRITERS_MIN, WRITERS_MAX);
        c->storage.writers = (int)s->value;
        break;
    case GA_SIZED_JOURNAL_MAX_BYTES:
        size_journal(s, c, m);
        c->journal.max_bytes = s->value;
        break;
    case GA_SIZED_MAX_METRICS:
        size_max_metrics(s, c, m);     /* c keeps 0: SIGHUP may set it, or auto again */
        break;
    case GA_SIZED_ENGINE_WORKERS:
        size_by_cpus(s, m->ncpu, ENGINE_CPUS_PER_WORKER, 1, ENGINE_WORKERS_MAX);
        c->engine.workers = (int)s->value;
        break;
    default:
        break;
    }
}

int ga_config_size(struct ga_config *c, const struct ga_machine *m)
{
    if (c->sizing.done)
        return GA_EINVAL;
    c->sizing.machine = *m;
    if (c->sizing.machine.ncpu < 1)
        c->sizing.machine.ncpu = 1;
    for (int k = 0; k < GA_SIZED_N; k++)
        size_key(c, (enum ga_sized_key)k, &c->sizing.machine);
    c->sizing.done = 1;
    return 0;
}

void ga_config_size_reload(struct ga_config *c)
{
    if (c->sizing.done)
        size_key(c, GA_SIZED_MAX_METRICS, &c->sizing.machine);
}

const struct ga_config_sized *ga_config_sized_of(const struct ga_config *c, const char *key)
{
    for (int k = 0; c->sizing.done && k < GA_SIZED_N; k++)
        if (strcmp(sized_keys[k], key) == 0)
            return &c->sizing.key[k];
    return NULL;
}

uint64_t ga_config_max_metrics(const struct ga_config *c)
{
    if (c->limits.max_metrics > 0)
        return (uint64_t)c->limits.max_metrics;
    if (c->sizing.done)
        return (uint64_t)c->sizing.key[GA_SIZED_MAX_METRICS].value;
    /* Not sized (a tool, a test): the same rule for this machine. */
    struct ga_machine m = { .ncpu = 1 };
    long pages = sysconf(_SC_PHYS_PAGES), page = sysconf(_SC_PAGESIZE);
    m.phys_bytes = pages > 0 && page > 0 ? (uint64_t)pages * (uint64_t)page : 0;
    struct ga_config_sized s;
    size_max_metrics(&s, c, &m);
    return (uint64_t)s.value;
}
