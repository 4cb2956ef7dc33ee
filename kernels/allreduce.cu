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

/* ---- KERN_SHM_RING: NCCL's ring Simple over host memory (kernels.h) ---- */

enum { SHM_WORKERS = 512, SHM_UNROLL = 8, SHM_STEP_PACKS = KERN_SHM_STEP_BYTES / 16 };

__device__ __forceinline__ uint4 shm_ldv(const uint4 *p)
{
    uint4 v; /* NCCL's ld_volatile_global: every load reaches memory */
    asm volatile("ld.volatile.global.v4.u32 {%0, %1, %2, %3}, [%4];"
                 : "=r"(v.x), "=r"(v.y), "=r"(v.z), "=r"(v.w)
                 : "l"(p)
                 : "memory");
    return v;
}

template <class Tr> __device__ __forceinline__ uint4 shm_add(uint4 a, uint4 b)
{
    float acc[pack<Tr>::n] = {};
    acc_add<Tr>(acc, a);
    acc_add<Tr>(acc, b);
    return acc_pack<Tr>(acc);
}

/* One slice as reduceCopyPacks moves it: a warp takes hunks of SHM_UNROLL x
   32 packs, loading all of a hunk (from s0, and s1 when given) before it
   reduces and stores (into d0, and d1 when given); the rest one pack per
   thread. */
template <class Tr>
__device__ void shm_copy(const uint4 *s0, const uint4 *s1, uint4 *d0, uint4 *d1, size_t len)
{
    const size_t hunk = (size_t)SHM_UNROLL * 32, nh = len / hunk;
    const unsigned tid = threadIdx.x, lane = tid % 32;
    for (size_t h = tid / 32; h < nh; h += SHM_WORKERS / 32) {
        size_t o = h * hunk + lane;
        uint4 v[SHM_UNROLL], w[SHM_UNROLL];
#pragma unroll
        for (int u = 0; u < SHM_UNROLL; u++)
            v[u] = shm_ldv(s0 + o + 32 * u);
        if (s1) {
#pragma unroll
            for (int u = 0; u < SHM_UNROLL; u++)
                w[u] = shm_ldv(s1 + o + 32 * u);
#pragma unroll
            for (int u = 0; u < SHM_UNROLL; u++)
                v[u] = shm_add<Tr>(v[u], w[u]);
        }
#pragma unroll
        for (int u = 0; u < SHM_UNROLL; u++) {
            d0[o + 32 * u] = v[u];
            if (d1)
                d1[o + 32 * u] = v[u];
        }
    }
    for (size_t i = nh * hunk + tid; i < len; i += SHM_WORKERS) {
        uint4 v = shm_ldv(s0 + i);
        if (s1)
            v = shm_add<Tr>(v, shm_ldv(s1 + i));
        d0[i] = v;
        if (d1)
            d1[i] = v;
    }
}

/* Bounded wait until *p (a step counter in host memory) reaches want. */
__device__ int shm_wait(const volatile unsigned int *p, unsigned int want, const kern_ar_args &a)
{
    uint64_t t0 = 0;
    unsigned int spins = 0;
    while ((int)(*p - want) < 0) {
        if ((++spins & 255u) == 0) {
            if (t0 == 0)
                t0 = kdev_now_ns();
            else if (kdev_now_ns() - t0 > a.timeout_ns)
                return KERN_ERR_TIMEOUT;
            if (a.ctl->abort)
                return KERN_ERR_ABORTED;
        }
    }
    return KERN_OK;
}

struct shm_chan {
    volatile unsigned int *tail, *head; /* mine: written by the previous rank / by me */
    volatile unsigned int *next_tail, *next_head; /* the next rank's */
    uint4 *fifo, *next_fifo;
};

/* The ops of runRing for 2 ranks, per chunk: send, recvReduceCopySend, recv. */
enum { OP_SEND, OP_RRCS, OP_RECV };

template <class Tr>
__global__ void __launch_bounds__(KERN_SHM_THREADS, 1) shm_ring(kern_ar_args a)
{
    __shared__ unsigned int steps[2]; /* recv, send */
    __shared__ int failed;
    const int c = (int)blockIdx.x, r = a.rank, nx = (r + 1) % 2;
    char *mine = (char *)a.inbox[r] + (size_t)c * KERN_SHM_CHANNEL_BYTES;
    char *next = (char *)a.inbox[nx] + (size_t)c * KERN_SHM_CHANNEL_BYTES;
    shm_chan ch = {(volatile unsigned int *)mine, (volatile unsigned int *)(mine + 128),
                   (volatile unsigned int *)next, (volatile unsigned int *)(next + 128),
                   (uint4 *)(mine + 4096), (uint4 *)(next + 4096)};
    const unsigned tid = threadIdx.x;
    if (tid == SHM_WORKERS) {
        steps[0] = *ch.head;      /* the steps I have received (I posted them) */
        steps[1] = *ch.next_tail; /* the steps I have sent */
        failed = 0;
    }
    __syncthreads();
    /* This channel's packs: equal parts, the last channel also the rest. */
    const size_t np = a.count * sizeof(typename Tr::raw) / 16, part = np / gridDim.x;
    const size_t lo = part * (size_t)c, hi = c == (int)gridDim.x - 1 ? np : lo + part;
    const uint4 *in = (const uint4 *)a.in[r];
    uint4 *out = (uint4 *)a.out[r];
    const size_t chunk_max = 4 * (size_t)SHM_STEP_PACKS, slice_max = 2 * (size_t)SHM_STEP_PACKS;
    for (size_t off = lo; off < hi;) {
        size_t rem = hi - off, chunk = rem >= 2 * chunk_max ? chunk_max : (rem + 1) / 2;
        /* runRing, 2 ranks: send chunk (r+1)%2, reduce chunk r and send it, receive chunk
           (r+1)%2 back reduced. */
        for (int op = OP_SEND; op <= OP_RECV; op++) {
            int k = op == OP_RRCS ? r : (r + 1) % 2;
            size_t cs = off + (size_t)k * chunk, ce = cs + chunk < hi ? cs + chunk : hi;
            size_t n = ce > cs ? ce - cs : 0;
            int recv = op != OP_SEND, send = op != OP_RECV;
            for (int sl = 0; sl < 2; sl++) { /* SlicePerChunk 2, StepPerSlice 2 */
                size_t so = (size_t)sl * slice_max, len = n > so ? n - so : 0;
                len = len < slice_max ? len : slice_max;
                if (tid == SHM_WORKERS && recv) {
                    int rc = shm_wait(ch.tail, steps[0] + 2, a);
                    if (rc != KERN_OK) {
                        kdev_fail(a.ctl, rc, KERN_WHERE_SHM_DATA, r, steps[0] + 2);
                        failed = 1;
                    }
                }
                if (tid == SHM_WORKERS + 1 && send) {
                    int rc = shm_wait(ch.next_head, steps[1] + 2 - KERN_SHM_STEPS, a);
                    if (rc != KERN_OK) {
                        kdev_fail(a.ctl, rc, KERN_WHERE_SHM_CREDIT, r, steps[1] + 2);
                        failed = 1;
                    }
                }
                __syncthreads();
                if (failed)
                    return;
                if (tid < SHM_WORKERS && len > 0) {
                    const uint4 *rbuf = ch.fifo + (size_t)(steps[0] % KERN_SHM_STEPS) * SHM_STEP_PACKS;
                    uint4 *sbuf = ch.next_fifo + (size_t)(steps[1] % KERN_SHM_STEPS) * SHM_STEP_PACKS;
                    if (op == OP_SEND)
                        shm_copy<Tr>(in + cs + so, NULL, sbuf, NULL, len);
                    else if (op == OP_RRCS)
                        shm_copy<Tr>(in + cs + so, rbuf, out + cs + so, sbuf, len);
                    else
                        shm_copy<Tr>(rbuf, NULL, out + cs + so, NULL, len);
                }
                __syncthreads();
                if (tid == SHM_WORKERS && recv) {
                    steps[0] += 2;
                    *ch.head = steps[0]; /* the FIFO room is free again */
                }
                if (tid == SHM_WORKERS + 1 && send) {
                    steps[1] += 2;
                    asm volatile("fence.acq_rel.sys;" ::: "memory"); /* the data has landed */
                    *ch.next_tail = steps[1];
                }
                __syncthreads();
            }
        }
        off += 2 * chunk;
    }
}

typedef void ar_kernel_fn(kern_ar_args);

/* [algo][dtype], in the order of kern_ar_algo and kern_dtype. */
ar_kernel_fn *const ar_kernels[5][3] = {
    {oneshot<tr_bf16>, oneshot<tr_fp16>, oneshot<tr_fp32>},
    {twoshot<tr_bf16>, twoshot<tr_fp16>, twoshot<tr_fp32>},
    {oneshot_push<tr_bf16>, oneshot_push<tr_fp16>, oneshot_push<tr_fp32>},
    {twoshot_push<tr_bf16>, twoshot_push<tr_fp16>, twoshot_push<tr_fp32>},
    {shm_ring<tr_bf16>, shm_ring<tr_fp16>, shm_ring<tr_fp32>},
};

int threads_of(kern_ar_algo algo)
{
    return algo == KERN_SHM_RING ? (int)KERN_SHM_THREADS : (int)KERN_THREADS;
}

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
    if ((unsigned)algo > KERN_SHM_RING || (unsigned)t > KERN_FP32)
        return cudaErrorInvalidValue;
    return cudaOccupancyMaxActiveBlocksPerMultiprocessor(out, (const void *)ar_kernels[algo][t],
                                                         threads_of(algo), 0);
}

extern "C" cudaError_t kern_allreduce(kern_ar_algo algo, const kern_ar_args *a, cudaStream_t s)
{
    if ((unsigned)algo > KERN_SHM_RING || (unsigned)a->dtype > KERN_FP32 ||
        a->nranks < 1 || a->nranks > KERN_MAX_RANKS || a->rank < 0 ||
        (algo == KERN_SHM_RING && (a->nranks != 2 || a->blocks < 1)) ||
        a->rank >= a->nranks || a->blocks < 0 || a->blocks > KERN_MAX_BLOCKS ||
        (a->count * kern_dtype_bytes(a->dtype)) % 16 != 0 || !a->ctl)
        return cudaErrorInvalidValue;
    kern_ar_args copy = *a;
    void *args[] = {&copy};
    return cudaLaunchKernel((const void *)ar_kernels[algo][a->dtype],
                            dim3((unsigned)kern_ar_blocks(a)), dim3((unsigned)threads_of(algo)),
                            args, 0, s);
}
