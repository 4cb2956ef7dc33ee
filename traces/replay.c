/* Replay: a critical-path walk over the ops of a trace, per rank. Each rank
 * has a CPU lane (its host thread) and its GPU streams; each lane carries its
 * current time and the breakdown of the path that led to it (compute, comm,
 * launch, idle, wait, host, in ps). An op advances a lane; a GPU op that is
 * issued by the CPU cannot start before the CPU issued it (the stream adopts
 * the CPU lane's path if that is later); a sync makes the CPU adopt its GPU
 * streams' path; a collective starts on every rank when the last rank's
 * kernel is ready (the others book the difference as wait). A cycle starts
 * with all lanes at 0 (the serving loop's CPU rendezvous) and ends when the
 * last lane of the last rank is done; every rank's path is padded with wait
 * to that end, so each rank's parts sum to the cycle and the reported
 * breakdown (the mean over ranks) does too. Ranks differ only by the jitter
 * of host work (host_jitter: each host item on each rank costs an extra
 * exponential share, drawn at the midpoints of n equal-probability strata in
 * a random order per item, so every item's slowest rank draws ln 2n, close
 * to the expected maximum of n draws); without jitter one rank stands for
 * all. Collective times come from coll_predict through coll_ctx's cache (a
 * collective on an otherwise idle fabric is a pure function of the request).
 * Concurrent collectives on two streams are each predicted alone
 * (docs/traces.md, "Replay model and limits"). */
#include "traces/replay.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "sim/json.h"
#include "traces/trace.h"

enum { TL_MAX = 1 << 16, LANE_CPU = TRACE_MAX_STREAMS, NLANES = TRACE_MAX_STREAMS + 1,
       TL_RANKS = 8 };

typedef struct spath {
    sim_ps t;                      /* time since the cycle started */
    sim_ps part[REPLAY_NPARTS];    /* compute, comm, launch, idle, wait, host */
} spath;

enum { P_COMPUTE = REPLAY_COMPUTE, P_COMM = REPLAY_COMM, P_LAUNCH = REPLAY_LAUNCH,
       P_IDLE = REPLAY_IDLE, P_WAIT = REPLAY_WAIT, P_HOST = REPLAY_HOST };

/* One rank: its GPU streams and CPU lane, and where its current phase began. */
typedef struct rank_st {
    spath lane[NLANES];
    spath phase_at;                /* its GPU path when the current phase began */
} rank_st;

typedef struct tl_ev {
    int rank, lane;
    sim_ps start, end;
    trace_op_kind kind;
    char label[TRACE_NAME_MAX];
    /* args */
    uint64_t bytes;
    coll_kind coll;
    coll_algo algo;
    int kernels;
    double wait_us;        /* captured wait for other ranks, < 0 none */
    int busy_link;         /* the link busy longest in its prediction, -1 none */
    sim_ps busy_ps;
} tl_ev;

/* A predicted collective of the drawn cycle and its cached link use. */
typedef struct tl_links {
    sim_ps start, dur;
    const coll_link_use *use;  /* owned by the collective cache */
    int nlinks;
} tl_links;

typedef struct tl_phase {
    trace_phase phase;
    sim_ps start, end;
} tl_phase;

enum { TL_PHASES = 256 };

struct replay {
    const topo *t;
    coll_ctx *c;
    replay_opts o;
    sim_ps launch_ps, node_ps, turn_ps, op_host_ps, coll_host_ps, sync_ps;
    /* the collective being fed (coll_issue): NCCL's host work in an eager
     * call beyond the launch, its node in a CUDA graph, 1 if NCCL's */
    sim_ps call_ps, call_node_ps;
    int call_nccl;
    int ngpus;
    int nranks;                    /* ranks simulated (1 without jitter) */
    int nranks_group;              /* ranks the trace stands for (stratified quantiles) */
    rank_st *rk;
    double *qtab;                  /* the nranks quantiles of Exp(1) */
    int *perm;                     /* scratch: the quantile each rank gets */
    long item;                     /* host items drawn this cycle */
    int in_cycle;
    int overflow;                  /* a time went past REPLAY_MAX_PS */
    double cycle_tokens;
    int graph;                     /* current phase runs as a CUDA graph */
    trace_phase phase;
    /* totals (sums over ranks of ps; divided by nranks at the end) */
    long cycles;
    double tokens;
    double total, part[REPLAY_NPARTS], phase_ps[PHASE_N];
    double phase_part[PHASE_N][REPLAY_NPARTS];
    double ncoll[PHASE_N], coll_ps[PHASE_N], coll_max_ps[PHASE_N]; /* collective kernels */
    sim_ps cyc_coll_max[PHASE_N];  /* this cycle's longest collective kernel, per phase */
    uint64_t ops, colls, predictions;
    coll_algo last_algo;           /* of the last collective (timeline args) */
    /* timeline of the first cycle */
    FILE *tl;
    tl_ev *tlev;
    int ntl, tl_done;
    tl_phase tlph[TL_PHASES];
    int ntlph;
    double tl_tokens;
    unsigned lanes_used;           /* bit l: lane l has events */
    int tl_part, tl_pid;           /* replay_timeline_part: into tl_doc */
    char stream_src[TRACE_MAX_STREAMS][24];  /* the captured stream behind each (meta
                                                streams), "" unknown */
    timeline *tl_doc;
    char tl_label[256];
    tl_links *tllk;                /* the drawn cycle's collectives with link use */
    int ntllk;
    const coll_link_use *last_use; /* of the last collective (coll_time) */
    int last_nlinks;
};

/* The largest time a replay holds, 2^62 ps (53 days): int64 sums of times
 * below it cannot overflow, so a duration, a scale or a trace length that
 * goes past it is refused (exit 3), never wrapped. */
#define REPLAY_MAX_PS ((sim_ps)1 << 62)

static sim_ps us_to_ps(replay *r, double us)
{
    double ps = us * 1e6;
    if (!(ps >= 0 && ps <= (double)REPLAY_MAX_PS)) {
        r->overflow = 1;
        return 0;
    }
    return (sim_ps)llround(ps);
}

/* a x n, or flag the replay. */
static sim_ps mul_ps(replay *r, sim_ps a, long n)
{
    if (n > 0 && a > REPLAY_MAX_PS / n) {
        r->overflow = 1;
        return 0;
    }
    return a * n;
}

void replay_opts_init(replay_opts *o)
{
    memset(o, 0, sizeof *o);
    o->allreduce = ALGO_AUTO;
    o->proto = PROTO_AUTO;
    o->env.p2p_level = -1;
    o->env.algo = ALGO_AUTO;
    o->env.proto = PROTO_AUTO;
    o->graph = -1;
    o->compute_scale = 1.0;
    o->launch_us = -1;
    o->graph_node_us = -1;
    o->sync_us = -1;
    o->coll_host_us = -1;
}

replay *replay_new(const topo *t, coll_ctx *c, const replay_opts *o)
{
    replay *r = calloc(1, sizeof *r);
    if (!r)
        return NULL;
    r->t = t;
    r->c = c;
    if (o)
        r->o = *o;
    else
        replay_opts_init(&r->o);
    const topo_params *tp = t ? topo_params_get(t) : NULL;
    if (tp && !r->o.captured_overhead) {
        r->launch_ps = tp->launch_ps;
        r->node_ps = tp->graph_node_ps;
    }
    if (r->o.launch_us >= 0)
        r->launch_ps = us_to_ps(r, r->o.launch_us);
    if (r->o.graph_node_us >= 0)
        r->node_ps = us_to_ps(r, r->o.graph_node_us);
    if (r->o.captured_overhead)
        r->launch_ps = r->node_ps = 0;
    /* an eager kernel's turnaround: the topology's, else a graph node's */
    r->turn_ps = tp && tp->kernel_turn_ps > 0 && !r->o.captured_overhead && r->o.graph_node_us < 0
                     ? tp->kernel_turn_ps : r->node_ps;
    r->op_host_ps = r->o.op_host_us > 0 ? us_to_ps(r, r->o.op_host_us) : 0;
    r->coll_host_ps = r->o.coll_host_us >= 0 ? us_to_ps(r, r->o.coll_host_us) : r->op_host_ps;
    r->sync_ps = r->o.sync_us > 0 ? us_to_ps(r, r->o.sync_us) : 0;
    r->ngpus = t ? topo_ngpus(t) : 0;
    int group = r->o.ranks > 0 ? r->o.ranks : r->ngpus > 0 ? r->ngpus : 1;
    if (group > REPLAY_RANKS_MAX)
        group = REPLAY_RANKS_MAX;
    r->nranks_group = group;
    r->nranks = r->o.host_jitter > 0 ? group : 1;
    r->rk = calloc((size_t)r->nranks, sizeof *r->rk);
    r->qtab = calloc((size_t)r->nranks, sizeof *r->qtab);
    r->perm = calloc((size_t)r->nranks, sizeof *r->perm);
    if (!r->rk || !r->qtab || !r->perm) {
        replay_free(r);
        return NULL;
    }
    /* Exp(1) at the midpoints of n equal-probability strata */
    for (int i = 0; i < r->nranks; i++)
        r->qtab[i] = -log(1 - (i + 0.5) / r->nranks);
    return r;
}

void replay_free(replay *r)
{
    if (!r)
        return;
    free(r->tlev);
    free(r->tllk);
    free(r->rk);
    free(r->qtab);
    free(r->perm);
    free(r);
}

void replay_timeline(replay *r, FILE *f) { r->tl = f; }

void replay_timeline_part(replay *r, timeline *doc, int pid, const char *label)
{
    r->tl = doc->f;
    r->tl_doc = doc;
    r->tl_part = 1;
    r->tl_pid = pid;
    snprintf(r->tl_label, sizeof r->tl_label, "%s", label);
}

static void tl_add(replay *r, int rank, int lane, sim_ps start, sim_ps end, const trace_op *op,
                   const char *what)
{
    if (!r->tl || r->tl_done || start == end || rank >= TL_RANKS || (r->tl_part && rank > 0))
        return;
    if (!r->tlev && !(r->tlev = calloc(TL_MAX, sizeof *r->tlev)))
        return;
    if (r->ntl == TL_MAX)
        return;
    tl_ev *ev = &r->tlev[r->ntl++];
    ev->rank = rank;
    ev->lane = lane;
    ev->start = start;
    ev->end = end;
    ev->kind = op ? op->kind : OP_N;
    if (what && !strncmp(what, "wait", 4))
        ev->kind = OP_WAIT;
    else if (what && (!strcmp(what, "sync") || !strcmp(what, "issue")))
        ev->kind = OP_HOST;
    ev->bytes = op && op->kind == OP_COLL ? op->bytes : 0;
    ev->coll = op && op->kind == OP_COLL ? op->coll : COLL_ALLREDUCE;
    ev->algo = r->last_algo;
    ev->kernels = op ? op->kernels : 0;
    ev->wait_us = op && op->kind == OP_COLL ? op->wait_us : -1;
    ev->busy_link = -1;
    ev->busy_ps = 0;
    /* the busiest wire, never an internal budget such as gpu0.block-stores */
    for (int l = 0; op && op->kind == OP_COLL && l < r->last_nlinks; l++)
        if (coll_ctx_link_is_topo(r->c, l) && r->last_use[l].busy_ps > ev->busy_ps) {
            ev->busy_ps = r->last_use[l].busy_ps;
            ev->busy_link = l;
        }
    r->lanes_used |= 1u << lane;
    char sz[32];
    if (op && op->kind == OP_COLL)
        tl_size_text(op->bytes, sz, sizeof sz);
    if (what)
        snprintf(ev->label, sizeof ev->label, "%s", what);
    else if (!op)
        snprintf(ev->label, sizeof ev->label, "launch");
    else if (op->kind == OP_COLL && !strcmp(op->name, "unsized"))
        snprintf(ev->label, sizeof ev->label, "%s (size not captured)", coll_kind_name(op->coll));
    else if (op->kind == OP_COLL) {
        char lab[TRACE_NAME_MAX + 64];
        snprintf(lab, sizeof lab, "%s%s%s %s", op->name, op->name[0] ? ": " : "",
                 coll_kind_name(op->coll), sz);
        snprintf(ev->label, sizeof ev->label, "%.*s", (int)sizeof ev->label - 1, lab);
    }
    else if (op->name[0])
        snprintf(ev->label, sizeof ev->label, "%s", op->name);
    else
        snprintf(ev->label, sizeof ev->label, "%s",
                 op->kind == OP_COMPUTE ? "compute" : op->kind == OP_IDLE ? "idle"
                 : op->kind == OP_HOST ? "host" : "op");
}

/* Lane l of rank k takes d more, booked as part. */
static void advance(replay *r, int k, int l, int part, sim_ps d, const trace_op *op,
                    const char *what)
{
    spath *p = &r->rk[k].lane[l];
    if (d <= 0)
        return;
    if (d > REPLAY_MAX_PS - p->t) {
        r->overflow = 1;
        return;
    }
    tl_add(r, k, l, p->t, p->t + d, op, what);
    p->t += d;
    p->part[part] += d;
}

/* Lane l of rank k cannot go on before `from`: it adopts from's path if later. */
static void adopt(replay *r, int k, int l, const spath *from)
{
    if (from->t > r->rk[k].lane[l].t)
        r->rk[k].lane[l] = *from;
}

/* Join rank k's GPU streams to the latest (ties: the lowest stream). */
static void join_gpu(replay *r, int k)
{
    spath *s = r->rk[k].lane;
    int best = 0;
    for (int i = 1; i < TRACE_MAX_STREAMS; i++)
        if (s[i].t > s[best].t)
            best = i;
    for (int i = 0; i < TRACE_MAX_STREAMS; i++)
        s[i] = s[best];
}

/* Close the current phase on every rank: its time and parts, mean over ranks. */
static void end_phase(replay *r)
{
    for (int k = 0; k < r->nranks; k++) {
        join_gpu(r, k);
        rank_st *rs = &r->rk[k];
        if (k == 0 && r->tl && !r->tl_done && r->in_cycle && rs->lane[0].t > rs->phase_at.t &&
            r->ntlph < TL_PHASES)
            r->tlph[r->ntlph++] = (tl_phase){r->phase, rs->phase_at.t, rs->lane[0].t};
        r->phase_ps[r->phase] += (double)(rs->lane[0].t - rs->phase_at.t);
        for (int i = 0; i < REPLAY_NPARTS; i++)
            r->phase_part[r->phase][i] += (double)(rs->lane[0].part[i] - rs->phase_at.part[i]);
        rs->phase_at = rs->lane[0];
    }
}

static int write_timeline(replay *r, err *e);

/* The cycle ends when the last lane of the last rank is done: every rank
 * waits (wait part) for it, so every rank's parts sum to the cycle. */
static void end_cycle(replay *r)
{
    if (!r->in_cycle)
        return;
    sim_ps end = 0;
    for (int k = 0; k < r->nranks; k++)
        for (int l = 0; l < NLANES; l++)
            if (r->rk[k].lane[l].t > end)
                end = r->rk[k].lane[l].t;
    for (int k = 0; k < r->nranks; k++) {
        spath *ln = r->rk[k].lane;
        int best = 0;
        for (int l = 1; l < NLANES; l++)
            if (ln[l].t > ln[best].t)
                best = l;
        spath p = ln[best];
        if (end > p.t) {
            tl_add(r, k, 0, p.t, end, NULL, "wait for the other ranks");
            p.part[P_WAIT] += end - p.t;
            p.t = end;
        }
        for (int l = 0; l < NLANES; l++)
            ln[l] = p;
    }
    end_phase(r);
    r->cycles++;
    r->tokens += r->cycle_tokens;
    r->total += (double)end * r->nranks;
    for (int k = 0; k < r->nranks; k++)
        for (int i = 0; i < REPLAY_NPARTS; i++)
            r->part[i] += (double)r->rk[k].lane[0].part[i];
    for (int i = 0; i < PHASE_N; i++)
        r->coll_max_ps[i] += (double)r->cyc_coll_max[i];
    memset(r->cyc_coll_max, 0, sizeof r->cyc_coll_max);
    memset(r->rk, 0, sizeof *r->rk * (size_t)r->nranks);
    r->in_cycle = 0;
    if (r->tl && r->ntl > 0)
        r->tl_done = 1;
}

static void begin_cycle(replay *r, double tokens)
{
    end_cycle(r);
    r->in_cycle = 1;
    r->cycle_tokens = tokens;
    if (r->tl && !r->tl_done)
        r->tl_tokens = tokens;
    r->phase = PHASE_OTHER;
    r->graph = r->o.graph > 0;
    r->item = 0;
}

/* splitmix64: the draws are a pure function of (item, rank): every cycle of
 * a trace draws the same, so a replay of n identical cycles is n times one. */
static uint64_t mix64(uint64_t x)
{
    x += 0x9e3779b97f4a7c15ull;
    x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ull;
    x = (x ^ (x >> 27)) * 0x94d049bb133111ebull;
    return x ^ (x >> 31);
}

/* Draw the next host item's jitter: perm[k] = the stratum rank k gets, a
 * random permutation of 0..n-1 (so one rank is exactly the slowest). */
static void draw_item(replay *r)
{
    int n = r->nranks;
    uint64_t key[REPLAY_RANKS_MAX];
    uint64_t seed = mix64((uint64_t)r->item);
    r->item++;
    for (int k = 0; k < n; k++)
        key[k] = mix64(seed + (uint64_t)k);
    for (int k = 0; k < n; k++) {
        int below = 0;
        for (int j = 0; j < n; j++)
            below += key[j] < key[k] || (key[j] == key[k] && j < k);
        r->perm[k] = below;
    }
}

/* Host cost c on rank k with its jitter for the current item. */
static sim_ps jittered(const replay *r, int k, sim_ps c)
{
    if (r->o.host_jitter <= 0 || c <= 0)
        return c;
    return c + (sim_ps)llround((double)c * r->o.host_jitter * r->qtab[r->perm[k]]);
}

/* The algorithm op asks for: the options' override of an allreduce, else
 * the trace's (ALGO_AUTO: as NCCL chooses). */
static coll_algo req_algo(const replay *r, const trace_op *op)
{
    if (op->coll != COLL_ALLREDUCE)
        return op->algo;
    if (r->o.allreduce != ALGO_AUTO)
        return r->o.allreduce;
    return r->o.nccl_allreduce ? ALGO_AUTO : op->algo;
}

static int coll_time(replay *r, const trace_op *op, sim_ps *out, coll_algo *algo, err *e)
{
    if (algo)
        *algo = ALGO_AUTO;
    r->last_use = NULL;
    r->last_nlinks = 0;
    if (r->o.coll_us > 0 && op->coll == COLL_ALLREDUCE) {
        *out = us_to_ps(r, r->o.coll_us);
        return 0;
    }
    if (op->measured_us >= 0 && (r->o.measured || op->bytes == 0)) {
        *out = us_to_ps(r, op->measured_us);
        return 0;
    }
    if (op->bytes == 0) {
        *out = 0;
        return 0;
    }
    if (!r->c || !r->t)
        return err_set(e, ERR_SYSTEM, "replay: no collective model (topology not loaded)");
    coll_req q;
    coll_req_init(&q, r->t);
    q.kind = op->coll;
    q.bytes = op->bytes;
    q.dtype = op->dtype;
    q.nranks = op->group > 0 ? op->group : r->ngpus;
    q.algo = req_algo(r, op);
    q.proto = r->o.proto;
    q.env = r->o.env;
    q.graph = r->graph;
    /* coll_ctx caches identical requests: the one collective cache. */
    uint64_t before = coll_ctx_computed(r->c);
    coll_result res;
    /* The drawn cycle's collectives bring their link use (a replay's own
     * timeline; whatif's parts draw no links). */
    if (r->tl && !r->tl_done && !r->tl_part)
        TRY(coll_predict_links(r->c, &q, &res, &r->last_use, &r->last_nlinks, e));
    else
        TRY(coll_predict(r->c, &q, &res, e));
    r->predictions += coll_ctx_computed(r->c) - before;
    *out = res.time_ps;
    if (algo)
        *algo = res.algo;
    return 0;
}

/* What issuing collective op costs beyond a kernel's (it is fed next; algo
 * is what it runs): an NCCL call's host work in front of its launch,
 * topo_nccl_issue_ps less the launch (enqueue, group end, plan: docs/model.md
 * "NCCL's host cost per call"), and inside a CUDA graph its node
 * (nccl_graph_call_us, else a kernel's graph node); a custom kernel costs
 * what a kernel does. Captured overheads are in the trace already. */
static void coll_issue(replay *r, const trace_op *op, coll_algo algo)
{
    r->call_ps = 0;
    r->call_node_ps = r->node_ps;
    r->call_nccl = !coll_algo_is_custom(algo);
    if (!r->t || !r->call_nccl || r->o.captured_overhead)
        return;
    const topo_params *p = topo_params_get(r->t);
    int n = op->group > 0 ? op->group : r->ngpus;
    int64_t call = topo_nccl_issue_ps(p, 0, n, coll_p2p_ops(op->coll, n)) - p->launch_ps;
    r->call_ps = call > 0 ? call : 0;
    if (p->nccl_graph_call_ps > 0)
        r->call_node_ps = p->nccl_graph_call_ps;
}

/* What an eager op's kernels cost the CPU that issues them: each kernel a
 * launch call (launch_ps) and the framework's work around it (op_host_ps),
 * or the captured issue time; an NCCL collective's first kernel NCCL's call
 * beyond the launch (call_ps) and the framework's collective layer
 * (coll_host_ps) instead. */
typedef struct issue {
    sim_ps first_launch, first_call, first_host;  /* the first kernel */
    sim_ps rest_launch, rest_host;                /* the others */
} issue;

static issue issue_cost(replay *r, int k, const trace_op *op, int kernels)
{
    issue c = {0};
    if (op->issue_us >= 0) {   /* captured: the call(s) before its kernels run */
        c.first_host = jittered(r, k, us_to_ps(r, op->issue_us));
        return c;
    }
    int nccl = op->kind == OP_COLL && r->call_nccl;
    c.first_launch = jittered(r, k, r->launch_ps);
    c.first_call = nccl ? jittered(r, k, r->call_ps) : 0;
    c.first_host = jittered(r, k, nccl ? r->coll_host_ps : r->op_host_ps);
    c.rest_launch = mul_ps(r, c.first_launch, kernels - 1);
    c.rest_host = mul_ps(r, jittered(r, k, r->op_host_ps), kernels - 1);
    return c;
}

/* An eager kernel queued behind the previous one on stream s of rank k
 * starts no sooner than the GPU's turnaround after it ends: turn_ps, the
 * topology's kernel_turn (on the H200 1.29 us, against 0.50 for a kernel
 * node back to back in a graph: validate/data/h200-1x/micro/spin/), else a
 * graph node's cost (docs/model.md "The GPU's turnaround per kernel"). A
 * kernel the CPU issues later starts when issued (the caller's adopt), so
 * it shows only on a device-bound stream. */
static void kernel_turn(replay *r, int k, int s)
{
    if (r->rk[k].lane[s].t + r->turn_ps > r->rk[k].lane[LANE_CPU].t)
        advance(r, k, s, P_LAUNCH, r->turn_ps, NULL, "kernel turnaround");
}

/* The start of an op of `kernels` kernels on stream s of rank k: in a CUDA
 * graph each node costs node_ps on the GPU, in series (the graph launch was
 * paid at the phase); eagerly the CPU issues the first kernel and the stream
 * cannot start before it. Returns the cost of the remaining kernels. */
static issue op_start(replay *r, int k, int s, int kernels, const trace_op *op)
{
    issue c = {0};
    if ((r->graph && op->issue_us < 0) || kernels <= 0) {
        if (r->graph && kernels > 0) {
            sim_ps first = op->kind == OP_COLL ? r->call_node_ps : r->node_ps;
            advance(r, k, s, P_LAUNCH, first + mul_ps(r, r->node_ps, kernels - 1), NULL,
                    "graph nodes");
        }
        return c;
    }
    c = issue_cost(r, k, op, kernels);
    advance(r, k, LANE_CPU, P_LAUNCH, c.first_launch, NULL, "launch");
    advance(r, k, LANE_CPU, P_LAUNCH, c.first_call, NULL, "nccl call");
    advance(r, k, LANE_CPU, P_HOST, c.first_host, NULL, "issue");
    kernel_turn(r, k, s);
    adopt(r, k, s, &r->rk[k].lane[LANE_CPU]);
    return c;
}

/* The end of that op: it ran d on stream s; eagerly the CPU issues the rest
 * of its kernels meanwhile, and the op cannot end before the last one is
 * issued plus that kernel's share of d. */
static void op_end(replay *r, int k, int s, int kernels, int part, sim_ps d, const trace_op *op,
                   issue c)
{
    advance(r, k, s, part, d, op, NULL);
    if ((r->graph && op->issue_us < 0) || kernels <= 1 || op->issue_us >= 0)
        return;
    /* device-bound: each further kernel's turnaround (kernel_turn) */
    advance(r, k, s, P_LAUNCH, mul_ps(r, r->turn_ps, kernels - 1), NULL, "kernel turnaround");
    advance(r, k, LANE_CPU, P_LAUNCH, c.rest_launch, NULL, "launch");
    advance(r, k, LANE_CPU, P_HOST, c.rest_host, NULL, "issue");
    spath *cpu = &r->rk[k].lane[LANE_CPU];
    sim_ps share = d / kernels;
    if (cpu->t + share > r->rk[k].lane[s].t) {
        spath p = *cpu;
        r->rk[k].lane[s] = p;
        advance(r, k, s, part, share, op, NULL);
    }
}

static int cpu_issued(const replay *r, const trace_op *op)
{
    return op->kernels > 0 && (!r->graph || op->issue_us >= 0);
}

static void run_op(replay *r, int s, int kernels, int part, sim_ps d, const trace_op *op)
{
    if (cpu_issued(r, op))
        draw_item(r);
    for (int k = 0; k < r->nranks; k++) {
        issue c = op_start(r, k, s, kernels, op);
        op_end(r, k, s, kernels, part, d, op, c);
    }
}

/* A collective: each rank's kernel is ready when its stream and (eagerly)
 * its CPU are; it starts on all ranks when the last one is. A captured wait
 * (the other ranks' lag seen in a multi-rank import) is kept when ranks are
 * not simulated. */
static void run_coll(replay *r, int s, sim_ps d, const trace_op *op)
{
    int kernels = op->kernels;
    if (cpu_issued(r, op))
        draw_item(r);
    issue c[REPLAY_RANKS_MAX];
    sim_ps ready = 0;
    for (int k = 0; k < r->nranks; k++) {
        c[k] = op_start(r, k, s, kernels, op);
        if (r->rk[k].lane[s].t > ready)
            ready = r->rk[k].lane[s].t;
    }
    if (r->nranks == 1 && r->o.captured_skew && op->wait_us > 0)
        ready += us_to_ps(r, op->wait_us);
    /* each rank's kernel, as a profile times it: from its start on this
     * rank's stream (the wait for the slowest rank included) to its end */
    for (int k = 0; k < r->nranks; k++) {
        sim_ps t0 = r->rk[k].lane[s].t;
        advance(r, k, s, P_WAIT, ready - t0, NULL, "wait for the slowest rank");
        op_end(r, k, s, kernels, P_COMM, d, op, c[k]);
        sim_ps dur = r->rk[k].lane[s].t - t0;
        r->coll_ps[r->phase] += (double)dur;
        if (dur > r->cyc_coll_max[r->phase])
            r->cyc_coll_max[r->phase] = dur;
    }
    r->ncoll[r->phase] += 1;
    /* The collective runs on every rank from ready for d: its links' bytes
     * are drawn there (write_links). */
    if (r->tl && !r->tl_done && !r->tl_part && r->last_use && d > 0 && r->ntllk < TL_MAX) {
        if (!r->tllk && !(r->tllk = calloc(TL_MAX, sizeof *r->tllk)))
            return;
        r->tllk[r->ntllk++] = (tl_links){ready, d, r->last_use, r->last_nlinks};
    }
}

int replay_op(replay *r, const trace_op *op, err *e)
{
    int s = op->stream;
    if (s < 0 || s >= TRACE_MAX_STREAMS)
        return err_set(e, ERR_INPUT, "replay: stream %d out of range", s);
    if (op->kind == OP_WAIT && (op->on < 0 || op->on >= TRACE_MAX_STREAMS))
        return err_set(e, ERR_INPUT, "replay: wait on stream %d out of range", op->on);
    if (op->kind != OP_CYCLE && !r->in_cycle)
        begin_cycle(r, 1.0);
    r->ops++;
    sim_ps d = 0;
    switch (op->kind) {
    case OP_CYCLE:
        begin_cycle(r, op->tokens);
        break;
    case OP_PHASE:
        end_phase(r);
        r->phase = op->phase;
        r->graph = r->o.graph >= 0 ? r->o.graph : op->graph > 0;
        if (r->graph) {
            /* The graph launch: one call on the CPU; the GPU cannot start
             * the graph before it. */
            draw_item(r);
            for (int k = 0; k < r->nranks; k++) {
                advance(r, k, LANE_CPU, P_LAUNCH, jittered(r, k, r->launch_ps), NULL,
                        "graph launch");
                adopt(r, k, 0, &r->rk[k].lane[LANE_CPU]);
                join_gpu(r, k);
            }
        }
        break;
    case OP_COMPUTE:
        run_op(r, s, op->kernels, P_COMPUTE, us_to_ps(r, op->dur_us * r->o.compute_scale), op);
        break;
    case OP_IDLE:
        for (int k = 0; k < r->nranks; k++)
            advance(r, k, s, P_IDLE, us_to_ps(r, op->dur_us), op, NULL);
        break;
    case OP_HOST:
        draw_item(r);
        for (int k = 0; k < r->nranks; k++)
            advance(r, k, LANE_CPU, P_HOST, jittered(r, k, us_to_ps(r, op->dur_us)), op, NULL);
        break;
    case OP_SYNC:
        /* The CPU blocks until its GPU is done, then pays the copy back. */
        for (int k = 0; k < r->nranks; k++) {
            rank_st *rs = &r->rk[k];
            for (int l = 0; l < TRACE_MAX_STREAMS; l++)
                adopt(r, k, LANE_CPU, &rs->lane[l]);
            advance(r, k, LANE_CPU, P_HOST, r->sync_ps, op, "sync");
        }
        break;
    case OP_COLL: {
        TRY(coll_time(r, op, &d, &r->last_algo, e));
        /* what it ran, or with a given time what the trace or the options ask */
        coll_issue(r, op, r->last_algo != ALGO_AUTO ? r->last_algo : req_algo(r, op));
        run_coll(r, s, d, op);
        r->colls++;
        break;
    }
    case OP_WAIT:
        for (int k = 0; k < r->nranks; k++)
            adopt(r, k, s, &r->rk[k].lane[op->on]);
        break;
    default:
        return err_set(e, ERR_INPUT, "replay: bad op kind %d", (int)op->kind);
    }
    if (r->overflow)
        return err_set(e, ERR_INPUT, "simulated time past %.0f days: a duration, a scale or "
                       "the trace's length is out of range", (double)REPLAY_MAX_PS / 86400e12);
    return 0;
}

int replay_finish(replay *r, replay_result *out, err *e)
{
    end_cycle(r);
    memset(out, 0, sizeof *out);
    out->cycles = r->cycles;
    out->tokens = r->tokens;
    out->ranks = r->nranks;
    double R = r->nranks;
    out->total_us = r->total / R / 1e6;
    double n = r->cycles > 0 ? (double)r->cycles : 1;
    out->cycle_us = out->total_us / n;
    out->tok_per_s = r->total > 0 ? r->tokens / (r->total / R / 1e12) : 0;
    for (int i = 0; i < REPLAY_NPARTS; i++)
        out->part_us[i] = r->part[i] / R / 1e6 / n;
    out->compute_us = out->part_us[P_COMPUTE];
    out->comm_us = out->part_us[P_COMM];
    out->launch_us = out->part_us[P_LAUNCH];
    out->idle_us = out->part_us[P_IDLE];
    out->wait_us = out->part_us[P_WAIT];
    out->host_us = out->part_us[P_HOST];
    for (int i = 0; i < PHASE_N; i++) {
        out->phase_us[i] = r->phase_ps[i] / R / 1e6 / n;
        for (int k = 0; k < REPLAY_NPARTS; k++)
            out->phase_part_us[i][k] = r->phase_part[i][k] / R / 1e6 / n;
        out->phase_colls[i] = r->ncoll[i] / n;
        out->phase_coll_us[i] = r->coll_ps[i] / R / 1e6 / n;
        out->phase_coll_max_us[i] = r->coll_max_ps[i] / 1e6 / n;
    }
    out->ops = r->ops;
    out->colls = r->colls;
    out->predictions = r->predictions;
    int rc = 0;
    if (r->tl && r->ntl > 0)
        rc = write_timeline(r, e);
    /* reset for another feed */
    r->cycles = 0;
    r->tokens = 0;
    r->total = 0;
    memset(r->part, 0, sizeof r->part);
    memset(r->phase_ps, 0, sizeof r->phase_ps);
    memset(r->phase_part, 0, sizeof r->phase_part);
    memset(r->ncoll, 0, sizeof r->ncoll);
    memset(r->coll_ps, 0, sizeof r->coll_ps);
    memset(r->coll_max_ps, 0, sizeof r->coll_max_ps);
    r->ops = r->colls = r->predictions = 0;
    r->ntl = 0;
    r->ntllk = 0;
    r->ntlph = 0;
    r->lanes_used = 0;
    r->tl_done = 0;
    return rc;
}

/* A change of one link's rate: a collective starting (+) or ending (-) on it. */
typedef struct link_step {
    sim_ps t;
    int link, start;   /* start: 1 begins, 0 ends */
    int seq;           /* the collective's place in the cycle (ties) */
    double Bps;
} link_step;

static int link_step_cmp(const void *a, const void *b)
{
    const link_step *x = a, *y = b;
    if (x->t != y->t)
        return x->t < y->t ? -1 : 1;
    if (x->link != y->link)
        return x->link < y->link ? -1 : 1;
    if (x->start != y->start)
        return x->start < y->start ? -1 : 1;  /* ends first */
    return x->seq < y->seq ? -1 : x->seq > y->seq;
}

/* The links process: each drawn collective puts each link's bytes of its
 * cached prediction on that link at their mean rate over its predicted time
 * (bytes / time, from its start), so a link's counter integrates to the sum
 * of the bytes of the collectives crossing it; collectives overlapping on
 * two streams add up. A link's total is 0 exactly when nothing is on it. */
static int write_links(replay *r, timeline *tl, err *e)
{
    size_t n = 0;
    for (int i = 0; i < r->ntllk; i++)
        for (int l = 0; l < r->tllk[i].nlinks; l++)
            n += r->tllk[i].use[l].bytes > 0 ? 2 : 0;
    if (!n)
        return 0;
    int nl = 0;
    for (int i = 0; i < r->ntllk; i++)
        nl = r->tllk[i].nlinks > nl ? r->tllk[i].nlinks : nl;
    link_step *st = malloc(sizeof *st * n);
    double *sum = calloc((size_t)nl, sizeof *sum);
    int *on = calloc((size_t)nl, sizeof *on);
    if (!st || !sum || !on) {
        free(st);
        free(sum);
        free(on);
        return err_set(e, ERR_SYSTEM, "timeline: out of memory");
    }
    size_t k = 0;
    for (int i = 0; i < r->ntllk; i++) {
        const tl_links *c = &r->tllk[i];
        for (int l = 0; l < c->nlinks; l++) {
            double b = c->use[l].bytes;
            if (b <= 0)
                continue;
            double Bps = b / ((double)c->dur * 1e-12);
            st[k++] = (link_step){c->start, l, 1, i, Bps};
            st[k++] = (link_step){c->start + c->dur, l, 0, i, Bps};
        }
    }
    qsort(st, n, sizeof *st, link_step_cmp);
    tl_process(tl, TL_PID_LINKS, "links", 1 << 20);
    for (size_t i = 0; i < n; i++) {
        link_step *x = &st[i];
        on[x->link] += x->start ? 1 : -1;
        sum[x->link] = on[x->link] ? sum[x->link] + (x->start ? x->Bps : -x->Bps) : 0;
        /* one sample per link and instant: its total once every change is in */
        if (i + 1 < n && st[i + 1].t == x->t && st[i + 1].link == x->link)
            continue;
        tl_counter(tl, TL_PID_LINKS, x->t, coll_ctx_link_name(r->c, x->link), "GB/s",
                   sum[x->link] * 1e-9);
    }
    free(st);
    free(sum);
    free(on);
    return 0;
}

/* Chrome trace JSON in the layout of sim/json.h: a process per GPU of the
 * group (at most 8 drawn; without jitter every rank runs the same timeline),
 * thread 0 "phases" with the cycle marker and one slice per phase (decode,
 * draft, verify, ...), thread 1+s "stream s" with the GPU ops and thread 9
 * "CPU" with the host lane (launches, host work, syncs); collectives carry
 * args bytes, collective, algorithm, transfer_us (predicted) and wait_us
 * (captured wait for other ranks). */
static int write_timeline(replay *r, err *e)
{
    int ngpu = r->ngpus > 0 ? r->ngpus : 1;
    if (r->nranks > 1)
        ngpu = r->nranks;
    timeline own, *tl = r->tl_doc;
    if (r->tl_part) {
        ngpu = 1;  /* one process for the run (whatif: one per variant), GPU 0's events */
    } else {
        if (ngpu > TL_RANKS)
            ngpu = TL_RANKS;
        TRY(tl_open(&own, r->tl, e));
        tl = &own;
    }
    for (int gi = 0; gi < ngpu; gi++) {
        int pid = r->tl_part ? r->tl_pid : TL_PID_GPU(gi);
        int src = r->nranks > 1 ? gi : 0;   /* whose events this process shows */
        char name[300];
        if (r->tl_part)
            snprintf(name, sizeof name, "%s", r->tl_label);
        else
            snprintf(name, sizeof name, "GPU %d", gi);
        tl_process(tl, pid, name, r->tl_part ? r->tl_pid : gi);
        tl_thread(tl, pid, 0, "phases", 0);
        for (int l = 0; l < NLANES; l++)
            if (r->lanes_used & (1u << l)) {
                if (l == LANE_CPU)
                    snprintf(name, sizeof name, "CPU (launches, host work, syncs)");
                else if (r->stream_src[l][0])
                    snprintf(name, sizeof name, "stream %d (captured stream %s)", l,
                             r->stream_src[l]);
                else
                    snprintf(name, sizeof name, "stream %d", l);
                tl_thread(tl, pid, 1 + l, name, 1 + l);
            }
        snprintf(name, sizeof name, "cycle 1: %g tokens", r->tl_tokens);
        tl_instant(tl, pid, 0, 0, name);
        for (int i = 0; i < r->ntlph; i++) {
            const tl_phase *p = &r->tlph[i];
            tl_slice(tl, pid, 0, p->start, p->end - p->start, trace_phase_name(p->phase), "phase");
            tl_slice_end(tl);
        }
        for (int i = 0; i < r->ntl; i++) {
            const tl_ev *ev = &r->tlev[i];
            if (ev->rank != src)
                continue;
            const char *cat = ev->kind == OP_COLL      ? "comm"
                              : ev->kind == OP_COMPUTE ? "compute"
                              : ev->kind == OP_IDLE    ? "host"
                              : ev->kind == OP_WAIT    ? "wait"
                              : ev->kind == OP_HOST    ? "host"
                                                       : "launch";
            tl_slice(tl, pid, 1 + ev->lane, ev->start, ev->end - ev->start, ev->label, cat);
            if (ev->kind == OP_COLL) {
                char sz[32];
                tl_size_text(ev->bytes, sz, sizeof sz);
                json_kv_int(tl->g, "bytes", (long long)ev->bytes);
                json_kv_str(tl->g, "size", sz);
                json_kv_str(tl->g, "collective", coll_kind_name(ev->coll));
                json_kv_str(tl->g, "algorithm", ev->algo == ALGO_AUTO ? "as given (measured or "
                                                                       "fixed time)"
                                                                     : coll_algo_name(ev->algo));
                json_kv_num(tl->g, "transfer_us", (double)(ev->end - ev->start) / 1e6);
                json_kv_num(tl->g, "wait_us", ev->wait_us > 0 ? ev->wait_us : 0);
                if (ev->busy_link >= 0) {
                    json_kv_str(tl->g, "busiest_link", coll_ctx_link_name(r->c, ev->busy_link));
                    json_kv_num(tl->g, "busiest_link_busy_us", (double)ev->busy_ps / 1e6);
                }
            } else if (ev->kind == OP_COMPUTE) {
                json_kv_int(tl->g, "kernels", ev->kernels);
            } else if (ev->kind == OP_N) {
                json_kv_str(tl->g, "what", "launch call or CUDA-graph node overhead");
            }
            tl_slice_end(tl);
        }
    }
    if (r->tl_part)
        return ferror(tl->f) ? err_set(e, ERR_SYSTEM, "timeline: write failed") : 0;
    int rc = write_links(r, tl, e);
    int crc = tl_close(&own, e);
    return rc ? rc : crc;
}

int replay_file(const char *path, const topo *t, coll_ctx *c, const replay_opts *o,
                FILE *tl_out, replay_result *out, err *e)
{
    trace_reader *tr = NULL;
    TRY(trace_open(path, &tr, e));
    return replay_reader(tr, path, t, c, o, tl_out, out, e);
}

/* The number a meta line gives for key into *out (left as is without the
 * line); nonzero (ERR_INPUT) for a value that is not a finite number. */
static int meta_num(const trace_reader *tr, const char *path, const char *key, double *out,
                    err *e)
{
    const char *v = trace_meta(tr, key);
    if (!v)
        return 0;
    char *end;
    double d = strtod(v, &end);
    if (end == v || *end || !isfinite(d))
        return err_set(e, ERR_INPUT, "%s: meta %s '%s' is not a number", path, key, v);
    *out = d;
    return 0;
}

int replay_reader(trace_reader *tr, const char *path, const topo *t, coll_ctx *c,
                  const replay_opts *o, FILE *tl_out, replay_result *out, err *e)
{
    replay_opts ro;
    if (o)
        ro = *o;
    else
        replay_opts_init(&ro);
    const char *ov = trace_meta(tr, "overhead");
    if (ov && !strcmp(ov, "captured"))
        ro.captured_overhead = 1;
    const char *sk = trace_meta(tr, "skew");
    if (sk && !strcmp(sk, "captured"))
        ro.captured_skew = 1;
    /* A generated trace carries its scenario's host model (collsim trace gen). */
    const char *mv;
    if ((ro.host_jitter <= 0 && meta_num(tr, path, "host_jitter", &ro.host_jitter, e)) ||
        (ro.sync_us < 0 && meta_num(tr, path, "sync_us", &ro.sync_us, e)) ||
        (ro.op_host_us <= 0 && meta_num(tr, path, "op_host_us", &ro.op_host_us, e)) ||
        (ro.coll_host_us < 0 && meta_num(tr, path, "coll_host_us", &ro.coll_host_us, e))) {
        trace_close(tr);
        return ERR_INPUT;
    }
    if (ro.ranks <= 0 && (mv = trace_meta(tr, "ranks")) && atoi(mv) > 0)
        ro.ranks = atoi(mv);
    if (!(ro.host_jitter >= 0 && ro.host_jitter <= 10) || !(ro.sync_us <= 1e6) ||
        !(ro.op_host_us >= 0 && ro.op_host_us <= 1e6) || !(ro.coll_host_us <= 1e6) ||
        (ro.coll_host_us < 0 && ro.coll_host_us != -1)) {
        trace_close(tr);
        return err_set(e, ERR_INPUT,
                       "%s: meta host_jitter, sync_us, op_host_us or coll_host_us out of range",
                       path);
    }
    const char *te = trace_meta(tr, "nccl_env");
    if (te && !ro.env_given) {
        char buf[512];
        snprintf(buf, sizeof buf, "%s", te);
        char *save = NULL;
        for (char *w = strtok_r(buf, ",", &save); w; w = strtok_r(NULL, ",", &save))
            if (coll_env_set(&ro.env, w, e)) {
                trace_close(tr);
                return err_wrap(e, "%s: meta nccl_env", path);
            }
    }
    const char *rk = trace_meta(tr, "ranks"), *tk = trace_meta(tr, "tokens");
    int trace_ranks = rk ? atoi(rk) : 0, tokens_stated = !tk || strcmp(tk, "none");
    replay *r = replay_new(t, c, &ro);
    if (!r) {
        trace_close(tr);
        return err_set(e, ERR_SYSTEM, "out of memory");
    }
    if (tl_out)
        replay_timeline(r, tl_out);
    /* the captured streams behind the trace's (an import's meta streams) */
    const char *sv = trace_meta(tr, "streams");
    if (sv) {
        char buf[256];
        snprintf(buf, sizeof buf, "%s", sv);
        char *save = NULL;
        int i = 0;
        for (char *w = strtok_r(buf, ",", &save); w && i < TRACE_MAX_STREAMS;
             w = strtok_r(NULL, ",", &save), i++)
            snprintf(r->stream_src[i], sizeof r->stream_src[i], "%.23s", w);
    }
    trace_op op;
    int rc;
    while ((rc = trace_next(tr, &op, e)) == 1) {
        if ((rc = replay_op(r, &op, e)) != 0) {
            err_wrap(e, "%s:%ld", path, trace_line(tr));
            if (rc == ERR_USAGE && e)   /* the model refused what this line asks: bad input */
                rc = e->code = ERR_INPUT;
            break;
        }
    }
    if (rc == 0)
        rc = replay_finish(r, out, e);
    if (rc == 0) {
        out->trace_ranks = trace_ranks;
        out->tokens_stated = tokens_stated;
    }
    replay_free(r);
    trace_close(tr);
    return rc;
}
