/* NCCL as it runs: protocol facts, the channel count NCCL picks for a size,
 * the transport of each hop (P2P or SHM, from NCCL_P2P_LEVEL and the path
 * type), which protocols are enabled, and NCCL's own cost model, which
 * decides algorithm and protocol for `auto` (the prediction itself comes
 * from simulating the chosen schedule, never from this cost model).
 * Constants are NCCL's (src/graph/tuning.cc, src/enqueue.cc, v2.30.7; see
 * reference facts) unless docs/model.md says otherwise. */
#include <math.h>

#include "models/coll/coll_impl.h"
#include "models/nccl/nccl_tune.h"

#define US(x) ((sim_ps)((x) * 1e6))

static const proto_info protos[PROTO_N] = {
    [PROTO_LL] = {"LL", 2.0, 32768, TOPO_NCCL_LL, US(0.2), 0, 512, 8},
    [PROTO_LL128] = {"LL128", 128.0 / 120.0, 120.0 * 640 * 8 * 8 / 8 / 16 * 15,
                     TOPO_NCCL_LL128, 0, 0,
                     640, 8},
    [PROTO_SIMPLE] = {"Simple", 1.0, 1048576, TOPO_NCCL_SIMPLE, 0, 1, 512, 64},
};

const proto_info *nccl_proto(coll_proto p)
{
    return p > PROTO_AUTO && p < PROTO_N ? &protos[p] : &protos[PROTO_SIMPLE];
}

sim_ps nccl_start_ps(const topo *t, coll_proto p, coll_algo a)
{
    const proto_info *pi = nccl_proto(p);
    return topo_params_get(t)->nccl_start_ps[pi->cost] + (a == ALGO_TREE ? pi->tree_extra_ps : 0);
}

sim_ps nccl_step_ps(const topo *t, coll_proto p)
{
    return topo_params_get(t)->nccl_step_ps[nccl_proto(p)->cost];
}

static int has_nvlink(const topo *t, int nranks)
{
    if (nranks > 1 && topo_gpus_nvlinked(t, nranks))
        return 1;   /* NVLink lanes: path NVL, so no pair needs a look */
    for (int a = 0; a < nranks; a++)
        for (int b = 0; b < nranks; b++)
            if (a != b && topo_gpu_path(t, a, b) > PATH_NVB)
                return 0;
    return nranks > 1;
}

/* The channels of the communicator: what NCCL's ring search typically
 * finds (2 on PCIe, 16 on NVSwitch), clamped by NCCL_MIN/MAX_NCHANNELS. */
int nccl_default_channels(const topo *t, int nranks, const nccl_env *env)
{
    int nc = has_nvlink(t, nranks) ? 16 : 2;
    if (env->min_channels > nc)
        nc = env->min_channels;
    if (env->max_channels > 0 && env->max_channels < nc)
        nc = env->max_channels;
    return nc < 1 ? 1 : nc;
}

/* enqueue.cc: while (nBytes < nc*nt*threshold && nc >= 2) nc--; the ring
 * LL threshold is 8 bytes per thread times the number of ranks. */
int nccl_op_channels(const coll_req *r, coll_proto p, int nc_max)
{
    const proto_info *pi = nccl_proto(p);
    double nt = r->env.nthreads > 0 ? r->env.nthreads : pi->max_threads;
    double thr = pi->thread_threshold * (p == PROTO_LL ? r->nranks : 1);
    int nc = nc_max;
    while ((double)r->bytes < nc * nt * thr && nc >= 2)
        nc--;
    return nc;
}

int nccl_uses_p2p(const topo *t, const nccl_env *env, int gpu_a, int gpu_b)
{
    if (env->p2p_disable)
        return 0;
    /* Default cutoff PATH_PXB (paths.cc); NVLink always qualifies. */
    int level = env->p2p_level >= 0 ? env->p2p_level : PATH_PXB;
    /* NVML's status too (paths.cc ncclTopoCheckP2p), unless NCCL skips it. */
    return (int)topo_gpu_path(t, gpu_a, gpu_b) <= level &&
           (env->ignore_disabled_p2p == 2 || topo_gpu_p2p(t, gpu_a, gpu_b) == P2P_OK);
}

/* LL128 only when the intra-node path is NVLink (tuning.cc). */
int nccl_proto_enabled(const topo *t, int nranks, coll_proto p, const nccl_env *env)
{
    if (env->proto != PROTO_AUTO)
        return p == env->proto;
    if (p == PROTO_LL128)
        return has_nvlink(t, nranks);
    return p == PROTO_LL || p == PROTO_SIMPLE;
}

/* NCCL's view of the intra-node bandwidth of a ring, GB/s: the slowest
 * hop as NCCL rates links (PCIe Gen5 x16 = 48, AMD socket link 16, NVLink
 * SM90 20.6 per lane) (topo.h). */
static double nccl_bw_intra(const topo *t, int nranks)
{
    double bw = 1e9;
    for (int r = 0; r < nranks; r++) {
        int a = topo_gpu_node(t, r), b = topo_gpu_node(t, (r + 1) % nranks);
        const int *links;
        const int8_t *dirs;
        int h = topo_route(t, a, b, &links, &dirs);
        for (int i = 0; i < h; i++) {
            const topo_link *l = topo_link_at(t, links[i]);
            double v;
            switch (l->kind) {
            case LINK_NVLINK: {
                int sm = topo_params_get(t)->gpu_sm;
                v = topo_nvlink_lane_GBps(sm > 0 ? sm : 80) * (l->nvlinks > 0 ? l->nvlinks : 1);
                break;
            }
            case LINK_SOCKET: v = 16.0; break;
            case LINK_PCIE: v = l->pcie_gen >= 5 ? 48.0 : l->pcie_gen == 4 ? 24.0 : 12.0;
                break;
            default: v = 1e9; break;
            }
            if (v < bw)
                bw = v;
        }
    }
    return bw >= 1e9 ? 48.0 : bw;
}

double nccl_cost_us(const topo *t, const coll_req *r, coll_algo a, coll_proto p, int nc)
{
    /* NCCL's latencies from the tuning emulation's one table; the
     * bandwidth below is this rule's own (no search beyond its ranks). */
    int ai = a == ALGO_TREE, pi = p == PROTO_LL ? 0 : p == PROTO_LL128 ? 1 : 2;
    int n = r->nranks, nvl = has_nvlink(t, n);
    double hw = nccl_tune_hw_lat_us(nvl, ai, pi);
    double steps = r->kind == COLL_ALLREDUCE ? 2.0 * (n - 1)
                 : r->kind == COLL_BROADCAST ? n : n - 1;
    double lat = nccl_tune_base_lat_us(ai, pi) + steps * hw;
    double bw = nccl_bw_intra(t, n) * nc;
    if (p == PROTO_LL)
        bw = fmin(bw * 0.5, 282.0);
    else if (p == PROTO_LL128)
        bw = fmin(bw * 0.92, nc * 40.0);
    if (a == ALGO_TREE) {
        bw *= 0.92 * (p == PROTO_LL ? 1 / 3.8 : p == PROTO_LL128 ? 7.0 / 9 : 1.0);
        bw *= 0.5; /* algBw = busBw / 2 for tree allreduce */
    } else {
        bw *= (double)n / steps; /* busBw -> algBw */
    }
    return lat + (double)r->bytes / (1000.0 * bw);
}
