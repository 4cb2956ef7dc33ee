/* NCCL_GRAPH_FILE: the search results of NCCL_GRAPH_DUMP_FILE read back
 * as NCCL reads them (src/graph/xml.cc ncclTopoGetXmlGraphFromFile,
 * src/graph/search.cc ncclTopoGetGraphFromXml): <graphs version="1">
 * holding <graph id=...> elements, each with <channel>s of <gpu dev=... [rank=...]>.
 * A graph whose id matches a search (0 ring, 1 tree, 3 NVLS) replaces that
 * search's result when it has channels. docs/formats.md "NCCL graph file". */
#ifndef MODELS_NCCL_NCCL_GRAPHFILE_H
#define MODELS_NCCL_NCCL_GRAPHFILE_H

#include "models/nccl/nccl_tune.h"

enum { NCCL_GRAPHFILE_MAX_GRAPHS = 8 };

typedef struct nccl_graphfile_graph {
    int id, pattern, crossnic, nchannels, same_channels;
    float speed_intra_GBps, speed_inter_GBps, latency_inter_us;
    int type_intra, type_inter;  /* path types (topo_path numbering: LOC 0 .. SYS 9) */
    int order[NCCL_TUNE_MAX_RANKS];  /* channel 0: ranks in order (NVLS: its head first) */
    long line;                   /* of the <graph> element */
} nccl_graphfile_graph;

typedef struct nccl_graphfile {
    int ngraphs;
    nccl_graphfile_graph g[NCCL_GRAPHFILE_MAX_GRAPHS];
} nccl_graphfile;

/* Reads path for a communicator of nranks GPUs (GPU i = CUDA device i =
 * rank i). ERR_INPUT "path:line: what" for a file NCCL would refuse or
 * misread: wrong version, a missing attribute, an unknown path type, a GPU
 * not in the communicator, a ring or tree channel that is not every rank
 * once, nchannels unlike the count of <channel>s. */
int nccl_graphfile_read(const char *path, int nranks, nccl_graphfile *out, err *e);
/* The graph for search id, or NULL (none, or no channels: NCCL searches). */
const nccl_graphfile_graph *nccl_graphfile_find(const nccl_graphfile *f, int id);

#endif
