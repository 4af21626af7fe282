/* api.h — shared helpers of the Gnocchi-compatible read API (api_*.c,
 * docs/API.md): Gnocchi's time and timespan forms, ids, metric and
 * resource lookups on the API's query pool.  Every function is safe to
 * call from several connection threads at once. */
#ifndef GA_HTTP_API_H
#define GA_HTTP_API_H

#include <stddef.h>
#include <stdint.h>

#include <jansson.h>

#include "daemon/http/http_server.h"


/* A time as Gnocchi's API takes it: seconds since the epoch (float), ISO
 * 8601 (a date alone, or date and time with optional fraction and zone;
 * no zone = UTC), "now", or a signed relative span from now ("-1 day",
 * "-5min", "+2 hours").  now_ns: the request's now.  Returns 0 or
 * GA_EINVAL with why set. */
int api_parse_time(const char *s, int64_t now_ns, int64_t *ns, char *why, size_t whylen);
/* A positive timespan: seconds (float) or "1 day", "5min", "1h30m".
 * 0 or GA_EINVAL. */
int api_parse_span(const char *s, int64_t *ns);
/* "2026-11-21T12:00:00+00:00" (microseconds added when not whole). */
void api_iso(int64_t ns, char out[40]);
/* Python's str(timedelta): "0:01:00", "1 day, 0:00:00", "30 days, 0:00:00". */
void api_timedelta(int64_t ns, char out[48]);

/* Answer a pg_query error: 503 when PostgreSQL is unreachable, 500 otherwise. */
void api_db_error(struct http_resp *resp, int rc, const char *err);

/* The archive policy of a metric as Gnocchi shows it, from the
 * archive_policies row's JSON (name, back_window, definition, methods). */
json_t *api_policy_json(const json_t *row);

/* Run sql (text params; a statement of storage/pg_api.h) and parse column
 * 0 of every row as JSON into an array (new reference).  NULL with resp
 * set on failure. */
json_t *api_query_json(struct http_req *req, struct http_resp *resp, const char *sql, int nparams,
                       const char *const *vals);

/* The resource visibility rule for this identity (pg_api_scope), its
 * parameters appended to vals from index *n (at most 2 added); buf
 * (256 bytes hold it) is returned. */
const char *api_scope(const struct http_ident *id, char *buf, size_t buflen, const char **vals,
                      int *n);

/* Turn a metric row (storage/pg_api.h "metrics") into Gnocchi's metric
 * object (archive_policy expanded); new reference. */
json_t *api_metric_out(const json_t *row);

/* Granularities of a policy row's definition, descending; returns count. */
int api_policy_grans(const json_t *row, int64_t *out, int max);
/* 1 if method is in the policy row's methods. */
int api_policy_has_method(const json_t *row, const char *method);

/* Answer an error whose description is an object, as Gnocchi does for
 * argument and body errors: {"code", "title", "description": desc}
 * (desc stolen). */
void api_error_desc(struct http_resp *resp, int status, json_t *desc);
/* v as Python's str(float) mostly writes it: "120.0", "0.5", "1e+20". */
void api_pyfloat(double v, char out[32]);

/* Common query parameters start/stop/granularity.  start/stop default to
 * INT64_MIN/INT64_MAX; *gran 0 when absent.  0, or 400 with resp set. */
int api_range_args(struct http_req *req, struct http_resp *resp, int64_t *start, int64_t *stop,
                   int64_t *gran);

#endif
