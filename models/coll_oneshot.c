/* Custom one-shot allreduce, in the two forms found in the field.
 * Pull (vLLM/SGLang cross_device_reduce_1stage): kernel start, flag barrier,
 * every rank loads the whole vector from each of its n-1 peers (non-posted
 * reads, interleaved across peers, so they advance together) and reduces as
 * it loads, end barrier so no peer overwrites an input still being read.
 * Push: kernel start, every rank writes its vector into a slot of each
 * peer's buffer (posted writes, interleaved), a flag behind the data (posted
 * writes stay ordered, so the flag lands with the last byte), each rank waits
 * for its n-1 slots and reduces them locally from its own memory. */
#include <stdlib.h>

#include "models/coll_impl.h"

static int *peers_of(coll_build *b, int r, int *k)
{
    int *p = malloc(sizeof(int) * (size_t)b->n);
    if (!p)
        return NULL;
    *k = 0;
    for (int q = 1; q < b->n; q++)
        p[(*k)++] = b->node[(r + q) % b->n];
    return p;
}

/* Local reduce of m buffers of bytes each from GPU memory into one. */
static sim_ps reduce_ps(const coll_build *b, int m, double bytes)
{
    double bw = topo_params_get(b->t)->gpu_mem_Bps;
    return bw > 0 ? (sim_ps)((m + 1) * bytes / bw * 1e12) : 0;
}

/* out[r] (a new task of dur_ps on rank r) starts after every xs[q] ended;
 * with many ranks through one join task to keep dependencies O(n). */
static int all_join(coll_build *b, const int *xs, int *out, sim_ps dur_ps, const char *label)
{
    int n = b->n, join = -1;
    if (n > 64) {
        if ((join = cb_delay(b, 0, 0, "join")) < 0)
            return -1;
        for (int q = 0; q < n; q++)
            if (cb_dep(b, xs[q], join))
                return -1;
    }
    for (int r = 0; r < n; r++) {
        if ((out[r] = cb_delay(b, r, dur_ps, label)) < 0)
            return -1;
        if (join >= 0) {
            if (cb_dep(b, join, out[r]))
                return -1;
            continue;
        }
        for (int q = 0; q < n; q++)
            if (cb_dep(b, xs[q], out[r]))
                return -1;
    }
    return 0;
}

int coll_build_oneshot(coll_build *b)
{
    int n = b->n, push = b->algo == ALGO_ONESHOT_PUSH;
    double S = (double)b->r->bytes;
    const topo_params *tp = topo_params_get(b->t);
    int *start = malloc(sizeof(int) * (size_t)n), *ready = malloc(sizeof(int) * (size_t)n);
    int *done = malloc(sizeof(int) * (size_t)n), *xfer = malloc(sizeof(int) * (size_t)n);
    int rc = !start || !ready || !done || !xfer ? err_set(b->e, ERR_SYSTEM, "out of memory") : 0;
    for (int r = 0; r < n && !rc; r++)
        rc = (start[r] = cb_delay(b, r, tp->kernel_base_ps, "kernel")) < 0;
    if (!rc && !push)
        rc = cb_barrier(b, start, ready);
    for (int r = 0; r < n && !rc; r++) {
        int k, *p = peers_of(b, r, &k);
        if (!p) {
            rc = err_set(b->e, ERR_SYSTEM, "out of memory");
            break;
        }
        xfer[r] = fabric_xfer_group(b->f, push ? FAB_WRITE : FAB_READ, b->node[r], p, k, S, 1,
                                    0, r, push ? "push" : "pull", b->e);
        free(p);
        rc = xfer[r] < 0 || cb_dep(b, push ? start[r] : ready[r], xfer[r]);
    }
    if (!rc && !push) {
        rc = cb_barrier(b, xfer, done);
    } else if (!rc) {
        /* Rank r's slots are full once every peer's writes have landed;
         * then it reduces n buffers from its own memory. */
        rc = all_join(b, xfer, done, reduce_ps(b, n, S), "reduce");
    }
    free(start);
    free(ready);
    free(done);
    free(xfer);
    return rc ? -1 : 0;
}

/* Two-shot: a reduce-scatter then an all-gather, each rank owning 1/n.
 * Pull (cross_device_reduce_2stage): barrier; each rank loads its slice from
 * every peer and reduces it into its scratch buffer; barrier (with
 * release/acquire fences); each rank loads every other slice from its
 * owner's scratch; end barrier. Push: each rank writes slice j to rank j;
 * each rank reduces its n-1 arrivals locally; then writes its reduced slice
 * to every peer; done when all slices have arrived. */
int coll_build_twoshot(coll_build *b)
{
    int n = b->n, push = b->algo == ALGO_TWOSHOT_PUSH;
    double part = (double)b->r->bytes / n;
    const topo_params *tp = topo_params_get(b->t);
    fab_op op = push ? FAB_WRITE : FAB_READ;
    int *start = malloc(sizeof(int) * (size_t)n), *ready = malloc(sizeof(int) * (size_t)n);
    int *mid = malloc(sizeof(int) * (size_t)n), *done = malloc(sizeof(int) * (size_t)n);
    int *x1 = malloc(sizeof(int) * (size_t)n), *x2 = malloc(sizeof(int) * (size_t)n);
    int rc = !start || !ready || !mid || !done || !x1 || !x2
                 ? err_set(b->e, ERR_SYSTEM, "out of memory") : 0;
    for (int r = 0; r < n && !rc; r++)
        rc = (start[r] = cb_delay(b, r, tp->kernel_base_ps, "kernel")) < 0;
    if (!rc && !push)
        rc = cb_barrier(b, start, ready);
    for (int r = 0; r < n && !rc; r++) {
        int k, *p = peers_of(b, r, &k);
        if (!p) {
            rc = err_set(b->e, ERR_SYSTEM, "out of memory");
            break;
        }
        x1[r] = fabric_xfer_group(b->f, op, b->node[r], p, k, part, 1, 0, r,
                                  push ? "rs-push" : "rs-pull", b->e);
        free(p);
        rc = x1[r] < 0 || cb_dep(b, push ? start[r] : ready[r], x1[r]);
    }
    if (!rc && !push) {
        rc = cb_barrier(b, x1, mid);
    } else if (!rc) {
        /* Own slice reduced locally from the n-1 arrivals. */
        rc = all_join(b, x1, mid, reduce_ps(b, n, part), "reduce");
    }
    for (int r = 0; r < n && !rc; r++) {
        int k, *p = peers_of(b, r, &k);
        if (!p) {
            rc = err_set(b->e, ERR_SYSTEM, "out of memory");
            break;
        }
        x2[r] = fabric_xfer_group(b->f, op, b->node[r], p, k, part, 1, 0, r,
                                  push ? "ag-push" : "ag-pull", b->e);
        free(p);
        rc = x2[r] < 0 || cb_dep(b, mid[r], x2[r]);
    }
    if (!rc && !push)
        rc = cb_barrier(b, x2, done);
    else if (!rc)
        rc = all_join(b, x2, done, 0, "done");
    free(start);
    free(ready);
    free(mid);
    free(done);
    free(x1);
    free(x2);
    return rc ? -1 : 0;
}
