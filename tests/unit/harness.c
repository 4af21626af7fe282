/* harness.c — see harness.h. */
#include "tests/unit/harness.h"

#include <libgen.h>
#include <stdarg.h>
#include <stdlib.h>

static int failed_checks, passed, failed;

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
    fn();
    if (failed_checks == before) {
        passed++;
    } else {
        failed++;
        fprintf(stderr, "  FAILED %s\n", name);
    }
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
    setenv("GA_LOG_NO_TS", "1", 1);
    run_tests();
    printf("%s: %d passed, %d failed\n", basename(argv[0]), passed, failed);
    return failed ? 1 : 0;
}
