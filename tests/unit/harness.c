/* harness.c — see harness.h. */
#include "tests/unit/harness.h"

#include <libgen.h>
#include <stdarg.h>
#include <stdlib.h>

static int failed_checks, passed, failed, skipped;
static const char *prog = "test";
static const char *running;              /* the test in harness_run, or NULL */
static int running_skipped;

void harness_fail(const char *file, int line, const char *fmt, ...)
{
    va_list ap;
    fprintf(stderr, "  FAIL %s:%d: ", file, line);
    va_start(ap, fmt);
    vfprintf(stderr, fmt, ap);
    va_end(ap);
    fputc('\n', stderr);
    failed_checks++;
}

void harness_run(const char *name, void (*fn)(void))
{
    int before = failed_checks;
    running = name;
    running_skipped = 0;
    fn();
    running = NULL;
    if (failed_checks != before) {
        failed++;
        fprintf(stderr, "  FAILED %s\n", name);
    } else if (running_skipped) {
        skipped++;
    } else {
        passed++;
    }
}

void harness_skip(const char *fmt, ...)
{
    va_list ap;
    /* stdout, where the closing line goes, so the two stay in order */
    printf("SKIP %s: ", running ? running : prog);
    va_start(ap, fmt);
    vprintf(fmt, ap);
    va_end(ap);
    putchar('\n');
    fflush(stdout);
    if (running)
        running_skipped = 1;
    else
        skipped++;
}

int harness_finish(void)
{
    printf("%s: %d passed, %d failed, %d skipped\n", prog, passed, failed, skipped);
    fflush(stdout);
    return failed ? 1 : 0;
}

FILE *harness_open_data(const char *env, const char *rel)
{
    char path[4096];
    const char *p = getenv(env);
    if (!p || !*p) {
        const char *root = getenv("GA_ROOT");
        snprintf(path, sizeof path, "%s/%s", root && *root ? root : ".", rel);
        p = path;
    }
    FILE *f = fopen(p, "r");
    if (!f)
        harness_fail(__FILE__, __LINE__, "cannot open %s", p);
    return f;
}

uint8_t *harness_unhex(const char *h, size_t *n)
{
    size_t len = strcmp(h, "-") == 0 ? 0 : strlen(h) / 2;
    uint8_t *b = malloc(len + 1);
    for (size_t i = 0; b && i < len; i++) {
        unsigned v;
        sscanf(h + 2 * i, "%2x", &v);
        b[i] = (uint8_t)v;
    }
    if (b)
        b[len] = 0;
    *n = len;
    return b;
}

int main(int argc, char **argv)
{
    (void)argc;
    prog = basename(argv[0]);
    setenv("GA_LOG_NO_TS", "1", 1);
    run_tests();
    return harness_finish();
}
