/* test_http_api.c — the HTTP API's own parsing (daemon/http/api_util.c):
 * Gnocchi's ResourceUUID (vectors from gnocchi.utils.ResourceUUID), the
 * time and timespan forms, Python's str(timedelta), UUID forms. */
#include <stdint.h>
#include <string.h>

#include "daemon/http/api.h"
#include "proto/ga_err.h"
#include "tests/unit/harness.h"

#define S 1000000000LL

static void test_resource_uuid(void)
{
    char out[API_UUID_LEN], why[128];
    CHECK_INT(api_resource_uuid("instance-0001-tap0", "u:p", out, why, sizeof why), 0);
    CHECK_STR(out, "804f50ac-63de-5309-bf73-05984bc96399");
    CHECK_INT(api_resource_uuid("abc", "", out, why, sizeof why), 0);      /* creator None */
    CHECK_STR(out, "237a718e-a520-52be-a378-f51d52f91fed");
    CHECK_INT(api_resource_uuid("{12345678-1234-5678-1234-567812345678}", "x", out, why,
                                sizeof why), 0);
    CHECK_STR(out, "12345678-1234-5678-1234-567812345678");
    CHECK_INT(api_resource_uuid("a/b", "x", out, why, sizeof why), GA_EINVAL);
    CHECK_STR(why, "'/' is not supported in resource id");
    char longid[300];
    memset(longid, 'x', 299);
    longid[299] = '\0';
    CHECK_INT(api_resource_uuid(longid, "x", out, why, sizeof why), GA_EINVAL);
}

static void test_uuid_forms(void)
{
    char out[API_UUID_LEN];
    CHECK_INT(api_uuid_parse("12345678123456781234567812345678", out), 1);
    CHECK_STR(out, "12345678-1234-5678-1234-567812345678");
    CHECK_INT(api_uuid_parse("urn:uuid:12345678-1234-5678-1234-56781234567F", out), 1);
    CHECK_STR(out, "12345678-1234-5678-1234-56781234567f");
    CHECK_INT(api_uuid_parse("vm1/cpu", out), 0);
    CHECK_INT(api_uuid_parse("12345678-1234-5678-1234-5678123456789", out), 0);
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

void run_tests(void)
{
    RUN(test_resource_uuid);
    RUN(test_uuid_forms);
    RUN(test_times);
    RUN(test_spans);
    RUN(test_formats);
}
