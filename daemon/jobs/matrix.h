/* matrix.h — the numeric matrix input of the job kinds (kmeans, dot),
 * docs/JOBS.md "Matrix input".  Two forms, told apart by the first bytes:
 *
 *   binary   24-byte header, then the elements, little-endian, row-major:
 *              0  4  magic "GAMX"
 *              4  4  uint32 LE element size: 8 (float64) or 4 (float32)
 *              8  8  uint64 LE rows
 *             16  8  uint64 LE cols
 *            the file is exactly 24 + rows * cols * size bytes.
 *   CSV      one row a line, numbers separated by ',' (strtod syntax);
 *            blank lines and lines starting with '#' skipped; a first line
 *            whose first field is not a number is a header and skipped;
 *            every row has the same number of fields.  Read as float64. */
#ifndef GA_JOB_MATRIX_H
#define GA_JOB_MATRIX_H

#include <stddef.h>
#include <stdint.h>

#define MATRIX_MAGIC "GAMX"
#define MATRIX_HEADER 24

struct matrix {
    int64_t rows, cols;
    int elem;                   /* 8: double, 4: float */
    void *data;                 /* rows * cols elements, row-major, aligned */
    int owned;                  /* 1: data is malloc'ed here (matrix_free frees it) */
    int csv;                    /* 1: it came from CSV (one object a line) */
};

/* Parse buf (len bytes; borrowed: binary data of an 8-aligned buf is used
 * in place, so buf must outlive m).  Returns 0, or GA_EINVAL with
 * "input: line 3: 2 fields, expected 3" / "input: binary matrix of 2 x 3
 * float64 needs 72 bytes after the header, got 40" in err, or GA_ENOMEM. */
int matrix_parse(const uint8_t *buf, size_t len, struct matrix *m, char *err, size_t errlen);
void matrix_free(struct matrix *m);

struct ga_job_ctx;
struct ga_job_params;
/* The job's input (inline or input_path, at most max bytes) parsed into m,
 * which then owns its data.  0 or GA_E* with ctx->err set. */
int matrix_load(struct ga_job_ctx *ctx, const struct ga_job_params *p, size_t max,
                struct matrix *m);

/* Element (r, c) as a double, whatever the element size. */
double matrix_at(const struct matrix *m, int64_t r, int64_t c);

#endif
