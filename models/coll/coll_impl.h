/* Internal to the collective algorithms: the builder context each algorithm
 * file fills with tasks, NCCL's per-hop transport and protocol facts, and
 * small helpers. Not for use outside models/coll/. */
#ifndef MODELS_COLL_COLL_IMPL_H
#define MODELS_COLL_COLL_IMPL_H

#include "models/coll/coll.h"
#include "models/fabric/fabric.h"

/* Protocol facts (docs/model.md "NCCL"). */
typedef struct proto_info {
    const char *name;
    double wire;            /* bytes on the wire per payload byte */
    double unit_bytes;      /* payload per pipelined step per channel */
    int cost;               /* index of its runtime costs in topo_params (TOPO_NCCL_*) */
    sim_ps tree_extra_ps;   /* tree's kernel start over ring's (NCCL's baseLat) */
    int flag_hops;          /* extra one-way latencies per step for the flag */
    /* The last receive's copy out of the FIFO (nccl_recv_copy_wire): the
     * block's threads when NCCL's are not known, those of them that do not
     * copy (Simple's sync warp), load rounds per trip, bytes each copying
     * thread loads per round, whether registered buffers skip it and
     * whether it is charged over SHM. */
    int threads, sync_threads;
    double copy_rounds, copy_thread_B;
    int copy_reg_skips, copy_shm;
} proto_info;

const proto_info *nccl_proto(coll_proto p);
/* NCCL's ncclCollUnroll for GPUs of compute capability sm x 10 (0 = unknown,
 * taken as 80): Simple's 16-byte loads in flight per worker thread. */
int nccl_coll_unroll(int sm);
/* The protocol's kernel start per collective (algorithm a) and device-side
 * cost per pipelined step (sync, polling) on t: calibration keys
 * nccl_start_*_us and nccl_step_*_us (topo_params). */
sim_ps nccl_start_ps(const topo *t, coll_proto p, coll_algo a);
sim_ps nccl_step_ps(const topo *t, coll_proto p);

typedef struct coll_build {
    fabric *f;
    const topo *t;
    const coll_req *r;
    coll_algo algo;
    coll_proto proto;
    int channels;
    int threads;       /* NCCL's threads per channel (block), 0 = not known */
    int n;             /* ranks */
    int *node;         /* node id of each rank's GPU */
    err *e;
    const struct nccl_tune *tune;  /* NCCL's decisions (transport per hop), or NULL */
    int stream;        /* add generated graphs as the run reaches them */
    int bundle;        /* symmetric ranks' identical flows may run as one */
    int flag_tasks;    /* barrier flags as delay tasks, not edges (coll_ctx_flag_tasks) */
    int period;        /* > 0: only ranks 0..period-1 run, each standing for its
                        * class r mod period (the custom kernels' bundle) */
    void *gen_state;   /* a builder's generator state, freed after the run */
    void (*gen_free)(void *);
    /* timeline names (coll_lane.c) */
    int tl_steps;      /* a ring's steps per loop: notes number loop and step; 0 none */
    char tl_units[24]; /* a lane's parallel units if not NCCL's channels ("36 blocks") */
} coll_build;

typedef int coll_build_fn(coll_build *b);

/* Bytes one copying thread of b's protocol keeps in flight per round: LL 16,
 * LL128 64, Simple ncclCollUnroll(b's GPUs) x 16. */
double nccl_copy_thread_B(const coll_build *b);
/* The last receive's copy of a ring chunk out of the FIFO into the user
 * buffer by the receiving block: wire-weighted bytes per payload byte
 * against the block's store budget (models/coll/nccl.c; 0: no copy). */
double nccl_recv_copy_wire(const coll_build *b);

/* The thread block rank's ring step runs on (models/coll/nccl.c): its
 * protocol's bytes in flight, load rounds (recv: the step loads what it
 * received) and local_B bytes stored into its own GPU per payload byte. */
fabric_block nccl_block(const coll_build *b, int rank, int recv, double local_B);

/* Does NCCL use P2P (else SHM) from gpu_a to gpu_b: the path type within
 * NCCL_P2P_LEVEL (default PXB) and NVML's status OK; for communicators
 * above NCCL's local ranks, whose pairs the emulation does not tabulate. */
int nccl_uses_p2p(const topo *t, const nccl_env *env, int gpu_a, int gpu_b);

/* Helpers for builders; all return a task id, or -1 with b->e set. */
int cb_delay(coll_build *b, int rank, sim_ps dur_ps, const char *label);
int cb_dep(coll_build *b, int before, int after);     /* 0 ok, -1 */
/* One NCCL send of bytes from rank a to rank b over its transport (P2P
 * write into the peer, or SHM: write to host memory then the receiver
 * reads it), carrying `weight` identical channels. */
int cb_nccl_hop(coll_build *b, int from, int to, double bytes, double weight,
                const char *label);
/* The same; with_lat = 0: the hop ends when its last byte has left the
 * sender and its step cost is paid: the sender's next transfer may start;
 * the route's latency and Simple's fence and flag are cb_hop_deliver_ps,
 * what the receiver waits for after. recv, local_B: the sender's block
 * loads what it received, stores local_B bytes into its own buffer per byte
 * (nccl_block; cb_nccl_hop: 0, 0). */
int cb_nccl_hop_lat(coll_build *b, int from, int to, double bytes, double weight, int with_lat,
                    int recv, double local_B, const char *label);
/* The route latency cb_nccl_hop adds to the hop from -> to (P2P: the write's
 * one way; SHM: the write into host memory plus the receiver's read). */
sim_ps cb_hop_lat_ps(const coll_build *b, int from, int to);
/* After a with_lat = 0 hop ends, the time until its data (and Simple's
 * flag behind it) has reached the receiver. */
sim_ps cb_hop_deliver_ps(const coll_build *b, int from, int to);
/* One ring step of rank from's block (a send into to): P2P, its stores into
 * the peer; SHM, its loads from the host FIFO it receives in (recv) and its
 * stores into to's, one flow (docs/model.md "SHM in program order"); the
 * copy engines' SHM (NCCL_SHM_USE_CUDA_MEMCPY, Simple) as cb_nccl_hop_lat.
 * local_B: its stores into its own buffer per payload byte. with_lat as
 * cb_nccl_hop_lat. */
int cb_ring_step(coll_build *b, int from, int to, double bytes, double weight, int with_lat,
                 int recv, double local_B, const char *label);
/* The last receive of rank's block from `from` over SHM (its loads from the
 * host FIFO and its stores into its buffer), or -2 when the hop is P2P or
 * copied by the engines (the block's pass over local data instead). */
int cb_ring_shm_recv(coll_build *b, int rank, int from, double bytes, double weight,
                     const char *label);
/* Does the ring hop from -> to run as SM legs through host memory (SHM
 * without the copy engines)? */
int cb_ring_shm_sm(const coll_build *b, int from, int to);
/* What a ring step's receiver waits for after the step ended (with_lat =
 * 0): cb_hop_deliver_ps; over SM SHM the data's and the flag's writes into
 * host memory and the receiver's poll of the flag (its loads of the data
 * are its own step's), the poll left out where cb_ring_shm_poll_ps charges
 * it to the receiver's step. line: the first line instead (LL, LL128),
 * after the step's own first loads when it receives (recv) over SM SHM. */
sim_ps cb_ring_deliver_ps(const coll_build *b, int from, int to, int line, int recv);
/* The poll a Simple step of rank's block pays, in its program order, when it
 * receives from `from` over SM SHM: one read round trip of its tail in its
 * own host memory (src/device/prims_simple.h waitPeer: the waiting thread
 * reads conn->tail, which shm.cc puts in the receiver's host memory, at the
 * slice's start, and the workers wait for it at the barrier after), so a
 * slice whose data landed while the block was busy still waits for one read.
 * Charged when the sender receives over SM SHM too (a 2-rank ring, a ring of
 * SHM hops only): then sender and receiver keep the same pace and every
 * slice's poll finds the tail one slice short. Where the sender receives
 * over P2P it runs ahead by up to the FIFO's steps, and one read returns a
 * tail that covers the slices after it (the waiter's cached tail,
 * connStepCache): 0, the poll part of the delivery. 0 for LL and LL128
 * (their flags ride in the data's own lines), over P2P and under --without
 * shm-poll. */
sim_ps cb_ring_shm_poll_ps(const coll_build *b, int rank, int from);
/* Does the hop from -> to use P2P (else SHM), as NCCL decides? */
int cb_uses_p2p(const coll_build *b, int from, int to);
/* Flag barrier among all ranks: for each rank, wait for ready[r], send a
 * flag to every peer; done[r] is the task after which rank r saw all. With
 * b->period only ranks r < period have ready[r] and done[r]; a flag from rank
 * r waits for ready[r mod period]. */
int cb_barrier(coll_build *b, const int *ready, int *done);
/* A builder that adds its graph through a generator (sim/sched.h
 * sched_generate) hands it here with its state (owned from now on, freed by
 * free_fn after the run): streamed, or run to completion now when b->stream
 * is 0 (the same graph in the same order). 0, or -1 with b->e set. */
int cb_generate(coll_build *b, sched_gen_fn *fn, void *state, void (*free_fn)(void *));

/* Timeline lanes (coll_lane.c): a task's role on its rank (its track),
 * toward a peer (a rank; CL_ALL every peer; CL_NONE none), and its note:
 * 0, a ring's coll_lane_step, or a chunk's or loop's number from 1. */
typedef enum coll_lane_role {
    CL_STREAM = 1, /* the span of the rank's kernel */
    CL_KERNEL,     /* kernel start, local work */
    CL_BARRIER,    /* a flag barrier's end on a rank; CL_ALL: the join of all */
    CL_FLAG,       /* a flag to a peer */
    CL_PUSH,       /* a custom kernel's writes to its peers */
    CL_PULL,       /* its loads from its peers */
    CL_SEND,       /* an NCCL send to a peer */
    CL_RECV,       /* what a receiver waits for: delivery, first line, final pass */
    CL_NVLS_UP,    /* NVLS: every rank's legs to the switch, one task */
    CL_NVLS_DOWN,  /* and back */
} coll_lane_role;
enum { CL_ALL = -1, CL_NONE = -2 };
/* Set task's lane (task < 0: nothing); returns task. */
int coll_lane(coll_build *b, int task, coll_lane_role role, int peer, uint32_t note);
/* The note of a ring's step (0-based loop and step; b->tl_steps set). */
uint32_t coll_lane_step(const coll_build *b, long loop, int step);
/* The namers of b's timeline (sim/sched.h sched_tl_names, ctx b). */
void coll_lane_names(coll_build *b, sched_tl_names *out);

int coll_build_ring(coll_build *b);
int coll_build_tree(coll_build *b);
int coll_build_oneshot(coll_build *b);
int coll_build_twoshot(coll_build *b);
int coll_build_alltoall_push(coll_build *b);
int coll_build_alltoall(coll_build *b);
int coll_build_nvls(coll_build *b);

#endif
