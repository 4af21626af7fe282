/* json_out.c — JSON text straight into a buffer (see json_out.h). */
#include "daemon/http/json_out.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "daemon/http/api.h"

static int reserve(struct json_out *b, size_t more)
{
    if (b->oom)
        return -1;
    if (b->len + more + 1 <= b->cap)
        return 0;
    size_t cap = b->cap ? b->cap : 4096;
    while (cap < b->len + more + 1)
        cap *= 2;
    char *p = realloc(b->p, cap);
    if (!p) {
        b->oom = 1;
        return -1;
    }
    b->p = p;
    b->cap = cap;
    return 0;
}

void json_out_put(struct json_out *b, const char *s, size_t n)
{
    if (reserve(b, n) < 0)
        return;
    memcpy(b->p + b->len, s, n);
    b->len += n;
    b->p[b->len] = '\0';
}

int json_out_real_str(double v, char out[32])
{
    int n = snprintf(out, 32, "%.17g", v);
    if (!strchr(out, '.') && !strchr(out, 'e')) {
        memcpy(out + n, ".0", 3);
        n += 2;
    }
    char *start = strchr(out, 'e');
    if (start) {
        start++;
        char *end = start + 1;
        if (*start == '-')
            start++;
        while (*end == '0')
            end++;
        if (end != start) {
            memmove(start, end, (size_t)n - (size_t)(end - out) + 1);
            n -= (int)(end - start);
        }
    }
    return n;
}

/* "YYYY-MM-DDTHH:MM:SS" of whole seconds since the epoch in 0001..9999
 * (days to a civil date as in H. Hinnant's chrono algorithms); -1 outside. */
static int iso_seconds(int64_t sec, char out[20])
{
    int64_t days = sec / 86400, rem = sec % 86400;
    if (rem < 0) {
        rem += 86400;
        days--;
    }
    int64_t z = days + 719468;
    int64_t era = (z >= 0 ? z : z - 146096) / 146097;
    int64_t doe = z - era * 146097;
    int64_t yoe = (doe - doe / 1460 + doe / 36524 - doe / 146096) / 365;
    int64_t y = yoe + era * 400;
    int64_t doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    int64_t mp = (5 * doy + 2) / 153;
    int64_t d = doy - (153 * mp + 2) / 5 + 1;
    int64_t m = mp < 10 ? mp + 3 : mp - 9;
    y += m <= 2;
    if (y < 1000 || y > 9999)
        return -1;
    int f[6] = { (int)y, (int)m, (int)d, (int)(rem / 3600), (int)(rem / 60 % 60),
                 (int)(rem % 60) };
    out[0] = (char)('0' + f[0] / 1000);
    out[1] = (char)('0' + f[0] / 100 % 10);
    out[2] = (char)('0' + f[0] / 10 % 10);
    out[3] = (char)('0' + f[0] % 10);
    static const char sep[] = "--T::";
    for (int i = 1; i < 6; i++) {
        out[1 + 3 * i] = sep[i - 1];
        out[2 + 3 * i] = (char)('0' + f[i] / 10);
        out[3 + 3 * i] = (char)('0' + f[i] % 10);
    }
    out[19] = '\0';
    return 0;
}

void json_out_measures(struct json_out *b, const int64_t *t, const double *v, size_t n, int64_t g,
                       int64_t stop)
{
    char gs[32], vs[32], iso[40];
    int gl = json_out_real_str((double)g / 1e9, gs);
    for (size_t i = 0; i < n; i++) {
        if (t[i] >= stop || !isfinite(v[i]))
            continue;
        if (t[i] % 1000000000 == 0 && iso_seconds(t[i] / 1000000000, iso) == 0)
            memcpy(iso + 19, "+00:00", 7);
        else
            api_iso(t[i], iso);
        int vl = json_out_real_str(v[i], vs);
        size_t il = strlen(iso);
        if (reserve(b, il + (size_t)gl + (size_t)vl + 8) < 0)
            return;
        char *o = b->p + b->len;
        if (b->len && b->p[b->len - 1] != '[')
            *o++ = ',';
        memcpy(o, "[\"", 2);
        o += 2;
        memcpy(o, iso, il);
        o += il;
        memcpy(o, "\",", 2);
        o += 2;
        memcpy(o, gs, (size_t)gl);
        o += gl;
        *o++ = ',';
        memcpy(o, vs, (size_t)vl);
        o += vl;
        *o++ = ']';
        *o = '\0';
        b->len = (size_t)(o - b->p);
    }
}

void json_out_free(struct json_out *b)
{
    free(b->p);
    memset(b, 0, sizeof *b);
}
