/* Point-to-point and timing kernels: a 16-byte copy (a remote read or a
 * remote write depending on which device runs it), the same copy with U
 * loads in flight per thread (NCCL's reduceCopy layout), a one-thread flag
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

/* One 16-byte load that the compiler may neither merge nor move across other
   memory accesses (NCCL's ld_volatile_global, src/device/op128.h). */
static __device__ __forceinline__ uint4 ld_volatile16(const uint4 *p)
{
    uint4 v;
    asm volatile("ld.volatile.global.v4.u32 {%0, %1, %2, %3}, [%4];"
                 : "=r"(v.x), "=r"(v.y), "=r"(v.z), "=r"(v.w)
                 : "l"(p)
                 : "memory");
    return v;
}

/* The copy as NCCL's reduceCopyPacks moves data (src/device/common_kernel.h):
   a warp takes a hunk of U x 32 packs of 16 bytes per trip, lane l packs l,
   l + 32, ..., l + 32 (U - 1) of it, and issues all U loads before its first
   store, so every thread has U loads in flight. Packs past the last whole
   hunk go one per thread. */
template <int U>
__global__ void __launch_bounds__(1024) copy_unroll(uint4 *dst, const uint4 *src, size_t n)
{
    const size_t hunk = (size_t)U * 32;
    const size_t nhunks = n / hunk;
    const size_t warp = ((size_t)blockIdx.x * blockDim.x + threadIdx.x) / 32;
    const size_t nwarps = (size_t)gridDim.x * blockDim.x / 32;
    const unsigned lane = threadIdx.x % 32;
    for (size_t h = warp; h < nhunks; h += nwarps) {
        const uint4 *s = src + h * hunk + lane;
        uint4 *d = dst + h * hunk + lane;
        uint4 v[U];
#pragma unroll
        for (int u = 0; u < U; u++)
            v[u] = ld_volatile16(s + 32 * u);
#pragma unroll
        for (int u = 0; u < U; u++)
            d[32 * u] = v[u];
    }
    const size_t stride = (size_t)gridDim.x * blockDim.x;
    for (size_t i = nhunks * hunk + (size_t)blockIdx.x * blockDim.x + threadIdx.x; i < n;
         i += stride)
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

/* Spin for duration_ns from now, leaving early once the host raises abort
 * (checked every 1024 turns). */
__device__ static void spin_for(uint64_t duration_ns, const kern_ctl *ctl)
{
    uint64_t t0 = kdev_now_ns();
    unsigned int n = 0;
    while (kdev_now_ns() - t0 < duration_ns)
        if ((++n & 1023u) == 0 && ctl && ctl->abort)
            return;
}

__global__ void spin(uint64_t duration_ns, kern_ctl *ctl)
{
    if (threadIdx.x != 0)
        return;
    spin_for(duration_ns, ctl);
}

/* A ring's two ranks, one thread each (kern_pair_spin). */
__global__ void pair_spin(volatile unsigned int *mine, const volatile unsigned int *peer,
                          uint64_t *stamp, int stamps, uint64_t duration_ns, kern_ctl *ctl,
                          uint64_t timeout_ns)
{
    unsigned int v = *mine + 1u;
    stamp[v % (unsigned int)stamps] = kdev_now_ns();
    kdev_st_release(mine, v);
    int rc = kdev_wait_flag(peer, v, ctl, timeout_ns);
    if (rc != KERN_OK) {
        kdev_fail(ctl, rc, KERN_WHERE_PAIR, 0, v);
        return;
    }
    spin_for(duration_ns, ctl);
}

__global__ void empty(void) {}

/* One thread stores 1..n into *flag: mode 2 as a custom kernel's barrier
 * signals a peer (a system-scope fence, then a release store), mode 1 as the
 * latency ping-pong signals (the release store alone), mode 0 plain volatile
 * stores (the loop's own cost, which the caller subtracts). */
__global__ void signal_loop(volatile unsigned int *flag, int n, int mode)
{
    for (int i = 1; i <= n; i++) {
        if (mode == 2)
            __threadfence_system();
        if (mode >= 1)
            kdev_st_release(flag, (unsigned int)i);
        else
            *flag = (unsigned int)i;
    }
}

/* A slice's post as NCCL's Simple sender makes it (src/device/prims_simple.h
 * genericOp, postPeer): the block's 512 threads store bytes of data, the
 * block meets at a barrier, one thread fences (fence.acq_rel.sys, mode 2;
 * mode 1: no fence) and stores the step into *flag (st.relaxed.sys), and the
 * block meets again before the next slice, n slices in turn. Mode 0 stores
 * no data (the loop, the barriers and the flag alone). */
__global__ void __launch_bounds__(512) post_loop(uint4 *data, size_t n16,
                                                 volatile unsigned int *flag, int n, int mode)
{
    const uint4 v = make_uint4(1u, 2u, 3u, 4u);
    for (int i = 1; i <= n; i++) {
        if (mode > 0)
            for (size_t k = threadIdx.x; k < n16; k += blockDim.x)
                data[k] = v;
        __syncthreads();
        if (threadIdx.x == 0) {
            if (mode == 2)
                asm volatile("fence.acq_rel.sys;" ::: "memory");
            asm volatile("st.relaxed.sys.global.u32 [%1], %0;" ::"r"((unsigned int)i),
                         "l"(flag)
                         : "memory");
        }
        __syncthreads();
    }
}

/* A slice's receive as NCCL's Simple receiver makes it (prims_simple.h
 * genericOp: waitPeer, then reduceCopy): in mode 1 one thread first reads
 * the tail *flag (ld.volatile, as loadStepValue; the flag already holds
 * more than n, so one read suffices) and the block meets; then its 512
 * threads load bytes of data with 8 16-byte loads in flight each (a warp
 * takes 8 x 32 packs a trip, ncclCollUnroll), fold them into one register
 * and meet again; n slices in turn, the fold stored into *sink at the end.
 * Mode 0 loads without reading the flag. */
__global__ void __launch_bounds__(512) recv_loop(const uint4 *data, size_t n16,
                                                 const volatile unsigned int *flag, int n,
                                                 int mode, uint4 *sink)
{
    __shared__ unsigned int seen;
    uint4 acc = make_uint4(0u, 0u, 0u, 0u);
    const size_t hunk = 8 * 32, warp = threadIdx.x / 32, lane = threadIdx.x % 32;
    const size_t warps = blockDim.x / 32;
    for (int i = 1; i <= n; i++) {
        if (mode == 1 && threadIdx.x == 0)
            seen = *flag;
        __syncthreads();
        for (size_t base = warp * hunk; base + hunk <= n16; base += warps * hunk) {
            uint4 v[8];
#pragma unroll
            for (int u = 0; u < 8; u++)
                v[u] = ld_volatile16(data + base + (size_t)u * 32 + lane);
#pragma unroll
            for (int u = 0; u < 8; u++)
                acc.x ^= v[u].x, acc.y ^= v[u].y, acc.z ^= v[u].z, acc.w ^= v[u].w;
        }
        __syncthreads();
    }
    if (mode == 1 && threadIdx.x == 0)
        acc.x ^= seen;
    if (acc.x == 0x9e3779b9u && acc.y == 0x7f4a7c15u) /* practically never: keeps the loads */
        sink[threadIdx.x] = acc;
}

} // namespace

extern "C" cudaError_t kern_recv_loop(const void *data, size_t bytes, const unsigned int *flag,
                                      int n, int mode, void *sink, cudaStream_t s)
{
    if (bytes % (16 * 8 * 32) || n < 1 || mode < 0 || mode > 1 || (uintptr_t)data % 16)
        return cudaErrorInvalidValue;
    recv_loop<<<1, 512, 0, s>>>((const uint4 *)data, bytes / 16, flag, n, mode, (uint4 *)sink);
    return cudaGetLastError();
}

extern "C" cudaError_t kern_post_loop(void *data, size_t bytes, unsigned int *flag, int n,
                                      int mode, cudaStream_t s)
{
    if (bytes % 16 || n < 1 || mode < 0 || mode > 2 || (uintptr_t)data % 16)
        return cudaErrorInvalidValue;
    post_loop<<<1, 512, 0, s>>>((uint4 *)data, bytes / 16, flag, n, mode);
    return cudaGetLastError();
}

extern "C" cudaError_t kern_copy(void *dst, const void *src, size_t bytes, int blocks,
                                 cudaStream_t s)
{
    if (bytes % 16 || blocks < 1 || ((uintptr_t)dst | (uintptr_t)src) % 16)
        return cudaErrorInvalidValue;
    copy16<<<blocks, 512, 0, s>>>((uint4 *)dst, (const uint4 *)src, bytes / 16);
    return cudaGetLastError();
}

extern "C" cudaError_t kern_copy_unroll(void *dst, const void *src, size_t bytes, int blocks,
                                        int threads, int unroll, cudaStream_t s)
{
    if (bytes % 16 || blocks < 1 || threads < 32 || threads > 1024 || threads % 32 ||
        ((uintptr_t)dst | (uintptr_t)src) % 16)
        return cudaErrorInvalidValue;
    uint4 *d = (uint4 *)dst;
    const uint4 *sr = (const uint4 *)src;
    size_t n = bytes / 16;
    switch (unroll) { /* template arguments: one instance per depth */
    case 1:
        if (threads == KERN_THREADS) /* the plain copy: files of one load in flight stay comparable */
            copy16<<<blocks, threads, 0, s>>>(d, sr, n);
        else
            copy_unroll<1><<<blocks, threads, 0, s>>>(d, sr, n);
        break;
    case 2: copy_unroll<2><<<blocks, threads, 0, s>>>(d, sr, n); break;
    case 4: copy_unroll<4><<<blocks, threads, 0, s>>>(d, sr, n); break;
    case 8: copy_unroll<8><<<blocks, threads, 0, s>>>(d, sr, n); break;
    default: return cudaErrorInvalidValue;
    }
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

extern "C" cudaError_t kern_signal_loop(unsigned int *flag, int n, int mode, cudaStream_t s)
{
    if (n < 1 || mode < 0 || mode > 2)
        return cudaErrorInvalidValue;
    signal_loop<<<1, 1, 0, s>>>(flag, n, mode);
    return cudaGetLastError();
}

extern "C" cudaError_t kern_pair_spin(unsigned int *mine, const unsigned int *peer,
                                      uint64_t *stamp, int stamps, uint64_t duration_ns,
                                      kern_ctl *ctl, uint64_t timeout_ns, cudaStream_t s)
{
    if (stamps < 1)
        return cudaErrorInvalidValue;
    pair_spin<<<1, 1, 0, s>>>(mine, peer, stamp, stamps, duration_ns, ctl, timeout_ns);
    return cudaGetLastError();
}

extern "C" cudaError_t kern_empty(cudaStream_t s)
{
    empty<<<1, 1, 0, s>>>();
    return cudaGetLastError();
}
