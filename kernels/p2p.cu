/* Point-to-point and timing kernels: a 16-byte copy (a remote read or a
 * remote write depending on which device runs it), a one-thread flag
 * ping-pong for one-way latency, a %globaltimer spin for trace compute, and
 * an empty kernel for launch overheads. Waits are bounded (kernels/device.h). */
#include "kernels/device.h"
#include "kernels/kernels.h"

namespace {

__global__ void __launch_bounds__(512) copy16(uint4 *dst, const uint4 *src, size_t n)
{
    const size_t stride = (size_t)gridDim.x * blockDim.x;
    for (size_t i = (size_t)blockIdx.x * blockDim.x + threadIdx.x; i < n; i += stride)
        dst[i] = src[i];
}

__global__ void pingpong(volatile unsigned int *mine, volatile unsigned int *peer,
                         unsigned int base, int iters, int initiator, kern_ctl *ctl,
                         uint64_t timeout_ns)
{
    for (int i = 1; i <= iters; i++) {
        unsigned int v = base + (unsigned int)i;
        if (initiator)
            kdev_st_release(peer, v);
        int rc = kdev_wait_flag(mine, v, ctl, timeout_ns);
        if (rc != KERN_OK) {
            kdev_fail(ctl, rc, KERN_WHERE_PINGPONG, initiator, v);
            return;
        }
        if (!initiator)
            kdev_st_release(peer, v);
    }
}

__global__ void spin(uint64_t duration_ns, kern_ctl *ctl)
{
    if (threadIdx.x != 0)
        return;
    uint64_t t0 = kdev_now_ns();
    unsigned int n = 0;
    while (kdev_now_ns() - t0 < duration_ns)
        if ((++n & 1023u) == 0 && ctl && ctl->abort)
            return;
}

__global__ void empty(void) {}

} // namespace

extern "C" cudaError_t kern_copy(void *dst, const void *src, size_t bytes, int blocks,
                                 cudaStream_t s)
{
    if (bytes % 16 || blocks < 1 || ((uintptr_t)dst | (uintptr_t)src) % 16)
        return cudaErrorInvalidValue;
    copy16<<<blocks, 512, 0, s>>>((uint4 *)dst, (const uint4 *)src, bytes / 16);
    return cudaGetLastError();
}

extern "C" cudaError_t kern_pingpong(volatile unsigned int *my_flag,
                                     volatile unsigned int *peer_flag, unsigned int base,
                                     int iters, int initiator, kern_ctl *ctl,
                                     uint64_t timeout_ns, cudaStream_t s)
{
    if (iters < 1)
        return cudaErrorInvalidValue;
    pingpong<<<1, 1, 0, s>>>(my_flag, peer_flag, base, iters, initiator, ctl, timeout_ns);
    return cudaGetLastError();
}

extern "C" cudaError_t kern_spin(uint64_t duration_ns, int blocks, kern_ctl *ctl, cudaStream_t s)
{
    if (blocks < 1)
        return cudaErrorInvalidValue;
    spin<<<blocks, 32, 0, s>>>(duration_ns, ctl);
    return cudaGetLastError();
}

extern "C" cudaError_t kern_empty(cudaStream_t s)
{
    empty<<<1, 1, 0, s>>>();
    return cudaGetLastError();
}
