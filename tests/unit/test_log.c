/* test_log.c — daemon/log.c: syslog priorities when stderr is the journal,
 * and values escaped so that every line stays key=value. */
#include <fcntl.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <unistd.h>

#include "daemon/log.h"
#include "tests/unit/harness.h"

static char line[4096];

static const char *fmt_line(size_t cap, int level, int journal, const char *event, const char *fmt,
                            ...)
{
    va_list ap;
    va_start(ap, fmt);
    size_t n = ga_log_format(line, cap, level, journal, 0, event, fmt, ap);
    va_end(ap);
    if (n == 0 || line[n - 1] != '\n')
        return "(no newline)";
    line[n - 1] = '\0';
    return line;
}

static void test_priorities(void)
{
    CHECK_STR(fmt_line(sizeof line, GA_LOG_ERROR, 1, "e", "a=%d", 1), "<3>level=error event=e a=1");
    CHECK_STR(fmt_line(sizeof line, GA_LOG_WARN, 1, "w", NULL), "<4>level=warn event=w");
    CHECK_STR(fmt_line(sizeof line, GA_LOG_INFO, 1, "i", ""), "<6>level=info event=i");
    CHECK_STR(fmt_line(sizeof line, GA_LOG_DEBUG, 1, "d", "x=y"), "<7>level=debug event=d x=y");
    CHECK_STR(fmt_line(sizeof line, GA_LOG_ERROR, 0, "e", "a=%d", 1), "level=error event=e a=1");
}

static void test_escaping(void)
{
    /* inside a quoted value: quotes, backslashes, control bytes */
    CHECK_STR(fmt_line(sizeof line, GA_LOG_WARN, 0, "x", "msg=\"%s\" n=%d", "say \"hi\"\\\n\x01", 2),
              "level=warn event=x msg=\"say \\\"hi\\\"\\\\\\n\\x01\" n=2");
    /* a bare value with a space gets quoted whole; a plain one does not */
    CHECK_STR(fmt_line(sizeof line, GA_LOG_INFO, 0, "x", "path=%s mode=%s", "/a b/c", "0660"),
              "level=info event=x path=\"/a b/c\" mode=0660");
    CHECK_STR(fmt_line(sizeof line, GA_LOG_INFO, 0, "x", "a=%s b=%s", "", "k=v"),
              "level=info event=x a=\"\" b=\"k=v\"");
    /* mid-value: spaces escaped, the field stays one token */
    CHECK_STR(fmt_line(sizeof line, GA_LOG_INFO, 0, "x", "a=%s/%s", "p", "q r"),
              "level=info event=x a=p/q\\x20r");
    /* numbers, widths, precision, %% pass through as printf has them */
    CHECK_STR(fmt_line(sizeof line, GA_LOG_INFO, 0, "x", "u=%" PRIu64 " z=%zu w=%*d p=%.*s f=%.2f o=%04o c=%c pct=%%",
                       (uint64_t)18446744073709551615ull, (size_t)7, 4, 5, 3, "abcdef", 1.5, 0660, 'q'),
              "level=info event=x u=18446744073709551615 z=7 w=   5 p=abc f=1.50 o=0660 c=q pct=%");
    CHECK_STR(fmt_line(sizeof line, GA_LOG_INFO, 0, "x", "s=%s", (char *)NULL),
              "level=info event=x s=(null)");
}

static void test_truncation(void)
{
    char big[3000];
    memset(big, 'a', sizeof big - 1);
    big[sizeof big - 1] = '\0';
    const char *l = fmt_line(200, GA_LOG_ERROR, 1, "big", "first=1 msg=\"%s\" last=2", big);
    CHECK_STR(l, "<3>level=error event=big first=1 truncated=1");
    CHECK(strlen(l) < 200);
}

static void test_journal_stream(void)
{
    char path[] = "/tmp/test_log_XXXXXX";
    int fd = mkstemp(path);
    CHECK(fd >= 0);
    if (fd < 0)
        return;
    struct stat st;
    fstat(fd, &st);
    char env[64];
    snprintf(env, sizeof env, "%llu:%llu", (unsigned long long)st.st_dev, (unsigned long long)st.st_ino);
    CHECK_INT(ga_log_journal_stream_matches(env, fd), 1);
    snprintf(env, sizeof env, "%llu:%llu", (unsigned long long)st.st_dev, (unsigned long long)st.st_ino + 1);
    CHECK_INT(ga_log_journal_stream_matches(env, fd), 0);
    CHECK_INT(ga_log_journal_stream_matches("12", fd), 0);
    CHECK_INT(ga_log_journal_stream_matches("1:2x", fd), 0);
    CHECK_INT(ga_log_journal_stream_matches(NULL, fd), 0);

    /* ga_log itself: stderr on the file, JOURNAL_STREAM naming it */
    snprintf(env, sizeof env, "%llu:%llu", (unsigned long long)st.st_dev, (unsigned long long)st.st_ino);
    int saved = dup(STDERR_FILENO);
    dup2(fd, STDERR_FILENO);
    setenv("JOURNAL_STREAM", env, 1);
    ga_log_set_journal(-1);
    int lvl = ga_log_get_level();
    ga_log_set_level(GA_LOG_DEBUG);
    ga_log(GA_LOG_ERROR, "t_err", "msg=\"%s\"", "bad \"thing\"");
    ga_log(GA_LOG_INFO, "t_info", "k=%s", "v w");
    ga_log_set_level(lvl);
    dup2(saved, STDERR_FILENO);
    close(saved);
    unsetenv("JOURNAL_STREAM");
    CHECK_INT(ga_log_get_journal(), 1);
    ga_log_set_journal(-1);
    CHECK_INT(ga_log_get_journal(), 0);          /* stderr is not that file any more */
    char got[512] = "";
    ssize_t n = pread(fd, got, sizeof got - 1, 0);
    got[n > 0 ? n : 0] = '\0';
    CHECK_CONTAINS(got, "<3>level=error event=t_err msg=\"bad \\\"thing\\\"\"\n");
    CHECK_CONTAINS(got, "<6>level=info event=t_info k=\"v w\"\n");
    close(fd);
    unlink(path);
}

void run_tests(void)
{
    RUN(test_priorities);
    RUN(test_escaping);
    RUN(test_truncation);
    RUN(test_journal_stream);
}
