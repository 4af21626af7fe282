/* name_check.c — the characters a metric name or a resource id may hold
 * (name_check.h, proto/INGEST.md §5). */
#include "proto/name_check.h"

#include <stdio.h>

const struct name_check_range name_check_refused[] = {
    { 0x0000, 0x001F, "C0 control" },
    { 0x007F, 0x007F, "delete" },
    { 0x0080, 0x009F, "C1 control" },
    { 0x061C, 0x061C, "Arabic letter mark" },
    { 0x200B, 0x200B, "zero width space" },
    { 0x200C, 0x200C, "zero width non-joiner" },
    { 0x200D, 0x200D, "zero width joiner" },
    { 0x200E, 0x200E, "left-to-right mark" },
    { 0x200F, 0x200F, "right-to-left mark" },
    { 0x202A, 0x202A, "left-to-right embedding" },
    { 0x202B, 0x202B, "right-to-left embedding" },
    { 0x202C, 0x202C, "pop directional formatting" },
    { 0x202D, 0x202D, "left-to-right override" },
    { 0x202E, 0x202E, "right-to-left override" },
    { 0x2060, 0x2060, "word joiner" },
    { 0x2066, 0x2066, "left-to-right isolate" },
    { 0x2067, 0x2067, "right-to-left isolate" },
    { 0x2068, 0x2068, "first strong isolate" },
    { 0x2069, 0x2069, "pop directional isolate" },
    { 0xFEFF, 0xFEFF, "zero width no-break space" },
};
const size_t name_check_nrefused = sizeof name_check_refused / sizeof name_check_refused[0];

const char *name_check_what(uint32_t cp)
{
    /* 20 ranges: a linear scan, and most names never get here (ASCII
     * letters, digits and punctuation are decided before) */
    for (size_t i = 0; i < name_check_nrefused && cp >= name_check_refused[i].lo; i++)
        if (cp <= name_check_refused[i].hi)
            return name_check_refused[i].what;
    return NULL;
}

/* One code point at s[i..n): its length (1..4) and value, or 0 when the
 * bytes there are not a well-formed UTF-8 sequence (Unicode Table 3-7). */
static size_t utf8_next(const uint8_t *s, size_t i, size_t n, uint32_t *cp)
{
    uint8_t c = s[i];
    if (c < 0x80) {
        *cp = c;
        return 1;
    }
    size_t need;
    uint32_t v;
    uint8_t lo = 0x80, hi = 0xbf;       /* allowed range of the second byte */
    if (c >= 0xc2 && c <= 0xdf) {
        need = 1, v = c & 0x1f;
    } else if (c >= 0xe0 && c <= 0xef) {
        need = 2, v = c & 0x0f;
        lo = c == 0xe0 ? 0xa0 : 0x80;   /* no overlong forms */
        hi = c == 0xed ? 0x9f : 0xbf;   /* no surrogates */
    } else if (c >= 0xf0 && c <= 0xf4) {
        need = 3, v = c & 0x07;
        lo = c == 0xf0 ? 0x90 : 0x80;
        hi = c == 0xf4 ? 0x8f : 0xbf;   /* nothing above U+10FFFF */
    } else {
        return 0;
    }
    if (n - i - 1 < need || s[i + 1] < lo || s[i + 1] > hi)
        return 0;
    for (size_t k = 1; k <= need; k++) {
        if ((s[i + k] & 0xc0) != 0x80)
            return 0;
        v = (v << 6) | (s[i + k] & 0x3f);
    }
    *cp = v;
    return need + 1;
}

enum name_check_rc name_check(const void *s, size_t n, uint32_t *cp, size_t *at)
{
    const uint8_t *p = s;
    for (size_t i = 0; i < n;) {
        uint8_t c = p[i];
        if (c > 0x1f && c < 0x7f) {     /* printable ASCII: the common case */
            i++;
            continue;
        }
        uint32_t v;
        size_t len = utf8_next(p, i, n, &v);
        if (!len || name_check_what(v)) {
            if (at)
                *at = i;
            if (cp && len)
                *cp = v;
            return len ? NAME_CHECK_CHAR : NAME_CHECK_UTF8;
        }
        i += len;
    }
    return NAME_CHECK_OK;
}

int name_check_reason(const char *what, const void *s, size_t n, char *buf, size_t len)
{
    uint32_t cp = 0;
    size_t at = 0;
    enum name_check_rc rc = name_check(s, n, &cp, &at);
    if (rc == NAME_CHECK_OK)
        return 0;
    if (rc == NAME_CHECK_UTF8)
        snprintf(buf, len, "%s not valid UTF-8 at byte %zu", what, at);
    else
        snprintf(buf, len, "%s contains U+%04X (%s) at byte %zu", what, (unsigned)cp,
                 name_check_what(cp), at);
    return 1;
}
