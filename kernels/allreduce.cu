/* One-shot and two-shot allreduce over peer pointers, in pull form (read the
 * peers' buffers, as vLLM/SGLang's custom allreduce does) and push form (write
 * into the peers' inboxes, then reduce locally). Data moves in 16-byte packs,
 * accumulation is fp32 in rank order 0..n-1 (so every rank gets bitwise the
 * same result), results are rounded once to the element type.
 * Barriers are per block: block b of a rank syncs only with block b of its
 * peers, which is enough because every loop maps an index to the same block
 * on every rank (same grid, same grid-stride loop relative to the slice).
 * Call numbers come from the rank's own signal area (seq[b]), not from the
 * host, so a captured CUDA graph can be replayed any number of times. */
#include <cuda_bf16.h>
#include <cuda_fp16.h>

#include "kernels/device.h"
#include "kernels/kernels.h"

namespace {

struct tr_bf16 {
    typedef unsigned short raw;
    static __device__ float to(raw x) { return __bfloat162float(__ushort_as_bfloat16(x)); }
    static __device__ raw from(float f) { return __bfloat16_as_ushort(__float2bfloat16_rn(f)); }
};
struct tr_fp16 {
    typedef unsigned short raw;
    static __device__ float to(raw x) { return __half2float(__ushort_as_half(x)); }
    static __device__ raw from(float f) { return __half_as_ushort(__float2half_rn(f)); }
};
struct tr_fp32 {
    typedef float raw;
    static __device__ float to(raw x) { return x; }
    static __device__ raw from(float f) { return f; }
};

template <class Tr> struct pack {
    static constexpr int n = 16 / (int)sizeof(typename Tr::raw);
    typename Tr::raw e[n];
};

template <class Tr> __device__ __forceinline__ void acc_add(float *acc, uint4 v)
{
    pack<Tr> p;
    memcpy(&p, &v, 16);
#pragma unroll
    for (int i = 0; i < pack<Tr>::n; i++)
        acc[i] += Tr::to(p.e[i]);
}

template <class Tr> __device__ __forceinline__ uint4 acc_pack(const float *acc)
{
    pack<Tr> p;
#pragma unroll
    for (int i = 0; i < pack<Tr>::n; i++)
        p.e[i] = Tr::from(acc[i]);
    uint4 v;
    memcpy(&v, &p, 16);
    return v;
}

/* The packs of rank r's slice in the two-shot forms: equal parts, the last
 * rank also takes the remainder. */
__device__ __forceinline__ void slice(size_t np, int r, int n, size_t *start, size_t *len)
{
    size_t part = np / (size_t)n;
    *start = part * (size_t)r;
    *len = r == n - 1 ? np - *start : part;
}

/* Barrier k of this call: thread i (< nranks) stores seq into peer i's slot
 * [k][block][rank] and waits for its own slot [k][block][i]. Returns 0 when
 * every thread of the block may go on, else the block must return. */
__device__ int barrier(const kern_ar_args &a, int k, unsigned int seq)
{
    __shared__ int failed;
    if (threadIdx.x == 0)
        failed = 0;
    __syncthreads();
    int t = (int)threadIdx.x;
    if (t < a.nranks) {
        __threadfence_system();
        kdev_st_release(&a.sig[t]->flag[k][blockIdx.x][a.rank], seq);
        int rc = kdev_wait_flag(&a.sig[a.rank]->flag[k][blockIdx.x][t], seq, a.ctl,
                                a.timeout_ns);
        if (rc != KERN_OK) {
            kdev_fail(a.ctl, rc, KERN_WHERE_BARRIER0 + k, a.rank, seq);
            failed = 1;
        }
    }
    __syncthreads();
    return failed;
}

__device__ unsigned int next_seq(const kern_ar_args &a)
{
    __shared__ unsigned int seq;
    if (threadIdx.x == 0) {
        seq = a.sig[a.rank]->seq[blockIdx.x] + 1u;
        a.sig[a.rank]->seq[blockIdx.x] = seq;
    }
    __syncthreads();
    return seq;
}

template <class Tr>
__global__ void __launch_bounds__(KERN_THREADS, 1) oneshot(kern_ar_args a)
{
    const size_t np = a.count * sizeof(typename Tr::raw) / 16;
    const size_t stride = (size_t)gridDim.x * blockDim.x;
    unsigned int seq = next_seq(a);
    if (barrier(a, 0, seq))
        return;
    uint4 *out = (uint4 *)a.out[a.rank];
    for (size_t i = (size_t)blockIdx.x * blockDim.x + threadIdx.x; i < np; i += stride) {
        float acc[pack<Tr>::n] = {};
        for (int r = 0; r < a.nranks; r++)
            acc_add<Tr>(acc, __ldcg((const uint4 *)a.in[r] + i));
        out[i] = acc_pack<Tr>(acc);
    }
    barrier(a, 1, seq); /* peers may not reuse their inputs before we read them */
}

template <class Tr>
__global__ void __launch_bounds__(KERN_THREADS, 1) twoshot(kern_ar_args a)
{
    const size_t np = a.count * sizeof(typename Tr::raw) / 16;
    const size_t stride = (size_t)gridDim.x * blockDim.x;
    const size_t tid = (size_t)blockIdx.x * blockDim.x + threadIdx.x;
    unsigned int seq = next_seq(a);
    if (barrier(a, 0, seq))
        return;
    size_t start, len;
    slice(np, a.rank, a.nranks, &start, &len);
    uint4 *mine = (uint4 *)a.inbox[a.rank];
    for (size_t j = tid; j < len; j += stride) {
        float acc[pack<Tr>::n] = {};
        for (int r = 0; r < a.nranks; r++)
            acc_add<Tr>(acc, __ldcg((const uint4 *)a.in[r] + start + j));
        __stcg(mine + start + j, acc_pack<Tr>(acc));
    }
    if (barrier(a, 1, seq))
        return;
    uint4 *out = (uint4 *)a.out[a.rank];
    for (int q = 0; q < a.nranks; q++) {
        int p = (a.rank + q) % a.nranks;
        slice(np, p, a.nranks, &start, &len);
        const uint4 *src = (const uint4 *)a.inbox[p];
        for (size_t j = tid; j < len; j += stride)
            out[start + j] = __ldcg(src + start + j);
    }
}

template <class Tr>
__global__ void __launch_bounds__(KERN_THREADS, 1) oneshot_push(kern_ar_args a)
{
    const size_t np = a.count * sizeof(typename Tr::raw) / 16;
    const size_t stride = (size_t)gridDim.x * blockDim.x;
    const size_t tid = (size_t)blockIdx.x * blockDim.x + threadIdx.x;
    unsigned int seq = next_seq(a);
    if (barrier(a, 0, seq)) /* peers are done reducing the previous call */
        return;
    const uint4 *in = (const uint4 *)a.in[a.rank];
    for (size_t i = tid; i < np; i += stride) {
        uint4 v = __ldcg(in + i);
        for (int q = 0; q < a.nranks; q++) {
            int p = (a.rank + q) % a.nranks;
            __stcg((uint4 *)a.inbox[p] + (size_t)a.rank * np + i, v);
        }
    }
    if (barrier(a, 1, seq))
        return;
    const uint4 *box = (const uint4 *)a.inbox[a.rank];
    uint4 *out = (uint4 *)a.out[a.rank];
    for (size_t i = tid; i < np; i += stride) {
        float acc[pack<Tr>::n] = {};
        for (int s = 0; s < a.nranks; s++)
            acc_add<Tr>(acc, __ldcg(box + (size_t)s * np + i));
        out[i] = acc_pack<Tr>(acc);
    }
}

template <class Tr>
__global__ void __launch_bounds__(KERN_THREADS, 1) twoshot_push(kern_ar_args a)
{
    const size_t np = a.count * sizeof(typename Tr::raw) / 16;
    const size_t stride = (size_t)gridDim.x * blockDim.x;
    const size_t tid = (size_t)blockIdx.x * blockDim.x + threadIdx.x;
    unsigned int seq = next_seq(a);
    if (barrier(a, 0, seq))
        return;
    size_t start, len;
    const uint4 *in = (const uint4 *)a.in[a.rank];
    for (int q = 0; q < a.nranks; q++) { /* reduce-scatter by writes */
        int p = (a.rank + q) % a.nranks;
        slice(np, p, a.nranks, &start, &len);
        uint4 *dst = (uint4 *)a.inbox[p] + (size_t)a.rank * np + start;
        for (size_t j = tid; j < len; j += stride)
            __stcg(dst + j, __ldcg(in + start + j));
    }
    if (barrier(a, 1, seq))
        return;
    slice(np, a.rank, a.nranks, &start, &len);
    const uint4 *box = (const uint4 *)a.inbox[a.rank];
    for (size_t j = tid; j < len; j += stride) { /* reduce own slice, all-gather by writes */
        float acc[pack<Tr>::n] = {};
        for (int s = 0; s < a.nranks; s++)
            acc_add<Tr>(acc, __ldcg(box + (size_t)s * np + start + j));
        uint4 v = acc_pack<Tr>(acc);
        for (int q = 0; q < a.nranks; q++) {
            int p = (a.rank + q) % a.nranks;
            __stcg((uint4 *)a.out[p] + start + j, v);
        }
    }
    barrier(a, 2, seq); /* every slice has arrived in our output */
}

typedef void ar_kernel_fn(kern_ar_args);

/* [algo][dtype], in the order of kern_ar_algo and kern_dtype. */
ar_kernel_fn *const ar_kernels[4][3] = {
    {oneshot<tr_bf16>, oneshot<tr_fp16>, oneshot<tr_fp32>},
    {twoshot<tr_bf16>, twoshot<tr_fp16>, twoshot<tr_fp32>},
    {oneshot_push<tr_bf16>, oneshot_push<tr_fp16>, oneshot_push<tr_fp32>},
    {twoshot_push<tr_bf16>, twoshot_push<tr_fp16>, twoshot_push<tr_fp32>},
};

} // namespace

extern "C" size_t kern_dtype_bytes(kern_dtype t)
{
    return t == KERN_FP32 ? 4 : 2;
}

extern "C" int kern_ar_blocks(const kern_ar_args *a)
{
    if (a->blocks > 0)
        return a->blocks;
    size_t np = a->count * kern_dtype_bytes(a->dtype) / 16;
    size_t b = (np + KERN_THREADS - 1) / KERN_THREADS;
    return b < 1 ? 1 : b > KERN_MAX_BLOCKS ? KERN_MAX_BLOCKS : (int)b;
}

extern "C" cudaError_t kern_ar_blocks_per_sm(kern_ar_algo algo, kern_dtype t, int *out)
{
    if ((unsigned)algo > KERN_TWOSHOT_PUSH || (unsigned)t > KERN_FP32)
        return cudaErrorInvalidValue;
    return cudaOccupancyMaxActiveBlocksPerMultiprocessor(out, (const void *)ar_kernels[algo][t],
                                                         KERN_THREADS, 0);
}

extern "C" cudaError_t kern_allreduce(kern_ar_algo algo, const kern_ar_args *a, cudaStream_t s)
{
    if ((unsigned)algo > KERN_TWOSHOT_PUSH || (unsigned)a->dtype > KERN_FP32 ||
        a->nranks < 1 || a->nranks > KERN_MAX_RANKS || a->rank < 0 ||
        a->rank >= a->nranks || a->blocks < 0 || a->blocks > KERN_MAX_BLOCKS ||
        (a->count * kern_dtype_bytes(a->dtype)) % 16 != 0 || !a->ctl)
        return cudaErrorInvalidValue;
    kern_ar_args copy = *a;
    void *args[] = {&copy};
    return cudaLaunchKernel((const void *)ar_kernels[algo][a->dtype],
                            dim3((unsigned)kern_ar_blocks(a)), dim3(KERN_THREADS), args, 0, s);
}
