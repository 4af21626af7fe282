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

int main(int argc, char **argv)
{
    (void)argc;
    setenv("GA_LOG_NO_TS", "1", 1);
    run_tests();
    printf("%s: %d passed, %d failed\n", basename(argv[0]), passed, failed);
    return failed ? 1 : 0;
}
