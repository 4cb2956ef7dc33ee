/* What-if scenarios, the cost model and the run (the scenario, its knobs and
 * files are traces/whatif_scn.c; observations and their fit
 * traces/whatif_fit.c): one cycle of the scenario is generated as trace ops
 * (traces/trace.h) and fed to the replay (traces/replay.h), so a what-if and
 * a replayed trace go through the same timing code. Compute follows
 * docs/scenario.md: each compute op lasts the bytes one GPU reads for it
 * (weights from the model's configuration, KV cache) over the GPU memory
 * bandwidth times an efficiency; a forward over n tokens reads the union of
 * the routed experts they choose, E_eff (1 - (1 - k/E_eff)^n). */
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
#include "traces/replay.h"
#include "traces/trace.h"
#include "validate/calib.h"
#include "validate/fit.h"

whatif_ctx *whatif_ctx_new(void) { return calloc(1, sizeof(whatif_ctx)); }

void whatif_ctx_free(whatif_ctx *c)
{
    if (!c)
        return;
    for (int i = 0; i < c->n; i++) {
        coll_ctx_free(c->c[i]);
        topo_free(c->t[i]);
    }
    free(c);
}

static int ctx_topo(whatif_ctx *c, const char *name, const char *calib_path, topo **t,
                    coll_ctx **cc, err *e)
{
    char key[2 * WHATIF_STR + 2];
    snprintf(key, sizeof key, "%s|%s", name, calib_path);
    for (int i = 0; i < c->n; i++)
        if (!strcmp(c->name[i], key)) {
            *t = c->t[i];
            *cc = c->c[i];
            return 0;
        }
    topo *nt = NULL;
    TRY(calib_path[0] ? calib_load_topo(name, calib_path, &nt, e) : topo_load(name, &nt, e));
    coll_ctx *nc = coll_ctx_new(nt);
    if (!nc) {
        topo_free(nt);
        return err_set(e, ERR_SYSTEM, "%s: cannot create the collective model", name);
    }
    if (c->n == CTX_TOPOS) {   /* evict the oldest */
        coll_ctx_free(c->c[0]);
        topo_free(c->t[0]);
        memmove(&c->name[0], &c->name[1], sizeof c->name[0] * (CTX_TOPOS - 1));
        memmove(&c->t[0], &c->t[1], sizeof c->t[0] * (CTX_TOPOS - 1));
        memmove(&c->c[0], &c->c[1], sizeof c->c[0] * (CTX_TOPOS - 1));
        c->n--;
    }
    snprintf(c->name[c->n], sizeof c->name[c->n], "%s", key);
    c->t[c->n] = nt;
    c->c[c->n] = nc;
    c->n++;
    *t = nt;
    *cc = nc;
    return 0;
}

/* ---- the cost model ------------------------------------------------------------ */

double whatif_distinct_experts(int experts, int topk, double skew, double n)
{
    if (experts <= 0 || topk <= 0 || n <= 0)
        return 0;
    if (topk >= experts)
        return experts;
    /* Skewed routing draws from a smaller pool: k at skew 1, E at 0. */
    double pool = topk + (experts - topk) * (1 - skew);
    return pool * (1 - pow(1 - topk / pool, n));
}

/* Bytes one GPU reads in a forward over ntok tokens (docs/scenario.md). */
typedef struct fwd_cost {
    double attn;        /* per layer: MLA weights and the KV cache */
    double dense;       /* per dense layer: its MLP */
    double moe_other;   /* per MoE layer: router and shared experts */
    double expert;      /* per MoE layer: the union of the routed experts */
    double lmhead;
    double distinct;    /* expected distinct routed experts */
} fwd_cost;

static void fwd_bytes(const whatif_scenario *s, int ntok, fwd_cost *c)
{
    double h = s->hidden, wb = s->weight_bytes, tp = s->tp, H = s->heads;
    /* Replicated on every rank: the q and kv down-projections (with the
     * RoPE key); split over tp: q up (or q), kv up, output projection. */
    double rep = h * (s->q_lora_rank + s->kv_lora_rank + s->qk_rope_dim) * wb;
    double qin = s->q_lora_rank > 0 ? s->q_lora_rank : h;
    double split = (qin * H * (s->qk_nope_dim + s->qk_rope_dim) +
                    (double)s->kv_lora_rank * H * (s->qk_nope_dim + s->v_head_dim) +
                    H * s->v_head_dim * h) * wb / tp;
    /* The latent KV cache is not split by heads: every rank reads it all,
     * once per forward whatever the number of new tokens per request. */
    double kv = (double)s->batch * s->context_len * (s->kv_lora_rank + s->qk_rope_dim) *
                (double)coll_dtype_size(s->dtype);
    c->attn = rep + split + kv;
    c->dense = 3 * h * s->dense_inter * wb / tp;
    c->moe_other = h * s->moe_experts * wb + 3 * h * s->moe_inter * s->moe_shared * wb / tp;
    c->distinct = whatif_distinct_experts(s->moe_experts, s->moe_topk, s->routing_skew, ntok);
    c->expert = c->distinct * 3 * h * s->moe_inter * s->expert_weight_bytes / tp;
    c->lmhead = (double)s->vocab * h * wb / tp;
}

static double target_bytes(const whatif_scenario *s, const fwd_cost *c)
{
    int moe = s->layers - s->dense_layers;
    return s->layers * c->attn + s->dense_layers * c->dense +
           moe * (c->moe_other + c->expert) + c->lmhead;
}

static int target_tokens(const whatif_scenario *s)
{
    return (s->mode == WHATIF_EAGLE3 ? s->draft_tokens : 1) * s->batch;
}

int whatif_phase_graph(const whatif_scenario *s, trace_phase p)
{
    /* SGLang's graph runners capture batches up to --cuda-graph-max-bs and
     * run a larger one eagerly (can_run: batch_size <= max_bs; the target's
     * runner serves decode and TARGET_VERIFY, the draft runners theirs). */
    if (s->cuda_graph_max_bs > 0 && s->batch > s->cuda_graph_max_bs)
        return 0;
    int g = p == PHASE_DECODE ? s->decode_graph : p == PHASE_DRAFT ? s->draft_graph
            : p == PHASE_VERIFY ? s->verify_graph : s->extend_graph;
    return g >= 0 ? g : s->graph;
}

/* ---- one cycle as trace ops ----------------------------------------------------- */

typedef struct emitter {
    whatif_op_fn *fn;
    void *arg;
    double expert_us;   /* target forward: sum of the routed-expert ops */
} emitter;

static int emit_compute(emitter *m, double us, int kernels, const char *name, err *e)
{
    trace_op op;
    trace_op_init(&op, OP_COMPUTE);
    op.dur_us = us;
    op.kernels = kernels;
    snprintf(op.name, sizeof op.name, "%s", name);
    return m->fn(m->arg, &op, e);
}

/* One allreduce over ntok tokens: tokens x hidden x dtype bytes (the one
 * place the payload is derived). */
static int emit_ar(emitter *m, const whatif_scenario *s, int ntok, double forced_us, err *e)
{
    /* One rank: vLLM's GroupCoordinator.all_reduce, which SGLang's
     * parallel_state derives from, returns its input when the group has one
     * rank; no collective is called, so none is charged. */
    if (s->tp <= 1)
        return 0;
    trace_op op;
    trace_op_init(&op, OP_COLL);
    op.coll = COLL_ALLREDUCE;
    op.bytes = (uint64_t)s->hidden * (uint64_t)coll_dtype_size(s->dtype) * (uint64_t)ntok;
    op.dtype = s->dtype;
    op.group = s->tp;
    if (forced_us > 0)
        op.measured_us = forced_us;   /* a phase override, replayed as given */
    return m->fn(m->arg, &op, e);
}

/* moe=ep: NCCL's all-to-all; moe=ep-push: one push kernel per all-to-all
 * (DeepEP-style; models/coll's oneshot-push for all-to-all). */
static int is_ep(const whatif_scenario *s)
{
    return !strcmp(s->moe, "ep") || !strcmp(s->moe, "ep-push");
}

static coll_algo ep_algo(const whatif_scenario *s)
{
    return !strcmp(s->moe, "ep-push") ? ALGO_ONESHOT_PUSH : ALGO_AUTO;
}

/* Expert parallelism: the bytes one rank sends in a dispatch (and gets back
 * in a combine) all-to-all: its share of the ntok tokens, each to moe_topk
 * experts spread evenly over the tp ranks (itself included), hidden x dtype
 * bytes a copy. */
static uint64_t ep_a2a_bytes(const whatif_scenario *s, int ntok)
{
    uint64_t share = ((uint64_t)ntok + (uint64_t)s->tp - 1) / (uint64_t)s->tp;
    return share * (uint64_t)s->moe_topk * (uint64_t)s->hidden *
           (uint64_t)coll_dtype_size(s->dtype);
}

static int emit_a2a(emitter *m, const whatif_scenario *s, int ntok, err *e)
{
    trace_op op;
    trace_op_init(&op, OP_COLL);
    op.coll = COLL_ALLTOALL;
    op.algo = ep_algo(s);
    op.bytes = ep_a2a_bytes(s, ntok);
    op.dtype = s->dtype;
    op.group = s->tp;
    return m->fn(m->arg, &op, e);
}

static int emit_phase(emitter *m, trace_phase ph, int graph, const char *name, err *e)
{
    trace_op op;
    trace_op_init(&op, OP_PHASE);
    op.phase = ph;
    op.graph = graph;
    snprintf(op.name, sizeof op.name, "%s", name);
    return m->fn(m->arg, &op, e);
}

static int emit_host(emitter *m, double us, const char *name, err *e)
{
    if (!(us > 0))
        return 0;
    trace_op op;
    trace_op_init(&op, OP_HOST);
    op.dur_us = us;
    snprintf(op.name, sizeof op.name, "%s", name);
    return m->fn(m->arg, &op, e);
}

static int emit_sync(emitter *m, const char *name, err *e)
{
    trace_op op;
    trace_op_init(&op, OP_SYNC);
    snprintf(op.name, sizeof op.name, "%s", name);
    return m->fn(m->arg, &op, e);
}

/* One MoE layer's reads after attention: router and shared expert, then the
 * union of the routed experts. Expert parallelism (moe=ep, models/tlp/)
 * replaces this with its own dispatch, expert work and combine. */
static int emit_moe(emitter *m, const fwd_cost *c, double us_per_B, int kb, int ke, err *e)
{
    TRY(emit_compute(m, c->moe_other * us_per_B, kb, "router_shared", e));
    TRY(emit_compute(m, c->expert * us_per_B, ke, "experts", e));
    m->expert_us += c->expert * us_per_B;
    return 0;
}

/* The target forward over ntok tokens. */
static int emit_target(const whatif_scenario *s, emitter *m, int ntok, double forced, err *e)
{
    double us_per_B = 1e6 / (s->gpu_mem_GBps * 1e9 * s->efficiency);
    fwd_cost c;
    fwd_bytes(s, ntok, &c);
    int nar = s->allreduces_per_layer, kpl = s->kernels_per_layer;
    int ka = kpl / 2, ke = kpl / 4, kb = kpl - ka - ke;
    for (int l = 0; l < s->layers; l++) {
        TRY(emit_compute(m, c.attn * us_per_B, ka, "attention", e));
        if (nar >= 1)
            TRY(emit_ar(m, s, ntok, forced, e));
        if (l < s->dense_layers) {
            TRY(emit_compute(m, c.dense * us_per_B, kb + ke, "dense_mlp", e));
        } else if (is_ep(s) && s->tp > 1) {
            /* Expert parallelism: the routed tokens go to their experts'
             * ranks and come back; each rank reads its own experts whole
             * (the same bytes per rank on average as split over tp). */
            TRY(emit_a2a(m, s, ntok, e));
            TRY(emit_moe(m, &c, us_per_B, kb, ke, e));
            TRY(emit_a2a(m, s, ntok, e));
            continue;
        } else {
            TRY(emit_moe(m, &c, us_per_B, kb, ke, e));
        }
        for (int a = 1; a < nar; a++)
            TRY(emit_ar(m, s, ntok, forced, e));
    }
    return emit_compute(m, c.lmhead * us_per_B, 1, "lm_head", e);
}

/* n draft-head forwards over ntok tokens each: the head's weights read once
 * per forward (memory-bound), split around its allreduces. */
static int emit_draft(const whatif_scenario *s, emitter *m, int n, int ntok, const char *name,
                      err *e)
{
    double deff = s->draft_efficiency > 0 ? s->draft_efficiency : s->efficiency;
    int nar = s->draft_allreduces;
    double bytes = s->draft_params_M * 1e6 * s->weight_bytes / (nar > 0 ? s->tp : 1);
    double us = bytes * 1e6 / (s->gpu_mem_GBps * 1e9 * deff);
    int kper = s->draft_kernels / (nar + 1);
    for (int d = 0; d < n; d++)
        for (int a = 0; a <= nar; a++) {
            TRY(emit_compute(m, us / (nar + 1), a == nar ? s->draft_kernels - kper * nar : kper,
                             name, e));
            if (a < nar)
                TRY(emit_ar(m, s, ntok, s->draft_allreduce_us, e));
        }
    return 0;
}

typedef enum fwd_kind { FWD_DECODE, FWD_DRAFT, FWD_VERIFY, FWD_EXTEND } fwd_kind;

/* One phase with its host side: without the overlap scheduler the CPU does
 * host_us of work, launches the phase (one graph, or kernel by kernel), then
 * for each blocking copy waits for the GPU and does host_us more; with it,
 * the same host work runs after the launch, while the GPU works, and the
 * copies are of results already there (they do not block). */
static int emit_block(const whatif_scenario *s, emitter *m, fwd_kind k, int overlap, err *e)
{
    static const trace_phase ph[] = {PHASE_DECODE, PHASE_DRAFT, PHASE_VERIFY, PHASE_DRAFT};
    static const char *const names[] = {"decode", "draft", "verify", "draft_extend"};
    int syncs = k == FWD_DECODE ? s->decode_syncs : k == FWD_DRAFT ? s->draft_syncs
                : k == FWD_VERIFY ? s->verify_syncs : s->extend_syncs;
    int graph = whatif_phase_graph(s, k == FWD_EXTEND ? PHASE_PREFILL : ph[k]);
    if (!overlap)
        TRY(emit_host(m, s->host_us, "host", e));
    TRY(emit_phase(m, ph[k], graph, names[k], e));
    int eagle = s->mode == WHATIF_EAGLE3;
    switch (k) {
    case FWD_DECODE:
    case FWD_VERIFY:
        TRY(emit_target(s, m, target_tokens(s),
                        eagle ? s->verify_allreduce_us : s->decode_allreduce_us, e));
        break;
    case FWD_DRAFT:
        TRY(emit_draft(s, m, s->draft_steps - 1, s->batch * s->draft_topk, "draft", e));
        break;
    case FWD_EXTEND:
        /* over the accepted tokens, padded to draft_steps + 1 per request
         * in SGLang's draft-extend graph */
        TRY(emit_draft(s, m, 1, s->batch * (s->draft_steps + 1), "draft_extend", e));
        break;
    }
    if (overlap)
        return emit_host(m, s->host_us * (syncs + 1), "host (overlapped)", e);
    for (int i = 0; i < syncs; i++) {
        TRY(emit_sync(m, "sync", e));
        TRY(emit_host(m, s->host_us, "host", e));
    }
    return 0;
}

static int feed_cycle(const whatif_scenario *s, emitter *m, double tokens, err *e)
{
    trace_op op;
    trace_op_init(&op, OP_CYCLE);
    op.tokens = tokens;
    TRY(m->fn(m->arg, &op, e));
    int eagle = s->mode == WHATIF_EAGLE3;
    int overlap = s->overlap >= 0 ? s->overlap : !eagle;
    if (!eagle)
        return emit_block(s, m, FWD_DECODE, overlap, e);
    TRY(emit_block(s, m, FWD_DRAFT, overlap, e));
    TRY(emit_block(s, m, FWD_VERIFY, overlap, e));
    return emit_block(s, m, FWD_EXTEND, overlap, e);
}

/* ---- running ---------------------------------------------------------------------- */

int whatif_check(const whatif_scenario *s, const topo *t, err *e)
{
    if (t && s->tp > topo_ngpus(t))
        return err_set(e, ERR_USAGE, "tp %d is larger than the %d GPUs of %s", s->tp,
                       topo_ngpus(t), s->topo);
    if (s->mode == WHATIF_EAGLE3 && s->accept_nhist == 0 &&
        (s->accept_len < 1 || s->accept_len > s->draft_tokens))
        return err_set(e, ERR_USAGE, "accept_len %g must be within 1..draft_tokens (%d)",
                       s->accept_len, s->draft_tokens);
    if (s->mode == WHATIF_EAGLE3 && s->draft_topk == 1 && s->draft_tokens != s->draft_steps + 1)
        return err_set(e, ERR_USAGE, "draft_tokens %d with draft_topk 1 must be draft_steps + 1 "
                       "(%d), as SGLang sets it", s->draft_tokens, s->draft_steps + 1);
    /* a tree: the draft tokens after the first are chosen from topk
     * candidates at the first step and topk^2 at each later one */
    long cand = (long)s->draft_topk + (long)(s->draft_steps - 1) * s->draft_topk * s->draft_topk;
    if (s->mode == WHATIF_EAGLE3 && s->draft_topk > 1 && s->draft_tokens - 1 > cand)
        return err_set(e, ERR_USAGE, "draft_tokens %d: draft_steps %d with draft_topk %d offer "
                       "only %ld candidates", s->draft_tokens, s->draft_steps, s->draft_topk, cand);
    if (s->dense_layers > s->layers)
        return err_set(e, ERR_USAGE, "dense_layers %d is more than layers %d", s->dense_layers,
                       s->layers);
    if (s->moe_topk > s->moe_experts)
        return err_set(e, ERR_USAGE, "moe_topk %d is more than moe_experts %d", s->moe_topk,
                       s->moe_experts);
    if (s->moe[0] && strcmp(s->moe, "tp") && !is_ep(s))
        return err_set(e, ERR_USAGE, "moe: '%s' (tp, ep or ep-push)", s->moe);
    return 0;
}

static int sink_replay(void *arg, const trace_op *op, err *e) { return replay_op(arg, op, e); }

static int resolve_bw(whatif_scenario *s, const topo *t, err *e)
{
    if (s->gpu_mem_GBps > 0)
        return 0;
    s->gpu_mem_GBps = topo_params_get(t)->gpu_mem_Bps / 1e9;
    if (!(s->gpu_mem_GBps > 0))
        return err_set(e, ERR_USAGE,
                       "%s has no GPU memory bandwidth (gpu_mem_GBps): set the knob", s->topo);
    return 0;
}

typedef struct tl_req {
    timeline *doc;
    int pid;
    const char *label;
} tl_req;

static int run_with(whatif_ctx *c, const whatif_scenario *s0, whatif_result *out,
                    const tl_req *tl, err *e)
{
    topo *tp = NULL;
    coll_ctx *cc = NULL;
    TRY(ctx_topo(c, s0->topo, s0->calib, &tp, &cc, e));
    TRY(whatif_check(s0, tp, e));
    whatif_scenario s = *s0;
    TRY(resolve_bw(&s, tp, e));
    replay_opts o;
    replay_opts_init(&o);
    o.allreduce = s.allreduce;
    o.env = s.env;
    o.graph = -1;       /* each phase says */
    o.measured = 1;     /* the phase overrides */
    o.op_host_us = s.eager_op_us;
    o.coll_host_us = s.eager_coll_us;
    o.sync_us = s.sync_us;
    o.host_jitter = s.host_jitter;
    o.ranks = s.tp;
    replay *r = replay_new(tp, cc, &o);
    if (!r)
        return err_set(e, ERR_SYSTEM, "out of memory");
    if (tl)
        replay_timeline_part(r, tl->doc, tl->pid, tl->label);
    double tokens = (s.mode == WHATIF_EAGLE3 ? s.accept_len : 1.0) * s.batch;
    replay_result rr;
    emitter m = {sink_replay, r, 0};
    int rc = feed_cycle(&s, &m, tokens, e);
    if (rc == 0)
        rc = replay_finish(r, &rr, e);
    replay_free(r);
    TRY(rc);
    memset(out, 0, sizeof *out);
    out->tok_per_s = rr.tok_per_s;
    out->cycle_us = rr.cycle_us;
    out->tokens_per_cycle = tokens;
    whatif_parts *p = &out->parts;
    p->compute_us = rr.compute_us;
    p->comm_us = rr.comm_us;
    p->launch_us = rr.launch_us;
    p->host_us = rr.host_us;
    p->wait_us = rr.wait_us;
    p->idle_us = rr.idle_us;
    p->expert_us = m.expert_us;
    p->draft_us = rr.phase_us[PHASE_DRAFT];
    p->verify_us = rr.phase_us[PHASE_VERIFY];
    int eagle = s.mode == WHATIF_EAGLE3;
    p->fwd_comm_us = rr.phase_part_us[eagle ? PHASE_VERIFY : PHASE_DECODE][REPLAY_COMM];
    int fph = eagle ? PHASE_VERIFY : PHASE_DECODE;
    if (rr.phase_colls[fph] > 0) {
        out->ar_kernel_us = rr.phase_coll_us[fph] / rr.phase_colls[fph];
        out->ar_kernel_max_us = rr.phase_coll_max_us[fph];
    }
    if (eagle && rr.phase_colls[PHASE_DRAFT] > 0)
        out->draft_ar_kernel_us = rr.phase_coll_us[PHASE_DRAFT] / rr.phase_colls[PHASE_DRAFT];
    int ntok = target_tokens(&s);
    fwd_cost fc;
    fwd_bytes(&s, ntok, &fc);
    out->target_MB = target_bytes(&s, &fc) / 1e6;
    out->expert_MB = (s.layers - s.dense_layers) * fc.expert / 1e6;
    out->distinct_experts = fc.distinct;
    if (is_ep(&s) && s.tp > 1 && s.layers > s.dense_layers) {
        coll_req a;
        coll_req_init(&a, tp);
        a.kind = COLL_ALLTOALL;
        a.algo = ep_algo(&s);
        a.bytes = ep_a2a_bytes(&s, ntok);
        a.dtype = s.dtype;
        a.nranks = s.tp;
        a.env = s.env;
        a.graph = whatif_phase_graph(&s, eagle ? PHASE_VERIFY : PHASE_DECODE);
        coll_result ar;
        TRY(coll_predict(cc, &a, &ar, e));
        out->alltoall_us = (double)ar.time_ps / 1e6;
    }
    /* the target forward's allreduce, for the report: none on one rank */
    if (s.tp <= 1) {
        out->no_allreduce = 1;
        return 0;
    }
    double forced = eagle ? s.verify_allreduce_us : s.decode_allreduce_us;
    if (forced > 0) {
        out->allreduce_us = forced;
        out->algo = s.allreduce;
        return 0;
    }
    coll_req q;
    coll_req_init(&q, tp);
    q.kind = COLL_ALLREDUCE;
    q.bytes = (uint64_t)s.hidden * (uint64_t)coll_dtype_size(s.dtype) * (uint64_t)ntok;
    q.dtype = s.dtype;
    q.nranks = s.tp;
    q.algo = s.allreduce;
    q.env = s.env;
    q.graph = whatif_phase_graph(&s, eagle ? PHASE_VERIFY : PHASE_DECODE);
    coll_result res;
    TRY(coll_predict(cc, &q, &res, e));
    out->allreduce_us = (double)res.time_ps / 1e6;
    out->algo = res.algo;
    out->proto = res.proto;
    out->channels = res.channels;
    return 0;
}

int whatif_run_ctx(whatif_ctx *c, const whatif_scenario *s, whatif_result *out, err *e)
{
    return run_with(c, s, out, NULL, e);
}

int whatif_run(const whatif_scenario *s, whatif_result *out, err *e)
{
    whatif_ctx *c = whatif_ctx_new();
    if (!c)
        return err_set(e, ERR_SYSTEM, "out of memory");
    int rc = whatif_run_ctx(c, s, out, e);
    whatif_ctx_free(c);
    return rc;
}

int whatif_timeline(whatif_ctx *c, const whatif_scenario *s, timeline *doc, int pid,
                    const char *label, err *e)
{
    tl_req t = {doc, pid, label};
    whatif_result r;
    return run_with(c, s, &r, &t, e);
}

int whatif_launch_us(whatif_ctx *c, const whatif_scenario *s, double *us, err *e)
{
    topo *tp = NULL;
    coll_ctx *cc = NULL;
    TRY(ctx_topo(c, s->topo, s->calib, &tp, &cc, e));
    *us = (double)topo_params_get(tp)->launch_ps / 1e6;
    return 0;
}

int whatif_derive(whatif_ctx *c, whatif_scenario *s, err *e)
{
    topo *tp = NULL;
    coll_ctx *cc = NULL;
    TRY(ctx_topo(c, s->topo, s->calib, &tp, &cc, e));
    TRY(whatif_check(s, tp, e));
    return resolve_bw(s, tp, e);
}

static int write_mem(const whatif_scenario *s, char *buf, size_t n)
{
    FILE *f = fmemopen(buf, n, "w");
    if (!f)
        return -1;
    whatif_scenario t = *s;
    t.nobs = 0;
    snprintf(t.name, sizeof t.name, "x");
    snprintf(t.fit, sizeof t.fit, "none");
    int rc = whatif_write(&t, f, NULL);
    if (fclose(f) != 0)
        rc = -1;
    return rc;
}

int whatif_same(const whatif_scenario *s, const whatif_scenario *o)
{
    enum { N = 16384 };
    char *a = calloc(2, N);
    if (!a)
        return 0;
    int same = !write_mem(s, a, N) && !write_mem(o, a + N, N) && !strcmp(a, a + N);
    free(a);
    return same;
}

int whatif_obs_scenario(const whatif_scenario *s, int i, whatif_scenario *out, err *e)
{
    *out = *s;
    TRY(whatif_apply_kvs(out, s->obs[i].set, e));
    /* a calibration profile of the box in effect applies to its observations */
    if (!strcmp(out->topo, s->topo))
        snprintf(out->calib, sizeof out->calib, "%s", s->calib);
    return 0;
}

int whatif_emit_cycle(const whatif_scenario *s, double tokens, whatif_op_fn *fn, void *arg,
                      err *e)
{
    if (!(s->gpu_mem_GBps > 0))
        return err_set(e, ERR_USAGE, "whatif_emit_cycle: GPU bandwidth not resolved");
    emitter m = {fn, arg, 0};
    return feed_cycle(s, &m, tokens, e);
}

