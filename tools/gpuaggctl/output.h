/* output.h — human formatting of control-protocol results for gpuaggctl.
 *
 * Generic renderers (no knowledge of particular keys, so new fields in a
 * result show up without a CLI change) plus small per-op summaries.
 * Strings are printed with control characters escaped (\n, \x1b …) so a
 * daemon-supplied value cannot drive the terminal. */
#ifndef GA_CTL_OUTPUT_H
#define GA_CTL_OUTPUT_H

#include <stdio.h>

#include <msgpack.h>

/* Print a scalar for humans: strings unquoted (empty as ""), nil as "-",
 * integral floats without decimals, other floats with up to 3 decimals
 * (%g when very large or small), arrays of scalars as "[a, b]".  A map or
 * an array holding containers prints as "{...}" / "[...]". */
void out_scalar(FILE *f, const msgpack_object *o);

/* Print o as YAML-ish indented lines: maps as "key: value", nested maps and
 * arrays of containers on following lines indented by 2, array items of
 * containers as "- ".  A non-map o prints as one scalar line.  Used for
 * status and config. */
void out_tree(FILE *f, const msgpack_object *o);

/* Print a map as a two-column "key value" table sorted by key, the key column
 * padded to the longest key; nested maps are flattened to dotted keys
 * ("storage.lag_s").  A non-map o prints via out_tree.  Used for stats. */
void out_table(FILE *f, const msgpack_object *o);

/* Print the result (not the whole response) as JSON, pretty, plus a newline.
 * Returns 0 or GA_EIO. */
int out_json(FILE *f, const msgpack_object *o);

#endif
