/* job.c — `gpuaggctl job ...` and the submit / wait / fetch steps that
 * `gpuaggctl resample` shares (see job.h). */
#include "tools/gpuaggctl/job.h"

#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "proto/ctl_proto.h"
#include "proto/ga_err.h"
#include "proto/mp_util.h"
#include "tools/gpuaggctl/output.h"

#define INLINE_SLACK 1024                /* the envelope around a job.submit's args */

/* One call; prints a failure.  Returns EXIT_OK or the exit code. */
static int call(struct ctl_client *c, const char *who, const char *op, const msgpack_sbuffer *a,
                struct ctl_reply *r, int quiet)
{
    char err[256];
    if (ctl_client_call(c, op, a ? a->data : NULL, a ? a->size : 0, r, err, sizeof err) < 0) {
        fprintf(stderr, "%s: %s\n", who, err);
        return EXIT_COMM;
    }
    if (!r->ok) {
        if (!quiet)
            fprintf(stderr, "%s: %s (%s)\n", who, r->message, r->name);
        return EXIT_DAEMON;
    }
    return EXIT_OK;
}

/* ---- input: by path or inline ------------------------------------------------ */

/* 1 if the resolved file lies in one of the daemon's jobs.input_dirs. */
static int in_input_dir(struct ctl_client *c, const char *resolved)
{
    struct ctl_reply r;
    if (call(c, "gpuaggctl", "config.get", NULL, &r, 1) != EXIT_OK)
        return 0;
    const msgpack_object *jobs = mp_map_get(r.result, "jobs");
    const msgpack_object *dirs = jobs ? mp_map_get(jobs, "input_dirs") : NULL;
    if (!dirs || dirs->type != MSGPACK_OBJECT_ARRAY)
        return 0;
    size_t rl = strlen(resolved);
    for (uint32_t i = 0; i < dirs->via.array.size; i++) {
        const msgpack_object *o = &dirs->via.array.ptr[i];
        char dir[PATH_MAX], real[PATH_MAX];
        if (o->type != MSGPACK_OBJECT_STR || o->via.str.size >= sizeof dir)
            continue;
        memcpy(dir, o->via.str.ptr, o->via.str.size);
        dir[o->via.str.size] = '\0';
        if (!realpath(dir, real))
            continue;
        size_t dl = strlen(real);
        if (strncmp(resolved, real, dl) == 0 && rl > dl && (resolved[dl] == '/' || dl == 1))
            return 1;
    }
    return 0;
}

/* The whole of f (malloc'ed); NULL with errno on failure. */
static char *slurp(FILE *f, size_t *len)
{
    size_t cap = 65536, n = 0;
    char *b = malloc(cap);
    while (b) {
        n += fread(b + n, 1, cap - n, f);
        if (n < cap)
            break;
        char *nb = realloc(b, cap *= 2);
        if (!nb)
            free(b);
        b = nb;
    }
    if (b && ferror(f)) {
        free(b);
        errno = EIO;
        return NULL;
    }
    *len = n;
    return b;
}

static void pack_args(msgpack_packer *pk, const struct ctl_job_spec *s, const char *path,
                      const char *data, size_t len)
{
    msgpack_pack_map(pk, 3 + (path || data));
    mp_pack_kv_str(pk, "kind", s->kind);
    mp_pack_cstr(pk, "params");
    msgpack_pack_map(pk, (size_t)s->nparams);
    for (int i = 0; i < s->nparams; i++)
        mp_pack_kv_str(pk, s->key[i], s->value[i]);
    mp_pack_kv_int(pk, "priority", s->priority);
    if (path) {
        mp_pack_kv_str(pk, "input_path", path);
    } else if (data) {
        mp_pack_cstr(pk, "input");
        msgpack_pack_bin_with_body(pk, len ? data : "", len);
    }
}

/* Open a file to send inline: a regular file only (not a device, FIFO or
 * directory), and, when run as root, only one that every user may read —
 * root reads any file, and the daemon would run the job on it (a secret
 * file's bytes would reach the job's input).  NULL with the reason printed. */
static FILE *open_inline(const char *path, const char *who)
{
    struct stat sb;
    int fd = open(path, O_RDONLY | O_CLOEXEC | O_NOCTTY | O_NONBLOCK);
    if (fd < 0) {
        fprintf(stderr, "%s: %s: %s\n", who, path, strerror(errno));
        return NULL;
    }
    const char *why = NULL;
    if (fstat(fd, &sb) < 0)
        why = strerror(errno);
    else if (!S_ISREG(sb.st_mode))
        why = "not a regular file: only regular files are sent inline";
    else if (geteuid() == 0 && !(sb.st_mode & S_IROTH))
        why = "not readable by every user: run as root, gpuaggctl sends only such files inline "
              "(run it as a user who may read the file, or put the file in one of the daemon's "
              "jobs.input_dirs)";
    FILE *f = why ? NULL : fdopen(fd, "rb");
    if (!f) {
        fprintf(stderr, "%s: %s: %s\n", who, path, why ? why : strerror(errno));
        close(fd);
    }
    return f;
}

int ctl_job_submit(struct ctl_client *c, const struct ctl_job_spec *s, const char *who,
                   uint64_t *id)
{
    char resolved[PATH_MAX], *data = NULL;
    const char *path = NULL;
    size_t len = 0;
    int code = EXIT_OK;
    if (s->input && strcmp(s->input, "-") != 0 && realpath(s->input, resolved) &&
        in_input_dir(c, resolved)) {
        path = resolved;
    } else if (s->input) {
        FILE *f = strcmp(s->input, "-") == 0 ? stdin : open_inline(s->input, who);
        if (!f)
            return EXIT_DAEMON;
        data = slurp(f, &len);
        if (f != stdin)
            fclose(f);
        if (!data) {
            fprintf(stderr, "%s: %s: %s\n", who, s->input, strerror(errno));
            return EXIT_DAEMON;
        }
    }
    msgpack_sbuffer sb;
    msgpack_packer pk;
    msgpack_sbuffer_init(&sb);
    msgpack_packer_init(&pk, &sb, msgpack_sbuffer_write);
    pack_args(&pk, s, path, data, len);
    if (sb.size + INLINE_SLACK > CTL_MAX_FRAME) {
        fprintf(stderr, "%s: %s is %zu bytes, too big to send inline (a request is at most %u "
                "bytes): put it in one of the daemon's jobs.input_dirs\n", who,
                strcmp(s->input, "-") ? s->input : "stdin", len, CTL_MAX_FRAME);
        code = EXIT_DAEMON;
    } else {
        struct ctl_reply r;
        uint64_t v = 0;
        code = call(c, who, "job.submit", &sb, &r, 0);
        if (code == EXIT_OK && mp_get_uint(r.result, "id", &v) < 0) {
            fprintf(stderr, "%s: job.submit: no id in the response\n", who);
            code = EXIT_COMM;
        }
        *id = v;
    }
    msgpack_sbuffer_destroy(&sb);
    free(data);
    return code;
}

/* ---- waiting ------------------------------------------------------------------ */

static void copy_str(const msgpack_object *map, const char *key, char *buf, size_t cap)
{
    const char *s = "";
    size_t n = 0;
    mp_get_str(map, key, &s, &n);
    snprintf(buf, cap, "%.*s", (int)n, s);
}

static void draw_bar(uint64_t id, const char *state, double pct)
{
    char bar[41];
    int full = (int)(pct / 2.5);
    for (int i = 0; i < 40; i++)
        bar[i] = i < full ? '#' : '.';
    bar[40] = '\0';
    fprintf(stderr, "\r[%s] %5.1f%% job %" PRIu64 " %s\033[K", bar, pct, id, state);
    fflush(stderr);
}

int ctl_job_wait(struct ctl_client *c, uint64_t id, const char *who, char *state, size_t scap,
                 char *error, size_t ecap)
{
    int tty = isatty(2), drawn = 0;
    long delay_ms = 10;
    for (;;) {
        msgpack_sbuffer sb;
        msgpack_packer pk;
        struct ctl_reply r;
        msgpack_sbuffer_init(&sb);
        msgpack_packer_init(&pk, &sb, msgpack_sbuffer_write);
        msgpack_pack_map(&pk, 1);
        mp_pack_kv_uint(&pk, "id", id);
        int code = call(c, who, "job.status", &sb, &r, 0);
        msgpack_sbuffer_destroy(&sb);
        if (code != EXIT_OK) {
            if (drawn)
                fputs("\n", stderr);
            return code;
        }
        double pct = 0;
        mp_get_double(r.result, "progress", &pct);
        copy_str(r.result, "state", state, scap);
        copy_str(r.result, "error", error, ecap);
        if (tty) {
            draw_bar(id, state, pct);
            drawn = 1;
        }
        if (strcmp(state, "queued") != 0 && strcmp(state, "running") != 0)
            break;
        struct timespec ts = { 0, delay_ms * 1000000L };
        nanosleep(&ts, NULL);
        if (delay_ms < 200)
            delay_ms *= 2;
    }
    if (drawn)
        fputs("\r\033[K", stderr);
    return EXIT_OK;
}

/* ---- fetching the result --------------------------------------------------- */

static int result_call(struct ctl_client *c, uint64_t id, int chunked, uint64_t offset,
                       const char *who, struct ctl_reply *r, int quiet)
{
    msgpack_sbuffer sb;
    msgpack_packer pk;
    msgpack_sbuffer_init(&sb);
    msgpack_packer_init(&pk, &sb, msgpack_sbuffer_write);
    msgpack_pack_map(&pk, 1 + chunked);
    mp_pack_kv_uint(&pk, "id", id);
    if (chunked)
        mp_pack_kv_uint(&pk, "offset", offset);
    int code = call(c, who, "job.result", &sb, r, quiet);
    msgpack_sbuffer_destroy(&sb);
    return code;
}

int ctl_job_fetch(struct ctl_client *c, uint64_t id, const char *who, msgpack_unpacked *u,
                  char **buf, int64_t *code, int quiet)
{
    struct ctl_reply r;
    msgpack_sbuffer sb;
    msgpack_packer pk;
    msgpack_sbuffer_init(&sb);
    msgpack_packer_init(&pk, &sb, msgpack_sbuffer_write);
    int ex = result_call(c, id, 0, 0, who, &r, 1);
    *code = ex == EXIT_DAEMON ? r.code : 0;
    if (ex == EXIT_OK) {
        msgpack_pack_object(&pk, *r.result);          /* out of the client's zone */
    } else if (ex == EXIT_DAEMON && r.code == GA_ETOOBIG) {
        uint64_t off = 0;
        for (;;) {
            if ((ex = result_call(c, id, 1, off, who, &r, 0)) != EXIT_OK)
                break;
            const msgpack_object *data = mp_map_get(r.result, "data");
            const msgpack_object *next = mp_map_get(r.result, "next");
            if (!data || data->type != MSGPACK_OBJECT_BIN) {
                fprintf(stderr, "%s: job.result: a chunk without data\n", who);
                ex = EXIT_COMM;
                break;
            }
            msgpack_sbuffer_write(&sb, data->via.bin.ptr, data->via.bin.size);
            off += data->via.bin.size;
            if (!next || next->type != MSGPACK_OBJECT_POSITIVE_INTEGER)
                break;
        }
        *code = ex == EXIT_DAEMON ? r.code : 0;
    } else if (ex == EXIT_DAEMON && !quiet) {
        fprintf(stderr, "%s: %s (%s)\n", who, r.message, r.name);
    }
    if (ex == EXIT_OK) {
        size_t off = 0;
        if (!sb.data || msgpack_unpack_next(u, sb.data, sb.size, &off) != MSGPACK_UNPACK_SUCCESS) {
            fprintf(stderr, "%s: job.result: the result does not decode\n", who);
            ex = EXIT_COMM;
        }
    }
    if (ex == EXIT_OK) {
        *buf = msgpack_sbuffer_release(&sb);           /* u's strings point into it */
        return ex;
    }
    *buf = NULL;
    msgpack_sbuffer_destroy(&sb);
    return ex;
}
