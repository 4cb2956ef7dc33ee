/* A flows case on the transaction-level engine: each flow of the case is one
 * tlp flow of the requester the op names (flows.h), all starting together;
 * the fixed start of a copy engine or a copy kernel is added as flows_run
 * adds it, so the two engines differ only in how the bytes move. */
#include "models/tlp/tlp_flows.h"

#include <stdlib.h>
#include <string.h>

static int endpoint_node(const topo *t, int ep, err *e)
{
    if (ep >= 0)
        return topo_gpu_node(t, ep);
    int numa = -1 - ep;
    for (int i = 0; i < topo_nnodes(t); i++) {
        const topo_node *nd = topo_node_at(t, i);
        if (nd->kind == TOPO_HOSTMEM && nd->numa == numa)
            return i;
    }
    return err_set(e, ERR_USAGE, "no host memory on NUMA node %d in '%s' (the "
                   "transaction-level engine needs a memory node)", numa, topo_name(t)), -1;
}

int tlp_flows_run(tlp_net *n, const flows_case *c, int64_t window_ps, int64_t *time_ps,
                  err *e)
{
    const topo *t = tlp_topo(n);
    const topo_params *p = topo_params_get(t);
    static const tlp_op ops[FLOWS_NOPS] = {TLP_SM_WRITE, TLP_SM_READ, TLP_CE_READ, TLP_CE_WRITE,
                                           TLP_CE_READ};
    if (c->op == FLOWS_COPY_STAGED)
        return err_set(e, ERR_USAGE, "copy-staged (a peer copy through host memory) runs on the "
                       "flow engine only");
    if (c->pattern && !strcmp(c->pattern, "latency") && c->op == FLOWS_COPY_WRITE)
        return err_set(e, ERR_USAGE, "a latency case of copy-engine pushes (back-to-back copies "
                       "in one stream) runs on the flow engine only");
    TRY(flows_issue_check(c, e));
    tlp_reset(n);
    int64_t *setup = malloc(sizeof *setup * (size_t)(c->n > 0 ? c->n : 1));
    int *id = setup ? malloc(sizeof *id * (size_t)(c->n > 0 ? c->n : 1)) : NULL, rc = 0;
    if (!id) {
        free(setup);
        return err_set(e, ERR_SYSTEM, "out of memory");
    }
    int probe = c->pattern && !strcmp(c->pattern, "latency");
    for (int i = 0; i < c->n && !rc; i++) {
        int s = endpoint_node(t, c->src[i], e), d = endpoint_node(t, c->dst[i], e);
        if (s < 0 || d < 0) {
            rc = e->code;
            break;
        }
        tlp_op op = ops[c->op];
        if (c->op == FLOWS_COPY && c->dst[i] < 0)
            op = TLP_CE_WRITE;
        /* PyTorch runs every peer copy on the source's stream: its engine pushes. */
        if (c->issue == FLOWS_ISSUE_TORCH)
            op = TLP_CE_WRITE;
        int pred[2], np = flows_preds(c, i, pred);
        setup[i] = op == TLP_CE_READ || op == TLP_CE_WRITE
                       ? topo_copy_setup_ps(p, c->src[i] < 0 || c->dst[i] < 0)
                   : probe                                  ? 0
                                                            : p->kernel_base_ps;
        id[i] = tlp_flow(n, op, s, d, c->bytes, e);
        if (id[i] < 0)
            rc = e->code;
        /* A copy queued behind another starts when it ends: its engine's setup
         * was paid by the first copy of the chain, which carries it on. */
        for (int k = 0; k < np && !rc; k++) {
            rc = tlp_flow_after(n, id[i], id[pred[k]], e);
            setup[i] = setup[pred[k]];
        }
    }
    if (!rc)
        rc = tlp_run(n, window_ps, e);
    for (int i = 0; i < c->n && !rc; i++)
        time_ps[i] = setup[i] + tlp_end_ps(n, id[i]);
    free(setup);
    free(id);
    return rc;
}
