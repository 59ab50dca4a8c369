#ifndef PACKD_CUV_SHIM_H
#define PACKD_CUV_SHIM_H
#include <uv.h>
#include <signal.h>
#include <sys/resource.h>

/* uv_loop_configure is variadic, which Swift cannot call: the one option packd sets, by name.
   Makes uv_metrics_idle_time() count the time the loop waits in the kernel (LoopStallMeter). */
static inline int packd_uv_loop_measure_idle_time(uv_loop_t *loop) {
    return uv_loop_configure(loop, UV_METRICS_IDLE_TIME);
}
#endif
