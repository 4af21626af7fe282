/* json_out.h — JSON text written straight into a buffer for the API's
 * large answers (a metric's measures), byte for byte what jansson's
 * json_dumps(JSON_COMPACT) writes for the same values, without a jansson
 * object per value.  Safe from any thread on distinct buffers. */
#ifndef GA_HTTP_JSON_OUT_H
#define GA_HTTP_JSON_OUT_H

#include <stddef.h>
#include <stdint.h>

/* A growable text buffer; zero-initialise it.  An append that cannot grow
 * it sets oom and leaves it as it was; check oom once at the end. */
struct json_out {
    char *p;                              /* malloc'ed, NUL-terminated when len > 0 */
    size_t len, cap;
    int oom;
};

/* v as jansson writes a real: "%.17g", ".0" added when it has neither '.'
 * nor 'e', the exponent without '+' and leading zeros ("1e20", "1e-5").
 * v finite.  Returns the length written to out (NUL-terminated). */
int json_out_real_str(double v, char out[32]);

/* Append n bytes of s as they are (e.g. "[" and "]" around a list). */
void json_out_put(struct json_out *b, const char *s, size_t n);

/* The items of Gnocchi's measures list, ["ISO time", granularity s,
 * value], of the points t[i] < stop, granularity g ns, appended to b, a
 * ',' before each unless b ends with '['.  Points whose value is not
 * finite are left out, as a jansson array drops a real it cannot make. */
void json_out_measures(struct json_out *b, const int64_t *t, const double *v, size_t n, int64_t g,
                       int64_t stop);

/* Free b's text; b is left empty. */
void json_out_free(struct json_out *b);

#endif
