/* api_filter_string.h — Gnocchi's string filter syntax, e.g.
 *   host='compute-1' and (flavor_id!='f2' or not display_name like 'db%')
 *   id in ['a', 'b']   started_at >= '2026-01-01'
 * comparisons =, ==, eq, !=, ne, <, lt, <=, le, >, gt, >=, ge, like, in
 * (and ≠ ≥ ≤); not, and (∧), or (∨) in that order of precedence;
 * parentheses; values null/None, true/false, UUIDs, bare words, numbers,
 * 'quoted' or "quoted" strings (no escapes), [lists]. */
#ifndef GA_HTTP_API_FILTER_STRING_H
#define GA_HTTP_API_FILTER_STRING_H

#include <stddef.h>

#include <jansson.h>

/* The JSON filter (new reference) that text means, as Gnocchi's
 * QueryStringSearchAttrFilter builds it ({"=": {"host": "x"}},
 * {"and": [...]}, ...); NULL with why set (what was expected and at
 * which character) when text is not a filter. */
json_t *api_filter_parse_string(const char *text, char *why, size_t whylen);

#endif
