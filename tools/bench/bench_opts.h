/* bench_opts.h — the benchmarks' message for an option getopt_long
 * refused, so each names the option the same way. */
#ifndef GA_BENCH_OPTS_H
#define GA_BENCH_OPTS_H

#include <getopt.h>
#include <stdio.h>

/* c: getopt_long's answer '?' (unknown option, or a value given to one that
 * takes none) or ':' (a missing value; optstring starts with ':'); argv:
 * the vector given to getopt_long.  Prints "prog: ..." on stderr, naming the
 * option as written ("--frob", "--quick=1", "-x"); returns 2, the exit
 * status of a usage error. */
static inline int bench_opt_error(const char *prog, int c, char **argv)
{
    char shortopt[3] = { '-', (char)optopt, 0 };
    const char *bad = optopt > 0 && optopt < 0x80 && argv[optind - 1][1] != '-' ? shortopt
                                                                                : argv[optind - 1];
    if (c == ':')
        fprintf(stderr, "%s: option '%s' needs a value\n", prog, bad);
    else
        fprintf(stderr, "%s: unknown option '%s'\n", prog, bad);
    return 2;
}

#endif
