/* Custom allreduce kernels phase by phase on the transaction-level engine.
 * Every rank runs the same phase at the same time and the kernels
 * synchronise all ranks between phases (a flag barrier, or a wait for every
 * peer's data), so the collective is the sum of the phases' makespans:
 * kernel start, barriers (every rank stores a 4-byte flag into every peer),
 * exchanges (every rank loads from, or stores into, every peer: SM requests),
 * local reduces ((m+1) x bytes / gpu_mem, as the flow model). */
#include "models/tlp/tlp_coll.h"

#include <stdlib.h>
#include <string.h>

/* One phase: every ordered pair (r, q) moves bytes, r the initiator; alone:
 * only rank 0 does. The makespan in *ps. */
static int phase(tlp_net *n, tlp_op op, int nranks, double bytes, int alone, int64_t window_ps,
                 int64_t *ps, err *e)
{
    const topo *t = tlp_topo(n);
    tlp_reset(n);
    int k = 0;
    for (int r = 0; r < (alone ? 1 : nranks); r++)
        for (int q = 0; q < nranks; q++) {
            if (q == r)
                continue;
            int a = topo_gpu_node(t, r), b = topo_gpu_node(t, q);
            /* A read's data moves from the peer to the initiator. */
            if (tlp_flow(n, op, tlp_is_read(op) ? b : a, tlp_is_read(op) ? a : b, bytes, e) < 0)
                return e->code;
            k++;
        }
    TRY(tlp_run(n, window_ps, e));
    *ps = 0;
    for (int i = 0; i < k; i++)
        if (tlp_end_ps(n, i) > *ps)
            *ps = tlp_end_ps(n, i);
    return 0;
}

static int barrier(tlp_net *n, int nranks, coll_result *out, err *e)
{
    int64_t ps;
    TRY(phase(n, TLP_SM_WRITE, nranks, 4, 0, 0, &ps, e));
    out->barrier_ps += ps;
    out->time_ps += ps;
    return 0;
}

static int exchange(tlp_net *n, tlp_op op, int nranks, double bytes, int64_t window_ps,
                    coll_result *out, err *e)
{
    int64_t all, one;
    TRY(phase(n, op, nranks, bytes, 0, window_ps, &all, e));
    TRY(phase(n, op, nranks, bytes, 1, window_ps, &one, e));
    if (one > all)
        one = all;
    out->transfer_ps += one;
    out->contention_ps += all - one;
    out->time_ps += all;
    return 0;
}

static void fixed(const topo *t, coll_result *out, int m, double bytes)
{
    sim_ps ps = coll_local_reduce_ps(t, m, bytes);
    out->fixed_ps += ps;
    out->time_ps += ps;
}

int tlp_coll_predict(tlp_net *n, const coll_req *r, int64_t window_ps, coll_result *out,
                     err *e)
{
    const topo *t = tlp_topo(n);
    if (r->kind != COLL_ALLREDUCE || !coll_algo_is_custom(r->algo))
        return err_set(e, ERR_USAGE, "--engine tlp runs the custom allreduce kernels (oneshot, "
                       "twoshot, oneshot-push, twoshot-push); %s %s runs on the flow engine only",
                       coll_kind_name(r->kind), coll_algo_name(r->algo));
    int nr = r->nranks;
    if (nr < 2 || nr > topo_ngpus(t))
        return err_set(e, ERR_USAGE, "--engine tlp: %d ranks on %d GPUs", nr, topo_ngpus(t));
    memset(out, 0, sizeof *out);
    out->algo = r->algo;
    out->proto = PROTO_AUTO;
    int64_t base = topo_params_get(t)->kernel_base_ps;
    out->fixed_ps = out->time_ps = base;
    double S = (double)r->bytes, part = S / nr;
    switch (r->algo) {
    case ALGO_ONESHOT:
        TRY(barrier(n, nr, out, e));
        TRY(exchange(n, TLP_SM_READ, nr, S, window_ps, out, e));
        if (!r->graph)
            TRY(barrier(n, nr, out, e));
        break;
    case ALGO_ONESHOT_PUSH:
        TRY(exchange(n, TLP_SM_WRITE, nr, S, window_ps, out, e));
        fixed(t, out, nr, S);
        break;
    case ALGO_TWOSHOT:
        TRY(barrier(n, nr, out, e));
        TRY(exchange(n, TLP_SM_READ, nr, part, window_ps, out, e));
        TRY(barrier(n, nr, out, e));
        TRY(exchange(n, TLP_SM_READ, nr, part, window_ps, out, e));
        TRY(barrier(n, nr, out, e));
        break;
    default: /* ALGO_TWOSHOT_PUSH */
        TRY(exchange(n, TLP_SM_WRITE, nr, part, window_ps, out, e));
        fixed(t, out, nr, part);
        TRY(exchange(n, TLP_SM_WRITE, nr, part, window_ps, out, e));
        break;
    }
    out->events = tlp_last_stats(n).events;
    return 0;
}
