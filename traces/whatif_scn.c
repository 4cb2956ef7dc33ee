/* What-if scenarios as data: knobs in a static table (name, type, field
 * offset, bounds), the built-in reference scenario, observations, setting and
 * reading knobs, and scenario files (read and written back exactly). */
#include "traces/whatif.h"
#include "traces/whatif_impl.h"

#include <errno.h>
#include <math.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/stat.h>

#include "models/topo/topo.h"
#include "sim/cli.h"
#include "sim/input.h"
#include "sim/line.h"
#include "traces/replay.h"
#include "traces/trace.h"
#include "validate/calib.h"
#include "validate/fit.h"

static void fmt_exact(char *buf, size_t n, double v);

/* ---- the built-in scenario ---------------------------------------------- */

static void env_default(nccl_env *env)
{
    memset(env, 0, sizeof *env);
    env->p2p_level = -1;
    env->algo = ALGO_AUTO;
    env->proto = PROTO_AUTO;
}

/* The NCCL settings of SCENARIO.md: NCCL_PROTO=LL NCCL_ALGO=Ring
 * NCCL_P2P_LEVEL=SYS NCCL_MAX_NCHANNELS=16 NCCL_BUFFSIZE=16777216
 * NCCL_NTHREADS=512. */
static void env_reference(nccl_env *env)
{
    env_default(env);
    env->proto = PROTO_LL;
    env->algo = ALGO_RING;
    env->p2p_level = PATH_SYS;
    env->max_channels = 16;
    env->buffsize_bytes = 16777216;
    env->nthreads = 512;
}

/* Kimi-K2 / Kimi-K2.5 text backbone, from its published config.json
 * (docs/scenario.md cites it): DeepSeek-V3 layout with 64 heads and 384
 * experts; routed experts INT4 with a bf16 scale per 32 weights. */
static void scenario_defaults(whatif_scenario *s)
{
    memset(s, 0, sizeof *s);
    snprintf(s->name, sizeof s->name, "custom");
    snprintf(s->topo, sizeof s->topo, "rtxpro6000-8x-pcie5-2s");
    s->mode = WHATIF_DECODE;
    s->layers = 61;
    s->dense_layers = 1;
    s->hidden = 7168;
    s->heads = 64;
    s->q_lora_rank = 1536;
    s->kv_lora_rank = 512;
    s->qk_nope_dim = 128;
    s->qk_rope_dim = 64;
    s->v_head_dim = 128;
    s->dense_inter = 18432;
    s->moe_inter = 2048;
    s->moe_experts = 384;
    s->moe_shared = 1;
    s->moe_topk = 8;
    s->vocab = 163840;
    s->weight_bytes = 2;
    s->expert_weight_bytes = 0.5 + 2.0 / 32;
    s->routing_skew = 0;
    s->context_len = 4096;
    s->dtype = DTYPE_BF16;
    s->allreduces_per_layer = 2;
    s->kernels_per_layer = 20;
    s->gpu_mem_GBps = 0;
    s->efficiency = 0.5;
    s->tp = 8;
    s->batch = 1;
    s->graph = 1;
    s->decode_graph = s->draft_graph = s->verify_graph = s->extend_graph = -1;
    s->overlap = -1;
    /* SCENARIO.md: CUDA graphs on, --cuda-graph-max-bs 128 */
    s->cuda_graph_max_bs = 128;
    /* SGLang's EAGLE worker (docs/scenario.md, "The host side"): one blocking
     * copy in the draft preprocess, five in the verify's acceptance, one in
     * the scheduler's result processing; decode has the last one only. */
    s->decode_syncs = 1;
    s->draft_syncs = 1;
    s->verify_syncs = 5;
    s->extend_syncs = 1;
    s->host_jitter = 0.1;
    s->sync_us = 10;
    /* the host work per cycle, measured in public (whatif.h) */
    s->host_cycle_us = WHATIF_HOST_CYCLE_US;
    s->host_us = whatif_host_segment_us(s, s->host_cycle_us);
    /* the framework's CPU time per eager kernel besides its launch call,
     * measured in a PyTorch eager capture on h200-1x (validate/capture/
     * op_cost.py over validate/data/h200-1x/capture: 20.07 us per kernel
     * with its 5.44 us launch call, 57 steps) */
    s->eager_op_us = 14.6;
    /* the c10d layer of an eager allreduce (SGLang's eager path outside CUDA
     * graphs is torch.distributed.all_reduce): measured on h200-1x
     * (validate/data/h200-1x/micro/hostcall/, one session): dist.all_reduce
     * 20.05 / 19.65 us of host per call back to back (torch-r1, -r2), NCCL's
     * own ncclAllReduce 4.18 / 4.00 / 5.26 (launch-r1..r3): 19.85 - 4.48 */
    s->eager_coll_us = 15.4;
    s->allreduce = ALGO_AUTO;
    env_default(&s->env);
    s->draft_steps = 2;
    s->draft_topk = 1;
    s->draft_tokens = 3;
    s->draft_params_M = 985;
    s->draft_efficiency = -1;
    s->draft_allreduces = 2;
    s->draft_kernels = 25;
    s->accept_len = 2.4;
    snprintf(s->fit, sizeof s->fit, "efficiency");
}

typedef struct builtin {
    const char *name;
    void (*init)(whatif_scenario *s);
} builtin;

/* SCENARIO.md: Kimi-K2.5 on 8x RTX PRO 6000 (PCIe Gen5, 2 sockets), TP 8,
 * EAGLE-3 with 3 draft tokens, NCCL Ring/LL as configured there; its two
 * observed points, and the parameters they are fitted to. */
static void kimi_k2_eagle3(whatif_scenario *s)
{
    scenario_defaults(s);
    snprintf(s->name, sizeof s->name, "kimi-k2-eagle3-8x-pcie5");
    s->mode = WHATIF_EAGLE3;
    s->allreduce = ALGO_RING;
    env_reference(&s->env);
    /* observed on this box (whatif_observe pins the box to each): plain
     * decode, fitted; EAGLE-3 with the profile's verify allreduce kernels
     * ("roughly 200-250 us each"), a check only, so that what the model
     * lacks shows as unexplained and the hypotheses are tested on it */
    whatif_observe(s, "mode=decode,allreduce=ring,tok_per_s=82,sd=0.01", NULL);
    whatif_observe(s, "mode=eagle3,allreduce=ring,tok_per_s=54.1,sd=0.01,check=1,"
                   "verify_ar_us=225,ar_sd=0.11", NULL);
    snprintf(s->fit, sizeof s->fit, "efficiency");
}

static const builtin builtins[] = {
    {"kimi-k2-eagle3-8x-pcie5", kimi_k2_eagle3},
};
enum { NBUILTINS = sizeof builtins / sizeof builtins[0] };

const char *whatif_builtin_name(int i)
{
    return i >= 0 && i < NBUILTINS ? builtins[i].name : NULL;
}

/* ---- knobs ---------------------------------------------------------------- */


#define F(x) offsetof(whatif_scenario, x)
static const knob knobs[] = {
    {"topo", K_STR, F(topo), 0, 0, NULL, "topology preset or file"},
    {"calib", K_STR, F(calib), 0, 0, NULL, "calibration profile (collsim calibrate) applied to topo"},
    {"mode", K_MODE, F(mode), 0, 0, NULL, "decode | eagle3"},
    {"allreduce", K_ALGO, F(allreduce), 0, 0, NULL,
     "ring|tree|oneshot|twoshot|oneshot-push|twoshot-push|auto"},
    {"tp", K_INT, F(tp), 1, 1024, NULL, "tensor-parallel size (GPUs 0..tp-1)"},
    {"moe", K_STR, F(moe), 0, 0, NULL,
     "tp (default): experts split over tp, an allreduce | ep: experts whole per rank, dispatch and combine all-to-alls (NCCL's) | ep-push: the same as one push kernel each (DeepEP-style)"},
    {"batch", K_INT, F(batch), 1, 4096, NULL, "concurrent requests"},
    {"accept_len", K_DBL, F(accept_len), 1, 64, NULL, "mean tokens accepted per EAGLE-3 cycle"},
    {"accept_hist", K_HIST, F(accept_hist), 0, 0, NULL,
     "P(1 token),P(2 tokens),... per cycle (overrides accept_len)"},
    {"draft_steps", K_INT, F(draft_steps), 1, 64, NULL,
     "speculative steps (--speculative-num-steps): steps-1 draft forwards + 1 draft extend"},
    {"draft_topk", K_INT, F(draft_topk), 1, 64, NULL,
     "candidates per step (--speculative-eagle-topk); 1: draft_tokens = draft_steps + 1"},
    {"draft_tokens", K_INT, F(draft_tokens), 2, 4096, NULL,
     "tokens verified per request per cycle (topk 1: sets draft_steps = draft_tokens - 1)"},
    {"draft_params_M", K_DBL, F(draft_params_M), 0, 1e6, NULL,
     "draft head parameters, millions (weight_bytes each)"},
    {"draft_efficiency", K_DBL, F(draft_efficiency), -1, 1, NULL,
     "bandwidth efficiency of a draft forward (-1: efficiency)"},
    {"draft_allreduces", K_INT, F(draft_allreduces), 0, 64, NULL,
     "allreduces per draft forward (0: replicated head)"},
    {"draft_kernels", K_INT, F(draft_kernels), 0, 100000, NULL, "kernels per draft forward"},
    {"layers", K_INT, F(layers), 1, 100000, NULL, "decoder layers of the target"},
    {"dense_layers", K_INT, F(dense_layers), 0, 100000, NULL, "leading layers with a dense MLP"},
    {"hidden", K_INT, F(hidden), 1, 1 << 20, NULL, "hidden size"},
    {"heads", K_INT, F(heads), 1, 1 << 16, NULL, "attention heads"},
    {"q_lora_rank", K_INT, F(q_lora_rank), 0, 1 << 20, NULL, "MLA query compression rank (0: none)"},
    {"kv_lora_rank", K_INT, F(kv_lora_rank), 1, 1 << 20, NULL, "MLA latent KV rank"},
    {"qk_nope_dim", K_INT, F(qk_nope_dim), 0, 1 << 16, NULL, "MLA per-head q/k dim without RoPE"},
    {"qk_rope_dim", K_INT, F(qk_rope_dim), 0, 1 << 16, NULL, "MLA per-head RoPE dim"},
    {"v_head_dim", K_INT, F(v_head_dim), 1, 1 << 16, NULL, "MLA per-head value dim"},
    {"dense_inter", K_INT, F(dense_inter), 0, 1 << 24, NULL, "dense MLP intermediate size"},
    {"moe_inter", K_INT, F(moe_inter), 0, 1 << 24, NULL, "expert intermediate size"},
    {"moe_experts", K_INT, F(moe_experts), 0, 1 << 20, NULL, "routed experts per MoE layer"},
    {"moe_shared", K_INT, F(moe_shared), 0, 1024, NULL, "shared experts per MoE layer"},
    {"moe_topk", K_INT, F(moe_topk), 0, 1024, NULL, "routed experts per token"},
    {"vocab", K_INT, F(vocab), 1, 1 << 24, NULL, "vocabulary (LM head rows)"},
    {"weight_bytes", K_DBL, F(weight_bytes), 0.0625, 8, NULL,
     "bytes per weight outside the routed experts"},
    {"expert_weight_bytes", K_DBL, F(expert_weight_bytes), 0.0625, 8, NULL,
     "bytes per routed-expert weight, scales included"},
    {"routing_skew", K_DBL, F(routing_skew), 0, 1, NULL,
     "0 = uniform routing .. 1 = all tokens of a forward pick the same experts"},
    {"context_len", K_INT, F(context_len), 0, 1 << 24, NULL, "KV-cache tokens per request"},
    {"dtype", K_DTYPE, F(dtype), 0, 0, NULL, "activation dtype (bf16|fp16|fp32)"},
    {"allreduces_per_layer", K_INT, F(allreduces_per_layer), 0, 64, NULL,
     "allreduces per target layer"},
    {"kernels_per_layer", K_INT, F(kernels_per_layer), 0, 100000, NULL,
     "GPU kernels per target layer besides the allreduces"},
    {"gpu_mem_GBps", K_DBL, F(gpu_mem_GBps), 0, 1e5, NULL,
     "GPU memory bandwidth (0: the topology's)"},
    {"efficiency", K_DBL, F(efficiency), 1e-4, 1, NULL,
     "fraction of gpu_mem_GBps a target forward achieves (fitted)"},
    {"graph", K_INT, F(graph), 0, 1, NULL, "1 = CUDA graphs, 0 = eager launches"},
    {"decode_graph", K_INT, F(decode_graph), -1, 1, NULL, "decode forward: 1 graph, 0 eager, -1 = graph"},
    {"draft_graph", K_INT, F(draft_graph), -1, 1, NULL, "draft forwards: 1 graph, 0 eager, -1 = graph"},
    {"verify_graph", K_INT, F(verify_graph), -1, 1, NULL, "verify forward: 1 graph, 0 eager, -1 = graph"},
    {"extend_graph", K_INT, F(extend_graph), -1, 1, NULL, "draft-extend forward: 1 graph, 0 eager, -1 = graph"},
    {"cuda_graph_max_bs", K_INT, F(cuda_graph_max_bs), 0, 1 << 20, NULL,
     "SGLang's --cuda-graph-max-bs: a larger batch runs eagerly (0: no limit)"},
    {"overlap", K_INT, F(overlap), -1, 1, NULL,
     "overlap scheduler: 1 on, 0 off, -1 = as SGLang (decode on, EAGLE-3 off)"},
    {"decode_syncs", K_INT, F(decode_syncs), 0, 1000, NULL, "blocking GPU->CPU copies per decode step"},
    {"draft_syncs", K_INT, F(draft_syncs), 0, 1000, NULL, "blocking copies in the draft phase"},
    {"verify_syncs", K_INT, F(verify_syncs), 0, 1000, NULL, "blocking copies in the verify (acceptance)"},
    {"extend_syncs", K_INT, F(extend_syncs), 0, 1000, NULL,
     "blocking copies after the draft extend (result processing)"},
    {"host_cycle_us", K_DBL, F(host_cycle_us), -1, 1e7, NULL,
     "host work on an EAGLE-3 cycle's path, spread over its segments (-1: host_us given)"},
    {"host_us", K_DBL, F(host_us), 0, 1e6, NULL,
     "host work per segment: before each launch and after each sync (sets host_cycle_us -1)"},
    {"host_jitter", K_DBL, F(host_jitter), 0, 10, NULL,
     "per-rank extra on each host item: exponential, mean this fraction (skew)"},
    {"sync_us", K_DBL, F(sync_us), 0, 1e5, NULL, "cost of one sync once the GPU is done"},
    {"eager_op_us", K_DBL, F(eager_op_us), 0, 1e5, NULL,
     "eager: framework CPU work per kernel besides the launch call"},
    {"eager_coll_us", K_DBL, F(eager_coll_us), 0, 1e5, NULL,
     "eager: framework CPU work per NCCL allreduce besides NCCL's call (c10d)"},
    {"decode_allreduce_us", K_DBL, F(decode_allreduce_us), 0, 1e7, NULL,
     "force the decode forward's allreduces to this time (0: predict)"},
    {"verify_allreduce_us", K_DBL, F(verify_allreduce_us), 0, 1e7, NULL,
     "force the verify forward's allreduces to this time (0: predict)"},
    {"draft_allreduce_us", K_DBL, F(draft_allreduce_us), 0, 1e7, NULL,
     "force the draft forwards' allreduces to this time (0: predict)"},
    {"observe", K_OBS, 0, 0, 0, NULL,
     "an observed point KEY=V,...,tok_per_s=X[,sd=R] (repeatable; none clears)"},
    {"fit", K_FIT, F(fit), 0, 0, NULL,
     "parameters fitted to the observations (comma list; none: no fit)"},
    {"nccl_proto", K_ENV, 0, 0, 0, "NCCL_PROTO", "LL|LL128|Simple"},
    {"nccl_algo", K_ENV, 0, 0, 0, "NCCL_ALGO", "Ring|Tree"},
    {"nccl_p2p_level", K_ENV, 0, 0, 0, "NCCL_P2P_LEVEL", "LOC|NVL|PIX|PXB|PHB|SYS"},
    {"nccl_p2p_disable", K_ENV, 0, 0, 0, "NCCL_P2P_DISABLE", "0|1"},
    {"nccl_shm_disable", K_ENV, 0, 0, 0, "NCCL_SHM_DISABLE", "0|1"},
    {"nccl_min_nchannels", K_ENV, 0, 0, 0, "NCCL_MIN_NCHANNELS", "channels"},
    {"nccl_max_nchannels", K_ENV, 0, 0, 0, "NCCL_MAX_NCHANNELS", "channels"},
    {"nccl_buffsize", K_ENV, 0, 0, 0, "NCCL_BUFFSIZE", "bytes"},
    {"nccl_nthreads", K_ENV, 0, 0, 0, "NCCL_NTHREADS", "threads"},
};
#undef F
enum { NKNOBS = sizeof knobs / sizeof knobs[0] };

const char *whatif_key_name(int i) { return i >= 0 && i < NKNOBS ? knobs[i].name : NULL; }
const char *whatif_key_desc(int i) { return i >= 0 && i < NKNOBS ? knobs[i].desc : NULL; }

const knob *whatif_find_knob(const char *key)
{
    for (int i = 0; i < NKNOBS; i++)
        if (!strcmp(knobs[i].name, key))
            return &knobs[i];
    return NULL;
}

/* given: one bit per knob, by its index in the table */
_Static_assert(NKNOBS <= 128, "whatif_scenario.given holds 128 knobs");

static void mark_given(whatif_scenario *s, const knob *k)
{
    size_t i = (size_t)(k - knobs);
    s->given[i / 64] |= (uint64_t)1 << (i % 64);
}

int whatif_given(const whatif_scenario *s, const char *key)
{
    const knob *k = whatif_find_knob(key);
    size_t i = k ? (size_t)(k - knobs) : 0;
    return k && (s->given[i / 64] >> (i % 64) & 1);
}


static const fitdef fitdefs[] = {
    {"efficiency", 1e-4, 1, 1},
    {"draft_efficiency", 1e-4, 1, 1},
    /* host mechanisms, with their physical bounds (docs/scenario.md) */
    {"host_us", 0, 2000, 0},
    {"host_jitter", 0, 1, 0},
    {"sync_us", 0, 200, 0},
    {"eager_op_us", 0, 100, 0},
    {"accept_len", 1, -1, 0},
    {"routing_skew", 0, 1, 0},
};
enum { NFITDEFS = sizeof fitdefs / sizeof fitdefs[0] };

const fitdef *whatif_find_fitdef(const char *name)
{
    for (int i = 0; i < NFITDEFS; i++)
        if (!strcmp(fitdefs[i].name, name))
            return &fitdefs[i];
    return NULL;
}

int whatif_check_fit_list(const char *v, err *e)
{
    char buf[WHATIF_STR];
    if (strlen(v) >= sizeof buf)
        return err_set(e, ERR_USAGE, "fit: list too long");
    snprintf(buf, sizeof buf, "%s", v);
    int n = 0;
    const fitdef *seen[WHATIF_FIT_MAX];
    char *save = NULL;
    for (char *t = strtok_r(buf, ",", &save); t; t = strtok_r(NULL, ",", &save)) {
        const fitdef *d = whatif_find_fitdef(t);
        if (!d) {
            char names[256];
            size_t at = 0;
            for (int i = 0; i < NFITDEFS && at < sizeof names; i++)
                at += (size_t)snprintf(names + at, sizeof names - at, "%s%s", i ? ", " : "",
                                       fitdefs[i].name);
            return err_set(e, ERR_USAGE, "fit: '%s' cannot be fitted (%s)", t, names);
        }
        for (int i = 0; i < n; i++)
            if (seen[i] == d)
                return err_set(e, ERR_USAGE, "fit: '%s' named twice", t);
        if (n == WHATIF_FIT_MAX)
            return err_set(e, ERR_USAGE, "fit: more than %d parameters", WHATIF_FIT_MAX);
        seen[n++] = d;
    }
    return 0;
}

/* Apply "k=v,k=v" to s. */
int whatif_apply_kvs(whatif_scenario *s, const char *list, err *e)
{
    char buf[WHATIF_OBS_STR];
    snprintf(buf, sizeof buf, "%s", list);
    char *save = NULL;
    for (char *t = strtok_r(buf, ",", &save); t; t = strtok_r(NULL, ",", &save)) {
        char *eq = strchr(t, '=');
        if (!eq || eq == t)
            return err_set(e, ERR_USAGE, "'%s': want KEY=VALUE", t);
        *eq = 0;
        TRY(whatif_set(s, t, eq + 1, e));
    }
    return 0;
}

/* The keys of an observation beyond its settings and tok/s, ",check=1,..."
 * (exact: the shortest text that reads back the same). */
void whatif_obs_extra(const whatif_obs *o, char *buf, size_t n, int exact)
{
    size_t at = 0;
    buf[0] = 0;
    if (o->check)
        at += (size_t)snprintf(buf + at, n - at, ",check=1");
    if (o->ar_us > 0 && at < n) {
        char u[32], sd[32];
        if (exact) {
            fmt_exact(u, sizeof u, o->ar_us);
            fmt_exact(sd, sizeof sd, o->ar_rel_sd);
        } else {
            snprintf(u, sizeof u, "%g", o->ar_us);
            snprintf(sd, sizeof sd, "%g", o->ar_rel_sd);
        }
        snprintf(buf + at, n - at, ",%s_ar_us=%s,ar_sd=%s", o->ar_verify ? "verify" : "decode",
                 u, sd);
    }
}

int whatif_observe(whatif_scenario *s, const char *spec, err *e)
{
    if (!strcmp(spec, "none")) {
        s->nobs = 0;
        return 0;
    }
    if (s->nobs == WHATIF_OBS_MAX)
        return err_set(e, ERR_USAGE, "observe: at most %d observations", WHATIF_OBS_MAX);
    whatif_obs o = {.tok_per_s = -1, .rel_sd = 0.01, .ar_us = -1, .ar_rel_sd = WHATIF_AR_SD,
                    .ar_verify = 1};
    char buf[WHATIF_OBS_STR], set[WHATIF_OBS_STR] = "";
    if (strlen(spec) >= sizeof buf)
        return err_set(e, ERR_USAGE, "observe: too long");
    snprintf(buf, sizeof buf, "%s", spec);
    /* The box it was seen on comes first (its own keys, after, win): an
     * observation keeps its topology, tp, batch and launch modes whatever
     * the scenario is set to later. Keys the spec names are not pinned. */
    static const char *const box[] = {"topo", "tp", "batch", "graph", "calib", "decode_graph",
                                      "draft_graph", "verify_graph", "extend_graph", "overlap",
                                      "cuda_graph_max_bs"};
    size_t at = 0;
    for (size_t m = 0; m < sizeof box / sizeof box[0]; m++) {
        char v[WHATIF_STR + 8], pat[32];
        snprintf(pat, sizeof pat, "%s=", box[m]);
        size_t pl = strlen(pat);
        int named = !strncmp(spec, pat, pl);
        for (const char *q = strchr(spec, ','); q && !named; q = strchr(q + 1, ','))
            named = !strncmp(q + 1, pat, pl);
        whatif_get(s, box[m], v, sizeof v, NULL);
        int dflt = !strcmp(box[m], "calib") && !v[0];   /* no calibration profile */
        if (!named && !dflt)
            at += (size_t)snprintf(set + at, sizeof set - at, "%s%s=%s", at ? "," : "", box[m], v);
    }
    char *save = NULL;
    for (char *t = strtok_r(buf, ",", &save); t; t = strtok_r(NULL, ",", &save)) {
        char *eq = strchr(t, '=');
        if (!eq || eq == t)
            return err_set(e, ERR_USAGE, "observe: '%s': want KEY=VALUE", t);
        *eq = 0;
        const char *v = eq + 1;
        if (!strcmp(t, "tok_per_s")) {
            TRY(cli_parse_double("observe: tok_per_s", v, &o.tok_per_s, e));
            if (!(o.tok_per_s > 0))
                return err_set(e, ERR_USAGE, "observe: tok_per_s must be > 0");
        } else if (!strcmp(t, "sd")) {
            TRY(cli_parse_double("observe: sd", v, &o.rel_sd, e));
            if (!(o.rel_sd > 0 && o.rel_sd < 1))
                return err_set(e, ERR_USAGE, "observe: sd %s must be a fraction in (0, 1)", v);
        } else if (!strcmp(t, "check")) {
            long ck;
            TRY(cli_parse_long("observe: check", v, 0, 1, &ck, e));
            o.check = (int)ck;
        } else if (!strcmp(t, "verify_ar_us") || !strcmp(t, "decode_ar_us")) {
            TRY(cli_parse_double("observe: ar_us", v, &o.ar_us, e));
            if (!(o.ar_us > 0))
                return err_set(e, ERR_USAGE, "observe: %s must be > 0", t);
            o.ar_verify = t[0] == 'v';
        } else if (!strcmp(t, "ar_sd")) {
            TRY(cli_parse_double("observe: ar_sd", v, &o.ar_rel_sd, e));
            if (!(o.ar_rel_sd > 0 && o.ar_rel_sd < 1))
                return err_set(e, ERR_USAGE, "observe: ar_sd %s must be a fraction in (0, 1)", v);
        } else if (!strcmp(t, "observe") || !strcmp(t, "fit")) {
            return err_set(e, ERR_USAGE, "observe: '%s' cannot be set in an observation", t);
        } else {
            whatif_scenario tmp = *s;
            err sub = {0};
            if (whatif_set(&tmp, t, v, &sub))
                return err_set(e, ERR_USAGE, "observe: %s", sub.msg);
            at += (size_t)snprintf(set + at, sizeof set - at, "%s%s=%s", at ? "," : "", t, v);
            if (at >= sizeof set)
                return err_set(e, ERR_USAGE, "observe: too long");
        }
    }
    if (o.tok_per_s < 0)
        return err_set(e, ERR_USAGE, "observe: '%s' has no tok_per_s=", spec);
    snprintf(o.set, sizeof o.set, "%s", set);
    s->obs[s->nobs++] = o;
    return 0;
}

static const char *const path_names[] = {"LOC", "NVL", "NVB", "?", "PIX", "PXB", "?", "?",
                                         "PHB", "SYS"};

double whatif_host_segment_us(const whatif_scenario *s, double cycle_us)
{
    int syncs = s->draft_syncs + s->verify_syncs + s->extend_syncs;
    double seg = (cycle_us - syncs * s->sync_us) / (3 + syncs);
    return seg > 0 ? seg : 0;
}

/* One source for the host amount: host_us given directly turns the per-cycle
 * figure off; the per-cycle figure, or what it is spread over, sets host_us. */
static void host_follow(whatif_scenario *s, const char *key)
{
    static const char *const spread[] = {"host_cycle_us", "sync_us", "draft_syncs",
                                         "verify_syncs", "extend_syncs"};
    if (!strcmp(key, "host_us")) {
        s->host_cycle_us = -1;
        return;
    }
    for (size_t i = 0; i < sizeof spread / sizeof spread[0]; i++)
        if (!strcmp(key, spread[i]) && s->host_cycle_us >= 0)
            s->host_us = whatif_host_segment_us(s, s->host_cycle_us);
}

int whatif_set(whatif_scenario *s, const char *key, const char *value, err *e)
{
    if (!strncmp(key, "NCCL_", 5)) {
        char a[512];
        snprintf(a, sizeof a, "%s=%s", key, value);
        return coll_env_set(&s->env, a, e);
    }
    const knob *k = whatif_find_knob(key);
    if (!k && !strcmp(key, "allreduce_us"))
        return err_set(e, ERR_USAGE, "allreduce_us: name the phase it applies to "
                       "(decode_allreduce_us, verify_allreduce_us or draft_allreduce_us)");
    if (!k && !strcmp(key, "spec_loop_us"))
        return err_set(e, ERR_USAGE, "spec_loop_us: the per-cycle catch-all is gone; the host "
                       "side is host_us, host_jitter, sync_us and the *_syncs counts "
                       "(docs/scenario.md)");
    if (!k && !strcmp(key, "eager_wait_us"))
        return err_set(e, ERR_USAGE, "eager_wait_us: replaced by per-rank host lanes: "
                       "host_jitter (skew) and eager_op_us");
    if (!k) {
        const char *names[256], *nm;
        int n = 0;
        while (n < 256 && (nm = whatif_key_name(n)))
            names[n++] = nm;
        const char *sug = cli_suggest(key, names, n);
        return err_set(e, ERR_USAGE, "unknown knob '%s' (%s%s%scollsim whatif --keys lists them)",
                       key, sug ? "did you mean '" : "", sug ? sug : "", sug ? "'? " : "");
    }
    char *base = (char *)s + k->off;
    double d;
    long n;
    switch (k->type) {
    case K_INT:
        TRY(cli_parse_long(key, value, (long)k->lo, (long)k->hi, &n, e));
        *(int *)(void *)base = (int)n;
        host_follow(s, key);
        /* one source for the draft shape: with topk 1 (a chain) SGLang sets
         * num_draft_tokens = num_steps + 1 */
        if (s->draft_topk == 1 && !strcmp(key, "draft_tokens"))
            s->draft_steps = s->draft_tokens - 1;
        else if (s->draft_topk == 1 && (!strcmp(key, "draft_steps") || !strcmp(key, "draft_topk")))
            s->draft_tokens = s->draft_steps + 1;
        break;
    case K_DBL:
        TRY(cli_parse_double(key, value, &d, e));
        if (d < k->lo || d > k->hi)
            return err_set(e, ERR_USAGE, "%s: %s out of range %g..%g", key, value, k->lo, k->hi);
        *(double *)(void *)base = d;
        if (!strcmp(key, "accept_len"))
            s->accept_nhist = 0;
        host_follow(s, key);
        break;
    case K_STR:
        if (!value[0] || strlen(value) >= WHATIF_STR)
            return err_set(e, ERR_USAGE, "%s: bad value '%s'", key, value);
        snprintf(base, WHATIF_STR, "%s", value);
        break;
    case K_MODE:
        if (!strcmp(value, "decode"))
            s->mode = WHATIF_DECODE;
        else if (!strcmp(value, "eagle3"))
            s->mode = WHATIF_EAGLE3;
        else
            return err_set(e, ERR_USAGE, "mode: '%s' is not decode or eagle3", value);
        break;
    case K_ALGO:
        if (coll_algo_parse(value, &s->allreduce) != 0)
            return err_set(e, ERR_USAGE, "allreduce: unknown algorithm '%s' (%s)", value, k->desc);
        break;
    case K_DTYPE:
        if (coll_dtype_parse(value, &s->dtype) != 0)
            return err_set(e, ERR_USAGE, "dtype: unknown '%s' (bf16, fp16, fp32)", value);
        break;
    case K_HIST: {
        double p[WHATIF_HIST_MAX], sum = 0;
        int np = 0;
        const char *c = value;
        while (*c) {
            if (np == WHATIF_HIST_MAX)
                return err_set(e, ERR_USAGE, "accept_hist: more than %d entries", WHATIF_HIST_MAX);
            char *end;
            p[np] = strtod(c, &end);
            if (end == c || p[np] < 0 || !isfinite(p[np]) || (*end && *end != ','))
                return err_set(e, ERR_USAGE, "accept_hist: bad list '%s' (want p1,p2,...)", value);
            sum += p[np++];
            c = *end ? end + 1 : end;
        }
        if (np == 0 || sum <= 0)
            return err_set(e, ERR_USAGE, "accept_hist: needs a positive probability");
        for (int i = 0; i < np; i++)
            s->accept_hist[i] = p[i] / sum;
        s->accept_nhist = np;
        double mean = 0;
        for (int i = 0; i < np; i++)
            mean += (i + 1) * s->accept_hist[i];
        s->accept_len = mean;
        break;
    }
    case K_ENV: {
        char a[512];
        snprintf(a, sizeof a, "%s=%s", k->env, value);
        return coll_env_set(&s->env, a, e);
    }
    case K_OBS:
        return whatif_observe(s, value, e);
    case K_FIT:
        if (!strcmp(value, "none"))
            value = "";
        TRY(whatif_check_fit_list(value, e));
        snprintf(s->fit, sizeof s->fit, "%s", value);
        break;
    }
    return 0;
}

int whatif_get(const whatif_scenario *s, const char *key, char *buf, size_t n, err *e)
{
    const knob *k = whatif_find_knob(key);
    if (!k)
        return err_set(e, ERR_USAGE, "unknown knob '%s'", key);
    const char *base = (const char *)s + k->off;
    switch (k->type) {
    case K_INT:
        snprintf(buf, n, "%d", *(const int *)(const void *)base);
        break;
    case K_DBL:
        snprintf(buf, n, "%g", *(const double *)(const void *)base);
        break;
    case K_STR:
        snprintf(buf, n, "%s", base);
        break;
    case K_MODE:
        snprintf(buf, n, "%s", s->mode == WHATIF_EAGLE3 ? "eagle3" : "decode");
        break;
    case K_ALGO:
        snprintf(buf, n, "%s", coll_algo_name(s->allreduce));
        break;
    case K_DTYPE:
        snprintf(buf, n, "%s", coll_dtype_name(s->dtype));
        break;
    case K_HIST: {
        size_t at = 0;
        buf[0] = 0;
        for (int i = 0; i < s->accept_nhist && at < n; i++)
            at += (size_t)snprintf(buf + at, n - at, "%s%g", i ? "," : "", s->accept_hist[i]);
        break;
    }
    case K_OBS: {
        size_t at = 0;
        buf[0] = 0;
        for (int i = 0; i < s->nobs && at < n; i++) {
            char extra[128];
            whatif_obs_extra(&s->obs[i], extra, sizeof extra, 0);
            at += (size_t)snprintf(buf + at, n - at, "%s%s%stok_per_s=%g,sd=%g%s", i ? ";" : "",
                                   s->obs[i].set, s->obs[i].set[0] ? "," : "",
                                   s->obs[i].tok_per_s, s->obs[i].rel_sd, extra);
        }
        break;
    }
    case K_FIT:
        snprintf(buf, n, "%s", s->fit[0] ? s->fit : "none");
        break;
    case K_ENV:
        if (!strcmp(k->env, "NCCL_PROTO"))
            snprintf(buf, n, "%s", s->env.proto == PROTO_AUTO ? "auto" : coll_proto_name(s->env.proto));
        else if (!strcmp(k->env, "NCCL_ALGO"))
            snprintf(buf, n, "%s", s->env.algo == ALGO_AUTO ? "auto" : coll_algo_name(s->env.algo));
        else if (!strcmp(k->env, "NCCL_P2P_LEVEL"))
            snprintf(buf, n, "%s", s->env.p2p_level >= 0 && s->env.p2p_level <= 9
                                       ? path_names[s->env.p2p_level] : "default");
        else if (!strcmp(k->env, "NCCL_P2P_DISABLE"))
            snprintf(buf, n, "%d", s->env.p2p_disable);
        else if (!strcmp(k->env, "NCCL_SHM_DISABLE"))
            snprintf(buf, n, "%d", s->env.shm_disable);
        else if (!strcmp(k->env, "NCCL_MIN_NCHANNELS"))
            snprintf(buf, n, "%d", s->env.min_channels);
        else if (!strcmp(k->env, "NCCL_MAX_NCHANNELS"))
            snprintf(buf, n, "%d", s->env.max_channels);
        else if (!strcmp(k->env, "NCCL_BUFFSIZE"))
            snprintf(buf, n, "%lld", (long long)s->env.buffsize_bytes);
        else
            snprintf(buf, n, "%d", s->env.nthreads);
        break;
    }
    return 0;
}

/* ---- scenario files -------------------------------------------------------- */

static char *trim(char *s)
{
    while (*s == ' ' || *s == '\t')
        s++;
    size_t n = strlen(s);
    while (n > 0 && (s[n - 1] == ' ' || s[n - 1] == '\t' || s[n - 1] == '\n' || s[n - 1] == '\r'))
        s[--n] = 0;
    return s;
}

/* A topology or calibration profile a scenario file names is read here, so
 * its error names the file's line, not the run that would use it. */
static int check_input_value(const char *key, const char *val, err *e)
{
    int rc = 0;
    if (!strcmp(key, "topo")) {
        topo *t = NULL;
        rc = topo_load(val, &t, e);
        topo_free(t);
    } else if (!strcmp(key, "calib") && *val) {
        calib *c = NULL;
        rc = calib_load(val, &c, e);
        calib_free(c);
    }
    return rc;
}

/* Whether word occurs in msg as a whole word (a knob named in a message). */
static int has_word(const char *msg, const char *word)
{
    size_t n = strlen(word);
    for (const char *p = msg; n && (p = strstr(p, word)); p += n)
        if ((p == msg || p[-1] == ' ') && (p[n] == ' ' || !p[n]))
            return 1;
    return 0;
}

static int load_file(const char *path, whatif_scenario *out, err *e)
{
    static const input_limits lim = {.max_bytes = INPUT_TEXT_MAX_BYTES, .what = "a scenario"};
    input *in;
    if (input_open(path, &lim, &in, e)) {
        if (errno == EISDIR)
            return ERR_INPUT;
        const char *names[NBUILTINS];
        for (int i = 0; i < NBUILTINS; i++)
            names[i] = builtins[i].name;
        return cli_unknown(e, ERR_INPUT, "--scenario (a built-in name or a scenario file)", path, names,
                           NBUILTINS);
    }
    FILE *f = input_file(in);
    scenario_defaults(out);
    const char *slash = strrchr(path, '/');
    snprintf(out->name, sizeof out->name, "%s", slash ? slash + 1 : path);
    char line[4096];
    enum { KEYS_MAX = 128 };
    struct { char key[48]; long line; } set_at[KEYS_MAX];   /* where each knob was set */
    int nset = 0;
    long ln = 0;
    size_t len;
    int rc = 0, seen_op = 0, st;
    while ((st = line_get(f, line, sizeof line, &len)) != LINE_EOF) {
        ln++;
        if (st != LINE_OK) {
            rc = line_fail(st, path, ln, sizeof line - 1, e);
            break;
        }
        char *hash = strchr(line, '#');
        if (hash)
            *hash = 0;
        char *l = trim(line);
        if (ln == 1) {
            if (strcmp(l, "collsim-scenario 1") != 0) {
                rc = err_at(e, path, 1, "not a scenario file (first line must be 'collsim-scenario 1')");
                break;
            }
            continue;
        }
        if (!*l)
            continue;
        if (!strncmp(l, "base ", 5) || !strncmp(l, "base\t", 5)) {
            if (seen_op) {
                rc = err_at(e, path, ln, "'base' must come before the settings");
                break;
            }
            const char *bname = trim(l + 5);
            int found = 0;
            for (int i = 0; i < NBUILTINS; i++)
                if (!strcmp(builtins[i].name, bname)) {
                    builtins[i].init(out);
                    found = 1;
                }
            if (!found) {
                rc = err_at(e, path, ln, "unknown built-in scenario '%s'", bname);
                break;
            }
            snprintf(out->name, sizeof out->name, "%s", slash ? slash + 1 : path);
            seen_op = 1;
            continue;
        }
        char *eq = strchr(l, '=');
        if (!eq) {
            rc = err_at(e, path, ln, "expected 'KEY = VALUE'");
            break;
        }
        *eq = 0;
        char *key = trim(l), *val = trim(eq + 1);
        err sub = {0};
        if (whatif_set(out, key, val, &sub) != 0 || check_input_value(key, val, &sub) != 0) {
            rc = err_at(e, path, ln, "%s", sub.msg);
            break;
        }
        const knob *kn = whatif_find_knob(key);
        if (kn)
            mark_given(out, kn);
        int k = 0;
        while (k < nset && strcmp(set_at[k].key, key))
            k++;
        if (k < KEYS_MAX && strlen(key) < sizeof set_at[0].key) {
            snprintf(set_at[k].key, sizeof set_at[k].key, "%s", key);
            set_at[k].line = ln;
            nset += k == nset;
        }
        seen_op = 1;
    }
    if (rc == 0 && ln == 0)
        rc = err_at(e, path, 1, "empty file: not a scenario");
    err sub = {0};
    if (rc == 0 && whatif_check(out, NULL, &sub) != 0) {
        /* Between knobs: at the later line of those the message names. */
        long at = 0;
        for (int k = 0; k < nset; k++)
            if (set_at[k].line > at && has_word(sub.msg, set_at[k].key))
                at = set_at[k].line;
        rc = err_at(e, path, at, "%s", sub.msg);
    }
    return input_close(in, rc, e);
}

int whatif_scenario_load(const char *name_or_path, whatif_scenario *out, err *e)
{
    for (int i = 0; i < NBUILTINS; i++)
        if (!strcmp(builtins[i].name, name_or_path)) {
            builtins[i].init(out);
            return 0;
        }
    return load_file(name_or_path, out, e);
}

/* ---- writing a scenario ------------------------------------------------------ */

static int env_is_default(const whatif_scenario *s, const knob *k)
{
    const nccl_env *v = &s->env;
    if (!strcmp(k->env, "NCCL_PROTO"))
        return v->proto == PROTO_AUTO;
    if (!strcmp(k->env, "NCCL_ALGO"))
        return v->algo == ALGO_AUTO;
    if (!strcmp(k->env, "NCCL_P2P_LEVEL"))
        return v->p2p_level < 0;
    if (!strcmp(k->env, "NCCL_P2P_DISABLE"))
        return !v->p2p_disable;
    if (!strcmp(k->env, "NCCL_SHM_DISABLE"))
        return !v->shm_disable;
    if (!strcmp(k->env, "NCCL_MIN_NCHANNELS"))
        return v->min_channels <= 0;
    if (!strcmp(k->env, "NCCL_MAX_NCHANNELS"))
        return v->max_channels <= 0;
    if (!strcmp(k->env, "NCCL_BUFFSIZE"))
        return v->buffsize_bytes <= 0;
    return v->nthreads <= 0;
}

/* The shortest %g form that reads back as the same double. */
static void fmt_exact(char *buf, size_t n, double v)
{
    for (int prec = 15; prec <= 17; prec++) {
        snprintf(buf, n, "%.*g", prec, v);
        if (strtod(buf, NULL) == v)
            return;
    }
}

int whatif_write(const whatif_scenario *s, FILE *f, err *e)
{
    fprintf(f, "collsim-scenario 1\n# %s, as in effect (collsim whatif --show-scenario)\n",
            s->name);
    for (int i = 0; i < NKNOBS; i++) {
        const knob *k = &knobs[i];
        char buf[4096];
        if (k->type == K_OBS || (k->type == K_HIST && s->accept_nhist == 0) ||
            (k->type == K_ENV && env_is_default(s, k)))
            continue;
        if (!strcmp(k->name, "host_us") && s->host_cycle_us >= 0) {
            /* derived from host_cycle_us when read back */
            fprintf(f, "# host_us = %g, spread from host_cycle_us\n", s->host_us);
            continue;
        }
        if (k->type == K_DBL) {
            fmt_exact(buf, sizeof buf, *(const double *)(const void *)((const char *)s + k->off));
        } else {
            whatif_get(s, k->name, buf, sizeof buf, NULL);
        }
        if (!buf[0])
            continue;
        fprintf(f, "%s = %s\n", k->name, buf);
    }
    for (int i = 0; i < s->nobs; i++) {
        char t[64], sd[64];
        fmt_exact(t, sizeof t, s->obs[i].tok_per_s);
        fmt_exact(sd, sizeof sd, s->obs[i].rel_sd);
        char extra[128];
        whatif_obs_extra(&s->obs[i], extra, sizeof extra, 1);
        fprintf(f, "observe = %s%stok_per_s=%s,sd=%s%s\n", s->obs[i].set,
                s->obs[i].set[0] ? "," : "", t, sd, extra);
    }
    if (ferror(f))
        return err_set(e, ERR_SYSTEM, "write failed");
    return 0;
}

