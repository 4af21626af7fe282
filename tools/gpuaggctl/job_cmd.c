/* job_cmd.c — `gpuaggctl job submit|status|result|cancel|list` (see job.h,
 * docs/gpuaggctl.1). */
#include <errno.h>
#include <getopt.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "proto/ga_err.h"
#include "proto/mp_util.h"
#include "tools/gpuaggctl/job.h"
#include "tools/gpuaggctl/opts.h"
#include "tools/gpuaggctl/output.h"

static const char usage_text[] =
"usage: gpuaggctl job submit KIND [--param K=V ...] [--input FILE|-] [--priority N] [--wait] [--json]\n"
"       gpuaggctl job status ID [--json]\n"
"       gpuaggctl job result ID [--json]\n"
"       gpuaggctl job cancel ID [--json]\n"
"       gpuaggctl job list [--json]\n"
"\n"
"Jobs run in gpuaggd (docs/JOBS.md lists the kinds and their parameters).\n"
"  --param K=V   a parameter of the kind (repeat)\n"
"  --input FILE  the job's input: sent by path when FILE lies in one of the\n"
"                daemon's jobs.input_dirs, else inline (at most ~1 MiB); - = stdin\n"
"  --priority N  higher runs first (default 0)\n"
"  --wait        wait for the job (a progress bar when stderr is a terminal)\n"
"                and print its result\n"
"  --json        the result as JSON\n";

struct args {
    const char *sub, *id_text;
    struct ctl_job_spec spec;
    int wait, json;
    uint64_t id;
};

static int usage(const char *fmt, const char *arg)
{
    fputs("gpuaggctl job: ", stderr);
    fprintf(stderr, fmt, arg);
    fputs("\n(see gpuaggctl job --help)\n", stderr);
    return EXIT_USAGE;
}

/* -1 to go on, else the exit code. */
static int parse(int argc, char **argv, struct args *a)
{
    enum { O_JSON = 0x100, O_WAIT, O_PARAM, O_INPUT, O_PRIO };
    static const struct option longopts[] = {
        { "help", no_argument, NULL, 'h' },
        { "json", no_argument, NULL, O_JSON },
        { "wait", no_argument, NULL, O_WAIT },
        { "param", required_argument, NULL, O_PARAM },
        { "input", required_argument, NULL, O_INPUT },
        { "priority", required_argument, NULL, O_PRIO },
        { NULL, 0, NULL, 0 },
    };
    opterr = 0;
    optind = 0;
    for (;;) {
        int c = getopt_long(argc, argv, "+:h", longopts, NULL);
        if (c == -1 && optind >= argc)
            break;
        char *v = optarg;
        switch (c) {
        case -1: {                               /* an operand: the subcommand, then its ID */
            const char *s = argv[optind++];
            if (!a->sub)
                a->sub = s;
            else if (!a->id_text)
                a->id_text = s;
            else
                return usage("unexpected argument '%s'", s);
            break;
        }
        case 'h':
            fputs(usage_text, stdout);
            return EXIT_OK;
        case O_JSON:
            a->json = 1;
            break;
        case O_WAIT:
            a->wait = 1;
            break;
        case O_PARAM: {
            char *eq = strchr(v, '=');
            if (!eq || eq == v)
                return usage("--param: '%s' is not K=V", v);
            if (a->spec.nparams == CTL_JOB_MAX_PARAMS)
                return usage("%s", "at most 31 --param");
            *eq = '\0';                          /* argv is ours to edit */
            a->spec.key[a->spec.nparams] = v;
            a->spec.value[a->spec.nparams++] = eq + 1;
            break;
        }
        case O_INPUT:
            a->spec.input = v;
            break;
        case O_PRIO: {
            char *end;
            errno = 0;
            long p = strtol(v, &end, 10);
            if (errno || end == v || *end || p < -1000000 || p > 1000000)
                return usage("--priority: '%s' is not a whole number in -1000000..1000000", v);
            a->spec.priority = (int)p;
            break;
        }
        case ':':
            return usage("%s needs a value", ctl_opt_bad(argv));
        default:
            return usage("unknown option '%s'", ctl_opt_bad(argv));
        }
    }
    if (!a->sub)
        return usage("%s", "no subcommand (submit, status, result, cancel, list)");
    int needs_id = strcmp(a->sub, "status") == 0 || strcmp(a->sub, "result") == 0 ||
                   strcmp(a->sub, "cancel") == 0;
    if (strcmp(a->sub, "submit") == 0) {
        if (!a->id_text)
            return usage("%s", "submit: the job's KIND is missing");
        a->spec.kind = a->id_text;
    } else if (needs_id) {
        char *end;
        errno = 0;
        if (!a->id_text)
            return usage("%s: the job ID is missing", a->sub);
        a->id = strtoull(a->id_text, &end, 10);
        if (errno || end == a->id_text || *end || a->id == 0)
            return usage("'%s' is not a job id", a->id_text);
    } else if (strcmp(a->sub, "list") == 0) {
        if (a->id_text)
            return usage("unexpected argument '%s'", a->id_text);
    } else {
        return usage("unknown subcommand '%s'", a->sub);
    }
    if (strcmp(a->sub, "submit") != 0 && (a->wait || a->spec.nparams || a->spec.input))
        return usage("%s", "--wait, --param and --input go with submit");
    return -1;
}

static int print(const msgpack_object *o, int json)
{
    if (json)
        return out_json(stdout, o) < 0 ? EXIT_COMM : EXIT_OK;
    if (o->type == MSGPACK_OBJECT_STR)
        fwrite(o->via.str.ptr, 1, o->via.str.size, stdout);   /* a text result as it is */
    else
        out_tree(stdout, o);
    return EXIT_OK;
}

static int show_result(struct ctl_client *c, uint64_t id, int json)
{
    msgpack_unpacked u;
    char *buf = NULL;
    int64_t code;
    msgpack_unpacked_init(&u);
    int ex = ctl_job_fetch(c, id, "gpuaggctl job result", &u, &buf, &code, 0);
    if (ex == EXIT_OK)
        ex = print(&u.data, json);
    msgpack_unpacked_destroy(&u);
    free(buf);
    return ex;
}

static int simple_call(struct ctl_client *c, const char *op, uint64_t id, int with_id,
                       struct ctl_reply *r)
{
    msgpack_sbuffer sb;
    msgpack_packer pk;
    char err[256];
    msgpack_sbuffer_init(&sb);
    msgpack_packer_init(&pk, &sb, msgpack_sbuffer_write);
    msgpack_pack_map(&pk, with_id);
    if (with_id)
        mp_pack_kv_uint(&pk, "id", id);
    int rc = ctl_client_call(c, op, sb.data, sb.size, r, err, sizeof err);
    msgpack_sbuffer_destroy(&sb);
    if (rc < 0) {
        fprintf(stderr, "gpuaggctl: %s: %s\n", op, err);
        return EXIT_COMM;
    }
    if (!r->ok) {
        fprintf(stderr, "gpuaggctl: %s: %s (%s)\n", op, r->message, r->name);
        return EXIT_DAEMON;
    }
    return EXIT_OK;
}

static void print_list(const msgpack_object *a)
{
    printf("%-6s %-13s %-9s %6s  %-20s %-7s %s\n", "ID", "KIND", "STATE", "PROG", "SUBMITTED",
           "DEVICE", "ERROR");
    for (uint32_t i = 0; a->type == MSGPACK_OBJECT_ARRAY && i < a->via.array.size; i++) {
        const msgpack_object *j = &a->via.array.ptr[i];
        uint64_t id = 0;
        double pct = 0;
        const char *kind = "", *state = "", *sub = "", *dev = "-", *err = "";
        size_t kl = 0, sl = 0, tl = 0, dl = 1, el = 0;
        mp_get_uint(j, "id", &id);
        mp_get_double(j, "progress", &pct);
        mp_get_str(j, "kind", &kind, &kl);
        mp_get_str(j, "state", &state, &sl);
        mp_get_str(j, "submitted", &sub, &tl);
        mp_get_str(j, "device", &dev, &dl);
        mp_get_str(j, "error", &err, &el);
        printf("%-6" PRIu64 " %-13.*s %-9.*s %5.1f%%  %-20.*s %-7.*s %.*s\n", id, (int)kl, kind,
               (int)sl, state, pct, (int)(tl > 19 ? 19 : tl), sub, (int)dl, dev, (int)el, err);
    }
}

static int submit(struct ctl_client *c, struct args *a)
{
    uint64_t id;
    int ex = ctl_job_submit(c, &a->spec, "gpuaggctl job submit", &id);
    if (ex != EXIT_OK)
        return ex;
    if (!a->wait) {
        if (a->json)
            printf("{\n  \"id\": %" PRIu64 "\n}\n", id);
        else
            printf("job %" PRIu64 " submitted (%s)\n", id, a->spec.kind);
        return EXIT_OK;
    }
    char state[32], error[1024];
    if ((ex = ctl_job_wait(c, id, "gpuaggctl job submit", state, sizeof state, error,
                           sizeof error)) != EXIT_OK)
        return ex;
    if (strcmp(state, "done") != 0) {
        fprintf(stderr, "gpuaggctl job submit: job %" PRIu64 " %s%s%s\n", id,
                strcmp(state, "cancelled") == 0 ? "was cancelled" : state, error[0] ? ": " : "",
                error);
        return EXIT_DAEMON;
    }
    return show_result(c, id, a->json);
}

int ctl_job_main(int argc, char **argv, const struct ctl_opts *o)
{
    struct args a = { 0 };
    int ex = parse(argc, argv, &a);
    if (ex >= 0)
        return ex;
    a.json |= o->json;
    struct ctl_client c;
    int rc = ctl_client_connect(&c, o->socket, (int)(o->timeout_s * 1000));
    if (rc < 0) {
        fprintf(stderr, "gpuaggctl: cannot connect to gpuaggd at %s: %s (is the daemon running?)\n",
                o->socket, strerror(-rc));
        ctl_client_close(&c);
        return EXIT_CONNECT;
    }
    struct ctl_reply r;
    if (strcmp(a.sub, "submit") == 0) {
        ex = submit(&c, &a);
    } else if (strcmp(a.sub, "result") == 0) {
        ex = show_result(&c, a.id, a.json);
    } else if (strcmp(a.sub, "status") == 0) {
        if ((ex = simple_call(&c, "job.status", a.id, 1, &r)) == EXIT_OK)
            ex = print(r.result, a.json);
    } else if (strcmp(a.sub, "cancel") == 0) {
        if ((ex = simple_call(&c, "job.cancel", a.id, 1, &r)) == EXIT_OK && a.json) {
            ex = print(r.result, 1);
        } else if (ex == EXIT_OK) {
            char state[32];
            const char *s = "";
            size_t n = 0;
            mp_get_str(r.result, "state", &s, &n);
            snprintf(state, sizeof state, "%.*s", (int)n, s);
            printf("job %" PRIu64 ": %s\n", a.id, strcmp(state, "cancelled") == 0 ? "cancelled"
                   : "cancel requested (it stops at its next progress report)");
        }
    } else if ((ex = simple_call(&c, "job.list", 0, 0, &r)) == EXIT_OK) {
        if (a.json)
            ex = print(r.result, 1);
        else
            print_list(r.result);
    }
    if (fflush(stdout) != 0 && ex == EXIT_OK) {
        fprintf(stderr, "gpuaggctl: writing output: %s\n", strerror(errno));
        ex = EXIT_COMM;
    }
    ctl_client_close(&c);
    return ex;
}
