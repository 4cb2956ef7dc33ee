/* NCCL as it runs: protocol facts (wire bytes, pipelined step, runtime
 * costs per protocol) and the transport of a hop above NCCL's local ranks
 * (P2P or SHM, from NCCL_P2P_LEVEL and the path type). NCCL's decisions of
 * algorithm, protocol and channels, and the cost model behind them, are the
 * emulation's alone (models/nccl/nccl_tune.c). Constants are NCCL's
 * (src/enqueue.cc, src/device/, v2.30.7; see reference facts) unless
 * docs/model.md says otherwise. */
#include "models/coll/coll_impl.h"

#define US(x) ((sim_ps)((x) * 1e6))

/* The copy columns (nccl_recv_copy_wire): LL, one 16-byte line per thread
 * per trip, one round (prims_ll.h LLGenericOp: readLL, then storeData);
 * LL128, 4 x 16 bytes of lines per thread, loaded until every flag of the
 * warp's 16 lines matches and then loaded again (prims_ll128.h
 * recvReduceSendCopy): two rounds; Simple, ncclCollUnroll() loads of 16 bytes
 * per worker before its stores (8 in this table; nccl_copy_thread_B takes the
 * GPU's: 4 below SM 80, 6 on SM 12.x; common_kernel.h reduceCopyPacks), the
 * ring's sync warp aside (enqueue.cc nt += WARP_SIZE), none into registered
 * buffers (the peer's directSend wrote them: register/coll_reg.cc). Over
 * SHM the receiver's loads from host memory are the hop's read leg: only
 * LL's pass is charged there (as before this rule). */
static const proto_info protos[PROTO_N] = {
    [PROTO_LL] = {"LL", 2.0, 32768, TOPO_NCCL_LL, US(0.2), 0, 512, 0, 1, 16, 0, 1},
    [PROTO_LL128] = {"LL128", 128.0 / 120.0, 120.0 * 640 * 8 * 8 / 8 / 16 * 15,
                     TOPO_NCCL_LL128, 0, 0, 640, 0, 2, 64, 0, 0},
    [PROTO_SIMPLE] = {"Simple", 1.0, 1048576, TOPO_NCCL_SIMPLE, 0, 1, 544, 32, 1, 128, 1, 0},
};

const proto_info *nccl_proto(coll_proto p)
{
    return p > PROTO_AUTO && p < PROTO_N ? &protos[p] : &protos[PROTO_SIMPLE];
}

int nccl_coll_unroll(int sm)
{
    /* src/include/device.h ncclCollUnroll (v2.27-v2.30; v2.26: SM 120 only
     * of the 12.x): 8 from SM 80, 6 on SM 12.x, 4 below SM 80; NCCL's
     * emulation takes an unknown SM as 80. */
    if (sm <= 0)
        sm = 80;
    return sm >= 80 ? (sm / 10 == 12 ? 6 : 8) : 4;
}

double nccl_copy_thread_B(const coll_build *b)
{
    const proto_info *pi = nccl_proto(b->proto);
    if (b->proto != PROTO_SIMPLE)
        return pi->copy_thread_B;
    return nccl_coll_unroll(topo_params_get(b->t)->gpu_sm) * 16.0;
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

/* A block's local loads follow its bytes in flight per round trip
 * (docs/model.md "Serial loads": cta_store is the copy kernel's 512 threads
 * x one 16-byte load, FABRIC_CTA_REF_INFLIGHT_B): the copy costs the block
 * rounds x ref / (copying threads x bytes per round) per wire byte, x wire
 * per payload byte (LL 2 at 512 threads, LL128 0.43 at 640, Simple 0.125 at
 * 512 workers). A hop into rank 0 stands for the ring's transport. */
double nccl_recv_copy_wire(const coll_build *b)
{
    const proto_info *pi = nccl_proto(b->proto);
    if ((pi->copy_reg_skips && b->r->registered) ||
        (!pi->copy_shm && b->n > 1 && !cb_uses_p2p(b, b->n - 1, 0)))
        return 0;
    int nt = (b->threads > 0 ? b->threads : pi->threads) - pi->sync_threads;
    /* The FIFO it copies was written by the peer into this GPU's memory
     * just before: its loads hit L2, whose round trip is the HBM's / l2
     * (docs/model.md "The last receive's copy"; fifo-l2). */
    double l2 = topo_params_get(b->t)->l2_load_speedup;
    if (fabric_disabled(b->f) & FAB_NO_FIFO_L2)
        l2 = 1;
    return pi->copy_rounds * FABRIC_CTA_REF_INFLIGHT_B / ((double)nt * nccl_copy_thread_B(b)) *
           pi->wire / (l2 > 1 ? l2 : 1);
}

/* The block of one ring step (docs/model.md "A block's ceiling"): each
 * copying thread keeps its protocol's bytes per round in flight (LL one
 * 16-byte line, LL128 4 x 16 bytes, Simple ncclCollUnroll() x 16 bytes;
 * the copy columns above), a step that receives runs the protocol's load
 * rounds (LL128: poll, then reload), one that only sends one round. */
fabric_block nccl_block(const coll_build *b, int rank, int recv, double local_B)
{
    const proto_info *pi = nccl_proto(b->proto);
    int nt = (b->threads > 0 ? b->threads : pi->threads) - pi->sync_threads;
    return (fabric_block){.gpu = b->node[rank], .blocks = b->channels > 0 ? b->channels : 1,
                          .inflight_B = nt * nccl_copy_thread_B(b),
                          .rounds = recv ? pi->copy_rounds : 1, .local_B = local_B,
                          .threads = nt};
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
