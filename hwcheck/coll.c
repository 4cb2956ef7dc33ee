/* `hwcheck coll`: NCCL collectives and the project's allreduce kernels over
 * a size sweep, in the layout of nccl-tests (and of `collsim coll`), every
 * result checked against the CPU reference (hwcheck/ref.c). Ranks are the
 * GPUs 0..n-1, or with --virtual-ranks N, N ranks on GPU 0 with their own
 * buffers and streams (every kernel of a call must be resident at once, so
 * the block count is capped by the occupancy of one call per rank).
 * Inputs are fresh random data for every size; outputs are filled with NaN
 * before each run so that an element nobody wrote counts as wrong. */
#include <ctype.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "hwcheck/modes.h"
#include "sim/rounds.h"

enum { MAXR = GPU_MAX, PROBE_CALLS = 100, ROUNDS_MAX = 1000 };

typedef struct rank_bufs {
    int dev;
    cudaStream_t s;
    int own_stream;
    void *in, *out, *inbox;
    kern_signal *sig;
    void *h_in;
} rank_bufs;

typedef struct state {
    int n, virt, custom;
    int nccl_mem;          /* in/out from ncclMemAlloc (freed with ncclMemFree) */
    kern_ar_algo algo;
    int blocks;            /* custom kernels: blocks per call (all ranks) */
    int blocks_cap;        /* virtual ranks: occupancy limit, 0 = none */
    rank_bufs r[MAXR];
    void *h_out;
    float *expect, *scale;
    cudaGraphExec_t exec[MAXR];
    int nexec;
    cudaEvent_t fork, join[MAXR];
    launch_probe *probe;   /* eager NCCL: the host probe taken before each size */
} state;

static ncclDataType_t nccl_type(ref_dtype t)
{
    return t == REF_BF16 ? ncclBfloat16 : t == REF_FP16 ? ncclFloat16 : ncclFloat32;
}

static void free_state(gpu_ctx *g, state *st)
{
    if (g->wedged) { /* work still in flight: freeing would wait for it */
        free(st->h_out);
        free(st->expect);
        free(st->scale);
        for (int r = 0; r < st->n; r++)
            free(st->r[r].h_in);
        return;
    }
    for (int i = 0; i < st->nexec; i++)
        cudaGraphExecDestroy(st->exec[i]);
    for (int r = 0; r < st->n; r++) {
        rank_bufs *b = &st->r[r];
        cudaSetDevice(b->dev);
        if (st->nccl_mem) {
            if (b->in)
                ncclMemFree(b->in);
            if (b->out)
                ncclMemFree(b->out);
        } else {
            cudaFree(b->in);
            cudaFree(b->out);
        }
        if (st->algo == KERN_SHM_RING && st->custom)
            cudaFreeHost(b->inbox);
        else
            cudaFree(b->inbox);
        cudaFree(b->sig);
        if (b->own_stream)
            cudaStreamDestroy(b->s);
        if (st->join[r])
            cudaEventDestroy(st->join[r]);
        free(b->h_in);
    }
    if (st->fork)
        cudaEventDestroy(st->fork);
    free(st->h_out);
    free(st->expect);
    free(st->scale);
}

static int setup(gpu_ctx *g, const opts *o, state *st, err *e)
{
    size_t esz = ref_dtype_bytes(o->dtype);
    size_t max = (size_t)o->max_bytes;
    size_t inbox = 0;
    int shm = st->custom && st->algo == KERN_SHM_RING;
    if (st->custom)
        inbox = (st->algo == KERN_ONESHOT_PUSH || st->algo == KERN_TWOSHOT_PUSH)
                    ? max * (size_t)st->n : max;
    if (shm) /* every channel's flags and FIFO, in pinned host memory (kernels.h) */
        inbox = (size_t)(o->blocks ? o->blocks : KERN_SHM_CHANNELS) * KERN_SHM_CHANNEL_BYTES;
    for (int r = 0; r < st->n; r++) {
        rank_bufs *b = &st->r[r];
        b->dev = st->virt ? 0 : r;
        GPU_CU(b->dev, cudaSetDevice(b->dev));
        if (st->virt) {
            GPU_CU(b->dev, cudaStreamCreateWithFlags(&b->s, cudaStreamNonBlocking));
            b->own_stream = 1;
            GPU_CU(b->dev, cudaEventCreateWithFlags(&st->join[r], cudaEventDisableTiming));
        } else {
            b->s = g->stream[r];
        }
        if (st->nccl_mem) {
            /* as nccl-tests: cuMem-backed buffers that NCCL can register
             * (zero-copy inside CUDA graphs) */
            GPU_NC(b->dev, ncclMemAlloc(&b->in, max));
            GPU_NC(b->dev, ncclMemAlloc(&b->out, max));
        } else {
            GPU_CU(b->dev, cudaMalloc(&b->in, max));
            GPU_CU(b->dev, cudaMalloc(&b->out, max));
        }
        if (shm) {
            GPU_CU(b->dev, cudaHostAlloc(&b->inbox, inbox,
                                         cudaHostAllocPortable | cudaHostAllocMapped));
            memset(b->inbox, 0, inbox); /* step counters start at 0 */
        } else if (inbox) {
            GPU_CU(b->dev, cudaMalloc(&b->inbox, inbox));
        }
        GPU_CU(b->dev, cudaMalloc((void **)&b->sig, KERN_SIGNAL_BYTES));
        GPU_CU(b->dev, cudaMemsetAsync(b->sig, 0, KERN_SIGNAL_BYTES, b->s));
        b->h_in = malloc(max);
        if (!b->h_in)
            return err_set(e, ERR_SYSTEM, "out of host memory (%zu bytes)", max);
    }
    if (st->virt)
        GPU_CU(0, cudaEventCreateWithFlags(&st->fork, cudaEventDisableTiming));
    st->h_out = malloc(max);
    st->expect = malloc(max / esz * sizeof(float));
    st->scale = malloc(max / esz * sizeof(float));
    if (!st->h_out || !st->expect || !st->scale)
        return err_set(e, ERR_SYSTEM, "out of host memory");
    if (st->virt) {
        int per_sm = 0;
        GPU_CU(0, kern_ar_blocks_per_sm(st->algo, (kern_dtype)o->dtype, &per_sm));
        st->blocks_cap = g->sms[0] * per_sm / st->n;
        if (st->blocks_cap < 1)
            return err_set(e, ERR_SYSTEM, "GPU 0: %d virtual ranks do not fit at once", st->n);
        if (st->blocks_cap > KERN_MAX_BLOCKS)
            st->blocks_cap = KERN_MAX_BLOCKS;
    }
    return 0;
}

/* One collective on every rank (eager; also used while capturing). A rank
 * equal to --drop-rank is never launched (test hook: its peers must give up,
 * on the device for the custom kernels, at the host-side limit for NCCL). */
static int enqueue(gpu_ctx *g, const opts *o, state *st, size_t in_count, size_t out_count,
                   err *e)
{
    if (st->custom) {
        kern_ar_args a;
        memset(&a, 0, sizeof a);
        a.nranks = st->n;
        a.dtype = (kern_dtype)o->dtype;
        a.count = in_count;
        a.blocks = st->blocks;
        a.ctl = g->ctl_dev;
        a.timeout_ns = (uint64_t)(o->timeout_ms * 1e6);
        for (int r = 0; r < st->n; r++) {
            a.in[r] = st->r[r].in;
            a.out[r] = st->r[r].out;
            a.inbox[r] = st->r[r].inbox;
            a.sig[r] = st->r[r].sig;
        }
        for (int r = 0; r < st->n; r++) {
            if (r == o->drop_rank)
                continue;
            a.rank = r;
            GPU_CU(st->r[r].dev, cudaSetDevice(st->r[r].dev));
            GPU_CU(st->r[r].dev, kern_allreduce(st->algo, &a, st->r[r].s));
        }
        return 0;
    }
    ncclDataType_t dt = nccl_type(o->dtype);
    size_t esz = ref_dtype_bytes(o->dtype), per = out_count / (size_t)st->n;
    gpu_step(g, 0, "NCCL enqueue (ncclGroupStart .. ncclGroupEnd)");
    GPU_NC(0, ncclGroupStart());
    int rc = 0;
    for (int r = 0; r < st->n && rc == 0; r++) {
        rank_bufs *b = &st->r[r];
        ncclComm_t c = g->comm[r];
        ncclResult_t nr = ncclSuccess;
        if (r == o->drop_rank)
            continue;
        switch (o->coll) {
        case REF_ALLREDUCE:
            nr = ncclAllReduce(b->in, b->out, in_count, dt, ncclSum, c, b->s);
            break;
        case REF_REDUCESCATTER:
            nr = ncclReduceScatter(b->in, b->out, out_count, dt, ncclSum, c, b->s);
            break;
        case REF_ALLGATHER:
            nr = ncclAllGather(b->in, b->out, in_count, dt, c, b->s);
            break;
        case REF_BROADCAST:
            nr = ncclBroadcast(b->in, b->out, in_count, dt, o->root, c, b->s);
            break;
        default:
            for (int p = 0; p < st->n && nr == ncclSuccess; p++) {
                nr = ncclSend((char *)b->in + (size_t)p * per * esz, per, dt, p, c, b->s);
                if (nr == ncclSuccess)
                    nr = ncclRecv((char *)b->out + (size_t)p * per * esz, per, dt, p, c, b->s);
            }
            break;
        }
        if (nr != ncclSuccess)
            rc = err_set(e, ERR_SYSTEM, "GPU %d: %s: %s", b->dev, ref_coll_name(o->coll),
                         ncclGetErrorString(nr));
    }
    /* The group is always closed, also after an error, so that no half-open
     * group (or, while capturing, half-captured work) outlives this call. */
    ncclResult_t end = ncclGroupEnd();
    if (rc == 0 && end != ncclSuccess)
        rc = err_set(e, ERR_SYSTEM, "GPU 0: ncclGroupEnd: %s", ncclGetErrorString(end));
    return rc;
}

static void drop_graphs(state *st)
{
    for (int i = 0; i < st->nexec; i++)
        cudaGraphExecDestroy(st->exec[i]);
    st->nexec = 0;
}

/* Capture reps collectives into one graph per capturing stream. Real ranks:
 * every rank's stream is captured on its own device (one capture per stream
 * and device), all captures begin before the first collective and all end
 * before the first instantiation (a thread may not instantiate while any of
 * its streams is capturing); NCCL's ncclGroupStart/End run inside the
 * captures, as NCCL requires for several GPUs driven by one thread. Virtual
 * ranks: one graph that forks from rank 0's stream to every rank's stream and
 * joins back. Nothing is allocated while capturing (buffers exist, and the
 * collective already ran once eagerly so NCCL's connections are set up). On
 * any error every capture still open is ended and its graph dropped. */
static int capture(gpu_ctx *g, const opts *o, state *st, int reps, size_t in_count,
                   size_t out_count, err *e)
{
    drop_graphs(st);
    int ncap = st->virt ? 1 : st->n;
    cudaGraph_t graph[MAXR] = {0};
    int rc = 0, began = 0;
    gpu_step(g, st->r[0].dev, "graph capture");
    for (int r = 0; r < ncap && rc == 0; r++) {
        cudaSetDevice(st->r[r].dev);
        cudaError_t c = cudaStreamBeginCapture(st->r[r].s, cudaStreamCaptureModeThreadLocal);
        if (c != cudaSuccess)
            rc = err_set(e, ERR_SYSTEM, "GPU %d: cudaStreamBeginCapture: %s", st->r[r].dev,
                         cudaGetErrorString(c));
        else
            began = r + 1;
    }
    if (rc == 0 && st->virt) {
        cudaError_t c = cudaEventRecord(st->fork, st->r[0].s);
        for (int r = 1; r < st->n && c == cudaSuccess; r++)
            c = cudaStreamWaitEvent(st->r[r].s, st->fork, 0);
        if (c != cudaSuccess)
            rc = err_set(e, ERR_SYSTEM, "GPU 0: graph fork: %s", cudaGetErrorString(c));
    }
    for (int i = 0; i < reps && rc == 0; i++)
        rc = enqueue(g, o, st, in_count, out_count, e);
    if (rc == 0 && st->virt) {
        cudaError_t c = cudaSuccess;
        for (int r = 1; r < st->n && c == cudaSuccess; r++) {
            c = cudaEventRecord(st->join[r], st->r[r].s);
            if (c == cudaSuccess)
                c = cudaStreamWaitEvent(st->r[0].s, st->join[r], 0);
        }
        if (c != cudaSuccess)
            rc = err_set(e, ERR_SYSTEM, "GPU 0: graph join: %s", cudaGetErrorString(c));
    }
    /* End every capture that began, whatever happened. */
    for (int r = 0; r < began; r++) {
        cudaSetDevice(st->r[r].dev);
        cudaError_t c = cudaStreamEndCapture(st->r[r].s, &graph[r]);
        if (c != cudaSuccess && rc == 0)
            rc = err_set(e, ERR_SYSTEM, "GPU %d: cudaStreamEndCapture: %s", st->r[r].dev,
                         cudaGetErrorString(c));
    }
    for (int r = 0; r < ncap; r++)
        gpu_capture_abandon(st->r[r].dev, st->r[r].s); /* no-op unless still capturing */
    for (int r = 0; r < ncap && rc == 0; r++) {
        cudaSetDevice(st->r[r].dev);
        cudaError_t c = cudaGraphInstantiate(&st->exec[r], graph[r], 0);
        if (c != cudaSuccess)
            rc = err_set(e, ERR_SYSTEM, "GPU %d: cudaGraphInstantiate: %s", st->r[r].dev,
                         cudaGetErrorString(c));
        else
            st->nexec = r + 1;
    }
    for (int r = 0; r < ncap; r++)
        if (graph[r])
            cudaGraphDestroy(graph[r]);
    if (rc != 0)
        drop_graphs(st);
    else
        gpu_step_done(g);
    return rc;
}

/* Eager: one collective. Graph: one launch of every rank's graph. */
static int launch_once(gpu_ctx *g, const opts *o, state *st, size_t in_count, size_t out_count,
                       err *e)
{
    if (!o->graph || st->nexec == 0)
        return enqueue(g, o, st, in_count, out_count, e);
    gpu_step(g, st->r[0].dev, "graph launch");
    for (int i = 0; i < st->nexec; i++) {
        GPU_CU(st->r[i].dev, cudaSetDevice(st->r[i].dev));
        GPU_CU(st->r[i].dev, cudaGraphLaunch(st->exec[i], st->r[i].s));
    }
    return 0;
}

static int wait_ranks(gpu_ctx *g, state *st, const char *what, err *e)
{
    for (int r = 0; r < st->n; r++)
        TRY(gpu_wait(g, st->r[r].dev, st->r[r].s, what, e));
    return 0;
}

/* New inputs and NaN outputs on every rank, on the ranks' own streams (the
 * legacy default stream does not order with them), and finished on all ranks
 * before anything else is enqueued: a rank's kernel reads its peers' inputs. */
static int fill_inputs(gpu_ctx *g, const opts *o, state *st, size_t in_count, uint64_t seed,
                       err *e)
{
    size_t bytes = in_count * ref_dtype_bytes(o->dtype);
    for (int r = 0; r < st->n; r++) {
        rank_bufs *b = &st->r[r];
        TRY(gpu_wait(g, b->dev, b->s, "input upload", e)); /* h_in is about to change */
        ref_fill(o->dtype, b->h_in, in_count, seed, r);
        GPU_CU(b->dev, cudaSetDevice(b->dev));
        GPU_CU(b->dev, cudaMemcpyAsync(b->in, b->h_in, bytes, cudaMemcpyHostToDevice, b->s));
        GPU_CU(b->dev, cudaMemsetAsync(b->out, 0xff, (size_t)o->max_bytes, b->s)); /* NaN */
    }
    for (int r = 0; r < st->n; r++)
        TRY(gpu_wait(g, st->r[r].dev, st->r[r].s, "input upload", e));
    return 0;
}

static int check_outputs(const opts *o, state *st, size_t in_count, size_t out_count,
                         long long *wrong, err *e)
{
    const void *in[MAXR];
    for (int r = 0; r < st->n; r++)
        in[r] = st->r[r].h_in;
    int same = o->coll != REF_REDUCESCATTER && o->coll != REF_ALLTOALL;
    int roundings = 0;
    for (int r = 0; r < st->n; r++) {
        rank_bufs *b = &st->r[r];
        GPU_CU(b->dev, cudaSetDevice(b->dev));
        gpu_step(NULL, b->dev, "result download");
        GPU_CU(b->dev, cudaMemcpy(st->h_out, b->out, out_count * ref_dtype_bytes(o->dtype),
                                  cudaMemcpyDeviceToHost));
        if (r == 0 || !same)
            roundings = ref_expect(o->coll, o->dtype, st->n, o->root, in, in_count, out_count, r,
                                   st->expect, st->scale);
        *wrong += (long long)ref_check(o->dtype, st->h_out, st->expect, st->scale, out_count,
                                       roundings);
    }
    gpu_step_done(NULL);
    return 0;
}

static void nccl_choice(char *algo, size_t na, char *proto, size_t np, int *channels)
{
    const char *a = getenv("NCCL_ALGO"), *p = getenv("NCCL_PROTO");
    const char *mn = getenv("NCCL_MIN_NCHANNELS"), *mx = getenv("NCCL_MAX_NCHANNELS");
    snprintf(algo, na, "%s", a && *a ? a : "auto");
    for (char *c = algo; *c; c++)
        *c = (char)tolower((unsigned char)*c);
    snprintf(proto, np, "%s", p && *p ? p : "auto");
    *channels = mn && mx && !strcmp(mn, mx) ? atoi(mn) : 0;
}

static int sweep(gpu_ctx *g, const opts *o, state *st, out_file *out, long long *total_wrong,
                 err *e)
{
    report *rp = out->rep;
    size_t esz = ref_dtype_bytes(o->dtype);
    uint64_t size = o->min_bytes;
    int step = 0;
    for (;;) {
        size_t in_count, out_count;
        ref_counts(o->coll, (size_t)size, o->dtype, st->n, &in_count, &out_count);
        if (in_count == 0 || (st->custom && size % KERN_PACK_BYTES != 0)) {
            report_note(rp, "size %llu skipped: not a multiple of %s", (unsigned long long)size,
                        st->custom ? "16 bytes" : "the element size times the ranks");
        } else {
            if (st->custom) {
                kern_ar_args a;
                memset(&a, 0, sizeof a);
                a.count = in_count;
                a.dtype = (kern_dtype)o->dtype;
                a.blocks = o->blocks ? o->blocks
                           : st->algo == KERN_SHM_RING ? KERN_SHM_CHANNELS : 0;
                st->blocks = kern_ar_blocks(&a);
                if (st->blocks_cap && st->blocks > st->blocks_cap)
                    st->blocks = st->blocks_cap;
            }
            uint64_t seed = o->seed * 1000003u + (uint64_t)step;
            TRY(fill_inputs(g, o, st, in_count, seed, e));
            gpu_ctl_reset(g);
            /* Eager warm-up (also before a capture: NCCL connects on first use,
             * which allocates and must not happen while capturing). */
            int warm = o->warmup > 0 ? o->warmup : 1;
            for (int i = 0; i < warm; i++)
                TRY(enqueue(g, o, st, in_count, out_count, e));
            TRY(wait_ranks(g, st, "warm-up", e));
            double probe_us = 0, round_us[ROUNDS_MAX];
            /* --rounds R: the timed loop R times; each round's mean per call
             * is kept, so a stall in one round shows as a mean above the
             * rounds' median (sim/rounds.h). */
            int rounds = o->rounds > 0 ? o->rounds : 1;
            if (rounds > ROUNDS_MAX)
                rounds = ROUNDS_MAX;
            const char *what = st->custom ? opts_impl_name(o->impl) : ref_coll_name(o->coll);
            if (o->graph) {
                /* As nccl-tests -G: -n collectives back to back in one graph,
                 * launched once untimed (upload) and once timed per round. */
                TRY(capture(g, o, st, o->iters, in_count, out_count, e));
                TRY(launch_once(g, o, st, in_count, out_count, e));
                TRY(wait_ranks(g, st, "graph warm-up", e));
                for (int r = 0; r < rounds; r++) {
                    double t0 = gpu_now_us();
                    TRY(launch_once(g, o, st, in_count, out_count, e));
                    TRY(wait_ranks(g, st, what, e));
                    round_us[r] = (gpu_now_us() - t0) / o->iters;
                }
            } else {
                /* The host's level can change between sizes (docs/model.md
                 * "What sets the host's speed"): probe it right before. */
                if (st->probe)
                    TRY(launch_probe_run(g, st->probe, PROBE_CALLS, &probe_us, e));
                for (int r = 0; r < rounds; r++) {
                    double t0 = gpu_now_us();
                    for (int i = 0; i < o->iters; i++)
                        TRY(launch_once(g, o, st, in_count, out_count, e));
                    TRY(wait_ranks(g, st, what, e));
                    round_us[r] = (gpu_now_us() - t0) / o->iters;
                }
            }
            rounds_stat rs = rounds_of(round_us, rounds);
            double us = rs.mean;
            long long wrong = 0;
            for (int c = 0; c < o->check; c++) {
                if (c > 0) { /* another round on fresh data */
                    TRY(fill_inputs(g, o, st, in_count, seed + 7919u * (uint64_t)c, e));
                    TRY(launch_once(g, o, st, in_count, out_count, e));
                    TRY(wait_ranks(g, st, "check", e));
                }
                TRY(check_outputs(o, st, in_count, out_count, &wrong, e));
            }
            char algo[32], proto[32];
            int channels;
            if (st->custom) {
                snprintf(algo, sizeof algo, "%s", opts_impl_name(o->impl));
                snprintf(proto, sizeof proto, "-");
                channels = st->blocks;
            } else {
                nccl_choice(algo, sizeof algo, proto, sizeof proto, &channels);
            }
            double algbw = (double)size / (us * 1e3);
            report_int(rp, (long long)size);
            report_int(rp, (long long)(size / esz));
            report_str(rp, ref_dtype_name(o->dtype));
            report_str(rp, algo);
            report_str(rp, proto);
            report_int(rp, channels);
            report_num(rp, us);
            report_num(rp, algbw);
            report_num(rp, algbw * ref_bus_factor(o->coll, st->n));
            report_str(rp, opts_impl_name(o->impl));
            report_int(rp, o->graph);
            report_int(rp, o->check ? wrong : -1);
            report_num(rp, probe_us);
            report_num(rp, rs.min);
            report_num(rp, rs.med);
            report_end_row(rp);
            *total_wrong += wrong;
        }
        if (size >= o->max_bytes)
            break;
        uint64_t next = (uint64_t)((double)size * o->factor);
        size = next > size ? next : size + 1;
        if (size > o->max_bytes)
            size = o->max_bytes;
        step++;
    }
    drop_graphs(st);
    return 0;
}

int coll_measure(gpu_ctx *g, const opts *o, out_file *out, long long *wrong, err *e)
{
    state st;
    memset(&st, 0, sizeof st);
    st.custom = o->impl != OPTS_IMPL_NCCL;
    st.virt = o->vranks > 0;
    st.n = st.virt ? o->vranks : g->n;
    st.algo = (kern_ar_algo)(o->impl - 1);
    st.nccl_mem = !st.custom && !o->cuda_alloc;
    if (st.custom && st.algo == KERN_SHM_RING && st.n != 2)
        return err_set(e, ERR_USAGE, "coll: --impl shm-ring runs on 2 ranks (-g 2 or "
                       "--virtual-ranks 2), not %d", st.n);
    if (st.custom && !st.virt && st.algo != KERN_SHM_RING) { /* SHM needs no peer access */
        if (st.n > KERN_MAX_RANKS)
            return err_set(e, ERR_USAGE, "coll: the custom kernels run on at most %d ranks (-g)",
                           KERN_MAX_RANKS);
        for (int i = 0; i < st.n; i++)
            for (int j = 0; j < st.n; j++)
                if (i != j && !g->peer[i][j]) {
                    report_note(out->rep, "skipped: GPU %d cannot access GPU %d's memory; the "
                                "custom kernels need peer access between every pair", i, j);
                    return 0;
                }
    }
    if (!st.custom)
        TRY(gpu_nccl(g, o->env, o->nenv, e));
    if (!st.custom && o->coll == REF_BROADCAST && o->root >= st.n)
        return err_set(e, ERR_USAGE, "coll: --root %d but only %d ranks", o->root, st.n);
    int rc = setup(g, o, &st, e);
    if (rc == 0 && !st.custom && !o->graph && !st.virt)
        rc = launch_probe_open(g, &st.probe, e);
    if (rc == 0) {
        if (st.virt && (o->blocks == 0 || o->blocks > st.blocks_cap))
            report_note(out->rep, "%d virtual ranks on GPU 0: at most %d blocks per rank so that "
                        "all ranks are resident at once", st.n, st.blocks_cap);
        rc = sweep(g, o, &st, out, wrong, e);
    }
    launch_probe_free(g, st.probe);
    free_state(g, &st);
    return rc;
}

int coll_run(int argc, char **argv, err *e)
{
    opts o;
    opts_init(&o, OPTS_COLL);
    TRY(opts_parse(&o, argc, argv, e));
    if (o.help) {
        opts_usage(stdout, "coll", "[allreduce|reducescatter|allgather|broadcast|alltoall]", OPTS_COLL);
        return 0;
    }
    if (o.list) {
        for (int c = 0; c < REF_NCOLLS; c++)
            printf("%s\n", ref_coll_name((ref_coll)c));
        return 0;
    }
    gpu_ctx *g = NULL;
    int rc = gpu_open(&g, o.vranks ? 1 : o.ngpus, o.timeout_ms, o.host_wait_s, argc, argv, e);
    if (rc == 0 && o.vranks)
        meas_extra(&g->meta, "virtual_ranks", "%d (on GPU 0, separate buffers and streams)",
                   o.vranks);
    if (rc == 0 && o.impl == OPTS_IMPL_NCCL)
        meas_extra(&g->meta, "buffers", "%s", o.cuda_alloc ? "cudaMalloc" : "ncclMemAlloc");
    /* The process's own host cost of a call, for an eager NCCL sweep: it
     * differs between processes of one machine by up to 1.7x (docs/model.md
     * "One thread, several ranks"), and back to back an eager row costs at
     * least it once per rank. Measured after the sweep's communicators exist
     * (gpu_nccl applies --env first: NCCL caches its parameters at first read). */
    double probe_launch = 0, probe_p2p = 0;
    if (rc == 0 && o.impl == OPTS_IMPL_NCCL && !o.graph && !o.vranks) {
        rc = gpu_nccl(g, o.env, o.nenv, e);
        if (rc == 0)
            rc = launch_host_probe(g, &probe_launch, &probe_p2p, e);
    }
    if (rc == 0 && probe_p2p > 0)
        meas_extra(&g->meta, "host_probe", "launch-host %.3f us, nccl-p2p-1-host %.3f us (this "
                   "process, GPU 0: a one-rank group of one send and one receive to itself, "
                   "medians of 5 rounds of 200, before the sweep)", probe_launch, probe_p2p);
    out_file out;
    if (rc == 0)
        rc = out_open(&out, o.out, o.fmt, MEAS_COLL, &g->meta, e);
    if (rc == 0) {
        long long wrong = 0;
        rc = coll_measure(g, &o, &out, &wrong, e);
        if (rc == 0)
            rc = out_commit(&out, e);
        else
            out_abort(&out);
        if (rc == 0 && wrong > 0)
            rc = err_set(e, ERR_CHECK, "coll: %lld wrong elements (see the #wrong column)", wrong);
    }
    gpu_close(g);
    return rc;
}
