/* The project's CUDA kernels behind plain C launchers: one-shot and two-shot
 * allreduce over peer pointers (pull and push forms), copy and flag ping-pong
 * kernels for point-to-point patterns, spin kernels for trace replay, and an
 * empty kernel for launch overheads. Every launcher only enqueues on the given
 * stream (of the current device) and returns the launch's cudaError_t; it never
 * synchronizes. Every wait loop on the device gives up after timeout_ns
 * (%globaltimer) or when ctl->abort becomes non-zero, and then records why in
 * ctl (mapped host memory, so the host can read it while kernels still run). */
#ifndef KERNELS_KERNELS_H
#define KERNELS_KERNELS_H

#include <stddef.h>
#include <stdint.h>

#include <cuda_runtime.h>

#ifdef __cplusplus
extern "C" {
#endif

enum {
    KERN_MAX_RANKS = 8,   /* ranks of one allreduce (real or virtual) */
    KERN_MAX_BLOCKS = 36, /* blocks per allreduce kernel (as vLLM/SGLang) */
    KERN_THREADS = 512,   /* threads per allreduce block */
    KERN_PACK_BYTES = 16  /* every data access is one 16-byte load or store */
};

typedef enum kern_dtype { KERN_BF16, KERN_FP16, KERN_FP32 } kern_dtype;

typedef enum kern_ar_algo {
    KERN_ONESHOT,      /* barrier; read every peer's input, reduce; barrier */
    KERN_TWOSHOT,      /* barrier; reduce own slice by reads; barrier; gather slices by reads; barrier */
    KERN_ONESHOT_PUSH, /* barrier; write own input into every peer's inbox; barrier; reduce locally */
    KERN_TWOSHOT_PUSH, /* barrier; scatter slices into owners' inboxes; barrier; reduce own slice,
                          write it into every peer's output; barrier */
    KERN_SHM_RING      /* 2 ranks: NCCL's ring allreduce, protocol Simple, over its SHM transport
                          (below) */
} kern_ar_algo;

/* KERN_SHM_RING moves data as NCCL 2.28's ring Simple does over SHM
 * (src/transport/shm.cc, src/device/prims_simple.h, all_reduce.h runRing):
 * each of `blocks` channels is one block of KERN_SHM_THREADS threads (512
 * workers and one warp that waits and posts), and each rank's inbox[r] is
 * pinned, mapped host memory of blocks x KERN_SHM_CHANNEL_BYTES: per channel
 * a tail (the sender's step counter, at +0), a head (the receiver's, at +128)
 * and a FIFO of KERN_SHM_STEPS steps of KERN_SHM_STEP_BYTES (at +4096), the
 * receiver's side (NCCL_SHM_LOCALITY 2). A chunk is 4 steps (2 MiB), sent as
 * 2 slices of 2 steps; a slice waits for its data (tail) or its credit (head
 * + 8 steps), is copied by the workers with 8 16-byte loads in flight per
 * thread (ncclCollUnroll()), then the sender fences (fence.acq_rel.sys) and
 * posts its tail, the receiver posts its head. Step counters continue across
 * calls (read from the flags at the start), so calls and graph replays need
 * no reset: zero the inboxes once. */
enum {
    KERN_SHM_THREADS = 544,
    KERN_SHM_STEPS = 8,
    KERN_SHM_STEP_BYTES = 512 * 1024,
    KERN_SHM_CHANNEL_BYTES = 4096 + KERN_SHM_STEPS * KERN_SHM_STEP_BYTES,
    KERN_SHM_CHANNELS = 4 /* blocks 0: NCCL's 4 SHM channels on h200-2x */
};

/* Why a kernel gave up (kern_ctl.error). */
enum { KERN_OK = 0, KERN_ERR_TIMEOUT = 1, KERN_ERR_ABORTED = 2 };

/* Control block in mapped, portable pinned host memory, shared by every kernel
 * of the process. The host sets abort to make all waiting kernels give up; the
 * first kernel that gives up fills error, where (a KERN_WHERE_* code), rank,
 * block and the flag value it waited for. */
typedef struct kern_ctl {
    volatile int abort;
    volatile int error;
    volatile int where;
    volatile int rank;
    volatile int block;
    volatile unsigned int waited_for;
} kern_ctl;

enum {
    KERN_WHERE_BARRIER0 = 1, KERN_WHERE_BARRIER1, KERN_WHERE_BARRIER2, KERN_WHERE_PINGPONG,
    KERN_WHERE_SHM_DATA, /* an SHM receiver waiting for its tail */
    KERN_WHERE_SHM_CREDIT, /* an SHM sender waiting for FIFO room (the peer's head) */
    KERN_WHERE_PAIR /* a pair kernel waiting for its peer's start (kern_pair_spin) */
};

/* Per-rank signal area (device memory of that rank, zeroed once before use by
 * the host with cudaMemset; KERN_SIGNAL_BYTES each). Block b of every rank
 * counts its calls in seq[b]; barrier k stores the call number into
 * flag[k][b][my_rank] of every peer and waits for its own flag[k][b][peer]. */
typedef struct kern_signal {
    unsigned int seq[KERN_MAX_BLOCKS];
    unsigned int flag[3][KERN_MAX_BLOCKS][KERN_MAX_RANKS];
} kern_signal;
#define KERN_SIGNAL_BYTES sizeof(kern_signal)

/* One rank's view of an allreduce. All pointers are device pointers valid on
 * this rank's device (peer pointers through peer access, or the same device
 * for virtual ranks). All ranks must pass the same count, dtype, algo, blocks.
 *   in[r]    rank r's input (count elements), read by pull forms
 *   out[r]   rank r's output; the kernel writes out[rank] (and, twoshot-push,
 *            its slice into every out[r])
 *   inbox[r] rank r's scratch: pull two-shot: count elements; push forms:
 *            nranks * count elements (slot s holds what rank s sent)
 *   sig[r]   rank r's signal area */
typedef struct kern_ar_args {
    int rank, nranks;
    kern_dtype dtype;
    size_t count;  /* elements; count * element size must be a multiple of 16 */
    int blocks;    /* 1..KERN_MAX_BLOCKS; 0 = as vLLM: min(36, packs / 512) */
    const void *in[KERN_MAX_RANKS];
    void *out[KERN_MAX_RANKS];
    void *inbox[KERN_MAX_RANKS];
    kern_signal *sig[KERN_MAX_RANKS];
    kern_ctl *ctl;        /* device pointer of the mapped control block */
    uint64_t timeout_ns;  /* per wait */
} kern_ar_args;

size_t kern_dtype_bytes(kern_dtype t);
/* Blocks the allreduce uses for a size (a.blocks if set, else min(36, ceil(packs/512));
 * KERN_SHM_RING callers set a.blocks, KERN_SHM_CHANNELS unless told). */
int kern_ar_blocks(const kern_ar_args *a);
/* Blocks of one allreduce kernel that fit on one SM of the current device at
 * once (for virtual ranks, whose kernels must all be resident together). */
cudaError_t kern_ar_blocks_per_sm(kern_ar_algo algo, kern_dtype t, int *out);
/* Enqueue one allreduce of this rank. cudaErrorInvalidValue on bad arguments. */
cudaError_t kern_allreduce(kern_ar_algo algo, const kern_ar_args *a, cudaStream_t s);

/* Copy bytes (multiple of 16) from src to dst with 16-byte accesses, blocks x
 * 512 threads. Launched on the destination's device it is a remote read
 * (non-posted); on the source's device a remote write (posted). */
cudaError_t kern_copy(void *dst, const void *src, size_t bytes, int blocks, cudaStream_t s);

/* The same copy with blocks x threads threads (32..1024, a multiple of 32),
 * each keeping unroll (1, 2, 4 or 8) 16-byte loads in flight before it
 * stores them, laid out as NCCL's reduceCopy moves a slice (a warp takes
 * unroll x 512 contiguous bytes per trip): how many bytes a thread block has
 * in flight decides its rate against a far memory (pinned host memory).
 * unroll 1 with 512 threads is kern_copy. */
cudaError_t kern_copy_unroll(void *dst, const void *src, size_t bytes, int blocks, int threads,
                             int unroll, cudaStream_t s);

/* Flag ping-pong, one thread: the initiator stores i into *peer_flag and waits
 * for *my_flag == i, for i = base+1..base+iters; the responder waits, then
 * answers. Both flags start at base. */
cudaError_t kern_pingpong(volatile unsigned int *my_flag, volatile unsigned int *peer_flag,
                          unsigned int base, int iters, int initiator, kern_ctl *ctl,
                          uint64_t timeout_ns, cudaStream_t s);

/* Spin blocks x 32 threads for duration_ns of %globaltimer (trace compute);
 * stops early if ctl->abort is set (ctl may be NULL). */
cudaError_t kern_spin(uint64_t duration_ns, int blocks, kern_ctl *ctl, cudaStream_t s);

/* One thread stores 1..n into *flag (device memory): mode 2 a barrier's
 * signal (__threadfence_system, then st.release.sys), mode 1 the release
 * store alone (the latency ping-pong's signal), mode 0 a plain volatile
 * store; differences per store isolate the fence and the release. */
cudaError_t kern_signal_loop(unsigned int *flag, int n, int mode, cudaStream_t s);

/* NCCL Simple's slice post, one block of 512 threads, n slices in turn: each
 * stores bytes (a multiple of 16) of data into data (host or device memory),
 * meets at a barrier, and one thread stores the slice number into *flag,
 * after fence.acq_rel.sys in mode 2 (NCCL's postPeer), without it in mode 1;
 * mode 0 stores no data. Differences per slice isolate the fence after the
 * data's stores and the stores themselves. */
cudaError_t kern_post_loop(void *data, size_t bytes, unsigned int *flag, int n, int mode,
                           cudaStream_t s);

/* NCCL Simple's slice receive, one block of 512 threads, n slices in turn:
 * in mode 1 one thread reads the tail *flag (set beforehand, so one read
 * suffices) and the block meets, then the threads load bytes (a multiple
 * of 4096) from data, 8 16-byte loads in flight each, and meet again; mode
 * 0 without the flag's read. sink: device memory of 512 x 16 bytes. */
cudaError_t kern_recv_loop(const void *data, size_t bytes, const unsigned int *flag, int n,
                           int mode, void *sink, cudaStream_t s);

/* One of two kernels that meet as the two ranks of a ring do (one thread):
 * it takes its call number v = *mine + 1 (only this kernel's stream writes
 * *mine), stores its start time (%globaltimer, ns) into stamp[v % stamps],
 * stores v into *mine (release), waits until *peer reaches v, then spins
 * duration_ns from that meeting. The two flags are device memory of one GPU,
 * zeroed once; the two kernels run on two streams of it, so they overlap as
 * two GPUs' kernels do. cudaErrorInvalidValue when stamps < 1. */
cudaError_t kern_pair_spin(unsigned int *mine, const unsigned int *peer, uint64_t *stamp,
                           int stamps, uint64_t duration_ns, kern_ctl *ctl,
                           uint64_t timeout_ns, cudaStream_t s);

/* An empty kernel of one thread (launch overhead). */
cudaError_t kern_empty(cudaStream_t s);

#ifdef __cplusplus
}
#endif
#endif
