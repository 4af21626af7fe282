/* fuzz_api.c — libFuzzer target for the HTTP API's parsers (daemon/http/):
 * the search filter compiler (api_resource.c compile()) over a JSON filter
 * or one parsed from the string syntax (api_filter_string.c), the operations of
 * /v1/aggregates in both forms (agg_schema.c agg_sexp_parse() and
 * agg_ops_check(), agg_eval.c agg_refs_collect() and agg_eval() over a small
 * grid), the time, timespan and id forms
 * (api_util.c), and the request-target rules every request meets before
 * routing, with the escaping of what the log quotes (http_target.c).  The
 * files are compiled into the target; the listener and PostgreSQL
 * calls they reach are stubbed below (the fuzzer never gets that far).
 * The first byte picks the parser.  Besides the sanitizers' findings, a
 * broken promise aborts: compiled SQL with unbalanced parentheses or more
 * parameters than the bound, an error without text, an aggregated eval result
 * of more than one series; a target let through that is over the bounds or
 * whose decoded path or query name_check refuses, a refusal other than
 * 400/414 or without a reason; a log escape that leaves a byte outside
 * printable ASCII, a quote or a backslash, or does not decode back to a
 * prefix of its input.
 * fuzz-libs: -ljansson -lpq */
#include "daemon/http/api_util.c"
#include "storage/pg_api.c"
#include "daemon/http/api_resource.c"
#include "daemon/http/api_resource_types.c"
#include "daemon/http/api_filter_string.c"
#include "daemon/http/agg_series.c"
#include "daemon/http/agg_schema.c"
#include "daemon/http/agg_eval.c"
#include "daemon/http/http_target.c"
#include "proto/uuid.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

/* ---- stubs of what the parsers do not reach -------------------------------- */

const char *http_arg(const struct http_req *r, const char *name) { (void)r, (void)name; return NULL; }
int http_args(const struct http_req *r, const char *name, const char **vals, int max)
{
    (void)r, (void)name, (void)vals, (void)max;
    return 0;
}
const char *http_header(const struct http_req *r, const char *name) { (void)r, (void)name; return NULL; }
void http_json(struct http_resp *resp, int status, json_t *j) { resp->status = status; json_decref(j); }
void http_error(struct http_resp *resp, int status, const char *fmt, ...) { (void)fmt; resp->status = status; }
struct pg_query *http_server_pgq(const struct http_server *s) { (void)s; return NULL; }
const struct ga_config *http_server_config(const struct http_server *s) { (void)s; return NULL; }
PGresult *pg_query_exec(struct pg_query *q, const char *sql, int nparams, const char *const *vals, int *rc,
                   char *err, size_t errlen)
{
    (void)q, (void)sql, (void)nparams, (void)vals;
    *rc = GA_EIO;
    snprintf(err, errlen, "no database in the fuzzer");
    return NULL;
}

/* ---- the target ------------------------------------------------------------------ */

static void fuzz_filter(const uint8_t *d, size_t n)
{
    json_error_t je;
    json_t *j = json_loadb((const char *)d, n, 0, &je);
    if (!j) {
        /* not JSON: the string syntax, which must give a filter or say why */
        char *text = malloc(n + 1), why[256];
        if (!text)
            abort();
        memcpy(text, d, n);
        text[n] = '\0';
        j = api_filter_parse_string(text, why, sizeof why);
        free(text);
        if (!j && !why[0])
            abort();
        if (!j)
            return;
    }
    struct http_req req = { 0 };
    snprintf(req.ident.creator, sizeof req.ident.creator, "u:p");
    struct fctx f = { .req = &req, .cap = SQL_MAX, .type = api_resource_type("instance") };
    if (!(f.sql = malloc(f.cap)))
        abort();
    f.sql[0] = '\0';
    int rc = compile(&f, j, 0);
    if (rc < 0 && !f.err[0])
        abort();
    if (rc == 0) {
        int depth = 0;
        for (size_t i = 0; i < f.len; i++) {
            depth += f.sql[i] == '(' ? 1 : f.sql[i] == ')' ? -1 : 0;
            if (depth < 0)
                abort();
        }
        if (depth != 0 || f.n > FILTER_MAX_PARAMS || f.len >= f.cap)
            abort();
    }
    fctx_free(&f);
    json_decref(j);
}

static void fuzz_ops(const uint8_t *d, size_t n, int string_form)
{
    json_t *ops;
    char why[256] = "";
    if (string_form) {
        char *s = strndup((const char *)d, n);
        if (!s)
            abort();
        ops = agg_sexp_parse(s, why, sizeof why);
        if (!ops && !why[0])
            abort();
        free(s);
    } else {
        json_error_t je;
        ops = json_loadb((const char *)d, n, 0, &je);
    }
    if (!ops)
        return;
    if (agg_ops_check(ops, why, sizeof why) < 0) {
        if (!why[0])
            abort();
        json_decref(ops);
        return;
    }
    struct agg_refs refs = { 0 };
    if (agg_refs_collect(ops, &refs, why, sizeof why) == 0 && refs.n) {
        int col_ref[AGG_MAX_REFS];
        struct agg_grid in = { 0 }, out = { 0 };
        if (agg_grid_alloc(&in, 5, refs.n) < 0)
            abort();
        in.g = 60000000000LL;
        for (int c = 0; c < refs.n; c++) {
            col_ref[c] = c;
            in.cols[c] = c;
        }
        for (size_t i = 0; i < 5; i++) {
            in.t[i] = (int64_t)i * 60000000000LL;
            for (int c = 0; c < refs.n; c++)
                in.v[i * (size_t)refs.n + (size_t)c] = (i + (size_t)c) % 3 ? (double)i - c : NAN;
        }
        struct agg_eval e = { .in = &in, .col_ref = col_ref, .refs = &refs };
        int rc = agg_eval(&e, ops, &out);
        if (rc < 0 && !e.why[0])
            abort();
        if (rc == 0 && (out.nc < 0 || (out.aggregated && out.nc != 1)))
            abort();
        agg_grid_free(&in);
        agg_grid_free(&out);
    }
    json_decref(ops);
}

static void fuzz_forms(const uint8_t *d, size_t n)
{
    char s[512], why[256], id[GA_UUID_STR];
    int64_t ns;
    if (n >= sizeof s)
        n = sizeof s - 1;
    memcpy(s, d, n);
    s[n] = '\0';
    if (api_parse_time(s, 1795000000000000000LL, &ns, why, sizeof why) < 0 && !why[0])
        abort();
    api_parse_span(s, &ns);
    if (ga_uuid_parse(s, id) && strlen(id) != 36)
        abort();
    if (ga_resource_uuid(s, "u:p", id, why, sizeof why) == 0 && strlen(id) != 36)
        abort();
    char iso[40], td[48];
    int64_t v = 0;
    memcpy(&v, d, n < sizeof v ? n : sizeof v);
    if (v > -6000000000000000000LL && v < 7000000000000000000LL) {
        api_iso(v, iso);
        if (v >= 0)
            api_timedelta(v, td);
    }
}

/* The target's rules, checked against a decoding of the fuzzer's own. */
static int fuzz_hex(int c)
{
    return c >= '0' && c <= '9' ? c - '0' : c >= 'a' && c <= 'f' ? c - 'a' + 10
         : c >= 'A' && c <= 'F' ? c - 'A' + 10 : -1;
}

static size_t fuzz_unescape(const char *s, size_t n, char *out)
{
    size_t o = 0;
    for (size_t i = 0; i < n; i++)
        if (s[i] == '%' && i + 2 < n && fuzz_hex((unsigned char)s[i + 1]) >= 0 &&
            fuzz_hex((unsigned char)s[i + 2]) >= 0) {
            out[o++] = (char)(fuzz_hex((unsigned char)s[i + 1]) << 4 |
                              fuzz_hex((unsigned char)s[i + 2]));
            i += 2;
        } else {
            out[o++] = s[i];
        }
    return o;
}

static void fuzz_target(const uint8_t *d, size_t n)
{
    const char *t = (const char *)d;
    char why[160] = "";
    int rc = http_target_check(t, n, why, sizeof why);
    if (rc != 0 && rc != 400 && rc != 414)
        abort();
    if (rc != 0 && (!why[0] || strlen(why) >= sizeof why))
        abort();
    if (rc == 0) {
        if (n > HTTP_TARGET_MAX_BYTES || http_target_params(t, n) > HTTP_TARGET_MAX_PARAMS)
            abort();
        const char *q = memchr(t, '?', n);
        size_t plen = q ? (size_t)(q - t) : n;
        char *dec = malloc(n + 1);
        if (!dec)
            abort();
        if (name_check(dec, fuzz_unescape(t, plen, dec), NULL, NULL) != NAME_CHECK_OK)
            abort();
        if (q && name_check(dec, fuzz_unescape(q + 1, n - plen - 1, dec), NULL, NULL) !=
                     NAME_CHECK_OK)
            abort();
        free(dec);
    }
    char esc[3 * 64 + 1], back[3 * 64 + 1];
    size_t cap = 1 + (n % sizeof esc);
    size_t e = http_log_escape(esc, cap, t, n);
    if (e >= cap || esc[e] != '\0' || strlen(esc) != e)
        abort();
    for (size_t i = 0; i < e; i++)
        if (esc[i] < 0x20 || esc[i] > 0x7e || esc[i] == '"' || esc[i] == '\\')
            abort();
    size_t b = fuzz_unescape(esc, e, back);
    if (b > n || memcmp(back, t, b) != 0)
        abort();
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (size < 1)
        return 0;
    switch (data[0] % 5) {
    case 0: fuzz_filter(data + 1, size - 1); break;
    case 1: fuzz_ops(data + 1, size - 1, 0); break;
    case 2: fuzz_ops(data + 1, size - 1, 1); break;
    case 3: fuzz_forms(data + 1, size - 1); break;
    default: fuzz_target(data + 1, size - 1); break;
    }
    return 0;
}
