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
static double unit_bytes(const coll_build *b, double bytes_c)
{
    const proto_info *pi = nccl_proto(b->proto);
    if (b->proto != PROTO_SIMPLE)
        return pi->unit_bytes;
    double buff = b->r->env.buffsize_bytes > 0 ? (double)b->r->env.buffsize_bytes : 4194304.0;
    double step = buff / 8.0;
    int ring = b->algo == ALGO_RING && b->r->kind != COLL_BROADCAST;
    if (!ring)
        return step;
    double chunk = fmin(4 * step, ceil(bytes_c / b->n / 16.0) * 16.0);
    double slice = fmax(ceil(chunk / 2 / 16.0) * 16.0, 2 * step / 32);
    return fmin(slice, 2 * step);
}

static int start_tasks(coll_build *b, int *start)
{
    for (int r = 0; r < b->n; r++)
        if ((start[r] = cb_delay(b, r, nccl_start_ps(b->t, b->proto, ALGO_RING), "kernel")) < 0)
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
            cur[h] = cb_nccl_hop(b, from, to, sz, weight, "bcast");
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

/* The ring's steps as the run reaches them. Row (l, s) is step s of loop l
 * on every rank; it depends on rows (l, s-1) (data) and (l-1, s) (FIFO), so
 * rows are added by anti-diagonal d = l + s, l rising within one: each call
 * adds one diagonal, after which every task of the diagonals before has its
 * dependents. Each rank's sends are added in the order of a loop-major
 * build ((l, s) then (l+1, s) among one task's dependents), so the run is
 * the same event for event (sim/sched.h). */
typedef struct ring_gen {
    coll_build *b;
    int n, steps;
    long loops, d;
    double unit, bytes_c, weight;
    const char *label;
    int *start;  /* n kernel tasks */
    int *rows;   /* per loop, its last two rows: [(l * 2 + s % 2) * n + r] */
    int *line;   /* the same for the rows' aux tasks (first line, or delivery) */
    int bundle;  /* a row is one bundled flow (rows[(l * 2 + s % 2) * n]) */
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
    free(g);
}

/* The loop's last receive (NCCL's directRecv / recvReduceCopy after the
 * last send), a step of its own (its wait, barrier and post: nccl_step). With
 * LL every thread also reads its 16-byte lines one per trip into the user
 * buffer, as slowly as a step (prims_ll.h LLGenericOp), so the pass takes
 * the receiving channel's block for a step's worth of trips; LL128 and
 * Simple keep 8 x 16 bytes per thread in flight and their local copy is left
 * out. rank < 0: every rank (a bundled row). */
static int final_pass(coll_build *b, ring_gen *g, double chunk, int after, int rank)
{
    const proto_info *pi = nccl_proto(b->proto);
    int id = fabric_block_pass(b->f, rank < 0 ? b->node : &b->node[rank], rank < 0 ? g->n : 1,
                               b->proto == PROTO_LL ? chunk : 0, pi->wire, nccl_step_ps(b->t, b->proto),
                               rank < 0 ? 0 : rank, "final-recv", b->e);
    return id < 0 || cb_dep(b, after, id) ? -1 : 0;
}

static int ring_next(void *ctx, sched *sc)
{
    ring_gen *g = ctx;
    coll_build *b = g->b;
    int n = g->n;
    if (g->d == 0 && start_tasks(b, g->start))
        return -1;
    long d = g->d++;
    int first = sched_ntasks(sc);
    long l0 = d - g->steps + 1 > 0 ? d - g->steps + 1 : 0, l1 = d < g->loops - 1 ? d : g->loops - 1;
    for (long l = l0; l <= l1; l++) {
        int s = (int)(d - l);
        double left = g->bytes_c - (double)l * n * g->unit;
        double chunk = fmin(g->unit, left / n);
        int *cur = g->rows + (size_t)(l * 2 + s % 2) * (size_t)n;
        const int *before = g->rows + (size_t)(l * 2 + (s + 1) % 2) * (size_t)n; /* (l, s-1) */
        const int *prev = g->rows + (size_t)((l - 1) * 2 + s % 2) * (size_t)n; /* (l-1, s) */
        /* Every transfer is a send (it ends when its last byte has left and
         * the sender's step cost is paid: the rank's next send may start)
         * and an `aux` task. LL and LL128 (g->cut) forward lines as they
         * arrive: a rank's step waits for its own previous step and for the
         * first line of the upstream step (aux: that step's start plus one
         * hop's latency), and only a loop's last step carries its latency.
         * Simple's receiver waits for the whole slice and its flag (aux:
         * the send's end plus the route's latency and the flag's). */
        int *cur_aux = g->line + (size_t)(l * 2 + s % 2) * (size_t)n;
        const int *before_aux = g->line + (size_t)(l * 2 + (s + 1) % 2) * (size_t)n;
        int last = s == g->steps - 1, with_lat = g->cut && last;
        int rows = g->bundle ? 1 : n;
        for (int r = 0; r < rows; r++) {
            int to = (r + 1) % n, up = (r + n - 1) % n;
            int id = g->bundle ? cb_nccl_ring_bundle_lat(b, chunk, g->weight, with_lat, g->label)
                               : cb_nccl_hop_lat(b, r, to, chunk, g->weight, with_lat, g->label);
            if (id < 0)
                return -1;
            sim_ps aux_ps = g->cut ? cb_hop_lat_ps(b, r, to) : with_lat ? 0 : cb_hop_deliver_ps(b, r, to);
            int aux = cb_delay(b, r, aux_ps, g->cut ? "first-line" : "deliver");
            if (aux < 0 || (!g->cut && cb_dep(b, id, aux)))
                return -1;
            /* The hop (and, cut, its first line) after: the data upstream,
             * the rank's own previous step, the same step of the previous
             * loop (FIFO order), and at the very start both kernels. */
            int data = s ? before_aux[g->bundle ? 0 : up] : -1;
            int own = s ? before[g->bundle ? 0 : r] : -1;
            int fifo = l ? prev[g->bundle ? 0 : r] : -1;
            for (int k = 0; k < (g->cut ? 2 : 1); k++) {
                int x = k ? aux : id;
                if (cb_dep(b, data, x) || cb_dep(b, own, x) || cb_dep(b, fifo, x))
                    return -1;
                for (int q = 0; s == 0 && l == 0 && q < n; q++)
                    if ((g->bundle || q == r || q == to) && cb_dep(b, g->start[q], x))
                        return -1;
            }
            cur[r] = id;
            cur_aux[r] = aux;
            if (last && final_pass(b, g, chunk, g->cut ? id : aux, g->bundle ? -1 : to))
                return -1;
        }
    }
    sched_horizon(sc, first);
    return g->d < g->loops + g->steps - 1 ? 1 : 0;
}

/* Can the n hops of a ring step run as one bundled flow with the same
 * result? Yes when the ranks are symmetric: every hop r -> r+1 is a P2P
 * write over NVLink only (no capacity rule, no read bound), the routes have
 * the same hop count, and hop by hop the same capacity and latency, and no
 * two routes (nor one twice) cross a link in the same direction. Then every
 * rank's flows of a step start together (the kernel tasks are identical),
 * meet only their own rank's other flows, by induction end together, and a
 * bundle crossing all routes with weight 1 per link gets each link's
 * max-min share that each flow got alone. */
static int ring_symmetric(coll_build *b)
{
    int n = b->n, nl = topo_nlinks(b->t), ok = n >= 2;
    unsigned char *used = calloc(2 * (size_t)nl + 1, 1);
    if (!used)
        return 0;
    const int *l0 = NULL;
    int h0 = -1;
    for (int r = 0; r < n && ok; r++) {
        int src = b->node[r], dst = b->node[(r + 1) % n];
        const int *links;
        const int8_t *dirs;
        int h = topo_route(b->t, src, dst, &links, &dirs);
        ok = h > 0 && cb_uses_p2p(b, r, (r + 1) % n) &&
             (r == 0 || (h == h0 && fabric_lat_ps(b->f, FAB_WRITE, src, dst) ==
                                        fabric_lat_ps(b->f, FAB_WRITE, b->node[0], b->node[1])));
        for (int i = 0; i < h && ok; i++) {
            const topo_link *k = topo_link_at(b->t, links[i]);
            size_t id = 2 * (size_t)links[i] + (size_t)dirs[i];
            ok = k->kind == LINK_NVLINK && !used[id] &&
                 (r == 0 || (k->bw_Bps == topo_link_at(b->t, l0[i])->bw_Bps &&
                             k->lat_ps == topo_link_at(b->t, l0[i])->lat_ps));
            used[id] = 1;
        }
        if (r == 0) {
            l0 = links;
            h0 = h;
        }
    }
    free(used);
    return ok;
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
        int rc = start_tasks(b, start) || chain(b, start, bytes_c, weight);
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
    g->unit = unit_bytes(b, bytes_c);
    g->bytes_c = bytes_c;
    g->weight = weight;
    g->loops = (long)ceil(bytes_c / (n * g->unit));
    if (g->loops < 1)
        g->loops = 1;
    g->label = k == COLL_ALLREDUCE ? "ring" : k == COLL_ALLGATHER ? "allgather" : "reducescatter";
    g->start = malloc(sizeof(int) * (size_t)n);
    g->rows = g->loops <= (long)(SIZE_MAX / 2 / sizeof(int) / (size_t)n)
                  ? malloc(sizeof(int) * 2 * (size_t)g->loops * (size_t)n) : NULL;
    g->line = g->rows ? malloc(sizeof(int) * 2 * (size_t)g->loops * (size_t)n) : NULL;
    if (!g->start || !g->rows || !g->line) {
        ring_gen_free(g);
        return err_set(b->e, ERR_SYSTEM, "out of memory"), -1;
    }
    g->bundle = b->bundle && ring_symmetric(b);
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
        rc = (start[r] = cb_delay(b, r, nccl_start_ps(b->t, b->proto, ALGO_TREE), "kernel")) < 0;
    /* Each hop is a send (done when its last byte has left: the sender's
     * next chunk may follow, FIFO order) and its delivery (route latency and
     * Simple's flag), which the next hop of the same chunk waits for. */
    int upd = -1, downd = -1;
    for (long u = 0; u < nu && !rc; u++) {
        double sz = fmin(unit, bytes_c - (double)u * unit);
        for (int h = 0; h < n - 1 && !rc; h++) {
            int from = n - 1 - h, to = n - 2 - h;
            up[h] = cb_nccl_hop_lat(b, from, to, sz, weight, 0, "tree-up");
            rc = up[h] < 0 || cb_dep(b, h ? upd : start[from], up[h]) ||
                 cb_dep(b, start[to], up[h]) || (u ? cb_dep(b, pup[h], up[h]) : 0);
            upd = rc ? -1 : cb_delay(b, to, cb_hop_deliver_ps(b, from, to), "deliver");
            rc = rc || upd < 0 || cb_dep(b, up[h], upd);
        }
        for (int h = 0; h < n - 1 && !rc; h++) {
            down[h] = cb_nccl_hop_lat(b, h, h + 1, sz, weight, 0, "tree-down");
            rc = down[h] < 0 || cb_dep(b, h ? downd : upd, down[h]) ||
                 (u ? cb_dep(b, pdown[h], down[h]) : 0);
            downd = rc ? -1 : cb_delay(b, h + 1, cb_hop_deliver_ps(b, h, h + 1), "deliver");
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
        rc = (start[r] = cb_delay(b, r, nccl_start_ps(b->t, b->proto, ALGO_RING), "kernel")) < 0;
    for (int r = 0; r < n && !rc; r++)
        for (int q = 0; q < n && !rc; q++) {
            if (q == r)
                continue;
            int id = cb_nccl_hop(b, r, q, part / ch, ch, "alltoall");
            rc = id < 0 || cb_dep(b, start[r], id) || cb_dep(b, start[q], id);
        }
    free(start);
    return rc ? -1 : 0;
}
