/* ga_err.c — error code → text, in one place. */
#include "proto/ga_err.h"

#include <stdarg.h>
#include <stdio.h>
#include <string.h>

static const struct { int code; const char *name, *text; } own[] = {
    { GA_EPROTO,    "EPROTO",    "malformed message" },
    { GA_EBADOP,    "EBADOP",    "unknown operation" },
    { GA_EBADARG,   "EBADARG",   "missing or invalid argument" },
    { GA_ETOOBIG,   "ETOOBIG",   "over a configured size limit" },
    { GA_EBUSY,     "EBUSY",     "queue full, retry later" },
    { GA_ENOGPU,    "ENOGPU",    "no usable GPU" },
    { GA_ECUDA,     "ECUDA",     "CUDA call failed" },
    { GA_EDB,       "EDB",       "database error" },
    { GA_ECONFIG,   "ECONFIG",   "invalid configuration" },
    { GA_EAUTH,     "EAUTH",     "authentication failed" },
    { GA_ESHUTDOWN, "ESHUTDOWN", "daemon is shutting down" },
    { GA_ELATE,     "ELATE",     "point older than the back window" },
    { GA_ECORRUPT,  "ECORRUPT",  "corrupt record" },
};

static const struct { int code; const char *name; } sys[] = {
    { GA_ENOMEM, "ENOMEM" }, { GA_EINVAL, "EINVAL" }, { GA_ENOENT, "ENOENT" },
    { GA_EIO, "EIO" }, { GA_EAGAIN, "EAGAIN" }, { GA_EEXIST, "EEXIST" },
    { GA_ERANGE, "ERANGE" }, { GA_ENOSPC, "ENOSPC" }, { GA_ECANCELED, "ECANCELED" },
    { GA_ETIMEDOUT, "ETIMEDOUT" },
};

const char *ga_strerror(int err)
{
    if (err == 0)
        return "success";
    for (size_t i = 0; i < sizeof own / sizeof own[0]; i++)
        if (own[i].code == err)
            return own[i].text;
    if (err < 0 && err > -4096)
        return strerror(-err);
    return "unknown error";
}

const char *ga_errname(int err)
{
    if (err == 0)
        return "OK";
    for (size_t i = 0; i < sizeof own / sizeof own[0]; i++)
        if (own[i].code == err)
            return own[i].name;
    for (size_t i = 0; i < sizeof sys / sizeof sys[0]; i++)
        if (sys[i].code == err)
            return sys[i].name;
    return "EUNKNOWN";
}

int ga_fail(int code, char *err, size_t errlen, const char *fmt, ...)
{
    if (err && errlen) {
        va_list ap;
        va_start(ap, fmt);
        vsnprintf(err, errlen, fmt, ap);
        va_end(ap);
    }
    return code;
}
