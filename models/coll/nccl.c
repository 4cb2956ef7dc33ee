/* NCCL as it runs: protocol facts (wire bytes, pipelined step, runtime
 * costs per protocol) and the transport of a hop above NCCL's local ranks
 * (P2P or SHM, from NCCL_P2P_LEVEL and the path type). NCCL's decisions of
 * algorithm, protocol and channels, and the cost model behind them, are the
 * emulation's alone (models/nccl/nccl_tune.c). Constants are NCCL's
 * (src/enqueue.cc, src/device/, v2.30.7; see reference facts) unless
 * docs/model.md says otherwise. */
#include "models/coll/coll_impl.h"

#define US(x) ((sim_ps)((x) * 1e6))

static const proto_info protos[PROTO_N] = {
    [PROTO_LL] = {"LL", 2.0, 32768, TOPO_NCCL_LL, US(0.2), 0},
    [PROTO_LL128] = {"LL128", 128.0 / 120.0, 120.0 * 640 * 8 * 8 / 8 / 16 * 15,
                     TOPO_NCCL_LL128, 0, 0},
    [PROTO_SIMPLE] = {"Simple", 1.0, 1048576, TOPO_NCCL_SIMPLE, 0, 1},
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
