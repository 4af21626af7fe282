/* test_ctl_defer.c — the control server's deferred replies with a test op
 * table: replies leave in request order whatever order the work completes
 * in, a deadline answers ETIMEDOUT and drops the late completion, a
 * completion finished on the loop, and a connection closed with work
 * pending (the server is freed only after that work completes: the loop
 * closes cleanly, and the ASan build checks nothing leaks or is used after
 * free). */
#include "tests/unit/harness.h"

#include <pthread.h>
#include <stdlib.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include <msgpack.h>
#include <uv.h>

#include "daemon/control/control.h"
#include "daemon/daemon.h"
#include "proto/ctl_proto.h"
#include "proto/ga_err.h"
#include "proto/mp_frame.h"
#include "proto/mp_util.h"

struct job {
    struct ga_ctl_req *req;
    uint64_t ms;
    int finish;
};

static int fin(struct ga_daemon *d, int rc, msgpack_packer *pk, char *err, size_t errlen)
{
    snprintf(err, errlen, "finished on the loop with %d", rc);
    return rc;
}

static void job_run(void *arg)
{
    struct job *j = arg;
    usleep((useconds_t)(j->ms * 1000));
    if (j->finish) {
        ga_ctl_finish_on_loop(j->req, GA_EDB, fin);
    } else {
        msgpack_sbuffer sb;
        msgpack_packer pk;
        msgpack_sbuffer_init(&sb);
        msgpack_packer_init(&pk, &sb, msgpack_sbuffer_write);
        msgpack_pack_uint64(&pk, j->ms);
        ga_ctl_reply(j->req, 0, &sb, NULL);
        msgpack_sbuffer_destroy(&sb);
    }
    free(j);
}

/* {"ms": N}: reply N after N ms on a blocking thread; "hang" adds a 50 ms
 * deadline; "fin" completes through ga_ctl_finish_on_loop. */
static int defer_op(struct ga_ctl_req *req, const msgpack_object *args, int finish,
                    uint64_t timeout_ms)
{
    struct job *j = calloc(1, sizeof *j);
    if (!j)
        return GA_ENOMEM;
    j->req = req;
    mp_get_uint(args, "ms", &j->ms);
    j->finish = finish;
    ga_ctl_set_timeout(req, timeout_ms, "hung");
    int rc = ga_ctl_run_blocking(req, job_run, j);
    if (rc < 0) {
        free(j);
        return rc;
    }
    return GA_CTL_DEFERRED;
}

static int op_wait(struct ga_daemon *d, const msgpack_object *args, struct ga_ctl_req *req,
                   msgpack_packer *pk, char *err, size_t errlen)
{
    return defer_op(req, args, 0, 0);
}

static int op_hang(struct ga_daemon *d, const msgpack_object *args, struct ga_ctl_req *req,
                   msgpack_packer *pk, char *err, size_t errlen)
{
    return defer_op(req, args, 0, 50);
}

static int op_fin(struct ga_daemon *d, const msgpack_object *args, struct ga_ctl_req *req,
                  msgpack_packer *pk, char *err, size_t errlen)
{
    struct job *j = calloc(1, sizeof *j);
    if (!j)
        return GA_ENOMEM;
    j->req = req;
    j->finish = 1;
    int rc = ga_ctl_run_blocking(req, job_run, j);
    if (rc < 0)
        free(j);
    return rc < 0 ? rc : GA_CTL_DEFERRED;
}

static int op_now(struct ga_daemon *d, const msgpack_object *args, struct ga_ctl_req *req,
                  msgpack_packer *pk, char *err, size_t errlen)
{
    mp_pack_cstr(pk, "now");
    return 0;
}

static const struct ga_ctl_op test_ops[] = {
    { "wait", op_wait }, { "hang", op_hang }, { "fin", op_fin }, { "now", op_now }, { NULL, NULL },
};

/* ---- the client, on its own thread ---------------------------------------- */

struct reply {
    uint64_t id;
    int ok;
    int64_t code;
    uint64_t n;                       /* wait: the ms echoed */
    char text[64];                    /* now: "now"; errors: the message */
};

struct client {
    char path[108];
    struct reply got[16];
    int ngot;
    uv_async_t *done;
};

static int dial(const char *path)
{
    int fd = socket(AF_UNIX, SOCK_STREAM, 0);
    struct sockaddr_un sa = { .sun_family = AF_UNIX };
    snprintf(sa.sun_path, sizeof sa.sun_path, "%s", path);
    if (fd >= 0 && connect(fd, (struct sockaddr *)&sa, sizeof sa) < 0) {
        close(fd);
        return -1;
    }
    struct timeval tv = { .tv_sec = 5 };
    setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
    return fd;
}

static void request(int fd, uint64_t id, const char *op, long ms)
{
    msgpack_sbuffer sb;
    msgpack_packer pk;
    msgpack_sbuffer_init(&sb);
    msgpack_packer_init(&pk, &sb, msgpack_sbuffer_write);
    ctl_pack_request_head(&pk, id, op, ms >= 0);
    if (ms >= 0) {
        msgpack_pack_map(&pk, 1);
        mp_pack_kv_uint(&pk, "ms", (uint64_t)ms);
    }
    ssize_t w = write(fd, sb.data, sb.size);
    (void)w;
    msgpack_sbuffer_destroy(&sb);
}

/* Read n responses into c->got. */
static void read_replies(struct client *c, int fd, int n)
{
    static char buf[65536];
    static size_t len;
    len = 0;
    while (n > 0) {
        size_t fl = 0;
        if (mp_frame_scan((const uint8_t *)buf, len, CTL_MAX_FRAME, &fl) == 1) {
            msgpack_unpacked u;
            msgpack_unpacked_init(&u);
            size_t off = 0;
            if (msgpack_unpack_next(&u, buf, fl, &off) == MSGPACK_UNPACK_SUCCESS) {
                struct reply *r = &c->got[c->ngot++];
                const msgpack_object *res = NULL;
                const char *msg = NULL;
                size_t ml = 0;
                char e[64];
                ctl_parse_response(&u.data, &r->id, &r->ok, &res, &r->code, &msg, &ml, e, sizeof e);
                if (res && res->type == MSGPACK_OBJECT_POSITIVE_INTEGER)
                    r->n = res->via.u64;
                if (res && res->type == MSGPACK_OBJECT_STR)
                    snprintf(r->text, sizeof r->text, "%.*s", (int)res->via.str.size, res->via.str.ptr);
                if (msg)
                    snprintf(r->text, sizeof r->text, "%.*s", (int)ml, msg);
            }
            msgpack_unpacked_destroy(&u);
            memmove(buf, buf + fl, len - fl);
            len -= fl;
            n--;
            continue;
        }
        ssize_t k = read(fd, buf + len, sizeof buf - len);
        if (k <= 0)
            return;
        len += (size_t)k;
    }
}

static void *client_main(void *arg)
{
    struct client *c = arg;
    int fd = dial(c->path);
    if (fd >= 0) {
        /* Completion order 2, 1; replies must come 1, 2, 3, 4. */
        request(fd, 1, "wait", 120);
        request(fd, 2, "wait", 10);
        request(fd, 3, "now", -1);
        request(fd, 4, "frob", -1);
        read_replies(c, fd, 4);
        /* A deadline: ETIMEDOUT at 50 ms, the reply at 200 ms is dropped. */
        request(fd, 5, "hang", 200);
        request(fd, 6, "now", -1);
        read_replies(c, fd, 2);
        usleep(300000);
        request(fd, 7, "fin", -1);
        read_replies(c, fd, 1);
        close(fd);
    }
    /* Closed with work pending: orphaned, completes after the stop. */
    if ((fd = dial(c->path)) >= 0) {
        request(fd, 8, "wait", 150);
        request(fd, 9, "now", -1);
        close(fd);
    }
    usleep(20000);
    uv_async_send(c->done);
    return NULL;
}

static struct ga_control *server;

static void on_client_done(uv_async_t *a)
{
    ga_control_stop(server);
    uv_close((uv_handle_t *)a, NULL);
}

static void test_deferred(void)
{
    uv_loop_t loop;
    uv_loop_init(&loop);
    struct ga_config *cfg = calloc(1, sizeof *cfg);
    struct ga_daemon *d = calloc(1, sizeof *d);
    cfg->storage.pool_size = 2;
    d->cfg = cfg;
    d->loop = &loop;
    struct client c = { 0 };
    char dir[] = "/tmp/gactlXXXXXX";
    CHECK(mkdtemp(dir) != NULL);
    snprintf(c.path, sizeof c.path, "%s/ctl.sock", dir);
    char err[256] = "";
    CHECK_INT(ga_control_start(d, c.path, 0600, test_ops, &server, err, sizeof err), 0);
    uv_async_t done;
    uv_async_init(&loop, &done, on_client_done);
    c.done = &done;
    pthread_t t;
    pthread_create(&t, NULL, client_main, &c);
    uv_run(&loop, UV_RUN_DEFAULT);
    pthread_join(t, NULL);
    CHECK_INT(uv_loop_close(&loop), 0);          /* the server closed everything */

    CHECK_INT(c.ngot, 7);
    static const uint64_t ids[] = { 1, 2, 3, 4, 5, 6, 7 };
    for (int i = 0; i < c.ngot && i < 7; i++)
        CHECK_INT(c.got[i].id, ids[i]);
    CHECK(c.got[0].ok && c.got[0].n == 120);
    CHECK(c.got[1].ok && c.got[1].n == 10);
    CHECK(c.got[2].ok);
    CHECK_STR(c.got[2].text, "now");
    CHECK(!c.got[3].ok && c.got[3].code == GA_EBADOP);
    CHECK(!c.got[4].ok && c.got[4].code == GA_ETIMEDOUT);
    CHECK_STR(c.got[4].text, "hung");
    CHECK(c.got[5].ok);
    CHECK(!c.got[6].ok && c.got[6].code == GA_EDB);
    CHECK_CONTAINS(c.got[6].text, "finished on the loop with -4104");
    CHECK(d->counters.ctl_requests == 9);
    rmdir(dir);
    free(cfg);
    free(d);
}

void run_tests(void)
{
    RUN(test_deferred);
}
