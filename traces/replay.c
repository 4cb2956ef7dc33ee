/* Replay: a critical-path walk over the ops of a trace. Each stream carries
 * its current time and the breakdown of the path that led to it (compute,
 * communication, launch/graph overhead, idle, in ps); an op advances its
 * stream, a wait adopts the other stream's time and breakdown if it is
 * later, and a cycle or phase start joins all streams to the latest one.
 * So a cycle's breakdown is that of its critical path and sums to its time
 * exactly. Collective times come from coll_predict through a small
 * open-addressing cache keyed by the request (a collective on an otherwise
 * idle fabric is a pure function of the request), so a 10,000-cycle trace
 * makes a handful of predictions. Concurrent collectives on two streams are
 * each predicted alone (docs/traces.md, "Replay model and limits"). */
#include "traces/replay.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "sim/json.h"
#include "traces/trace.h"

enum { TL_MAX = 1 << 16 };

typedef struct spath {
    sim_ps t;                      /* time since the cycle started */
    sim_ps part[REPLAY_NPARTS];    /* compute, comm, launch, idle, wait */
} spath;

enum { P_COMPUTE = REPLAY_COMPUTE, P_COMM = REPLAY_COMM, P_LAUNCH = REPLAY_LAUNCH,
       P_IDLE = REPLAY_IDLE, P_WAIT = REPLAY_WAIT };

typedef struct tl_ev {
    int stream;
    sim_ps start, end;
    trace_op_kind kind;
    char label[TRACE_NAME_MAX];
    /* args */
    uint64_t bytes;
    coll_kind coll;
    coll_algo algo;
    int kernels;
    double wait_us;        /* captured wait for other ranks, < 0 none */
} tl_ev;

typedef struct tl_phase {
    trace_phase phase;
    sim_ps start, end;
} tl_phase;

enum { TL_PHASES = 256 };

struct replay {
    const topo *t;
    coll_ctx *c;
    replay_opts o;
    sim_ps launch_ps, node_ps;
    int ngpus;
    spath s[TRACE_MAX_STREAMS];
    int in_cycle;
    int overflow;                  /* a time went past REPLAY_MAX_PS */
    double cycle_tokens;
    int graph;                     /* current phase runs as a CUDA graph */
    sim_ps host;                   /* the launching thread's clock (eager) */
    sim_ps slow;                   /* how far the slowest rank's host is behind it */
    trace_phase phase;
    sim_ps phase_start;
    sim_ps phase_start_part[REPLAY_NPARTS];
    /* totals */
    long cycles;
    double tokens;
    sim_ps total, part[REPLAY_NPARTS], phase_ps[PHASE_N];
    sim_ps phase_part[PHASE_N][REPLAY_NPARTS];
    uint64_t ops, colls, predictions;
    coll_algo last_algo;           /* of the last collective (timeline args) */
    /* timeline of the first cycle */
    FILE *tl;
    tl_ev *tlev;
    int ntl, tl_done;
    tl_phase tlph[TL_PHASES];
    int ntlph;
    double tl_tokens;
    int streams_used;              /* bit s: stream s has events */
    int tl_part, tl_pid;           /* replay_timeline_part: into tl_doc */
    timeline *tl_doc;
    char tl_label[256];
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

/* a + b, or flag the replay and keep a. */
static sim_ps add_ps(replay *r, sim_ps a, sim_ps b)
{
    if (b > REPLAY_MAX_PS - a) {
        r->overflow = 1;
        return a;
    }
    return a + b;
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
    r->ngpus = t ? topo_ngpus(t) : 0;
    return r;
}

void replay_free(replay *r)
{
    if (!r)
        return;
    free(r->tlev);
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

static void tl_add(replay *r, int stream, sim_ps start, sim_ps end, const trace_op *op)
{
    if (!r->tl || r->tl_done || start == end)
        return;
    if (!r->tlev && !(r->tlev = calloc(TL_MAX, sizeof *r->tlev)))
        return;
    if (r->ntl == TL_MAX)
        return;
    tl_ev *ev = &r->tlev[r->ntl++];
    ev->stream = stream;
    ev->start = start;
    ev->end = end;
    ev->kind = op ? op->kind : OP_N;
    ev->bytes = op && op->kind == OP_COLL ? op->bytes : 0;
    ev->coll = op && op->kind == OP_COLL ? op->coll : COLL_ALLREDUCE;
    ev->algo = r->last_algo;
    ev->kernels = op ? op->kernels : 0;
    ev->wait_us = op && op->kind == OP_COLL ? op->wait_us : -1;
    if (stream < 31)
        r->streams_used |= 1 << stream;
    if (!op)
        snprintf(ev->label, sizeof ev->label, "launch");
    else if (op->name[0])
        snprintf(ev->label, sizeof ev->label, "%s", op->name);
    else if (op->kind == OP_COLL)
        snprintf(ev->label, sizeof ev->label, "%s %llu", coll_kind_name(op->coll),
                 (unsigned long long)op->bytes);
    else
        snprintf(ev->label, sizeof ev->label, "%s",
                 op->kind == OP_COMPUTE ? "compute" : op->kind == OP_IDLE ? "host" : "op");
}

static void advance(replay *r, int s, int part, sim_ps d, const trace_op *op)
{
    if (d <= 0)
        return;
    if (d > REPLAY_MAX_PS - r->s[s].t) {
        r->overflow = 1;
        return;
    }
    tl_add(r, s, r->s[s].t, r->s[s].t + d, op);
    r->s[s].t += d;
    r->s[s].part[part] += d;
}

/* Join all streams to the latest (ties: the lowest stream). */
static void join_all(replay *r)
{
    int best = 0;
    for (int i = 1; i < TRACE_MAX_STREAMS; i++)
        if (r->s[i].t > r->s[best].t)
            best = i;
    for (int i = 0; i < TRACE_MAX_STREAMS; i++)
        r->s[i] = r->s[best];
}

static void end_phase(replay *r)
{
    join_all(r);
    if (r->tl && !r->tl_done && r->in_cycle && r->s[0].t > r->phase_start &&
        r->ntlph < TL_PHASES)
        r->tlph[r->ntlph++] = (tl_phase){r->phase, r->phase_start, r->s[0].t};
    r->phase_ps[r->phase] += r->s[0].t - r->phase_start;
    r->phase_start = r->s[0].t;
    for (int i = 0; i < REPLAY_NPARTS; i++) {
        r->phase_part[r->phase][i] += r->s[0].part[i] - r->phase_start_part[i];
        r->phase_start_part[i] = r->s[0].part[i];
    }
}

static int write_timeline(replay *r, err *e);

static void end_cycle(replay *r)
{
    if (!r->in_cycle)
        return;
    end_phase(r);
    r->cycles++;
    r->tokens += r->cycle_tokens;
    r->total = add_ps(r, r->total, r->s[0].t);
    for (int i = 0; i < REPLAY_NPARTS; i++)
        r->part[i] = add_ps(r, r->part[i], r->s[0].part[i]);
    memset(r->s, 0, sizeof r->s);
    r->host = 0; /* a cycle ends with the host waiting for the GPU (sampling) */
    r->slow = 0;
    r->phase_start = 0;
    memset(r->phase_start_part, 0, sizeof r->phase_start_part);
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
}

static int coll_time(replay *r, const trace_op *op, sim_ps *out, coll_algo *algo, err *e)
{
    if (algo)
        *algo = ALGO_AUTO;
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
    q.algo = op->algo;
    if (op->coll == COLL_ALLREDUCE && r->o.allreduce != ALGO_AUTO)
        q.algo = r->o.allreduce;
    q.proto = r->o.proto;
    q.env = r->o.env;
    q.graph = r->graph;
    /* coll_ctx caches identical requests: the one collective cache. */
    uint64_t before = coll_ctx_computed(r->c);
    coll_result res;
    TRY(coll_predict(r->c, &q, &res, e));
    r->predictions += coll_ctx_computed(r->c) - before;
    *out = res.time_ps;
    if (algo)
        *algo = res.algo;
    return 0;
}

/* Run an op of `kernels` kernels taking d on stream s. In a CUDA graph each
 * node costs node_ps on the GPU, in series. Eagerly, the host thread issues
 * launches asynchronously, launch_ps each, ahead of the GPU: the op cannot
 * start before its first kernel is issued, nor end before its last one is
 * issued plus that kernel's share of d; only the part of the launch cost the
 * GPU waits for is exposed (counted as launch overhead). */
static void run_op(replay *r, int s, int kernels, int part, sim_ps d, const trace_op *op)
{
    if (r->graph || kernels <= 0 || r->launch_ps <= 0) {
        if (r->graph && kernels > 0 && r->node_ps > 0)
            advance(r, s, P_LAUNCH, r->node_ps > REPLAY_MAX_PS / kernels
                                        ? (r->overflow = 1, 0) : r->node_ps * kernels, NULL);
        advance(r, s, part, d, op);
        return;
    }
    sim_ps first = add_ps(r, r->host, r->launch_ps);
    r->host = add_ps(r, r->host, r->launch_ps > REPLAY_MAX_PS / kernels
                                     ? (r->overflow = 1, 0) : r->launch_ps * kernels);
    if (first > r->s[s].t)
        advance(r, s, P_LAUNCH, first - r->s[s].t, NULL);
    /* A collective also waits for the slowest rank's launch of it: that
     * rank's host falls coll_wait_us further behind per collective. */
    if (part == P_COMM && r->o.coll_wait_us > 0) {
        r->slow = add_ps(r, r->slow, us_to_ps(r, r->o.coll_wait_us));
        if (first + r->slow > r->s[s].t) {
            static const trace_op wait_op = {.kind = OP_WAIT, .name = "wait for the slowest rank"};
            advance(r, s, P_WAIT, first + r->slow - r->s[s].t, &wait_op);
        }
    }
    advance(r, s, part, d, op);
    sim_ps last = r->host + d / kernels;
    if (last > r->s[s].t)
        advance(r, s, P_LAUNCH, last - r->s[s].t, NULL);
}

int replay_op(replay *r, const trace_op *op, err *e)
{
    if (op->kind != OP_CYCLE && !r->in_cycle)
        begin_cycle(r, 1.0);
    r->ops++;
    int s = op->stream;
    if (s < 0 || s >= TRACE_MAX_STREAMS)
        return err_set(e, ERR_INPUT, "replay: stream %d out of range", s);
    sim_ps d = 0;
    switch (op->kind) {
    case OP_CYCLE:
        begin_cycle(r, op->tokens);
        break;
    case OP_PHASE:
        end_phase(r);
        r->phase = op->phase;
        r->graph = r->o.graph >= 0 ? r->o.graph : op->graph > 0;
        if (r->graph && r->launch_ps > 0) {
            /* The graph launch: the host issues it once its earlier launches
             * are out; the GPU waits for it. */
            r->host = (r->host > r->s[0].t ? r->host : r->s[0].t) + r->launch_ps;
            advance(r, 0, P_LAUNCH, r->host - r->s[0].t, NULL);
        }
        if (r->graph)
            join_all(r);
        break;
    case OP_COMPUTE:
        run_op(r, s, op->kernels, P_COMPUTE, us_to_ps(r, op->dur_us * r->o.compute_scale), op);
        break;
    case OP_IDLE:
        advance(r, s, P_IDLE, us_to_ps(r, op->dur_us), op);
        break;
    case OP_COLL:
        TRY(coll_time(r, op, &d, &r->last_algo, e));
        run_op(r, s, op->kernels, P_COMM, d, op);
        r->colls++;
        break;
    case OP_WAIT:
        if (r->s[op->on].t > r->s[s].t)
            r->s[s] = r->s[op->on];
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
    out->total_us = (double)r->total / 1e6;
    double n = r->cycles > 0 ? (double)r->cycles : 1;
    out->cycle_us = out->total_us / n;
    out->tok_per_s = r->total > 0 ? r->tokens / ((double)r->total / 1e12) : 0;
    out->compute_us = (double)r->part[P_COMPUTE] / 1e6 / n;
    out->comm_us = (double)r->part[P_COMM] / 1e6 / n;
    out->launch_us = (double)r->part[P_LAUNCH] / 1e6 / n;
    out->idle_us = (double)r->part[P_IDLE] / 1e6 / n;
    out->wait_us = (double)r->part[P_WAIT] / 1e6 / n;
    for (int i = 0; i < PHASE_N; i++) {
        out->phase_us[i] = (double)r->phase_ps[i] / 1e6 / n;
        for (int k = 0; k < REPLAY_NPARTS; k++)
            out->phase_part_us[i][k] = (double)r->phase_part[i][k] / 1e6 / n;
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
    r->ops = r->colls = 0;
    r->ntl = 0;
    r->ntlph = 0;
    r->streams_used = 0;
    r->tl_done = 0;
    return rc;
}

/* Chrome trace JSON in the layout of sim/json.h: a process per GPU of the
 * group (at most 8 drawn: the cycle is SPMD, every rank runs the same ops),
 * thread 0 "phases" with the cycle marker and one slice per phase (decode,
 * draft, verify, ...), thread 1+s "stream s" with the ops; collectives carry
 * args bytes, collective, algorithm, transfer_us (predicted) and wait_us
 * (captured wait for other ranks; 0 when none: a replay is SPMD). */
static int write_timeline(replay *r, err *e)
{
    int ngpu = r->ngpus > 0 ? r->ngpus : 1;
    timeline own, *tl = r->tl_doc;
    if (r->tl_part) {
        ngpu = 1;  /* one process for the run (whatif: one per variant), GPU 0's events */
    } else {
        if (ngpu > 8)
            ngpu = 8;
        TRY(tl_open(&own, r->tl, e));
        tl = &own;
    }
    for (int gi = 0; gi < ngpu; gi++) {
        int pid = r->tl_part ? r->tl_pid : TL_PID_GPU(gi);
        char name[300];
        if (r->tl_part)
            snprintf(name, sizeof name, "%s", r->tl_label);
        else
            snprintf(name, sizeof name, "GPU %d", gi);
        tl_process(tl, pid, name, r->tl_part ? r->tl_pid : gi);
        tl_thread(tl, pid, 0, "phases", 0);
        for (int s = 0; s < TRACE_MAX_STREAMS && s < 31; s++)
            if (r->streams_used & (1 << s)) {
                snprintf(name, sizeof name, "stream %d", s);
                tl_thread(tl, pid, 1 + s, name, 1 + s);
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
            const char *cat = ev->kind == OP_COLL      ? "comm"
                              : ev->kind == OP_COMPUTE ? "compute"
                              : ev->kind == OP_IDLE    ? "host"
                              : ev->kind == OP_WAIT    ? "wait"
                                                       : "launch";
            tl_slice(tl, pid, 1 + ev->stream, ev->start, ev->end - ev->start,
                     ev->label, cat);
            if (ev->kind == OP_COLL) {
                json_kv_int(tl->g, "bytes", (long long)ev->bytes);
                json_kv_str(tl->g, "collective", coll_kind_name(ev->coll));
                json_kv_str(tl->g, "algorithm", ev->algo == ALGO_AUTO ? "as given (measured or "
                                                                       "fixed time)"
                                                                     : coll_algo_name(ev->algo));
                json_kv_num(tl->g, "transfer_us", (double)(ev->end - ev->start) / 1e6);
                json_kv_num(tl->g, "wait_us", ev->wait_us > 0 ? ev->wait_us : 0);
            } else if (ev->kind == OP_COMPUTE) {
                json_kv_int(tl->g, "kernels", ev->kernels);
            } else if (ev->kind == OP_N) {
                json_kv_str(tl->g, "what", "launch or CUDA-graph node overhead the GPU waits for");
            }
            tl_slice_end(tl);
        }
    }
    if (r->tl_part)
        return ferror(tl->f) ? err_set(e, ERR_SYSTEM, "timeline: write failed") : 0;
    return tl_close(&own, e);
}

int replay_file(const char *path, const topo *t, coll_ctx *c, const replay_opts *o,
                FILE *tl_out, replay_result *out, err *e)
{
    trace_reader *tr = NULL;
    TRY(trace_open(path, &tr, e));
    replay_opts ro;
    if (o)
        ro = *o;
    else
        replay_opts_init(&ro);
    const char *ov = trace_meta(tr, "overhead");
    if (ov && !strcmp(ov, "captured"))
        ro.captured_overhead = 1;
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
