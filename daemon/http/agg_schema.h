/* agg_schema.h — the operations of POST /v1/aggregates as Gnocchi takes
 * them: the string form "(aggregate mean (metric cpu mean))", the operator
 * names of gnocchi/rest/aggregates/operations.py and the checks of api.py's
 * OperationsSchema.  docs/API.md "Aggregates".  No I/O; safe from any
 * thread. */
#ifndef GA_HTTP_AGG_SCHEMA_H
#define GA_HTTP_AGG_SCHEMA_H

#include <stddef.h>

#include <jansson.h>

/* The binary operators (agg_binary_op's answers). */
enum { OP_NONE, OP_EQ, OP_LT, OP_GT, OP_LE, OP_GE, OP_NE, OP_MOD, OP_ADD, OP_SUB, OP_MUL, OP_DIV,
       OP_POW, OP_CLIP_MIN, OP_CLIP_MAX };

/* Parse the string form into the JSON list form (new reference); words
 * stay strings, as pyparsing gives them.  NULL with why set on a syntax
 * error. */
json_t *agg_sexp_parse(const char *s, char *why, size_t wl);

/* Gnocchi's OperationsSchema on ops: 0, or -1 with reason set to the text
 * Gnocchi answers ("'X' operation invalid for dictionary value @
 * data['operations']"). */
int agg_ops_check(const json_t *ops, char *reason, size_t rl);

/* The OP_* of a binary operator's name ("+", "add", "clip_min", ...), or
 * OP_NONE. */
int agg_binary_op(const char *name);
/* 1.. for a unary operator's name (abs absolute neg negative cos sin tan
 * floor ceil, in that order), 0 for any other. */
int agg_unary_op(const char *name);
/* A number where the schema takes one (voluptuous.Coerce(float)): a JSON
 * number, or a string float() parses.  1 with *v set, else 0. */
int agg_as_number(const json_t *j, double *v);

#endif
