/* opts.h — gpuaggctl's global options (--socket, --json, --timeout,
 * --help, --version), read with getopt_long by main before the command and,
 * for the commands that take them after their name too, by the command's
 * own parser. */
#ifndef GA_CTL_OPTS_H
#define GA_CTL_OPTS_H

#include <getopt.h>
#include <stdio.h>

#include "tools/gpuaggctl/query.h"

/* getopt_long values of the global long options; a command's own long
 * options use values from CTL_OPT_LOCAL on. */
enum { CTL_OPT_SOCKET = 0x100, CTL_OPT_JSON, CTL_OPT_TIMEOUT, CTL_OPT_LOCAL = 0x180 };

/* Short options of every parser: "+" (stop at the first operand, so the
 * caller sees operands in order), ":" (a missing value returns ':'). */
#define CTL_SHORTOPTS "+:hV"

/* The global options' rows, for a command's table of long options. */
#define CTL_GLOBAL_LONGOPTS                                            \
    { "socket", required_argument, NULL, CTL_OPT_SOCKET },             \
    { "json", no_argument, NULL, CTL_OPT_JSON },                       \
    { "timeout", required_argument, NULL, CTL_OPT_TIMEOUT },           \
    { "help", no_argument, NULL, 'h' },                                \
    { "version", no_argument, NULL, 'V' }

/* The option getopt_long just refused (it returned '?' or ':'), as the
 * user wrote it: "--frob", "--json=1", "-x".  argv: the vector given to
 * getopt_long.  Returns a static or argv string. */
static inline const char *ctl_opt_bad(char **argv)
{
    static char shortopt[3] = "-?";
    if (optopt > 0 && optopt < 0x80 && argv[optind - 1][1] != '-') {
        shortopt[1] = (char)optopt;             /* "-x", maybe inside "-hx" */
        return shortopt;
    }
    return argv[optind - 1];
}

/* Apply c, one answer of getopt_long over a table holding
 * CTL_GLOBAL_LONGOPTS, to o; who names the command in error messages ("" for
 * none).  Returns -1 when c was a global option and the parse goes on, -2
 * when c is none of them (the caller's own), or the exit code after
 * printing: EXIT_OK for --help and --version, EXIT_USAGE for a bad value,
 * an unknown option ('?') or a missing value (':'). */
int ctl_opt_global(int c, char **argv, const char *who, struct ctl_opts *o);

/* The global usage text, on f (main.c). */
void ctl_usage(FILE *f);

#endif
