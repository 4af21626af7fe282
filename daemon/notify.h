/* notify.h — systemd's notify protocol (sd_notify(3)) without libsystemd.
 *
 * When NOTIFY_SOCKET is set, messages such as "READY=1", "RELOADING=1",
 * "STOPPING=1", "STATUS=..." and "WATCHDOG=1" go to it as one datagram
 * each.  When it is unset every call is a no-op returning 0. */
#ifndef GA_NOTIFY_H
#define GA_NOTIFY_H

#include <stdint.h>

/* Send one state string, printf-style.  Returns 0 (also when no socket is
 * configured) or a negative GA_E* code. */
int ga_notify(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

/* The watchdog interval systemd asked for (WATCHDOG_USEC, honouring
 * WATCHDOG_PID), in microseconds; 0 when no watchdog is requested. */
uint64_t ga_notify_watchdog_usec(void);

#endif
