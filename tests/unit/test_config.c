/* test_config.c — gpuaggd configuration: parser, validator (one test per
 * rule), policies and rules, reload, msgpack view, and the shipped
 * etc/gpuaggd.yaml. */
#include "tests/unit/harness.h"

#include <errno.h>
#include <stdlib.h>
#include <unistd.h>

#include "daemon/config/config.h"
#include "proto/base/log.h"
#include "proto/ga_err.h"

#define SEC 1000000000LL
#define MiB (1024LL * 1024)

static struct ga_config cfg, cfg2;
static char err[1024];

/* defaults + parse + validate of a YAML text named "t.yaml". */
static int load(const char *yaml)
{
    ga_config_defaults(&cfg);
    err[0] = '\0';
    int rc = ga_config_parse_string(&cfg, yaml, strlen(yaml), "t.yaml", err, sizeof err);
    return rc < 0 ? rc : ga_config_validate(&cfg, err, sizeof err);
}

/* The YAML must fail with exactly this message. */
#define CHECK_FAILS(yaml, msg) do { CHECK_INT(load(yaml), GA_ECONFIG); CHECK_STR(err, msg); } while (0)
#define CHECK_LOADS(yaml) do { int _rc = load(yaml); CHECK_INT(_rc, 0); \
    if (_rc) fprintf(stderr, "    err: %s\n", err); } while (0)

static const char *etc_path(void)
{
    static char path[GA_PATH_MAX];
    const char *root = getenv("GA_ROOT");
    snprintf(path, sizeof path, "%s%setc/gpuaggd.yaml", root ? root : "", root ? "/" : "");
    return path;
}

/* ---- defaults and the shipped file --------------------------------------- */

static void test_defaults_validate(void)
{
    ga_config_defaults(&cfg);
    CHECK_INT(ga_config_validate(&cfg, err, sizeof err), 0);
    CHECK_STR(cfg.path, "");
    CHECK_STR(cfg.control.socket, "/run/gpuagg/control.sock");
    CHECK_INT(cfg.control.mode, 0660);
    CHECK_STR(cfg.listen.tcp, "127.0.0.1:4951");
    CHECK_STR(cfg.listen.udp, "127.0.0.1:4952");
    CHECK_STR(cfg.storage.conninfo, "dbname=gpuagg");
    CHECK_INT(cfg.journal.segment_bytes, 64 * MiB);
    CHECK_INT(cfg.journal.max_bytes, GA_CONFIG_AUTO);
    CHECK_INT(cfg.storage.writers, GA_CONFIG_AUTO);
    CHECK_INT(cfg.engine.workers, GA_CONFIG_AUTO);
    CHECK_INT(cfg.limits.max_metrics, 0);
    CHECK_INT(cfg.limits.max_future_s, 86400);
    CHECK_INT(cfg.http.header_timeout_s, 10);
    CHECK_INT(cfg.http.max_connections_per_peer, 16);
    CHECK_INT(cfg.sizing.done, 0);
    CHECK_INT(cfg.gpu.all, 1);
    CHECK_INT(cfg.gpu.streams, 2);
    CHECK_STR(cfg.default_policy, "ceilometer-low");
    CHECK_INT(cfg.nrules, 13);
}

static void test_etc_file_loads_and_validates(void)
{
    int rc = ga_config_load(&cfg, etc_path(), err, sizeof err);
    CHECK_INT(rc, 0);
    if (rc)
        fprintf(stderr, "    err: %s\n", err);
    CHECK_CONTAINS(cfg.path, "etc/gpuaggd.yaml");
}

/* Every key is in the file, and its value there is the default. */
static void test_etc_file_shows_every_key_with_its_default(void)
{
    CHECK_INT(ga_config_load(&cfg, etc_path(), err, sizeof err), 0);
    ga_config_defaults(&cfg2);
    for (int i = 0; i < ga_config_nkeys; i++) {
        const struct ga_config_key *k = &ga_config_keys[i];
        if (ga_config_key_line(&cfg, k->key) <= 0)
            harness_fail(__FILE__, __LINE__, "key %s missing from etc/gpuaggd.yaml", k->key);
        const char *a = (const char *)&cfg + k->off, *b = (const char *)&cfg2 + k->off;
        int same;
        if (k->type == GA_K_STR || k->type == GA_K_SOCK)
            same = strcmp(a, b) == 0;
        else if (k->type == GA_K_DEVICES)
            same = cfg.gpu.all == cfg2.gpu.all && cfg.gpu.ndevices == cfg2.gpu.ndevices;
        else if (k->type == GA_K_DIRS)
            same = cfg.jobs.ninput_dirs == cfg2.jobs.ninput_dirs;
        else if (k->type == GA_K_POLICIES)
            same = cfg.npolicies == cfg2.npolicies;
        else if (k->type == GA_K_RULES) {
            same = cfg.nrules == cfg2.nrules;
            for (int r = 0; same && r < cfg.nrules; r++)
                same = !strcmp(cfg.rules[r].pattern, cfg2.rules[r].pattern) &&
                       !strcmp(cfg.rules[r].policy, cfg2.rules[r].policy);
        } else
            same = memcmp(a, b, k->size) == 0;
        if (!same)
            harness_fail(__FILE__, __LINE__, "etc/gpuaggd.yaml value of %s differs from the default", k->key);
    }
}

/* The shipped rules follow Ceilometer's gnocchi_resources.yaml. */
static void test_etc_rules_match_ceilometer(void)
{
    static const char *const rate[] = {
        "inst-1/cpu", "tap0/network.incoming.bytes", "tap0/network.outgoing.bytes",
        "tap0/network.incoming.packets", "tap0/network.outgoing.packets.drop",
        "tap0/network.incoming.packets.error", "vda/disk.device.read.bytes",
        "vda/disk.device.write.bytes", "vda/disk.device.read.requests",
        "vda/disk.device.write.requests",
    };
    static const char *const low[] = {
        "inst-1/cpu_l3_cache", "inst-1/memory.usage", "inst-1/vcpus", "vda/disk.device.latency",
        "img/image.size", "cpu",
    };
    CHECK_INT(ga_config_load(&cfg, etc_path(), err, sizeof err), 0);
    for (size_t i = 0; i < sizeof rate / sizeof rate[0]; i++)
        CHECK_STR(ga_config_policy_for(&cfg, rate[i])->name, "ceilometer-low-rate");
    for (size_t i = 0; i < sizeof low / sizeof low[0]; i++)
        CHECK_STR(ga_config_policy_for(&cfg, low[i])->name, "ceilometer-low");
}

static void test_missing_file(void)
{
    CHECK_INT(ga_config_load(&cfg, "no/such/gpuaggd.yaml", err, sizeof err), GA_ECONFIG);
    CHECK_CONTAINS(err, "no/such/gpuaggd.yaml: cannot open: ");
}

/* A real file: messages carry its name and the key's line. */
static void test_file_error_names_file_and_line(void)
{
    char path[] = "/tmp/gpuagg-test-config-XXXXXX";
    int fd = mkstemp(path);
    CHECK(fd >= 0);
    if (fd < 0)
        return;
    const char *y = "# a comment\nlog:\n  level: info\n\nlisten:\n  unix: /run/x.sock\n"
                    "  tcp: \"127.0.0.1:70000\"\n";
    CHECK_INT(write(fd, y, strlen(y)), (long long)strlen(y));
    close(fd);
    CHECK_INT(ga_config_load(&cfg, path, err, sizeof err), GA_ECONFIG);
    char want[256];
    snprintf(want, sizeof want, "%s:7: listen.tcp: port 70000 out of range 0..65535", path);
    CHECK_STR(err, want);
    unlink(path);
}

/* ---- parsing ------------------------------------------------------------- */

static void test_parse_every_scalar_kind(void)
{
    CHECK_LOADS("log: {level: warn}\n"
                "control: {socket: /tmp/c.sock, mode: 0640}\n"
                "listen: {unix: '', tcp: '[::1]:0', udp: '', telemetry_secret: s3, token: t0k}\n"
                "storage:\n"
                "  conninfo: host=db dbname=x\n"
                "  flush_interval_ms: 2s\n"
                "  flush_rows: 5000\n"
                "  retry_initial_ms: 100ms\n"
                "journal: {dir: /j, segment_bytes: 16 MiB, max_bytes: 1GiB, fsync_interval_ms: 10}\n"
                "gpu: {devices: [1, 0], streams: 4, staging_bytes: 2097152, cpu_threads: 3}\n"
                "limits: {idle_timeout_s: 5min, max_frame_bytes: 1MB}\n"
                "jobs: {input_dirs: [/data, /srv/in], workers: 2}\n");
    CHECK_INT(cfg.log.level, GA_LOG_WARN);
    CHECK_STR(cfg.control.socket, "/tmp/c.sock");
    CHECK_INT(cfg.control.mode, 0640);
    CHECK_STR(cfg.listen.unix_path, "");
    CHECK_STR(cfg.listen.tcp, "[::1]:0");
    CHECK_STR(cfg.listen.telemetry_secret, "s3");
    CHECK_STR(cfg.listen.token, "t0k");
    CHECK_STR(cfg.storage.conninfo, "host=db dbname=x");
    CHECK_INT(cfg.storage.flush_interval_ms, 2000);
    CHECK_INT(cfg.storage.flush_rows, 5000);
    CHECK_INT(cfg.storage.retry_initial_ms, 100);
    CHECK_INT(cfg.storage.retry_max_ms, 30000);          /* untouched: default */
    CHECK_INT(cfg.journal.segment_bytes, 16 * MiB);
    CHECK_INT(cfg.journal.max_bytes, 1024 * MiB);
    CHECK_INT(cfg.gpu.all, 0);
    CHECK_INT(cfg.gpu.ndevices, 2);
    CHECK_INT(cfg.gpu.devices[0], 1);
    CHECK_INT(cfg.gpu.devices[1], 0);
    CHECK_INT(cfg.gpu.staging_bytes, 2 * MiB);
    CHECK_INT(cfg.limits.idle_timeout_s, 300);
    CHECK_INT(cfg.limits.max_frame_bytes, 1000000);
    CHECK_INT(cfg.jobs.ninput_dirs, 2);
    CHECK_STR(cfg.jobs.input_dirs[1], "/srv/in");
    CHECK_INT(cfg.jobs.workers, 2);
}

static void test_mode_quoted_or_not_is_octal(void)
{
    CHECK_LOADS("control:\n  mode: \"0750\"\n");
    CHECK_INT(cfg.control.mode, 0750);
    CHECK_LOADS("control:\n  mode: 600\n");
    CHECK_INT(cfg.control.mode, 0600);
    CHECK_FAILS("control:\n  mode: 0689\n",
                "t.yaml:2: control.mode: expected an octal mode like 0660, got \"0689\"");
}

static void test_gpu_devices_forms(void)
{
    CHECK_LOADS("gpu:\n  devices: none\n");
    CHECK_INT(cfg.gpu.all, 0);
    CHECK_INT(cfg.gpu.ndevices, 0);
    CHECK_LOADS("gpu:\n  devices: all\n");
    CHECK_INT(cfg.gpu.all, 1);
    CHECK_LOADS("gpu:\n  devices:\n    - 3\n");
    CHECK_INT(cfg.gpu.all, 0);
    CHECK_INT(cfg.gpu.ndevices, 1);
    CHECK_INT(cfg.gpu.devices[0], 3);
    CHECK_FAILS("gpu:\n  devices: some\n",
                "t.yaml:2: gpu.devices: expected all, none or a list of device ids, got \"some\"");
    CHECK_FAILS("gpu:\n  devices: [0, x]\n",
                "t.yaml:2: gpu.devices[1]: expected a device id (an integer), got \"x\"");
}

static void test_empty_file_and_empty_section_keep_defaults(void)
{
    CHECK_LOADS("");
    CHECK_STR(cfg.listen.tcp, "127.0.0.1:4951");
    CHECK_LOADS("# only a comment\n");
    CHECK_LOADS("gpu:\nlimits:\n");
    CHECK_INT(cfg.gpu.streams, 2);
}

static void test_key_lines_recorded(void)
{
    CHECK_LOADS("log:\n  level: info\nstorage:\n\n  pool_size: 3\narchive_policy_rules:\n"
                "  - metric_pattern: a*\n    archive_policy_name: low\n");
    CHECK_INT(ga_config_key_line(&cfg, "log"), 1);
    CHECK_INT(ga_config_key_line(&cfg, "log.level"), 2);
    CHECK_INT(ga_config_key_line(&cfg, "storage.pool_size"), 5);
    CHECK_INT(ga_config_key_line(&cfg, "archive_policy_rules[0].archive_policy_name"), 8);
    CHECK_INT(ga_config_key_line(&cfg, "listen.tcp"), 0);
}

static void test_unknown_keys_are_named(void)
{
    CHECK_FAILS("log:\n  level: info\nlisten:\n  tpc: \"127.0.0.1:1\"\n", "t.yaml:4: listen.tpc: unknown key");
    CHECK_FAILS("bogus: 1\n", "t.yaml:1: bogus: unknown key");
    CHECK_FAILS("listen.tcp: x\n", "t.yaml:1: listen.tcp: unknown key");
    CHECK_FAILS("archive_policies:\n  - name: p\n    granularity: 1\n",
                "t.yaml:3: archive_policies[0].granularity: unknown key (expected name, back_window, "
                "definition, aggregation_methods)");
    CHECK_FAILS("archive_policies:\n  - name: p\n    definition:\n      - {granularity: 1, span: 2}\n",
                "t.yaml:4: archive_policies[0].definition[0].span: unknown key (expected granularity, "
                "timespan, points)");
    CHECK_FAILS("archive_policy_rules:\n  - {metric_pattern: x, policy: low}\n",
                "t.yaml:2: archive_policy_rules[0].policy: unknown key (expected metric_pattern, "
                "archive_policy_name)");
}

static void test_duplicate_key(void)
{
    CHECK_FAILS("log:\n  level: info\n  level: debug\n",
                "t.yaml:3: log.level: duplicate key (first at line 2)");
    CHECK_FAILS("gpu: {}\ngpu: {}\n", "t.yaml:2: gpu: duplicate key (first at line 1)");
}

static void test_type_errors(void)
{
    CHECK_FAILS("listen:\n  tcp: [1, 2]\n", "t.yaml:2: listen.tcp: expected a string, got a list");
    CHECK_FAILS("listen:\n  tcp: {a: 1}\n", "t.yaml:2: listen.tcp: expected a string, got a mapping");
    CHECK_FAILS("storage:\n  pool_size: two\n", "t.yaml:2: storage.pool_size: expected an integer, got \"two\"");
    CHECK_FAILS("storage:\n  pool_size:\n", "t.yaml:2: storage.pool_size: expected an integer, got nothing");
    CHECK_FAILS("storage:\n  flush_rows: 99999999999\n",
                "t.yaml:2: storage.flush_rows: 99999999999 is out of range for an integer");
    CHECK_FAILS("storage: 5\n", "t.yaml:1: storage: expected a mapping, got \"5\"");
    CHECK_FAILS("- a\n- b\n", "t.yaml:1: (top level): expected a mapping of sections, got a list");
    CHECK_FAILS("log:\n  level: loud\n",
                "t.yaml:2: log.level: expected debug, info, warn or error, got \"loud\"");
    CHECK_FAILS("jobs:\n  input_dirs: /data\n",
                "t.yaml:2: jobs.input_dirs: expected a list of directories, got \"/data\"");
    CHECK_FAILS("archive_policies: {name: x}\n",
                "t.yaml:1: archive_policies: expected a list of policies, got a mapping");
}

static void test_size_values(void)
{
    static const struct { const char *s; int64_t v; } ok[] = {
        { "1024", 1024 }, { "64KiB", 64 * 1024 }, { "16 MiB", 16 * MiB }, { "1GiB", 1024 * MiB },
        { "10MB", 10000000 }, { "2kb", 2000 }, { "1.5KiB", 1536 }, { "3 B", 3 }, { "1tib", 1024 * 1024 * MiB },
    };
    static const char *const bad[] = { "", "abc", "10XB", "-1", "1 GiBs", "KiB", "1e400" };
    int64_t v;
    for (size_t i = 0; i < sizeof ok / sizeof ok[0]; i++) {
        v = -1;
        CHECK_INT(ga_parse_size(ok[i].s, &v), 0);
        CHECK_INT(v, ok[i].v);
    }
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++)
        if (ga_parse_size(bad[i], &v) != GA_EINVAL)
            harness_fail(__FILE__, __LINE__, "ga_parse_size(\"%s\") accepted", bad[i]);
    CHECK_FAILS("journal:\n  segment_bytes: 12 parsecs\n",
                "t.yaml:2: journal.segment_bytes: bad size \"12 parsecs\" (expected bytes or e.g. 64KiB, "
                "16MiB, 1GiB, 10MB)");
}

static int parse_into(struct ga_config *c, const char *yaml);

/* storage.coarse_delay_ms: 5 s by default, a duration, 0 turns holding
 * off, bounded to 10 minutes, reloaded on SIGHUP. */
static void test_coarse_delay(void)
{
    char changed[512];
    CHECK_LOADS("log: {level: info}\n");
    CHECK_INT(cfg.storage.coarse_delay_ms, 5000);
    CHECK_LOADS("storage: {coarse_delay_ms: 0}\n");
    CHECK_INT(cfg.storage.coarse_delay_ms, 0);
    CHECK_FAILS("storage:\n  coarse_delay_ms: 11min\n",
                "t.yaml:2: storage.coarse_delay_ms: 660000 out of range 0..600000 (milliseconds)");
    CHECK_INT(parse_into(&cfg, "log: {level: info}\n"), 0);
    CHECK_INT(parse_into(&cfg2, "storage: {coarse_delay_ms: 10s}\n"), 0);
    CHECK_INT(ga_config_apply_reload(&cfg, &cfg2, changed, sizeof changed), 0);
    CHECK_INT(cfg.storage.coarse_delay_ms, 10000);
}

static void test_duration_values(void)
{
    CHECK_LOADS("storage: {flush_interval_ms: 1.5s, retry_max_ms: 1min}\nlimits: {slow_client_timeout_s: 2 minutes}\n");
    CHECK_INT(cfg.storage.flush_interval_ms, 1500);
    CHECK_INT(cfg.storage.retry_max_ms, 60000);
    CHECK_INT(cfg.limits.slow_client_timeout_s, 120);
    /* a bare number is in the key's unit; fractions of it are refused */
    CHECK_FAILS("storage:\n  flush_interval_ms: 1.5\n",
                "t.yaml:2: storage.flush_interval_ms: bad duration \"1.5\" (expected whole milliseconds or "
                "e.g. \"250ms\")");
    CHECK_FAILS("limits:\n  idle_timeout_s: 1500ms\n",
                "t.yaml:2: limits.idle_timeout_s: bad duration \"1500ms\" (expected whole seconds or e.g. "
                "\"5min\")");
    CHECK_FAILS("limits:\n  idle_timeout_s: 5 fortnights\n",
                "t.yaml:2: limits.idle_timeout_s: bad duration \"5 fortnights\" (expected whole seconds or "
                "e.g. \"5min\")");
}

static void test_yaml_syntax_error_has_line(void)
{
    CHECK_INT(load("log:\n  level: info\nlisten:\n  tcp: [1, 2\nstorage: {}\n"), GA_ECONFIG);
    CHECK_STR(err, "t.yaml:5: yaml: did not find expected ',' or ']' (while parsing a flow sequence "
              "started at line 4)");
    CHECK_INT(load("a: b: c\n"), GA_ECONFIG);
    CHECK_STR(err, "t.yaml:1: yaml: mapping values are not allowed in this context");
    CHECK_INT(load("log:\n  level: info\n bad\n"), GA_ECONFIG);
    CHECK(strncmp(err, "t.yaml:3: yaml: ", 16) == 0);
    /* a second document is refused, not ignored */
    CHECK_FAILS("log: {level: info}\n---\nlog: {level: debug}\n",
                "t.yaml:3: yaml: a second document; the file must hold exactly one");
    CHECK_LOADS("log: {level: debug}\n...\n");
    CHECK_INT(cfg.log.level, GA_LOG_DEBUG);
}

static void test_socket_path_longer_than_sun_path(void)
{
    char y[512], p[200];
    memset(p, 'a', sizeof p);
    p[0] = '/';
    p[120] = '\0';
    snprintf(y, sizeof y, "control:\n  socket: %s\n", p);
    CHECK_FAILS(y, "t.yaml:2: control.socket: socket path is 120 bytes, longer than sun_path allows (107 max)");
    p[108] = '\0';
    snprintf(y, sizeof y, "listen:\n  unix: %s\n", p);
    CHECK_FAILS(y, "t.yaml:2: listen.unix: socket path is 108 bytes, longer than sun_path allows (107 max)");
    p[107] = '\0';                            /* 107 bytes + NUL fill sun_path */
    snprintf(y, sizeof y, "listen:\n  unix: %s\n", p);
    CHECK_LOADS(y);
}

/* ---- validation: one test per rule --------------------------------------- */

static void test_v_control_socket_absolute(void)
{
    CHECK_FAILS("control:\n  socket: run/c.sock\n",
                "t.yaml:2: control.socket: must be an absolute path, got \"run/c.sock\"");
    CHECK_FAILS("control:\n  socket: \"\"\n", "t.yaml:2: control.socket: must be set");
}

static void test_v_control_mode_range(void)
{
    CHECK_FAILS("control:\n  mode: 1777\n", "t.yaml:2: control.mode: mode 01777 out of range 0..0777");
    CHECK_LOADS("control:\n  mode: 0777\n");
    CHECK_LOADS("control:\n  mode: 0\n");
}

static void test_v_listen_unix_absolute_and_distinct(void)
{
    CHECK_FAILS("listen:\n  unix: ingest.sock\n",
                "t.yaml:2: listen.unix: must be an absolute path, got \"ingest.sock\"");
    CHECK_FAILS("control:\n  socket: /run/a.sock\nlisten:\n  unix: /run/a.sock\n",
                "t.yaml:4: listen.unix: same path as control.socket");
}

static void test_v_listen_port_range(void)
{
    CHECK_FAILS("listen:\n  tcp: \"127.0.0.1:70000\"\n", "t.yaml:2: listen.tcp: port 70000 out of range 0..65535");
    CHECK_FAILS("listen:\n  udp: \"[::]:65536\"\n", "t.yaml:2: listen.udp: port 65536 out of range 0..65535");
    CHECK_LOADS("listen:\n  tcp: \"0.0.0.0:0\"\n  udp: \"[::]:65535\"\n");
}

static void test_v_listen_hostport_syntax(void)
{
    CHECK_FAILS("listen:\n  udp: localhost\n", "t.yaml:2: listen.udp: expected host:port, got \"localhost\"");
    CHECK_FAILS("listen:\n  tcp: \"::1:80\"\n",
                "t.yaml:2: listen.tcp: write IPv6 addresses as [address]:port, got \"::1:80\"");
    CHECK_FAILS("listen:\n  tcp: \":80\"\n",
                "t.yaml:2: listen.tcp: host is empty (use 0.0.0.0 or [::] for every address), got \":80\"");
    CHECK_FAILS("listen:\n  tcp: \"h:8o\"\n", "t.yaml:2: listen.tcp: port is not a number, got \"h:8o\"");
    CHECK_FAILS("listen:\n  tcp: \"[::1]80\"\n", "t.yaml:2: listen.tcp: expected [address]:port, got \"[::1]80\"");
}

static void test_parse_hostport(void)
{
    char host[64];
    int port = -1;
    CHECK_INT(ga_parse_hostport("127.0.0.1:4951", host, sizeof host, &port), 0);
    CHECK_STR(host, "127.0.0.1");
    CHECK_INT(port, 4951);
    CHECK_INT(ga_parse_hostport("[::1]:0", host, sizeof host, &port), 0);
    CHECK_STR(host, "::1");
    CHECK_INT(port, 0);
    CHECK_INT(ga_parse_hostport("db.example:65535", host, sizeof host, &port), 0);
    CHECK_STR(host, "db.example");
    CHECK_INT(ga_parse_hostport("h:65536", host, sizeof host, &port), GA_EINVAL);
    CHECK_INT(ga_parse_hostport("h:", host, sizeof host, &port), GA_EINVAL);
    CHECK_INT(ga_parse_hostport("h", host, sizeof host, &port), GA_EINVAL);
    CHECK_INT(ga_parse_hostport("averylonghostname:1", host, 8, &port), GA_EINVAL);
}

static void test_v_listen_empty_disables_but_one_needed(void)
{
    CHECK_LOADS("listen:\n  tcp: \"\"\n  udp:\n");
    CHECK_STR(cfg.listen.tcp, "");
    CHECK_STR(cfg.listen.udp, "");
    CHECK_FAILS("listen:\n  unix: \"\"\n  tcp: \"\"\n  udp: \"\"\n",
                "t.yaml:1: listen: no ingest listener enabled: set at least one of unix, tcp, udp, ceilometer_tcp");
}

static void test_v_conninfo_non_empty(void)
{
    CHECK_FAILS("storage:\n  conninfo: \"\"\n", "t.yaml:2: storage.conninfo: must not be empty");
}

static void test_v_flush_interval_bounds(void)
{
    CHECK_FAILS("storage:\n  flush_interval_ms: 5\n",
                "t.yaml:2: storage.flush_interval_ms: 5 out of range 10..600000 (milliseconds)");
    CHECK_FAILS("storage:\n  flush_interval_ms: 11min\n",
                "t.yaml:2: storage.flush_interval_ms: 660000 out of range 10..600000 (milliseconds)");
    CHECK_LOADS("storage:\n  flush_interval_ms: 10\n");
    CHECK_FAILS("storage:\n  flush_rows: 0\n", "t.yaml:2: storage.flush_rows: 0 out of range 1..10000000 (rows)");
}

static void test_v_pool_size_bounds(void)
{
    CHECK_FAILS("storage:\n  pool_size: 0\n", "t.yaml:2: storage.pool_size: 0 out of range 1..64 (connections)");
    CHECK_FAILS("storage:\n  pool_size: 65\n", "t.yaml:2: storage.pool_size: 65 out of range 1..64 (connections)");
    CHECK_LOADS("storage:\n  pool_size: 64\n");
}

static void test_v_retry_initial_le_max(void)
{
    CHECK_FAILS("storage:\n  retry_initial_ms: 5000\n  retry_max_ms: 1000\n",
                "t.yaml:2: storage.retry_initial_ms: 5000 is greater than retry_max_ms (1000)");
    CHECK_LOADS("storage:\n  retry_initial_ms: 1000\n  retry_max_ms: 1000\n");
    /* the offending key is a default: the message points at its section */
    CHECK_FAILS("storage:\n  retry_max_ms: 100\n",
                "t.yaml:1: storage.retry_initial_ms: 250 is greater than retry_max_ms (100)");
}

static void test_v_journal_dir_absolute(void)
{
    CHECK_FAILS("journal:\n  dir: var/j\n", "t.yaml:2: journal.dir: must be an absolute path, got \"var/j\"");
    CHECK_FAILS("journal:\n  dir:\n", "t.yaml:2: journal.dir: must be set");
}

static void test_v_journal_sizes(void)
{
    CHECK_FAILS("journal:\n  segment_bytes: 64MiB\n  max_bytes: 100MiB\n",
                "t.yaml:3: journal.max_bytes: 104857600 is less than twice segment_bytes (67108864)");
    CHECK_LOADS("journal:\n  segment_bytes: 64MiB\n  max_bytes: 128MiB\n");
    CHECK_FAILS("journal:\n  segment_bytes: 1000\n",
                "t.yaml:2: journal.segment_bytes: 1000 out of range 1048576..4294967296 (bytes)");
    CHECK_FAILS("journal:\n  fsync_interval_ms: 0\n",
                "t.yaml:2: journal.fsync_interval_ms: 0 out of range 1..60000 (milliseconds)");
}

static void test_v_cluster(void)
{
    /* off by default: the rules apply only with cluster.nats set */
    CHECK_LOADS("cluster:\n  replicas: 9\n");
    CHECK_LOADS("cluster:\n  nats: \"nats://10.0.0.1:4222, nats://10.0.0.2:4222\"\n"
                "  member: a\n");
    CHECK_STR(cfg.cluster.stream, "GPUAGG");
    CHECK_INT(cfg.cluster.replicas, 3);
    CHECK_FAILS("cluster:\n  nats: \"10.0.0.1:4222\"\n",
                "t.yaml:2: cluster.nats: \"10.0.0.1:4222\" is not a NATS URL (nats://host:port "
                "or tls://host:port)");
    CHECK_FAILS("cluster:\n  nats: nats://h:1\n  partitions: 32\n",
                "t.yaml:3: cluster.partitions: 32 out of range 64..64 (partitions (fixed: the "
                "on-disk mapping))");
    CHECK_FAILS("cluster:\n  nats: nats://h:1\n  replicas: 6\n",
                "t.yaml:3: cluster.replicas: 6 out of range 1..5 (replicas)");
    CHECK_FAILS("cluster:\n  nats: nats://h:1\n  stream: \"a.b\"\n",
                "t.yaml:3: cluster.stream: \"a.b\": only letters, digits, '_' and '-' (it is "
                "also the subject prefix)");
    CHECK_FAILS("cluster:\n  nats: nats://h:1\n  stream: \"\"\n",
                "t.yaml:3: cluster.stream: must not be empty");
    CHECK_FAILS("cluster:\n  nats: nats://h:1\n  heartbeat_ms: 1000\n  member_timeout_ms: 1500\n",
                "t.yaml:4: cluster.member_timeout_ms: 1500 is less than twice heartbeat_ms (1000)");
    CHECK_FAILS("cluster:\n  nats: nats://h:1\n  credentials: a.creds\n",
                "t.yaml:3: cluster.credentials: must be an absolute path, got \"a.creds\"");
    /* the token is masked in config.get like the other secrets */
    CHECK_LOADS("cluster:\n  nats: nats://h:1\n  token: s3cret\n");
    CHECK_STR(cfg.cluster.token, "s3cret");
}

static void test_v_gpu_streams_and_staging(void)
{
    CHECK_FAILS("gpu:\n  streams: 1\n", "t.yaml:2: gpu.streams: 1 out of range 2..64 (streams)");
    CHECK_FAILS("gpu:\n  staging_bytes: 512KiB\n",
                "t.yaml:2: gpu.staging_bytes: 524288 out of range 1048576..68719476736 (bytes)");
    CHECK_LOADS("gpu:\n  streams: 2\n  staging_bytes: 1MiB\n");
    CHECK_FAILS("gpu:\n  cpu_threads: -1\n", "t.yaml:2: gpu.cpu_threads: -1 out of range 0..4096 (threads)");
}

static void test_v_gpu_devices(void)
{
    CHECK_FAILS("gpu:\n  devices: [0, 1, 0]\n", "t.yaml:2: gpu.devices[2]: device 0 is listed twice");
    CHECK_FAILS("gpu:\n  devices:\n    - 0\n    - -1\n", "t.yaml:4: gpu.devices[1]: device id -1 is negative");
}

static void test_v_limits(void)
{
    CHECK_FAILS("limits:\n  max_connections: 0\n",
                "t.yaml:2: limits.max_connections: 0 out of range 1..1000000 (connections)");
    CHECK_FAILS("limits:\n  max_connections_per_peer: 0\n",
                "t.yaml:2: limits.max_connections_per_peer: 0 out of range 1..1000000 (connections)");
    CHECK_FAILS("limits:\n  max_frame_bytes: 64MiB\n",
                "t.yaml:2: limits.max_frame_bytes: 67108864 is larger than conn_buffer_bytes (33554432)");
    CHECK_FAILS("limits:\n  conn_buffer_bytes: 2GiB\n",
                "t.yaml:2: limits.conn_buffer_bytes: 2147483648 is larger than memory_budget_bytes (1073741824)");
    CHECK_LOADS("limits:\n  max_frame_bytes: 32MiB\n  conn_buffer_bytes: 1GiB\n");
    CHECK_FAILS("limits:\n  idle_timeout_s: 0\n",
                "t.yaml:2: limits.idle_timeout_s: 0 out of range 1..604800 (seconds)");
    CHECK_FAILS("limits:\n  queue_batches: 0\n",
                "t.yaml:2: limits.queue_batches: 0 out of range 1..1000000 (batches)");
    CHECK_LOADS("limits:\n  max_future_s: 0\n");
    CHECK_INT(cfg.limits.max_future_s, 0);
    CHECK_LOADS("limits:\n  max_future_s: 3650 days\n");
    CHECK_INT(cfg.limits.max_future_s, 3650 * 86400);
    CHECK_FAILS("limits:\n  max_future_s: 3651 days\n",
                "t.yaml:2: limits.max_future_s: 315446400 out of range 0..315360000 (seconds, "
                "0 = no bound but 2200-01-01)");
    CHECK_FAILS("limits:\n  max_future_s: -1\n",
                "t.yaml:2: limits.max_future_s: -1 out of range 0..315360000 (seconds, "
                "0 = no bound but 2200-01-01)");
    /* the HTTP door: a header deadline and a cap an address */
    CHECK_LOADS("http:\n  header_timeout_s: 1\n  max_connections_per_peer: 65536\n");
    CHECK_INT(cfg.http.header_timeout_s, 1);
    CHECK_INT(cfg.http.max_connections_per_peer, 65536);
    CHECK_FAILS("http:\n  header_timeout_s: 0\n",
                "t.yaml:2: http.header_timeout_s: 0 out of range 1..3600 (seconds)");
    CHECK_FAILS("http:\n  max_connections_per_peer: 0\n",
                "t.yaml:2: http.max_connections_per_peer: 0 out of range 1..65536 (connections)");
}

static void test_v_jobs(void)
{
    CHECK_FAILS("jobs:\n  input_dirs:\n    - /data\n    - rel/dir\n",
                "t.yaml:4: jobs.input_dirs[1]: must be an absolute path, got \"rel/dir\"");
    CHECK_FAILS("jobs:\n  workers: 0\n", "t.yaml:2: jobs.workers: 0 out of range 1..256 (workers)");
    CHECK_FAILS("http:\n  auth: kerberos\n",
                "t.yaml:2: http.auth: unknown mode \"kerberos\" (basic, remoteuser, noauth or "
                "keystone)");
    CHECK_FAILS("http:\n  max_connections: 0\n",
                "t.yaml:2: http.max_connections: 0 out of range 1..65536 (connections)");
    CHECK_FAILS("listen:\n  http: \"127.0.0.1:99999\"\n",
                "t.yaml:2: listen.http: port 99999 out of range 0..65535");
    CHECK_FAILS("jobs:\n  max_queued: 0\n", "t.yaml:2: jobs.max_queued: 0 out of range 1..1000000 (jobs)");
}


/* http.auth keystone: the service user and Keystone's URL are required,
 * one password source, the bounds of the cache and of the calls. */
#define KS "http:\n  auth: keystone\n  keystone:\n"
#define KS_OK KS "    auth_url: \"http://ks:5000\"\n    username: gnocchi\n" \
    "    password: pw\n    project_name: service\n"
static void test_v_keystone(void)
{
    CHECK_LOADS(KS_OK);
    CHECK_STR(cfg.http.keystone.auth_url, "http://ks:5000");
    CHECK_STR(cfg.http.keystone.user_domain_name, "Default");
    CHECK_STR(cfg.http.keystone.project_domain_name, "Default");
    CHECK_INT(cfg.http.keystone.token_cache_s, 300);
    CHECK_INT(cfg.http.keystone.cache_entries, 10000);
    CHECK_INT(cfg.http.keystone.timeout_ms, 3000);
    CHECK_INT(cfg.http.keystone.max_validations, 16);
    CHECK_LOADS(KS_OK "    token_cache_s: 5min\n    timeout_ms: 1s\n");
    CHECK_INT(cfg.http.keystone.token_cache_s, 300);
    CHECK_INT(cfg.http.keystone.timeout_ms, 1000);
    /* the section is checked only in keystone mode */
    CHECK_LOADS("http:\n  auth: basic\n  keystone:\n    token_cache_s: 5\n");
    CHECK_FAILS("http:\n  auth: keystone\n",
                "t.yaml:1: http.keystone.auth_url: must be set with http.auth keystone "
                "(Keystone's URL, e.g. http://keystone:5000)");
    CHECK_FAILS(KS "    auth_url: ks:5000\n",
                "t.yaml:4: http.keystone.auth_url: \"ks:5000\" is not an http:// or https:// "
                "URL with a host");
    CHECK_FAILS(KS "    auth_url: \"http://ks:5000/v3\"\n    www_authenticate_uri: \"http://a b\"\n",
                "t.yaml:5: http.keystone.www_authenticate_uri: \"http://a b\": spaces, quotes "
                "and control characters are not allowed in a URL");
    CHECK_FAILS(KS "    auth_url: \"https://ks\"\n    password: pw\n    project_name: s\n",
                "t.yaml:3: http.keystone.username: must be set with http.auth keystone (the "
                "service user that validates tokens)");
    CHECK_FAILS(KS "    auth_url: \"https://ks\"\n    username: u\n    password: pw\n",
                "t.yaml:3: http.keystone.project_name: must be set with http.auth keystone "
                "(the service user that validates tokens)");
    CHECK_FAILS(KS "    auth_url: \"https://ks\"\n    username: u\n    project_name: s\n",
                "t.yaml:3: http.keystone.password: set password or password_file with "
                "http.auth keystone");
    CHECK_FAILS(KS_OK "    password_file: /etc/pw\n",
                "t.yaml:8: http.keystone.password_file: set password or password_file, not both");
    CHECK_FAILS(KS "    auth_url: \"https://ks\"\n    username: u\n    project_name: s\n"
                "    password_file: pw.txt\n",
                "t.yaml:7: http.keystone.password_file: must be an absolute path, got \"pw.txt\"");
    CHECK_FAILS(KS_OK "    user_domain_name: \"\"\n",
                "t.yaml:8: http.keystone.user_domain_name: must be set with http.auth keystone "
                "(the service user that validates tokens)");
    CHECK_FAILS(KS_OK "    token_cache_s: 2 days\n",
                "t.yaml:8: http.keystone.token_cache_s: 172800 out of range 0..86400 (seconds, "
                "0 = validate every request)");
    CHECK_FAILS(KS_OK "    cache_entries: 15\n",
                "t.yaml:8: http.keystone.cache_entries: 15 out of range 16..1000000 (tokens)");
    CHECK_FAILS(KS_OK "    timeout_ms: 50\n",
                "t.yaml:8: http.keystone.timeout_ms: 50 out of range 100..60000 (milliseconds)");
    CHECK_FAILS(KS_OK "    max_validations: 0\n",
                "t.yaml:8: http.keystone.max_validations: 0 out of range 1..1024 (requests)");
    CHECK_FAILS(KS_OK "    tokens: 3\n", "t.yaml:8: http.keystone.tokens: unknown key");
    /* like every http key, a change needs a restart */
    char changed[256];
    CHECK_INT(parse_into(&cfg, KS_OK), 0);
    CHECK_INT(parse_into(&cfg2, KS_OK "    token_cache_s: 60\n"), 0);
    CHECK_INT(ga_config_apply_reload(&cfg, &cfg2, changed, sizeof changed), 1);
    CHECK_STR(changed, "http.keystone.token_cache_s");
    CHECK_INT(cfg.http.keystone.token_cache_s, 300);
}

static void test_v_policy_names_unique(void)
{
    CHECK_FAILS("archive_policies:\n"
                "  - name: p\n    definition: [{granularity: 60, points: 10}]\n"
                "  - name: p\n    definition: [{granularity: 60, points: 10}]\n",
                "t.yaml:4: archive_policies[1].name: policy \"p\" is defined twice (also archive_policies[0])");
}

static void test_v_policy_may_shadow_builtin(void)
{
    CHECK_LOADS("archive_policies:\n"
                "  - name: low\n    definition: [{granularity: 1 minute, timespan: 1 hour}]\n"
                "    aggregation_methods: [max]\n");
    const struct ga_policy *p = ga_config_policy(&cfg, "low");
    CHECK(p == &cfg.policies[0]);
    CHECK_INT(p->defs[0].granularity_ns, 60 * SEC);
    CHECK_INT(p->defs[0].points, 60);
    CHECK(ga_config_policy(&cfg, "medium") == ga_policy_builtin("medium"));
    CHECK(ga_config_policy(&cfg, "nope") == NULL);
}

static void test_v_policy_needs_definition(void)
{
    CHECK_FAILS("archive_policies:\n  - name: p\n    aggregation_methods: [mean]\n",
                "t.yaml:2: archive_policies[0].definition: policy \"p\" has no definition");
    CHECK_FAILS("archive_policies:\n  - name: p\n    definition: []\n",
                "t.yaml:3: archive_policies[0].definition: policy \"p\" has no definition");
}

static void test_v_policy_needs_method(void)
{
    CHECK_FAILS("archive_policies:\n  - name: p\n    definition: [{granularity: 1, points: 5}]\n"
                "    aggregation_methods: [-mean, -min, -max, -sum, -std, -count]\n",
                "t.yaml:4: archive_policies[0].aggregation_methods: policy \"p\" has no aggregation method left");
}

static void test_v_policy_back_window(void)
{
    CHECK_FAILS("archive_policies:\n  - name: p\n    back_window: -1\n    definition: [{granularity: 1, points: 5}]\n",
                "t.yaml:3: archive_policies[0].back_window: -1 is negative");
    /* (back_window + 1) x the largest granularity stays within 36500 days */
    CHECK_LOADS("archive_policies:\n  - name: p\n    back_window: 99\n    definition: [{granularity: 365 days, points: 5}]\n");
    CHECK_FAILS("archive_policies:\n  - name: p\n    back_window: 100\n    definition: [{granularity: 365 days, points: 5}]\n",
                "t.yaml:3: archive_policies[0].back_window: policy \"p\": (back_window + 1) x largest granularity is "
                "longer than 36500 days (the largest accepted)");
    CHECK_FAILS("archive_policies:\n  - name: p\n    back_window: 9223372036854775807\n"
                "    definition: [{granularity: 1, points: 5}]\n",
                "t.yaml:3: archive_policies[0].back_window: policy \"p\": (back_window + 1) x largest granularity is "
                "longer than 36500 days (the largest accepted)");
}

static void test_v_rules_reference_policies(void)
{
    CHECK_FAILS("archive_policy_rules:\n  - metric_pattern: \"*\"\n    archive_policy_name: nope\n",
                "t.yaml:3: archive_policy_rules[0].archive_policy_name: no archive policy named \"nope\" "
                "(neither in archive_policies nor built in)");
    CHECK_LOADS("archive_policy_rules:\n  - {metric_pattern: \"*\", archive_policy_name: high}\n");
    CHECK_LOADS("archive_policies:\n  - {name: mine, definition: [{granularity: 1, points: 5}]}\n"
                "archive_policy_rules:\n  - {metric_pattern: \"*\", archive_policy_name: mine}\n");
    CHECK_FAILS("archive_policy_rules:\n  - {archive_policy_name: low}\n",
                "t.yaml:2: archive_policy_rules[0]: metric_pattern is required");
}

static void test_v_default_policy_exists(void)
{
    CHECK_FAILS("default_archive_policy: nope\n",
                "t.yaml:1: default_archive_policy: no archive policy named \"nope\" (neither in archive_policies "
                "nor built in)");
    CHECK_FAILS("default_archive_policy: \"\"\n", "t.yaml:1: default_archive_policy: must be set");
    CHECK_LOADS("default_archive_policy: medium\n");
    CHECK_STR(ga_config_policy_for(&cfg, "x/memory")->name, "medium");
}

/* The validator also works on a hand-filled struct (no file, no lines). */
static void test_v_message_without_file(void)
{
    ga_config_defaults(&cfg);
    cfg.gpu.streams = 1;
    CHECK_INT(ga_config_validate(&cfg, err, sizeof err), GA_ECONFIG);
    CHECK_STR(err, "(defaults): gpu.streams: 1 out of range 2..64 (streams)");
    ga_config_defaults(&cfg);
    cfg.log.level = 9;
    CHECK_INT(ga_config_validate(&cfg, err, sizeof err), GA_ECONFIG);
    CHECK_STR(err, "(defaults): log.level: unknown level 9");
}

/* ---- policies ------------------------------------------------------------ */

static void test_policy_definitions(void)
{
    CHECK_LOADS("archive_policies:\n"
                "  - name: p\n"
                "    back_window: 2\n"
                "    definition:\n"
                "      - granularity: 1h\n"
                "        timespan: 365 days\n"
                "      - granularity: 5 minutes\n"
                "        timespan: 30 days\n"
                "      - granularity: 60\n"
                "        points: 1440\n"
                "      - points: 10\n"
                "        timespan: 10s\n");
    const struct ga_policy *p = ga_config_policy(&cfg, "p");
    CHECK(p != NULL);
    if (!p)
        return;
    CHECK_INT(p->back_window, 2);
    CHECK_INT(p->ndefs, 4);                    /* sorted by granularity */
    CHECK_INT(p->defs[0].granularity_ns, 1 * SEC);
    CHECK_INT(p->defs[0].points, 10);
    CHECK_INT(p->defs[1].granularity_ns, 60 * SEC);
    CHECK_INT(p->defs[1].timespan_ns, 86400 * SEC);
    CHECK_INT(p->defs[2].granularity_ns, 300 * SEC);
    CHECK_INT(p->defs[2].points, 8640);
    CHECK_INT(p->defs[3].granularity_ns, 3600 * SEC);
    CHECK_INT(p->defs[3].points, 8760);
    CHECK_INT(p->nmethods, 6);                 /* Gnocchi's default set */
}

static void test_policy_definition_errors(void)
{
    CHECK_FAILS("archive_policies:\n  - name: p\n    definition:\n      - granularity: 5 minits\n"
                "        timespan: 1 day\n",
                "t.yaml:4: archive_policies[0].definition[0].granularity: bad duration \"5 minits\" "
                "(expected seconds or e.g. \"5 minutes\", \"30 days\")");
    CHECK_FAILS("archive_policies:\n  - name: p\n    definition:\n      - points: 10\n",
                "t.yaml:4: archive_policies[0].definition[0]: at least two of granularity/points/timespan must "
                "be given");
    CHECK_FAILS("archive_policies:\n  - name: p\n    definition:\n      - {granularity: 60, points: 10, "
                "timespan: 1 hour}\n",
                "t.yaml:4: archive_policies[0].definition[0]: timespan must equal granularity x points");
    CHECK_FAILS("archive_policies:\n  - name: p\n    definition:\n      - {granularity: 60, points: 10}\n"
                "      - {granularity: 1min, points: 5}\n",
                "t.yaml:5: archive_policies[0].definition[1]: more than one definition uses this granularity");
    CHECK_FAILS("archive_policies:\n  - name: p\n    definition:\n      - {granularity: 0, points: 10}\n",
                "t.yaml:4: archive_policies[0].definition[0].granularity: must be positive");
    CHECK_FAILS("archive_policies:\n  - name: p\n    definition:\n      - {granularity: 60, points: -3}\n",
                "t.yaml:4: archive_policies[0].definition[0].points: expected a positive integer, got \"-3\"");
    CHECK_FAILS("archive_policies:\n  - definition: [{granularity: 1, points: 1}]\n",
                "t.yaml:2: archive_policies[0]: name is required");
    /* the limits of proto/ga_time.h; granularity x points without overflow */
    CHECK_LOADS("archive_policies:\n  - name: p\n    definition: [{granularity: 3650 days, points: 10}]\n");
    CHECK_FAILS("archive_policies:\n  - name: p\n    definition:\n      - {granularity: 3651 days, points: 1}\n",
                "t.yaml:4: archive_policies[0].definition[0]: granularity is longer than 3650 days (the largest "
                "accepted)");
    CHECK_FAILS("archive_policies:\n  - name: p\n    definition:\n      - {granularity: 1 day, timespan: 36501 days}\n",
                "t.yaml:4: archive_policies[0].definition[0]: timespan is longer than 36500 days (the largest "
                "accepted)");
    CHECK_FAILS("archive_policies:\n  - name: p\n    definition:\n      - {granularity: 1 day, points: 4611686018427387904}\n",
                "t.yaml:4: archive_policies[0].definition[0]: granularity x points is longer than 36500 days (the "
                "largest accepted)");
}

static int has_method(const struct ga_policy *p, const char *name)
{
    int m = ga_method_parse(name);
    for (int i = 0; i < p->nmethods; i++)
        if (p->methods[i] == m)
            return 1;
    return 0;
}

/* Gnocchi's method-set syntax: names, "*", "-name", "+name". */
static void test_policy_method_syntax(void)
{
    static const char *hdr = "archive_policies:\n  - name: p\n    definition: [{granularity: 1, points: 5}]\n";
    char y[512];
    snprintf(y, sizeof y, "%s    aggregation_methods: [mean, rate:mean]\n", hdr);
    CHECK_LOADS(y);
    CHECK_INT(cfg.policies[0].nmethods, 2);
    CHECK(has_method(&cfg.policies[0], "rate:mean"));

    snprintf(y, sizeof y, "%s    aggregation_methods: [-std, +median]\n", hdr);
    CHECK_LOADS(y);                           /* only +/-: from the default set */
    CHECK_INT(cfg.policies[0].nmethods, 6);
    CHECK(!has_method(&cfg.policies[0], "std"));
    CHECK(has_method(&cfg.policies[0], "median"));
    CHECK(has_method(&cfg.policies[0], "count"));

    snprintf(y, sizeof y, "%s    aggregation_methods: [\"*\"]\n", hdr);
    CHECK_LOADS(y);
    CHECK_INT(cfg.policies[0].nmethods, GA_POLICY_MAX_METHODS);

    snprintf(y, sizeof y, "%s    aggregation_methods: [\"*\", -rate:std, -90pct]\n", hdr);
    CHECK_LOADS(y);
    CHECK_INT(cfg.policies[0].nmethods, GA_POLICY_MAX_METHODS - 2);
    CHECK(!has_method(&cfg.policies[0], "90pct"));
    CHECK(has_method(&cfg.policies[0], "rate:90pct"));

    snprintf(y, sizeof y, "%s    aggregation_methods: [max, -max, last]\n", hdr);
    CHECK_LOADS(y);                           /* a plain name: start from nothing */
    CHECK_INT(cfg.policies[0].nmethods, 1);
    CHECK(has_method(&cfg.policies[0], "last"));

    snprintf(y, sizeof y, "%s    aggregation_methods:\n      - mean\n      - avg\n", hdr);
    CHECK_FAILS(y, "t.yaml:6: archive_policies[0].aggregation_methods: unknown aggregation method \"avg\"");
    /* granularity alone is an unbounded definition, as in Gnocchi */
    snprintf(y, sizeof y, "archive_policies:\n  - name: p\n    definition: [{granularity: 5 minutes}]\n");
    CHECK_LOADS(y);
    CHECK_INT(cfg.policies[0].defs[0].points, 0);
    CHECK_INT(cfg.policies[0].defs[0].timespan_ns, 0);
}

static void test_policy_for_rules(void)
{
    CHECK_LOADS("archive_policies:\n  - {name: gpu, definition: [{granularity: 10s, timespan: 1 day}]}\n"
                "archive_policy_rules:\n"
                "  - {metric_pattern: \"gpu.*\", archive_policy_name: high}\n"
                "  - {metric_pattern: \"gpu.temp\", archive_policy_name: bool}\n"
                "  - {metric_pattern: \"node?/gpu[0-3]/*\", archive_policy_name: gpu}\n"
                "default_archive_policy: low\n");
    CHECK_STR(ga_config_policy_for(&cfg, "gpu.temp")->name, "high");       /* first match wins */
    CHECK_STR(ga_config_policy_for(&cfg, "gpu.util")->name, "high");
    CHECK(ga_config_policy_for(&cfg, "node1/gpu2/util") == &cfg.policies[0]);
    CHECK_STR(ga_config_policy_for(&cfg, "node1/gpu7/util")->name, "low");  /* default */
    CHECK_STR(ga_config_policy_for(&cfg, "x/cpu")->name, "low");            /* rules replaced */
    CHECK_LOADS("archive_policy_rules: []\n");
    CHECK_INT(cfg.nrules, 0);
    CHECK_STR(ga_config_policy_for(&cfg, "x/cpu")->name, "ceilometer-low");
}

/* ---- reload ------------------------------------------------------------- */

static int parse_into(struct ga_config *c, const char *yaml)
{
    ga_config_defaults(c);
    int rc = ga_config_parse_string(c, yaml, strlen(yaml), "t.yaml", err, sizeof err);
    return rc < 0 ? rc : ga_config_validate(c, err, sizeof err);
}

static void test_reload_copies_reloadable_lists_the_rest(void)
{
    char changed[512];
    CHECK_INT(parse_into(&cfg, "log: {level: info}\n"), 0);
    CHECK_INT(parse_into(&cfg2, "log: {level: debug}\n"
                         "listen: {tcp: \"127.0.0.1:5000\"}\n"
                         "storage: {conninfo: dbname=other, flush_rows: 7, pool_size: 4}\n"
                         "gpu: {devices: [0]}\n"
                         "limits: {max_connections: 10, idle_timeout_s: 60}\n"
                         "jobs: {max_queued: 3, workers: 2, input_dirs: [/in]}\n"
                         "archive_policies:\n  - {name: x, definition: [{granularity: 1, points: 2}]}\n"
                         "archive_policy_rules: [{metric_pattern: \"*\", archive_policy_name: x}]\n"
                         "default_archive_policy: x\n"), 0);
    int n = ga_config_apply_reload(&cfg, &cfg2, changed, sizeof changed);
    CHECK_INT(n, 5);
    CHECK_STR(changed, "listen.tcp storage.conninfo storage.pool_size gpu.devices jobs.workers");
    CHECK_INT(cfg.log.level, GA_LOG_DEBUG);
    CHECK_INT(cfg.storage.flush_rows, 7);
    CHECK_INT(cfg.limits.max_connections, 10);
    CHECK_INT(cfg.limits.idle_timeout_s, 60);
    CHECK_INT(cfg.jobs.max_queued, 3);
    CHECK_INT(cfg.jobs.ninput_dirs, 1);
    CHECK_STR(cfg.jobs.input_dirs[0], "/in");
    CHECK_INT(cfg.npolicies, 1);
    CHECK_INT(cfg.nrules, 1);
    CHECK_STR(cfg.default_policy, "x");
    CHECK(ga_config_policy_for(&cfg, "any") == &cfg.policies[0]);
    /* kept as they were */
    CHECK_STR(cfg.listen.tcp, "127.0.0.1:4951");
    CHECK_STR(cfg.storage.conninfo, "dbname=gpuagg");
    CHECK_INT(cfg.storage.pool_size, 2);
    CHECK_INT(cfg.gpu.all, 1);
    CHECK_INT(cfg.jobs.workers, 1);
    CHECK_INT(ga_config_validate(&cfg, err, sizeof err), 0);
}

static void test_reload_unchanged_reports_nothing(void)
{
    char changed[64] = "junk";
    CHECK_INT(parse_into(&cfg, ""), 0);
    /* a longer value once parsed leaves bytes past the NUL: still equal */
    ga_config_defaults(&cfg2);
    const char *y1 = "control: {socket: /run/a/very/long/path/for/the/control.sock}\n";
    const char *y2 = "control: {socket: /run/gpuagg/control.sock}\n";
    CHECK_INT(ga_config_parse_string(&cfg2, y1, strlen(y1), "a", err, sizeof err), 0);
    CHECK_INT(ga_config_parse_string(&cfg2, y2, strlen(y2), "b", err, sizeof err), 0);
    CHECK_INT(ga_config_apply_reload(&cfg, &cfg2, changed, sizeof changed), 0);
    CHECK_STR(changed, "");
}

/* ---- msgpack view ------------------------------------------------------- */

static const msgpack_object *get(const msgpack_object *map, const char *key)
{
    if (!map || map->type != MSGPACK_OBJECT_MAP)
        return NULL;
    for (uint32_t i = 0; i < map->via.map.size; i++) {
        const msgpack_object *k = &map->via.map.ptr[i].key;
        if (k->type == MSGPACK_OBJECT_STR && k->via.str.size == strlen(key) &&
            !memcmp(k->via.str.ptr, key, k->via.str.size))
            return &map->via.map.ptr[i].val;
    }
    return NULL;
}

static int str_is(const msgpack_object *o, const char *s)
{
    return o && o->type == MSGPACK_OBJECT_STR && o->via.str.size == strlen(s) &&
           !memcmp(o->via.str.ptr, s, o->via.str.size);
}

static long long int_of(const msgpack_object *o)
{
    if (o && o->type == MSGPACK_OBJECT_POSITIVE_INTEGER)
        return (long long)o->via.u64;
    if (o && o->type == MSGPACK_OBJECT_NEGATIVE_INTEGER)
        return o->via.i64;
    return -999;
}

static void test_pack_mirrors_yaml_and_masks_secrets(void)
{
    CHECK_LOADS("listen: {telemetry_secret: hunter2}\n"
                "storage: {conninfo: \"host=db password = 'se cr\\\\'et' dbname=x\"}\n"
                "gpu: {devices: [1, 0]}\n"
                "archive_policies:\n  - name: p\n    definition: [{granularity: 5 minutes, timespan: 30 days},"
                " {granularity: 0.5s, points: 4}]\n    aggregation_methods: [mean, rate:mean]\n");
    msgpack_sbuffer sb;
    msgpack_packer pk;
    msgpack_unpacked up;
    msgpack_sbuffer_init(&sb);
    msgpack_packer_init(&pk, &sb, msgpack_sbuffer_write);
    CHECK_INT(ga_config_pack(&cfg, &pk), 0);
    msgpack_unpacked_init(&up);
    CHECK_INT(msgpack_unpack_next(&up, sb.data, sb.size, NULL), MSGPACK_UNPACK_SUCCESS);
    const msgpack_object *root = &up.data;
    CHECK_INT(root->type, MSGPACK_OBJECT_MAP);
    CHECK_INT(root->via.map.size, 14);
    CHECK(str_is(get(get(root, "http"), "auth"), "basic"));
    CHECK(str_is(get(get(root, "listen"), "http"), ""));
    CHECK(str_is(get(get(root, "log"), "level"), "info"));
    CHECK(str_is(get(get(root, "cluster"), "nats"), ""));
    CHECK(str_is(get(get(root, "cluster"), "token"), ""));
    CHECK(str_is(get(get(root, "control"), "mode"), "0660"));
    CHECK(str_is(get(get(root, "listen"), "tcp"), "127.0.0.1:4951"));
    CHECK(str_is(get(get(root, "listen"), "unix"), "/run/gpuagg/ingest.sock"));
    CHECK(str_is(get(get(root, "listen"), "telemetry_secret"), "***"));
    CHECK(str_is(get(get(root, "listen"), "token"), ""));
    CHECK(str_is(get(get(root, "storage"), "conninfo"), "host=db password = *** dbname=x"));
    CHECK_INT(int_of(get(get(root, "storage"), "flush_interval_ms")), 1000);
    CHECK(str_is(get(get(root, "journal"), "max_bytes"), "auto"));     /* not sized yet */
    CHECK(str_is(get(get(root, "storage"), "writers"), "auto"));
    CHECK(str_is(get(get(root, "engine"), "workers"), "auto"));
    CHECK_INT(int_of(get(get(root, "limits"), "max_metrics")), 0);
    const msgpack_object *dev = get(get(root, "gpu"), "devices");
    CHECK(dev && dev->type == MSGPACK_OBJECT_ARRAY && dev->via.array.size == 2);
    if (dev && dev->type == MSGPACK_OBJECT_ARRAY && dev->via.array.size == 2)
        CHECK_INT(int_of(&dev->via.array.ptr[0]), 1);
    CHECK_INT(get(get(root, "limits"), "max_connections") ? 1 : 0, 1);
    CHECK(str_is(get(root, "default_archive_policy"), "ceilometer-low"));
    const msgpack_object *rules = get(root, "archive_policy_rules");
    CHECK(rules && rules->type == MSGPACK_OBJECT_ARRAY && rules->via.array.size == 13);
    if (rules && rules->via.array.size)
        CHECK(str_is(get(&rules->via.array.ptr[0], "metric_pattern"), "*/cpu"));
    const msgpack_object *pols = get(root, "archive_policies");
    CHECK(pols && pols->type == MSGPACK_OBJECT_ARRAY && pols->via.array.size == 1);
    if (pols && pols->type == MSGPACK_OBJECT_ARRAY && pols->via.array.size == 1) {
        const msgpack_object *p = &pols->via.array.ptr[0];
        CHECK(str_is(get(p, "name"), "p"));
        const msgpack_object *defs = get(p, "definition");
        CHECK(defs && defs->type == MSGPACK_OBJECT_ARRAY && defs->via.array.size == 2);
        if (defs && defs->type == MSGPACK_OBJECT_ARRAY && defs->via.array.size == 2) {
            const msgpack_object *g0 = get(&defs->via.array.ptr[0], "granularity");
            CHECK(g0 && g0->type == MSGPACK_OBJECT_FLOAT64 && g0->via.f64 == 0.5);
            CHECK_INT(int_of(get(&defs->via.array.ptr[1], "granularity")), 300);
            CHECK_INT(int_of(get(&defs->via.array.ptr[1], "timespan")), 2592000);
            CHECK_INT(int_of(get(&defs->via.array.ptr[1], "points")), 8640);
        }
        const msgpack_object *m = get(p, "aggregation_methods");
        CHECK(m && m->type == MSGPACK_OBJECT_ARRAY && m->via.array.size == 2);
        if (m && m->type == MSGPACK_OBJECT_ARRAY && m->via.array.size == 2) {
            CHECK(str_is(&m->via.array.ptr[0], "mean"));
            CHECK(str_is(&m->via.array.ptr[1], "rate:mean"));
        }
    }
    msgpack_unpacked_destroy(&up);
    msgpack_sbuffer_destroy(&sb);
}

static void test_pack_masks_uri_password(void)
{
    static const struct { const char *in, *out; } cases[] = {
        { "postgresql://gpuagg:s3cret@db:5432/gpuagg", "postgresql://gpuagg:***@db:5432/gpuagg" },
        { "postgres://u@db/x?password=abc&sslmode=require", "postgres://u@db/x?password=***&sslmode=require" },
        { "password=abc", "password=***" },
        { "host=db mypassword=x", "host=db mypassword=x" },
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        ga_config_defaults(&cfg);
        snprintf(cfg.storage.conninfo, sizeof cfg.storage.conninfo, "%s", cases[i].in);
        msgpack_sbuffer sb;
        msgpack_packer pk;
        msgpack_unpacked up;
        msgpack_sbuffer_init(&sb);
        msgpack_packer_init(&pk, &sb, msgpack_sbuffer_write);
        CHECK_INT(ga_config_pack(&cfg, &pk), 0);
        msgpack_unpacked_init(&up);
        CHECK_INT(msgpack_unpack_next(&up, sb.data, sb.size, NULL), MSGPACK_UNPACK_SUCCESS);
        const msgpack_object *ci = get(get(&up.data, "storage"), "conninfo");
        if (!str_is(ci, cases[i].out))
            harness_fail(__FILE__, __LINE__, "conninfo \"%s\" packed as \"%.*s\", expected \"%s\"", cases[i].in,
                         ci ? (int)ci->via.str.size : 0, ci ? ci->via.str.ptr : "", cases[i].out);
        msgpack_unpacked_destroy(&up);
        msgpack_sbuffer_destroy(&sb);
    }
}

/* ---- keys sized by the machine ------------------------------------------- */

#define GiB (1024 * MiB)

static void test_auto_keys_parse(void)
{
    CHECK_LOADS("storage: {writers: auto}\njournal: {max_bytes: auto}\nengine: {workers: auto}\n"
                "limits: {max_metrics: auto}\n");
    CHECK_INT(cfg.storage.writers, GA_CONFIG_AUTO);
    CHECK_INT(cfg.journal.max_bytes, GA_CONFIG_AUTO);
    CHECK_INT(cfg.engine.workers, GA_CONFIG_AUTO);
    CHECK_INT(cfg.limits.max_metrics, GA_CONFIG_AUTO);
    CHECK_LOADS("storage: {writers: \"auto\"}\n");           /* quoted is the same */
    CHECK_INT(cfg.storage.writers, GA_CONFIG_AUTO);
    CHECK_LOADS("storage: {writers: 8}\njournal: {max_bytes: 2GiB}\nengine: {workers: 3}\n"
                "limits: {max_metrics: 5000}\n");
    CHECK_INT(cfg.storage.writers, 8);
    CHECK_INT(cfg.journal.max_bytes, 2 * GiB);
    CHECK_INT(cfg.engine.workers, 3);
    CHECK_INT(cfg.limits.max_metrics, 5000);
    CHECK_LOADS("engine: {workers: 0}\n");                   /* 0 is auto too */
    CHECK_INT(cfg.engine.workers, 0);
    /* auto skips the rule that max_bytes is at least twice segment_bytes */
    CHECK_LOADS("journal: {segment_bytes: 4GiB, max_bytes: auto}\n");
}

static void test_auto_keys_bad_values(void)
{
    CHECK_FAILS("storage:\n  writers: many\n",
                "t.yaml:2: storage.writers: expected auto or an integer, got \"many\"");
    CHECK_FAILS("storage:\n  writers: Auto\n",
                "t.yaml:2: storage.writers: expected auto or an integer, got \"Auto\"");
    CHECK_FAILS("storage:\n  writers:\n", "t.yaml:2: storage.writers: expected auto or an integer, got nothing");
    CHECK_FAILS("storage:\n  writers: -1\n",
                "t.yaml:2: storage.writers: expected auto or a number >= 0, got \"-1\"");
    CHECK_FAILS("storage:\n  writers: 0\n",
                "t.yaml:2: storage.writers: 0 out of range 1..64 (connections) or auto");
    CHECK_FAILS("storage:\n  writers: 65\n",
                "t.yaml:2: storage.writers: 65 out of range 1..64 (connections) or auto");
    CHECK_FAILS("engine:\n  workers: 65\n",
                "t.yaml:2: engine.workers: 65 out of range 0..64 (partition workers, 0 = auto) or auto");
    CHECK_FAILS("engine:\n  workers: -2\n",
                "t.yaml:2: engine.workers: expected auto or a number >= 0, got \"-2\"");
    CHECK_FAILS("engine:\n  threads: 2\n", "t.yaml:2: engine.threads: unknown key");
    CHECK_FAILS("journal:\n  max_bytes: lots\n",
                "t.yaml:2: journal.max_bytes: bad size \"lots\" (expected auto, bytes or e.g. 64KiB, 16MiB, "
                "1GiB, 10MB)");
    CHECK_FAILS("journal:\n  max_bytes: -5\n", "t.yaml:2: journal.max_bytes: expected auto or a size, got \"-5\"");
    CHECK_FAILS("journal:\n  max_bytes: 1MiB\n",
                "t.yaml:2: journal.max_bytes: 1048576 out of range 2097152..1125899906842624 (bytes) or auto");
    CHECK_FAILS("limits:\n  max_metrics: 2000000000\n",
                "t.yaml:2: limits.max_metrics: 2000000000 out of range 0..1000000000 (metrics, 0 = auto) or auto");
    /* a key that is not sized does not take auto */
    CHECK_FAILS("storage:\n  pool_size: auto\n", "t.yaml:2: storage.pool_size: expected an integer, got \"auto\"");
}

/* A machine for ga_config_size(): CPUs, GiB of RAM, GPUs, and its journal
 * file system (bytes free, bytes of segments already there). */
static struct ga_machine machine(int ncpu, int64_t ram_gib, int ngpus, uint64_t avail, uint64_t held)
{
    struct ga_machine m = { .ncpu = ncpu, .phys_bytes = (uint64_t)ram_gib * GiB, .ngpus = ngpus,
                            .fs_avail_bytes = avail, .journal_bytes = held };
    snprintf(m.fs_path, sizeof m.fs_path, "/var/lib/gpuagg");
    return m;
}

static const struct ga_config_sized *sized(const char *key)
{
    const struct ga_config_sized *s = ga_config_sized_of(&cfg, key);
    if (!s)
        harness_fail(__FILE__, __LINE__, "no sizing record for %s", key);
    static const struct ga_config_sized none = { "", -1, -1, "" };
    return s ? s : &none;
}

#define CHECK_SIZED(key, v, isauto, why) do { const struct ga_config_sized *_s = sized(key); \
    CHECK_INT(_s->value, v); CHECK_INT(_s->is_auto, isauto); CHECK_STR(_s->reason, why); } while (0)

static void test_size_two_cpus(void)
{
    struct ga_machine m = machine(2, 24, 0, 80 * GiB, 0);
    CHECK_LOADS("");
    CHECK(ga_config_sized_of(&cfg, "storage.writers") == NULL);     /* not sized yet */
    CHECK_INT(ga_config_size(&cfg, &m), 0);
    CHECK_SIZED("storage.writers", 4, 1, "2 CPUs, at least 4");
    /* 300 s x 131072 points/s x 32 bytes x 2 = 2400 MiB */
    CHECK_SIZED("journal.max_bytes", 2400 * MiB, 1,
                "300 s of 131072 points/s (2 CPUs) at 32 bytes, twice: 2.3 GiB");
    CHECK_SIZED("limits.max_metrics", 6291456, 1, "a quarter of 24.0 GiB RAM");
    CHECK_SIZED("engine.workers", 1, 1, "2 CPUs / 4, at least 1");
    CHECK_INT(cfg.storage.writers, 4);
    CHECK_INT(cfg.journal.max_bytes, 2400 * MiB);
    CHECK_INT(cfg.engine.workers, 1);
    CHECK_INT(cfg.limits.max_metrics, 0);                  /* auto stays auto: SIGHUP may change it */
    CHECK_INT(ga_config_max_metrics(&cfg), 6291456);
    CHECK_INT(cfg.sizing.machine.ncpu, 2);
    CHECK_INT(ga_config_size(&cfg, &m), GA_EINVAL);        /* once */
    CHECK_INT(ga_config_validate(&cfg, err, sizeof err), 0);
}

static void test_size_sixteen_cpus_one_gpu(void)
{
    struct ga_machine m = machine(16, 128, 1, 100 * GiB, 0);
    CHECK_LOADS("");
    CHECK_INT(ga_config_size(&cfg, &m), 0);
    CHECK_SIZED("storage.writers", 16, 1, "16 CPUs");
    CHECK_SIZED("journal.max_bytes", 19200 * MiB, 1,
                "300 s of 1048576 points/s (16 CPUs) at 32 bytes, twice: 18.8 GiB");
    CHECK_SIZED("limits.max_metrics", 33554432, 1, "a quarter of 128.0 GiB RAM");
    CHECK_SIZED("engine.workers", 4, 1, "16 CPUs / 4");
    CHECK_INT(cfg.sizing.machine.ngpus, 1);
    /* the disk bounds it: half of what is free, the journal's segments included */
    m = machine(16, 128, 1, 30 * GiB, 2 * GiB);
    CHECK_LOADS("");
    CHECK_INT(ga_config_size(&cfg, &m), 0);
    CHECK_SIZED("journal.max_bytes", 16 * GiB, 1,
                "half of 32.0 GiB free on /var/lib/gpuagg, the journal's 2.0 GiB included (18.8 GiB wanted)");
    /* many CPUs: the ceilings */
    m = machine(96, 512, 8, 10000 * GiB, 0);
    CHECK_LOADS("storage: {window_snapshot_s: 60}\n");
    CHECK_INT(ga_config_size(&cfg, &m), 0);
    CHECK_SIZED("storage.writers", 16, 1, "96 CPUs, at most 16");
    CHECK_SIZED("engine.workers", 16, 1, "96 CPUs / 4, at most 16");
    CHECK_SIZED("journal.max_bytes", 4 * MiB * 96 * 60, 1,
                "60 s of 6291456 points/s (96 CPUs) at 32 bytes, twice: 22.5 GiB");
}

static void test_size_small_disk_and_floors(void)
{
    /* 150 MiB is half of what is free: never below 256 MiB */
    struct ga_machine m = machine(2, 24, 0, 300 * MiB, 0);
    snprintf(m.fs_path, sizeof m.fs_path, "/tiny");
    CHECK_LOADS("");
    CHECK_INT(ga_config_size(&cfg, &m), 0);
    CHECK_SIZED("journal.max_bytes", 256 * MiB, 1, "at least 256.0 MiB (half of 300.0 MiB free on /tiny is less)");
    /* half of 1 GiB: below the 1 GiB aimed at, above 256 MiB */
    m = machine(2, 24, 0, 1 * GiB, 0);
    CHECK_LOADS("");
    CHECK_INT(ga_config_size(&cfg, &m), 0);
    CHECK_SIZED("journal.max_bytes", 512 * MiB, 1, "half of 1.0 GiB free on /var/lib/gpuagg (2.3 GiB wanted)");
    /* a short window-save round: at least 1 GiB */
    m = machine(2, 24, 0, 80 * GiB, 0);
    CHECK_LOADS("storage: {window_snapshot_s: 60}\n");
    CHECK_INT(ga_config_size(&cfg, &m), 0);
    CHECK_SIZED("journal.max_bytes", 1 * GiB, 1,
                "at least 1.0 GiB (60 s of 131072 points/s at 32 bytes, twice, is 480.0 MiB)");
    /* never below twice segment_bytes (the journal's own rule) */
    m = machine(2, 24, 0, 300 * MiB, 0);
    CHECK_LOADS("journal: {segment_bytes: 1GiB}\n");
    CHECK_INT(ga_config_size(&cfg, &m), 0);
    CHECK_SIZED("journal.max_bytes", 2 * GiB, 1,
                "at least 2.0 GiB, twice segment_bytes (half of 300.0 MiB free on /var/lib/gpuagg is less)");
    CHECK_INT(ga_config_validate(&cfg, err, sizeof err), 0);
    /* memory unknown: one metric a KiB of memory_budget_bytes */
    m = machine(1, 0, 0, 80 * GiB, 0);
    CHECK_LOADS("");
    CHECK_INT(ga_config_size(&cfg, &m), 0);
    CHECK_SIZED("limits.max_metrics", 1048576, 1,
                "memory size unknown: one a KiB of limits.memory_budget_bytes (1.0 GiB)");
    CHECK_SIZED("storage.writers", 4, 1, "1 CPU, at least 4");
}

static void test_size_statvfs_failed(void)
{
    struct ga_machine m = machine(16, 128, 1, 0, 0);
    m.fs_errno = EACCES;
    snprintf(m.fs_path, sizeof m.fs_path, "/srv/j");
    CHECK_LOADS("");
    CHECK_INT(ga_config_size(&cfg, &m), 0);
    CHECK_SIZED("journal.max_bytes", 4 * GiB, 1, "statvfs of /srv/j failed (Permission denied): 4.0 GiB");
    CHECK_SIZED("storage.writers", 16, 1, "16 CPUs");
}

static void test_size_explicit_values_win(void)
{
    struct ga_machine m = machine(16, 128, 1, 100 * GiB, 0);
    CHECK_LOADS("storage:\n  writers: 2\njournal:\n  max_bytes: 1GiB\nengine:\n  workers: 7\n"
                "limits:\n  max_metrics: 1000\n");
    CHECK_INT(ga_config_size(&cfg, &m), 0);
    CHECK_SIZED("storage.writers", 2, 0, "set in the config (line 2)");
    CHECK_SIZED("journal.max_bytes", 1 * GiB, 0, "set in the config (line 4)");
    CHECK_SIZED("engine.workers", 7, 0, "set in the config (line 6)");
    CHECK_SIZED("limits.max_metrics", 1000, 0, "set in the config (line 8)");
    CHECK_INT(cfg.storage.writers, 2);
    CHECK_INT(cfg.journal.max_bytes, 1 * GiB);
    CHECK_INT(cfg.engine.workers, 7);
    CHECK_INT(ga_config_max_metrics(&cfg), 1000);
    CHECK(ga_config_sized_of(&cfg, "storage.pool_size") == NULL);
}

/* The running config is sized; the file read at SIGHUP says auto again. */
static void test_size_reload_keeps_resolved(void)
{
    char changed[256];
    struct ga_machine m = machine(16, 128, 1, 100 * GiB, 0);
    CHECK_INT(parse_into(&cfg, "engine: {workers: 0}\n"), 0);
    CHECK_INT(ga_config_size(&cfg, &m), 0);
    /* auto against auto (0 and auto alike), and the number auto chose: no change */
    CHECK_INT(parse_into(&cfg2, "storage: {writers: 16}\njournal: {max_bytes: auto}\n"), 0);
    CHECK_INT(ga_config_apply_reload(&cfg, &cfg2, changed, sizeof changed), 0);
    CHECK_STR(changed, "");
    CHECK_INT(cfg.storage.writers, 16);
    CHECK_INT(cfg.journal.max_bytes, 19200 * MiB);
    CHECK_INT(cfg.engine.workers, 4);
    CHECK_SIZED("storage.writers", 16, 1, "16 CPUs");
    /* another number: needs a restart, kept */
    CHECK_INT(parse_into(&cfg2, "storage: {writers: 8}\nengine: {workers: 2}\n"), 0);
    CHECK_INT(ga_config_apply_reload(&cfg, &cfg2, changed, sizeof changed), 2);
    CHECK_STR(changed, "storage.writers engine.workers");
    CHECK_INT(cfg.storage.writers, 16);
    /* limits.max_metrics is reloaded: a number, then auto again */
    CHECK_INT(parse_into(&cfg2, "limits: {max_metrics: 100}\n"), 0);
    CHECK_INT(ga_config_apply_reload(&cfg, &cfg2, changed, sizeof changed), 0);
    CHECK_INT(ga_config_max_metrics(&cfg), 100);
    CHECK_SIZED("limits.max_metrics", 100, 0, "set in the config (line 1)");
    CHECK_INT(parse_into(&cfg2, ""), 0);
    CHECK_INT(ga_config_apply_reload(&cfg, &cfg2, changed, sizeof changed), 0);
    CHECK_INT(ga_config_max_metrics(&cfg), 33554432);
    CHECK_SIZED("limits.max_metrics", 33554432, 1, "a quarter of 128.0 GiB RAM");
    /* a number at start, auto in the new file: needs a restart */
    CHECK_INT(parse_into(&cfg, "storage: {writers: 4}\n"), 0);
    CHECK_INT(ga_config_size(&cfg, &m), 0);
    CHECK_INT(parse_into(&cfg2, ""), 0);
    CHECK_INT(ga_config_apply_reload(&cfg, &cfg2, changed, sizeof changed), 1);
    CHECK_STR(changed, "storage.writers");
    CHECK_INT(cfg.storage.writers, 4);
}

/* config.get after sizing: the numbers in effect. */
static void test_size_pack_shows_numbers(void)
{
    struct ga_machine m = machine(2, 24, 0, 80 * GiB, 0);
    CHECK_LOADS("");
    CHECK_INT(ga_config_size(&cfg, &m), 0);
    msgpack_sbuffer sb;
    msgpack_packer pk;
    msgpack_unpacked up;
    msgpack_sbuffer_init(&sb);
    msgpack_packer_init(&pk, &sb, msgpack_sbuffer_write);
    CHECK_INT(ga_config_pack(&cfg, &pk), 0);
    msgpack_unpacked_init(&up);
    CHECK_INT(msgpack_unpack_next(&up, sb.data, sb.size, NULL), MSGPACK_UNPACK_SUCCESS);
    CHECK_INT(int_of(get(get(&up.data, "storage"), "writers")), 4);
    CHECK_INT(int_of(get(get(&up.data, "journal"), "max_bytes")), 2400 * MiB);
    CHECK_INT(int_of(get(get(&up.data, "engine"), "workers")), 1);
    msgpack_unpacked_destroy(&up);
    msgpack_sbuffer_destroy(&sb);
}

/* The real machine: a journal directory not made yet is looked up at its
 * nearest parent; segments already there are counted, other files not. */
static void test_machine_probe(void)
{
    char dir[] = "/tmp/ga_probe_XXXXXX", sub[128], f[160];
    CHECK(mkdtemp(dir) != NULL);
    struct ga_machine m;
    snprintf(sub, sizeof sub, "%s/not/yet", dir);
    ga_machine_probe(&m, sub, 2);
    CHECK(m.ncpu >= 1);
    CHECK(m.phys_bytes > 0);
    CHECK_INT(m.ngpus, 2);
    CHECK_INT(m.fs_errno, 0);
    CHECK_STR(m.fs_path, dir);
    CHECK(m.fs_avail_bytes > 0);
    CHECK_INT(m.journal_bytes, 0);
    static const struct { const char *name; size_t n; } files[] = {
        { "00000000000000000000.wal", 1000 }, { "00000000000000001000.wal", 24 }, { "LOCK", 7 },
    };
    for (size_t i = 0; i < sizeof files / sizeof files[0]; i++) {
        snprintf(f, sizeof f, "%s/%s", dir, files[i].name);
        FILE *fp = fopen(f, "w");
        CHECK(fp != NULL);
        for (size_t k = 0; fp && k < files[i].n; k++)
            fputc('x', fp);
        if (fp)
            fclose(fp);
    }
    ga_machine_probe(&m, dir, 0);
    CHECK_STR(m.fs_path, dir);
    CHECK_INT(m.journal_bytes, 1024);
    for (size_t i = 0; i < sizeof files / sizeof files[0]; i++) {
        snprintf(f, sizeof f, "%s/%s", dir, files[i].name);
        unlink(f);
    }
    rmdir(dir);
}

void run_tests(void)
{
    RUN(test_defaults_validate);
    RUN(test_etc_file_loads_and_validates);
    RUN(test_etc_file_shows_every_key_with_its_default);
    RUN(test_etc_rules_match_ceilometer);
    RUN(test_missing_file);
    RUN(test_file_error_names_file_and_line);
    RUN(test_parse_every_scalar_kind);
    RUN(test_mode_quoted_or_not_is_octal);
    RUN(test_gpu_devices_forms);
    RUN(test_empty_file_and_empty_section_keep_defaults);
    RUN(test_key_lines_recorded);
    RUN(test_unknown_keys_are_named);
    RUN(test_duplicate_key);
    RUN(test_type_errors);
    RUN(test_size_values);
    RUN(test_duration_values);
    RUN(test_coarse_delay);
    RUN(test_yaml_syntax_error_has_line);
    RUN(test_socket_path_longer_than_sun_path);
    RUN(test_v_control_socket_absolute);
    RUN(test_v_control_mode_range);
    RUN(test_v_listen_unix_absolute_and_distinct);
    RUN(test_v_listen_port_range);
    RUN(test_v_listen_hostport_syntax);
    RUN(test_parse_hostport);
    RUN(test_v_listen_empty_disables_but_one_needed);
    RUN(test_v_conninfo_non_empty);
    RUN(test_v_flush_interval_bounds);
    RUN(test_v_pool_size_bounds);
    RUN(test_v_retry_initial_le_max);
    RUN(test_v_journal_dir_absolute);
    RUN(test_v_journal_sizes);
    RUN(test_v_cluster);
    RUN(test_v_gpu_streams_and_staging);
    RUN(test_v_gpu_devices);
    RUN(test_v_limits);
    RUN(test_v_jobs);
    RUN(test_v_keystone);
    RUN(test_v_policy_names_unique);
    RUN(test_v_policy_may_shadow_builtin);
    RUN(test_v_policy_needs_definition);
    RUN(test_v_policy_needs_method);
    RUN(test_v_policy_back_window);
    RUN(test_v_rules_reference_policies);
    RUN(test_v_default_policy_exists);
    RUN(test_v_message_without_file);
    RUN(test_policy_definitions);
    RUN(test_policy_definition_errors);
    RUN(test_policy_method_syntax);
    RUN(test_policy_for_rules);
    RUN(test_reload_copies_reloadable_lists_the_rest);
    RUN(test_reload_unchanged_reports_nothing);
    RUN(test_pack_mirrors_yaml_and_masks_secrets);
    RUN(test_pack_masks_uri_password);
    RUN(test_auto_keys_parse);
    RUN(test_auto_keys_bad_values);
    RUN(test_size_two_cpus);
    RUN(test_size_sixteen_cpus_one_gpu);
    RUN(test_size_small_disk_and_floors);
    RUN(test_size_statvfs_failed);
    RUN(test_size_explicit_values_win);
    RUN(test_size_reload_keeps_resolved);
    RUN(test_size_pack_shows_numbers);
    RUN(test_machine_probe);
}
