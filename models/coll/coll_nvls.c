/* NCCL's NVLS collectives on one node (src/device/all_reduce.h, RunWorkColl
 * for NCCL_ALGO_NVLS, oneNode; all_gather.h and reduce_scatter.h likewise):
 * the data of each of the C channels is cut into loops of n chunks, one per
 * head GPU. In a loop every head's reduce warps pull their chunk reduced
 * over all GPUs (multimem.ld_reduce: the NVSwitch reads every GPU's copy
 * and sends back the sum) and store it to the multicast address
 * (multimem.st: the NVSwitch writes it into every GPU). Per loop and
 * channel each GPU's link to the switch therefore carries (n + 1) chunks
 * each way for allreduce; all-gather stores only (1 chunk up, n down),
 * reduce-scatter pulls only (n up, 1 down). Every GPU's up legs run as one
 * bundled flow and the down legs as another (the ranks are symmetric), at
 * NCCL's multimem efficiency (tuning.cc nvlsEfficiency: the bytes on the
 * wire per payload byte are 1/eff), with the thread blocks of every GPU
 * whose requests cross a link counted for NVLink's gradual saturation.
 * Loops follow one another; each pays one Simple step. The scatter and
 * gather warps' local copies (user buffer <-> the multicast buffer) run in
 * the GPU's memory alongside and are not modelled. docs/model.md "NVLS". */
#include <math.h>
#include <stdlib.h>

#include "models/coll/coll_impl.h"
#include "models/nccl/nccl_nvls.h"

/* The NVSwitch node each GPU's NVLink goes to; -1 if a GPU has none or the
 * GPUs do not share one (the model needs the one switch NCCL sees). */
static int nvswitch_of(const coll_build *b)
{
    int sw = -1;
    for (int r = 0; r < b->n; r++) {
        int mine = -1;
        for (int i = 0; i < topo_nlinks(b->t); i++) {
            const topo_link *l = topo_link_at(b->t, i);
            int o = l->a == b->node[r] ? l->b : l->b == b->node[r] ? l->a : -1;
            if (l->kind == LINK_NVLINK && o >= 0 &&
                topo_node_at(b->t, o)->kind == TOPO_NVSWITCH)
                mine = mine < 0 || mine == o ? o : -2;
        }
        if (mine < 0 || (sw >= 0 && mine != sw))
            return -1;
        sw = mine;
    }
    return sw;
}

int coll_build_nvls(coll_build *b)
{
    int n = b->n, sw = nvswitch_of(b);
    coll_kind k = b->r->kind;
    if (!b->tune || !b->tune->nvls.support)
        return err_set(b->e, ERR_USAGE, "NVLS is off for these ranks (--explain says why)"), -1;
    if (sw < 0)
        return err_set(b->e, ERR_USAGE, "NVLS: the model needs every GPU linked to one and the "
                       "same NVSwitch node (topology '%s')", topo_name(b->t)), -1;
    int c = b->channels > 0 ? b->channels : b->tune->nvls.nchannels;
    snprintf(b->tl_units, sizeof b->tl_units, c > 1 ? "ch 0-%d" : "ch %d", c > 1 ? c - 1 : 0);
    double chunk = nccl_nvls_chunk_bytes(b->tune, b->r->bytes);
    double eff = topo_params_get(b->t)->gpu_sm >= 100 ? 0.74 : 0.85;
    /* Chunks per loop and channel on a GPU's link, up (to the switch) and
     * down, and whose thread blocks issue them (the GPU's own, or all n GPUs'). */
    double up_chunks = k == COLL_ALLREDUCE ? n + 1 : k == COLL_ALLGATHER ? 1 : n;
    double down_chunks = k == COLL_ALLREDUCE ? n + 1 : k == COLL_ALLGATHER ? n : 1;
    double up_blocks = (k == COLL_ALLGATHER ? 1 : k == COLL_ALLREDUCE ? n + 1 : n) * (double)c;
    double down_blocks = (k == COLL_REDUCESCATTER ? 1 : k == COLL_ALLREDUCE ? n + 1 : n) * (double)c;
    double wire = c / eff;
    double per_ch = (double)b->r->bytes / c, loop = n * chunk;
    long loops = (long)ceil(per_ch / loop);
    if (loops < 1)
        loops = 1;
    int *up = malloc(sizeof(int) * (size_t)n), *down = malloc(sizeof(int) * (size_t)n);
    int *start = malloc(sizeof(int) * (size_t)n);
    int rc = up && down && start ? 0 : err_set(b->e, ERR_SYSTEM, "out of memory");
    for (int r = 0; r < n && !rc; r++) {
        up[r] = b->node[r];
        down[r] = sw;
        rc = coll_lane(b, start[r] = cb_delay(b, r, nccl_start_ps(b->t, PROTO_SIMPLE, ALGO_RING),
                                              "kernel"),
                       CL_KERNEL, CL_NONE, 0) < 0;
    }
    sim_ps step = nccl_step_ps(b->t, PROTO_SIMPLE);
    int prev_up = -1, prev_down = -1;
    for (long l = 0; l < loops && !rc; l++) {
        double part = fmin(loop, per_ch - (double)l * loop) / loop;
        /* One task per direction stands for every rank's leg (track 0). */
        int iu = coll_lane(b, fabric_xfer_bundle(b->f, up, down, n, part * up_chunks * chunk, wire,
                                                 wire / up_blocks, step, 0, "nvls-up", b->e),
                           CL_NVLS_UP, CL_NONE, (uint32_t)(l + 1));
        int id = coll_lane(b, fabric_xfer_bundle(b->f, down, up, n, part * down_chunks * chunk,
                                                 wire, wire / down_blocks, step, 0, "nvls-down",
                                                 b->e),
                           CL_NVLS_DOWN, CL_NONE, (uint32_t)(l + 1));
        rc = iu < 0 || id < 0;
        for (int r = 0; r < n && !rc && l == 0; r++)
            rc = cb_dep(b, start[r], iu) || cb_dep(b, start[r], id);
        rc = rc || cb_dep(b, prev_up, iu) || cb_dep(b, prev_down, iu) ||
             cb_dep(b, prev_up, id) || cb_dep(b, prev_down, id);
        prev_up = iu;
        prev_down = id;
    }
    free(up);
    free(down);
    free(start);
    return rc ? -1 : 0;
}
