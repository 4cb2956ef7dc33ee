/* Device-side helpers shared by the .cu files (C++, include only from .cu):
 * %globaltimer, system-scope release stores and acquire loads for flags, and
 * the bounded flag wait that every spinning kernel uses. */
#ifndef KERNELS_DEVICE_H
#define KERNELS_DEVICE_H

#include <stdint.h>

#include "kernels/kernels.h"

static __device__ __forceinline__ uint64_t kdev_now_ns(void)
{
    uint64_t t;
    asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(t));
    return t;
}

/* Flags cross devices: release/acquire at system scope (sm_70+). */
static __device__ __forceinline__ void kdev_st_release(volatile unsigned int *p, unsigned int v)
{
    asm volatile("st.release.sys.global.u32 [%1], %0;" ::"r"(v), "l"(p) : "memory");
}

static __device__ __forceinline__ unsigned int kdev_ld_acquire(const volatile unsigned int *p)
{
    unsigned int v;
    asm volatile("ld.acquire.sys.global.u32 %0, [%1];" : "=r"(v) : "l"(p) : "memory");
    return v;
}

/* Record the first failure in the host-visible control block and ask every
 * other waiting kernel to give up too (plain stores: peer atomics are not
 * available everywhere, and a lost race only loses the diagnostic detail). */
static __device__ void kdev_fail(kern_ctl *ctl, int code, int where, int rank,
                                 unsigned int waited_for)
{
    if (!ctl)
        return;
    if (ctl->error == 0) {
        ctl->where = where;
        ctl->rank = rank;
        ctl->block = (int)blockIdx.x;
        ctl->waited_for = waited_for;
        __threadfence_system();
        ctl->error = code;
    }
    __threadfence_system();
    ctl->abort = 1;
}

/* Wait until *p reaches want (wrap-around safe). Returns KERN_OK, or
 * KERN_ERR_TIMEOUT / KERN_ERR_ABORTED (the abort flag is polled every 256
 * spins so that host memory is not hammered). */
static __device__ int kdev_wait_flag(const volatile unsigned int *p, unsigned int want,
                                     kern_ctl *ctl, uint64_t timeout_ns)
{
    uint64_t t0 = 0;
    unsigned int spins = 0;
    while ((int)(kdev_ld_acquire(p) - want) < 0) {
        if ((++spins & 255u) == 0) {
            if (t0 == 0)
                t0 = kdev_now_ns();
            else if (kdev_now_ns() - t0 > timeout_ns)
                return KERN_ERR_TIMEOUT;
            if (ctl && ctl->abort)
                return KERN_ERR_ABORTED;
        }
    }
    return KERN_OK;
}

#endif
