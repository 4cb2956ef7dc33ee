/* Import of PyTorch profiler / Kineto Chrome-trace JSON (plain or gzipped,
 * one file per rank) into the collsim trace format. Each file is parsed as a
 * stream (yajl over zlib's gzread, 64 KiB chunks, no DOM): only compact
 * records of GPU kernels, launch calls, step annotations and sized
 * communication ops are kept, so memory grows with the kernel count, not
 * with the file's text. docs/traces.md describes the rules. */
#ifndef TRACES_KINETO_H
#define TRACES_KINETO_H

#include <stdint.h>

#include "models/coll/coll.h"
#include "sim/err.h"
#include "traces/trace.h"

/* Where a collective's size came from, in order of preference. */
typedef enum kineto_size_src {
    KSIZE_NONE, KSIZE_KERNEL_ARGS, KSIZE_PARAM_COMMS, KSIZE_ANNOTATION, KSIZE_CPU_OP,
    KSIZE_N
} kineto_size_src;

/* One communication kernel of a rank, in start order. */
typedef struct kineto_comm {
    coll_kind kind;
    coll_algo algo;          /* ALGO_ONESHOT/TWOSHOT for custom kernels, else AUTO */
    uint64_t bytes;          /* 0 if unknown */
    int elem_bytes;          /* element size of the dtype, 0 if unknown */
    kineto_size_src src;
    int group;               /* group size from the args, 0 if unknown */
    int64_t ts_ns, dur_ns;   /* as captured (absolute clock of the file) */
    int stream;              /* Kineto stream id */
} kineto_comm;

/* A rank's host side as captured: its CPU ops and CUDA runtime calls. */
typedef struct kineto_host {
    long cpu_ops;            /* cpu_op events */
    double cpu_op_us;        /* their summed duration (nested ops counted each) */
    long runtime_calls;      /* cuda_runtime / cuda_driver events */
    long launches;           /* kernel launch calls (cudaLaunchKernel, hipLaunchKernel, ...) */
    long graph_launches;     /* cudaGraphLaunch / hipGraphLaunch */
    long copies;             /* async memcpy / memset calls */
    long syncs;              /* blocking calls: stream/device/event sync, sync copies */
    double sync_us;          /* time the host spent blocked in them */
} kineto_host;

typedef struct kineto_rank kineto_rank;

/* Parse one file. ERR_SYSTEM if unreadable, ERR_INPUT "file:line: what" for
 * bad JSON or a truncated / corrupted gzip stream. */
int kineto_load(const char *path, kineto_rank **out, err *e);
void kineto_free(kineto_rank *k);                      /* NULL ok */
int kineto_rank_id(const kineto_rank *k);              /* distributedInfo.rank, -1 */
int kineto_world_size(const kineto_rank *k);           /* -1 if absent */
long kineto_nevents(const kineto_rank *k);             /* traceEvents entries */
long kineto_nkernels(const kineto_rank *k);            /* kernels + memcpy + memset */
long kineto_nsteps(const kineto_rank *k);              /* step annotations used */
long kineto_ncomm(const kineto_rank *k);
const kineto_comm *kineto_comm_at(const kineto_rank *k, long i);
const kineto_host *kineto_host_of(const kineto_rank *k);

typedef struct kineto_opts {
    double tokens_per_cycle; /* tokens per cycle when a step does not say (default 1) */
    uint64_t default_bytes;  /* size for collectives with none found; 0 = leave 0 */
} kineto_opts;

enum { KINETO_ASSUMED_MAX = 8 };

typedef struct kineto_summary {
    int nranks, rank;        /* files, rank whose program was written */
    long cycles, kernels, comm, sized, dropped;
    double max_end_spread_us;/* multi-rank: end-time spread of matched collectives */
    double max_start_spread_us; /* multi-rank: start-time spread (the ranks' skew) */
    double mean_start_spread_us;
    double wait_us;          /* written rank: total waiting inside collectives */
    long host_ops, syncs;    /* written: host gaps and syncs */
    double host_us;          /* written rank: host work written */
    int nassumed;            /* what the capture did not say, as written ("# assumed:") */
    char assumed[KINETO_ASSUMED_MAX][256];
} kineto_summary;

/* Write the program of the lowest rank of ranks[0..n-1] (already loaded) to
 * w, what it assumed first as "# assumed: ..." comments (also in s), then
 * w in the order its CPU issued it: host gaps between runtime calls as host
 * ops, blocking calls as sync, each GPU op with its launch call's CPU time
 * (issue_us), GPU-side gaps left as idle; matching the k-th collective of
 * every rank: measured_us = the shortest duration across ranks (the
 * transfer), wait_us = the rest (the others' skew; "meta skew captured").
 * ERR_INPUT if the ranks' collective sequences disagree. */
int kineto_write(kineto_rank *const *ranks, int n, const kineto_opts *o,
                 trace_writer *w, kineto_summary *s, err *e);

#endif
