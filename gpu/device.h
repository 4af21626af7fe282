/* device.h — the GPUs this host has, as the CUDA runtime reports them.
 *
 * Built with CUDA (gpu/cuda/device.cu) this asks the runtime; built without
 * (gpu/nocuda/device.c) it reports that no GPU support was compiled in.  The
 * daemon uses the answer to choose backends and to fall back to the CPU. */
#ifndef GA_DEVICE_H
#define GA_DEVICE_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

#define GA_GPU_MAX 64

struct ga_gpu_info {
    int index;                 /* CUDA device ordinal */
    char name[256];
    uint64_t mem_total;        /* bytes */
    uint64_t mem_free;         /* bytes, at probe time */
    int cc_major, cc_minor;    /* compute capability */
    int sm_count;
    int usable;                /* 1 if our kernels can run on it (sm_90 build) */
    char why[160];             /* why not usable, "" if usable */
};

/* Fill out[0..max) with the devices found.  Returns the count (>= 0), or
 * GA_ENOGPU with the reason in err (no driver, no device, built without
 * CUDA).  Never aborts; safe to call on hosts without a GPU. */
int ga_gpu_probe(struct ga_gpu_info *out, int max, char *err, size_t errlen);

/* 1 if this binary has the CUDA backend compiled in. */
int ga_gpu_compiled(void);

#ifdef __cplusplus
}
#endif
#endif
