/* query.h — gpuaggctl's data commands: flush, metrics, query
 * (docs/gpuaggctl.1), each a client of the control op of the same name
 * (proto/PROTOCOL.md). */
#ifndef GA_CTL_QUERY_H
#define GA_CTL_QUERY_H

#include <stddef.h>
#include <stdint.h>

/* Options common to every command. */
struct ctl_opts {
    const char *socket;
    double timeout_s;
    int json;
};

/* 1 if name is one of the data commands (they take their own options). */
int ctl_is_data_command(const char *name);

/* Run data command `name` with its arguments argv[1..argc-1] (argv[0] is
 * the name); global options among them go to o.  Prints the result (or the
 * error on stderr) and returns the exit code. */
int ctl_data_command(const char *name, int argc, char **argv, struct ctl_opts *o);

/* Parse a time given on the command line: RFC 3339 ("2026-01-02T03:04:05Z",
 * any offset) or seconds since the epoch ("1767323045", "-1.5",
 * "1767323045.25", up to 9 decimals).  Returns 0 with *ns, or -1 with a
 * reason in err. */
int ctl_parse_time(const char *s, int64_t *ns, char *err, size_t errlen);

#endif
