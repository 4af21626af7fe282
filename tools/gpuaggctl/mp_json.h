/* mp_json.h — a decoded msgpack object as JSON, through jansson: gpuaggctl's
 * --json output.
 *
 * The conversion (mp_json_from) maps each msgpack type to a jansson value:
 *   nil, bool, int  null, true/false, integer (a uint above INT64_MAX, which
 *                   a json_int_t cannot hold, as a real)
 *   float          real, written as jansson writes one: "%.17g", which reads
 *                  back to the same double, ".0" added to integral values,
 *                  the exponent without "+" ("1e300"); a float32 is widened
 *                  to double exactly; NaN and ±inf as null
 *   str            string, invalid UTF-8 sequences replaced by U+FFFD (one
 *                  per maximal ill-formed part); NUL bytes kept ("\u0000")
 *   bin            base64 string (RFC 4648, padded)
 *   ext            {"ext": type, "data": "<base64>"}
 *   map            object in the map's order; str keys as is, bin keys as
 *                  their base64, any other key as its compact JSON text: 1 →
 *                  "1", true → "true", nil → "null", [1] → "[1]"; within such
 *                  a text an array or map key is "…" (so the text stays
 *                  linear in the input: each level would escape again).  A
 *                  key met again keeps its first value, as mp_map_get reads
 *                  it (a JSON object has each name once).
 * Strings are escaped as jansson escapes them ("\"", "\\", control
 * characters; other characters as UTF-8). */
#ifndef GA_CTL_MP_JSON_H
#define GA_CTL_MP_JSON_H

#include <stdio.h>

#include <jansson.h>
#include <msgpack.h>

/* o as a new jansson value (above), or NULL when out of memory.  The caller
 * owns the result (json_decref); nothing points into o. */
json_t *mp_json_from(const msgpack_object *o);

/* Write o to out as JSON: pretty 0 = one line, no spaces (JSON_COMPACT);
 * 1 = 2-space indent, one member per line, "key": value (JSON_INDENT(2)).
 * No newline is written after the value.  Returns 0, GA_EIO if a write to
 * out failed, or GA_ENOMEM.  Does not flush or close out. */
int mp_json_write(const msgpack_object *o, FILE *out, int pretty);

#endif
