/* ga_err.h — error codes shared by every gpuagg module and the wire protocol.
 *
 * Functions return 0 (or a count) on success and a negative GA_E* code on
 * failure.  Codes below -4096 are gpuagg's own; the rest are -errno.  The
 * same numbers travel in control/ingest error replies (proto/PROTOCOL.md). */
#ifndef GA_ERR_H
#define GA_ERR_H

#include <errno.h>

enum {
    GA_OK        = 0,
    GA_ENOMEM    = -ENOMEM,
    GA_EINVAL    = -EINVAL,
    GA_ENOENT    = -ENOENT,
    GA_EIO       = -EIO,
    GA_EAGAIN    = -EAGAIN,
    GA_EEXIST    = -EEXIST,
    GA_ERANGE    = -ERANGE,
    GA_ENOSPC    = -ENOSPC,
    GA_ECANCELED = -ECANCELED,
    GA_ETIMEDOUT = -ETIMEDOUT,
    GA_EPROTO    = -4097,   /* malformed frame / message              */
    GA_EBADOP    = -4098,   /* unknown operation                      */
    GA_EBADARG   = -4099,   /* an argument is missing or of bad type  */
    GA_ETOOBIG   = -4100,   /* frame or batch over a configured limit */
    GA_EBUSY     = -4101,   /* queue full; retry later                */
    GA_ENOGPU    = -4102,   /* no usable GPU / built without CUDA     */
    GA_ECUDA     = -4103,   /* a CUDA call failed                     */
    GA_EDB       = -4104,   /* PostgreSQL error                       */
    GA_ECONFIG   = -4105,   /* configuration invalid                  */
    GA_EAUTH     = -4106,   /* bad token / signature                  */
    GA_ESHUTDOWN = -4107,   /* daemon is draining                     */
    GA_ELATE     = -4108,   /* point older than the back window       */
    GA_ECORRUPT  = -4109,   /* CRC mismatch, torn record              */
};

/* Text for an error code; never NULL, static storage. */
const char *ga_strerror(int err);
/* Short symbolic name ("EINVAL", "EPROTO"); never NULL, static storage. */
const char *ga_errname(int err);

#include <stddef.h>

/* Format a reason into err[errlen] (skipped when err is NULL or errlen 0)
 * and return code: `return ga_fail(GA_EPROTO, err, errlen, "'%s' missing", k);` */
int ga_fail(int code, char *err, size_t errlen, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));

#endif
