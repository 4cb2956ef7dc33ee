/* Transfers: `hwcheck p2p` (pair, bidir and latency matrices), `flows`
 * (one named contention pattern) and `host` (host<->device copies), all
 * driven by the pattern table (hwcheck/patterns.h). A case's flows are
 * enqueued together, one iteration of every flow after the other, each flow
 * on its own stream; a flow's time comes from events on its stream, the
 * case's aggregate from the host clock around all of them.
 * op read = copy kernel on the destination GPU loading from the source;
 * write = copy kernel on the source GPU storing into the destination;
 * copy = copy engine (cudaMemcpyPeerAsync / cudaMemcpyAsync). Host flows
 * (host mode) run as copy (the engine) or kernel: the copy kernel on the GPU
 * loads from pinned host memory (h2d, row op read) or stores into it (d2h,
 * row op write), as NCCL's SHM transport moves data through host memory. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "hwcheck/modes.h"
#include "hwcheck/patterns.h"

enum { SLOTS = GPU_MAX, HOST_SLOTS = 2 * GPU_MAX + 2 };

typedef struct pool {
    size_t bytes;
    cudaStream_t s[GPU_MAX][SLOTS];
    void *src[GPU_MAX][SLOTS], *dst[GPU_MAX][SLOTS];
    void *host[HOST_SLOTS];
    unsigned int *flag[GPU_MAX];
} pool;

static void pool_free(gpu_ctx *g, pool *p)
{
    for (int d = 0; d < g->n; d++) {
        cudaSetDevice(d);
        for (int k = 0; k < SLOTS; k++) {
            if (p->s[d][k])
                cudaStreamDestroy(p->s[d][k]);
            cudaFree(p->src[d][k]);
            cudaFree(p->dst[d][k]);
        }
        cudaFree(p->flag[d]);
    }
    for (int k = 0; k < HOST_SLOTS; k++)
        if (p->host[k])
            cudaFreeHost(p->host[k]);
}

static int stream_of(gpu_ctx *g, pool *p, int d, int k, cudaStream_t *out, err *e)
{
    (void)g;
    if (k >= SLOTS)
        return err_set(e, ERR_USAGE, "more than %d flows on GPU %d in one case", SLOTS, d);
    if (!p->s[d][k]) {
        GPU_CU(d, cudaSetDevice(d));
        GPU_CU(d, cudaStreamCreateWithFlags(&p->s[d][k], cudaStreamNonBlocking));
    }
    *out = p->s[d][k];
    return 0;
}

static int buf_of(void *slot[GPU_MAX][SLOTS], size_t bytes, int d, int k, void **out, err *e)
{
    if (k >= SLOTS)
        return err_set(e, ERR_USAGE, "more than %d flows on GPU %d in one case", SLOTS, d);
    if (!slot[d][k]) {
        GPU_CU(d, cudaSetDevice(d));
        GPU_CU(d, cudaMalloc(&slot[d][k], bytes));
        GPU_CU(d, cudaMemset(slot[d][k], 0x5a, bytes));
    }
    *out = slot[d][k];
    return 0;
}

static int host_of(pool *p, int k, void **out, err *e)
{
    if (k >= HOST_SLOTS)
        return err_set(e, ERR_USAGE, "more than %d host flows in one case", HOST_SLOTS);
    if (!p->host[k]) {
        GPU_CU(0, cudaSetDevice(0));
        GPU_CU(0, cudaHostAlloc(&p->host[k], p->bytes, cudaHostAllocPortable | cudaHostAllocMapped));
        memset(p->host[k], 0x5a, p->bytes);
    }
    *out = p->host[k];
    return 0;
}

typedef struct flow_run {
    int dev; /* device that executes it */
    cudaStream_t s;
    void *src, *dst;
    int src_dev, dst_dev;
    enum cudaMemcpyKind kind; /* host flows */
    cudaEvent_t ev0, ev1;
} flow_run;

static int enqueue(gpu_ctx *g, const flow_run *f, const opts *o, opts_op op, size_t bytes, err *e)
{
    GPU_CU(f->dev, cudaSetDevice(f->dev));
    /* (pinned host memory is mapped: a kernel takes its pointer as it is, UVA) */
    if ((f->src_dev == PATTERNS_HOST || f->dst_dev == PATTERNS_HOST) && op != OPTS_OP_KERNEL)
        GPU_CU(f->dev, cudaMemcpyAsync(f->dst, f->src, bytes, f->kind, f->s));
    else if (op == OPTS_OP_COPY)
        GPU_CU(f->dev, cudaMemcpyPeerAsync(f->dst, f->dst_dev, f->src, f->src_dev, bytes, f->s));
    else
        GPU_CU(f->dev, kern_copy_unroll(f->dst, f->src, bytes,
                                        o->blocks > 0 ? o->blocks : g->sms[f->dev], o->threads,
                                        o->unroll, f->s));
    return 0;
}

/* Fill n bytes with a pattern that differs in every 4-byte word (seeded by k). */
static void fill_pattern(void *p, size_t n, unsigned k)
{
    uint32_t *w = p;
    for (size_t i = 0; i < n / 4; i++)
        w[i] = (uint32_t)i * 2654435761u + k;
}

/* -c: one copy kernel of a host flow, checked: the source holds a pattern,
 * the destination is poisoned first, and after one run every byte must
 * match (a kernel that skipped or misplaced a pack fails here). */
static int check_host_copy(gpu_ctx *g, const flow_run *f, const opts *o, size_t bytes,
                           const char *pname, err *e)
{
    unsigned char *scratch = malloc(bytes);
    if (!scratch)
        return err_set(e, ERR_SYSTEM, "out of memory checking a %zu-byte copy", bytes);
    int h2d = f->src_dev == PATTERNS_HOST, rc = 0;
    fill_pattern(h2d ? f->src : scratch, bytes, (unsigned)bytes);
    GPU_CU(f->dev, cudaSetDevice(f->dev));
    if (h2d) {
        GPU_CU(f->dev, cudaMemset(f->dst, 0xff, bytes));
    } else {
        GPU_CU(f->dev, cudaMemcpy(f->src, scratch, bytes, cudaMemcpyHostToDevice));
        memset(f->dst, 0xff, bytes);
    }
    rc = enqueue(g, f, o, OPTS_OP_KERNEL, bytes, e);
    if (rc == 0)
        rc = gpu_wait(g, f->dev, f->s, "copy check", e);
    if (rc == 0 && h2d && cudaMemcpy(scratch, f->dst, bytes, cudaMemcpyDeviceToHost) != cudaSuccess)
        rc = err_set(e, ERR_SYSTEM, "GPU %d: reading back a checked copy", f->dev);
    if (rc == 0 && memcmp(scratch, h2d ? f->src : f->dst, bytes) != 0)
        rc = err_set(e, ERR_CHECK, "%s: the copy kernel (%d blocks x %d threads, unroll %d) "
                     "moved %zu bytes wrongly", pname, o->blocks, o->threads, o->unroll, bytes);
    free(scratch);
    return rc;
}

/* The op column of a flow's row: host flows are copy (engine) or, as a
 * kernel, read (the GPU loads from host memory) or write (it stores there). */
static const char *flow_op(const patterns_flow *f, opts_op op)
{
    int host = f->src == PATTERNS_HOST || f->dst == PATTERNS_HOST;
    if (host && op == OPTS_OP_KERNEL)
        return f->src == PATTERNS_HOST ? "read" : "write";
    return host ? "copy" : opts_op_name(op);
}

/* One bandwidth case: flows run together; rows per flow plus an aggregate
 * (when all its flows have one op). */
static int bw_case(gpu_ctx *g, pool *p, const opts *o, const char *pname, const patterns_flow *fl,
                   int nf, opts_op op, size_t bytes, out_file *out, err *e)
{
    flow_run fr[PATTERNS_MAX_FLOWS];
    int nexec[GPU_MAX] = {0}, nsrc[GPU_MAX] = {0}, ndst[GPU_MAX] = {0}, nhost = 0;
    memset(fr, 0, sizeof fr);
    for (int i = 0; i < nf; i++) {
        flow_run *f = &fr[i];
        f->src_dev = fl[i].src;
        f->dst_dev = fl[i].dst;
        if (f->src_dev == PATTERNS_HOST) {
            f->dev = f->dst_dev;
            f->kind = cudaMemcpyHostToDevice;
            TRY(host_of(p, nhost++, &f->src, e));
            TRY(buf_of(p->dst, p->bytes, f->dst_dev, ndst[f->dst_dev]++, &f->dst, e));
        } else if (f->dst_dev == PATTERNS_HOST) {
            f->dev = f->src_dev;
            f->kind = cudaMemcpyDeviceToHost;
            TRY(buf_of(p->src, p->bytes, f->src_dev, nsrc[f->src_dev]++, &f->src, e));
            TRY(host_of(p, nhost++, &f->dst, e));
        } else {
            /* (a copy inside one GPU, pattern local, needs no peer access) */
            if (op != OPTS_OP_COPY && f->src_dev != f->dst_dev &&
                (!g->peer[f->src_dev][f->dst_dev] ||
                                       !g->peer[f->dst_dev][f->src_dev])) {
                report_note(out->rep, "%s %s %d->%d skipped: no peer access between the GPUs",
                            pname, opts_op_name(op), f->src_dev, f->dst_dev);
                return 0;
            }
            f->dev = op == OPTS_OP_READ ? f->dst_dev : f->src_dev;
            TRY(buf_of(p->src, p->bytes, f->src_dev, nsrc[f->src_dev]++, &f->src, e));
            TRY(buf_of(p->dst, p->bytes, f->dst_dev, ndst[f->dst_dev]++, &f->dst, e));
        }
        TRY(stream_of(g, p, f->dev, nexec[f->dev]++, &f->s, e));
        GPU_CU(f->dev, cudaSetDevice(f->dev));
        GPU_CU(f->dev, cudaEventCreate(&f->ev0));
        GPU_CU(f->dev, cudaEventCreate(&f->ev1));
    }
    int rc = 0;
    for (int i = 0; i < nf && rc == 0 && o->check && op == OPTS_OP_KERNEL; i++)
        rc = check_host_copy(g, &fr[i], o, bytes, pname, e);
    for (int it = 0; it < o->warmup && rc == 0; it++)
        for (int i = 0; i < nf && rc == 0; i++)
            rc = enqueue(g, &fr[i], o, op, bytes, e);
    for (int i = 0; i < nf && rc == 0; i++)
        rc = gpu_wait(g, fr[i].dev, fr[i].s, "transfer warm-up", e);
    double t0 = gpu_now_us();
    for (int i = 0; i < nf && rc == 0; i++) {
        GPU_CU(fr[i].dev, cudaSetDevice(fr[i].dev));
        GPU_CU(fr[i].dev, cudaEventRecord(fr[i].ev0, fr[i].s));
    }
    for (int it = 0; it < o->iters && rc == 0; it++)
        for (int i = 0; i < nf && rc == 0; i++)
            rc = enqueue(g, &fr[i], o, op, bytes, e);
    for (int i = 0; i < nf && rc == 0; i++) {
        GPU_CU(fr[i].dev, cudaSetDevice(fr[i].dev));
        GPU_CU(fr[i].dev, cudaEventRecord(fr[i].ev1, fr[i].s));
    }
    for (int i = 0; i < nf && rc == 0; i++)
        rc = gpu_wait(g, fr[i].dev, fr[i].s, "transfer", e);
    double wall_us = (gpu_now_us() - t0) / o->iters;
    int same_op = 1; /* a case's aggregate row needs one op: host kernels mix read and write */
    for (int i = 0; i < nf && rc == 0; i++) {
        const char *opname = flow_op(&fl[i], op);
        same_op &= !strcmp(opname, flow_op(&fl[0], op));
        float ms = 0;
        GPU_CU(fr[i].dev, cudaSetDevice(fr[i].dev));
        GPU_CU(fr[i].dev, cudaEventElapsedTime(&ms, fr[i].ev0, fr[i].ev1));
        char s[16], d[16];
        meas_endpoint(fl[i].src, fl[i].src == PATTERNS_HOST ? g->numa[fl[i].dst] : 0, s, sizeof s);
        meas_endpoint(fl[i].dst, fl[i].dst == PATTERNS_HOST ? g->numa[fl[i].src] : 0, d, sizeof d);
        meas_transfer_row(out->rep, out->next_case, pname, opname, i, s, d, bytes,
                          (double)ms * 1e3 / o->iters);
        report_end_row(out->rep);
    }
    if (rc == 0 && nf > 1 && same_op) {
        meas_transfer_row(out->rep, out->next_case, pname, flow_op(&fl[0], op), -1, "*", "*",
                          bytes * (uint64_t)nf, wall_us);
        report_end_row(out->rep);
    }
    for (int i = 0; i < nf; i++) {
        cudaSetDevice(fr[i].dev);
        cudaEventDestroy(fr[i].ev0);
        cudaEventDestroy(fr[i].ev1);
    }
    out->next_case++;
    return rc;
}

/* Zero GPU d's flag on stream s, the stream its ping-pong kernel runs on. */
static int flag_of(pool *p, int d, cudaStream_t s, err *e)
{
    if (!p->flag[d]) {
        GPU_CU(d, cudaSetDevice(d));
        GPU_CU(d, cudaMalloc((void **)&p->flag[d], 256));
    }
    GPU_CU(d, cudaSetDevice(d));
    GPU_CU(d, cudaMemsetAsync(p->flag[d], 0, 256, s));
    return 0;
}

/* One-way latency of a 4-byte flag between i and j: ping-pong round trip / 2. */
static int latency_case(gpu_ctx *g, pool *p, const opts *o, int i, int j, out_file *out, err *e)
{
    if (!g->peer[i][j] || !g->peer[j][i]) {
        report_note(out->rep, "latency %d->%d skipped: no peer access between the GPUs", i, j);
        return 0;
    }
    cudaStream_t si, sj;
    TRY(stream_of(g, p, i, 0, &si, e));
    TRY(stream_of(g, p, j, 0, &sj, e));
    TRY(flag_of(p, i, si, e));
    TRY(flag_of(p, j, sj, e));
    TRY(gpu_wait(g, i, si, "flag reset", e));
    TRY(gpu_wait(g, j, sj, "flag reset", e));
    uint64_t tmo = (uint64_t)(o->timeout_ms * 1e6);
    int warm = 100, iters = o->iters * 100;
    gpu_ctl_reset(g);
    cudaEvent_t ev0, ev1;
    GPU_CU(i, cudaSetDevice(i));
    GPU_CU(i, cudaEventCreate(&ev0));
    GPU_CU(i, cudaEventCreate(&ev1));
    for (int pass = 0; pass < 2; pass++) {
        unsigned int base = pass ? (unsigned)warm : 0u;
        int n = pass ? iters : warm;
        GPU_CU(j, cudaSetDevice(j));
        GPU_CU(j, kern_pingpong(p->flag[j], p->flag[i], base, n, 0, g->ctl_dev, tmo, sj));
        GPU_CU(i, cudaSetDevice(i));
        if (pass)
            GPU_CU(i, cudaEventRecord(ev0, si));
        GPU_CU(i, kern_pingpong(p->flag[i], p->flag[j], base, n, 1, g->ctl_dev, tmo, si));
        if (pass)
            GPU_CU(i, cudaEventRecord(ev1, si));
        TRY(gpu_wait(g, i, si, "latency ping-pong", e));
        TRY(gpu_wait(g, j, sj, "latency ping-pong", e));
    }
    float ms = 0;
    GPU_CU(i, cudaSetDevice(i));
    GPU_CU(i, cudaEventElapsedTime(&ms, ev0, ev1));
    cudaEventDestroy(ev0);
    cudaEventDestroy(ev1);
    char s[16], d[16];
    meas_endpoint(i, 0, s, sizeof s);
    meas_endpoint(j, 0, d, sizeof d);
    meas_transfer_row(out->rep, out->next_case++, "latency", "write", 0, s, d, 4,
                      (double)ms * 1e3 / iters / 2.0);
    report_end_row(out->rep);
    return 0;
}

static int run_pattern(gpu_ctx *g, pool *p, const opts *o, const patterns_entry *pat,
                       out_file *out, err *e)
{
    int n = g->n;
    if (n < pat->min_gpus) {
        report_note(out->rep, "pattern %s skipped: needs at least %d GPUs, %d in use", pat->name,
                    pat->min_gpus, n);
        return 0;
    }
    patterns_flow fl[PATTERNS_MAX_FLOWS];
    int ncases = pat->ncases(n);
    if (pat->latency) {
        for (int c = 0; c < ncases; c++) {
            patterns_case(pat, n, c, fl, PATTERNS_MAX_FLOWS);
            TRY(latency_case(g, p, o, fl[0].src, fl[0].dst, out, e));
        }
        return 0;
    }
    static const opts_op all_ops[] = {OPTS_OP_READ, OPTS_OP_WRITE, OPTS_OP_COPY};
    static const opts_op host_ops[] = {OPTS_OP_COPY, OPTS_OP_KERNEL};
    int nops = o->op != OPTS_OP_ALL ? 1 : pat->host ? 2 : 3;
    for (uint64_t size = o->min_bytes;;) {
        size_t bytes = (size_t)size / 16 * 16;
        if (bytes == 0)
            bytes = 16;
        for (int k = 0; k < nops; k++) {
            opts_op op = o->op != OPTS_OP_ALL ? o->op : pat->host ? host_ops[k] : all_ops[k];
            for (int c = 0; c < ncases; c++) {
                int nf = patterns_case(pat, n, c, fl, PATTERNS_MAX_FLOWS);
                if (nf > PATTERNS_MAX_FLOWS)
                    return err_set(e, ERR_USAGE, "pattern %s: too many flows", pat->name);
                TRY(bw_case(g, p, o, pat->name, fl, nf, op, bytes, out, e));
            }
        }
        if (size >= o->max_bytes)
            break;
        uint64_t next = (uint64_t)((double)size * o->factor);
        size = next > size ? next : size + 1;
        if (size > o->max_bytes)
            size = o->max_bytes;
    }
    return 0;
}

int xfer_measure(gpu_ctx *g, const opts *o, const char *pattern, out_file *out, err *e)
{
    const patterns_entry *pat = patterns_find(pattern);
    if (!pat)
        return err_set(e, ERR_USAGE, "unknown pattern '%s' (hwcheck flows --list)", pattern);
    pool p;
    memset(&p, 0, sizeof p);
    p.bytes = (size_t)(o->max_bytes + 15) / 16 * 16;
    int rc = run_pattern(g, &p, o, pat, out, e);
    pool_free(g, &p);
    return rc;
}

/* Open the GPUs and the output, run the patterns, commit. */
static int run_patterns(int mode, meas_kind kind, const char *const *pats, int npats, int argc,
                        char **argv, err *e)
{
    opts o;
    opts_init(&o, mode);
    TRY(opts_parse(&o, argc, argv, e));
    if (o.help) {
        opts_usage(stdout, argv[0], mode == OPTS_FLOWS ? "--pattern P" : "", mode);
        return 0;
    }
    const char *one[1];
    if (mode == OPTS_FLOWS) {
        if (o.list) {
            for (int i = 0; i < patterns_count(); i++)
                printf("%-12s %s\n", patterns_at(i)->name, patterns_at(i)->summary);
            return 0;
        }
        if (!o.pattern)
            return err_set(e, ERR_USAGE, "flows: --pattern P is required (hwcheck flows --list)");
        if (!patterns_find(o.pattern))
            return err_set(e, ERR_USAGE, "flows: unknown pattern '%s' (hwcheck flows --list)",
                           o.pattern);
        one[0] = o.pattern;
        pats = one;
        npats = 1;
    }
    gpu_ctx *g = NULL;
    int rc = gpu_open(&g, o.ngpus, o.timeout_ms, o.host_wait_s, argc, argv, e);
    if (rc == 0 && (mode != OPTS_HOST || o.op != OPTS_OP_COPY)) {
        meas_extra(&g->meta, "kernel_blocks", "%s%d x %d threads per copy kernel (read, write)",
                   o.blocks ? "" : "one per SM: ", o.blocks ? o.blocks : g->sms[0], o.threads);
        meas_extra(&g->meta, "kernel_unroll",
                   "%d loads of 16 B in flight per thread before its stores", o.unroll);
    }
    out_file out;
    if (rc == 0)
        rc = out_open(&out, o.out, o.fmt, kind, &g->meta, e);
    if (rc == 0) {
        for (int i = 0; i < npats && rc == 0; i++)
            rc = xfer_measure(g, &o, pats[i], &out, e);
        if (rc == 0)
            rc = out_commit(&out, e);
        else
            out_abort(&out);
    }
    gpu_close(g);
    return rc;
}

static const char *const p2p_patterns[] = {"pair", "bidir", "latency"};
static const char *const host_patterns[] = {"h2d", "d2h", "h2d-d2h"};

int p2p_run(int argc, char **argv, err *e)
{
    return run_patterns(OPTS_P2P, MEAS_P2P, p2p_patterns, 3, argc, argv, e);
}

int flows_run(int argc, char **argv, err *e)
{
    return run_patterns(OPTS_FLOWS, MEAS_FLOWS, NULL, 0, argc, argv, e);
}

int host_run(int argc, char **argv, err *e)
{
    return run_patterns(OPTS_HOST, MEAS_HOST, host_patterns, 3, argc, argv, e);
}
