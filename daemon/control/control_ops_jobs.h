/* control_ops_jobs.h — the job.* control ops (proto/PROTOCOL.md, "Jobs"),
 * the jobs sections of status and stats, and the encoders the unit tests
 * check against the documented bytes. */
#ifndef GA_CONTROL_OPS_JOBS_H
#define GA_CONTROL_OPS_JOBS_H

#include <msgpack.h>
#include <stddef.h>
#include <stdint.h>

#include "daemon/control/control.h"
#include "daemon/jobs/jobs.h"
#include "proto/ctl_proto.h"

/* A result larger than this is read in chunks ({"id", "offset"}). */
#define CONTROL_OPS_JOBS_CHUNK (CTL_MAX_FRAME - 4096)
/* Bytes of job entries in one job.list response. */
#define CONTROL_OPS_JOBS_LIST_BUDGET (CTL_MAX_FRAME - 4096)
/* How often job.submit {"wait": true} looks at its job, ms. */
#define CONTROL_OPS_JOBS_WAIT_POLL_MS 20

/* Handlers; see ga_ctl_handler and proto/PROTOCOL.md for args and results. */
int ga_ctl_op_job_submit(struct ga_daemon *d, const msgpack_object *args, struct ga_ctl_req *req,
                         msgpack_packer *pk, char *err, size_t errlen);
int ga_ctl_op_job_status(struct ga_daemon *d, const msgpack_object *args, struct ga_ctl_req *req,
                         msgpack_packer *pk, char *err, size_t errlen);
int ga_ctl_op_job_result(struct ga_daemon *d, const msgpack_object *args, struct ga_ctl_req *req,
                         msgpack_packer *pk, char *err, size_t errlen);
int ga_ctl_op_job_cancel(struct ga_daemon *d, const msgpack_object *args, struct ga_ctl_req *req,
                         msgpack_packer *pk, char *err, size_t errlen);
int ga_ctl_op_job_list(struct ga_daemon *d, const msgpack_object *args, struct ga_ctl_req *req,
                       msgpack_packer *pk, char *err, size_t errlen);

/* Answer every job.submit still waiting with ESHUTDOWN and close the poll
 * timer (its memory is freed in the close callback).  Loop thread; the
 * drain calls it before stopping the job manager. */
void control_ops_jobs_waiters_close(struct ga_daemon *d);

/* status: the "jobs" map (stats' jobs.* are rows of daemon/stat_table.c). */
void control_ops_jobs_pack_status(struct ga_daemon *d, msgpack_packer *pk);

/* ---- encoders and decoders (tested byte for byte) ----------------------- */

/* A job's status map, as job.status answers (14 entries). */
void control_ops_jobs_pack_info(msgpack_packer *pk, const struct ga_job_info *i);

/* A chunk of a result's bytes: {"total", "offset", "data": bin, "next":
 * uint | nil}; at most max bytes from offset (offset <= len). */
void control_ops_jobs_pack_chunk(msgpack_packer *pk, const uint8_t *res, size_t len, uint64_t offset,
                                 size_t max);

/* args["id"], a positive job id: 0, or GA_EBADARG with err. */
int control_ops_jobs_get_id(const msgpack_object *args, uint64_t *id, char *err, size_t errlen);

/* job.submit's "params" map (absent or nil: none) into p: str values as
 * they are, ints in decimal, floats as %.17g, booleans as 1/0.  0, or
 * GA_EBADARG naming the parameter. */
int control_ops_jobs_parse_params(const msgpack_object *args, struct ga_job_params *p, char *err,
                                  size_t errlen);

#endif
