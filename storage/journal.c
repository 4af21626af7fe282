/* journal.c — write-ahead journal: open and crash recovery, append, sync,
 * replay, release (see journal.h; the on-disk format and the recovery rules
 * are in docs/JOURNAL.md).  The group-commit thread is journal_commit.c.
 *
 * One mutex (j->mu) guards all state below; fdatasync of the active
 * segment and the unlinking of released segments run outside it.  File
 * offsets: segment s holds LSNs [s, next segment's start), so a record's
 * file offset is lsn - s. */
#include "storage/journal.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <sys/uio.h>
#include <unistd.h>

#include "proto/base/log.h"
#include "proto/ga_err.h"
#include "storage/crc32c.h"

#define JOURNAL_MAGIC 0x314C4E4Au           /* bytes "JNL1" read as little-endian u32 */
#define WBUF_BYTES ((size_t)1 << 20)    /* write buffer */
#define DIRECT_BYTES ((size_t)64 << 10) /* records this big skip the buffer */
#define RBUF_BYTES ((size_t)1 << 20)    /* read buffer (grows for big records) */

struct journal {
    pthread_mutex_t mu;
    char *dir;
    uint64_t segment_bytes, max_bytes;
    int repair;
    int dir_fd, lock_fd, fd;            /* fd: the active (last) segment */
    uint64_t *segs;                     /* segment start LSNs, ascending */
    size_t nsegs, segcap;
    uint64_t next_lsn;                  /* next append's LSN */
    uint64_t written_lsn;               /* bytes below are in the file */
    uint64_t durable_lsn, released_lsn;
    uint8_t *wbuf;                      /* LSNs [written_lsn, next_lsn) */
    int failed;                         /* sticky GA_EIO after an fsync (or other) error */
    int stalled;                        /* errno of a write that found no space; 0 = none */
    void (*hook)(void *ctx);
    void *hook_ctx;
    struct journal_stats st;                /* counters only; LSN fields filled on read */
    /* when each range of LSNs became durable, oldest first (a ring;
     * journal_durable_at_ns): syncs within DUR_MERGE_NS of the newest entry
     * extend it */
    struct journal_durable { uint64_t from, to; int64_t mono_ns; } dur[JOURNAL_DUR_RING];
    size_t dur_head, dur_n;
};

#define DUR_MERGE_NS 10000000LL

/* [from, to) became durable now.  mu held. */
static void note_durable(struct journal *j, uint64_t from, uint64_t to)
{
    if (to <= from)
        return;
    int64_t now = ga_now_mono_ns();
    if (j->dur_n) {
        struct journal_durable *last = &j->dur[(j->dur_head + j->dur_n - 1) % JOURNAL_DUR_RING];
        if (last->to == from && now - last->mono_ns < DUR_MERGE_NS) {
            last->to = to;
            return;
        }
    }
    if (j->dur_n == JOURNAL_DUR_RING) {
        j->dur_head = (j->dur_head + 1) % JOURNAL_DUR_RING;
        j->dur_n--;
    }
    j->dur[(j->dur_head + j->dur_n++) % JOURNAL_DUR_RING] = (struct journal_durable){ from, to, now };
}

int64_t journal_durable_at_ns(struct journal *j, uint64_t lsn)
{
    int64_t t = 0;
    pthread_mutex_lock(&j->mu);
    size_t lo = 0, hi = j->dur_n;      /* binary search: the ranges ascend */
    while (lo < hi) {
        size_t mid = (lo + hi) / 2;
        const struct journal_durable *e = &j->dur[(j->dur_head + mid) % JOURNAL_DUR_RING];
        if (lsn < e->from)
            hi = mid;
        else if (lsn >= e->to)
            lo = mid + 1;
        else {
            t = e->mono_ns;
            break;
        }
    }
    pthread_mutex_unlock(&j->mu);
    return t;
}

/* ---------- small helpers ---------- */

static void put32(uint8_t *p, uint32_t v) { for (int i = 0; i < 4; i++) p[i] = (uint8_t)(v >> 8 * i); }
static void put64(uint8_t *p, uint64_t v) { for (int i = 0; i < 8; i++) p[i] = (uint8_t)(v >> 8 * i); }
static uint32_t get32(const uint8_t *p) { uint32_t v = 0; for (int i = 3; i >= 0; i--) v = v << 8 | p[i]; return v; }
static uint64_t get64(const uint8_t *p) { uint64_t v = 0; for (int i = 7; i >= 0; i--) v = v << 8 | p[i]; return v; }

static void seg_name(char *buf, size_t n, const char *dir, uint64_t start)
{
    snprintf(buf, n, "%s/%020" PRIu64 ".wal", dir, start);
}

static void errf(char *err, size_t errlen, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
static void errf(char *err, size_t errlen, const char *fmt, ...)
{
    if (!err || !errlen)
        return;
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(err, errlen, fmt, ap);
    va_end(ap);
}

/* Enter the failed state (sticky; a failed fsync cannot be retried safely). */
static int fail(struct journal *j, const char *op, int e)
{
    if (!j->failed)
        ga_log(GA_LOG_ERROR, "journal_failed", "dir=%s op=%s errno=%d msg=\"%s\"", j->dir, op, e, strerror(e));
    j->failed = GA_EIO;
    return GA_EIO;
}

/* A write that failed for want of space (ENOSPC, EDQUOT, EFBIG) leaves
 * the journal stalled, not failed: nothing written is lost (written_lsn
 * did not move; bytes past it are cut), the buffered records stay in
 * memory, and the next write tries again.  mu held.  Returns GA_EAGAIN. */
static int stall(struct journal *j, const char *op, int e)
{
    if (!j->stalled)
        ga_log(GA_LOG_ERROR, "journal_stalled", "dir=%s op=%s errno=%d msg=\"%s; retrying\"",
               j->dir, op, e, strerror(e));
    j->stalled = e;
    j->st.write_failures++;
    return GA_EAGAIN;
}

static int no_space(int e)
{
    return e == ENOSPC || e == EDQUOT || e == EFBIG;
}

static void unstall(struct journal *j)
{
    if (!j->stalled)
        return;
    ga_log(GA_LOG_INFO, "journal_recovered", "dir=%s after_failures=%" PRIu64, j->dir,
           j->st.write_failures);
    j->stalled = 0;
}

/* Write all of iov[0..n) at off; the iov array is consumed. */
static int pwritev_all(int fd, struct iovec *iov, int n, uint64_t off)
{
    while (n > 0) {
        ssize_t k = pwritev(fd, iov, n, (off_t)off);
        if (k < 0 && errno == EINTR)
            continue;
        if (k < 0)
            return -errno;
        off += (uint64_t)k;
        while (n > 0 && (size_t)k >= iov->iov_len) {
            k -= (ssize_t)iov->iov_len;
            iov++;
            n--;
        }
        if (n > 0) {
            iov->iov_base = (char *)iov->iov_base + k;
            iov->iov_len -= (size_t)k;
        }
    }
    return 0;
}

static uint64_t active_start(const struct journal *j) { return j->segs[j->nsegs - 1]; }

/* Write iov (the buffer's bytes first, if any, then more) at written_lsn.  mu held. */
static int write_out(struct journal *j, struct iovec *iov, int n, uint64_t bytes)
{
    if (bytes == 0)
        return 0;
    int rc = pwritev_all(j->fd, iov, n, j->written_lsn - active_start(j));
    if (rc < 0 && no_space(-rc)) {
        /* cut what a partial write left past the last whole write */
        if (ftruncate(j->fd, (off_t)(j->written_lsn - active_start(j))) < 0)
            return fail(j, "truncate after a failed write", errno);
        return stall(j, "write", -rc);
    }
    if (rc < 0)
        return fail(j, "write", -rc);
    unstall(j);
    j->written_lsn += bytes;
    j->st.bytes_written += bytes;
    return 0;
}

static int flush_wbuf(struct journal *j)
{
    struct iovec iov = { j->wbuf, (size_t)(j->next_lsn - j->written_lsn) };
    return write_out(j, &iov, 1, iov.iov_len);
}

static int fsync_dir(struct journal *j)
{
    return fsync(j->dir_fd) < 0 ? -errno : 0;
}

static int segs_push(struct journal *j, uint64_t start)
{
    if (j->nsegs == j->segcap) {
        size_t cap = j->segcap ? 2 * j->segcap : 16;
        uint64_t *s = realloc(j->segs, cap * sizeof *s);
        if (!s)
            return GA_ENOMEM;
        j->segs = s;
        j->segcap = cap;
    }
    j->segs[j->nsegs++] = start;
    return 0;
}

/* Create segment <start>.wal, make it the active one, fsync the directory.  mu held. */
static int new_segment(struct journal *j, uint64_t start)
{
    char path[4200];
    seg_name(path, sizeof path, j->dir, start);
    int fd = open(path, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0640);
    if (fd < 0 && no_space(errno))
        return stall(j, "create segment", errno);
    if (fd < 0)
        return fail(j, "create segment", errno);
    if (segs_push(j, start) < 0) {
        close(fd);
        unlink(path);
        return GA_ENOMEM;
    }
    if (j->fd >= 0)
        close(j->fd);
    j->fd = fd;
    if (fsync_dir(j) < 0)
        return fail(j, "fsync dir", errno);
    unstall(j);
    return 0;
}

/* Close the active segment durably and start the next one.  mu held. */
static int roll(struct journal *j)
{
    int rc = flush_wbuf(j);
    if (rc < 0)
        return rc;
    if (fdatasync(j->fd) < 0)
        return fail(j, "fdatasync", errno);
    j->st.syncs++;
    if (j->durable_lsn < j->next_lsn) {
        note_durable(j, j->durable_lsn, j->next_lsn);
        j->durable_lsn = j->next_lsn;
    }
    return new_segment(j, j->next_lsn);
}

/* ---------- reading records ---------- */

struct rdr {
    int fd;
    uint8_t *buf;
    size_t cap, pos, len;
    uint64_t off;               /* file offset of buf[0] */
    uint64_t end;               /* read no further than this file offset */
};

enum { REC_OK = 0, REC_END, REC_SKIP, REC_SHORT, REC_BAD };

/* Make n bytes available at buf + pos; returns how many are (< n at end) or -errno. */
static ssize_t rdr_need(struct rdr *r, size_t n)
{
    if (r->len - r->pos >= n)
        return (ssize_t)n;
    if (r->pos) {
        memmove(r->buf, r->buf + r->pos, r->len - r->pos);
        r->off += r->pos;
        r->len -= r->pos;
        r->pos = 0;
    }
    if (n > r->cap) {
        uint8_t *b = realloc(r->buf, n);
        if (!b)
            return GA_ENOMEM;
        r->buf = b;
        r->cap = n;
    }
    while (r->len < n && r->off + r->len < r->end) {
        uint64_t at = r->off + r->len, want = r->cap - r->len;
        if (want > r->end - at)
            want = r->end - at;
        ssize_t k = pread(r->fd, r->buf + r->len, (size_t)want, (off_t)at);
        if (k < 0 && errno == EINTR)
            continue;
        if (k < 0)
            return -errno;
        if (k == 0)
            break;
        r->len += (size_t)k;
    }
    return (ssize_t)(r->len < n ? r->len : n);
}

static void rdr_skip(struct rdr *r, uint64_t n)
{
    if (r->len - r->pos >= n) {
        r->pos += (size_t)n;
    } else {
        r->off += r->pos + n;
        r->pos = r->len = 0;
    }
}

struct rec {
    uint64_t lsn, fo;           /* LSN and file offset */
    uint32_t len;
    const uint8_t *payload;     /* into the reader's buffer; NULL if skipped */
    const char *why;            /* REC_SHORT / REC_BAD: what was wrong */
    int hdr_ok;                 /* REC_BAD: the header was sound, the CRC was not */
};

/* Read the next record of segment `start`.  Records with lsn < skip_below
 * have only their header checked (REC_SKIP).  Returns REC_OK, REC_END (clean
 * end of file), REC_SKIP, REC_SHORT (the file ends inside it), REC_BAD, or
 * -errno. */
static int rec_next(struct rdr *r, uint64_t start, uint64_t skip_below, struct rec *rec)
{
    rec->fo = r->off + r->pos;
    rec->payload = NULL;
    rec->hdr_ok = 0;
    ssize_t k = rdr_need(r, JOURNAL_HDR_BYTES);
    if (k < 0)
        return (int)k;
    if (k == 0)
        return REC_END;
    if (k < JOURNAL_HDR_BYTES)
        return rec->why = "short header", REC_SHORT;
    const uint8_t *h = r->buf + r->pos;
    rec->len = get32(h + 4);
    rec->lsn = get64(h + 8);
    if (get32(h) != JOURNAL_MAGIC)
        return rec->why = "bad magic", REC_BAD;
    if (rec->lsn != start + rec->fo)
        return rec->why = "LSN does not match position", REC_BAD;
    if (get32(h + 20) != 0)
        return rec->why = "reserved field not zero", REC_BAD;
    if (rec->len > JOURNAL_MAX_PAYLOAD)
        return rec->why = "length over limit", REC_BAD;
    if (rec->fo + JOURNAL_HDR_BYTES + rec->len > r->end)
        return rec->why = "record runs past end of file", REC_SHORT;
    if (rec->lsn < skip_below) {
        rdr_skip(r, JOURNAL_HDR_BYTES + (uint64_t)rec->len);
        return REC_SKIP;
    }
    k = rdr_need(r, JOURNAL_HDR_BYTES + (size_t)rec->len);
    if (k < 0)
        return (int)k;
    if ((size_t)k < JOURNAL_HDR_BYTES + (size_t)rec->len)
        return rec->why = "file shorter than its size", REC_SHORT;
    h = r->buf + r->pos;
    if (crc32c(crc32c(0, h + JOURNAL_HDR_BYTES, rec->len), h, 16) != get32(h + 16)) {
        rec->hdr_ok = 1;
        return rec->why = "CRC mismatch", REC_BAD;
    }
    rec->payload = h + JOURNAL_HDR_BYTES;
    r->pos += JOURNAL_HDR_BYTES + (size_t)rec->len;
    return REC_OK;
}

/* Is there a sound record anywhere in [from, size) of segment `start`?
 * Decides whether damage in the last segment is a torn tail (nothing valid
 * after it) or corruption.  Returns 1 and its offset in *at, 0, or -errno. */
static int find_valid_after(int fd, uint64_t start, uint64_t from, uint64_t size, uint64_t *at)
{
    struct rdr r = { .fd = fd, .cap = RBUF_BYTES, .end = size };
    uint8_t chunk[4096];
    int rc = 0;
    if (!(r.buf = malloc(r.cap)))
        return GA_ENOMEM;
    for (uint64_t base = from; base + JOURNAL_HDR_BYTES <= size && rc == 0;) {
        ssize_t k = pread(fd, chunk, sizeof chunk, (off_t)base);
        if (k < 0) {
            rc = -errno;
            break;
        }
        if (k < 4)
            break;
        for (ssize_t i = 0; i + 4 <= k && rc == 0; i++) {
            if (get32(chunk + i) != JOURNAL_MAGIC ||
                (i + 16 <= k && get64(chunk + i + 8) != start + base + (uint64_t)i))
                continue;
            struct rec rec;
            r.off = base + (uint64_t)i;
            r.pos = r.len = 0;
            int x = rec_next(&r, start, 0, &rec);
            if (x < 0)
                rc = x;
            else if (x == REC_OK)
                *at = rec.fo, rc = 1;
        }
        base += (uint64_t)k - 3;
    }
    free(r.buf);
    return rc;
}

/* ---------- open and recovery ---------- */

static int mkdir_p(const char *dir)
{
    char path[4200];
    snprintf(path, sizeof path, "%s", dir);
    for (char *p = path + 1; ; p++) {
        if (*p == '/' || *p == '\0') {
            char c = *p;
            *p = '\0';
            if (mkdir(path, 0750) < 0 && errno != EEXIST)
                return -errno;
            *p = c;
            if (!c)
                return 0;
        }
    }
}

static int cmp_u64(const void *a, const void *b)
{
    uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
    return x < y ? -1 : x > y;
}

/* Collect "<20 digits>.wal" names, sorted.  Other files are ignored. */
static int list_segments(struct journal *j)
{
    DIR *d = fdopendir(dup(j->dir_fd));
    if (!d)
        return -errno;
    struct dirent *e;
    int rc = 0;
    while (rc == 0 && (e = readdir(d))) {
        const char *n = e->d_name;
        if (strlen(n) != 24 || strcmp(n + 20, ".wal") != 0 || strspn(n, "0123456789") != 20)
            continue;
        rc = segs_push(j, strtoull(n, NULL, 10));
    }
    closedir(d);
    if (j->nsegs)
        qsort(j->segs, j->nsegs, sizeof *j->segs, cmp_u64);
    return rc;
}

static uint64_t file_size(const char *path)
{
    struct stat sb;
    return stat(path, &sb) == 0 ? (uint64_t)sb.st_size : 0;
}

/* Damage at file offset fo of segment i: refuse, or with repair cut the log
 * there (truncate segment i, delete every later one).  fd is segment i. */
static int corrupt(struct journal *j, size_t i, int fd, uint64_t fo, uint64_t size, const char *why,
                   char *err, size_t errlen)
{
    char path[4200];
    uint64_t dropped = size - fo;
    for (size_t k = i + 1; k < j->nsegs; k++) {
        seg_name(path, sizeof path, j->dir, j->segs[k]);
        dropped += file_size(path);
    }
    seg_name(path, sizeof path, j->dir, j->segs[i]);
    if (!j->repair) {
        errf(err, errlen, "journal corrupt: %s offset %" PRIu64 " (LSN %" PRIu64 "): %s; refusing to "
             "replay past it (opening with repair cuts the log there, dropping %" PRIu64 " bytes)",
             path, fo, j->segs[i] + fo, why, dropped);
        return GA_ECORRUPT;
    }
    if (ftruncate(fd, (off_t)fo) < 0 || fdatasync(fd) < 0) {
        errf(err, errlen, "journal repair: truncate %s: %s", path, strerror(errno));
        return -errno;
    }
    for (size_t k = i + 1; k < j->nsegs; k++) {
        char p2[4200];
        seg_name(p2, sizeof p2, j->dir, j->segs[k]);
        if (unlink(p2) < 0 && errno != ENOENT) {
            errf(err, errlen, "journal repair: unlink %s: %s", p2, strerror(errno));
            return -errno;
        }
    }
    j->nsegs = i + 1;
    j->st.cut_bytes += dropped;
    ga_log(GA_LOG_WARN, "journal_repair", "file=%s offset=%" PRIu64 " lsn=%" PRIu64 " dropped_bytes=%"
           PRIu64 " reason=\"%s\"", path, fo, j->segs[i] + fo, dropped, why);
    return fsync_dir(j);
}

/* Validate every record; cut a torn tail; set next_lsn. */
static int recover(struct journal *j, char *err, size_t errlen)
{
    struct rdr r = { .cap = RBUF_BYTES };
    char path[4200];
    int rc = 0, fd = -1;
    if (!(r.buf = malloc(r.cap)))
        return GA_ENOMEM;
    j->next_lsn = j->nsegs ? j->segs[0] : 0;
    for (size_t i = 0; i < j->nsegs; i++) {
        int last = i + 1 == j->nsegs;
        seg_name(path, sizeof path, j->dir, j->segs[i]);
        if ((fd = open(path, O_RDWR | O_CLOEXEC)) < 0) {
            rc = -errno;
            errf(err, errlen, "journal: open %s: %s", path, strerror(errno));
            goto out;
        }
        uint64_t size = file_size(path);
        if (last && size == 0 && j->segs[i] > j->next_lsn) {
            /* an interrupted journal_release past next_lsn: the checkpoint covers
             * every earlier segment; finish deleting them */
            ga_log(GA_LOG_WARN, "journal_jump", "dir=%s from_lsn=%" PRIu64 " to_lsn=%" PRIu64
                   " msg=\"finishing an interrupted release\"", j->dir, j->next_lsn, j->segs[i]);
            for (size_t k = 0; k < i; k++) {
                char p2[4200];
                seg_name(p2, sizeof p2, j->dir, j->segs[k]);
                if (unlink(p2) < 0 && errno != ENOENT) {
                    rc = -errno;
                    errf(err, errlen, "journal: unlink %s: %s", p2, strerror(errno));
                    goto out;
                }
            }
            j->segs[0] = j->segs[i];
            j->nsegs = 1;
            j->next_lsn = j->segs[0];
            rc = fsync_dir(j);
            goto out;
        }
        if (j->segs[i] != j->next_lsn) {
            /* a missing segment (gap) or overlapping ones: cut at the previous end */
            close(fd);
            seg_name(path, sizeof path, j->dir, j->segs[i - 1]);
            if ((fd = open(path, O_RDWR | O_CLOEXEC)) < 0) {
                rc = -errno;
                goto out;
            }
            char why[128];
            snprintf(why, sizeof why, "next segment starts at LSN %" PRIu64 ", not at this end", j->segs[i]);
            rc = corrupt(j, i - 1, fd, j->next_lsn - j->segs[i - 1], j->next_lsn - j->segs[i - 1], why,
                         err, errlen);
            goto out;
        }
        r.fd = fd;
        r.off = r.pos = r.len = 0;
        r.end = size;
        struct rec rec;
        int x;
        while ((x = rec_next(&r, j->segs[i], 0, &rec)) == REC_OK)
            ;
        if (x < 0) {
            rc = x;
            errf(err, errlen, "journal: read %s: %s", path, strerror(-x));
            goto out;
        }
        if (x != REC_END) {
            uint64_t at = 0;
            int later = 0;
            if (last) {     /* a bad length can look like a short record: look past it too */
                uint64_t from = rec.fo + (rec.hdr_ok ? JOURNAL_HDR_BYTES + (uint64_t)rec.len : 1);
                if ((later = find_valid_after(fd, j->segs[i], from, size, &at)) < 0) {
                    rc = later;
                    goto out;
                }
            }
            if (!last || later) {
                char why[160];
                snprintf(why, sizeof why, "%s%s", rec.why, later ? "; sound records follow it" : "");
                if ((rc = corrupt(j, i, fd, rec.fo, size, why, err, errlen)) < 0)
                    goto out;
            } else {
                if (ftruncate(fd, (off_t)rec.fo) < 0 || fdatasync(fd) < 0) {
                    rc = -errno;
                    errf(err, errlen, "journal: truncate torn tail of %s: %s", path, strerror(errno));
                    goto out;
                }
                ga_log(GA_LOG_WARN, "journal_torn_tail", "file=%s offset=%" PRIu64 " lsn=%" PRIu64
                       " dropped_bytes=%" PRIu64 " reason=\"%s\"", path, rec.fo, j->segs[i] + rec.fo,
                       size - rec.fo, rec.why);
                j->st.torn_tails_cut++;
                j->st.cut_bytes += size - rec.fo;
            }
            size = rec.fo;
        }
        j->next_lsn = j->segs[i] + size;
        close(fd);
        fd = -1;
    }
out:
    if (fd >= 0)
        close(fd);
    free(r.buf);
    return rc;
}

static int take_lock(struct journal *j, char *err, size_t errlen)
{
    char path[4200], pid[32] = "";
    snprintf(path, sizeof path, "%s/LOCK", j->dir);
    if ((j->lock_fd = open(path, O_RDWR | O_CREAT | O_CLOEXEC, 0640)) < 0) {
        errf(err, errlen, "journal: open %s: %s", path, strerror(errno));
        return -errno;
    }
    if (flock(j->lock_fd, LOCK_EX | LOCK_NB) < 0) {
        int e = errno;
        ssize_t k = pread(j->lock_fd, pid, sizeof pid - 1, 0);
        pid[k > 0 ? k : 0] = '\0';
        pid[strcspn(pid, "\n")] = '\0';
        errf(err, errlen, "journal %s is in use by another process%s%s", j->dir, *pid ? ", pid " : "", pid);
        return e == EWOULDBLOCK ? GA_EBUSY : -e;
    }
    int n = snprintf(pid, sizeof pid, "%ld\n", (long)getpid());
    if (ftruncate(j->lock_fd, 0) < 0 || pwrite(j->lock_fd, pid, (size_t)n, 0) != n)
        ga_log(GA_LOG_WARN, "journal_lock_pid", "file=%s msg=\"%s\"", path, strerror(errno));
    return 0;
}

static void journal_free(struct journal *j)
{
    if (j->fd >= 0)
        close(j->fd);
    if (j->lock_fd >= 0)
        close(j->lock_fd);
    if (j->dir_fd >= 0)
        close(j->dir_fd);
    pthread_mutex_destroy(&j->mu);
    free(j->segs);
    free(j->wbuf);
    free(j->dir);
    free(j);
}

int journal_open(struct journal **out, const struct journal_opts *o, char *err, size_t errlen)
{
    *out = NULL;
    if (!o || !o->dir || !*o->dir || strlen(o->dir) > 4000 || o->segment_bytes < JOURNAL_MIN_SEGMENT_BYTES ||
        o->max_bytes / 2 < o->segment_bytes) {
        errf(err, errlen, "journal: bad options (dir set, segment_bytes >= %d, max_bytes >= 2 * segment_bytes)",
             JOURNAL_MIN_SEGMENT_BYTES);
        return GA_EINVAL;
    }
    struct journal *j = calloc(1, sizeof *j);
    if (!j)
        return GA_ENOMEM;
    pthread_mutex_init(&j->mu, NULL);
    j->dir_fd = j->lock_fd = j->fd = -1;
    j->segment_bytes = o->segment_bytes;
    j->max_bytes = o->max_bytes;
    j->repair = o->repair;
    int rc = GA_ENOMEM;
    char path[4200];
    if (!(j->dir = strdup(o->dir)) || !(j->wbuf = malloc(WBUF_BYTES)))
        goto fail;
    if ((rc = mkdir_p(j->dir)) < 0 ||
        (j->dir_fd = open(j->dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC)) < 0) {
        rc = rc < 0 ? rc : -errno;
        errf(err, errlen, "journal: directory %s: %s", j->dir, strerror(-rc));
        goto fail;
    }
    if ((rc = take_lock(j, err, errlen)) < 0 || (rc = list_segments(j)) < 0 ||
        (rc = recover(j, err, errlen)) < 0)
        goto fail;
    if (j->nsegs == 0 && (rc = new_segment(j, 0)) < 0) {
        errf(err, errlen, "journal: cannot create a segment in %s", j->dir);
        goto fail;
    }
    seg_name(path, sizeof path, j->dir, active_start(j));
    if (j->fd < 0 && (j->fd = open(path, O_WRONLY | O_CLOEXEC)) < 0) {
        rc = -errno;
        errf(err, errlen, "journal: open %s: %s", path, strerror(errno));
        goto fail;
    }
    /* what a killed predecessor left in the page cache becomes durable now */
    if (fdatasync(j->fd) < 0 || fsync_dir(j) < 0) {
        rc = -errno;
        errf(err, errlen, "journal: fsync %s: %s", path, strerror(errno));
        goto fail;
    }
    j->written_lsn = j->durable_lsn = j->next_lsn;
    j->released_lsn = j->segs[0];
    ga_log(GA_LOG_INFO, "journal_open", "dir=%s segments=%zu first_lsn=%" PRIu64 " next_lsn=%" PRIu64,
           j->dir, j->nsegs, j->segs[0], j->next_lsn);
    *out = j;
    return 0;
fail:
    journal_free(j);
    return rc;
}

void journal_close(struct journal *j)
{
    if (!j)
        return;
    if (!j->failed && flush_wbuf(j) == 0 && fdatasync(j->fd) < 0)
        fail(j, "fdatasync", errno);
    journal_free(j);
}

/* ---------- append, sync ---------- */

int journal_append(struct journal *j, const void *payload, size_t len, uint64_t *lsn, uint64_t *end)
{
    uint64_t rec = JOURNAL_HDR_BYTES + (uint64_t)len;
    if (len > JOURNAL_MAX_PAYLOAD || rec > j->max_bytes)
        return GA_ETOOBIG;
    uint32_t pcrc = crc32c(0, payload, len);
    uint8_t hdr[JOURNAL_HDR_BYTES];
    int rc = 0;
    pthread_mutex_lock(&j->mu);
    if ((rc = j->failed) < 0)
        goto out;
    /* stalled: take nothing new until what is buffered could be written */
    if (j->stalled && (rc = flush_wbuf(j)) < 0)
        goto out;
    if (j->next_lsn - j->segs[0] + rec > j->max_bytes) {
        j->st.backpressure++;
        rc = GA_ENOSPC;
        goto out;
    }
    uint64_t used = j->next_lsn - active_start(j);
    if (used > 0 && used + rec > j->segment_bytes && (rc = roll(j)) < 0)
        goto out;
    put32(hdr, JOURNAL_MAGIC);
    put32(hdr + 4, (uint32_t)len);
    put64(hdr + 8, j->next_lsn);
    put32(hdr + 16, crc32c(pcrc, hdr, 16));
    put32(hdr + 20, 0);
    size_t buffered = (size_t)(j->next_lsn - j->written_lsn);
    if (rec >= DIRECT_BYTES) {
        struct iovec iov[3] = { { j->wbuf, buffered }, { hdr, JOURNAL_HDR_BYTES }, { (void *)payload, len } };
        if ((rc = write_out(j, iov, 3, buffered + rec)) < 0)
            goto out;
    } else {
        if (buffered + rec > WBUF_BYTES) {
            if ((rc = flush_wbuf(j)) < 0)
                goto out;
            buffered = 0;
        }
        memcpy(j->wbuf + buffered, hdr, JOURNAL_HDR_BYTES);
        if (len)
            memcpy(j->wbuf + buffered + JOURNAL_HDR_BYTES, payload, len);
    }
    if (lsn)
        *lsn = j->next_lsn;
    j->next_lsn += rec;
    if (end)
        *end = j->next_lsn;
    j->st.appends++;
    if (j->hook)
        j->hook(j->hook_ctx);
out:
    pthread_mutex_unlock(&j->mu);
    return rc;
}

int journal_sync(struct journal *j, uint64_t *durable_lsn)
{
    int fd = -1, rc;
    pthread_mutex_lock(&j->mu);
    if ((rc = j->failed) == 0)
        rc = flush_wbuf(j);
    uint64_t target = j->next_lsn, d = j->durable_lsn;
    if (rc == 0 && target > d && (fd = dup(j->fd)) < 0)
        rc = fail(j, "dup", errno);
    pthread_mutex_unlock(&j->mu);
    if (fd >= 0) {
        int r = fdatasync(fd), e = errno;
        close(fd);
        pthread_mutex_lock(&j->mu);
        if (r < 0) {
            rc = fail(j, "fdatasync", e);
        } else {
            j->st.syncs++;
            if (j->durable_lsn < target) {
                note_durable(j, j->durable_lsn, target);
                j->durable_lsn = target;
            }
        }
        d = j->durable_lsn;
        pthread_mutex_unlock(&j->mu);
    }
    if (durable_lsn)
        *durable_lsn = d;
    return rc;
}

void journal_set_append_hook(struct journal *j, void (*fn)(void *ctx), void *ctx)
{
    pthread_mutex_lock(&j->mu);
    j->hook = fn;
    j->hook_ctx = ctx;
    pthread_mutex_unlock(&j->mu);
}

/* ---------- replay, release, stats ---------- */

int journal_replay(struct journal *j, uint64_t from,
               int (*cb)(void *ctx, uint64_t lsn, const void *payload, size_t len), void *ctx)
{
    struct rdr r = { .cap = RBUF_BYTES };
    uint64_t *starts = NULL, end;
    size_t n = 0;
    int rc = 0;
    pthread_mutex_lock(&j->mu);
    if (from < j->segs[0] || from > j->next_lsn) {
        ga_log(GA_LOG_ERROR, "journal_replay_range", "dir=%s from=%" PRIu64 " first_lsn=%" PRIu64
               " next_lsn=%" PRIu64, j->dir, from, j->segs[0], j->next_lsn);
        rc = GA_ERANGE;
    } else if (!j->failed) {
        rc = flush_wbuf(j);
    }
    end = j->written_lsn;
    size_t i = j->nsegs;
    while (i > 1 && j->segs[i - 1] > from)
        i--;
    i--;
    if (rc == 0 && !(starts = malloc((j->nsegs - i) * sizeof *starts)))
        rc = GA_ENOMEM;
    for (; rc == 0 && i < j->nsegs; i++)
        starts[n++] = j->segs[i];
    pthread_mutex_unlock(&j->mu);
    if (rc == 0 && !(r.buf = malloc(r.cap)))
        rc = GA_ENOMEM;
    for (size_t k = 0; rc == 0 && k < n && starts[k] < end; k++) {
        char path[4200];
        seg_name(path, sizeof path, j->dir, starts[k]);
        int fd = open(path, O_RDONLY | O_CLOEXEC);
        if (fd < 0) {
            int e = errno;
            pthread_mutex_lock(&j->mu);
            int gone = e == ENOENT && starts[k] < j->segs[0];   /* released meanwhile */
            pthread_mutex_unlock(&j->mu);
            rc = gone ? 0 : -e;
            continue;
        }
        r.fd = fd;
        r.off = r.pos = r.len = 0;
        r.end = (k + 1 < n ? starts[k + 1] : end) - starts[k];
        struct rec rec;
        int x;
        while ((x = rec_next(&r, starts[k], from, &rec)) == REC_OK || x == REC_SKIP)
            if (x == REC_OK && (rc = cb(ctx, rec.lsn, rec.payload, rec.len)) < 0)
                break;
        if (rc == 0 && x < 0)
            rc = x;
        if (rc == 0 && x != REC_END) {
            ga_log(GA_LOG_ERROR, "journal_replay_corrupt", "file=%s offset=%" PRIu64 " reason=\"%s\"",
                   path, rec.fo, rec.why);
            rc = GA_ECORRUPT;
        }
        close(fd);
    }
    free(r.buf);
    free(starts);
    return rc;
}

int journal_release(struct journal *j, uint64_t lsn)
{
    uint64_t *del = NULL;
    size_t n = 0;
    int rc = 0;
    pthread_mutex_lock(&j->mu);
    if (lsn > j->released_lsn)
        j->released_lsn = lsn;
    if (lsn > j->next_lsn || (lsn == j->next_lsn && j->next_lsn > active_start(j) && !j->failed)) {
        /* everything is covered: start an empty segment at max(lsn, next) */
        if (lsn > j->next_lsn && j->next_lsn == 0)   /* a fresh journal numbered by the daemon */
            ga_log(GA_LOG_INFO, "journal_numbered", "dir=%s first_lsn=%" PRIu64, j->dir, lsn);
        else if (lsn > j->next_lsn)
            ga_log(GA_LOG_WARN, "journal_behind_checkpoint", "dir=%s next_lsn=%" PRIu64 " checkpoint=%"
                   PRIu64 " msg=\"numbering continues at the checkpoint\"", j->dir, j->next_lsn, lsn);
        if ((rc = j->failed) == 0 && (rc = flush_wbuf(j)) == 0 && (rc = new_segment(j, lsn)) == 0) {
            j->next_lsn = j->written_lsn = lsn;
            if (j->durable_lsn < lsn)
                j->durable_lsn = lsn;
        }
    }
    while (n + 1 < j->nsegs && j->segs[n + 1] <= lsn)
        n++;
    if (n && !(del = malloc(n * sizeof *del)))
        n = 0;
    if (n) {
        memcpy(del, j->segs, n * sizeof *del);
        memmove(j->segs, j->segs + n, (j->nsegs - n) * sizeof *del);
        j->nsegs -= n;
    }
    pthread_mutex_unlock(&j->mu);
    for (size_t k = 0; k < n; k++) {
        char path[4200];
        seg_name(path, sizeof path, j->dir, del[k]);
        if (unlink(path) < 0 && errno != ENOENT) {
            rc = -errno;
            ga_log(GA_LOG_ERROR, "journal_release", "file=%s msg=\"%s\"", path, strerror(errno));
        }
    }
    if (n && fsync_dir(j) < 0 && rc == 0)
        rc = -errno;
    free(del);
    return rc;
}

void journal_get_stats(struct journal *j, struct journal_stats *st)
{
    if (!j) {                        /* cluster mode: no local journal */
        memset(st, 0, sizeof *st);
        return;
    }
    pthread_mutex_lock(&j->mu);
    *st = j->st;
    st->first_lsn = j->segs[0];
    st->next_lsn = j->next_lsn;
    st->durable_lsn = j->durable_lsn;
    st->released_lsn = j->released_lsn;
    st->retained_bytes = j->next_lsn - j->segs[0];
    st->segments = j->nsegs;
    st->stalled_errno = j->stalled;
    st->failed = j->failed != 0;
    pthread_mutex_unlock(&j->mu);
}
