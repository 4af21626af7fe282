/* fuzz_journal.c — libFuzzer target for journal recovery (journal_open,
 * journal_replay: storage/journal.c, docs/JOURNAL.md "Opening and crash
 * recovery").
 *
 * fuzz-sources: storage/journal.c storage/crc32c.c proto/base/log.c
 *
 * Input: [flags u8][split u16 LE][segment bytes...].  The bytes become the
 * journal directory's segment "00000000000000000000.wal", or, when flags
 * bit 1 is set, two segments cut at `split` (the second named for the LSN
 * it starts at, as the journal names them).  Seeds are real segments
 * written by journal_append, so mutations land on torn tails, bad CRCs, wrong
 * LSNs, lengths past the end and gaps.  A broken promise aborts:
 *   - journal_open without repair returns anything but 0 or GA_ECORRUPT (and
 *     -errno only for a file system error, which a tmp dir does not give);
 *   - with repair (flags bit 0) it fails at all;
 *   - an opened journal replays records out of LSN order, outside
 *     [first_lsn, next_lsn), longer than the bytes given, or fails with
 *     anything but GA_ECORRUPT;
 *   - after an open (repaired or cut at a torn tail), appending a record and
 *     reopening without repair fails, or does not replay that record. */
#include <dirent.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "proto/base/log.h"
#include "proto/ga_err.h"
#include "storage/journal.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static char dir[64];

static void clean(void)
{
    DIR *d = opendir(dir);
    struct dirent *e;
    char path[160];
    while (d && (e = readdir(d)) != NULL) {
        if (e->d_name[0] == '.')
            continue;
        snprintf(path, sizeof path, "%s/%s", dir, e->d_name);
        unlink(path);
    }
    if (d)
        closedir(d);
}

static void put_file(uint64_t start, const uint8_t *p, size_t n)
{
    char path[160];
    snprintf(path, sizeof path, "%s/%020llu.wal", dir, (unsigned long long)start);
    FILE *f = fopen(path, "wb");
    if (!f || (n && fwrite(p, 1, n, f) != n) || fclose(f) != 0)
        abort();
}

struct seen {
    uint64_t first, next, last;
    size_t total, n;
    int found_tag;
};

static int on_rec(void *ctx, uint64_t lsn, const void *payload, size_t len)
{
    struct seen *s = ctx;
    if (lsn < s->first || lsn >= s->next || (s->n && lsn <= s->last))
        abort();
    if (len > s->total)
        abort();
    if (len == 5 && memcmp(payload, "fuzz!", 5) == 0)
        s->found_tag = 1;
    s->last = lsn;
    s->n++;
    return 0;
}

static int replay_all(struct journal *j, size_t total, int *found_tag)
{
    struct journal_stats st;
    journal_get_stats(j, &st);
    struct seen s = { st.first_lsn, st.next_lsn, 0, total + 5, 0, 0 };
    int rc = journal_replay(j, st.first_lsn, on_rec, &s);
    if (rc != 0 && rc != GA_ECORRUPT)
        abort();
    if (found_tag)
        *found_tag = s.found_tag;
    return rc;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (!dir[0]) {
        /* tmpfs when there is one: the journal fsyncs at every open */
        snprintf(dir, sizeof dir, "%s/gafuzz-jnl-XXXXXX",
                 access("/dev/shm", W_OK) == 0 ? "/dev/shm" : "/tmp");
        if (!mkdtemp(dir))
            abort();
        ga_log_set_level(GA_LOG_ERROR + 1);
    }
    if (size < 3)
        return 0;
    int repair = data[0] & 1, two = data[0] >> 1 & 1;
    size_t split = (size_t)(data[1] | data[2] << 8);
    data += 3;
    size -= 3;
    clean();
    if (two && split > 0 && split < size) {
        put_file(0, data, split);
        put_file(split, data + split, size - split);
    } else {
        put_file(0, data, size);
    }
    struct journal_opts o = { .dir = dir, .segment_bytes = 4096, .max_bytes = 1u << 30,
                          .repair = repair };
    struct journal *j = NULL;
    char err[512];
    memset(err, 'x', sizeof err);
    int rc = journal_open(&j, &o, err, sizeof err);
    if (rc != 0) {
        if (repair || rc != GA_ECORRUPT || !memchr(err, '\0', sizeof err))
            abort();
        return 0;
    }
    replay_all(j, size, NULL);
    /* what open left is a journal that takes a record and reopens clean */
    uint64_t lsn, end;
    if (journal_append(j, "fuzz!", 5, &lsn, &end) != 0 || journal_sync(j, NULL) != 0)
        abort();
    journal_close(j);
    o.repair = 0;
    if (journal_open(&j, &o, err, sizeof err) != 0)
        abort();
    int found = 0;
    if (replay_all(j, size, &found) != 0 || !found)
        abort();
    journal_close(j);
    return 0;
}
