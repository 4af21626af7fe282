/* pg_util.h — small libpq helpers shared by the storage modules.
 *
 * A growable byte buffer with big-endian appenders for PostgreSQL's binary
 * formats (COPY BINARY and binary array parameters), one-line error text
 * from libpq, and a checked "exec and clear" for commands.  No state; every
 * function is thread-safe on distinct arguments. */
#ifndef GA_PG_UTIL_H
#define GA_PG_UTIL_H

#include <libpq-fe.h>
#include <stddef.h>
#include <stdint.h>

/* PostgreSQL type OIDs used in binary parameters and arrays (pg_type.h). */
#define PG_UTIL_BYTEAOID 17
#define PG_UTIL_INT8OID 20
#define PG_UTIL_INT2OID 21
#define PG_UTIL_INT4OID 23
#define PG_UTIL_TEXTOID 25
#define PG_UTIL_FLOAT8OID 701
#define PG_UTIL_UUIDOID 2950

struct pg_util_buf {
    uint8_t *p;
    size_t len, cap;
    int oom;                    /* an append failed; the buffer is unusable */
};

/* Appenders: never fail loudly; on allocation failure they set b->oom and
 * the caller checks it once at the end.  The buffer owns its memory; free
 * it with pg_util_buf_free (b is left empty and reusable). */
void pg_util_buf_reserve(struct pg_util_buf *b, size_t more);
void pg_util_put(struct pg_util_buf *b, const void *data, size_t n);
void pg_util_put_i16(struct pg_util_buf *b, int16_t v);
void pg_util_put_i32(struct pg_util_buf *b, int32_t v);
void pg_util_put_i64(struct pg_util_buf *b, int64_t v);
void pg_util_put_f64(struct pg_util_buf *b, double v);
void pg_util_buf_free(struct pg_util_buf *b);

/* One-dimensional binary array (for `unnest($1::int4[])` with binary
 * parameters).  Call pg_util_array_begin with the element type OID and count,
 * then append each element as a length (pg_util_put_i32) and its bytes; the
 * convenience appenders below do both. */
void pg_util_array_begin(struct pg_util_buf *b, uint32_t elem_oid, size_t n);
void pg_util_array_i32(struct pg_util_buf *b, int32_t v);
void pg_util_array_i64(struct pg_util_buf *b, int64_t v);
void pg_util_array_f64(struct pg_util_buf *b, double v);
void pg_util_array_bytes(struct pg_util_buf *b, const void *p, size_t n);

/* Copy msg into dst[n] as one line: no trailing newline, inner newlines and
 * double quotes replaced by spaces (safe inside a log's msg="..."). */
void pg_util_errcopy(char *dst, size_t n, const char *msg);

/* Copy a failed result's message (or the connection's when r is NULL) with
 * its SQLSTATE prefix: "SQLSTATE 23514: no partition of relation ...". */
void pg_util_result_error(char *dst, size_t n, PGconn *c, const PGresult *r);

/* 1 when err (as pg_util_result_error writes it, possibly after a prefix)
 * names a SQLSTATE of an error caused by the data written rather than by
 * the connection, the server or the schema: class 22 (data exception), 23
 * (integrity constraint violation), 54 (program limit exceeded: a value
 * too large) and P0 (raised by a PL/pgSQL function or trigger). */
int pg_util_data_error(const char *err);

/* Run a parameterless command (no rows expected).  Returns 0, or GA_EDB
 * with the error in err[errlen].  The result is always cleared. */
int pg_util_exec(PGconn *c, const char *sql, char *err, size_t errlen);

/* Connect with application_name, a 5 s connect timeout and
 * client_min_messages=warning (no NOTICE lines on stderr) as defaults (the
 * conninfo's own settings win).  Returns the connection (check
 * PQstatus; always PQfinish it) or NULL when out of memory. */
PGconn *pg_util_connect(const char *conninfo, const char *application_name);

/* The database's instance lock: a session-level advisory lock that the
 * writer holds for as long as it is connected, and that loading takes
 * before reading the checkpoint.  A second gpuaggd on the same database
 * waits (and reports it), and so does a restart while the previous
 * instance's backend is still finishing a COMMIT after the client died —
 * so the checkpoint read is never older than a commit that lands later.
 * Waits up to timeout_ms; 0, or GA_EBUSY with "held by pid N" in err. */
int pg_util_instance_lock(PGconn *c, int timeout_ms, char *err, size_t errlen);
/* Release it (loading is done; the writer takes it next). */
void pg_util_instance_unlock(PGconn *c);

/* Big-endian readers for binary results. */
int64_t pg_util_get_i64(const char *p);
int32_t pg_util_get_i32(const char *p);
double pg_util_get_f64(const char *p);

#endif
