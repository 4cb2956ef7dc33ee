/* Collectives: a request (kind, bytes, ranks, algorithm, protocol, NCCL
 * settings) is turned by its algorithm's builder into a task graph on the
 * engine over a topology, and run; the result is the predicted time and
 * what was chosen. Algorithms are plug-ins in a static table (one file per
 * algorithm). coll_ctx caches results: identical requests on the same
 * topology are a pure function and are computed once. */
#ifndef MODELS_COLL_COLL_H
#define MODELS_COLL_COLL_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "models/coll_types.h"
#include "models/topo/topo.h"
#include "sim/err.h"
#include "sim/sched.h"


/* The largest message the model runs: its cost grows with the bytes (NCCL
 * steps), and no GPU holds a larger buffer twice. */
#define COLL_MAX_BYTES (UINT64_C(1) << 36)   /* 64 GiB */

typedef struct coll_req {
    coll_kind kind;
    uint64_t bytes;     /* message size as nccl-tests counts it (per rank input) */
    coll_dtype dtype;
    int nranks;         /* GPUs 0..nranks-1 of the topology */
    int root;           /* broadcast root */
    coll_algo algo;     /* ALGO_AUTO: choose as NCCL would (ring/tree) */
    coll_proto proto;
    int channels;       /* 0 = as NCCL would for the size */
    int graph;          /* launched inside a CUDA graph (node cost vs launch) */
    int registered;     /* the user buffers are registered with NCCL (ncclCommRegister, or a
                           graph capture of cuMem buffers under NCCL_GRAPH_REGISTER=1): Ring
                           Simple then writes into the peer's output and its last receive
                           copies nothing (src/register/coll_reg.cc) */
    nccl_env env;
} coll_req;

typedef struct coll_result {
    sim_ps time_ps;     /* predicted time of one collective, launch included
                           for custom kernels' barriers, not the host launch */
    coll_algo algo;     /* what ran */
    coll_proto proto;
    int channels;
    int threads;        /* NCCL threads per channel (0 for custom kernels) */
    uint64_t events;    /* engine events used */
    /* Where the time goes, along the critical path (they sum to time_ps):
     * flag barriers, fixed device costs (kernel start, local reduces), data
     * transfers at the rate each would get alone, and the rest of the
     * transfers' time: waiting for links shared with other flows or
     * collapsed by a switch (docs/model.md "Where the time goes"). */
    sim_ps barrier_ps, fixed_ps, transfer_ps, contention_ps;
} coll_result;

typedef struct coll_ctx coll_ctx;

/* A context for predictions on one topology (borrowed; must outlive it). */
coll_ctx *coll_ctx_new(const topo *t);
void coll_ctx_free(coll_ctx *c);            /* NULL ok */
/* For tests and benchmarks: stream = 0 builds each task graph whole before
 * running it instead of as the run reaches it; bundle = 0 keeps every rank's
 * flows apart even where the ranks are symmetric (defaults 1, 1). The
 * predicted times are identical; memory and engine events differ. */
void coll_ctx_tune(coll_ctx *c, int stream, int bundle);
/* For tests: on = 1 runs a barrier's flags (bundled, up to 64 ranks) as
 * delay tasks, as before they were latency edges (cb_barrier); the same
 * predictions, more tasks and events (default 0). */
void coll_ctx_flag_tasks(coll_ctx *c, int on);
/* Default request: allreduce, bf16, all GPUs, auto algo/proto/channels. */
void coll_req_init(coll_req *r, const topo *t);
/* Apply one "NCCL_X=Y" setting; ERR_USAGE on an unknown or bad one. */
int coll_env_set(nccl_env *env, const char *assignment, err *e);
/* The settings of env that differ from NCCL's defaults as "NCCL_X=Y" words
 * separated by sep (coll_env_set reads each back); "" when none. Returns buf. */
char *coll_env_format(const nccl_env *env, char sep, char *buf, size_t n);
/* 1 when vLLM and SGLang would not launch their custom allreduce on GPUs
 * 0..nranks-1 of t: more than 2 GPUs without NVLink between every pair (the
 * engines' init gate; docs/cli.md) unless forced. COLL_CUSTOM_AR_NOTE says so. */
int coll_custom_ar_gated(const topo *t, int nranks);
int coll_algo_is_custom(coll_algo a);
/* A custom kernel's local reduce of m buffers of bytes each from GPU memory
 * into one: (m + 1) x bytes at gpu_mem_Bps, 0 when that is unset. */
sim_ps coll_local_reduce_ps(const topo *t, int m, double bytes);
/* What a custom kernel's barrier costs B blocks beyond one block:
 * block_wait_ps x (H_B - 1), H_B = 1 + 1/2 + ... + 1/B (0 for B <= 1). */
sim_ps coll_block_wait_ps(sim_ps block_wait_ps, int blocks);
/* What a push kernel's barrier fence waits after its writes into the peers,
 * for them: p->fence_ack_ps where measured (> 0), else write_lat_ps (the
 * route's write latency: the acknowledgement's trip back). */
sim_ps coll_fence_ack_ps(const topo_params *p, sim_ps write_lat_ps);
/* 1 when nranks is more than NCCL's local ranks (NCCL_TUNE_MAX_RANKS): NCCL's
 * search ran on the first of them and its graph stands for all ranks;
 * COLL_DERIVED_GRAPH_NOTE says so on the output. */
int coll_nccl_graph_derived(int nranks);
#define COLL_DERIVED_GRAPH_NOTE                                                              \
    "more ranks than NCCL's 72 local ranks: NCCL's ring and tree search ran on GPUs 0-71 "   \
    "and its graph (channels, bandwidth, path type) is tuned for all ranks; each hop's "     \
    "transport follows NCCL's P2P level on the topology's path types (docs/model.md "        \
    "\"NCCL's decisions\")"
/* The host's cost of issuing one call of what res ran for q (an NCCL
 * collective, or for an all-to-all its group of 2 x nranks sends and
 * receives: topo_nccl_thread_issue_ps for a thread driving gpus of the
 * ranks, nccl-tests -g; a custom kernel: launch_us or graph_node_us).
 * Back to back, as nccl-tests and hwcheck time them, a call takes at least
 * this. */
sim_ps coll_issue_ps(const topo *t, const coll_req *q, const coll_result *res, int graph,
                     int gpus);
/* The send and receive calls NCCL's all-to-all makes on one rank (2 per
 * peer, itself included, as nccl-tests' alltoall.cu); 0 for other kinds. */
int coll_p2p_ops(coll_kind kind, int nranks);
#define COLL_CUSTOM_AR_NOTE                                                                  \
    "vLLM and SGLang would not run a custom allreduce here: on more than 2 GPUs without "   \
    "NVLink between every pair they switch it off unless forced "                          \
    "(vllm/distributed/device_communicators/custom_all_reduce.py; docs/cli.md, collsim coll)"
/* Switch fabric mechanisms off (FAB_NO_* bits of models/fabric/fabric.h) for every
 * later prediction of this context: ablations. Clears the cache. */
void coll_ctx_without(coll_ctx *c, int off);
/* Predict (cached). ERR_USAGE if the request cannot run on this topology
 * (e.g. more ranks than GPUs, 16-byte multiple needed). */
int coll_predict(coll_ctx *c, const coll_req *r, coll_result *out, err *e);
/* What one prediction put on each link of the context's fabric: the bytes
 * it carried and the time it carried any (ps). */
typedef struct coll_link_use {
    double bytes;
    sim_ps busy_ps;
} coll_link_use;
/* coll_predict, and *use gets the prediction's use of every link (*nlinks
 * entries, link i named coll_ctx_link_name(c, i)), kept in the cache entry
 * with the result (owned by c, valid until c is freed or coll_ctx_without);
 * NULL, 0 when nothing crossed the fabric (one rank, 0 bytes). A cached
 * entry without it runs once more, unbundled (the same result to the ps:
 * docs/model.md "Bundled steps"), so every rank's links are counted. */
int coll_predict_links(coll_ctx *c, const coll_req *r, coll_result *out,
                       const coll_link_use **use, int *nlinks, err *e);
const char *coll_ctx_link_name(const coll_ctx *c, int link);
/* Whether link i is one direction of a topology link (a wire, a socket link,
 * a memory bus), not one of the fabric's internal budgets (a GPU's block
 * stores, a reader's tags, a socket's peer reads). */
int coll_ctx_link_is_topo(const coll_ctx *c, int link);
/* Predictions run so far (not answered from the cache): the one collective
 * cache of the program (replay counts its distinct collectives with it). */
uint64_t coll_ctx_computed(const coll_ctx *c);
/* Same, without the cache, also writing a Perfetto timeline if tl != NULL. */
int coll_predict_timeline(coll_ctx *c, const coll_req *r, coll_result *out,
                          FILE *tl, err *e);
/* NCCL's decisions for r (the emulated version's rules and numbers, in the
 * spirit of NCCL_DEBUG=INFO NCCL_DEBUG_SUBSYS=TUNING) written to f: the
 * communicator's part too if comm, then the operation's. */
int coll_explain(coll_ctx *c, const coll_req *r, int comm, FILE *f, err *e);


#endif
