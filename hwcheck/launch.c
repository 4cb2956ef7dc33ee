/* `hwcheck launch`: fixed per-event costs on GPU 0, each isolated.
 *   launch         back-to-back empty kernel launches, wall time per launch
 *   graph-launch   back-to-back launches of a one-node graph, per launch
 *   graph-node     (T(graph of K nodes) - T(graph of 1 node)) / (K-1), per node
 *   sync           launch one empty kernel and wait for it, per round trip
 *   spin-error     |requested - measured| of a 100 us spin kernel (trace replay)
 *   launch-host    host time inside one kernel launch call (the CPU's share)
 *   graph-launch-host  host time inside one cudaGraphLaunch of a one-node graph
 *   graph-nodes-K  back-to-back launches of a K-node graph (K = 1..256), per launch
 *   host-flag      a 4-byte flag round trip GPU -> pinned host memory -> GPU: a
 *                  one-thread kernel stores, the host thread sees it and answers,
 *                  the kernel sees the answer (as NCCL's proxy and SHM flags)
 *   nccl-call, nccl-call-host  a 1-rank NCCL allreduce (1 KiB bf16, out of
 *                  place): wall time per call back to back, and the host time
 *                  inside the call; on one rank NCCL's front end ends in one
 *                  cudaMemcpyAsync (its one-rank path), so memcpy-host is that
 *                  copy's own host time for comparison
 *   fence-sys      one thread's system-scope fence before a release store
 *                  (a custom kernel's barrier signal) less the release store
 *                  alone (the latency ping-pong's signal), per signal
 *   release-sys    that release store less a plain store, per signal: events
 *                  around one kernel of N signals of each kind
 *   nccl-graph-launch, nccl-graph-node  the same call captured in a graph:
 *                  per launch of a 1-call graph, and per call of a 100-call graph
 *   nccl-call-idle-host  the host time inside one such call with the stream
 *                  drained before it (no back-pressure, no queued work)
 *   nccl-p2p-K, nccl-p2p-K-host  one group of K ncclSend + K ncclRecv of 1 KiB
 *                  to the rank itself (K = 1, 2, 4, 8), back to back: wall time
 *                  and host time per group; unlike the allreduce this runs
 *                  NCCL's full path on one rank (group end, plan, kernel launch)
 *   nccl-p2p-1-idle-host  one K = 1 group's host time with the stream drained
 *   nccl-p2p-1-size-B-host (--nccl-only) one K = 1 group of B bytes (128 KiB -
 *                  4 MiB), host time per group: NCCL's per-channel work, as the
 *                  pair spreads over B / 64 KiB channels
 *   nccl-2comm-p2p-1-host (--nccl-only) one group holding a K = 1 pair on each
 *                  of two one-rank communicators of GPU 0 (own streams), host
 *                  time per group: one thread planning and launching for two
 *                  communicators in turn (group.cc doLaunches), as a process
 *                  driving two GPUs does
 *   copy-node-bN-S (--copy-only) per node of a graph of 100 copy kernels of N
 *                  blocks x 512 threads moving S bytes inside GPU 0 (N = 1 ..
 *                  132; S = 16, one pack per thread N x 8 KiB, two N x 16 KiB),
 *                  (T(100 nodes) - T(1 node)) / 99 as graph-node: what a
 *                  kernel's blocks cost without their data (S = 16: one
 *                  thread works, the others only start and retire) and what
 *                  their first and second round of loads add
 *   post-W-S, post-W-S-fence (--post alone) NCCL Simple's slice post: one block
 *                  of 512 threads stores S bytes into W (host: pinned host memory,
 *                  an SHM sender's FIFO; dev: device memory), meets at a barrier,
 *                  one thread stores a flag into W (with fence.acq_rel.sys before
 *                  it: -fence), the block meets again; time per slice (post-W-0:
 *                  no data, the loop and the flag alone)
 *   recv-host-S, recv-host-S-tail (--post) NCCL Simple's slice receive: the
 *                  block loads S bytes from pinned host memory, 8 16-byte loads
 *                  in flight per thread, between two barriers; -tail: one thread
 *                  reads the tail flag in host memory first (already set: one
 *                  read), as waitPeer does; time per slice
 *   post-peer-S, post-peer-S-fence, recv-dev-S, recv-dev-S-tail, recv-peer-S,
 *                  recv-peer-S-tail (--post --peer, 2 GPUs) the same with data
 *                  and flag in GPU 1's memory (the block on GPU 0: its stores
 *                  and loads cross the link) and the receive from GPU 0's own
 *                  memory: post-peer-4096-fence - post-peer-4096, less the same
 *                  of post-dev, is what a fence waits after stores into a peer
 *                  (collsim's fence_ack_us); recv-peer-S-tail - recv-peer-S is
 *                  one remote load's round trip (collsim's peer-load point)
 * --loop: the costs inside hwcheck's own transfer loops (xfer.c bw_case: one
 *   host thread records a start event on each flow's stream, issues every
 *   flow's operation in turn per iteration, each after cudaSetDevice, then an
 *   end event per stream; a flow's time is its events' interval / N), on GPU 0,
 *   the median of 7 interleaved rounds each:
 *   launch-host    host time inside one empty kernel launch call
 *   loop-kernel-host  host time of one iteration's issue of a 4 KiB copy kernel
 *                  (132 x 512 threads, inside GPU 0) as bw_case issues it:
 *                  cudaSetDevice, the launch, cudaGetLastError
 *   loop-copy-host the same for a 4 KiB cudaMemcpyPeerAsync (GPU 0 to GPU 0)
 *   setdevice-host one cudaSetDevice of the current device
 *   event-record-host  one cudaEventRecord
 *   loop-kernel-N, loop-copy-N  bw_case's own timing of N iterations of one
 *                  flow (N = 1, 3, 10, 30, 100): the events' interval / N
 *   loop-kernel2-N-fF  the same with two flows on two streams issued in turn
 *                  (flow F = 0, 1), as a bidirectional case drives two GPUs
 *   so that the interval's parts show: N issues, and once per loop what the
 *   last operation runs after its issue.
 *   launch-busy-host, nccl-p2p-1-busy-host, nccl-2comm-p2p-1-busy-host (--pair
 *                  alone) the same calls' host time queued behind a long spin
 *                  kernel (every event NCCL records or waits for still pending),
 *                  against the same rows on idle streams; nccl-p2p-1-size-B-host
 *                  and nccl-2comm-p2p-1-size-B-host (B = 64 KiB - 1.5 MiB, 1-24
 *                  channels: the plan's host work per channel, on one and on two
 *                  communicators), idle and -busy; pair-D-eager,
 *                  -eager-host, -skew, -graph: two ranks' kernels launched by
 *                  one thread on two streams, meeting and spinning D us (see
 *                  pair_rows)
 * --copy-only: graph-node and the copy-node rows alone.
 * --nccl-only: launch-host, nccl-call-host, nccl-p2p-K-host and
 * nccl-2comm-p2p-1-host alone, each the median of 7 interleaved rounds, then
 * the two NCCL graph rows. In the same rounds three host-only references that
 * touch no GPU, no driver and no system call (hwcheck/hostref.h), whether the
 * host's own speed moves with NCCL's rows:
 *   cpu-l1-1000-loads-host  1000 dependent loads through 16 KiB (in L1):
 *                  latency-bound, the core's clock
 *   cpu-mul-1000-host  1000 steps of 8 independent multiply-adds:
 *                  throughput-bound, slowed too by another thread on the core
 *   cpu-dram-load-host one dependent load through 1 GiB (past the last level
 *                  cache): the memory path's latency
 * --rounds R (--nccl-only): R rounds in place of 7, and each round's own
 * rows too (rR-launch-host, rR-nccl-p2p-1-host, rR-nccl-2comm-p2p-1-host,
 * rR-cpu-l1-1000-loads-host, rR-cpu-mul-1000-host, rR-cpu-dram-load-host,
 * and rR-steal: the time the hypervisor ran something else on any of the
 * VM's CPUs during the round, /proc/stat's steal column summed over CPUs,
 * in us; 0 where not counted),
 * so that a change of the host's speed inside one process shows.
 * Times are host wall clock (gpu_now_us) around back-to-back loops after a
 * warm-up; the flag round trip is timed with events around the kernel. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "hwcheck/hostref.h"
#include "hwcheck/modes.h"

enum { GRAPH_NODES = 100, MAX_SWEEP_NODES = 256, NCCL_BYTES = 1024, P2P_MAX_K = 8 };
/* The sizes of the --nccl-only one-pair groups that spread over channels:
 * a send to self of B bytes takes min(p2p channels per peer, B / 64 KiB)
 * channels (enqueue.cc addP2pToPlan: minPartSize = p2pChunkSize / 8). */
static const size_t sized_bytes[] = {131072, 262144, 524288, 1048576, 2097152, 4194304};
enum { NSIZED = sizeof sized_bytes / sizeof sized_bytes[0], NCCL_BUF_BYTES = 4194304 };

static void row(out_file *out, const char *what, long long count, double us)
{
    report_str(out->rep, what);
    report_int(out->rep, count);
    report_num(out->rep, us);
    report_end_row(out->rep);
}

/* What a graph node is: an empty kernel, or a 1-rank NCCL allreduce. comm2
 * (--nccl-only): a second one-rank communicator on GPU 0 with its own stream
 * s2, for groups that span two communicators driven by one thread. */
typedef struct node_src {
    ncclComm_t comm; /* NULL: empty kernels (or copy kernels, cblocks > 0) */
    void *in, *out;
    ncclComm_t comm2;
    cudaStream_t s2;
    int cblocks;     /* > 0: a copy kernel of cblocks x 512 threads, cbytes in to out */
    size_t cbytes;
} node_src;

static int enqueue(const node_src *src, cudaStream_t s, err *e)
{
    if (src->cblocks > 0)
        GPU_CU(0, kern_copy_unroll(src->out, src->in, src->cbytes, src->cblocks, 512, 1, s));
    else if (!src->comm)
        GPU_CU(0, kern_empty(s));
    else
        GPU_NC(0, ncclAllReduce(src->in, src->out, NCCL_BYTES / 2, ncclBfloat16, ncclSum,
                                src->comm, s));
    return 0;
}

static int make_graph(const node_src *src, int nodes, cudaStream_t s, cudaGraphExec_t *exec,
                      err *e)
{
    cudaGraph_t graph = NULL;
    GPU_CU(0, cudaStreamBeginCapture(s, cudaStreamCaptureModeThreadLocal));
    int rc = 0;
    for (int i = 0; i < nodes && rc == 0; i++)
        rc = enqueue(src, s, e);
    /* End the capture whatever happened, then instantiate outside it. */
    cudaError_t end = cudaStreamEndCapture(s, &graph);
    gpu_capture_abandon(0, s);
    if (rc == 0 && end != cudaSuccess)
        rc = err_set(e, ERR_SYSTEM, "GPU 0: cudaStreamEndCapture: %s", cudaGetErrorString(end));
    if (rc == 0 && (end = cudaGraphInstantiate(exec, graph, 0)) != cudaSuccess)
        rc = err_set(e, ERR_SYSTEM, "GPU 0: cudaGraphInstantiate: %s", cudaGetErrorString(end));
    if (graph)
        cudaGraphDestroy(graph);
    return rc;
}

/* n back-to-back launches of exec (NULL: of src's node): *us per launch
 * until all finished, *host_us per launch call on the host alone. */
static int timed2(gpu_ctx *g, const node_src *src, cudaGraphExec_t exec, int n, double *us,
                  double *host_us, err *e)
{
    cudaStream_t s = g->stream[0];
    gpu_step(g, 0, exec ? "graph launches" : src->comm ? "NCCL calls" : "kernel launches");
    double t0 = gpu_now_us();
    for (int i = 0; i < n; i++) {
        if (exec)
            GPU_CU(0, cudaGraphLaunch(exec, s));
        else
            TRY(enqueue(src, s, e));
    }
    double t1 = gpu_now_us();
    TRY(gpu_wait(g, 0, s, exec ? "graph launches" : "launches", e));
    *us = (gpu_now_us() - t0) / n;
    if (host_us)
        *host_us = (t1 - t0) / n;
    return 0;
}

static int timed(gpu_ctx *g, cudaGraphExec_t exec, int n, double *us, err *e)
{
    node_src none = {0};
    return timed2(g, &none, exec, n, us, NULL, e);
}

/* Per-launch time of a graph of k nodes of src: warm-up launch, then n timed. */
static int graph_time(gpu_ctx *g, const node_src *src, int k, int n, double *us,
                      double *host_us, err *e)
{
    cudaGraphExec_t exec = NULL;
    TRY(make_graph(src, k, g->stream[0], &exec, e));
    double warm;
    int rc = timed2(g, src, exec, n / 10 > 2 ? n / 10 : 2, &warm, NULL, e);
    if (rc == 0)
        rc = timed2(g, src, exec, n, us, host_us, e);
    cudaGraphExecDestroy(exec);
    return rc;
}

/* The host side of the flag ping-pong: wait for ask == v, answer v, for
 * v = base+1..base+n; gives up (raising the abort flag) at the host-side
 * limit or when the kernel reported a failure. */
static int respond(gpu_ctx *g, volatile unsigned int *ask, volatile unsigned int *answer,
                   unsigned int base, int n, err *e)
{
    double t0 = gpu_now_us(), limit_us = g->host_wait_s * 1e6;
    for (int i = 1; i <= n; i++) {
        unsigned int v = base + (unsigned int)i;
        for (unsigned spins = 0; __atomic_load_n(ask, __ATOMIC_ACQUIRE) != v; spins++)
            if ((spins & 1023u) == 1023u && (g->ctl->error || gpu_now_us() - t0 > limit_us)) {
                g->ctl->abort = 1;
                return err_set(e, ERR_SYSTEM, "GPU 0: host flag ping-pong: no flag %u after "
                               "%.1f s", v, (gpu_now_us() - t0) * 1e-6);
            }
        __atomic_store_n(answer, v, __ATOMIC_RELEASE);
    }
    return 0;
}

/* Round trip of a flag between a one-thread kernel and the host thread, both
 * flags in mapped pinned host memory on separate 128-byte lines. */
static int host_flag(gpu_ctx *g, const opts *o, double *rtt_us, int *count, err *e)
{
    cudaStream_t s = g->stream[0];
    unsigned int *h = NULL, *d = NULL;
    GPU_CU(0, cudaHostAlloc((void **)&h, 256, cudaHostAllocMapped | cudaHostAllocPortable));
    memset(h, 0, 256);
    cudaEvent_t ev0 = NULL, ev1 = NULL;
    int rc = 0;
    cudaError_t c = cudaHostGetDevicePointer((void **)&d, h, 0);
    if (c == cudaSuccess)
        c = cudaEventCreate(&ev0);
    if (c == cudaSuccess)
        c = cudaEventCreate(&ev1);
    if (c != cudaSuccess)
        rc = err_set(e, ERR_SYSTEM, "GPU 0: host flag setup: %s", cudaGetErrorString(c));
    volatile unsigned int *ask = h, *answer = h + 32;
    uint64_t tmo = (uint64_t)(o->timeout_ms * 1e6);
    int warm = 100, iters = o->iters * 10;
    gpu_ctl_reset(g);
    for (int pass = 0; pass < 2 && rc == 0; pass++) {
        unsigned int base = pass ? (unsigned)warm : 0u;
        int n = pass ? iters : warm;
        if (pass)
            c = cudaEventRecord(ev0, s);
        if (c == cudaSuccess)
            c = kern_pingpong(d + 32, d, base, n, 1, g->ctl_dev, tmo, s);
        if (c == cudaSuccess && pass)
            c = cudaEventRecord(ev1, s);
        if (c != cudaSuccess)
            rc = err_set(e, ERR_SYSTEM, "GPU 0: host flag kernel: %s", cudaGetErrorString(c));
        if (rc == 0)
            rc = respond(g, ask, answer, base, n, e);
        int wrc = gpu_wait(g, 0, s, "host flag ping-pong", e);
        if (rc == 0)
            rc = wrc;
    }
    float ms = 0;
    if (rc == 0 && (c = cudaEventElapsedTime(&ms, ev0, ev1)) != cudaSuccess)
        rc = err_set(e, ERR_SYSTEM, "GPU 0: cudaEventElapsedTime: %s", cudaGetErrorString(c));
    *rtt_us = (double)ms * 1e3 / iters;
    *count = iters;
    if (ev0)
        cudaEventDestroy(ev0);
    if (ev1)
        cudaEventDestroy(ev1);
    if (!g->wedged)
        cudaFreeHost(h);
    return rc;
}

/* One group of k send/receive pairs of NCCL_BYTES between the one rank and
 * itself, pair i at offset i x NCCL_BYTES of src's buffers. */
static int p2p_group(const node_src *src, int k, cudaStream_t s, err *e)
{
    GPU_NC(0, ncclGroupStart());
    ncclResult_t r = ncclSuccess;
    for (int i = 0; i < k && r == ncclSuccess; i++) {
        size_t off = (size_t)i * NCCL_BYTES;
        r = ncclSend((char *)src->in + off, NCCL_BYTES / 2, ncclBfloat16, 0, src->comm, s);
        if (r == ncclSuccess)
            r = ncclRecv((char *)src->out + off, NCCL_BYTES / 2, ncclBfloat16, 0, src->comm, s);
    }
    /* End the group whatever happened, so NCCL's group state stays sane. */
    ncclResult_t end = ncclGroupEnd();
    if (r != ncclSuccess)
        return err_set(e, ERR_SYSTEM, "GPU 0: ncclSend/ncclRecv to self: %s",
                       ncclGetErrorString(r));
    if (end != ncclSuccess)
        return err_set(e, ERR_SYSTEM, "GPU 0: ncclGroupEnd: %s", ncclGetErrorString(end));
    return 0;
}

/* One group of one send/receive pair of bytes to self. */
static int p2p_group_sized(const node_src *src, size_t bytes, cudaStream_t s, err *e)
{
    GPU_NC(0, ncclGroupStart());
    ncclResult_t r = ncclSend(src->in, bytes / 2, ncclBfloat16, 0, src->comm, s);
    if (r == ncclSuccess)
        r = ncclRecv(src->out, bytes / 2, ncclBfloat16, 0, src->comm, s);
    ncclResult_t end = ncclGroupEnd();
    if (r != ncclSuccess)
        return err_set(e, ERR_SYSTEM, "GPU 0: ncclSend/ncclRecv of %zu bytes to self: %s", bytes,
                       ncclGetErrorString(r));
    if (end != ncclSuccess)
        return err_set(e, ERR_SYSTEM, "GPU 0: ncclGroupEnd: %s", ncclGetErrorString(end));
    return 0;
}

/* n back-to-back groups of one pair of bytes: *host_us per group on the host. */
static int timed_sized(gpu_ctx *g, const node_src *src, size_t bytes, int n, double *host_us,
                       err *e)
{
    cudaStream_t s = g->stream[0];
    gpu_step(g, 0, "NCCL send/recv groups of one size");
    double t0 = gpu_now_us();
    for (int i = 0; i < n; i++)
        TRY(p2p_group_sized(src, bytes, s, e));
    double t1 = gpu_now_us();
    TRY(gpu_wait(g, 0, s, "NCCL groups of one size", e));
    *host_us = (t1 - t0) / n;
    return 0;
}

/* One group of a pair of bytes to self on each of src's two communicators
 * (the second pair bytes further into the buffers). */
static int p2p_group2_sized(const node_src *src, size_t bytes, cudaStream_t s, err *e)
{
    GPU_NC(0, ncclGroupStart());
    ncclResult_t r = ncclSuccess;
    for (int c = 0; c < 2 && r == ncclSuccess; c++) {
        ncclComm_t comm = c ? src->comm2 : src->comm;
        cudaStream_t st = c ? src->s2 : s;
        size_t off = (size_t)c * bytes;
        r = ncclSend((char *)src->in + off, bytes / 2, ncclBfloat16, 0, comm, st);
        if (r == ncclSuccess)
            r = ncclRecv((char *)src->out + off, bytes / 2, ncclBfloat16, 0, comm, st);
    }
    ncclResult_t end = ncclGroupEnd();
    if (r != ncclSuccess)
        return err_set(e, ERR_SYSTEM, "GPU 0: ncclSend/ncclRecv of %zu bytes to self (two "
                       "communicators): %s", bytes, ncclGetErrorString(r));
    if (end != ncclSuccess)
        return err_set(e, ERR_SYSTEM, "GPU 0: ncclGroupEnd: %s", ncclGetErrorString(end));
    return 0;
}

/* One group of a send/receive pair to self on each of src's two
 * communicators (comm on the stream s, comm2 on s2; the second pair one
 * NCCL_BYTES further into the buffers). */
static int p2p_group2(const node_src *src, cudaStream_t s, err *e)
{
    return p2p_group2_sized(src, NCCL_BYTES, s, e);
}

/* n back-to-back groups over src's two communicators: *host_us per group on
 * the host alone (both streams drained at the end). */
static int timed_groups2(gpu_ctx *g, const node_src *src, int n, double *host_us, err *e)
{
    cudaStream_t s = g->stream[0];
    gpu_step(g, 0, "NCCL groups over two communicators");
    double t0 = gpu_now_us();
    for (int i = 0; i < n; i++)
        TRY(p2p_group2(src, s, e));
    double t1 = gpu_now_us();
    TRY(gpu_wait(g, 0, s, "NCCL groups (first communicator)", e));
    TRY(gpu_wait(g, 0, src->s2, "NCCL groups (second communicator)", e));
    *host_us = (t1 - t0) / n;
    return 0;
}

/* n back-to-back calls (k > 0: p2p groups of k pairs; 0: src's allreduce):
 * *us per call until all finished, *host_us per call on the host alone. */
static int timed_calls(gpu_ctx *g, const node_src *src, int k, int n, double *us,
                       double *host_us, err *e)
{
    cudaStream_t s = g->stream[0];
    gpu_step(g, 0, k ? "NCCL send/recv groups" : "NCCL calls");
    double t0 = gpu_now_us();
    for (int i = 0; i < n; i++)
        TRY(k ? p2p_group(src, k, s, e) : enqueue(src, s, e));
    double t1 = gpu_now_us();
    TRY(gpu_wait(g, 0, s, "NCCL calls", e));
    *us = (gpu_now_us() - t0) / n;
    *host_us = (t1 - t0) / n;
    return 0;
}

/* The host time inside one call with nothing queued on the stream: drain it,
 * then time the call alone; mean of n. */
static int idle_call(gpu_ctx *g, const node_src *src, int k, int n, double *host_us, err *e)
{
    cudaStream_t s = g->stream[0];
    double sum = 0;
    for (int i = 0; i < n; i++) {
        TRY(gpu_wait(g, 0, s, "NCCL call (idle stream)", e));
        double t0 = gpu_now_us();
        TRY(k ? p2p_group(src, k, s, e) : enqueue(src, s, e));
        sum += gpu_now_us() - t0;
    }
    TRY(gpu_wait(g, 0, s, "NCCL call (idle stream)", e));
    *host_us = sum / n;
    return 0;
}

/* The send/receive rows: per group of K pairs to self, and one K = 1 group
 * on an idle stream; warm-up of every K first (NCCL connects at first use). */
static int p2p_rows(gpu_ctx *g, const opts *o, const node_src *src, out_file *out, err *e)
{
    double us, host;
    int warm = o->warmup > 0 ? o->warmup : 1, n = o->iters;
    for (int k = 1; k <= P2P_MAX_K; k *= 2)
        TRY(timed_calls(g, src, k, warm, &us, &host, e));
    for (int k = 1; k <= P2P_MAX_K; k *= 2) {
        char name[32];
        TRY(timed_calls(g, src, k, n, &us, &host, e));
        snprintf(name, sizeof name, "nccl-p2p-%d", k);
        row(out, name, n, us);
        snprintf(name, sizeof name, "nccl-p2p-%d-host", k);
        row(out, name, n, host);
    }
    int ni = n / 10 > 10 ? n / 10 : 10;
    TRY(idle_call(g, src, 1, ni, &host, e));
    row(out, "nccl-p2p-1-idle-host", ni, host);
    return 0;
}

static int cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

enum { L1_BYTES = 16384, L1_LOADS = 1000, DRAM_LOADS = 32, MUL_STEPS = 1000 };
#define DRAM_BYTES ((size_t)1 << 30)

/* Host time of n x loads dependent loads, per `per` loads. */
static double chain_time(hostref_chain *c, int n, long loads, long per)
{
    double t0 = gpu_now_us();
    hostref_chain_run(c, (long)n * loads);
    return (gpu_now_us() - t0) / ((double)n * (double)loads / (double)per);
}

/* Host time per MUL_STEPS steps of the multiply-adds, n x MUL_STEPS timed. */
static double mul_time(int n)
{
    double t0 = gpu_now_us();
    volatile uint64_t sink = hostref_mul((long)n * MUL_STEPS); /* keeps the loop */
    (void)sink;
    return (gpu_now_us() - t0) / n;
}

/* /proc/stat's steal column summed over the CPUs, in us; 0 where there is
 * none (not a VM, or the kernel does not count it). */
static double steal_us(void)
{
    FILE *f = fopen("/proc/stat", "r");
    if (!f)
        return 0;
    unsigned long long v[8] = {0};
    int got = fscanf(f, "cpu %llu %llu %llu %llu %llu %llu %llu %llu", &v[0], &v[1], &v[2],
                     &v[3], &v[4], &v[5], &v[6], &v[7]);
    fclose(f);
    long hz = sysconf(_SC_CLK_TCK);
    return got == 8 && hz > 0 ? (double)v[7] * 1e6 / (double)hz : 0;
}

/* `launch --nccl-only`: NCCL's host cost per call against the kernel launch
 * it ends in, measured in rounds (7, or --rounds), each timing the launch
 * calls (launch-host), the 1-rank allreduce (nccl-call-host), the groups of
 * K send/receive pairs (nccl-p2p-K-host) and the host-only references
 * back to back, so slow drift of the machine hits all of a round alike;
 * each row is the median over rounds. */
enum { HOST_ROUNDS = 7, ROW_L1 = 7 + NSIZED, ROW_MUL, ROW_DRAM, HOST_ROWS };
static const char *host_row_name(int i, char *name, size_t len)
{
    if (i < 2)
        snprintf(name, len, "%s", i ? "nccl-call-host" : "launch-host");
    else if (i == 6)
        snprintf(name, len, "nccl-2comm-p2p-1-host");
    else if (i == ROW_L1)
        snprintf(name, len, "cpu-l1-1000-loads-host");
    else if (i == ROW_MUL)
        snprintf(name, len, "cpu-mul-1000-host");
    else if (i == ROW_DRAM)
        snprintf(name, len, "cpu-dram-load-host");
    else if (i > 6)
        snprintf(name, len, "nccl-p2p-1-size-%zu-host", sized_bytes[i - 7]);
    else
        snprintf(name, len, "nccl-p2p-%d-host", 1 << (i - 2));
    return name;
}

/* The rows a --rounds series writes for every round. */
static const int series_rows[] = {0, 2, 6, ROW_L1, ROW_MUL, ROW_DRAM};

static int host_rounds(gpu_ctx *g, const opts *o, const node_src *src, double (*t)[HOST_ROWS],
                       double *steal, int rounds, hostref_chain *l1, hostref_chain *dram, err *e)
{
    node_src kern = {0};
    double us;
    int n = o->iters, warm = o->warmup > 0 ? o->warmup : 1;
    TRY(timed2(g, &kern, NULL, warm, &us, &t[0][0], e));
    for (int k = 0; k <= P2P_MAX_K; k = k ? 2 * k : 1)
        TRY(timed_calls(g, src, k, warm, &us, &t[0][1], e));
    TRY(timed_groups2(g, src, warm, &t[0][6], e));
    for (int j = 0; j < NSIZED; j++)
        TRY(timed_sized(g, src, sized_bytes[j], warm, &t[0][7 + j], e));
    chain_time(l1, warm, L1_LOADS, L1_LOADS);
    mul_time(warm);
    chain_time(dram, warm, DRAM_LOADS, 1);
    for (int r = 0; r < rounds; r++) {
        double s0 = steal_us();
        TRY(timed2(g, &kern, NULL, n, &us, &t[r][0], e));
        int i = 1;
        for (int k = 0; k <= P2P_MAX_K; k = k ? 2 * k : 1)
            TRY(timed_calls(g, src, k, n, &us, &t[r][i++], e));
        TRY(timed_groups2(g, src, n, &t[r][i++], e));
        for (int j = 0; j < NSIZED; j++)
            TRY(timed_sized(g, src, sized_bytes[j], n, &t[r][i++], e));
        t[r][ROW_L1] = chain_time(l1, n, L1_LOADS, L1_LOADS);
        t[r][ROW_MUL] = mul_time(n);
        t[r][ROW_DRAM] = chain_time(dram, n, DRAM_LOADS, 1);
        steal[r] = steal_us() - s0;
    }
    return 0;
}

static int nccl_host_rows(gpu_ctx *g, const opts *o, const node_src *src, out_file *out, err *e)
{
    int rounds = o->rounds > 0 ? o->rounds : HOST_ROUNDS;
    double (*t)[HOST_ROWS] = calloc((size_t)rounds, sizeof *t);
    double *steal = calloc((size_t)rounds, sizeof *steal), *col = calloc((size_t)rounds,
                                                                          sizeof *col);
    hostref_chain l1 = {0}, dram = {0};
    int rc = t && steal && col ? 0 : err_set(e, ERR_SYSTEM, "host: %d rounds", rounds);
    if (rc == 0)
        rc = hostref_chain_init(&l1, L1_BYTES, e);
    if (rc == 0)
        rc = hostref_chain_init(&dram, DRAM_BYTES, e);
    if (rc == 0)
        rc = host_rounds(g, o, src, t, steal, rounds, &l1, &dram, e);
    char name[64], what[48];
    for (int i = 0; i < HOST_ROWS && rc == 0; i++) {
        for (int r = 0; r < rounds; r++)
            col[r] = t[r][i];
        qsort(col, (size_t)rounds, sizeof col[0], cmp_double);
        row(out, host_row_name(i, what, sizeof what), (long long)o->iters * rounds,
            col[rounds / 2]);
    }
    for (int r = 0; r < rounds && rc == 0 && o->rounds > 0; r++) {
        for (size_t k = 0; k < sizeof series_rows / sizeof series_rows[0]; k++) {
            snprintf(name, sizeof name, "r%d-%s", r + 1,
                     host_row_name(series_rows[k], what, sizeof what));
            row(out, name, o->iters, t[r][series_rows[k]]);
        }
        snprintf(name, sizeof name, "r%d-steal", r + 1);
        row(out, name, 1, steal[r]);
    }
    hostref_chain_free(&l1);
    hostref_chain_free(&dram);
    free(t);
    free(steal);
    free(col);
    return rc;
}

/* The NCCL rows, on a communicator of one rank on GPU 0. */
static int nccl_rows(gpu_ctx *g, const opts *o, out_file *out, err *e)
{
    node_src src = {0};
    cudaStream_t s = g->stream[0];
    TRY(gpu_nccl_one(g, &src.comm, e));
    int rc = 0;
    if (cudaMalloc(&src.in, NCCL_BUF_BYTES) != cudaSuccess ||
        cudaMalloc(&src.out, NCCL_BUF_BYTES) != cudaSuccess ||
        cudaMemset(src.in, 0x3c, NCCL_BUF_BYTES) != cudaSuccess)
        rc = err_set(e, ERR_SYSTEM, "GPU 0: NCCL buffers (%d bytes) failed", NCCL_BUF_BYTES);
    double us = 0, host = 0, warm;
    int n = o->iters;
    if (rc == 0 && o->nccl_only) {
        rc = gpu_nccl_one(g, &src.comm2, e);
        if (rc == 0 && cudaStreamCreateWithFlags(&src.s2, cudaStreamNonBlocking) != cudaSuccess)
            rc = err_set(e, ERR_SYSTEM, "GPU 0: cudaStreamCreate for the second communicator");
        if (rc == 0)
            rc = nccl_host_rows(g, o, &src, out, e);
        goto graph;
    }
    if (rc == 0)
        rc = timed2(g, &src, NULL, o->warmup > 0 ? o->warmup : 1, &warm, NULL, e);
    if (rc == 0)
        rc = timed2(g, &src, NULL, n, &us, &host, e);
    if (rc == 0) {
        row(out, "nccl-call", n, us);
        row(out, "nccl-call-host", n, host);
        /* the copy NCCL's one-rank path issues, on its own */
        double t0 = gpu_now_us();
        for (int i = 0; i < n && rc == 0; i++)
            if (cudaMemcpyAsync(src.out, src.in, NCCL_BYTES, cudaMemcpyDeviceToDevice, s) !=
                cudaSuccess)
                rc = err_set(e, ERR_SYSTEM, "GPU 0: cudaMemcpyAsync failed");
        double t1 = gpu_now_us();
        if (rc == 0)
            rc = gpu_wait(g, 0, s, "copies", e);
        if (rc == 0)
            row(out, "memcpy-host", n, (t1 - t0) / n);
    }
    if (rc == 0) {
        int ni = n / 10 > 10 ? n / 10 : 10;
        rc = idle_call(g, &src, 0, ni, &host, e);
        if (rc == 0)
            row(out, "nccl-call-idle-host", ni, host);
    }
    if (rc == 0)
        rc = p2p_rows(g, o, &src, out, e);
graph:;
    int gl = n / 10 > 10 ? n / 10 : 10;
    double t1c = 0, tkc = 0;
    if (rc == 0)
        rc = graph_time(g, &src, 1, gl, &t1c, NULL, e);
    if (rc == 0)
        rc = graph_time(g, &src, GRAPH_NODES, gl, &tkc, NULL, e);
    if (rc == 0) {
        row(out, "nccl-graph-launch", gl, t1c);
        row(out, "nccl-graph-node", (long long)gl * GRAPH_NODES, (tkc - t1c) / (GRAPH_NODES - 1));
    }
    if (!g->wedged) {
        gpu_step(g, 0, "ncclCommDestroy (1 rank)");
        ncclCommDestroy(src.comm);
        if (src.comm2)
            ncclCommDestroy(src.comm2);
        if (src.s2)
            cudaStreamDestroy(src.s2);
        gpu_step_done(g);
        cudaFree(src.in);
        cudaFree(src.out);
    }
    return rc;
}

/* A barrier's signal: one kernel of n signals per mode (plain, release,
 * fence + release), each timed by events (the second of two runs); the
 * differences per signal, fence (2 - 1) and release (1 - 0). The kernel's
 * launch and start cancel out. */
static int fence_sys(gpu_ctx *g, const opts *o, double *us, double *rel, int *n, err *e)
{
    cudaStream_t s = g->stream[0];
    *n = o->iters * 10 > 10000 ? o->iters * 10 : 10000;
    unsigned int *flag = NULL;
    cudaEvent_t a = NULL, b = NULL;
    double t[3] = {0, 0, 0};
    cudaError_t c = cudaMalloc((void **)&flag, 256);
    if (c == cudaSuccess)
        c = cudaEventCreate(&a);
    if (c == cudaSuccess)
        c = cudaEventCreate(&b);
    for (int mode = 0; mode < 3 && c == cudaSuccess; mode++)
        for (int rep = 0; rep < 2 && c == cudaSuccess; rep++) {
            float ms = 0;
            if ((c = cudaEventRecord(a, s)) == cudaSuccess &&
                (c = kern_signal_loop(flag, *n, mode, s)) == cudaSuccess &&
                (c = cudaEventRecord(b, s)) == cudaSuccess &&
                (c = cudaEventSynchronize(b)) == cudaSuccess &&
                (c = cudaEventElapsedTime(&ms, a, b)) == cudaSuccess)
                t[mode] = (double)ms * 1e3;
        }
    if (a)
        cudaEventDestroy(a);
    if (b)
        cudaEventDestroy(b);
    cudaFree(flag);
    if (c != cudaSuccess)
        return err_set(e, ERR_SYSTEM, "GPU 0: fence-sys kernel: %s", cudaGetErrorString(c));
    *us = (t[2] - t[1]) / *n;
    *rel = (t[1] - t[0]) / *n;
    return 0;
}

/* NCCL Simple's slice post (--post): per slice of a one-block loop of n
 * slices (kern_post_loop), events around the second of two runs, for data
 * and flag in pinned host memory (an SHM sender's FIFO and tail), in device
 * memory and, with --peer, in GPU 1's memory (stores over the link), S bytes
 * of data per slice, with and without the fence. Then the receive
 * (kern_recv_loop) from the same places, with and without the tail read. */
static const char *const post_where[3] = {"host", "dev", "peer"};

static int post_rows(gpu_ctx *g, const opts *o, out_file *out, err *e)
{
    static const size_t sizes[] = {0, 4096, 16384, 65536, 262144, 1048576};
    enum { NSIZES = sizeof sizes / sizeof sizes[0], MAXB = 1048576 };
    cudaStream_t s = g->stream[0];
    void *h = NULL, *hd = NULL, *d = NULL, *pd = NULL;
    cudaEvent_t a = NULL, b = NULL;
    int nwhere = o->peer ? 3 : 2;
    if (o->peer && (g->n < 2 || !g->peer[0][1]))
        return err_set(e, ERR_USAGE,
                       "launch --peer: needs GPU 0 to reach GPU 1's memory (%d GPU%s%s)", g->n,
                       g->n == 1 ? "" : "s", g->n >= 2 ? ", no peer access" : "");
    cudaError_t c = cudaHostAlloc(&h, MAXB + 4096, cudaHostAllocMapped | cudaHostAllocPortable);
    if (c == cudaSuccess)
        c = cudaHostGetDevicePointer(&hd, h, 0);
    if (c == cudaSuccess)
        c = cudaMalloc(&d, MAXB + 4096);
    if (c == cudaSuccess && o->peer && (c = cudaSetDevice(1)) == cudaSuccess) {
        c = cudaMalloc(&pd, MAXB + 4096);
        cudaError_t c0 = cudaSetDevice(0);
        c = c == cudaSuccess ? c0 : c;
    }
    if (c == cudaSuccess)
        c = cudaEventCreate(&a);
    if (c == cudaSuccess)
        c = cudaEventCreate(&b);
    int rc = c == cudaSuccess ? 0
                              : err_set(e, ERR_SYSTEM, "GPU 0: post buffers: %s", cudaGetErrorString(c));
    char *bases[3] = {(char *)hd, (char *)d, (char *)pd};
    for (int where = 0; where < nwhere && rc == 0; where++) {
        char *base = bases[where];
        unsigned int *flag = (unsigned int *)(base + MAXB);
        for (int k = 0; k < NSIZES && rc == 0; k++)
            for (int mode = sizes[k] ? 1 : 0; mode < (sizes[k] ? 3 : 1) && rc == 0; mode++) {
                size_t per = sizes[k] > 16384 ? sizes[k] : 16384;
                int n = (int)((size_t)64 * (size_t)o->iters * 16384 / per);
                if (n < 200)
                    n = 200;
                float ms = 0;
                for (int rep = 0; rep < 2 && c == cudaSuccess; rep++)
                    if ((c = cudaEventRecord(a, s)) == cudaSuccess &&
                        (c = kern_post_loop(base, sizes[k], flag, n, mode, s)) == cudaSuccess &&
                        (c = cudaEventRecord(b, s)) == cudaSuccess &&
                        (c = cudaEventSynchronize(b)) == cudaSuccess)
                        c = cudaEventElapsedTime(&ms, a, b);
                if (c != cudaSuccess) {
                    rc = err_set(e, ERR_SYSTEM, "GPU 0: post kernel (%s): %s", post_where[where],
                                 cudaGetErrorString(c));
                    break;
                }
                char name[48];
                snprintf(name, sizeof name, "post-%s-%zu%s", post_where[where], sizes[k],
                         mode == 2 ? "-fence" : "");
                row(out, name, n, (double)ms * 1e3 / n);
            }
    }
    /* The receive: the tail read before the slice's loads (the flag set
     * above n: one read each) and without it, from host memory (an SHM
     * receiver's), and with --peer from device memory and from GPU 1's (a
     * local load's and a remote load's round trip in program order). */
    void *sink = NULL;
    if (rc == 0 && (c = cudaMalloc(&sink, 512 * 16)) != cudaSuccess)
        rc = err_set(e, ERR_SYSTEM, "GPU 0: recv sink: %s", cudaGetErrorString(c));
    const unsigned int set = 0x7fffffffu;
    if (rc == 0)
        ((volatile unsigned int *)h)[MAXB / sizeof(unsigned int)] = set;
    for (int where = 1; where < nwhere && rc == 0; where++)
        if ((c = cudaMemcpy(bases[where] + MAXB, &set, sizeof set, cudaMemcpyHostToDevice)) !=
            cudaSuccess)
            rc = err_set(e, ERR_SYSTEM, "GPU 0: recv flag (%s): %s", post_where[where],
                         cudaGetErrorString(c));
    for (int where = 0; where < (o->peer ? 3 : 1) && rc == 0; where++)
        for (int k = 2; k < NSIZES && rc == 0; k++)
            for (int mode = 0; mode < 2 && rc == 0; mode++) {
                int n = (int)((size_t)64 * (size_t)o->iters * 16384 / sizes[k]);
                if (n < 200)
                    n = 200;
                float ms = 0;
                for (int rep = 0; rep < 2 && c == cudaSuccess; rep++)
                    if ((c = cudaEventRecord(a, s)) == cudaSuccess &&
                        (c = kern_recv_loop(bases[where], sizes[k],
                                            (unsigned int *)(bases[where] + MAXB), n, mode, sink,
                                            s)) == cudaSuccess &&
                        (c = cudaEventRecord(b, s)) == cudaSuccess &&
                        (c = cudaEventSynchronize(b)) == cudaSuccess)
                        c = cudaEventElapsedTime(&ms, a, b);
                if (c != cudaSuccess) {
                    rc = err_set(e, ERR_SYSTEM, "GPU 0: recv kernel (%s): %s", post_where[where],
                                 cudaGetErrorString(c));
                    break;
                }
                char name[48];
                snprintf(name, sizeof name, "recv-%s-%zu%s", post_where[where], sizes[k],
                         mode ? "-tail" : "");
                row(out, name, n, (double)ms * 1e3 / n);
            }
    if (sink && !g->wedged)
        cudaFree(sink);
    if (a)
        cudaEventDestroy(a);
    if (b)
        cudaEventDestroy(b);
    if (!g->wedged) {
        cudaFreeHost(h);
        cudaFree(d);
        if (pd)
            cudaFree(pd);
    }
    return rc;
}

struct launch_probe {
    node_src src;
};

void launch_probe_free(gpu_ctx *g, launch_probe *p)
{
    if (!p)
        return;
    if (!g->wedged) {
        if (p->src.comm)
            ncclCommDestroy(p->src.comm);
        cudaFree(p->src.in);
        cudaFree(p->src.out);
    }
    free(p);
}

int launch_probe_open(gpu_ctx *g, launch_probe **out, err *e)
{
    *out = NULL;
    launch_probe *p = calloc(1, sizeof *p);
    if (!p)
        return err_set(e, ERR_SYSTEM, "out of memory");
    GPU_CU(0, cudaSetDevice(0));
    int rc = gpu_nccl_one(g, &p->src.comm, e);
    if (rc == 0 && (cudaMalloc(&p->src.in, NCCL_BYTES) != cudaSuccess ||
                    cudaMalloc(&p->src.out, NCCL_BYTES) != cudaSuccess))
        rc = err_set(e, ERR_SYSTEM, "GPU 0: host probe buffers (%d bytes) failed", NCCL_BYTES);
    double us, host;
    if (rc == 0)   /* NCCL connects the rank to itself at first use */
        rc = timed_calls(g, &p->src, 1, 20, &us, &host, e);
    if (rc) {
        launch_probe_free(g, p);
        return rc;
    }
    *out = p;
    return 0;
}

int launch_probe_run(gpu_ctx *g, launch_probe *p, int calls, double *p2p1_host_us, err *e)
{
    double us;
    GPU_CU(0, cudaSetDevice(0));
    return timed_calls(g, &p->src, 1, calls, &us, p2p1_host_us, e);
}

int launch_host_probe(gpu_ctx *g, double *launch_host_us, double *p2p1_host_us, err *e)
{
    enum { ROUNDS = 5, CALLS = 200 };
    node_src kern = {0}, src = {0};
    GPU_CU(0, cudaSetDevice(0));
    TRY(gpu_nccl_one(g, &src.comm, e));
    double t[2][ROUNDS], us;
    int rc = 0;
    if (cudaMalloc(&src.in, NCCL_BYTES) != cudaSuccess ||
        cudaMalloc(&src.out, NCCL_BYTES) != cudaSuccess)
        rc = err_set(e, ERR_SYSTEM, "GPU 0: host probe buffers (%d bytes) failed", NCCL_BYTES);
    if (rc == 0)   /* warm-up: NCCL connects the rank to itself at first use */
        rc = timed_calls(g, &src, 1, CALLS / 10, &us, &t[1][0], e);
    if (rc == 0)
        rc = timed2(g, &kern, NULL, CALLS / 10, &us, &t[0][0], e);
    for (int r = 0; r < ROUNDS && rc == 0; r++) {
        rc = timed2(g, &kern, NULL, CALLS, &us, &t[0][r], e);
        if (rc == 0)
            rc = timed_calls(g, &src, 1, CALLS, &us, &t[1][r], e);
    }
    if (!g->wedged) {
        ncclCommDestroy(src.comm);
        cudaFree(src.in);
        cudaFree(src.out);
    }
    TRY(rc);
    for (int i = 0; i < 2; i++)
        qsort(t[i], ROUNDS, sizeof t[i][0], cmp_double);
    *launch_host_us = t[0][ROUNDS / 2];
    *p2p1_host_us = t[1][ROUNDS / 2];
    return 0;
}

/* Per node of a graph of src's nodes: (T(GRAPH_NODES) - T(1)) / (GRAPH_NODES - 1),
 * each graph launched n times after a warm-up (graph_time). */
static int per_node(gpu_ctx *g, const node_src *src, int n, double *us, err *e)
{
    double t1 = 0, tk = 0;
    TRY(graph_time(g, src, 1, n, &t1, NULL, e));
    TRY(graph_time(g, src, GRAPH_NODES, n, &tk, NULL, e));
    *us = (tk - t1) / (GRAPH_NODES - 1);
    return 0;
}

/* `launch --copy-only`: graph-node (the empty kernel), then the copy-node
 * rows, every block count and size in turn. */
static int copy_rows(gpu_ctx *g, const opts *o, out_file *out, err *e)
{
    static const int nblocks[] = {1, 2, 4, 8, 16, 32, 36, 64, 132};
    enum { NB = sizeof nblocks / sizeof nblocks[0], PACKS = 512 * 16 };
    size_t cap = (size_t)132 * 2 * PACKS;
    node_src src = {0};
    int gl = o->iters / 10 > 10 ? o->iters / 10 : 10, rc = 0;
    if (cudaMalloc(&src.in, cap) != cudaSuccess || cudaMalloc(&src.out, cap) != cudaSuccess ||
        cudaMemset(src.in, 0x3c, cap) != cudaSuccess)
        rc = err_set(e, ERR_SYSTEM, "GPU 0: copy buffers (%zu bytes) failed", cap);
    double us = 0;
    node_src none = {0};
    if (rc == 0 && (rc = per_node(g, &none, gl, &us, e)) == 0)
        row(out, "graph-node", (long long)gl * GRAPH_NODES, us);
    for (int i = 0; i < NB && rc == 0; i++)
        for (int k = 0; k < 3 && rc == 0; k++) {
            src.cblocks = nblocks[i];
            src.cbytes = k == 0 ? 16 : (size_t)nblocks[i] * (size_t)k * PACKS;
            if ((rc = per_node(g, &src, gl, &us, e)) == 0) {
                char name[48];
                snprintf(name, sizeof name, "copy-node-b%d-%zu", src.cblocks, src.cbytes);
                row(out, name, (long long)gl * GRAPH_NODES, us);
            }
        }
    cudaFree(src.in);
    cudaFree(src.out);
    return rc;
}

/* `launch --loop` (see the top of the file). */
enum { LOOP_ROUNDS = 7, LOOP_BYTES = 4096, LOOP_BLOCKS = 132, LOOP_NS = 5, LOOP_HOST = 5 };
static const int loop_ns[LOOP_NS] = {1, 3, 10, 30, 100};

typedef struct loop_src {
    void *in, *out;
    cudaStream_t s[2];
    cudaEvent_t ev0[2], ev1[2];
} loop_src;

/* One flow's operation as bw_case's enqueue issues it. */
static int loop_issue(const loop_src *l, int copy, int k, err *e)
{
    GPU_CU(0, cudaSetDevice(0));
    if (copy)
        GPU_CU(0, cudaMemcpyPeerAsync(l->out, 0, l->in, 0, LOOP_BYTES, l->s[k]));
    else
        GPU_CU(0, kern_copy_unroll(l->out, l->in, LOOP_BYTES, LOOP_BLOCKS, 512, 1, l->s[k]));
    return 0;
}

/* bw_case's loop: warm-up, drain, start events, n iterations of nf flows in
 * turn, end events, drain; us[f] = flow f's interval / n. */
static int loop_timed(gpu_ctx *g, const loop_src *l, int copy, int nf, int n, double *us,
                      err *e)
{
    for (int it = 0; it < 2; it++)
        for (int k = 0; k < nf; k++)
            TRY(loop_issue(l, copy, k, e));
    for (int k = 0; k < nf; k++)
        TRY(gpu_wait(g, 0, l->s[k], "loop warm-up", e));
    for (int k = 0; k < nf; k++)
        GPU_CU(0, cudaEventRecord(l->ev0[k], l->s[k]));
    for (int it = 0; it < n; it++)
        for (int k = 0; k < nf; k++)
            TRY(loop_issue(l, copy, k, e));
    for (int k = 0; k < nf; k++)
        GPU_CU(0, cudaEventRecord(l->ev1[k], l->s[k]));
    for (int k = 0; k < nf; k++)
        TRY(gpu_wait(g, 0, l->s[k], "loop", e));
    for (int k = 0; k < nf; k++) {
        float ms = 0;
        GPU_CU(0, cudaEventElapsedTime(&ms, l->ev0[k], l->ev1[k]));
        us[k] = (double)ms * 1e3 / n;
    }
    return 0;
}

/* Host time per call of n calls of what (0 empty launch, 1 the loop's kernel
 * issue, 2 its copy issue, 3 cudaSetDevice, 4 cudaEventRecord), then a drain. */
static int loop_host(gpu_ctx *g, const loop_src *l, int what, int n, double *us, err *e)
{
    TRY(gpu_wait(g, 0, l->s[0], "loop host", e));
    double t0 = gpu_now_us();
    for (int i = 0; i < n; i++) {
        if (what == 0)
            GPU_CU(0, kern_empty(l->s[0]));
        else if (what <= 2)
            TRY(loop_issue(l, what == 2, 0, e));
        else if (what == 3)
            GPU_CU(0, cudaSetDevice(0));
        else
            GPU_CU(0, cudaEventRecord(l->ev0[0], l->s[0]));
    }
    *us = (gpu_now_us() - t0) / n;
    return gpu_wait(g, 0, l->s[0], "loop host", e);
}

static int loop_rows(gpu_ctx *g, const opts *o, out_file *out, err *e)
{
    static const char *const host_name[LOOP_HOST] = {"launch-host", "loop-kernel-host",
                                                     "loop-copy-host", "setdevice-host",
                                                     "event-record-host"};
    enum { NT = LOOP_HOST + 4 * LOOP_NS };   /* host rows, kernel, copy, kernel2 f0, f1 */
    loop_src l;
    memset(&l, 0, sizeof l);
    double (*t)[LOOP_ROUNDS] = calloc(NT, sizeof *t);
    int rc = t ? 0 : err_set(e, ERR_SYSTEM, "loop: out of memory");
    cudaError_t c = cudaSuccess;
    if (rc == 0 && ((c = cudaMalloc(&l.in, LOOP_BYTES)) != cudaSuccess ||
                    (c = cudaMalloc(&l.out, LOOP_BYTES)) != cudaSuccess))
        rc = err_set(e, ERR_SYSTEM, "GPU 0: loop buffers: %s", cudaGetErrorString(c));
    for (int k = 0; k < 2 && rc == 0; k++)
        if ((c = cudaStreamCreateWithFlags(&l.s[k], cudaStreamNonBlocking)) != cudaSuccess ||
            (c = cudaEventCreate(&l.ev0[k])) != cudaSuccess ||
            (c = cudaEventCreate(&l.ev1[k])) != cudaSuccess)
            rc = err_set(e, ERR_SYSTEM, "GPU 0: loop streams: %s", cudaGetErrorString(c));
    int n = o->iters, warm = o->warmup > 0 ? o->warmup : 1;
    double us[2], w;
    for (int i = 0; i < LOOP_HOST && rc == 0; i++)
        rc = loop_host(g, &l, i, warm, &w, e);
    for (int r = 0; r < LOOP_ROUNDS && rc == 0; r++) {
        for (int i = 0; i < LOOP_HOST && rc == 0; i++)
            rc = loop_host(g, &l, i, n, &t[i][r], e);
        for (int j = 0; j < LOOP_NS && rc == 0; j++) {
            if ((rc = loop_timed(g, &l, 0, 1, loop_ns[j], us, e)) == 0)
                t[LOOP_HOST + j][r] = us[0];
            if (rc == 0 && (rc = loop_timed(g, &l, 1, 1, loop_ns[j], us, e)) == 0)
                t[LOOP_HOST + LOOP_NS + j][r] = us[0];
            if (rc == 0 && (rc = loop_timed(g, &l, 0, 2, loop_ns[j], us, e)) == 0) {
                t[LOOP_HOST + 2 * LOOP_NS + j][r] = us[0];
                t[LOOP_HOST + 3 * LOOP_NS + j][r] = us[1];
            }
        }
    }
    for (int i = 0; i < NT && rc == 0; i++) {
        qsort(t[i], LOOP_ROUNDS, sizeof t[i][0], cmp_double);
        char name[40];
        int j = (i - LOOP_HOST) % LOOP_NS, kind = (i - LOOP_HOST) / LOOP_NS;
        if (i < LOOP_HOST)
            snprintf(name, sizeof name, "%s", host_name[i]);
        else if (kind < 2)
            snprintf(name, sizeof name, "loop-%s-%d", kind ? "copy" : "kernel", loop_ns[j]);
        else
            snprintf(name, sizeof name, "loop-kernel2-%d-f%d", loop_ns[j], kind - 2);
        row(out, name, i < LOOP_HOST ? (long long)n * LOOP_ROUNDS
                                     : (long long)loop_ns[j] * LOOP_ROUNDS,
            t[i][LOOP_ROUNDS / 2]);
    }
    for (int k = 0; k < 2; k++) {
        if (l.ev0[k])
            cudaEventDestroy(l.ev0[k]);
        if (l.ev1[k])
            cudaEventDestroy(l.ev1[k]);
        if (l.s[k])
            cudaStreamDestroy(l.s[k]);
    }
    cudaFree(l.in);
    cudaFree(l.out);
    free(t);
    return rc;
}

/* `launch --pair`: what one thread driving two ranks costs, on GPU 0.
 * (1) The host's issue with the stream busy: each of launch-host,
 * nccl-p2p-1-host and nccl-2comm-p2p-1-host (n calls back to back, the host
 * time inside them) timed with the streams idle and again queued behind a
 * spin kernel long enough to outlast the calls (-busy-host), so that every
 * event NCCL records or waits for in the calls (enqueue.cc ncclLaunchPrepare,
 * ncclLaunchFinish) is still pending, as when an eager call comes while the
 * previous call's kernel still runs. (2) Two ranks' kernels from one thread:
 * per iteration the host works PAIR_WORK_US, launches rank 0's kernel on one
 * stream, works again, launches rank 1's on a second stream; the kernels meet
 * (kern_pair_spin) and spin D us from the meeting, as a ring's first step
 * waits for the later rank: pair-D-eager (wall time per iteration, back to
 * back), pair-D-eager-host (the host's share), pair-D-skew (median start of
 * rank 1's kernel less rank 0's, from their %globaltimer stamps) and
 * pair-D-graph (per iteration of PAIR_GRAPH_CALLS pairs captured in a graph,
 * the two streams forked from and joined to the first). Every row is the
 * median of PAIR_ROUNDS rounds that time all of them in turn. */
enum { PAIR_ROUNDS = 7, PAIR_GRAPH_CALLS = 50, PAIR_STAMPS = 4096 };
/* Busy rows: kind (0 launch, 1 one-pair group, 2 two communicators) and the
 * calls queued behind the spin (few enough that the command queue never fills). */
/* Kinds 3 and 4: a pair of bytes to self on one communicator, or on each of
 * two in one group, which NCCL spreads over bytes / 64 KiB channels
 * (enqueue.cc addP2pToPlan): the plan's host work per channel, per rank. */
static const struct { int kind, calls; size_t bytes; const char *name; } busy_row[] = {
    {0, 100, 0, "launch"}, {1, 100, 0, "nccl-p2p-1"}, {2, 100, 0, "nccl-2comm-p2p-1"},
    {2, 25, 0, "nccl-2comm-p2p-1-q25"},
    {3, 100, 65536, "nccl-p2p-1-size-65536"}, {3, 100, 262144, "nccl-p2p-1-size-262144"},
    {3, 100, 524288, "nccl-p2p-1-size-524288"}, {3, 100, 1048576, "nccl-p2p-1-size-1048576"},
    {3, 100, 1572864, "nccl-p2p-1-size-1572864"},
    {4, 100, 65536, "nccl-2comm-p2p-1-size-65536"},
    {4, 100, 262144, "nccl-2comm-p2p-1-size-262144"},
    {4, 100, 524288, "nccl-2comm-p2p-1-size-524288"},
    {4, 100, 1048576, "nccl-2comm-p2p-1-size-1048576"},
    {4, 100, 1572864, "nccl-2comm-p2p-1-size-1572864"}};
enum { NBUSY = sizeof busy_row / sizeof busy_row[0] };
static const int pair_spin_us[] = {0, 2, 4, 6, 8, 10, 12, 14, 16, 20, 24, 28};
enum { NPAIR = sizeof pair_spin_us / sizeof pair_spin_us[0] };
#define PAIR_WORK_US 2.0
#define BUSY_SPIN_US_PER_CALL 60.0

typedef struct pair_src {
    unsigned int *flag; /* device: rank r's flag at flag[32 r] */
    uint64_t *stamp;    /* device: rank r's start stamps at stamp[r PAIR_STAMPS] */
    uint64_t *h_stamp;  /* host copy, 2 x PAIR_STAMPS */
    cudaStream_t s[2];
} pair_src;

static void host_work(double us)
{
    double t0 = gpu_now_us();
    while (gpu_now_us() - t0 < us)
        ;
}

static int pair_issue(gpu_ctx *g, const opts *o, const pair_src *p, int spin_us, double work,
                      const node_src *nr, err *e)
{
    for (int r = 0; r < 2; r++) {
        if (nr)
            TRY(p2p_group(&nr[r], 1, p->s[r], e));
        else if (work > 0)
            host_work(work);
        GPU_CU(0, kern_pair_spin(p->flag + 32 * r, p->flag + 32 * (1 - r),
                                 p->stamp + (size_t)r * PAIR_STAMPS, PAIR_STAMPS,
                                 (uint64_t)spin_us * 1000u, g->ctl_dev,
                                 (uint64_t)(o->timeout_ms * 1e6), p->s[r]));
    }
    return 0;
}

static int pair_wait(gpu_ctx *g, const pair_src *p, err *e)
{
    TRY(gpu_wait(g, 0, p->s[0], "pair kernels (rank 0)", e));
    TRY(gpu_wait(g, 0, p->s[1], "pair kernels (rank 1)", e));
    return 0;
}

/* Median of rank 1's start less rank 0's over the last n calls, us. */
static int pair_skew(const pair_src *p, int n, double *skew_us, err *e)
{
    unsigned int last = 0;
    GPU_CU(0, cudaMemcpy(&last, p->flag, sizeof last, cudaMemcpyDeviceToHost));
    GPU_CU(0, cudaMemcpy(p->h_stamp, p->stamp, 2 * PAIR_STAMPS * sizeof(uint64_t),
                         cudaMemcpyDeviceToHost));
    double *d = malloc((size_t)n * sizeof *d);
    if (!d)
        return err_set(e, ERR_SYSTEM, "pair: %d stamps", n);
    for (int i = 0; i < n; i++) {
        unsigned int v = (last - (unsigned int)i) % PAIR_STAMPS;
        d[i] = ((double)p->h_stamp[PAIR_STAMPS + v] - (double)p->h_stamp[v]) / 1e3;
    }
    qsort(d, (size_t)n, sizeof d[0], cmp_double);
    *skew_us = d[n / 2];
    free(d);
    return 0;
}

static int pair_graph(gpu_ctx *g, const opts *o, const pair_src *p, int spin_us,
                      cudaGraphExec_t *exec, err *e)
{
    cudaGraph_t graph = NULL;
    cudaEvent_t fork = NULL, join = NULL;
    GPU_CU(0, cudaEventCreateWithFlags(&fork, cudaEventDisableTiming));
    GPU_CU(0, cudaEventCreateWithFlags(&join, cudaEventDisableTiming));
    GPU_CU(0, cudaStreamBeginCapture(p->s[0], cudaStreamCaptureModeThreadLocal));
    int rc = 0;
    if (cudaEventRecord(fork, p->s[0]) != cudaSuccess ||
        cudaStreamWaitEvent(p->s[1], fork, 0) != cudaSuccess)
        rc = err_set(e, ERR_SYSTEM, "GPU 0: pair graph fork failed");
    for (int i = 0; i < PAIR_GRAPH_CALLS && rc == 0; i++)
        rc = pair_issue(g, o, p, spin_us, 0, NULL, e);
    if (rc == 0 && (cudaEventRecord(join, p->s[1]) != cudaSuccess ||
                    cudaStreamWaitEvent(p->s[0], join, 0) != cudaSuccess))
        rc = err_set(e, ERR_SYSTEM, "GPU 0: pair graph join failed");
    cudaError_t end = cudaStreamEndCapture(p->s[0], &graph);
    gpu_capture_abandon(0, p->s[0]);
    gpu_capture_abandon(0, p->s[1]);
    if (rc == 0 && end != cudaSuccess)
        rc = err_set(e, ERR_SYSTEM, "GPU 0: pair capture: %s", cudaGetErrorString(end));
    if (rc == 0 && (end = cudaGraphInstantiate(exec, graph, 0)) != cudaSuccess)
        rc = err_set(e, ERR_SYSTEM, "GPU 0: pair graph: %s", cudaGetErrorString(end));
    if (graph)
        cudaGraphDestroy(graph);
    cudaEventDestroy(fork);
    cudaEventDestroy(join);
    return rc;
}

/* One round of the pair rows for a spin of spin_us: t[0] eager per
 * iteration, t[1] its host share, t[2] the skew, t[3] per call in a graph.
 * nr (the pairnccl rows): each rank's host work is a one-pair NCCL group on
 * its own communicator and stream (nr[r]) before its kernel, in place of
 * PAIR_WORK_US of spinning; no graph then. */
static int pair_round(gpu_ctx *g, const opts *o, const pair_src *p, int spin_us,
                      const node_src *nr, double *t, err *e)
{
    int n = o->iters < PAIR_STAMPS ? o->iters : PAIR_STAMPS - 1;
    gpu_step(g, 0, "pair kernels, eager");
    double t0 = gpu_now_us();
    for (int i = 0; i < n; i++)
        TRY(pair_issue(g, o, p, spin_us, PAIR_WORK_US, nr, e));
    double t1 = gpu_now_us();
    TRY(pair_wait(g, p, e));
    t[0] = (gpu_now_us() - t0) / n;
    t[1] = (t1 - t0) / n;
    TRY(pair_skew(p, n, &t[2], e));
    t[3] = 0;
    if (nr)
        return 0;
    cudaGraphExec_t exec = NULL;
    TRY(pair_graph(g, o, p, spin_us, &exec, e));
    int rc = 0, launches = 4;
    gpu_step(g, 0, "pair kernels, graph");
    if (cudaGraphLaunch(exec, p->s[0]) != cudaSuccess) /* upload, untimed */
        rc = err_set(e, ERR_SYSTEM, "GPU 0: pair graph launch failed");
    if (rc == 0)
        rc = pair_wait(g, p, e);
    t0 = gpu_now_us();
    for (int i = 0; i < launches && rc == 0; i++)
        if (cudaGraphLaunch(exec, p->s[0]) != cudaSuccess)
            rc = err_set(e, ERR_SYSTEM, "GPU 0: pair graph launch failed");
    if (rc == 0)
        rc = pair_wait(g, p, e);
    t[3] = (gpu_now_us() - t0) / ((double)launches * PAIR_GRAPH_CALLS);
    cudaGraphExecDestroy(exec);
    return rc;
}

/* One busy-row kind k (0 launch, 1 one-pair group, 2 two communicators; 3, 4
 * the same groups of bytes): n
 * calls' host time per call, the streams idle (busy 0) or queued behind a
 * spin that outlasts the calls (busy 1). */
static int busy_calls(gpu_ctx *g, const node_src *src, int k, size_t bytes, int busy, int n,
                      double *host_us, err *e)
{
    cudaStream_t s = g->stream[0];
    node_src kern = {0};
    if (busy) {
        uint64_t ns = (uint64_t)(BUSY_SPIN_US_PER_CALL * 1e3 * n);
        GPU_CU(0, kern_spin(ns, 1, g->ctl_dev, s));
        if (k == 2 || k == 4)
            GPU_CU(0, kern_spin(ns, 1, g->ctl_dev, src->s2));
    }
    gpu_step(g, 0, busy ? "calls behind a busy stream" : "calls on an idle stream");
    double t0 = gpu_now_us();
    for (int i = 0; i < n; i++) {
        if (k == 0)
            TRY(enqueue(&kern, s, e));
        else if (k == 1)
            TRY(p2p_group(src, 1, s, e));
        else if (k == 2)
            TRY(p2p_group2(src, s, e));
        else if (k == 3)
            TRY(p2p_group_sized(src, bytes, s, e));
        else
            TRY(p2p_group2_sized(src, bytes, s, e));
    }
    double t1 = gpu_now_us();
    TRY(gpu_wait(g, 0, s, "busy-row calls", e));
    if (k == 2 || k == 4)
        TRY(gpu_wait(g, 0, src->s2, "busy-row calls (second communicator)", e));
    *host_us = (t1 - t0) / n;
    return 0;
}

/* The --pair rows (see above pair_src). */
static int pair_rows(gpu_ctx *g, const opts *o, out_file *out, err *e)
{
    node_src src = {0};
    pair_src p = {0};
    TRY(gpu_nccl_one(g, &src.comm, e));
    int rc = gpu_nccl_one(g, &src.comm2, e);
    if (rc == 0 && (cudaMalloc(&src.in, NCCL_BUF_BYTES) != cudaSuccess ||
                    cudaMalloc(&src.out, NCCL_BUF_BYTES) != cudaSuccess ||
                    cudaMemset(src.in, 0x3c, NCCL_BUF_BYTES) != cudaSuccess ||
                    cudaStreamCreateWithFlags(&src.s2, cudaStreamNonBlocking) != cudaSuccess ||
                    cudaMalloc((void **)&p.flag, 64 * sizeof(unsigned int)) != cudaSuccess ||
                    cudaMemset(p.flag, 0, 64 * sizeof(unsigned int)) != cudaSuccess ||
                    cudaMalloc((void **)&p.stamp, 2 * PAIR_STAMPS * sizeof(uint64_t)) !=
                        cudaSuccess ||
                    cudaStreamCreateWithFlags(&p.s[1], cudaStreamNonBlocking) != cudaSuccess ||
                    !(p.h_stamp = malloc(2 * PAIR_STAMPS * sizeof(uint64_t)))))
        rc = err_set(e, ERR_SYSTEM, "GPU 0: pair buffers or streams failed");
    p.s[0] = g->stream[0];
    node_src nr[2] = {src, src};
    nr[1].comm = src.comm2;
    double (*bt)[NBUSY][2] = calloc(PAIR_ROUNDS, sizeof *bt);
    double (*pt)[NPAIR][4] = calloc(PAIR_ROUNDS, sizeof *pt);
    double (*qt)[NPAIR][4] = calloc(PAIR_ROUNDS, sizeof *qt);
    double *col = calloc(PAIR_ROUNDS, sizeof *col);
    if (rc == 0 && !(bt && pt && qt && col))
        rc = err_set(e, ERR_SYSTEM, "pair: %d rounds", PAIR_ROUNDS);
    double warm;
    for (int k = 0; k < NBUSY && rc == 0; k++) /* warm-up: NCCL connects at first use */
        rc = busy_calls(g, &src, busy_row[k].kind, busy_row[k].bytes, 0, busy_row[k].calls,
                        &warm, e);
    for (int r = 0; r < PAIR_ROUNDS && rc == 0; r++) {
        for (int k = 0; k < NBUSY && rc == 0; k++)
            for (int b = 0; b < 2 && rc == 0; b++)
                rc = busy_calls(g, &src, busy_row[k].kind, busy_row[k].bytes, b,
                                busy_row[k].calls, &bt[r][k][b], e);
        for (int d = 0; d < NPAIR && rc == 0; d++)
            rc = pair_round(g, o, &p, pair_spin_us[d], NULL, pt[r][d], e);
        for (int d = 0; d < NPAIR && rc == 0; d++)
            rc = pair_round(g, o, &p, pair_spin_us[d], nr, qt[r][d], e);
    }
    char name[64];
    for (int k = 0; k < NBUSY && rc == 0; k++)
        for (int b = 0; b < 2; b++) {
            for (int r = 0; r < PAIR_ROUNDS; r++)
                col[r] = bt[r][k][b];
            qsort(col, PAIR_ROUNDS, sizeof col[0], cmp_double);
            snprintf(name, sizeof name, "%s%s-host", busy_row[k].name, b ? "-busy" : "");
            row(out, name, (long long)busy_row[k].calls * PAIR_ROUNDS, col[PAIR_ROUNDS / 2]);
        }
    static const char *const what[4] = {"eager", "eager-host", "skew", "graph"};
    int n = o->iters < PAIR_STAMPS ? o->iters : PAIR_STAMPS - 1;
    for (int d = 0; d < NPAIR && rc == 0; d++)
        for (int w = 0; w < 4; w++) {
            for (int r = 0; r < PAIR_ROUNDS; r++)
                col[r] = pt[r][d][w];
            qsort(col, PAIR_ROUNDS, sizeof col[0], cmp_double);
            snprintf(name, sizeof name, "pair-%d-%s", pair_spin_us[d], what[w]);
            row(out, name, (long long)(w == 3 ? PAIR_GRAPH_CALLS * 4 : n) * PAIR_ROUNDS,
                col[PAIR_ROUNDS / 2]);
        }
    for (int d = 0; d < NPAIR && rc == 0; d++)
        for (int w = 0; w < 3; w++) {
            for (int r = 0; r < PAIR_ROUNDS; r++)
                col[r] = qt[r][d][w];
            qsort(col, PAIR_ROUNDS, sizeof col[0], cmp_double);
            snprintf(name, sizeof name, "pairnccl-%d-%s", pair_spin_us[d], what[w]);
            row(out, name, (long long)n * PAIR_ROUNDS, col[PAIR_ROUNDS / 2]);
        }
    free(qt);
    free(bt);
    free(pt);
    free(col);
    if (!g->wedged) {
        gpu_step(g, 0, "ncclCommDestroy (1 rank, two communicators)");
        if (src.comm)
            ncclCommDestroy(src.comm);
        if (src.comm2)
            ncclCommDestroy(src.comm2);
        gpu_step_done(g);
        if (src.s2)
            cudaStreamDestroy(src.s2);
        if (p.s[1])
            cudaStreamDestroy(p.s[1]);
        cudaFree(src.in);
        cudaFree(src.out);
        cudaFree(p.flag);
        cudaFree(p.stamp);
    }
    free(p.h_stamp);
    return rc;
}

int launch_measure(gpu_ctx *g, const opts *o, out_file *out, err *e)
{
    cudaStream_t s = g->stream[0];
    GPU_CU(0, cudaSetDevice(0));
    if (o->nccl_only)
        return nccl_rows(g, o, out, e);
    if (o->copy_only)
        return copy_rows(g, o, out, e);
    if (o->post)
        return post_rows(g, o, out, e);
    if (o->loop)
        return loop_rows(g, o, out, e);
    if (o->pair)
        return pair_rows(g, o, out, e);
    double us;
    TRY(timed(g, NULL, o->warmup > 0 ? o->warmup : 1, &us, e));
    TRY(timed(g, NULL, o->iters, &us, e));
    row(out, "launch", o->iters, us);

    node_src kern = {0};
    cudaGraphExec_t one, many;
    TRY(make_graph(&kern, 1, s, &one, e));
    TRY(make_graph(&kern, GRAPH_NODES, s, &many, e));
    int glaunches = o->iters / 10 > 10 ? o->iters / 10 : 10;
    double t1, tk;
    int rc = timed(g, one, glaunches, &t1, e);
    if (rc == 0)
        rc = timed(g, one, glaunches, &t1, e);
    if (rc == 0)
        rc = timed(g, many, glaunches, &tk, e);
    if (rc == 0)
        rc = timed(g, many, glaunches, &tk, e);
    cudaGraphExecDestroy(one);
    cudaGraphExecDestroy(many);
    TRY(rc);
    row(out, "graph-launch", glaunches, t1);
    row(out, "graph-node", (long long)glaunches * GRAPH_NODES, (tk - t1) / (GRAPH_NODES - 1));

    int nsync = o->iters / 10 > 10 ? o->iters / 10 : 10;
    double t0 = gpu_now_us();
    for (int i = 0; i < nsync; i++) {
        GPU_CU(0, kern_empty(s));
        TRY(gpu_wait(g, 0, s, "sync round trip", e));
    }
    row(out, "sync", nsync, (gpu_now_us() - t0) / nsync);

    /* Spin accuracy: 20 spins of 100 us back to back, events around them. */
    cudaEvent_t a, b;
    GPU_CU(0, cudaEventCreate(&a));
    GPU_CU(0, cudaEventCreate(&b));
    GPU_CU(0, cudaEventRecord(a, s));
    for (int i = 0; i < 20; i++)
        GPU_CU(0, kern_spin(100000, 1, g->ctl_dev, s));
    GPU_CU(0, cudaEventRecord(b, s));
    TRY(gpu_wait(g, 0, s, "spin kernels", e));
    float ms = 0;
    GPU_CU(0, cudaEventElapsedTime(&ms, a, b));
    cudaEventDestroy(a);
    cudaEventDestroy(b);
    row(out, "spin-error", 20, fabs((double)ms * 1e3 / 20 - 100.0));

    /* The CPU's share of a launch: the calls alone, before the wait. */
    double host;
    TRY(timed2(g, &kern, NULL, o->iters, &us, &host, e));
    row(out, "launch-host", o->iters, host);
    TRY(graph_time(g, &kern, 1, glaunches, &us, &host, e));
    row(out, "graph-launch-host", glaunches, host);
    for (int k = 1; k <= MAX_SWEEP_NODES; k *= 2) {
        char name[32];
        snprintf(name, sizeof name, "graph-nodes-%d", k);
        TRY(graph_time(g, &kern, k, glaunches, &us, NULL, e));
        row(out, name, glaunches, us);
    }

    double rtt = 0;
    int nrtt = 0;
    TRY(host_flag(g, o, &rtt, &nrtt, e));
    row(out, "host-flag", nrtt, rtt);

    double fence = 0, rel = 0;
    int nfence = 0;
    TRY(fence_sys(g, o, &fence, &rel, &nfence, e));
    row(out, "fence-sys", nfence, fence);
    row(out, "release-sys", nfence, rel);

    return nccl_rows(g, o, out, e);
}

int launch_run(int argc, char **argv, err *e)
{
    opts o;
    opts_init(&o, OPTS_LAUNCH);
    TRY(opts_parse(&o, argc, argv, e));
    if (o.help) {
        opts_usage(stdout, "launch", "", OPTS_LAUNCH);
        return 0;
    }
    gpu_ctx *g = NULL;
    int rc = gpu_open(&g, o.peer ? 2 : 1, o.timeout_ms, o.host_wait_s, argc, argv, e);
    out_file out;
    if (rc == 0)
        rc = out_open(&out, o.out, o.fmt, MEAS_LAUNCH, &g->meta, e);
    if (rc == 0) {
        rc = launch_measure(g, &o, &out, e);
        if (rc == 0)
            rc = out_commit(&out, e);
        else
            out_abort(&out);
    }
    gpu_close(g);
    return rc;
}
