/* NCCL's ring family: allreduce (2(n-1) steps), reduce-scatter and
 * all-gather (n-1 steps), and broadcast (a pipelined chain from the root).
 * Each channel's data is cut into loops of n chunks of at most one
 * protocol step's payload; in every step each rank sends one chunk to the
 * next rank, and a send depends on the chunk received in the step before
 * (data dependence) and on the same rank's send of the previous loop
 * (FIFO order). The C channels are identical, so they run as one weighted
 * flow per hop (weight C on every link): the same max-min result as C
 * separate flows, at 1/C of the cost. */
#include <math.h>
#include <stdlib.h>

#include "models/coll/coll_impl.h"
#include "models/nccl/nccl_tune.h"

/* The payload of one pipelined transfer per channel (src/enqueue.cc
 * calcCollChunking, src/device/prims_simple.h genericOp): Simple's FIFO step
 * is NCCL_BUFFSIZE / NCCL_STEPS (512 KiB); a ring step moves a chunk of up
 * to 4 FIFO steps (ALLREDUCE_CHUNKSTEPS), at most a loop's share
 * ceil(bytes_c / n), sent as 2 slices (SlicePerChunk) of at least 1/32 of
 * 2 FIFO steps; broadcast and the tree move one FIFO step per chunk, one
 * slice. LL: half an LL FIFO step of data (32 KiB); LL128: a step's lines
 * less their flag words (15 of 16: 576,000 bytes). */
static double unit_bytes_of(const coll_build *b, double bytes_c, double *chunk_out)
{
    const proto_info *pi = nccl_proto(b->proto);
    *chunk_out = pi->unit_bytes;
    if (b->proto != PROTO_SIMPLE)
        return pi->unit_bytes;
    double buff = b->r->env.buffsize_bytes > 0 ? (double)b->r->env.buffsize_bytes : 4194304.0;
    double step = buff / 8.0;
    int ring = b->algo == ALGO_RING && b->r->kind != COLL_BROADCAST;
    *chunk_out = step;
    if (!ring)
        return step;
    double chunk = fmin(4 * step, ceil(bytes_c / b->n / 16.0) * 16.0);
    double slice = fmax(ceil(chunk / 2 / 16.0) * 16.0, 2 * step / 32);
    *chunk_out = chunk;
    return fmin(slice, 2 * step);
}

static double unit_bytes(const coll_build *b, double bytes_c)
{
    double chunk;
    return unit_bytes_of(b, bytes_c, &chunk);
}

static int start_tasks(coll_build *b, int *start, int n)
{
    for (int r = 0; r < n; r++)
        if (coll_lane(b, start[r] = cb_delay(b, r, nccl_start_ps(b->t, b->proto, ALGO_RING),
                                             "kernel"),
                      CL_KERNEL, CL_NONE, 0) < 0)
            return -1;
    return 0;
}

static int chain(coll_build *b, const int *start, double bytes_c, double weight)
{
    /* Broadcast: root -> root+1 -> ... -> root+n-1, pipelined in units. */
    int n = b->n, root = b->r->root;
    double unit = unit_bytes(b, bytes_c);
    long nu = (long)ceil(bytes_c / unit);
    int *prev = malloc(sizeof(int) * (size_t)n), *cur = malloc(sizeof(int) * (size_t)n);
    if (!prev || !cur) {
        free(prev);
        free(cur);
        return err_set(b->e, ERR_SYSTEM, "out of memory"), -1;
    }
    int rc = 0;
    for (long u = 0; u < nu && !rc; u++) {
        double sz = fmin(unit, bytes_c - (double)u * unit);
        for (int h = 0; h < n - 1 && !rc; h++) {
            int from = (root + h) % n, to = (root + h + 1) % n;
            /* (the root sends its input; the others recvCopySend: load what
             * they received, store it into their buffer and onward) */
            cur[h] = coll_lane(b, cb_nccl_hop_lat(b, from, to, sz, weight, 1, h > 0, h > 0, "bcast"),
                               CL_SEND, to, (uint32_t)(u + 1));
            rc = cur[h] < 0 || cb_dep(b, h ? cur[h - 1] : start[from], cur[h]) ||
                 (u ? cb_dep(b, prev[h], cur[h]) : 0) || cb_dep(b, start[to], cur[h]);
        }
        int *t = prev;
        prev = cur;
        cur = t;
    }
    free(prev);
    free(cur);
    return rc ? -1 : 0;
}

/* The ring's steps as the run reaches them, one NCCL loop per call. Rank
 * r's thread block runs its calls in program order (src/device/all_reduce.h
 * runRing: a loop's send, its 2(n-1) - 1 receive-and-sends and its last
 * receive, then the next loop; each call a primitive that ends in a block
 * barrier: prims_ll.h, prims_ll128.h GenericOp; Simple's genericOp moves a
 * chunk as its slices one after another). A transfer of the model is one
 * slice (Simple: spc = 2 slices per chunk, or 1) or one chunk (LL, LL128):
 * transfer (l, s) of rank r, l = L spc + k the k-th slice of NCCL loop L,
 * waits for the same slice of step s-1 upstream (the data) and for the
 * rank's previous transfer: slice k-1 of step s, else the last slice of step
 * s-1, else (s = 0) the previous loop's last send and last receive, whose
 * copy out of the FIFO the block does itself (final_pass). Each call adds
 * NCCL loop L, after which every task of the loops before has its
 * dependents. */
typedef struct ring_gen {
    coll_build *b;
    int n, steps, spc;
    long loops, nloops, L;
    double unit, bytes_c, weight;
    const char *label;
    int *start;  /* n kernel tasks */
    int *rows;   /* steps s-1 and s of the loop being added: [((s % 2) * spc + k) * n + r] */
    int *line;   /* the same for the rows' aux tasks (first line, or delivery) */
    int *last;   /* per rank, its previous loop's last receive (final_pass) */
    int *lsend;  /* per rank, its previous loop's last send */
    int *fin;    /* per rank, the last receive of the loop being added */
    int period;  /* > 0: only ranks 0..period-1 run, each standing for its
                  * class r mod period (ring_period) */
    int cut;     /* LL: steps forward lines as they arrive */
} ring_gen;

static void ring_gen_free(void *p)
{
    ring_gen *g = p;
    if (!g)
        return;
    free(g->start);
    free(g->rows);
    free(g->line);
    free(g->last);
    free(g->lsend);
    free(g->fin);
    free(g);
}

/* A slice's last receive (NCCL's directRecv / recv after the last send): a
 * step of its own (its wait, barrier and post: nccl_step) and the block's
 * copy of the slice out of the FIFO into the user buffer, as fast as the
 * block's loads of it allow (nccl_recv_copy_wire; nothing for Simple into
 * registered buffers, which the peer wrote directly). It follows the data
 * (after) and the rank's previous task (prev, or -1); its lane is the
 * receive from `from`. Returns the task. */
static int final_pass(coll_build *b, double chunk, int after, int prev, int rank, int from,
                      uint32_t note)
{
    /* (the transport of the hop into rank: with a period, `from` stands
     * for its class, the real upstream is rank - 1) */
    int id = cb_ring_shm_recv(b, rank, (rank + b->n - 1) % b->n, chunk,
                              b->channels > 0 ? b->channels : 1, "final-recv");
    if (id == -2) {
        double w = nccl_recv_copy_wire(b);
        id = fabric_block_pass(b->f, &b->node[rank], 1, w > 0 ? chunk : 0, w > 0 ? w : 1,
                               w > 0 ? 1 : 0, nccl_step_ps(b->t, b->proto), rank, "final-recv",
                               b->e);
    }
    coll_lane(b, id, CL_RECV, from, note);
    return id < 0 || cb_dep(b, after, id) || cb_dep(b, prev, id) ? -1 : id;
}

/* What rank r's block does in step s of a loop (src/device/all_reduce.h,
 * reduce_scatter.h, all_gather.h runRing): whether it loads what it
 * received (every step but the first) and how many bytes it stores into its
 * own buffer per payload byte: allreduce's recvReduceCopySend (step n-1) and
 * recvCopySend (the all-gather half) store the result locally too, unless
 * Simple's peer wrote it there (registered buffers: directRecv), as does
 * all-gather's copySend of its own input (out of place, nccl-tests). */
static void ring_prim(const coll_build *b, int s, int n, int *recv, double *local_B)
{
    int direct = b->proto == PROTO_SIMPLE && b->r->registered;
    coll_kind k = b->r->kind;
    *recv = s > 0;
    *local_B = k == COLL_ALLREDUCE   ? (s == n - 1 || (s >= n && !direct))
             : k == COLL_ALLGATHER ? (s == 0 || !direct)
                                   : 0;
}

static int ring_next(void *ctx, sched *sc)
{
    ring_gen *g = ctx;
    coll_build *b = g->b;
    int n = g->n, spc = g->spc;
    /* With a period p, rank r < p stands for its class r mod p: its
     * upstream is rank r - 1 mod p, and the receiver of its hop r -> r+1
     * is, for the block its final pass takes, rank r + 1 mod p. */
    int p = g->period ? g->period : n;
    if (g->L == 0 && start_tasks(b, g->start, p))
        return -1;
    long L = g->L++;
    int first = sched_ntasks(sc);
    int nk = (int)(g->loops - L * spc < spc ? g->loops - L * spc : spc);
#define ROW(a, s, k, r) (a)[((size_t)((s) % 2) * (size_t)spc + (size_t)(k)) * (size_t)n + (size_t)(r)]
    for (int s = 0; s < g->steps; s++) {
        int last = s == g->steps - 1, with_lat = g->cut && last;
        for (int k = 0; k < nk; k++) {
            long l = L * spc + k;
            double left = g->bytes_c - (double)l * n * g->unit;
            double chunk = fmin(g->unit, left / n);
            /* Every transfer is a send (it ends when its last byte has left
             * and the sender's step cost is paid: the rank's next transfer
             * may start) and an `aux` task. LL and LL128 (g->cut) forward
             * lines as they arrive: a rank's step waits for its own previous
             * step and for the first line of the upstream step (aux: that
             * step's start plus one hop's latency), and only a loop's last
             * step carries its latency. Simple's receiver waits for the
             * whole slice and its flag (aux: the send's end plus the route's
             * latency and the flag's). */
            for (int r = 0; r < p; r++) {
                int to = (r + 1) % n, up = (r + p - 1) % p;
                uint32_t note = coll_lane_step(b, l, s);
                int recv;
                double local_B;
                ring_prim(b, s, n, &recv, &local_B);
                int id = coll_lane(b, cb_ring_step(b, r, to, chunk, g->weight, with_lat, recv,
                                                   local_B, g->label),
                                   CL_SEND, to, note);
                if (id < 0)
                    return -1;
                sim_ps aux_ps = g->cut ? cb_ring_deliver_ps(b, r, to, 1, recv)
                                : with_lat ? 0 : cb_ring_deliver_ps(b, r, to, 0, recv);
                /* What the receiver waits for: drawn on its track (the track
                 * only places a task on a timeline). */
                int aux = coll_lane(b, cb_delay(b, (r + 1) % p, aux_ps, g->cut ? "first-line" : "deliver"),
                                    CL_RECV, r, note);
                if (aux < 0 || (!g->cut && cb_dep(b, id, aux)))
                    return -1;
                /* The hop (and, cut, its first line) after: the data
                 * upstream, the rank's previous transfer (program order),
                 * and at the very start both kernels. */
                int data = s ? ROW(g->line, s - 1, k, up) : -1;
                int own = k ? ROW(g->rows, s, k - 1, r) : s ? ROW(g->rows, s - 1, nk - 1, r)
                                                        : L ? g->lsend[r] : -1;
                int prog = !k && !s && L ? g->last[r] : -1;
                for (int x2 = 0; x2 < (g->cut ? 2 : 1); x2++) {
                    int x = x2 ? aux : id;
                    if (cb_dep(b, data, x) || cb_dep(b, own, x) || cb_dep(b, prog, x))
                        return -1;
                    if (s == 0 && L == 0 && k == 0 &&
                        (cb_dep(b, g->start[r], x) ||
                         ((r + 1) % p != r && cb_dep(b, g->start[(r + 1) % p], x))))
                        return -1;
                }
                ROW(g->rows, s, k, r) = id;
                ROW(g->line, s, k, r) = aux;
            }
        }
    }
    /* The last receives, slice by slice, after the rank's last send. */
    int S = g->steps - 1;
    for (int k = 0; k < nk; k++) {
        long l = L * spc + k;
        double chunk = fmin(g->unit, (g->bytes_c - (double)l * n * g->unit) / n);
        for (int r = 0; r < p; r++) {
            int q = (r + 1) % p;
            int prev = k ? g->fin[q] : ROW(g->rows, S, nk - 1, q);
            int id = final_pass(b, chunk, g->cut ? ROW(g->rows, S, k, r) : ROW(g->line, S, k, r),
                                prev, q, r, coll_lane_step(b, l, S));
            if (id < 0)
                return -1;
            g->fin[q] = id;
        }
    }
    for (int r = 0; r < p; r++) {
        g->last[r] = g->fin[r];
        g->lsend[r] = ROW(g->rows, S, nk - 1, r);
    }
#undef ROW
    sched_horizon(sc, first);
    return g->L < g->nloops ? 1 : 0;
}

/* Can the ring run as its first p ranks alone with the same result? With
 * period p (p divides n, p < n) the ranks fall into classes r mod p, and
 * rank r < p stands for its class. That holds when the ring is symmetric
 * under the rotation r -> r + p: every hop r -> r+1 is a P2P write, or an SHM
 * hop (a write into host memory near the receiver, the receiver's read from
 * it), and hop r + p is hop r's image under a permutation of the engine links
 * (fabric_rotation_quotient: leg by leg alike, every orbit of n/p links, a
 * link with a capacity rule crossed once per orbit). The run then crosses
 * each link's orbit in place of the link: the full run's rates restricted to
 * ranks 0..p-1, whose tasks and dependencies stand for their classes' (the
 * proof: docs/model.md "Bundled steps"). Returns the smallest such p, or 0.
 * p = 1 is the NVLink crossbar's case; a PCIe tree repeats every socket. */
/* The legs of hop r -> r+1: one P2P write, or SHM's write into host memory
 * near the receiver and the receiver's read from it (SM stores and loads;
 * with copy engines none: 0). Returns the count. */
static int hop_legs(coll_build *b, int r, fab_op *op, int *from, int *to)
{
    int n = b->n, src = b->node[r], dst = b->node[(r + 1) % n];
    if (cb_uses_p2p(b, r, (r + 1) % n)) {
        op[0] = FAB_WRITE, from[0] = src, to[0] = dst;
        return 1;
    }
    int mem = fabric_hostmem_of(b->f, dst);
    if (mem < 0 || (b->r->env.shm_memcpy && b->proto == PROTO_SIMPLE))
        return 0;
    op[0] = FAB_WRITE, from[0] = src, to[0] = mem;
    op[1] = FAB_READ, from[1] = mem, to[1] = dst;
    return 2;
}

static int ring_period(coll_build *b)
{
    int n = b->n, found = 0;
    fabric_hop *h = n >= 2 ? malloc(sizeof *h * (size_t)n) : NULL;
    for (int r = 0; h && r < n; r++) {
        h[r].nlegs = hop_legs(b, r, h[r].op, h[r].a, h[r].b);
        h[r].pass_gpu = b->node[(r + 1) % n];
        if (!h[r].nlegs) {
            free(h);
            return 0;
        }
    }
    for (int p = 1; h && !found && p <= n / 2; p++)
        if (n % p == 0 && fabric_rotation_quotient(b->f, h, n, p))
            found = p;
    free(h);
    return found;
}

int coll_build_ring(coll_build *b)
{
    int n = b->n;
    coll_kind k = b->r->kind;
    double weight = b->channels > 0 ? b->channels : 1;
    double bytes_c = (double)b->r->bytes / weight;
    if (k == COLL_BROADCAST) {
        int *start = malloc(sizeof(int) * (size_t)n);
        if (!start)
            return err_set(b->e, ERR_SYSTEM, "out of memory"), -1;
        int rc = start_tasks(b, start, n) || chain(b, start, bytes_c, weight);
        free(start);
        return rc ? -1 : 0;
    }
    /* nccl-tests sizes: allgather counts the output (n chunks of S/n);
     * reduce-scatter the input; allreduce S in and out. */
    ring_gen *g = calloc(1, sizeof *g);
    if (!g)
        return err_set(b->e, ERR_SYSTEM, "out of memory"), -1;
    g->b = b;
    g->n = n;
    g->steps = k == COLL_ALLREDUCE ? 2 * (n - 1) : n - 1;
    double chunk;
    g->unit = unit_bytes_of(b, bytes_c, &chunk);
    g->bytes_c = bytes_c;
    g->weight = weight;
    g->loops = (long)ceil(bytes_c / (n * g->unit));
    if (g->loops < 1)
        g->loops = 1;
    /* Slices per chunk: Simple's ring moves a chunk as SlicePerChunk = 2
     * slices when the chunk is larger than one (prims_simple.h). */
    g->spc = chunk > g->unit ? 2 : 1;
    g->nloops = (g->loops + g->spc - 1) / g->spc;
    g->label = k == COLL_ALLREDUCE ? "ring" : k == COLL_ALLGATHER ? "allgather" : "reducescatter";
    b->tl_steps = g->steps;
    g->start = malloc(sizeof(int) * (size_t)n);
    g->rows = malloc(sizeof(int) * 4 * (size_t)n);
    g->line = malloc(sizeof(int) * 4 * (size_t)n);
    g->last = malloc(sizeof(int) * (size_t)n);
    g->lsend = malloc(sizeof(int) * (size_t)n);
    g->fin = malloc(sizeof(int) * (size_t)n);
    if (!g->start || !g->rows || !g->line || !g->last || !g->lsend || !g->fin) {
        ring_gen_free(g);
        return err_set(b->e, ERR_SYSTEM, "out of memory"), -1;
    }
    g->period = b->bundle ? ring_period(b) : 0;
    g->cut = b->proto == PROTO_LL || b->proto == PROTO_LL128;
    return cb_generate(b, ring_next, g, ring_gen_free);
}

/* NCCL's intra-node tree is a chain: reduce from the last rank up to rank 0,
 * then broadcast back down, pipelined in protocol units; every hop carries
 * whole chunks (not 1/n of them). */
int coll_build_tree(coll_build *b)
{
    int n = b->n;
    double weight = b->channels > 0 ? b->channels : 1;
    double bytes_c = (double)b->r->bytes / weight;
    double unit = unit_bytes(b, bytes_c);
    long nu = (long)ceil(bytes_c / unit);
    if (nu < 1)
        nu = 1;
    int *start = malloc(sizeof(int) * (size_t)n);
    int *up = malloc(sizeof(int) * (size_t)n), *down = malloc(sizeof(int) * (size_t)n);
    int *pup = malloc(sizeof(int) * (size_t)n), *pdown = malloc(sizeof(int) * (size_t)n);
    int rc = !start || !up || !down || !pup || !pdown
                 ? err_set(b->e, ERR_SYSTEM, "out of memory") : 0;
    for (int r = 0; r < n && !rc; r++)
        rc = coll_lane(b, start[r] = cb_delay(b, r, nccl_start_ps(b->t, b->proto, ALGO_TREE),
                                              "kernel"),
                       CL_KERNEL, CL_NONE, 0) < 0;
    /* Each hop is a send (done when its last byte has left: the sender's
     * next chunk may follow, FIFO order) and its delivery (route latency and
     * Simple's flag), which the next hop of the same chunk waits for. */
    int upd = -1, downd = -1, direct = b->proto == PROTO_SIMPLE && b->r->registered;
    for (long u = 0; u < nu && !rc; u++) {
        double sz = fmin(unit, bytes_c - (double)u * unit);
        for (int h = 0; h < n - 1 && !rc; h++) {
            int from = n - 1 - h, to = n - 2 - h;
            uint32_t note = (uint32_t)(u + 1);
            up[h] = coll_lane(b, cb_nccl_hop_lat(b, from, to, sz, weight, 0, h > 0, 0, "tree-up"),
                              CL_SEND,
                              to, note);
            rc = up[h] < 0 || cb_dep(b, h ? upd : start[from], up[h]) ||
                 cb_dep(b, start[to], up[h]) || (u ? cb_dep(b, pup[h], up[h]) : 0);
            upd = rc ? -1 : coll_lane(b, cb_delay(b, to, cb_hop_deliver_ps(b, from, to), "deliver"),
                                      CL_RECV, from, note);
            rc = rc || upd < 0 || cb_dep(b, up[h], upd);
        }
        for (int h = 0; h < n - 1 && !rc; h++) {
            uint32_t note = (uint32_t)(u + 1);
            /* (the root sends its result; the others recvCopySend, storing
             * it into their buffer unless Simple's peer wrote it there) */
            down[h] = coll_lane(b, cb_nccl_hop_lat(b, h, h + 1, sz, weight, 0, h > 0,
                                                   h > 0 && !direct, "tree-down"),
                                CL_SEND, h + 1, note);
            rc = down[h] < 0 || cb_dep(b, h ? downd : upd, down[h]) ||
                 (u ? cb_dep(b, pdown[h], down[h]) : 0);
            downd = rc ? -1 : coll_lane(b, cb_delay(b, h + 1, cb_hop_deliver_ps(b, h, h + 1),
                                                    "deliver"),
                                        CL_RECV, h, note);
            rc = rc || downd < 0 || cb_dep(b, down[h], downd);
        }
        int *t = pup;
        pup = up;
        up = t;
        t = pdown;
        pdown = down;
        down = t;
    }
    free(start);
    free(up);
    free(down);
    free(pup);
    free(pdown);
    return rc ? -1 : 0;
}

/* All-to-all as NCCL runs it: grouped send/recv, every rank sending S/n to
 * every peer at once, each pair its own connection (independent flows),
 * each send split over its channels (thread blocks, b->channels); the
 * communicator's p2p channels are shared when the sends' parts outnumber
 * them (a block runs several sends' parts at once: enqueue.cc), down to one
 * block's worth per send (sharing below that is not modelled). */
int coll_build_alltoall(coll_build *b)
{
    int n = b->n;
    double part = (double)b->r->bytes / n, ch = b->channels > 0 ? b->channels : 1;
    if (b->tune && n > 1 && ch * (n - 1) > b->tune->p2p_nchannels)
        ch = fmax(1, (double)b->tune->p2p_nchannels / (n - 1));
    int *start = malloc(sizeof(int) * (size_t)n);
    int rc = start ? 0 : err_set(b->e, ERR_SYSTEM, "out of memory");
    for (int r = 0; r < n && !rc; r++)
        rc = coll_lane(b, start[r] = cb_delay(b, r, nccl_start_ps(b->t, b->proto, ALGO_RING),
                                              "kernel"),
                       CL_KERNEL, CL_NONE, 0) < 0;
    snprintf(b->tl_units, sizeof b->tl_units, "%.3g ch", ch);
    for (int r = 0; r < n && !rc; r++)
        for (int q = 0; q < n && !rc; q++) {
            if (q == r)
                continue;
            int id = coll_lane(b, cb_nccl_hop(b, r, q, part / ch, ch, "alltoall"), CL_SEND, q, 0);
            rc = id < 0 || cb_dep(b, start[r], id) || cb_dep(b, start[q], id);
        }
    free(start);
    return rc ? -1 : 0;
}
