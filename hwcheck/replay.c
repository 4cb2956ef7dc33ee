/* `hwcheck replay TRACE...`: run a collsim trace (docs/formats.md "Traces",
 * collsim-trace 1, gzipped or not) on the GPUs: compute and idle as spin
 * kernels of the given duration (K kernels of DUR/K for kernels=K), every
 * collective for real (NCCL, or the project's allreduce kernels for
 * algo=oneshot... or --allreduce), streams as CUDA streams, `wait` as an
 * event wait, `cycle`/`phase` as a join of all streams. The trace is parsed
 * once into memory (about 48 bytes per op) and run -w + -n times.
 * Reported per trace: cycles, tokens, cycle time and tok/s from the host
 * clock, and a breakdown along stream 0 of GPU 0: compute and idle are the
 * requested durations, comm the event-timed collectives, launch the rest
 * (the host's launch gaps and the GPU's own time between kernels, which a
 * device-bound stream pays eager or in a graph alike, and the spin kernels'
 * own start and exit); for single-stream traces that is the
 * critical path. Launch modes: phases marked graph=1 (or all, under `meta
 * graph 1`) are captured as CUDA graphs, one per phase and GPU, built once
 * after an eager pass (NCCL connects on first use, never inside a capture)
 * and launched once per phase; --graph captures every phase, --eager none.
 * In a captured phase the collectives are timed by external event nodes.
 * Data are zeros; results are not checked here (coll does). */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#ifdef HWCHECK_ZLIB
#include <zlib.h>
#else /* built without zlib: plain text traces only */
#include <stdio.h>
typedef FILE *gzFile;
#define Z_OK 0
#define Z_STREAM_END 1
#define gzopen(p, m) fopen(p, m)
#define gzgets(f, b, n) fgets(b, n, f)
#define gzclose(f) fclose(f)
#define gzerror(f, z) (*(z) = ferror(f) ? -1 : Z_OK, "read failed")
#endif

#include "hwcheck/modes.h"

typedef enum rkind { R_CYCLE, R_PHASE, R_COMPUTE, R_COLL, R_IDLE, R_WAIT } rkind;

typedef struct rop {
    rkind k;
    int stream, kernels, on, group, graph;
    int impl;          /* R_COLL: opts_impl */
    ref_coll coll;
    ref_dtype dtype;
    double v;          /* tokens (cycle) or duration in us */
    uint64_t bytes;
} rop;

typedef struct rtrace {
    rop *ops;
    size_t n, cap;
    int ranks, graph_meta, graph_phases;
    uint64_t max_bytes;
    long cycles;
    double tokens;
} rtrace;

static int push(rtrace *t, const rop *op, err *e)
{
    if (t->n == t->cap) {
        size_t cap = t->cap ? 2 * t->cap : 1024;
        rop *p = realloc(t->ops, cap * sizeof *p);
        if (!p)
            return err_set(e, ERR_SYSTEM, "out of memory reading the trace");
        t->ops = p;
        t->cap = cap;
    }
    t->ops[t->n++] = *op;
    return 0;
}

static int num(const char *path, long line, const char *what, const char *s, double lo,
               double *out, err *e)
{
    char *end;
    double v = strtod(s, &end);
    if (end == s || *end || !(v >= lo))
        return err_at(e, path, line, "bad %s '%s'", what, s);
    *out = v;
    return 0;
}

static int inum(const char *path, long line, const char *what, const char *s, int lo, int hi,
                int *out, err *e)
{
    double v = 0;
    TRY(num(path, line, what, s, lo, &v, e));
    if (v > hi || v != (double)(int)v)
        return err_at(e, path, line, "bad %s '%s' (integer %d..%d)", what, s, lo, hi);
    *out = (int)v;
    return 0;
}

static int parse_line(rtrace *t, const char *path, long line, char *s, const opts *o, err *e)
{
    char *hash = strchr(s, '#');
    if (hash)
        *hash = 0;
    char *w[64];
    int nw = 0;
    for (char *tok = strtok(s, " \t\r\n"); tok && nw < 64; tok = strtok(NULL, " \t\r\n"))
        w[nw++] = tok;
    if (nw == 0)
        return 0;
    rop op;
    memset(&op, 0, sizeof op);
    op.kernels = 1;
    op.group = t->ranks;
    op.graph = t->graph_meta;
    op.dtype = REF_BF16;
    op.impl = OPTS_IMPL_NCCL;
    int npos = 0;
    if (!strcmp(w[0], "meta")) {
        if (nw >= 3 && !strcmp(w[1], "ranks"))
            TRY(inum(path, line, "ranks", w[2], 1, 64, &t->ranks, e));
        else if (nw >= 3 && !strcmp(w[1], "graph"))
            TRY(inum(path, line, "graph", w[2], 0, 1, &t->graph_meta, e));
        else if (nw < 2)
            return err_at(e, path, line, "meta needs a key");
        return 0;
    }
    if (!strcmp(w[0], "cycle")) {
        op.k = R_CYCLE, npos = 1;
    } else if (!strcmp(w[0], "phase")) {
        op.k = R_PHASE, npos = 1;
    } else if (!strcmp(w[0], "compute")) {
        op.k = R_COMPUTE, npos = 1;
    } else if (!strcmp(w[0], "coll")) {
        op.k = R_COLL, npos = 2;
    } else if (!strcmp(w[0], "idle")) {
        op.k = R_IDLE, npos = 1;
    } else if (!strcmp(w[0], "wait")) {
        op.k = R_WAIT, npos = 1;
    } else {
        return err_at(e, path, line, "unknown directive '%s'", w[0]);
    }
    if (nw < 1 + npos)
        return err_at(e, path, line, "%s needs %d argument%s", w[0], npos, npos > 1 ? "s" : "");
    for (int i = 1; i <= npos; i++)
        if (strchr(w[i], '='))
            return err_at(e, path, line, "%s: missing argument before '%s'", w[0], w[i]);
    switch (op.k) {
    case R_CYCLE:
        TRY(num(path, line, "tokens", w[1], 0, &op.v, e));
        if (op.v <= 0)
            return err_at(e, path, line, "cycle tokens must be > 0");
        break;
    case R_PHASE:
        if (strcmp(w[1], "decode") && strcmp(w[1], "draft") && strcmp(w[1], "verify") &&
            strcmp(w[1], "prefill") && strcmp(w[1], "other"))
            return err_at(e, path, line, "unknown phase '%s'", w[1]);
        break;
    case R_COMPUTE:
    case R_IDLE:
        TRY(num(path, line, "duration", w[1], 0, &op.v, e));
        break;
    case R_WAIT:
        TRY(inum(path, line, "stream", w[1], 0, 7, &op.on, e));
        break;
    case R_COLL: {
        if (ref_coll_parse(w[1], &op.coll) != 0)
            return err_at(e, path, line, "unknown collective '%s'", w[1]);
        double b = 0;
        TRY(num(path, line, "bytes", w[2], 1, &b, e));
        op.bytes = (uint64_t)b;
        break;
    }
    }
    for (int i = 1 + npos; i < nw; i++) {
        char *eq = strchr(w[i], '=');
        if (!eq)
            return err_at(e, path, line, "expected key=value, got '%s'", w[i]);
        *eq = 0;
        const char *k = w[i], *v = eq + 1;
        if (!strcmp(k, "stream") && op.k != R_CYCLE && op.k != R_PHASE)
            TRY(inum(path, line, "stream", v, 0, 7, &op.stream, e));
        else if (!strcmp(k, "kernels") && (op.k == R_COMPUTE || op.k == R_COLL))
            TRY(inum(path, line, "kernels", v, 1, 1000000, &op.kernels, e));
        else if (!strcmp(k, "name") && op.k != R_CYCLE && op.k != R_WAIT)
            continue;
        else if (!strcmp(k, "graph") && op.k == R_PHASE)
            TRY(inum(path, line, "graph", v, 0, 1, &op.graph, e));
        else if (!strcmp(k, "group") && op.k == R_COLL)
            TRY(inum(path, line, "group", v, 1, 64, &op.group, e));
        else if (!strcmp(k, "dtype") && op.k == R_COLL) {
            if (ref_dtype_parse(v, &op.dtype) != 0)
                return err_at(e, path, line, "unknown dtype '%s'", v);
        } else if (!strcmp(k, "algo") && op.k == R_COLL) {
            opts_impl im;
            if (!strcmp(v, "ring") || !strcmp(v, "tree") || !strcmp(v, "auto"))
                op.impl = OPTS_IMPL_NCCL;
            else if (opts_impl_parse(v, &im) == 0 && im != OPTS_IMPL_NCCL)
                op.impl = im;
            else
                return err_at(e, path, line, "unknown algo '%s'", v);
        } else if ((!strcmp(k, "measured_us") || !strcmp(k, "wait_us")) && op.k == R_COLL)
            continue;
        else
            return err_at(e, path, line, "unknown key '%s'", k);
    }
    if (op.k == R_COLL) {
        if (o->impl != OPTS_IMPL_NCCL && op.coll == REF_ALLREDUCE)
            op.impl = o->impl; /* --allreduce */
        if (op.impl != OPTS_IMPL_NCCL && op.coll != REF_ALLREDUCE)
            return err_at(e, path, line, "algo %s is for allreduce only", opts_impl_name(op.impl));
        if (op.bytes > t->max_bytes)
            t->max_bytes = op.bytes;
    }
    if (op.k == R_CYCLE) {
        t->cycles++;
        t->tokens += op.v;
    }
    if (op.k == R_PHASE && op.graph)
        t->graph_phases++;
    return push(t, &op, e);
}

static int read_trace(const char *path, const opts *o, rtrace *t, err *e)
{
    gzFile f = gzopen(path, "rb");
    if (!f)
        return err_at(e, path, 0, "cannot open");
    char buf[4096];
    long line = 0;
    int rc = 0;
    while (rc == 0 && gzgets(f, buf, sizeof buf)) {
        line++;
        size_t len = strlen(buf);
        if (len == sizeof buf - 1 && buf[len - 1] != '\n') {
            rc = err_at(e, path, line, "line longer than 4095 bytes");
            break;
        }
        if (line == 1) {
            if (strncmp(buf, "collsim-trace 1", 15) != 0 || (buf[15] && buf[15] != '\n' &&
                                                             buf[15] != '\r'))
                rc = err_at(e, path, 1, "not a collsim trace (first line must be 'collsim-trace 1')");
            continue;
        }
        rc = parse_line(t, path, line, buf, o, e);
    }
    int zerr;
    const char *msg = gzerror(f, &zerr);
    if (rc == 0 && zerr != Z_OK && zerr != Z_STREAM_END)
        rc = err_at(e, path, line, "read error: %s", msg);
    if (rc == 0 && line == 0)
        rc = err_at(e, path, 0, "empty file");
    gzclose(f);
    if (rc == 0 && t->cycles == 0) { /* ops before any cycle: one cycle of 1 token */
        t->cycles = 1;
        t->tokens = 1;
    }
    return rc;
}

/* --- execution -------------------------------------------------------------- */

enum { NSTREAMS = 8 };

/* A segment: the ops after a cycle or phase marker up to the next one (the
 * first segment may have no marker), run op by op or as one graph per GPU. */
typedef struct rseg {
    size_t marker, first, end; /* marker index (SIZE_MAX: none), ops [first, end) */
    int capture;
    cudaGraphExec_t exec[GPU_MAX];
} rseg;

typedef struct rgpu {
    cudaStream_t s[NSTREAMS];
    unsigned used;         /* streams used since the last join */
    cudaEvent_t ev[NSTREAMS];
    void *in, *out, *inbox;
    kern_signal *sig;
} rgpu;

typedef struct rexec {
    gpu_ctx *g;
    const opts *o;
    int n;
    rgpu r[GPU_MAX];
    cudaEvent_t *cev;      /* event pairs around GPU 0's collectives (timed pass) */
    size_t ncev, capcev;
    cudaEvent_t *gev;      /* the same inside graphs (external nodes: they fire every launch) */
    size_t ngev, capgev;
    int timing, capturing;
    rseg *seg;
    size_t nseg;
} rexec;

static int join(rexec *x, err *e)
{
    for (int d = 0; d < x->n; d++) {
        rgpu *r = &x->r[d];
        GPU_CU(d, cudaSetDevice(d));
        for (int s = 1; s < NSTREAMS; s++)
            if (r->used & (1u << s)) {
                GPU_CU(d, cudaEventRecord(r->ev[s], r->s[s]));
                GPU_CU(d, cudaStreamWaitEvent(r->s[0], r->ev[s], 0));
            }
        GPU_CU(d, cudaEventRecord(r->ev[0], r->s[0]));
        for (int s = 1; s < NSTREAMS; s++)
            if (r->used & (1u << s))
                GPU_CU(d, cudaStreamWaitEvent(r->s[s], r->ev[0], 0));
        r->used = 1;
    }
    return 0;
}

static int coll_event(rexec *x, cudaStream_t s, err *e)
{
    if (!x->timing && !x->capturing)
        return 0;
    cudaEvent_t **ev = x->capturing ? &x->gev : &x->cev;
    size_t *n = x->capturing ? &x->ngev : &x->ncev, *cap = x->capturing ? &x->capgev : &x->capcev;
    if (*n == *cap) {
        size_t c = *cap ? 2 * *cap : 256;
        cudaEvent_t *p = realloc(*ev, c * sizeof *p);
        if (!p)
            return err_set(e, ERR_SYSTEM, "out of memory");
        *ev = p;
        *cap = c;
    }
    GPU_CU(0, cudaSetDevice(0));
    GPU_CU(0, cudaEventCreate(&(*ev)[*n]));
    if (x->capturing)
        GPU_CU(0, cudaEventRecordWithFlags((*ev)[*n], s, cudaEventRecordExternal));
    else
        GPU_CU(0, cudaEventRecord((*ev)[*n], s));
    (*n)++;
    return 0;
}

static int run_coll(rexec *x, const rop *op, err *e)
{
    gpu_ctx *g = x->g;
    size_t esz = ref_dtype_bytes(op->dtype), in_count, out_count;
    ref_counts(op->coll, (size_t)op->bytes, op->dtype, op->group, &in_count, &out_count);
    if (in_count == 0)
        return err_set(e, ERR_INPUT, "coll %s %llu: size does not split into %d ranks of %s",
                       ref_coll_name(op->coll), (unsigned long long)op->bytes, op->group,
                       ref_dtype_name(op->dtype));
    TRY(coll_event(x, x->r[0].s[op->stream], e));
    if (op->impl != OPTS_IMPL_NCCL) {
        if (op->bytes % KERN_PACK_BYTES)
            return err_set(e, ERR_INPUT, "coll allreduce %llu: the custom kernels need a "
                           "multiple of 16 bytes", (unsigned long long)op->bytes);
        kern_ar_args a;
        memset(&a, 0, sizeof a);
        a.nranks = op->group;
        a.dtype = (kern_dtype)op->dtype;
        a.count = in_count;
        a.blocks = x->o->blocks;
        a.ctl = g->ctl_dev;
        a.timeout_ns = (uint64_t)(x->o->timeout_ms * 1e6);
        for (int r = 0; r < op->group; r++) {
            a.in[r] = x->r[r].in;
            a.out[r] = x->r[r].out;
            a.inbox[r] = x->r[r].inbox;
            a.sig[r] = x->r[r].sig;
        }
        for (int r = 0; r < op->group; r++) {
            a.rank = r;
            GPU_CU(r, cudaSetDevice(r));
            GPU_CU(r, kern_allreduce((kern_ar_algo)(op->impl - 1), &a, x->r[r].s[op->stream]));
        }
    } else {
        ncclDataType_t dt = op->dtype == REF_BF16 ? ncclBfloat16
                            : op->dtype == REF_FP16 ? ncclFloat16 : ncclFloat32;
        size_t per = out_count / (size_t)op->group;
        GPU_NC(0, ncclGroupStart());
        for (int r = 0; r < op->group; r++) {
            cudaStream_t s = x->r[r].s[op->stream];
            void *in = x->r[r].in, *out = x->r[r].out;
            ncclComm_t c = g->comm[r];
            if (op->coll == REF_ALLREDUCE)
                GPU_NC(r, ncclAllReduce(in, out, in_count, dt, ncclSum, c, s));
            else if (op->coll == REF_REDUCESCATTER)
                GPU_NC(r, ncclReduceScatter(in, out, out_count, dt, ncclSum, c, s));
            else if (op->coll == REF_ALLGATHER)
                GPU_NC(r, ncclAllGather(in, out, in_count, dt, c, s));
            else if (op->coll == REF_BROADCAST)
                GPU_NC(r, ncclBroadcast(in, out, in_count, dt, 0, c, s));
            else
                for (int p = 0; p < op->group; p++) {
                    GPU_NC(r, ncclSend((char *)in + (size_t)p * per * esz, per, dt, p, c, s));
                    GPU_NC(r, ncclRecv((char *)out + (size_t)p * per * esz, per, dt, p, c, s));
                }
        }
        GPU_NC(0, ncclGroupEnd());
    }
    return coll_event(x, x->r[0].s[op->stream], e);
}

/* Enqueue one op (not a marker) on its streams. */
static int run_op(rexec *x, const rop *op, err *e)
{
    switch (op->k) {
    case R_CYCLE:
    case R_PHASE:
        break;
    case R_COMPUTE:
    case R_IDLE: {
        int k = op->k == R_IDLE ? 1 : op->kernels;
        uint64_t ns = (uint64_t)(op->v * 1e3 / k);
        for (int d = 0; d < x->n; d++) {
            GPU_CU(d, cudaSetDevice(d));
            for (int j = 0; j < k; j++)
                GPU_CU(d, kern_spin(ns, 1, x->g->ctl_dev, x->r[d].s[op->stream]));
            x->r[d].used |= 1u << op->stream;
        }
        break;
    }
    case R_WAIT:
        for (int d = 0; d < x->n; d++) {
            GPU_CU(d, cudaSetDevice(d));
            GPU_CU(d, cudaEventRecord(x->r[d].ev[op->on], x->r[d].s[op->on]));
            GPU_CU(d, cudaStreamWaitEvent(x->r[d].s[op->stream], x->r[d].ev[op->on], 0));
            x->r[d].used |= 1u << op->stream | 1u << op->on;
        }
        break;
    case R_COLL:
        TRY(run_coll(x, op, e));
        for (int d = 0; d < op->group; d++)
            x->r[d].used |= 1u << op->stream;
        break;
    }
    return 0;
}

/* One pass over the trace; eager: run every segment op by op (the pass
 * before the captures), else launch the captured ones. */
static int run_once(rexec *x, const rtrace *t, int eager, err *e)
{
    for (size_t k = 0; k < x->nseg; k++) {
        const rseg *sg = &x->seg[k];
        if (sg->marker != SIZE_MAX)
            TRY(join(x, e));
        if (!eager && sg->capture) {
            for (int d = 0; d < x->n; d++) {
                GPU_CU(d, cudaSetDevice(d));
                GPU_CU(d, cudaGraphLaunch(sg->exec[d], x->r[d].s[0]));
                x->r[d].used |= 1u;
            }
            continue;
        }
        for (size_t i = sg->first; i < sg->end; i++)
            TRY(run_op(x, &t->ops[i], e));
    }
    TRY(join(x, e));
    for (int d = 0; d < x->n; d++)
        TRY(gpu_wait(x->g, d, x->r[d].s[0], "trace replay", e));
    return 0;
}

/* Capture segment sg as one graph per GPU: every GPU's stream 0 begins a
 * capture, the other streams fork from it and join back at the end, so the
 * graph holds the segment's streams and waits; every capture is ended
 * before the first instantiation, and ended on every error path. */
static int capture_seg(rexec *x, const rtrace *t, rseg *sg, err *e)
{
    cudaGraph_t graph[GPU_MAX] = {0};
    int began = 0, rc = 0;
    gpu_step(x->g, 0, "replay graph capture");
    for (int d = 0; d < x->n && rc == 0; d++) {
        rgpu *r = &x->r[d];
        cudaError_t c = cudaSetDevice(d);
        if (c == cudaSuccess)
            c = cudaStreamBeginCapture(r->s[0], cudaStreamCaptureModeThreadLocal);
        if (c == cudaSuccess)
            began++;
        if (c == cudaSuccess)
            c = cudaEventRecord(r->ev[0], r->s[0]);
        for (int s = 1; s < NSTREAMS && c == cudaSuccess; s++)
            c = cudaStreamWaitEvent(r->s[s], r->ev[0], 0);
        if (c != cudaSuccess)
            rc = err_set(e, ERR_SYSTEM, "GPU %d: replay capture start: %s", d,
                         cudaGetErrorString(c));
    }
    x->capturing = 1;
    for (size_t i = sg->first; i < sg->end && rc == 0; i++)
        rc = run_op(x, &t->ops[i], e);
    x->capturing = 0;
    for (int d = 0; d < began; d++) {
        rgpu *r = &x->r[d];
        cudaSetDevice(d);
        for (int s = 1; s < NSTREAMS && rc == 0; s++) {
            cudaError_t c = cudaEventRecord(r->ev[s], r->s[s]);
            if (c == cudaSuccess)
                c = cudaStreamWaitEvent(r->s[0], r->ev[s], 0);
            if (c != cudaSuccess)
                rc = err_set(e, ERR_SYSTEM, "GPU %d: replay capture join: %s", d,
                             cudaGetErrorString(c));
        }
        cudaError_t c = cudaStreamEndCapture(r->s[0], &graph[d]);
        if (rc == 0 && c != cudaSuccess)
            rc = err_set(e, ERR_SYSTEM, "GPU %d: cudaStreamEndCapture: %s", d,
                         cudaGetErrorString(c));
        gpu_capture_abandon(d, r->s[0]); /* no-op unless still capturing */
        r->used = 1;
    }
    for (int d = 0; d < began; d++) {
        cudaSetDevice(d);
        if (rc == 0) {
            cudaError_t c = cudaGraphInstantiate(&sg->exec[d], graph[d], 0);
            if (c != cudaSuccess)
                rc = err_set(e, ERR_SYSTEM, "GPU %d: cudaGraphInstantiate: %s", d,
                             cudaGetErrorString(c));
        }
        if (graph[d])
            cudaGraphDestroy(graph[d]);
    }
    gpu_step_done(x->g);
    return rc;
}

/* Cut the trace into segments at its markers; which are captured follows the
 * launch mode (opts: eager, graph, else as the trace marks). Returns the
 * number of captured segments, or -1 out of memory. */
static long segments(rexec *x, const rtrace *t)
{
    size_t n = 1;
    for (size_t i = 0; i < t->n; i++)
        n += t->ops[i].k == R_CYCLE || t->ops[i].k == R_PHASE;
    x->seg = calloc(n, sizeof *x->seg);
    if (!x->seg)
        return -1;
    long captured = 0;
    rseg *cur = &x->seg[0];
    *cur = (rseg){SIZE_MAX, 0, 0, 0, {0}};
    x->nseg = 1;
    for (size_t i = 0; i <= t->n; i++) {
        int marker = i < t->n && (t->ops[i].k == R_CYCLE || t->ops[i].k == R_PHASE);
        if (i < t->n && !marker)
            continue;
        cur->end = i;
        int marked = cur->marker != SIZE_MAX && t->ops[cur->marker].graph;
        cur->capture = cur->end > cur->first && !x->o->eager && (x->o->graph || marked);
        captured += cur->capture;
        if (i == t->n)
            break;
        cur = &x->seg[x->nseg++];
        *cur = (rseg){i, i + 1, i + 1, 0, {0}};
    }
    return captured;
}

static void rexec_free(rexec *x)
{
    for (size_t i = 0; i < x->ncev; i++)
        cudaEventDestroy(x->cev[i]);
    free(x->cev);
    for (size_t i = 0; i < x->ngev; i++)
        cudaEventDestroy(x->gev[i]);
    free(x->gev);
    for (size_t k = 0; k < x->nseg; k++)
        for (int d = 0; d < x->n; d++)
            if (x->seg[k].exec[d]) {
                cudaSetDevice(d);
                cudaGraphExecDestroy(x->seg[k].exec[d]);
            }
    free(x->seg);
    for (int d = 0; d < x->n; d++) {
        rgpu *r = &x->r[d];
        cudaSetDevice(d);
        for (int s = 0; s < NSTREAMS; s++) {
            if (r->s[s])
                cudaStreamDestroy(r->s[s]);
            if (r->ev[s])
                cudaEventDestroy(r->ev[s]);
        }
        cudaFree(r->in);
        cudaFree(r->out);
        cudaFree(r->inbox);
        cudaFree(r->sig);
    }
}

static int replay_one(gpu_ctx *g, const opts *o, const char *path, out_file *out, err *e)
{
    rtrace t;
    memset(&t, 0, sizeof t);
    t.ranks = g->n;
    int rc = read_trace(path, o, &t, e);
    int need = t.ranks;
    for (size_t i = 0; rc == 0 && i < t.n; i++)
        if (t.ops[i].k == R_COLL && t.ops[i].group > need)
            need = t.ops[i].group;
    if (rc == 0 && need > g->n) {
        report_note(out->rep, "%s skipped: the trace needs %d GPUs, %d in use", path, need, g->n);
        free(t.ops);
        return 0;
    }
    rexec x;
    memset(&x, 0, sizeof x);
    x.g = g;
    x.o = o;
    x.n = g->n;
    long captured = rc == 0 ? segments(&x, &t) : 0;
    if (captured < 0)
        rc = err_set(e, ERR_SYSTEM, "out of memory");
    if (rc == 0 && o->eager && t.graph_phases)
        report_note(out->rep, "%s: %d phase%s marked graph=1 ran eagerly (--eager)", path,
                    t.graph_phases, t.graph_phases == 1 ? "" : "s");
    if (rc == 0)
        report_note(out->rep, "%s: %ld of %zu segments (the ops between cycle and phase markers) "
                    "ran as CUDA graphs", path, captured, x.nseg);
    size_t bytes = (size_t)(t.max_bytes + 15) / 16 * 16;
    if (bytes < 16)
        bytes = 16;
    for (int d = 0; rc == 0 && d < x.n; d++) {
        rgpu *r = &x.r[d];
        rc = cudaSetDevice(d) == cudaSuccess ? 0 : err_set(e, ERR_SYSTEM, "GPU %d: cudaSetDevice", d);
        for (int s = 0; rc == 0 && s < NSTREAMS; s++)
            if (cudaStreamCreateWithFlags(&r->s[s], cudaStreamNonBlocking) != cudaSuccess ||
                cudaEventCreateWithFlags(&r->ev[s], cudaEventDisableTiming) != cudaSuccess)
                rc = err_set(e, ERR_SYSTEM, "GPU %d: cudaStreamCreate/cudaEventCreate failed", d);
        if (rc == 0 && (cudaMalloc(&r->in, bytes) != cudaSuccess ||
                        cudaMalloc(&r->out, bytes) != cudaSuccess ||
                        cudaMalloc(&r->inbox, bytes * (size_t)x.n) != cudaSuccess ||
                        cudaMalloc((void **)&r->sig, KERN_SIGNAL_BYTES) != cudaSuccess))
            rc = err_set(e, ERR_SYSTEM, "GPU %d: cudaMalloc of replay buffers (%zu bytes) failed",
                         d, bytes);
        if (rc == 0 && (cudaMemset(r->in, 0, bytes) != cudaSuccess ||
                        cudaMemset(r->sig, 0, KERN_SIGNAL_BYTES) != cudaSuccess ||
                        cudaDeviceSynchronize() != cudaSuccess))
            rc = err_set(e, ERR_SYSTEM, "GPU %d: cudaMemset of replay buffers failed", d);
        r->used = 1;
    }
    if (rc == 0)
        rc = gpu_nccl(g, o->env, o->nenv, e);
    gpu_ctl_reset(g);
    if (rc == 0 && captured > 0) /* NCCL connects on first use: an eager pass first */
        rc = run_once(&x, &t, 1, e);
    for (size_t k = 0; rc == 0 && k < x.nseg; k++)
        if (x.seg[k].capture)
            rc = capture_seg(&x, &t, &x.seg[k], e);
    for (int i = 0; rc == 0 && i < o->warmup; i++)
        rc = run_once(&x, &t, 0, e);
    double total_us = 0, comm_us = 0;
    for (int i = 0; rc == 0 && i < o->iters; i++) {
        x.timing = i == o->iters - 1; /* events only in the last pass */
        double t0 = gpu_now_us();
        rc = run_once(&x, &t, 0, e);
        total_us += gpu_now_us() - t0;
    }
    /* eager pairs of the last pass, and the graphs' pairs (their last launch) */
    for (size_t i = 0; rc == 0 && i + 1 < x.ncev; i += 2) {
        float ms = 0;
        if (cudaEventElapsedTime(&ms, x.cev[i], x.cev[i + 1]) == cudaSuccess)
            comm_us += (double)ms * 1e3;
    }
    for (size_t i = 0; rc == 0 && i + 1 < x.ngev; i += 2) {
        float ms = 0;
        if (cudaEventElapsedTime(&ms, x.gev[i], x.gev[i + 1]) == cudaSuccess)
            comm_us += (double)ms * 1e3;
    }
    if (rc == 0) {
        double compute = 0, idle = 0;
        for (size_t i = 0; i < t.n; i++)
            if (t.ops[i].stream == 0 && t.ops[i].k == R_COMPUTE)
                compute += t.ops[i].v;
            else if (t.ops[i].stream == 0 && t.ops[i].k == R_IDLE)
                idle += t.ops[i].v;
        double cyc = (double)t.cycles, cycle_us = total_us / o->iters / cyc;
        double launch = cycle_us - compute / cyc - comm_us / cyc - idle / cyc;
        const char *base = strrchr(path, '/');
        report_str(out->rep, base ? base + 1 : path);
        report_str(out->rep, o->allreduce_set ? opts_impl_name(o->impl) : "trace");
        report_int(out->rep, t.cycles);
        report_num(out->rep, t.tokens);
        report_num(out->rep, cycle_us);
        report_num(out->rep, t.tokens / (total_us / o->iters) * 1e6);
        report_num(out->rep, compute / cyc);
        report_num(out->rep, comm_us / cyc);
        report_num(out->rep, launch > 0 ? launch : 0);
        report_num(out->rep, idle / cyc);
        report_end_row(out->rep);
    }
    rexec_free(&x);
    free(t.ops);
    return rc;
}

int replay_run(int argc, char **argv, err *e)
{
    opts o;
    opts_init(&o, OPTS_REPLAY);
    TRY(opts_parse(&o, argc, argv, e));
    if (o.help) {
        opts_usage(stdout, "replay", "TRACE...", OPTS_REPLAY);
        return 0;
    }
    if (o.npos == 0)
        return err_set(e, ERR_USAGE, "replay: no trace given (hwcheck replay TRACE...)");
    /* Parse every trace before touching a GPU: bad input is exit 3, not 4. */
    for (int i = 0; i < o.npos; i++) {
        rtrace t;
        memset(&t, 0, sizeof t);
        int rc = read_trace(o.pos[i], &o, &t, e);
        free(t.ops);
        TRY(rc);
    }
    gpu_ctx *g = NULL;
    int rc = gpu_open(&g, o.ngpus, o.timeout_ms, o.host_wait_s, argc, argv, e);
    if (rc == 0)
        meas_extra(&g->meta, "launch", "%s",
                   o.eager ? "eager (every op launched on its own)"
                   : o.graph ? "graph (every phase captured as one CUDA graph per GPU)"
                   : "as the trace marks (phases with graph=1 captured as CUDA graphs)");
    out_file out;
    if (rc == 0)
        rc = out_open(&out, o.out, o.fmt, MEAS_REPLAY, &g->meta, e);
    if (rc == 0) {
        for (int i = 0; i < o.npos && rc == 0; i++)
            rc = replay_one(g, &o, o.pos[i], &out, e);
        if (rc == 0)
            rc = out_commit(&out, e);
        else
            out_abort(&out);
    }
    gpu_close(g);
    return rc;
}
