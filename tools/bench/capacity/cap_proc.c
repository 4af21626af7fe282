/* cap_proc.c — child processes, /proc and files for bench_capacity (cap.h). */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "tools/bench/capacity/cap.h"

double cap_now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

static int redirect(const char *path, int fd)
{
    int f = open(path, O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0644);
    if (f < 0 || dup2(f, fd) < 0)
        return -1;
    close(f);
    return 0;
}

pid_t cap_spawn(char *const argv[], const char *out_path, const char *err_path)
{
    fflush(stdout);
    fflush(stderr);
    pid_t pid = fork();
    if (pid < 0) {
        fprintf(stderr, "bench_capacity: fork: %s\n", strerror(errno));
        return -1;
    }
    if (pid == 0) {
        if ((out_path && redirect(out_path, 1) < 0) || (err_path && redirect(err_path, 2) < 0)) {
            fprintf(stderr, "bench_capacity: %s: %s\n", out_path, strerror(errno));
            _exit(127);
        }
        execv(argv[0], argv);
        fprintf(stderr, "bench_capacity: cannot run %s: %s\n", argv[0], strerror(errno));
        _exit(127);
    }
    return pid;
}

int cap_run_capture(char *const argv[], char *out, size_t outlen)
{
    int p[2];
    if (pipe(p) < 0)
        return -1;
    fflush(stdout);
    pid_t pid = fork();
    if (pid < 0) {
        close(p[0]);
        close(p[1]);
        return -1;
    }
    if (pid == 0) {
        dup2(p[1], 1);
        close(p[0]);
        close(p[1]);
        execv(argv[0], argv);
        fprintf(stderr, "bench_capacity: cannot run %s: %s\n", argv[0], strerror(errno));
        _exit(127);
    }
    close(p[1]);
    size_t len = 0;
    char tmp[4096];
    ssize_t n;
    while ((n = read(p[0], tmp, sizeof tmp)) != 0) {
        if (n < 0 && errno == EINTR)
            continue;
        if (n < 0)
            break;
        for (ssize_t i = 0; i < n && len + 1 < outlen; i++)
            out[len++] = tmp[i];
    }
    close(p[0]);
    while (len > 0 && (out[len - 1] == '\n' || out[len - 1] == '\r'))
        len--;
    if (outlen)
        out[len] = 0;
    int st;
    while (waitpid(pid, &st, 0) < 0)
        if (errno != EINTR)
            return -1;
    return WIFEXITED(st) ? WEXITSTATUS(st) : -1;
}

int cap_wait(pid_t pid, double timeout_s)
{
    double end = cap_now() + timeout_s;
    for (;;) {
        int st;
        pid_t r = waitpid(pid, &st, WNOHANG);
        if (r == pid)
            return WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st);
        if (r < 0 && errno != EINTR)
            return -1;
        if (cap_now() >= end)
            return -1;
        struct timespec ts = { 0, 20 * 1000000 };
        nanosleep(&ts, NULL);
    }
}

long cap_rss_kib(pid_t pid)
{
    char path[64], line[256];
    snprintf(path, sizeof path, "/proc/%d/status", (int)pid);
    FILE *f = fopen(path, "r");
    if (!f)
        return -1;
    long kib = -1;
    while (fgets(line, sizeof line, f))
        if (strncmp(line, "VmRSS:", 6) == 0) {
            kib = strtol(line + 6, NULL, 10);
            break;
        }
    fclose(f);
    return kib;
}

int cap_clean_dir(const char *dir)
{
    if (mkdir(dir, 0755) < 0 && errno != EEXIST) {
        fprintf(stderr, "bench_capacity: mkdir %s: %s\n", dir, strerror(errno));
        return -1;
    }
    DIR *d = opendir(dir);
    if (!d) {
        fprintf(stderr, "bench_capacity: %s: %s\n", dir, strerror(errno));
        return -1;
    }
    struct dirent *e;
    int rc = 0;
    while ((e = readdir(d))) {
        if (e->d_type != DT_REG)
            continue;
        if (unlinkat(dirfd(d), e->d_name, 0) < 0) {
            fprintf(stderr, "bench_capacity: remove %s/%s: %s\n", dir, e->d_name, strerror(errno));
            rc = -1;
        }
    }
    closedir(d);
    return rc;
}
