/* opts.c — gpuaggctl's global options (see opts.h). */
#include "tools/gpuaggctl/opts.h"

#include <errno.h>
#include <math.h>
#include <stdlib.h>

#include "proto/ctl_proto.h"
#include "tools/gpuaggctl/client.h"

#ifndef GA_VERSION
#define GA_VERSION "0.0.0"
#endif

static int usage_error(const char *who, const char *fmt, const char *arg)
{
    fprintf(stderr, "gpuaggctl: %s%s", who, *who ? ": " : "");
    fprintf(stderr, fmt, arg);
    fputs("\n(see 'gpuaggctl help')\n", stderr);
    return EXIT_USAGE;
}

int ctl_opt_global(int c, char **argv, const char *who, struct ctl_opts *o)
{
    switch (c) {
    case CTL_OPT_JSON:
        o->json = 1;
        return -1;
    case CTL_OPT_SOCKET:
        if (!*optarg)
            return usage_error(who, "%s", "--socket needs a non-empty path");
        o->socket = optarg;
        return -1;
    case CTL_OPT_TIMEOUT: {
        char *end;
        errno = 0;
        double t = strtod(optarg, &end);
        if (errno || end == optarg || *end || !isfinite(t) || t <= 0 || t > 86400)
            return usage_error(who, "--timeout: '%s' is not a number of seconds in (0, 86400]", optarg);
        o->timeout_s = t;
        return -1;
    }
    case 'h':
        ctl_usage(stdout);
        return EXIT_OK;
    case 'V':
        printf("gpuaggctl %s (control protocol %d)\n", GA_VERSION, CTL_PROTO_VERSION);
        return EXIT_OK;
    case ':':
        return usage_error(who, "%s needs a value", ctl_opt_bad(argv));
    case '?':
        return usage_error(who, "unknown option '%s'", ctl_opt_bad(argv));
    default:
        return -2;
    }
}
