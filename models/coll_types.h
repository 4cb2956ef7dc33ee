/* The vocabulary of a collective request, shared by the NCCL emulation
 * (models/nccl/) and the collective algorithms (models/coll/): which
 * collective, which algorithm and protocol, the element type, and the NCCL
 * environment settings that change NCCL's decisions. Types only, no code, so
 * both folders can include it without including each other. */
#ifndef MODELS_COLL_TYPES_H
#define MODELS_COLL_TYPES_H

#include <stdint.h>

typedef enum coll_kind {
    COLL_ALLREDUCE, COLL_REDUCESCATTER, COLL_ALLGATHER, COLL_BROADCAST,
    COLL_ALLTOALL, COLL_NKINDS
} coll_kind;

typedef enum coll_algo {
    ALGO_AUTO, ALGO_RING, ALGO_TREE, ALGO_ONESHOT, ALGO_TWOSHOT,
    ALGO_ONESHOT_PUSH, ALGO_TWOSHOT_PUSH,
    ALGO_NVLS,          /* NCCL's NVLink SHARP (multicast through the NVSwitch) */
    ALGO_NALGOS
} coll_algo;

typedef enum coll_proto { PROTO_AUTO, PROTO_LL, PROTO_LL128, PROTO_SIMPLE, PROTO_N } coll_proto;

/* nccl-tests' datatypes; only the element size matters to the model. */
typedef enum coll_dtype {
    DTYPE_BF16, DTYPE_FP16, DTYPE_FP32, DTYPE_INT8, DTYPE_UINT8, DTYPE_INT32, DTYPE_UINT32,
    DTYPE_INT64, DTYPE_UINT64, DTYPE_FP64, DTYPE_FP8E4M3, DTYPE_FP8E5M2, DTYPE_N
} coll_dtype;

/* NCCL environment knobs that change what NCCL does (docs/model.md). */
typedef struct nccl_env {
    int p2p_level;      /* NCCL_P2P_LEVEL as a path type; -1 = NCCL's default */
    int p2p_disable;    /* NCCL_P2P_DISABLE */
    int shm_disable;    /* NCCL_SHM_DISABLE */
    coll_algo algo;     /* NCCL_ALGO (ring/tree/nvls), ALGO_AUTO if unset */
    coll_proto proto;   /* NCCL_PROTO, PROTO_AUTO if unset */
    int min_channels, max_channels;   /* NCCL_MIN/MAX_NCHANNELS, 0 = default */
    int64_t buffsize_bytes;           /* NCCL_BUFFSIZE, 0 = default */
    int nthreads;                     /* NCCL_NTHREADS, 0 = default */
    int ignore_disabled_p2p;          /* NCCL_IGNORE_DISABLED_P2P (0, 1, 2) */
    int shm_memcpy;                   /* NCCL_SHM_USE_CUDA_MEMCPY */
    int shm_memcpy_mode;              /* NCCL_SHM_MEMCPY_MODE: 1 send side, 2 receive
                                         side, 3 both; 0 = NCCL's default (1) */
    int nvls_enable;                  /* NCCL_NVLS_ENABLE: 0 off (collsim's default, as
                                         hwcheck measures), 1 on (refused where NVLS
                                         cannot run), 2 NCCL's auto (on where it can) */
    int nvls_nchannels;               /* NCCL_NVLS_NCHANNELS, 0 = NCCL's default */
    char graph_file[256];             /* NCCL_GRAPH_FILE, "" = none: the search's graphs */
    int version;                      /* NCCL version emulated (NCCL_VERSION, --nccl):
                                         index of nccl_tune's table, 0 = newest */
    int search_every_step;            /* not NCCL's: 1 runs the ring and tree search step by
                                         step, without the shortcuts that give the same
                                         result (models/nccl/nccl_tune.c; tests compare) */
} nccl_env;

/* Names as reports print them and parsers read them (case-insensitive;
 * dtype also takes nccl-tests' names, coll_dtype_nccl_name); NULL or -1 when
 * out of range. */
const char *coll_algo_name(coll_algo a);
const char *coll_proto_name(coll_proto p);
const char *coll_dtype_name(coll_dtype d);
const char *coll_dtype_nccl_name(coll_dtype d);          /* bfloat16, half, float, int8, ... */
const char *coll_kind_name(coll_kind k);
int coll_algo_parse(const char *s, coll_algo *out);      /* 0 ok, -1 unknown */
int coll_proto_parse(const char *s, coll_proto *out);
int coll_dtype_parse(const char *s, coll_dtype *out);
int coll_kind_parse(const char *s, coll_kind *out);
int coll_dtype_size(coll_dtype d);                        /* bytes; 0 out of range */
/* nccl-tests' busbw / algbw factor: allreduce 2(n-1)/n, broadcast 1, the others (n-1)/n. */
double coll_bus_factor(coll_kind k, int nranks);

#endif
