/* NCCL's own decisions for one communicator on a collsim topology, emulated
 * from NCCL's source for a given version (docs/model.md "NCCL's decisions"):
 * its view of the machine (node and link bandwidths), the P2P level and
 * the transport of every pair, the ring and tree searches with their speed
 * ladders and fallback, the channel count after connect, the tuning tables
 * (latency, bandwidth, threads) and, per operation, the algorithm, protocol,
 * threads and channels enqueue picks. A nccl_tune is computed once per
 * (topology, ranks, settings) and is read-only afterwards. */
#ifndef MODELS_NCCL_NCCL_TUNE_H
#define MODELS_NCCL_NCCL_TUNE_H

#include <stdint.h>

#include "models/coll_types.h"
#include "models/topo/topo.h"
#include "sim/err.h"

/* The largest communicator whose search runs over every rank: NCCL's limit
 * of local ranks (NCCL_MAX_LOCAL_RANKS, src/include/device.h; NVL72). A
 * larger one takes the graph the search finds on its first
 * NCCL_TUNE_MAX_RANKS GPUs, tuned for all its ranks (docs/model.md "NCCL's
 * decisions"). */
enum { NCCL_TUNE_MAX_RANKS = 72, NCCL_TUNE_MAX_CHANNELS = 64 };

/* Emulated versions; index 0 is the newest and the default. */
int nccl_tune_nversions(void);
const char *nccl_tune_version_name(int v);    /* "2.30"; NULL past the end */
const char *nccl_tune_version_tag(int v);     /* the source tag read, "v2.30.7-1" */
/* "2.28" or "2.28.9" -> index; -1 if not emulated. */
int nccl_tune_version_parse(const char *s);
/* "2.30, 2.28" into buf (for messages); returns buf. */
const char *nccl_tune_version_list(char *buf, size_t size);

/* One searched graph (src/graph/search.cc ncclTopoCompute). */
typedef struct nccl_tune_graph {
    int found;            /* 0: no speed fitted, NCCL fell back to PCI order */
    int nchannels;        /* channels of the search (after DupChannels) */
    int search_channels;  /* channels found before DupChannels */
    float search_bw_GBps; /* their per-channel speed */
    float bw_intra_GBps;  /* per channel, as NCCL rates it */
    int type_intra;       /* topo_path of the worst hop allowed */
    int same_channels;
    int type_inter;       /* NCCL's typeInter on one node: PIX, SYS after the fallback */
    int from_file;        /* loaded from NCCL_GRAPH_FILE (models/nccl/nccl_graphfile.c) */
    int order[NCCL_TUNE_MAX_RANKS]; /* channel 0: ranks in ring/chain order */
} nccl_tune_graph;

/* NCCL's NVLS algorithm for the communicator (models/nccl/nccl_nvls.c):
 * its search graph (one channel per head, every GPU a head), the kernel's
 * channels and chunk, and its tuning row (NVLSTree is off on one node). */
typedef struct nccl_tune_nvls {
    int support;           /* comm->nvlsSupport after the search: NVLS can run */
    const char *why;       /* why not, or how it was enabled */
    int heads;             /* search channels = heads (0: the search found none) */
    float bw_intra_GBps, bw_inter_GBps;   /* the search's speeds per channel */
    float link_GBps;       /* NCCL's rating of the slowest GPU <-> NVSwitch link */
    int from_file;         /* the graph came from NCCL_GRAPH_FILE */
    int nchannels;         /* comm->nvlsChannels: thread blocks of an NVLS kernel */
    int chunk_bytes;       /* NCCL_NVLS_CHUNKSIZE (128 KiB) */
    float lat_us[COLL_NKINDS], bw_GBps[COLL_NKINDS];   /* tuning; bw 0 = off */
} nccl_tune_nvls;

typedef struct nccl_tune {
    int version, nranks;
    int searched;          /* ranks the search and the pair tables below cover:
                              nranks, or NCCL_TUNE_MAX_RANKS above it */
    int sm;                /* compute capability x10 used by NCCL */
    topo_cpu cpu;
    int p2p_level;         /* effective NCCL_P2P_LEVEL as a path type */
    const char *p2p_level_why;   /* "default", "AMD CPU, <= 2 GPUs", "NCCL_P2P_LEVEL", ... */
    float socket_GBps;     /* NCCL's inter-CPU bandwidth for this CPU */
    float max_bw_GBps, total_bw_GBps;   /* system->maxBw / totalBw */
    float speed_first_GBps, speed_last_GBps;  /* the ladder as the search used it */
    /* Per ordered rank pair: NCCL's path type before the P2P check, its
     * bandwidth after any detour through a CPU, and the transport. */
    uint8_t path_type[NCCL_TUNE_MAX_RANKS][NCCL_TUNE_MAX_RANKS];
    float path_bw_GBps[NCCL_TUNE_MAX_RANKS][NCCL_TUNE_MAX_RANKS];
    uint8_t p2p[NCCL_TUNE_MAX_RANKS][NCCL_TUNE_MAX_RANKS];
    /* The NVML status (topo_p2p) that turned a pair within the level to SHM, 0 if none. */
    uint8_t p2p_nvml[NCCL_TUNE_MAX_RANKS][NCCL_TUNE_MAX_RANKS];
    nccl_tune_graph ring, tree;
    int nchannels;         /* comm->nChannels after connect (x2, env limits) */
    /* Tuning tables per collective kind, [0 tree, 1 ring][LL, LL128, Simple]:
     * latency in us and algorithm bandwidth in GB/s (0 = not enabled). */
    float lat_us[COLL_NKINDS][2][3], bw_GBps[COLL_NKINDS][2][3];
    int max_threads[2][3], thread_threshold[2][3];
    int hw_nvlink[2];      /* the latency row used: 1 NVLink, 0 PCI */
    nccl_tune_nvls nvls;
    /* Point-to-point (all-to-all): paths.cc ncclTopoComputeP2pChannels and
     * init.cc computeBuffSizes. */
    int p2p_nchannels;     /* comm->p2pnChannels */
    int p2p_per_peer;      /* comm->p2pnChannelsPerPeer */
    int p2p_chunk_bytes;   /* comm->p2pChunkSize (Simple's step) */
    int all_nvlink;        /* comm->isAllNvlink */
    /* Not NCCL's: a digest of the search's course (the steps each try took,
     * then the figures left on the links), so that tests can tell two
     * searches apart that end in the same graphs. */
    uint64_t search_digest;
} nccl_tune;

/* Computes NCCL's view for GPUs 0..nranks-1 of t under env. ERR_USAGE
 * (message names the setting) if NCCL could not connect the ranks. */
int nccl_tune_new(const topo *t, int nranks, const nccl_env *env, nccl_tune **out, err *e);
void nccl_tune_free(nccl_tune *nt);           /* NULL ok */

/* One operation as NCCL enqueues it (src/enqueue.cc). */
typedef struct nccl_tune_op {
    coll_algo algo;        /* ALGO_RING, ALGO_TREE or ALGO_NVLS */
    coll_proto proto;
    float time_us[2][3];   /* NCCL's predicted time per [tree, ring][proto], <0 off */
    float nvls_time_us;    /* NVLS/Simple's, <0 off */
    int max_channels;      /* topoGetAlgoInfo's nc */
    int nthreads;          /* threads per channel (nWarps x 32) */
    int nchannels;         /* channels the work is spread over */
} nccl_tune_op;

/* One rank's sends of an all-to-all as NCCL enqueues them (enqueue.cc
 * addP2pToPlan): grouped send/recv, peer_bytes to every peer. */
typedef struct nccl_tune_p2p {
    coll_proto proto;      /* PROTO_LL or PROTO_SIMPLE */
    int min_channels;      /* nChannelsMin of the plan */
    int nchannels;         /* channels one send is split over */
} nccl_tune_p2p;

void nccl_tune_p2p_op(const nccl_tune *nt, uint64_t peer_bytes, nccl_tune_p2p *out);

/* NCCL's choice for a collective of `bytes` (nccl-tests size) of dtype
 * elements (NVLS runs only some). algo/proto restrict the choice as
 * NCCL_ALGO/NCCL_PROTO would (AUTO: no restriction,
 * besides env's own). ERR_USAGE when nothing is enabled, or for an
 * all-to-all (nccl_tune_p2p_op). */
int nccl_tune_op_choose(const nccl_tune *nt, coll_kind kind, uint64_t bytes, coll_dtype dtype,
                        coll_algo algo, coll_proto proto, nccl_tune_op *out, err *e);

/* NCCL's NCCL_DEBUG=INFO style account, on f, of the communicator (if
 * comm) and of one operation (op may be NULL; an all-to-all's is computed
 * here). */
void nccl_tune_explain(const nccl_tune *nt, const topo *t, coll_kind kind, uint64_t bytes,
                       const nccl_tune_op *op, int comm, FILE *f);

/* For tests: how many tree tries this process answered from a ring's like
 * them (no NVSwitch, every pair's reverse type at most its own, the ring's
 * try completed nothing and never reached its chains' last GPU). */
unsigned long nccl_tune_tree_tries_from_ring(void);

#endif
