/* main.c — gpuaggd command line. */
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "daemon/config/config.h"
#include "daemon/daemon.h"
#include "proto/base/log.h"

#define DEFAULT_CONFIG "/etc/gpuagg/gpuaggd.yaml"

static void usage(FILE *f)
{
    fprintf(f,
            "usage: gpuaggd [--config FILE] [--foreground]\n"
            "       gpuaggd --check-config FILE\n"
            "       gpuaggd --version | --help\n"
            "\n"
            "  -c, --config FILE        configuration (default " DEFAULT_CONFIG ")\n"
            "  -f, --foreground         stay in the foreground (use under systemd)\n"
            "  -t, --check-config FILE  validate FILE, print the verdict, exit 0 if valid, 1 if not\n"
            "  -V, --version            print the version\n"
            "  -h, --help               this text\n"
            "\n"
            "Logs go to standard error as key=value lines.  See gpuaggd(8).\n");
}

/* Detach: the parent exits with the child's startup verdict (0 once the
 * child reports ready, 1 if it dies first).  Returns the fd the child
 * writes when ready, or -1 on failure. */
static int background(void)
{
    int fds[2];
    if (pipe(fds) < 0)
        return -1;
    pid_t pid = fork();
    if (pid < 0)
        return -1;
    if (pid > 0) {
        close(fds[1]);
        char c;
        ssize_t n = read(fds[0], &c, 1);
        _exit(n == 1 ? 0 : 1);
    }
    close(fds[0]);
    if (setsid() < 0)
        return -1;
    pid = fork();                     /* never reacquire a terminal */
    if (pid < 0)
        return -1;
    if (pid > 0)
        _exit(0);
    if (!freopen("/dev/null", "r", stdin) || !freopen("/dev/null", "w", stdout))
        return -1;
    return fds[1];
}

/* --check-config: what the keys sized by the machine come to here (the
 * daemon sizes them again when it starts, with the GPUs it finds). */
static void print_sizing(struct ga_config *cfg)
{
    struct ga_machine m;
    ga_machine_probe(&m, cfg->journal.dir, -1);
    if (ga_config_size(cfg, &m) < 0)
        return;
    printf("on this machine:\n");
    for (int k = 0; k < GA_SIZED_N; k++) {
        const struct ga_config_sized *s = &cfg->sizing.key[k];
        printf("  %-20s %-12lld %s: %s\n", s->key, (long long)s->value, s->is_auto ? "auto" : "set",
               s->reason);
    }
}

int main(int argc, char **argv)
{
    static const struct option opts[] = {
        { "config", required_argument, NULL, 'c' },
        { "foreground", no_argument, NULL, 'f' },
        { "check-config", required_argument, NULL, 't' },
        { "version", no_argument, NULL, 'V' },
        { "help", no_argument, NULL, 'h' },
        { NULL, 0, NULL, 0 },
    };
    const char *config = DEFAULT_CONFIG, *check = NULL;
    int foreground = 0, opt;
    while ((opt = getopt_long(argc, argv, "c:ft:Vh", opts, NULL)) != -1) {
        switch (opt) {
        case 'c': config = optarg; break;
        case 'f': foreground = 1; break;
        case 't': check = optarg; break;
        case 'V': printf("gpuaggd %s\n", GA_VERSION); return 0;
        case 'h': usage(stdout); return 0;
        default: usage(stderr); return 2;
        }
    }
    if (optind < argc) {
        fprintf(stderr, "gpuaggd: unexpected argument '%s'\n", argv[optind]);
        usage(stderr);
        return 2;
    }

    struct ga_config *cfg = malloc(sizeof *cfg);
    char err[1024];
    if (!cfg) {
        fprintf(stderr, "gpuaggd: out of memory\n");
        return 1;
    }
    if (check) {
        int rc = ga_config_load(cfg, check, err, sizeof err);
        if (rc < 0) {
            fprintf(stderr, "%s\n", err);
        } else {
            printf("%s: configuration is valid\n", check);
            print_sizing(cfg);
        }
        free(cfg);
        return rc < 0 ? 1 : 0;
    }
    if (ga_config_load(cfg, config, err, sizeof err) < 0) {
        ga_log(GA_LOG_ERROR, "config_invalid", "config=%s error=\"%s\"", config, err);
        fprintf(stderr, "gpuaggd: %s\n", err);
        free(cfg);
        return 1;
    }
    /* Reloads re-read the same file even if the working directory changes. */
    char abspath[GA_PATH_MAX];
    if (realpath(config, abspath))
        config = abspath;
    int ready_fd = -1;
    if (!foreground && (ready_fd = background()) < 0) {
        perror("gpuaggd: cannot detach");
        free(cfg);
        return 1;
    }
    return ga_daemon_run(cfg, config, ready_fd);
}
