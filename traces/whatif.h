/* What-if: an inference scenario (model, serving mode, allreduce, fabric) as
 * a plain value, its knobs set by name, and a run that builds the scenario's
 * cycle (plain decode step or EAGLE-3 draft + verify cycle) and replays it
 * (traces/replay.h) to predict tok/s, cycle time and the breakdown. Compute
 * is the weight and KV bytes a forward reads (from the model's published
 * configuration) over the GPU's memory bandwidth times an efficiency; the
 * free parameters are fitted to observed points (whatif_calibrate). Model
 * and derivation: docs/scenario.md; files: docs/formats.md "Scenario". A
 * whatif_ctx caches topologies and collective predictions across runs; it
 * is not thread-safe (one per thread). */
#ifndef TRACES_WHATIF_H
#define TRACES_WHATIF_H

#include <stdint.h>
#include <stdio.h>

#include "models/coll/coll.h"
#include "sim/err.h"
#include "sim/json.h"
#include "traces/trace.h"

#define WHATIF_STR 256
#define WHATIF_HIST_MAX 16
#define WHATIF_OBS_MAX 8
#define WHATIF_FIT_MAX 8
#define WHATIF_OBS_STR 1024
#define WHATIF_AR_SD 0.15        /* an observed allreduce kernel's default relative sd */

typedef enum whatif_mode { WHATIF_DECODE, WHATIF_EAGLE3 } whatif_mode;

/* An observed point: the scenario with `set` ("k=v,k=v") applied gave
 * tok_per_s, known to rel_sd (relative standard deviation). `set` names the
 * box it was seen on (topo, calib, tp, batch, launch modes: whatif_observe
 * pins them), so changing the scenario's box never refits the new box to it. */
typedef struct whatif_obs {
    char set[WHATIF_OBS_STR];
    double tok_per_s;
    double rel_sd;
    int check;                   /* 1: a check only, left out of the fit (check=1) */
    /* A profile's figure: one target-forward allreduce kernel (verify_ar_us
     * or decode_ar_us, us; transfer plus the wait for the slowest rank), to
     * ar_rel_sd; ar_us < 0: none. It checks each hypothesis, never fitted. */
    double ar_us;
    double ar_rel_sd;
    int ar_verify;               /* 1: given as verify_ar_us, 0: decode_ar_us */
} whatif_obs;

typedef struct whatif_scenario {
    char name[WHATIF_STR];       /* scenario name (for reports) */
    char topo[WHATIF_STR];       /* topology preset or file */
    char calib[WHATIF_STR];      /* calibration profile applied to topo ("" = none) */
    whatif_mode mode;
    /* target model: its published configuration (docs/scenario.md) */
    int layers, dense_layers;    /* decoder layers; the first dense_layers have a dense MLP */
    int hidden;                  /* hidden size (allreduce bytes per token = hidden x dtype) */
    int heads;                   /* attention heads (MLA) */
    int q_lora_rank, kv_lora_rank, qk_nope_dim, qk_rope_dim, v_head_dim;
    int dense_inter;             /* intermediate size of a dense MLP */
    int moe_inter;               /* intermediate size of one expert */
    int moe_experts, moe_shared, moe_topk;  /* routed experts, shared experts, per token */
    int vocab;                   /* LM head rows */
    double weight_bytes;         /* bytes per weight outside the routed experts */
    double expert_weight_bytes;  /* bytes per routed-expert weight (with scales) */
    double routing_skew;         /* 0 = uniform routing .. 1 = every token the same experts */
    int context_len;             /* KV tokens per request read by attention */
    coll_dtype dtype;            /* activation dtype */
    int allreduces_per_layer;    /* 2: after attention and after the MLP/MoE */
    int kernels_per_layer;       /* GPU kernels per layer (launch/graph overhead) */
    /* GPU */
    double gpu_mem_GBps;         /* 0 = the topology's gpu_mem_Bps */
    double efficiency;           /* fraction of it a target forward achieves (fitted) */
    /* serving: launch modes and the host side (docs/scenario.md, "The host side") */
    int tp;                      /* tensor-parallel size = ranks in each allreduce */
    int batch;                   /* concurrent requests: tokens per forward x batch */
    int graph;                   /* 1 = CUDA graphs: the launch mode of every phase set to -1 */
    int decode_graph, draft_graph, verify_graph, extend_graph;  /* per phase; -1 = graph */
    int cuda_graph_max_bs;       /* SGLang's --cuda-graph-max-bs: a batch of more requests
                                    runs every phase eagerly (no graph captured for it);
                                    0 = no limit */
    int overlap;                 /* overlap scheduler: 1 on, 0 off, -1 = as SGLang (decode
                                    on, EAGLE-3 off) */
    int decode_syncs, draft_syncs, verify_syncs, extend_syncs;  /* blocking GPU->CPU copies
                                    per cycle in each phase */
    double host_us;              /* host work per segment (before a launch, after a sync) */
    double host_cycle_us;        /* >= 0: the host work on the critical path of one EAGLE-3
                                    cycle without overlap, public measurement
                                    (WHATIF_HOST_CYCLE_US); it sets host_us by
                                    whatif_host_segment_us; -1: host_us as given */
    double host_jitter;          /* each rank's extra on a host item: Exp, mean this
                                    fraction of the item (the ranks' skew) */
    double sync_us;              /* one sync's cost once the GPU is done (D2H, wake-up) */
    double eager_op_us;          /* eager: the framework's CPU work per kernel besides the
                                    launch call */
    double eager_coll_us;        /* eager: the framework's CPU work per NCCL allreduce call
                                    besides NCCL's own call (PyTorch's c10d layer, which
                                    SGLang's eager allreduce goes through) */
    coll_algo allreduce;         /* ALGO_AUTO = as NCCL would choose */
    nccl_env env;                /* NCCL settings (nccl_proto, nccl_p2p_level, ...) */
    double decode_allreduce_us;  /* > 0: force the decode forward's allreduces */
    double verify_allreduce_us;  /* > 0: force the verify forward's allreduces */
    double draft_allreduce_us;   /* > 0: force the draft forwards' allreduces */
    /* EAGLE-3 (SGLang's --speculative-num-steps, -eagle-topk, -num-draft-tokens):
     * draft_steps is the one source; with topk 1, draft_tokens = draft_steps + 1
     * (SGLang adjusts it so), and whatif_set keeps them so. */
    int draft_steps;             /* speculative steps: draft_steps - 1 draft forwards in
                                    the draft phase, then one draft-extend forward */
    int draft_topk;              /* candidates per step (1: a chain) */
    int draft_tokens;            /* tokens verified per request per cycle */
    double draft_params_M;       /* draft head parameters (millions, weight_bytes each) */
    double draft_efficiency;     /* < 0 = efficiency */
    int draft_allreduces;        /* allreduces per draft forward (0: replicated head) */
    int draft_kernels;           /* GPU kernels per draft forward */
    double accept_len;           /* mean tokens produced per cycle (>= 1) */
    int accept_nhist;            /* > 0: accept_hist[i] = P(i+1 tokens); overrides mean */
    double accept_hist[WHATIF_HIST_MAX];
    /* calibration */
    int nobs;
    whatif_obs obs[WHATIF_OBS_MAX];
    char fit[WHATIF_STR];        /* parameters to fit to obs, comma-separated */
    char moe[WHATIF_STR];        /* "" or "tp": routed experts split over tp, the MoE block
                                    ends in an allreduce; "ep": experts placed whole on the
                                    ranks, dispatch and combine all-to-alls instead */
    uint64_t given[2];           /* knobs a scenario file's lines set (whatif_given); not a
                                    knob: no part of the scenario's identity */
} whatif_scenario;

/* One cycle's breakdown (us), mean over ranks; the parts sum to cycle_us.
 * Names as in docs/cli.md: compute, comm (collective time), launch (launch
 * calls and graph nodes the GPU waits for), host (host work and syncs the
 * GPU waits for), wait (waiting for the slowest rank), idle. */
typedef struct whatif_parts {
    double compute_us, comm_us, launch_us, host_us, wait_us, idle_us;
    double expert_us;            /* of compute: the target forward's routed-expert reads */
    double draft_us, verify_us;  /* phases: draft + draft-extend, verify (EAGLE-3) */
    double fwd_comm_us;          /* comm on the path in the target forward's phase (decode
                                    or verify) */
} whatif_parts;

typedef struct whatif_result {
    double tok_per_s;            /* tokens per second over all requests */
    double cycle_us;             /* one cycle (decode step or draft+verify) */
    double tokens_per_cycle;     /* accepted tokens x batch */
    whatif_parts parts;
    double allreduce_us;         /* one target-forward allreduce (its transfer alone) */
    /* One target-forward allreduce kernel as a profile times it: transfer plus
     * waiting for the slowest rank, mean over the forward's collectives and
     * the ranks (verify for EAGLE-3, else decode); the longest one of any
     * rank; the same mean for the draft forwards' (0 without). */
    double ar_kernel_us, ar_kernel_max_us, draft_ar_kernel_us;
    double alltoall_us;          /* moe=ep: one dispatch (= one combine) all-to-all; 0 else */
    coll_algo algo;              /* what that allreduce ran */
    int no_allreduce;            /* 1: tp 1, no allreduce at all (allreduce_us 0, algo unset) */
    coll_proto proto;
    int channels;
    double target_MB;            /* bytes one GPU reads per target forward */
    double expert_MB;            /* of which routed experts */
    double distinct_experts;     /* expected distinct experts per MoE layer */
} whatif_result;

/* A fitted or refused parameter (whatif_calibrate). */
typedef struct whatif_fitted {
    char name[64];
    double value, sd;            /* sd: standard error from the observations' rel_sd */
    int refused;                 /* 1: the data cannot determine it; value left as was */
    int at_bound;                /* 1: it ran to its physical bound and is held there */
    char why[320];
} whatif_fitted;

typedef struct whatif_calib {
    int n;
    whatif_fitted p[WHATIF_FIT_MAX];
    double resid[WHATIF_OBS_MAX]; /* ln(predicted / observed) per observation */
    /* per observation: the observed cycle (tokens per cycle / observed tok/s),
     * the model's, and what the model leaves unexplained (observed - model) */
    double obs_cycle_us[WHATIF_OBS_MAX], model_cycle_us[WHATIF_OBS_MAX];
    double unexplained_us[WHATIF_OBS_MAX];
    /* per observation: the model's target-forward allreduce kernel (mean,
     * longest), to set against the observation's ar_us */
    double model_ar_us[WHATIF_OBS_MAX], model_ar_max_us[WHATIF_OBS_MAX];
} whatif_calib;

/* A candidate explanation of what the model leaves unexplained of an
 * observation (whatif_hypotheses): one mechanism switched on or changed, its
 * amount solved within its physical bound for the observed tok/s, and what
 * it then predicts for the profile's allreduce kernels. */
#define WHATIF_HYP_MAX 8
typedef struct whatif_hyp {
    const char *name;            /* "host", "eager-verify", ... (static) */
    const char *what;            /* the mechanism, for people (static) */
    const char *knob;            /* the amount solved (static) */
    const char *set;             /* what else it sets, "k=v,..." (static) */
    double lo, hi;               /* the amount's physical bound */
    int rising;                  /* 1: tok/s rises with the amount (else it falls) */
    double base_value;           /* the amount as the scenario has it */
    double base_tok_per_s;       /* the model with the mechanism at base_value */
    double base_ar_us;           /* and its target-forward allreduce kernel */
    double value;                /* the amount that gives the observed tok/s, or the
                                    bound it reached without (reached 0) */
    int reached;                 /* 1: the observed tok/s is reached within the bound */
    double tok_per_s;            /* the model at value */
    double ar_us, ar_max_us;     /* its target-forward allreduce kernel: mean, longest */
    double cpu_per_kernel_us;    /* eager hypotheses: CPU per kernel at value (launch
                                    call + the framework's work); else 0 */
    double launch_us;            /* eager hypotheses: the launch call's part of it */
    int ar_checked;              /* the observation has a profile figure (ar_us) */
    int ar_consistent;           /* |ln(ar_us / observed)| <= 2 ar_rel_sd */
} whatif_hyp;

/* The answer of whatif_solve: found, or none with the value it would need. */
typedef struct whatif_solved {
    int found;                   /* 1: value is the answer */
    double value;                /* the answer, or what it would take when !found */
    char text[128];              /* "1.390", "none (needs 3.64 > 3)" */
} whatif_solved;

typedef struct whatif_ctx whatif_ctx;

whatif_ctx *whatif_ctx_new(void);                  /* NULL on OOM */
void whatif_ctx_free(whatif_ctx *c);               /* NULL ok */
/* Built-in name (e.g. "kimi-k2-eagle3-8x-pcie5") or a scenario file.
 * ERR_USAGE for an unknown name, ERR_INPUT "file:line: what" for bad files. */
int whatif_scenario_load(const char *name_or_path, whatif_scenario *out, err *e);
/* Set knob key to value (keys: whatif_key_name). ERR_USAGE on an unknown
 * key or a bad value. Keys of the form NCCL_X set that NCCL variable. */
int whatif_set(whatif_scenario *s, const char *key, const char *value, err *e);
/* 1 if a line of the scenario file s was loaded from set key, else 0 (the
 * built-in's values, --set and --vary are not lines of a file). */
int whatif_given(const whatif_scenario *s, const char *key);
/* Current value of key as text into buf (n bytes). ERR_USAGE if unknown. */
int whatif_get(const whatif_scenario *s, const char *key, char *buf, size_t n, err *e);
/* Add an observation "k=v,...,tok_per_s=X[,sd=R][,check=1][,verify_ar_us=U|
 * decode_ar_us=U[,ar_sd=R]]"; "none" clears them all.
 * ERR_USAGE naming the bad part. */
int whatif_observe(whatif_scenario *s, const char *spec, err *e);
/* Write s as a scenario file that loads back to the same scenario. */
int whatif_write(const whatif_scenario *s, FILE *f, err *e);
/* Fit s->fit to s->obs in place (GSL least squares on ln(pred/obs)/rel_sd);
 * what the data cannot determine is refused, kept, and said in out (may be
 * NULL). No-op without observations. Errors: the runs', ERR_USAGE names. */
int whatif_calibrate(whatif_ctx *c, whatif_scenario *s, whatif_calib *out, err *e);
/* Run one scenario as it is (no calibration). Errors: ERR_USAGE for an
 * impossible configuration, ERR_INPUT/ERR_SYSTEM from the topology. */
int whatif_run_ctx(whatif_ctx *c, const whatif_scenario *s, whatif_result *out, err *e);
int whatif_run(const whatif_scenario *s, whatif_result *out, err *e);  /* fresh ctx */
/* Record the cycle of s as Perfetto events (GPU 0, process pid named label,
 * threads as in replay's timeline) into the open timeline doc. */
int whatif_timeline(whatif_ctx *c, const whatif_scenario *s, timeline *doc, int pid,
                    const char *label, err *e);
/* The hypotheses for observation i of s (fitted as it is): for each (table
 * in traces/whatif_hyp.c) its amount solved within bounds, what it predicts
 * for the allreduce kernels, and whether that matches the observation's
 * profile figure. Fills up to WHATIF_HYP_MAX into out, count in *n.
 * Errors: the runs'. */
int whatif_hypotheses(whatif_ctx *c, const whatif_scenario *s, int i, whatif_hyp *out, int *n,
                      err *e);
/* Solve for key in s (EAGLE-3): "accept_len" or "verify_allreduce_us". With
 * tok_per_s <= 0, the break-even against base (plain decode as predicted);
 * else the value at which s gives tok_per_s. No solution in range is an
 * answer too (out->found 0, its text says why). Errors: the runs'. */
int whatif_solve(whatif_ctx *c, const whatif_scenario *s, const whatif_scenario *base,
                 const char *key, double tok_per_s, whatif_solved *out, err *e);
/* 1 if s and o describe the same variant (every knob but observe, fit, name). */
int whatif_same(const whatif_scenario *s, const whatif_scenario *o);
/* The scenario observation i describes: s with its settings (and its box). */
int whatif_obs_scenario(const whatif_scenario *s, int i, whatif_scenario *out, err *e);
/* Launch mode of phase p (PHASE_DECODE, PHASE_DRAFT, PHASE_VERIFY, or
 * PHASE_PREFILL for the draft extend) after the graph default. */
int whatif_phase_graph(const whatif_scenario *s, trace_phase p);
/* Resolve the GPU bandwidth from the topology (gpu_mem_GBps = 0) in place,
 * so that whatif_emit_cycle can run without a topology. */
int whatif_derive(whatif_ctx *c, whatif_scenario *s, err *e);
/* The ops of one cycle producing `tokens` tokens (traces/trace.h), passed to
 * fn in order; gpu_mem_GBps must be resolved (whatif_derive). */
struct trace_op;
typedef int whatif_op_fn(void *arg, const struct trace_op *op, err *e);
int whatif_emit_cycle(const whatif_scenario *s, double tokens, whatif_op_fn *fn, void *arg,
                      err *e);
/* Expected distinct routed experts a forward over n tokens reads, with
 * top-k of `experts` and routing_skew (docs/scenario.md). */
double whatif_distinct_experts(int experts, int topk, double skew, double n);

/* The host work on an EAGLE-3 cycle's critical path without the overlap
 * scheduler, from what SGLang's overlap of it (spec v2) saves at batch 1
 * (docs/scenario.md, "What the host costs per cycle"), sgl-project/sglang:
 * PR #18906 (2026-02), TP8, Qwen3.5-397B-A17B (MoE), NEXTN 3 steps, topk 1,
 * 3.368 accepted either way: 298.19 tok/s without, 323.72 with: 3.368 /
 * 298.19 - 3.368 / 323.72 = 11,295 - 10,404 = 891 us per cycle. The range:
 * low 538 us, PR #9588's least gain ("5-10%") on that cycle; high 1,417 us,
 * the largest gain measured (PR #11398, TP1 Llama-3.1-8B + EAGLE 5 steps:
 * 12,115 - 11,008 = 1,107 us) plus the 310 us per step of SGLang's own
 * loop over a mocked forward (tenstorrent/tt-inference-server issue #3560),
 * an allowance for what an overlap does not hide (its gain is only what it
 * hides). */
#define WHATIF_HOST_CYCLE_US 891.0
#define WHATIF_HOST_CYCLE_LO_US 538.0
#define WHATIF_HOST_CYCLE_HI_US 1417.0

/* Host work per segment that makes an EAGLE-3 cycle's host path (its 3
 * launches' segments, one more after each of its S syncs, and the S syncs
 * at sync_us) cycle_us: (cycle_us - S x sync_us) / (3 + S), at least 0. */
double whatif_host_segment_us(const whatif_scenario *s, double cycle_us);
/* Knob names and one-line descriptions, i = 0.. (NULL past the end). */
const char *whatif_key_name(int i);
const char *whatif_key_desc(int i);
/* Built-in scenario names, i = 0.. (NULL past the end). */
const char *whatif_builtin_name(int i);

#endif
