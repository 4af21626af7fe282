/* method.c — the methods table (method.h): names, needs, places in a wide
 * record. */
#include "proto/method.h"

#include <ctype.h>
#include <stdio.h>
#include <string.h>

#include "proto/ga_err.h"

/* Indexed by base method; the wide bits are GA_M_MEAN .. GA_M_STD in
 * order (a wide record's mask, proto/agg.h). */
static const struct ga_method_info methods[] = {
    [GA_M_MEAN]   = { "mean",   GA_NEED_SUM,    0 },
    [GA_M_SUM]    = { "sum",    GA_NEED_SUM,    1 },
    [GA_M_MIN]    = { "min",    GA_NEED_MINMAX, 2 },
    [GA_M_MAX]    = { "max",    GA_NEED_MINMAX, 3 },
    [GA_M_COUNT]  = { "count",  0,              4 },
    [GA_M_FIRST]  = { "first",  GA_NEED_POINT,  5 },
    [GA_M_LAST]   = { "last",   GA_NEED_POINT,  6 },
    [GA_M_STD]    = { "std",    GA_NEED_SUM,    7 },
    [GA_M_MEDIAN] = { "median", GA_NEED_SORT,   -1 },
};
static const struct ga_method_info pct = { "Npct", GA_NEED_SORT, -1 };

_Static_assert(GA_M_STD - GA_M_MEAN + 1 == 8, "a wide record's mask holds GA_M_MEAN .. GA_M_STD");

const struct ga_method_info *ga_method_info(ga_method_t m)
{
    if (m & ~(GA_M_RATE | 0xff))
        return NULL;
    int b = GA_M_BASE(m);
    if (b >= GA_M_MEAN && b <= GA_M_MEDIAN)
        return &methods[b];
    return GA_M_IS_PCT(m) ? &pct : NULL;
}

unsigned ga_methods_need(const ga_method_t *ms, int n)
{
    unsigned need = 0;
    for (int i = 0; i < n; i++) {
        const struct ga_method_info *mi = ga_method_info(ms[i]);
        need |= mi ? mi->need : 0;
    }
    return need;
}

static int parse_base(const char *s)
{
    for (int i = GA_M_MEAN; i <= GA_M_MEDIAN; i++)
        if (strcmp(s, methods[i].name) == 0)
            return i;
    /* "Npct", N in 1..99, no sign, no leading zero (Gnocchi's str(i)+'pct') */
    size_t len = strlen(s);
    if (len < 4 || len > 5 || strcmp(s + len - 3, "pct") != 0 || s[0] == '0')
        return GA_EINVAL;
    int n = 0;
    for (size_t i = 0; i < len - 3; i++) {
        if (!isdigit((unsigned char)s[i]))
            return GA_EINVAL;
        n = n * 10 + (s[i] - '0');
    }
    return n >= 1 && n <= 99 ? GA_M_PCT_BASE + n : GA_EINVAL;
}

int ga_method_parse(const char *name)
{
    if (strncmp(name, "rate:", 5) == 0) {
        int b = parse_base(name + 5);
        return b < 0 ? b : (b | GA_M_RATE);
    }
    return parse_base(name);
}

const char *ga_method_name(ga_method_t m, char *buf)
{
    const char *pre = GA_M_IS_RATE(m) ? "rate:" : "";
    int b = GA_M_BASE(m);
    if (b >= GA_M_MEAN && b <= GA_M_MEDIAN)
        snprintf(buf, GA_METHOD_NAME_MAX, "%s%s", pre, methods[b].name);
    else if (GA_M_IS_PCT(m))
        snprintf(buf, GA_METHOD_NAME_MAX, "%s%dpct", pre, GA_M_PCT_N(m));
    else
        snprintf(buf, GA_METHOD_NAME_MAX, "?%u", (unsigned)m);
    return buf;
}
