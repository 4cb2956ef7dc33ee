/* What-if: an inference scenario (model, serving mode, allreduce, fabric) as
 * a plain value, its knobs set by name, and a run that builds the scenario's
 * cycle (plain decode step or EAGLE-3 draft + verify cycle) and replays it
 * (traces/replay.h) to predict tok/s, cycle time and the breakdown. The
 * compute model and the built-in scenario's derivation: docs/scenario.md.
 * Scenario files: docs/formats.md "Scenario". A whatif_ctx caches topologies
 * and collective predictions across runs; it is not thread-safe (one per
 * thread). */
#ifndef TRACES_WHATIF_H
#define TRACES_WHATIF_H

#include <stdio.h>

#include "models/coll.h"
#include "sim/err.h"

#define WHATIF_STR 256
#define WHATIF_HIST_MAX 16

typedef enum whatif_mode { WHATIF_DECODE, WHATIF_EAGLE3 } whatif_mode;

typedef struct whatif_scenario {
    char name[WHATIF_STR];       /* scenario name (for reports) */
    char topo[WHATIF_STR];       /* topology preset or file */
    char calib[WHATIF_STR];      /* calibration profile applied to topo ("" = none) */
    whatif_mode mode;
    /* target model */
    int layers;                  /* decoder layers */
    int hidden;                  /* hidden size (allreduce bytes per token = hidden x dtype) */
    coll_dtype dtype;            /* activation dtype */
    int allreduces_per_layer;    /* 2: after attention and after the MLP/MoE */
    int kernels_per_layer;       /* GPU kernels per layer (launch/graph overhead) */
    double weight_us_per_layer;  /* compute: weight-streaming term per forward */
    double token_us_per_layer;   /* compute: per-token term per forward */
    /* serving */
    int tp;                      /* tensor-parallel size = ranks in each allreduce */
    int batch;                   /* concurrent requests: tokens per forward x batch */
    int graph;                   /* 1 = CUDA graphs (one launch per forward) */
    coll_algo allreduce;         /* ALGO_AUTO = as NCCL would choose */
    nccl_env env;                /* NCCL settings (nccl_proto, nccl_p2p_level, ...) */
    double allreduce_us;         /* > 0: force every allreduce to take this long */
    /* EAGLE-3 */
    int draft_tokens;            /* tokens verified per cycle */
    int draft_steps;             /* draft-head forwards per cycle */
    double draft_step_us;        /* compute of one draft forward */
    int draft_allreduces;        /* allreduces per draft forward (0: replicated head) */
    int draft_kernels;           /* GPU kernels per draft forward */
    double accept_len;           /* mean tokens produced per cycle (>= 1) */
    int accept_nhist;            /* > 0: accept_hist[i] = P(i+1 tokens); overrides mean */
    double accept_hist[WHATIF_HIST_MAX];
    /* compute model details (docs/scenario.md) */
    int compute_tp;              /* tp the compute terms hold for; scaled by compute_tp/tp */
    int moe_experts, moe_topk;   /* routed experts: the per-token term saturates as
                                    distinct experts run out (0 = linear in tokens) */
    /* Derivation of the compute terms from one measured point, done at run
     * time when weight_us_per_layer, token_us_per_layer or draft_step_us is
     * < 0: plain decode, batch 1, on calib_topo with calib_env and ring. */
    double calib_tok_per_s;
    char calib_topo[WHATIF_STR];
    nccl_env calib_env;
    double weight_MB_per_layer;  /* per GPU: weights read once per forward (split) */
    double token_MB_per_layer;   /* per GPU: weights read per token (routed experts) */
    double draft_MB;             /* per GPU: draft head weights read per draft forward */
} whatif_scenario;

typedef struct whatif_result {
    double tok_per_s;            /* tokens per second over all requests */
    double cycle_us;             /* one cycle (decode step or draft+verify) */
    double tokens_per_cycle;     /* accepted tokens x batch */
    double compute_us, comm_us, launch_us, idle_us;  /* breakdown of cycle_us */
    double allreduce_us;         /* one target-forward allreduce */
    coll_algo algo;              /* what that allreduce ran */
    coll_proto proto;
    int channels;
    double weight_us_per_layer;  /* the compute terms used (derived or given) */
    double token_us_per_layer;
    double draft_step_us;
} whatif_result;

typedef struct whatif_ctx whatif_ctx;

whatif_ctx *whatif_ctx_new(void);                  /* NULL on OOM */
void whatif_ctx_free(whatif_ctx *c);               /* NULL ok */
/* Built-in name (e.g. "kimi-k2-eagle3-8x-pcie5") or a scenario file.
 * ERR_USAGE for an unknown name, ERR_INPUT "file:line: what" for bad files. */
int whatif_scenario_load(const char *name_or_path, whatif_scenario *out, err *e);
/* Set knob key to value (keys: whatif_key_name). ERR_USAGE on an unknown
 * key or a bad value. Keys of the form NCCL_X set that NCCL variable. */
int whatif_set(whatif_scenario *s, const char *key, const char *value, err *e);
/* Current value of key as text into buf (n bytes). ERR_USAGE if unknown. */
int whatif_get(const whatif_scenario *s, const char *key, char *buf, size_t n, err *e);
/* Run one scenario. Errors: ERR_USAGE for an impossible configuration
 * (tp larger than the topology), ERR_INPUT/ERR_SYSTEM from the topology. */
/* The next whatif_run_ctx writes its cycle as a Perfetto timeline into f
 * (borrowed; the layout of replay --timeline, docs/formats.md "Timelines"). */
void whatif_ctx_timeline(whatif_ctx *c, FILE *f);
int whatif_run_ctx(whatif_ctx *c, const whatif_scenario *s, whatif_result *out, err *e);
int whatif_run(const whatif_scenario *s, whatif_result *out, err *e);  /* fresh ctx */
/* Break-even: the value of key at which s in EAGLE-3 mode gives the tok/s of
 * s in decode mode: "accept_len" (mean accepted tokens), or "allreduce_us"
 * (time of every EAGLE-3 allreduce, decode as predicted). ERR_CHECK if there
 * is none in range (e.g. EAGLE-3 loses even with every draft token accepted). */
int whatif_solve(whatif_ctx *c, const whatif_scenario *s, const char *key,
                 double *value, err *e);
/* Fill the compute terms that are < 0 (weight_us_per_layer,
 * token_us_per_layer, draft_step_us) from the calibration point, in place. */
int whatif_derive(whatif_ctx *c, whatif_scenario *s, err *e);
/* The ops of one cycle producing `tokens` tokens (traces/trace.h), passed to
 * fn in order; the compute terms must be >= 0 (whatif_derive). */
struct trace_op;
typedef int whatif_op_fn(void *arg, const struct trace_op *op, err *e);
int whatif_emit_cycle(const whatif_scenario *s, double tokens, whatif_op_fn *fn, void *arg,
                      err *e);
/* Knob names and one-line descriptions, i = 0.. (NULL past the end). */
const char *whatif_key_name(int i);
const char *whatif_key_desc(int i);
/* Built-in scenario names, i = 0.. (NULL past the end). */
const char *whatif_builtin_name(int i);

#endif
