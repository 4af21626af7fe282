/* csv_points.h — the point CSV of `gpuaggctl resample` and the resample job.
 *
 * Input: a header line `metric,timestamp,value`, then one point a line.
 *   metric     any text; a field starting with '"' is RFC 4180-quoted ("" for
 *              a quote), otherwise the metric is everything before the last
 *              two commas (so an unquoted name may hold commas)
 *   timestamp  epoch seconds with up to 9 decimals ("1700000000.25", "-3"),
 *              or RFC 3339 ("2023-11-14T22:13:20.25Z", offsets allowed)
 *   value      a C float literal (strtod), "nan" and "inf" included
 * Blank lines and lines starting with '#' are skipped, except "#batch",
 * which ends a batch (the points before it are fed to the engine together).
 * The header may repeat (concatenated files).  CRLF line ends are fine. */
#ifndef GA_CSV_POINTS_H
#define GA_CSV_POINTS_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "proto/base/hmap.h"

struct csv_input {
    size_t n, cap;
    uint32_t *metric;             /* index into names */
    int64_t *ts;                  /* ns since the epoch (may be < 0) */
    double *value;
    size_t *line;                 /* 1-based input line of each point */
    size_t *batch_end;            /* batch b is [batch_end[b-1], batch_end[b]) */
    size_t nbatches, cap_batches;
    char **names;                 /* metric id -> name, NUL-terminated */
    size_t nnames, cap_names;
    struct ga_hmap ids;           /* name's hash → id (proto/base/hmap.h) */
};

/* Read all points of f into in (zero it first).  Returns 0; GA_EINVAL with
 * "line N: what is wrong" in err for a malformed line (it names the field,
 * never quotes the input: the daemon's jobs read files a client may not
 * read itself); GA_ENOMEM; GA_EIO on
 * a read error.  Free in with csv_input_free() in every case. */
int csv_read_points(FILE *f, struct csv_input *in, char *err, size_t errlen);
void csv_input_free(struct csv_input *in);

/* Parse epoch seconds "[-]digits[.1-9 digits]" exactly.  0 or GA_EINVAL /
 * GA_ERANGE. */
int csv_parse_epoch(const char *s, size_t len, int64_t *ns);

/* "[-]S.NNNNNNNNN" (9 decimals) into buf (>= 32 bytes); returns buf. */
const char *csv_format_ns(int64_t ns, char *buf);
/* Like csv_format_ns without trailing zeros ("60", "0.5"); returns buf. */
const char *csv_format_seconds(int64_t ns, char *buf);

/* Write s as one CSV field, quoted when it holds ',', '"', CR or LF. */
void csv_write_field(FILE *f, const char *s);
/* Write s as a JSON string with its quotes. */
void csv_write_json_string(FILE *f, const char *s);

#endif
