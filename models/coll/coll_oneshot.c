/* Custom one-shot allreduce, in the two forms found in the field.
 * Pull (vLLM/SGLang cross_device_reduce_1stage, p2pmark's
 * pcie_allreduce_kernel): kernel start, flag barrier, every rank loads the
 * whole vector from each of its n-1 peers (SM loads: non-posted reads,
 * interleaved across peers, so they advance together) and reduces as it
 * loads. Launched eagerly (vLLM) it ends with a second barrier so no peer
 * overwrites an input still being read; in a CUDA graph the buffers are
 * double-buffered and only the start barrier runs (docs/model.md).
 * Push: kernel start, every rank writes its vector into a slot of each
 * peer's buffer (posted writes, interleaved), a flag behind the data (posted
 * writes stay ordered, so the flag lands with the last byte), each rank waits
 * for its n-1 slots and reduces them locally from its own memory. */
#include <stdlib.h>

#include "models/coll/coll_impl.h"

sim_ps coll_local_reduce_ps(const topo *t, int m, double bytes)
{
    double bw = topo_params_get(t)->gpu_mem_Bps;
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

/* Every rank moves bytes to (write) or from (read) all its peers as one
 * interleaved group, starting after after[r]; out[r] is that group. */
/* Thread blocks of vLLM/SGLang's launch: one per 512 16-byte elements of
 * the message, at most 36 (facts.md 1.6). */
static int kernel_blocks(const coll_build *b)
{
    uint64_t packed = (b->r->bytes + 15) / 16, blocks = (packed + 511) / 512;
    return blocks < 1 ? 1 : blocks > 36 ? 36 : (int)blocks;
}

static int exchange(coll_build *b, fab_op op, double bytes, const int *after, int *out,
                    const char *label)
{
    int *p = malloc(sizeof(int) * (size_t)b->n), rc = 0;
    if (!p)
        return err_set(b->e, ERR_SYSTEM, "out of memory"), -1;
    /* The kernel's blocks share their loads (stores) among the n-1 streams. */
    double cta = fabric_cta_cap_Bps(b->f, op, kernel_blocks(b)) / (b->n - 1);
    for (int r = 0; r < b->n && !rc; r++) {
        int k = 0;
        for (int q = 1; q < b->n; q++)
            p[k++] = b->node[(r + q) % b->n];
        /* Its blocks are what NVLink's gradual saturation counts. */
        out[r] = fabric_xfer_group_blocks(b->f, op, b->node[r], p, k, bytes, 1, cta,
                                          kernel_blocks(b), 0, r, label, b->e);
        rc = out[r] < 0 || cb_dep(b, after[r], out[r]);
    }
    free(p);
    return rc ? -1 : 0;
}

/* The end of a phase: pull kernels meet at a flag barrier; push kernels
 * wait for every peer's writes, then reduce m buffers of bytes locally. */
static int settle(coll_build *b, int push, const int *xs, int *out, int m, double bytes)
{
    return push ? all_join(b, xs, out, coll_local_reduce_ps(b->t, m, bytes), "reduce")
                : cb_barrier(b, xs, out);
}

static int alloc_ranks(coll_build *b, int **v, int k)
{
    for (int i = 0; i < k; i++)
        if (!(v[i] = malloc(sizeof(int) * (size_t)b->n)))
            return err_set(b->e, ERR_SYSTEM, "out of memory");
    return 0;
}

/* Kernel start on every rank; then, for pull kernels, the start barrier. */
static int begin(coll_build *b, int push, int *start, int *ready)
{
    sim_ps base = topo_params_get(b->t)->kernel_base_ps;
    for (int r = 0; r < b->n; r++)
        if ((start[r] = ready[r] = cb_delay(b, r, base, "kernel")) < 0)
            return -1;
    return push ? 0 : cb_barrier(b, start, ready);
}

int coll_build_oneshot(coll_build *b)
{
    int push = b->algo == ALGO_ONESHOT_PUSH;
    double S = (double)b->r->bytes;
    int *v[4] = {0};
    int rc = alloc_ranks(b, v, 4);
    if (!rc)
        rc = begin(b, push, v[0], v[1]);
    if (!rc)
        rc = exchange(b, push ? FAB_WRITE : FAB_READ, S, v[1], v[2], push ? "push" : "pull");
    /* Pull reduces as it loads (and meets at an end barrier when eager);
     * push reduces its n slots afterwards. */
    if (!rc && (push || !b->r->graph))
        rc = settle(b, push, v[2], v[3], b->n, S);
    for (int i = 0; i < 4; i++)
        free(v[i]);
    return rc ? -1 : 0;
}

/* Two-shot: a reduce-scatter then an all-gather, each rank owning 1/n.
 * Pull (cross_device_reduce_2stage): barrier; each rank loads its slice from
 * every peer and reduces it into its scratch buffer; barrier (with
 * release/acquire fences); each rank loads every other slice from its
 * owner's scratch; end barrier. Push: each rank writes slice j to rank j;
 * each rank reduces its n arrivals locally; then writes its reduced slice
 * to every peer; done when all slices have arrived. */
int coll_build_twoshot(coll_build *b)
{
    int push = b->algo == ALGO_TWOSHOT_PUSH;
    double part = (double)b->r->bytes / b->n;
    fab_op op = push ? FAB_WRITE : FAB_READ;
    int *v[6] = {0};
    int rc = alloc_ranks(b, v, 6);
    if (!rc)
        rc = begin(b, push, v[0], v[1]);
    if (!rc)
        rc = exchange(b, op, part, v[1], v[2], push ? "rs-push" : "rs-pull");
    if (!rc)
        rc = settle(b, push, v[2], v[3], b->n, part);
    if (!rc)
        rc = exchange(b, op, part, v[3], v[4], push ? "ag-push" : "ag-pull");
    if (!rc)
        rc = settle(b, push, v[4], v[5], 0, 0);
    for (int i = 0; i < 6; i++)
        free(v[i]);
    return rc ? -1 : 0;
}
