/* main.c — gpuaggctl, the admin CLI of gpuaggd.
 *
 *   gpuaggctl [--socket PATH] [--json] [--timeout SEC] COMMAND [ARGS]
 *
 * Speaks the documented control protocol (proto/PROTOCOL.md) over the
 * daemon's Unix socket; docs/gpuaggctl.1 is the manual.  Exit codes:
 * 0 ok, 1 the daemon returned an error, 2 usage, 3 cannot connect,
 * 4 the conversation failed after connecting (timeout, connection closed,
 * malformed response). */
#include <errno.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "proto/ctl_proto.h"
#include "proto/ga_err.h"
#include "proto/mp_util.h"
#include "tools/gpuaggctl/client.h"
#include "tools/gpuaggctl/job.h"
#include "tools/gpuaggctl/output.h"
#include "tools/gpuaggctl/query.h"

#if __has_include("tools/gpuaggctl/resample.h")
#include "tools/gpuaggctl/resample.h"
#define HAVE_RESAMPLE_LOCAL 1
#else
#define HAVE_RESAMPLE_LOCAL 0
#endif

#ifndef GA_VERSION
#define GA_VERSION "0.0.0"
#endif

#define DEFAULT_SOCKET "/run/gpuagg/control.sock"
#define DEFAULT_TIMEOUT_S 5.0

enum render { R_PING, R_TREE, R_TABLE, R_RELOAD, R_SHUTDOWN };

static const struct command {
    const char *name;       /* on the command line */
    const char *op;         /* on the wire */
    enum render render;
    const char *help;
} commands[] = {
    { "ping",     "ping",       R_PING,     "check that gpuaggd answers; print its version and the round trip" },
    { "status",   "status",     R_TREE,     "daemon state, backends, storage, queues, counters" },
    { "stats",    "stats",      R_TABLE,    "counters as a sorted key/value table" },
    { "config",   "config.get", R_TREE,     "the configuration in effect" },
    { "reload",   "reload",     R_RELOAD,   "re-read the configuration file (as SIGHUP)" },
    { "shutdown", "shutdown",   R_SHUTDOWN, "drain and stop the daemon" },
};
#define NCOMMANDS (sizeof commands / sizeof commands[0])

static void usage(FILE *f)
{
    fprintf(f, "usage: gpuaggctl [--socket PATH] [--json] [--timeout SEC] COMMAND [ARGS]\n\ncommands:\n");
    for (size_t i = 0; i < NCOMMANDS; i++)
        fprintf(f, "  %-9s %s\n", commands[i].name, commands[i].help);
    fprintf(f, "  %-9s %s\n", "flush", "commit everything acknowledged so far to PostgreSQL, then return");
    fprintf(f, "  %-9s %s\n", "metrics", "list metrics: NAME POLICY POINTS [--prefix P]");
    fprintf(f, "  %-9s %s\n", "query", "METRIC --granularity SEC --method M [--start T] [--stop T]");
    fprintf(f, "  %-9s %s\n", "", "  the stored roll-ups; T is RFC 3339 or seconds since the epoch");
    fprintf(f, "  %-9s %s\n", "resample", "roll up a CSV of points as a job (--local: in-process, no daemon)");
    fprintf(f, "  %-9s %s\n", "job", "submit KIND [--param K=V] [--input F] [--wait] | status|result|cancel ID | list");
    fprintf(f, "  %-9s %s\n", "help", "this text");
    fprintf(f, "\noptions:\n"
               "  --socket PATH   control socket (default $GPUAGG_SOCKET, else " DEFAULT_SOCKET ")\n"
               "  --json          print the result as JSON\n"
               "  --timeout SEC   give up after SEC seconds (default 5; flush: wait that long for the commit)\n"
               "  --version       print the version\n"
               "\nexit status: 0 ok, 1 daemon error, 2 usage, 3 cannot connect, 4 communication failure\n");
}

static int usage_error(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

static int usage_error(const char *fmt, ...)
{
    va_list ap;
    fputs("gpuaggctl: ", stderr);
    va_start(ap, fmt);
    vfprintf(stderr, fmt, ap);
    va_end(ap);
    fputs("\n(see 'gpuaggctl help')\n", stderr);
    return EXIT_USAGE;
}

/* argv[0] is "resample"; o: the global options that came before it. */
static int run_resample(int argc, char **argv, const struct ctl_opts *o)
{
    int local = 0, help = 0;
    for (int i = 1; i < argc; i++) {
        if (strcmp(argv[i], "--local") == 0)
            local = 1;
        if (strcmp(argv[i], "--help") == 0 || strcmp(argv[i], "-h") == 0)
            help = 1;
    }
    if (!local && !help)
        return ctl_resample_job(argc, argv, o);
#if HAVE_RESAMPLE_LOCAL
    char **av = calloc((size_t)argc + 2, sizeof *av);
    if (!av) {
        fprintf(stderr, "gpuaggctl: out of memory\n");
        return EXIT_COMM;
    }
    memcpy(av, argv, (size_t)argc * sizeof *av);
    if (o->json)
        av[argc++] = "--json";
    int rc = ctl_resample_local(argc, av);
    free(av);
    return rc;
#else
    fprintf(stderr, "gpuaggctl: resample --local is not built into this gpuaggctl\n");
    return EXIT_USAGE;
#endif
}

/* Print a successful result for humans; returns the exit code. */
static int render(const struct command *cmd, const struct ctl_reply *r, const char *socket)
{
    const msgpack_object *res = r->result;
    switch (cmd->render) {
    case R_PING: {
        const char *v = "?";
        size_t vlen = 1;
        mp_get_str(res, "version", &v, &vlen);
        printf("pong from gpuaggd %.*s at %s in %.2f ms\n", (int)vlen, v, socket, r->rtt_ms);
        return EXIT_OK;
    }
    case R_TREE:
        out_tree(stdout, res);
        return EXIT_OK;
    case R_TABLE:
        out_table(stdout, res);
        return EXIT_OK;
    case R_SHUTDOWN:
        printf("gpuaggd is stopping\n");
        return EXIT_OK;
    case R_RELOAD: {
        int reloaded = 0;
        mp_get_bool(res, "reloaded", &reloaded);
        const char *e = NULL;
        size_t elen = 0;
        mp_get_str(res, "error", &e, &elen);
        if (!reloaded) {
            fprintf(stderr, "gpuaggctl: reload: configuration not reloaded%s%.*s\n",
                    e ? ": " : "", (int)elen, e ? e : "");
            return EXIT_DAEMON;
        }
        printf("configuration reloaded\n");
        const msgpack_object *rn = mp_map_get(res, "restart_needed");
        if (rn && rn->type == MSGPACK_OBJECT_ARRAY && rn->via.array.size > 0) {
            printf("changes that need a restart (kept as they were): ");
            for (uint32_t i = 0; i < rn->via.array.size; i++) {
                if (i)
                    printf(", ");
                out_scalar(stdout, &rn->via.array.ptr[i]);
            }
            printf("\n");
        }
        if (e)
            printf("warning: %.*s\n", (int)elen, e);
        return EXIT_OK;
    }
    }
    return EXIT_OK;
}

static int run_command(const struct command *cmd, const char *socket, double timeout_s, int json)
{
    struct ctl_client c;
    int rc = ctl_client_connect(&c, socket, (int)(timeout_s * 1000));
    if (rc < 0) {
        fprintf(stderr, "gpuaggctl: cannot connect to gpuaggd at %s: %s (is the daemon running?)\n",
                socket, strerror(-rc));
        ctl_client_close(&c);
        return EXIT_CONNECT;
    }
    struct ctl_reply r;
    char err[256];
    int code;
    rc = ctl_client_call(&c, cmd->op, NULL, 0, &r, err, sizeof err);
    if (rc < 0) {
        fprintf(stderr, "gpuaggctl: %s: %s\n", cmd->op, err);
        code = EXIT_COMM;
    } else if (!r.ok) {
        fprintf(stderr, "gpuaggctl: %s: %s (%s)\n", cmd->op, r.message, r.name);
        code = EXIT_DAEMON;
    } else if (json) {
        code = out_json(stdout, r.result) < 0 ? EXIT_COMM : EXIT_OK;
    } else {
        code = render(cmd, &r, socket);
    }
    if (fflush(stdout) != 0 && code == EXIT_OK) {
        fprintf(stderr, "gpuaggctl: writing output: %s\n", strerror(errno));
        code = EXIT_COMM;
    }
    ctl_client_close(&c);
    return code;
}

/* If argv[*i] is a global option, consume it (and its value) and return 1;
 * 0 if it is not one; -1 (after printing) on a usage error. */
static int global_option(int argc, char **argv, int *i, const char **socket, double *timeout_s, int *json)
{
    const char *a = argv[*i];
    const char *val = NULL;
    if (strcmp(a, "--json") == 0) {
        *json = 1;
        return 1;
    }
    if (strcmp(a, "--socket") == 0 || strcmp(a, "--timeout") == 0) {
        if (*i + 1 >= argc) {
            usage_error("%s needs a value", a);
            return -1;
        }
        val = argv[++*i];
    } else if (strncmp(a, "--socket=", 9) == 0 || strncmp(a, "--timeout=", 10) == 0) {
        val = strchr(a, '=') + 1;
    } else {
        return 0;
    }
    if (a[2] == 's') {
        if (!*val) {
            usage_error("%s", "--socket needs a non-empty path");
            return -1;
        }
        *socket = val;
        return 1;
    }
    char *end;
    errno = 0;
    double t = strtod(val, &end);
    if (errno || end == val || *end || !isfinite(t) || t <= 0 || t > 86400) {
        usage_error("--timeout: '%s' is not a number of seconds in (0, 86400]", val);
        return -1;
    }
    *timeout_s = t;
    return 1;
}

int main(int argc, char **argv)
{
    const char *socket = getenv("GPUAGG_SOCKET");
    if (!socket || !*socket)
        socket = DEFAULT_SOCKET;
    double timeout_s = DEFAULT_TIMEOUT_S;
    int json = 0;
    const char *cmdname = NULL;
    const char *extra = NULL;
    int nrest = 0;              /* a data command's own arguments, compacted into argv[1..] */

    for (int i = 1; i < argc; i++) {
        int g = global_option(argc, argv, &i, &socket, &timeout_s, &json);
        if (g < 0)
            return EXIT_USAGE;
        if (g > 0)
            continue;
        const char *a = argv[i];
        if (strcmp(a, "--version") == 0 || strcmp(a, "-V") == 0) {
            printf("gpuaggctl %s (control protocol %d)\n", GA_VERSION, CTL_PROTO_VERSION);
            return EXIT_OK;
        }
        if (strcmp(a, "--help") == 0 || strcmp(a, "-h") == 0) {
            usage(stdout);
            return EXIT_OK;
        }
        if (cmdname == NULL && (strcmp(a, "resample") == 0 || strcmp(a, "job") == 0)) {
            struct ctl_opts o = { .socket = socket, .timeout_s = timeout_s, .json = json };
            return a[0] == 'r' ? run_resample(argc - i, argv + i, &o)
                               : ctl_job_main(argc - i, argv + i, &o);
        }
        if (cmdname != NULL && ctl_is_data_command(cmdname)) {
            argv[1 + nrest++] = argv[i];     /* 1 + nrest <= i: already read */
            continue;
        }
        if (a[0] == '-' && a[1] != '\0')
            return usage_error("unknown option '%s'", a);
        if (cmdname == NULL)
            cmdname = a;
        else if (extra == NULL)
            extra = a;
    }
    if (cmdname == NULL)
        return usage_error("%s", "no command given");
    if (strcmp(cmdname, "help") == 0) {
        usage(stdout);
        return EXIT_OK;
    }
    if (ctl_is_data_command(cmdname)) {
        struct ctl_opts o = { .socket = socket, .timeout_s = timeout_s, .json = json };
        return ctl_data_command(cmdname, nrest, argv + 1, &o);
    }
    for (size_t k = 0; k < NCOMMANDS; k++) {
        if (strcmp(cmdname, commands[k].name) != 0)
            continue;
        if (extra)
            return usage_error("unexpected argument '%s'", extra);
        return run_command(&commands[k], socket, timeout_s, json);
    }
    return usage_error("unknown command '%s'", cmdname);
}
