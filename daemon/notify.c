/* notify.c — sd_notify over NOTIFY_SOCKET (see notify.h). */
#include "daemon/notify.h"

#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <time.h>
#include <unistd.h>

#include "proto/ga_err.h"

int ga_notify(const char *fmt, ...)
{
    const char *path = getenv("NOTIFY_SOCKET");
    if (!path || !*path)
        return 0;
    if ((path[0] != '/' && path[0] != '@') || strlen(path) >= sizeof(((struct sockaddr_un *)0)->sun_path))
        return GA_EINVAL;

    char msg[1024];
    va_list ap;
    va_start(ap, fmt);
    int n = vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    if (n < 0 || (size_t)n >= sizeof msg)
        return GA_ERANGE;

    struct sockaddr_un sa = { .sun_family = AF_UNIX };
    size_t plen = strlen(path);
    memcpy(sa.sun_path, path, plen);
    if (sa.sun_path[0] == '@')
        sa.sun_path[0] = '\0';            /* abstract namespace */
    socklen_t salen = (socklen_t)(offsetof(struct sockaddr_un, sun_path) + plen);

    int fd = socket(AF_UNIX, SOCK_DGRAM | SOCK_CLOEXEC, 0);
    if (fd < 0)
        return -errno;
    int rc = 0;
    if (sendto(fd, msg, (size_t)n, MSG_NOSIGNAL, (struct sockaddr *)&sa, salen) < 0)
        rc = -errno;
    close(fd);
    return rc;
}

uint64_t ga_notify_watchdog_usec(void)
{
    const char *us = getenv("WATCHDOG_USEC");
    if (!us || !*us)
        return 0;
    const char *pid = getenv("WATCHDOG_PID");
    if (pid && *pid && strtol(pid, NULL, 10) != (long)getpid())
        return 0;
    char *end;
    unsigned long long v = strtoull(us, &end, 10);
    return *end ? 0 : (uint64_t)v;
}
