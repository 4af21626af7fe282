/* ingest_priv.h — shared by proto/ingest_*.c only: error text, the reasons
 * store, the pull reader over a validated frame, and the points decoder. */
#ifndef GA_INGEST_PRIV_H
#define GA_INGEST_PRIV_H

#include <stddef.h>
#include <stdint.h>

#include "proto/ingest_proto.h"

/* printf into err (if errlen), return code. */
int ing_fail(int code, char *err, size_t errlen, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));

/* Copy s[0..n) plus a NUL into *t (chunks freed by ing_text_free); NULL on
 * allocation failure.  The copy stays put until freed. */
const char *ing_text_dup(struct ing_text **t, const char *s, size_t n);
void ing_text_free(struct ing_text **t);

/* Append {index, reason} to (*v, *n, *cap), growing it; reason must outlive
 * the list (static text or ing_text_dup'd).  0 or GA_ENOMEM. */
int ing_reject_push(struct ing_reject **v, size_t *n, size_t *cap, uint64_t index,
                    const char *reason);

/* ---- pull reader ----
 * Reads one msgpack item at a time from [p, end): scalars, str/bin/ext with
 * their bodies, array/map headers only (their children are the next items).
 * Every read is bounds-checked; nothing is allocated. */
enum ing_kind { RK_NIL, RK_BOOL, RK_UINT, RK_INT, RK_FLOAT, RK_STR, RK_BIN, RK_EXT, RK_ARRAY,
                RK_MAP };
struct ing_rd {
    const uint8_t *p, *end;
};
struct ing_tok {
    enum ing_kind kind;
    uint32_t n;             /* str/bin/ext bytes, array/map entries */
    const uint8_t *ptr;     /* str/bin/ext body */
    uint64_t u;             /* RK_UINT, RK_BOOL */
    int64_t i;              /* RK_INT (always negative) */
    double f;               /* RK_FLOAT */
};
/* 0, or -1 when the bytes end early or hold 0xc1. */
int ing_rd_next(struct ing_rd *r, struct ing_tok *t);
/* Skip one whole item (children included).  0 or -1. */
int ing_rd_skip(struct ing_rd *r);
/* Walk the n entries of a map whose header was just read: for each str key
 * equal to keys[j] set vals[j] to the position of its value (first one
 * wins; a nil value counts as absent and leaves vals[j] alone).  Leaves r
 * after the map.  0, or -1 when the bytes end early. */
int ing_rd_fields(struct ing_rd *r, uint32_t n, const char *const *keys, const uint8_t **vals,
                  size_t nkeys);
/* 1 when t is a str equal to the C string s. */
int ing_tok_is(const struct ing_tok *t, const char *s);

/* ---- building a batch (ingest_points.c), shared with ingest_columnar.c ---- */

#include "proto/ga_time.h"

#define ING_R_BEFORE "timestamp before 1970"
#define ING_R_AFTER "timestamp after " GA_TS_MAX_TEXT
#define ING_R_NAN "value is NaN"
#define ING_R_INF "value is infinite"

/* Why the metric name s[0..n) is refused: *why is static text or text
 * kept in b's reasons store, NULL when the name is good (proto/INGEST.md
 * §5, name_check.h).  0 or GA_ENOMEM. */
int ing_name_problem(struct ing_batch *b, const uint8_t *s, uint32_t n, const char **why);
/* Reject point `index` of b, whose ts ing_ts_too_far_ahead(lim, ts)
 * refused, with its reason.  0 or GA_ENOMEM. */
int ing_reject_future(struct ing_batch *b, uint64_t index, int64_t ts,
                      const struct ing_limits *lim);
/* Allocate b's name table for up to max names of `bytes` characters in
 * all; *chars is where ing_names_push() writes the first.  0 or GA_ENOMEM. */
int ing_names_alloc(struct ing_batch *b, size_t max, size_t bytes, char **chars);
/* Append the name s[0..n) (NUL added) to b's table. */
void ing_names_push(struct ing_batch *b, char **chars, const uint8_t *s, uint32_t n);
/* Allocate ts, value and name_idx for n points (nothing for 0).  0 or GA_ENOMEM. */
int ing_points_alloc(struct ing_batch *b, size_t n);
/* Reject point `index` of b with a static reason, or a formatted one
 * (copied into b's reasons store).  0 or GA_ENOMEM. */
int ing_reject(struct ing_batch *b, uint64_t index, const char *why);
int ing_reject_fmt(struct ing_batch *b, uint64_t index, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

/* Positions of the top-level values of a points frame (NULL = absent). */
struct ing_fields {
    const uint8_t *seq, *metrics, *names, *index, *counts, *ts, *values;
};
/* Decode the points of a message whose top-level values are at f (frame
 * ends at end) into b (zeroed by the caller but for b->seq; f->seq is not
 * looked at).  Returns 0 or a negative GA_E* with err set; on failure b is
 * freed and zeroed. */
/* The columnar form (ingest_columnar.c); same contract, but b is not freed. */
int ing_decode_columnar(const struct ing_fields *f, const uint8_t *end,
                        const struct ing_limits *lim, struct ing_batch *b, char *err,
                        size_t errlen);
int ing_decode_points(const struct ing_fields *f, const uint8_t *end, const struct ing_limits *lim,
                      struct ing_batch *b, char *err, size_t errlen);

#endif
