/* Replay: predict a trace on a topology. Ops are fed one at a time (so a
 * trace file streams through in constant memory). Each rank has a CPU lane
 * (host work, launch calls, syncs) and GPU streams; each stream is a chain,
 * a phase start joins a rank's streams, OP_WAIT joins two, OP_SYNC makes the
 * CPU wait for its GPU, an eager kernel or a graph launch costs the CPU a
 * launch and the GPU cannot start it before (an eager NCCL collective NCCL's
 * host work per call on top, a captured one its graph node), and a collective starts when
 * the last rank's kernel is ready. Compute and idle take their duration
 * (scaled), a collective its coll_predict time (identical requests are
 * predicted once). The cycle time is the critical path; its breakdown
 * (compute, comm, launch, idle, wait, host) follows each rank's path and is
 * averaged over ranks, so the parts add up to the cycle time (docs/traces.md,
 * "Replay model and limits"). */
#ifndef TRACES_REPLAY_H
#define TRACES_REPLAY_H

#include <stdint.h>
#include <stdio.h>

#include "models/coll/coll.h"
#include "models/topo/topo.h"
#include "sim/err.h"
#include "sim/json.h"
#include "traces/trace.h"

typedef struct replay_opts {
    coll_algo allreduce;   /* override every allreduce's algorithm; ALGO_AUTO = trace's */
    int nccl_allreduce;    /* 1 (with allreduce ALGO_AUTO): every allreduce through NCCL,
                              as NCCL chooses, whatever the trace's algo= says (hwcheck
                              replay --allreduce nccl) */
    coll_proto proto;      /* PROTO_AUTO = as NCCL would */
    nccl_env env;          /* NCCL settings for NCCL collectives */
    int env_given;         /* 1 = env replaces the trace's "meta nccl_env" */
    int graph;             /* -1 = as the trace says, 0 = eager, 1 = CUDA graphs */
    double compute_scale;  /* multiply compute durations (another GPU); 1 = as is */
    int measured;          /* 1 = use a collective's measured_us when it has one */
    double coll_us;        /* > 0: every allreduce takes this long (what-if) */
    double launch_us;      /* >= 0: per-kernel launch cost instead of the topology's */
    double graph_node_us;  /* >= 0: per graph node cost instead of the topology's */
    int captured_overhead; /* 1 = launch costs are already in the trace's gaps
                              (imported traces: "meta overhead captured") */
    double op_host_us;     /* eager: the framework's CPU work per kernel besides the
                              launch call (PyTorch dispatch, Python); 0 = none */
    double coll_host_us;   /* eager: the framework's CPU work per NCCL collective call
                              besides NCCL's own call (PyTorch's c10d layer of
                              dist.all_reduce); < 0 = op_host_us, as for a kernel */
    double sync_us;        /* > 0: CPU cost of each OP_SYNC after the GPU is done
                              (the D2H copy and the wake-up); <= 0: none */
    double host_jitter;    /* > 0: every host item (host op, eager kernel's CPU cost,
                              graph launch) costs each rank an extra Exp(mean
                              host_jitter x cost): ranks then differ (skew) and are
                              simulated one by one; 0 = one rank for all */
    int ranks;             /* ranks the trace stands for (0: the topology's GPUs),
                              at most REPLAY_RANKS_MAX simulated */
    int captured_skew;     /* 1 = a collective's captured wait_us delays its start
                              (imported multi-rank traces: "meta skew captured") */
} replay_opts;

#define REPLAY_RANKS_MAX 64

/* The parts of a critical path. */
enum { REPLAY_COMPUTE, REPLAY_COMM, REPLAY_LAUNCH, REPLAY_IDLE, REPLAY_WAIT, REPLAY_HOST,
       REPLAY_NPARTS };

/* Totals over the whole replay; *_us per cycle are averages. */
typedef struct replay_result {
    long cycles;
    double tokens;
    double total_us;       /* sum of cycle times */
    double cycle_us;       /* total_us / cycles */
    double tok_per_s;      /* tokens / total time */
    double compute_us, comm_us, launch_us, idle_us;  /* per cycle, critical path */
    double wait_us;        /* per cycle: waiting for other ranks (rendezvous skew) */
    double host_us;        /* per cycle: the GPU waiting for host work and syncs */
    double part_us[REPLAY_NPARTS];                   /* the same, by REPLAY_* index */
    int ranks;             /* ranks simulated */
    double phase_us[PHASE_N];                        /* per cycle, by phase */
    double phase_part_us[PHASE_N][REPLAY_NPARTS];    /* per cycle, phase x part */
    /* Per cycle and phase, the collective kernels as a profile times them:
     * from the kernel's start on its rank's stream to its end, i.e. waiting
     * for the slowest rank plus the transfer. */
    double phase_colls[PHASE_N];                     /* collectives per cycle */
    double phase_coll_us[PHASE_N];                   /* their durations summed, mean over
                                                        ranks */
    double phase_coll_max_us[PHASE_N];               /* the longest one (any rank) */
    uint64_t ops, colls;
    uint64_t predictions;  /* distinct collectives actually predicted */
    int trace_ranks;       /* replay_file: the trace's meta ranks, 0 if it names none */
    int tokens_stated;     /* replay_file: 0 if the trace says its cycles count no tokens
                              (meta tokens none: a training capture), else 1 */
} replay_result;

typedef struct replay replay;

/* Defaults: no overrides, graph -1, compute_scale 1, coll_us 0, launch -1,
 * no host jitter, ranks 0 (the topology's). */
void replay_opts_init(replay_opts *o);
/* A replay on topology t through predictor c (both borrowed). NULL on OOM. */
replay *replay_new(const topo *t, coll_ctx *c, const replay_opts *o);
void replay_free(replay *r);                         /* NULL ok */
/* Feed one op (ops before the first OP_CYCLE form an implicit cycle of 1
 * token). ERR_USAGE/ERR_INPUT from the predictor for an impossible one. */
int replay_op(replay *r, const trace_op *op, err *e);
/* Close the last cycle and fill out. The replay can be fed again after. */
int replay_finish(replay *r, replay_result *out, err *e);
/* Record the first cycle as Chrome-trace / Perfetto JSON into f (borrowed),
 * one track per GPU and stream; call before feeding ops. */
void replay_timeline(replay *r, FILE *f);
/* The same, but only GPU 0's events as process pid named label, into an
 * open timeline document (to merge several replays: whatif's variants). */
void replay_timeline_part(replay *r, timeline *doc, int pid, const char *label);
/* Replay a trace file from start to end: trace_open + replay_op + finish.
 * The file's "meta graph" is honoured unless o->graph >= 0, its "meta
 * nccl_env" (NCCL_X=Y,...) unless o->env_given. out->trace_ranks and
 * out->tokens_stated say what the trace's meta lines claim, for the caller's
 * warnings (a 2-rank capture replayed on 8 GPUs). */
int replay_file(const char *path, const topo *t, coll_ctx *c,
                const replay_opts *o, FILE *timeline, replay_result *out, err *e);
/* replay_file on a trace already open (read once: a pipe); closes tr. */
int replay_reader(trace_reader *tr, const char *path, const topo *t, coll_ctx *c,
                  const replay_opts *o, FILE *timeline, replay_result *out, err *e);

#endif
