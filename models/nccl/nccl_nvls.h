/* NCCL's NVLS algorithm (NVLink SHARP: reductions and multicast in the
 * NVSwitch), emulated for one node from NCCL's source (docs/model.md "NVLS"):
 * whether NCCL can run it (NCCL_NVLS_ENABLE, SM 90+, every GPU on the
 * NVSwitch), its search graph (search.cc, pattern NVLS), its channels and
 * chunk (nvls.cc, enqueue.cc) and its tuning row (tuning.cc). Filled into a
 * nccl_tune by nccl_tune_new; read-only afterwards. */
#ifndef MODELS_NCCL_NCCL_NVLS_H
#define MODELS_NCCL_NCCL_NVLS_H

#include <stdio.h>

#include "models/nccl/nccl_tune.h"

struct nccl_graphfile_graph;
/* Fills nt->nvls for GPUs 0..nt->nranks-1 of t. speed[0..nspeed-1] is the
 * search's intra-node speed ladder for the version; file (or NULL) is
 * NCCL_GRAPH_FILE's graph id 3, which replaces the search. ERR_USAGE (message
 * names the reason) when env asks for NVLS (NCCL_NVLS_ENABLE=1) and it cannot run. */
int nccl_nvls_setup(nccl_tune *nt, const topo *t, const nccl_env *env, const float *speed,
                    int nspeed, const struct nccl_graphfile_graph *file, err *e);
/* Does the NVLS kernel exist for this collective and element type (device.h
 * ncclNvlsSupported: sums of 16..64-bit types; all-gather of any)? */
int nccl_nvls_kind_ok(coll_kind kind, coll_dtype dtype);
/* NCCL's predicted NVLS time of an operation (ncclTopoGetAlgoTime), us; < 0
 * when NVLS is off for it. */
float nccl_nvls_time_us(const nccl_tune *nt, coll_kind kind, coll_dtype dtype, uint64_t bytes);
/* The chunk one head's reduce warps move per loop (enqueue.cc
 * calcCollChunking for NVLS on one node), bytes. */
int nccl_nvls_chunk_bytes(const nccl_tune *nt, uint64_t bytes);
/* NCCL_DEBUG-style lines on f: support, graph, channels, tuning row. */
void nccl_nvls_explain(const nccl_tune *nt, FILE *f);

#endif
