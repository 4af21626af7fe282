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
#include <getopt.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "proto/ctl_proto.h"
#include "proto/ga_err.h"
#include "proto/mp_util.h"
#include "tools/gpuaggctl/client.h"
#include "tools/gpuaggctl/job.h"
#include "tools/gpuaggctl/opts.h"
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

void ctl_usage(FILE *f)
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
#if HAVE_RESAMPLE_LOCAL
    struct ctl_resample_opts ro;
    int ex = ctl_resample_parse(argc, argv, &ro, stdout, stderr);
    if (ex >= 0)
        return ex;                              /* --help, or a usage error */
    if (!ro.local)
        return ctl_resample_job(argc, argv, o);
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
    return ctl_resample_job(argc, argv, o);
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

/* The options of a command without its own: the global ones, also after
 * the command's name; argv[0] is the name.  Returns -1 to go on, with *extra
 * the first operand (NULL if none), else the exit code. */
static int command_options(int argc, char **argv, struct ctl_opts *o, const char **extra)
{
    static const struct option longopts[] = { CTL_GLOBAL_LONGOPTS, { NULL, 0, NULL, 0 } };
    *extra = NULL;
    optind = 0;
    for (;;) {
        int c = getopt_long(argc, argv, CTL_SHORTOPTS, longopts, NULL);
        if (c == -1) {
            if (optind >= argc)
                break;
            if (!*extra)
                *extra = argv[optind];
            optind++;
            continue;
        }
        int ex = ctl_opt_global(c, argv, "", o);
        if (ex >= 0)
            return ex;
    }
    return -1;
}

int main(int argc, char **argv)
{
    static const struct option longopts[] = { CTL_GLOBAL_LONGOPTS, { NULL, 0, NULL, 0 } };
    struct ctl_opts o = { .socket = getenv("GPUAGG_SOCKET"), .timeout_s = DEFAULT_TIMEOUT_S };
    if (!o.socket || !*o.socket)
        o.socket = DEFAULT_SOCKET;

    opterr = 0;                                 /* our messages, exit status 2 */
    int c;
    while ((c = getopt_long(argc, argv, CTL_SHORTOPTS, longopts, NULL)) != -1) {
        int ex = ctl_opt_global(c, argv, "", &o);
        if (ex >= 0)
            return ex;
    }
    if (optind >= argc)
        return usage_error("%s", "no command given");
    const char *cmdname = argv[optind];
    argc -= optind;                             /* argv[0] is now the command */
    argv += optind;
    if (strcmp(cmdname, "resample") == 0)
        return run_resample(argc, argv, &o);
    if (strcmp(cmdname, "job") == 0)
        return ctl_job_main(argc, argv, &o);
    if (ctl_is_data_command(cmdname))
        return ctl_data_command(cmdname, argc, argv, &o);

    const struct command *cmd = NULL;
    for (size_t k = 0; k < NCOMMANDS; k++)
        if (strcmp(cmdname, commands[k].name) == 0)
            cmd = &commands[k];
    const char *extra;
    int ex = command_options(argc, argv, &o, &extra);
    if (ex >= 0)
        return ex;
    if (strcmp(cmdname, "help") == 0) {
        ctl_usage(stdout);
        return EXIT_OK;
    }
    if (!cmd)
        return usage_error("unknown command '%s'", cmdname);
    if (extra)
        return usage_error("unexpected argument '%s'", extra);
    return run_command(cmd, o.socket, o.timeout_s, o.json);
}
