/* test_http_api.c — the HTTP API's own parsing (daemon/http/api_util.c):
 * Gnocchi's ResourceUUID (vectors from gnocchi.utils.ResourceUUID), the
 * time and timespan forms, Python's str(timedelta), UUID forms; the
 * string filter syntax (api_filter_string.c) against what Gnocchi's
 * QueryStringSearchAttrFilter._parse makes of the same text. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "daemon/http/api.h"
#include "daemon/http/api_filter_string.h"
#include "proto/ga_err.h"
#include "proto/uuid.h"
#include "tests/unit/harness.h"

#define S 1000000000LL

static void test_resource_uuid(void)
{
    char out[GA_UUID_STR], why[128];
    CHECK_INT(ga_resource_uuid("instance-0001-tap0", "u:p", out, why, sizeof why), 0);
    CHECK_STR(out, "804f50ac-63de-5309-bf73-05984bc96399");
    CHECK_INT(ga_resource_uuid("abc", "", out, why, sizeof why), 0);      /* creator None */
    CHECK_STR(out, "237a718e-a520-52be-a378-f51d52f91fed");
    CHECK_INT(ga_resource_uuid("{12345678-1234-5678-1234-567812345678}", "x", out, why,
                                sizeof why), 0);
    CHECK_STR(out, "12345678-1234-5678-1234-567812345678");
    CHECK_INT(ga_resource_uuid("a/b", "x", out, why, sizeof why), GA_EINVAL);
    CHECK_STR(why, "'/' is not supported in resource id");
    char longid[300];
    memset(longid, 'x', 299);
    longid[299] = '\0';
    CHECK_INT(ga_resource_uuid(longid, "x", out, why, sizeof why), GA_EINVAL);
}

static void test_uuid_forms(void)
{
    char out[GA_UUID_STR];
    CHECK_INT(ga_uuid_parse("12345678123456781234567812345678", out), 1);
    CHECK_STR(out, "12345678-1234-5678-1234-567812345678");
    CHECK_INT(ga_uuid_parse("urn:uuid:12345678-1234-5678-1234-56781234567F", out), 1);
    CHECK_STR(out, "12345678-1234-5678-1234-56781234567f");
    CHECK_INT(ga_uuid_parse("vm1/cpu", out), 0);
    CHECK_INT(ga_uuid_parse("12345678-1234-5678-1234-5678123456789", out), 0);
}

static void test_times(void)
{
    int64_t ns = 0, now = 1795000000LL * S;
    char why[256];
    CHECK_INT(api_parse_time("2026-11-21T12:00:00", now, &ns, why, sizeof why), 0);
    CHECK_INT(ns, 1795262400LL * S);                       /* naive = UTC, as Aodh sends */
    CHECK_INT(api_parse_time("2026-11-21T13:00:00+01:00", now, &ns, why, sizeof why), 0);
    CHECK_INT(ns, 1795262400LL * S);
    CHECK_INT(api_parse_time("2026-11-21T12:00:00.123456", now, &ns, why, sizeof why), 0);
    CHECK_INT(ns, 1795262400LL * S + 123456000);
    CHECK_INT(api_parse_time("2026-11-21", now, &ns, why, sizeof why), 0);
    CHECK_INT(ns, 1795219200LL * S);
    CHECK_INT(api_parse_time("2026-11-21T12:00", now, &ns, why, sizeof why), 0);
    CHECK_INT(ns, 1795262400LL * S);
    CHECK_INT(api_parse_time("1795262400.5", now, &ns, why, sizeof why), 0);
    CHECK_INT(ns, 1795262400LL * S + S / 2);
    /* a relative form past int64 nanoseconds is refused, not wrapped */
    CHECK_INT(api_parse_time("+101049d", now, &ns, why, sizeof why), GA_EINVAL);
    CHECK(strstr(why, "out of range") != NULL);
    CHECK_INT(api_parse_time("now", now, &ns, why, sizeof why), 0);
    CHECK_INT(ns, now);
    CHECK_INT(api_parse_time("-1 day", now, &ns, why, sizeof why), 0);
    CHECK_INT(ns, now - 86400 * S);
    CHECK_INT(api_parse_time("-5min", now, &ns, why, sizeof why), 0);
    CHECK_INT(ns, now - 300 * S);
    CHECK_INT(api_parse_time("+1h30m", now, &ns, why, sizeof why), 0);
    CHECK_INT(ns, now + 5400 * S);
    CHECK_INT(api_parse_time("yesterday", now, &ns, why, sizeof why), GA_EINVAL);
    CHECK_CONTAINS(why, "Unable to parse timestamp 'yesterday'");
    CHECK_INT(api_parse_time("-1 fortnight", now, &ns, why, sizeof why), GA_EINVAL);
    CHECK_INT(api_parse_time("2026-13-01T00:00:00", now, &ns, why, sizeof why), GA_EINVAL);
    CHECK_INT(api_parse_time("", now, &ns, why, sizeof why), GA_EINVAL);
}

static void test_spans(void)
{
    int64_t ns = 0;
    CHECK_INT(api_parse_span("60", &ns), 0);
    CHECK_INT(ns, 60 * S);
    CHECK_INT(api_parse_span("0.5", &ns), 0);
    CHECK_INT(ns, S / 2);
    CHECK_INT(api_parse_span("1 minute", &ns), 0);
    CHECK_INT(ns, 60 * S);
    CHECK_INT(api_parse_span("1 day, 2 hours", &ns), 0);
    CHECK_INT(ns, 93600 * S);
    CHECK_INT(api_parse_span("0", &ns), GA_EINVAL);
    CHECK_INT(api_parse_span("-60", &ns), GA_EINVAL);
    CHECK_INT(api_parse_span("soon", &ns), GA_EINVAL);
}

static void test_formats(void)
{
    char b[48], iso[40];
    api_timedelta(60 * S, b);
    CHECK_STR(b, "0:01:00");
    api_timedelta(30 * 86400 * S, b);
    CHECK_STR(b, "30 days, 0:00:00");
    api_timedelta(86400 * S + S / 2, b);
    CHECK_STR(b, "1 day, 0:00:00.500000");
    api_iso(1795262400LL * S, iso);
    CHECK_STR(iso, "2026-11-21T12:00:00+00:00");
    api_iso(1795262400LL * S + 250000000, iso);
    CHECK_STR(iso, "2026-11-21T12:00:00.250000+00:00");
}

/* The filter text parses to want (compact JSON, keys sorted).  Gnocchi
 * lists the operands of and/or last first; the order here is the text's,
 * which means the same. */
static void check_filter(const char *text, const char *want)
{
    char why[256];
    json_t *j = api_filter_parse_string(text, why, sizeof why);
    CHECK(j != NULL);
    if (!j) {
        CHECK_STR(why, "");
        return;
    }
    char *got = json_dumps(j, JSON_COMPACT | JSON_SORT_KEYS);
    CHECK_STR(got, want);
    free(got);
    json_decref(j);
}

static void check_filter_bad(const char *text, const char *why_part)
{
    char why[256];
    json_t *j = api_filter_parse_string(text, why, sizeof why);
    CHECK(j == NULL);
    json_decref(j);
    CHECK_CONTAINS(why, why_part);
}

static void test_filter_string(void)
{
    check_filter("host='compute-1'", "{\"=\":{\"host\":\"compute-1\"}}");
    check_filter("flavor_id!='f2' and host=x and display_name like 'db%'",
                 "{\"and\":[{\"!=\":{\"flavor_id\":\"f2\"}},{\"=\":{\"host\":\"x\"}},"
                 "{\"like\":{\"display_name\":\"db%\"}}]}");
    check_filter("(host='a' or project_id=\"p\") and not id in ['x', 'y']",
                 "{\"and\":[{\"or\":[{\"=\":{\"host\":\"a\"}},{\"=\":{\"project_id\":\"p\"}}]},"
                 "{\"not\":{\"in\":{\"id\":[\"x\",\"y\"]}}}]}");
    check_filter("a=1 or b>=2.5 or c=null",
                 "{\"or\":[{\"=\":{\"a\":1.0}},{\">=\":{\"b\":2.5}},{\"=\":{\"c\":null}}]}");
    check_filter("a=1 or b=2 and c=3",          /* and binds tighter */
                 "{\"or\":[{\"=\":{\"a\":1.0}},{\"and\":[{\"=\":{\"b\":2.0}},"
                 "{\"=\":{\"c\":3.0}}]}]}");
    check_filter("started_at >= '2026-01-01' \xe2\x88\xa7 d=true",
                 "{\"\xe2\x88\xa7\":[{\">=\":{\"started_at\":\"2026-01-01\"}},{\"=\":{\"d\":true}}]}");
    check_filter("id=00000000-0000-0000-0000-000000002111",
                 "{\"=\":{\"id\":\"00000000-0000-0000-0000-000000002111\"}}");
    check_filter("x le -3e2", "{\"le\":{\"x\":-300.0}}");
    check_filter("host=='a'", "{\"==\":{\"host\":\"a\"}}");
    check_filter_bad("host='x' and", "expected a value");
    check_filter_bad("host", "expected a comparison operator");
    check_filter_bad("host='x", "unterminated quoted string");
    check_filter_bad("1=2", "expected an attribute name (at char 0)");
    check_filter_bad("a=1)", "expected the end of the filter, found ')' (at char 3)");
    check_filter_bad("(a=1", "expected ')'");
    check_filter_bad("", "expected a value");
}

void run_tests(void)
{
    RUN(test_filter_string);
    RUN(test_resource_uuid);
    RUN(test_uuid_forms);
    RUN(test_times);
    RUN(test_spans);
    RUN(test_formats);
}
