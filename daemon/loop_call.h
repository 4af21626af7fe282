/* loop_call.h — run a function on the libuv loop thread from another
 * thread and wait for it: how the HTTP handlers (their own threads) read
 * state that only the loop thread may touch (stats, readiness), and how
 * /healthz proves the loop is turning.
 *
 * Lock order: none besides the call's own mutex, which fn never holds
 * (fn runs with it released). */
#ifndef GA_LOOP_CALL_H
#define GA_LOOP_CALL_H

#include <uv.h>

struct ga_loop_call;

/* Create on the loop thread.  Returns 0 or GA_ENOMEM / GA_EIO. */
int ga_loop_call_open(struct ga_loop_call **out, uv_loop_t *loop);

/* From any thread but the loop's: run fn(arg) on the loop thread and wait
 * for it to return, at most timeout_ms.  Returns 0 once fn has run;
 * GA_ETIMEDOUT when the loop did not start it in time (it then never
 * runs: arg may be freed); GA_ESHUTDOWN after ga_loop_call_close began.
 * fn must be quick and must not call ga_loop_call. */
int ga_loop_call(struct ga_loop_call *lc, void (*fn)(void *arg), void *arg, int timeout_ms);

/* On the loop thread: refuse new calls, fail waiting ones with
 * GA_ESHUTDOWN, and close; the struct is freed in its close callback.
 * Call it before joining threads that may be waiting in ga_loop_call.
 * NULL ok. */
void ga_loop_call_close(struct ga_loop_call *lc);

#endif
