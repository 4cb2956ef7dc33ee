/* Custom one-shot allreduce, in the two forms found in the field, as
 * hwcheck's kernels (kernels/allreduce.cu) run them.
 * Pull (vLLM/SGLang cross_device_reduce_1stage, p2pmark's
 * pcie_allreduce_kernel): kernel start, flag barrier, every rank loads the
 * whole vector from each of its n-1 peers (SM loads: non-posted reads,
 * interleaved across peers, so they advance together) and reduces as it
 * loads, then meets at an end barrier so no peer overwrites an input still
 * being read (barrier_at_end in vLLM, eager and in CUDA graphs alike).
 * Push: kernel start, a flag barrier (the peers are done reducing the
 * previous call out of their inboxes), every rank writes its vector into a
 * slot of each peer's inbox (posted writes, interleaved), a barrier behind
 * the data (its system fence waits for the writes, coll_fence_ack_ps: one
 * way back unless measured, before the flags go), each rank reduces its n
 * slots locally.
 * A kernel's fixed cost is kernel_base, fitted on eagerly launched copy
 * kernels; in a CUDA graph a node replaces the launch: kernel_base -
 * (launch - graph_node), the launch micro's difference on the same machine,
 * but never below a node's own cost. Back to back, eager or in a graph. 
 * Every thread loads its 16-byte packs of one iteration one after another
 * (the loop over ranks adds each load before it issues the next), so an
 * iteration costs the sum of its loads' latencies: fabric_cta_serial_Bps. */
#include <math.h>
#include <stdlib.h>

#include "models/coll/coll_impl.h"

sim_ps coll_local_reduce_ps(const topo *t, int m, double bytes)
{
    double bw = topo_params_get(t)->gpu_mem_Bps;
    return bw > 0 ? (sim_ps)((m + 1) * bytes / bw * 1e12) : 0;
}

/* Thread blocks of vLLM/SGLang's launch: one per 512 16-byte elements of
 * the message, at most 36 (facts.md 1.6). */
static int kernel_blocks(const coll_build *b)
{
    uint64_t packed = (b->r->bytes + 15) / 16, blocks = (packed + 511) / 512;
    return blocks < 1 ? 1 : blocks > 36 ? 36 : (int)blocks;
}

/* The ranks that run: all, or with a period the first ones, each standing
 * for its class (oneshot_period). */
static int ranks_run(const coll_build *b) { return b->period > 0 ? b->period : b->n; }

/* Sources in L2 [l2-sources]: a custom kernel whose buffers on a GPU fit
 * its L2 (l2_bytes) finds its own sources there, as a benchmark's loop over
 * the same buffers and a step that just wrote its input do, so its loads
 * from its own memory go at l2_load_speedup times their rate from HBM (one
 * H200, micro/local/: 40.31 against 20.12 GB/s a block). Its buffers as
 * kernels/allreduce.cu lays them out: input and output (S each), the pull
 * two-shot's scratch (S), the push kernels' inbox (a slot of S per rank).
 * The peers' loads keep their rate (the NVLink round trip is most of it).
 * 1 when it does not fit, or either figure is not known. */
static double l2_factor(const coll_build *b)
{
    const topo_params *p = topo_params_get(b->t);
    if (p->l2_load_speedup <= 1 || p->l2_bytes <= 0 ||
        (fabric_disabled(b->f) & FAB_NO_L2_SOURCES))
        return 1;
    int push = b->algo == ALGO_ONESHOT_PUSH || b->algo == ALGO_TWOSHOT_PUSH;
    double bufs = push ? 2 + b->n : b->algo == ALGO_TWOSHOT ? 3 : 2;
    return bufs * (double)b->r->bytes <= p->l2_bytes ? p->l2_load_speedup : 1;
}

/* A block's serial-load rate (fabric_cta_serial_Bps) with its local loads
 * from L2 when l2_factor says so. */
static double serial_Bps(const coll_build *b, int blocks, int local, int remote)
{
    double l2 = l2_factor(b);
    if (l2 <= 1 || local <= 0)
        return fabric_cta_serial_Bps(b->f, blocks, local, remote);
    double all = fabric_cta_serial_Bps(b->f, 1, local, remote);
    double rem = remote > 0 ? fabric_cta_serial_Bps(b->f, 1, 0, remote) : 0;
    if (all <= 0)
        return 0;
    /* per block: 1/all = local/cta_store + remote/cta_load; the local part / l2 */
    double t_rem = rem > 0 ? 1 / rem : 0, t_loc = 1 / all - t_rem;
    return blocks / (t_loc / l2 + t_rem);
}

/* One round of a custom kernel's stream: one 16-byte pack per thread of
 * each of its blocks (512 threads), the bytes every stream moves before
 * any thread issues its second load. */
static double round_bytes(const coll_build *b) { return kernel_blocks(b) * 512.0 * 16.0; }

/* A stream's bytes in whole rounds [whole-rounds]: a grid-stride loop
 * gives its slowest thread ceil(bytes / round) iterations, and a round of
 * serial loads is a latency (first_round_cap), so a partial last round
 * costs a whole one: bytes rounded up to rounds. */
static double whole_rounds(const coll_build *b, double bytes)
{
    double r = round_bytes(b);
    if (fabric_disabled(b->f) & FAB_NO_WHOLE_ROUNDS)
        return bytes;
    return ceil(bytes / r) * r;
}

/* The uncontended rate of one stream of rank 0's exchange group from its
 * first peer: the route's narrowest link in the data's direction, an NVLink
 * at its gradual saturation under the kernel's blocks (nvlink-sat), shared
 * by the group's n-1 streams; 0 when there is no route. */
static double stream_link_Bps(const coll_build *b, fab_op op)
{
    const topo *t = b->t;
    int n = b->n, me = b->node[0], peer = b->node[1 % n];
    int src = fab_is_read(op) ? peer : me, dst = fab_is_read(op) ? me : peer;
    const int *links;
    const int8_t *dirs;
    int hops = topo_route(t, src, dst, &links, &dirs);
    double n0 = topo_params_get(t)->nvlink_half_blocks, best = 0;
    int sat = n0 > 0 && !(fabric_disabled(b->f) & FAB_NO_NVLINK_SAT);
    for (int i = 0; i < hops; i++) {
        const topo_link *l = topo_link_at(t, links[i]);
        double bw = dirs[i] && l->bw_back_Bps > 0 ? l->bw_back_Bps : l->bw_Bps;
        if (l->kind == LINK_NVLINK && sat)
            bw *= kernel_blocks(b) / (kernel_blocks(b) + n0);
        if (i == 0 || bw < best)
            best = bw;
    }
    return hops > 0 && n > 1 ? best / (n - 1) : 0;
}

/* A pull's later rounds follow its first round's skew [round-skew]: every
 * thread issues its next load only when its last one has returned
 * (kernels/allreduce.cu: the loop over ranks adds each load before the
 * next; copy16 alike), and the link delivers the first round, all threads'
 * loads issued at once, in round / r_link, so the threads served last start
 * their second round that much later and carry it to the end. A stream
 * bound by its blocks' serial loads then takes round / r_link + rest /
 * R(B) past the route's latency, not rest / R(B); bound by the link it keeps
 * bytes / r_link (the skew hides in a busy link). Posted stores do not wait
 * (a push's thread issues its next load behind its store): 0 for writes. */
static sim_ps round_skew_ps(const coll_build *b, fab_op op)
{
    if (!fab_is_read(op) || (fabric_disabled(b->f) & FAB_NO_ROUND_SKEW))
        return 0;
    double r = stream_link_Bps(b, op);
    return r > 0 ? (sim_ps)llround(round_bytes(b) / r * 1e12) : 0;
}

/* An exchange stream's per-block cap cta_Bps over bytes, its first round
 * inside the route's latency: the link latencies and kernel_base are fitted
 * on copy kernels at sizes below one round (docs/model.md "Serial loads":
 * their data time there is nil, so the first round's loads sit in those
 * latencies), and one thread's round costs what all 512 threads' does
 * (h200-1x micro/kblocks/copy/: a whole round 0.16 us over one thread's,
 * the second round 0.25). So only the bytes past one round go at the
 * per-block rate: the cap that gives bytes at cap the time of
 * (bytes - round) at cta_Bps; 0 (none: the link alone) within one round. */
static double first_round_cap(const coll_build *b, fab_op op, double cta_Bps, double bytes)
{
    if (cta_Bps <= 0 || (fabric_disabled(b->f) & FAB_NO_FIRST_ROUND))
        return cta_Bps;
    double rest = whole_rounds(b, bytes) - round_bytes(b);
    if (rest <= 0)
        return 0;
    sim_ps skew = round_skew_ps(b, op);
    return bytes / (rest / cta_Bps + (double)skew * 1e-12);
}

/* A pull's first round of its own pack [own-round]: a pull iteration loads
 * the rank's own pack and each peer's in turn (kernels/allreduce.cu oneshot,
 * and twoshot's reduce-scatter: the loop over ranks adds each load before it
 * issues the next), but the latency its first round sits in is the read
 * copy kernel's (first_round_cap), whose threads load the peer's pack only.
 * So the first round's own load is paid besides: one round of a block's
 * local loads, 512 packs of 16 B at its local rate (serial_Bps: cta_store,
 * from L2 where the buffers fit), at every size (a load's latency: one
 * thread's round costs what all 512 threads' does). 0 when the first round
 * is charged at the per-block rate anyway (first-round off) or local loads
 * are free (serial-loads off, no per-block rate known). */
static sim_ps own_round_ps(const coll_build *b)
{
    if (fabric_disabled(b->f) & (FAB_NO_FIRST_ROUND | FAB_NO_OWN_ROUND))
        return 0;
    double bw = serial_Bps(b, 1, 1, 0);
    return bw > 0 ? (sim_ps)llround(512.0 * 16.0 / bw * 1e12) : 0;
}

/* Every rank moves bytes to (write) or from (read) all its peers as one
 * interleaved group, starting after after[r], each stream capped at cta_Bps
 * (0: none); out[r] is that group. */
static int exchange(coll_build *b, fab_op op, double bytes, double cta_Bps, const int *after,
                    int *out, const char *label)
{
    int *p = malloc(sizeof(int) * (size_t)b->n), rc = 0;
    if (!p)
        return err_set(b->e, ERR_SYSTEM, "out of memory"), -1;
    cta_Bps = first_round_cap(b, op, cta_Bps, bytes);
    for (int r = 0; r < ranks_run(b) && !rc; r++) {
        int k = 0;
        for (int q = 1; q < b->n; q++)
            p[k++] = b->node[(r + q) % b->n];
        /* Its blocks are what NVLink's gradual saturation counts. */
        out[r] = fabric_xfer_group_blocks(b->f, op, b->node[r], p, k, bytes, 1, cta_Bps,
                                          kernel_blocks(b), 0, r, label, b->e);
        coll_lane(b, out[r], op == FAB_WRITE ? CL_PUSH : CL_PULL, CL_ALL, 0);
        rc = out[r] < 0 || cb_dep(b, after[r], out[r]);
    }
    free(p);
    return rc ? -1 : 0;
}

/* The kernel's blocks share their stores among the n-1 streams. */
static double store_cap(const coll_build *b)
{
    return fabric_cta_cap_Bps(b->f, FAB_WRITE, kernel_blocks(b)) * l2_factor(b) / (b->n - 1);
}

/* A pass of the kernel's blocks over bytes whose every pack is loaded from
 * `local` buffers of the rank's own memory (a local copy or reduce), or the
 * HBM's (local + 1) x bytes if that is slower; 0 when neither is known. */
static sim_ps local_pass_ps(const coll_build *b, int local, double bytes)
{
    double bw = serial_Bps(b, kernel_blocks(b), local, 0);
    double full = bytes > round_bytes(b) ? whole_rounds(b, bytes) : bytes;
    double blk = bw > 0 ? full / bw * 1e12 : 0;
    sim_ps mem = coll_local_reduce_ps(b->t, local, bytes);
    return (sim_ps)blk > mem ? (sim_ps)blk : mem;
}

/* Rank r's delay of dur_ps after after[r] (dur 0: after[r] itself). */
static int after_delay(coll_build *b, int *v, sim_ps dur_ps, const char *label)
{
    for (int r = 0; r < ranks_run(b) && dur_ps > 0; r++) {
        int d = coll_lane(b, cb_delay(b, r, dur_ps, label), CL_KERNEL, CL_NONE, 0);
        if (d < 0 || cb_dep(b, v[r], d))
            return -1;
        v[r] = d;
    }
    return 0;
}

/* What B blocks' barrier costs beyond one block's: every block of the
 * kernel signals and waits on its own flags (kernels/allreduce.cu barrier:
 * block b meets block b of each peer only) and the kernel ends with its
 * slowest block. Each block's wait past the flag's arrival (the poll that
 * sees it, its fence draining) is taken as exponential of mean block_wait,
 * so the slowest of B waits block_wait x H_B (H_B = 1 + 1/2 + .. + 1/B,
 * the mean maximum of B such waits); one block's mean is inside the
 * measured latencies. Each barrier is charged as if the blocks met after
 * it (they do not: an upper bound on the sum over barriers). */
sim_ps coll_block_wait_ps(sim_ps block_wait_ps, int blocks)
{
    double h = 0;
    for (int i = 2; i <= blocks; i++)
        h += 1.0 / i;
    return (sim_ps)llround((double)block_wait_ps * h);
}

/* A flag barrier as the kernels signal it: each rank's system-scope fence
 * (fence_sys_ps, hwcheck launch's fence-sys: what the fence adds to the
 * release store the link latency was measured with) and its blocks' wait
 * (coll_block_wait_ps), then its flags. */
static int fenced_barrier(coll_build *b, int *ready, int *done)
{
    const topo_params *p = topo_params_get(b->t);
    sim_ps wait = coll_block_wait_ps(p->block_wait_ps, kernel_blocks(b));
    if (after_delay(b, ready, p->fence_sys_ps + wait, "fence"))
        return -1;
    return cb_barrier(b, ready, done);
}

/* What a push's barrier fence waits after its writes into the peers, for
 * them: fence_ack_ps where it is measured (hwcheck launch --post --peer: the
 * fence after a block's stores into a peer less the same after stores into
 * its own memory), else one write latency back, the acknowledgement's trip. */
sim_ps coll_fence_ack_ps(const topo_params *p, sim_ps write_lat_ps)
{
    return p->fence_ack_ps > 0 ? p->fence_ack_ps : write_lat_ps;
}

/* The end of a phase: a flag barrier, then for push kernels a local reduce
 * of m buffers of bytes. After writes (push) the barrier's system fence
 * first waits for them (coll_fence_ack_ps), then costs its own. */
static int settle(coll_build *b, int push, int *xs, int *out, int m, double bytes)
{
    if (push && after_delay(b, xs,
                            coll_fence_ack_ps(topo_params_get(b->t),
                                              fabric_lat_ps(b->f, FAB_WRITE, b->node[1 % b->n],
                                                            b->node[0])),
                            "fence"))
        return -1;
    if (fenced_barrier(b, xs, out))
        return -1;
    return push && m ? after_delay(b, out, local_pass_ps(b, m, bytes), "reduce") : 0;
}

static int alloc_ranks(coll_build *b, int **v, int k)
{
    for (int i = 0; i < k; i++)
        if (!(v[i] = malloc(sizeof(int) * (size_t)b->n)))
            return err_set(b->e, ERR_SYSTEM, "out of memory");
    return 0;
}

/* Kernel start on every rank, then the start barrier. */
static int begin(coll_build *b, int *start, int *ready)
{
    const topo_params *p = topo_params_get(b->t);
    sim_ps base = p->kernel_base_ps, saved = p->launch_ps - p->graph_node_ps;
    if (b->r->graph && saved > 0)
        base = base - saved > p->graph_node_ps ? base - saved : p->graph_node_ps;
    for (int r = 0; r < ranks_run(b); r++)
        if (coll_lane(b, start[r] = cb_delay(b, r, base, "kernel"), CL_KERNEL, CL_NONE, 0) < 0)
            return -1;
    return fenced_barrier(b, start, ready);
}

/* The custom kernels' phases as the run reaches them (sched_generate): each
 * call adds one phase, whose tasks all wait for the phase before, so every
 * task below the horizon (the phases before) has all its dependents and the
 * run is the whole graph's, event for event; a phase's groups of n streams
 * each are dropped once they have ended, so memory follows one phase (a
 * 4,096-GPU one-shot's barriers and exchange each hold n groups of n links). */
typedef struct phased {
    coll_build *b;
    int push, phase;
    int *v[6];
    double S, part, cta, rs, ag, fused;
    sim_ps own;
    int serial;
} phased;

static void phased_free(void *p)
{
    phased *g = p;
    if (!g)
        return;
    for (int i = 0; i < 6; i++)
        free(g->v[i]);
    free(g);
}

static phased *phased_new(coll_build *b)
{
    snprintf(b->tl_units, sizeof b->tl_units, "%d blocks", kernel_blocks(b));
    phased *g = calloc(1, sizeof *g);
    if (!g || alloc_ranks(b, g->v, 6)) {
        phased_free(g);
        err_set(b->e, ERR_SYSTEM, "out of memory");
        return NULL;
    }
    g->b = b;
    return g;
}

/* Phase k of the one-shot: kernel start and the start barrier; the exchange;
 * the end (pull reduces as it loads and meets at the end barrier; push
 * reduces its n slots after the barrier behind its writes). */
static int oneshot_next(void *ctx, sched *sc)
{
    phased *g = ctx;
    coll_build *b = g->b;
    int first = sched_ntasks(sc), k = g->phase++, rc;
    if (k == 0) {
        rc = begin(b, g->v[0], g->v[1]);
        if (!rc && !g->push)
            rc = after_delay(b, g->v[1], own_round_ps(b), "own-round");
    } else if (k == 1)
        rc = exchange(b, g->push ? FAB_WRITE : FAB_READ, g->S, g->cta, g->v[1], g->v[2],
                      g->push ? "push" : "pull");
    else
        rc = settle(b, g->push, g->v[2], g->v[3], b->n, g->S);
    if (rc)
        return -1;
    sched_horizon(sc, first);
    return k < 2 ? 1 : 0;
}

/* The legs of rank r's exchange (its group: to or from each peer r + q,
 * q = 1..n-1, in the order exchange() gives them) for fabric_rotation_quotient_fn. */
typedef struct xlegs {
    const coll_build *b;
    fab_op op;
} xlegs;

static int exchange_legs(void *ctx, int r, fab_op *op, int *a, int *b, int cap, int *pass_gpu)
{
    const xlegs *x = ctx;
    int n = x->b->n, rd = fab_is_read(x->op);
    if (n - 1 > cap)
        return n - 1;
    const int *node = x->b->node;
    for (int q = 1; q < n; q++) {
        int peer = node[(r + q) % n];
        op[q - 1] = x->op, a[q - 1] = rd ? peer : node[r], b[q - 1] = rd ? node[r] : peer;
    }
    *pass_gpu = -1;
    return n - 1;
}

/* The smallest p such that the custom kernel's ranks repeat every p (its
 * exchange rank r + p's image of rank r's, fabric_rotation_quotient_fn, and so
 * its flags, writes to every peer: for a pull, whose exchange reads, their
 * latencies are compared), so that ranks 0..p-1 run alone on the quotient
 * (docs/model.md "Bundled steps"); 0 when not bundled. Every phase is a
 * per-rank delay, a flag barrier or the exchange, so the ring's proof holds. */
static int oneshot_period(coll_build *b, fab_op op)
{
    int n = b->n;
    /* A pull's check costs three routes per pair (its flags, its reads
     * from every source, their images), which beyond about 128 ranks is
     * more than running every rank's groups (nvswitch-256: 17.4 against 16.2
     * ms of CPU; 64: 2.2 against 5.1): the same result either way. */
    if (!b->bundle || n < 2 || (op == FAB_READ && n > 128))
        return 0;
    xlegs x = {b, op};
    for (int p = 1; p <= n / 2; p++) {
        if (n % p)
            continue;
        /* A pull's flags: source by source, which also leaves each source's
         * routes to be walked, not searched anew, when the exchange's reads
         * (from every peer) ask for them (models/topo/route.c). */
        int same = 1;
        for (int q = 0; op == FAB_READ && same && q < n; q++)
            for (int r = 0; same && r < n; r++)
                same = r == q || fabric_lat_ps(b->f, FAB_WRITE, b->node[q], b->node[r]) ==
                                     fabric_lat_ps(b->f, FAB_WRITE, b->node[(q + p) % n],
                                                   b->node[(r + p) % n]);
        int q = same ? fabric_rotation_quotient_fn(b->f, exchange_legs, &x, n, p) : 0;
        if (q != 0)
            return q > 0 ? p : 0;  /* (q < 0: the routes do not turn; O(n^2) per try) */
    }
    return 0;
}

/* Every rank's routes reach every peer (flags, writes or loads, the
 * period's check): more than two targets per source, so each source's
 * whole route tree at once (topo_route_expect_many; the same routes). */
static void expect_routes(const coll_build *b)
{
    if (b->n > 3)
        for (int r = 0; r < b->n; r++)
            fabric_expect_many(b->f, b->node[r]);
}

int coll_build_oneshot(coll_build *b)
{
    int n = b->n;
    phased *g = phased_new(b);
    if (!g)
        return -1;
    expect_routes(b);
    g->push = b->algo == ALGO_ONESHOT_PUSH;
    b->period = oneshot_period(b, g->push ? FAB_WRITE : FAB_READ);
    g->S = (double)b->r->bytes;
    /* Pull: an iteration loads the rank's own pack and each peer's. */
    g->cta = g->push ? store_cap(b) : serial_Bps(b, kernel_blocks(b), 1, n - 1);
    return cb_generate(b, oneshot_next, g, phased_free);
}

/* Two-shot: a reduce-scatter then an all-gather, each rank owning 1/n.
 * Pull (cross_device_reduce_2stage): barrier; each rank loads its slice from
 * every peer and reduces it into its scratch buffer; barrier (with
 * release/acquire fences); each rank copies its own scratch slice, then
 * loads every other slice from its owner's scratch, and is done (no
 * barrier after the all-gather). Push:
 * barrier; each rank copies slice r into its own inbox, then writes slice j
 * to rank j; barrier; each rank reduces its n arrivals and writes the sum to
 * every peer in the same loop (an iteration: n loads, then n stores); done
 * when all slices have arrived. Loops over ranks run one after another.
 * Phases as the one-shot's: start (and push's own slice), reduce-scatter,
 * its end (and pull's own slice), all-gather, and for push the wait for
 * its slices. */
static int twoshot_next(void *ctx, sched *sc)
{
    phased *g = ctx;
    coll_build *b = g->b;
    int first = sched_ntasks(sc), k = g->phase++, rc = 0, push = g->push, n = b->n;
    fab_op op = push ? FAB_WRITE : FAB_READ;
    if (k == 0) {
        rc = begin(b, g->v[0], g->v[1]);
        if (!rc && push)
            rc = after_delay(b, g->v[1], g->own, "own-slice");
        if (!rc && !push) /* the reduce-scatter loads the own pack with the peers' */
            rc = after_delay(b, g->v[1], own_round_ps(b), "own-round");
    } else if (k == 1) {
        rc = exchange(b, op, g->part, g->rs, g->v[1], g->v[2], push ? "rs-push" : "rs-pull");
    } else if (k == 2) {
        rc = settle(b, push, g->v[2], g->v[3], push && g->fused > 0 ? 0 : n, g->part);
        if (!rc && !push)
            rc = after_delay(b, g->v[3], g->own, "own-slice");
    } else if (k == 3) {
        rc = exchange(b, op, g->part, g->ag, g->v[3], g->v[4], push ? "ag-push" : "ag-pull");
    } else {
        rc = settle(b, push, g->v[4], g->v[5], 0, 0);
    }
    if (rc)
        return -1;
    sched_horizon(sc, first);
    return k < 3 || (k == 3 && push) ? 1 : 0;
}

int coll_build_twoshot(coll_build *b)
{
    phased *g = phased_new(b);
    if (!g)
        return -1;
    int push = g->push = b->algo == ALGO_TWOSHOT_PUSH, n = b->n;
    expect_routes(b);
    b->period = oneshot_period(b, push ? FAB_WRITE : FAB_READ);
    g->part = (double)b->r->bytes / n;
    int blocks = kernel_blocks(b);
    g->rs = push ? store_cap(b) : serial_Bps(b, blocks, 1, n - 1);
    g->ag = push ? store_cap(b) : fabric_cta_serial_Bps(b->f, blocks, 0, n - 1);
    /* The own slice's local copy, before the peers' (none when local loads
     * are free: serial-loads off, or no per-block rate known). */
    if (fabric_cta_serial_Bps(b->f, blocks, 1, 0) > 0) {
        g->serial = 1;
        g->own = local_pass_ps(b, 1, g->part);
    }
    /* Push, fused: the all-gather's streams go at the reduce's pace. */
    g->fused = g->serial ? serial_Bps(b, blocks, n, 0) : 0;
    if (push && g->fused > 0 && (g->ag <= 0 || g->fused < g->ag))
        g->ag = g->fused;
    return cb_generate(b, twoshot_next, g, phased_free);
}

/* All-to-all as one push kernel, the form of DeepEP's dispatch and combine
 * (deepseek-ai/DeepEP: a rank stores each peer's share of its tokens
 * straight into that peer's receive buffer, then signals): kernel start, a
 * flag barrier (the receive buffers are free), every rank writes bytes/n to
 * each of its n-1 peers as one interleaved group (posted SM stores), then a
 * barrier behind the data; no NCCL channels, protocol lines or steps. */
int coll_build_alltoall_push(coll_build *b)
{
    double part = (double)b->r->bytes / b->n;
    snprintf(b->tl_units, sizeof b->tl_units, "%d blocks", kernel_blocks(b));
    int *v[4] = {0};
    int rc = alloc_ranks(b, v, 4);
    if (!rc)
        rc = begin(b, v[0], v[1]);
    if (!rc)
        rc = exchange(b, FAB_WRITE, part, store_cap(b), v[1], v[2], "a2a-push");
    if (!rc)
        rc = settle(b, 1, v[2], v[3], 0, 0);
    for (int i = 0; i < 4; i++)
        free(v[i]);
    return rc ? -1 : 0;
}
