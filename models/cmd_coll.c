/* `collsim coll`: predicted times of a collective over a size range, printed
 * in the layout of nccl-tests (size count type redop root time algbw busbw)
 * plus what was chosen, through the shared report writer. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "models/cmds.h"
#include "models/coll.h"
#include "models/fabric.h"
#include "models/nccl_tune.h"
#include "models/topo.h"
#include "sim/ofile.h"
#include "sim/report.h"
#include "validate/calib.h"

static const char synopsis[] =
    "collsim coll <allreduce|reducescatter|allgather|broadcast|alltoall> [options]";
static const char desc[] =
    "Predicts each size from -b to -e (times -f); sizes take K/M/G (powers of 2).\n"
    "busbw follows nccl-tests: allreduce x 2(n-1)/n, reducescatter/allgather/alltoall\n"
    "x (n-1)/n, broadcast x 1.";

/* What the options set. */
typedef struct coll_args {
    const char *topo, *timeline, *out, *calib;
    uint64_t minb, maxb;
    double factor;
    long ng, channels, root;
    report_format fmt;
    coll_algo algo;
    coll_proto proto;
    coll_dtype dtype;
    int graph, split, without, explain;
    nccl_env env;
} coll_args;

#define ARGS ((coll_args *)ctx)
static int set_topo(void *ctx, const char *a, err *e) { (void)e; ARGS->topo = a; return 0; }
static int set_calib(void *ctx, const char *a, err *e) { (void)e; ARGS->calib = a; return 0; }
static int set_timeline(void *ctx, const char *a, err *e) { (void)e; ARGS->timeline = a; return 0; }
static int set_out(void *ctx, const char *a, err *e) { (void)e; ARGS->out = a; return 0; }
static int set_graph(void *ctx, const char *a, err *e) { (void)a, (void)e; ARGS->graph = 1; return 0; }
static int set_split(void *ctx, const char *a, err *e) { (void)a, (void)e; ARGS->split = 1; return 0; }
static int set_without(void *ctx, const char *a, err *e) { return fabric_mech_parse(a, &ARGS->without, e); }
static int set_ng(void *ctx, const char *a, err *e) { return cli_parse_long("-g", a, 1, 4096, &ARGS->ng, e); }
static int set_min(void *ctx, const char *a, err *e) { return cli_parse_size("-b", a, &ARGS->minb, e); }
static int set_max(void *ctx, const char *a, err *e) { return cli_parse_size("-e", a, &ARGS->maxb, e); }
static int set_factor(void *ctx, const char *a, err *e) { return cli_parse_double("-f", a, &ARGS->factor, e); }
static int set_channels(void *ctx, const char *a, err *e) { return cli_parse_long("--channels", a, 1, 64, &ARGS->channels, e); }
static int set_root(void *ctx, const char *a, err *e) { return cli_parse_long("--root", a, 0, 4095, &ARGS->root, e); }
static int set_format(void *ctx, const char *a, err *e) { return cli_parse_format(a, &ARGS->fmt, e); }
static int set_env(void *ctx, const char *a, err *e) { return coll_env_set(&ARGS->env, a, e); }
static int set_explain(void *ctx, const char *a, err *e) { (void)a, (void)e; ARGS->explain = 1; return 0; }

static int set_nccl(void *ctx, const char *a, err *e)
{
    char as[64];
    snprintf(as, sizeof as, "NCCL_VERSION=%s", a);
    if (strlen(a) > 32 || coll_env_set(&ARGS->env, as, e)) {
        char list[128];
        return err_set(e, ERR_USAGE, "--nccl: '%s' is not an emulated NCCL version (%s)", a,
                       nccl_tune_version_list(list, sizeof list));
    }
    return 0;
}

static int set_dtype(void *ctx, const char *a, err *e)
{
    return coll_dtype_parse(a, &ARGS->dtype) ? err_set(e, ERR_USAGE, "-d: '%s' (bf16, fp16 or fp32)", a) : 0;
}

static int set_algo(void *ctx, const char *a, err *e)
{
    return coll_algo_parse(a, &ARGS->algo) ? err_set(e, ERR_USAGE, "--algo: '%s' is not an algorithm", a) : 0;
}

static int set_proto(void *ctx, const char *a, err *e)
{
    return coll_proto_parse(a, &ARGS->proto) ? err_set(e, ERR_USAGE, "--proto: '%s' (LL, LL128, Simple, auto)", a) : 0;
}
#undef ARGS

static const cli_opt options[] = {
    {"topo", 't', "T", "preset (collsim topo list) or topology file; default rtxpro6000-8x-pcie5-2s", set_topo},
    {"ngpus", 'g', "N", "ranks: GPUs 0..N-1 (default: all)", set_ng},
    {"minbytes", 'b', "SIZE", "smallest size (default 8)", set_min},
    {"maxbytes", 'e', "SIZE", "largest size (default 128M)", set_max},
    {"stepfactor", 'f', "F", "multiply the size by F each step (default 2)", set_factor},
    {"datatype", 'd', "T", "bf16 (default), fp16 or fp32", set_dtype},
    {"algo", 0, "A", "ring, tree, oneshot, twoshot, oneshot-push, twoshot-push, auto", set_algo},
    {"proto", 0, "P", "LL, LL128, Simple, auto", set_proto},
    {"channels", 0, "C", "NCCL channels (default: as NCCL for the size)", set_channels},
    {"root", 0, "R", "broadcast root (default 0)", set_root},
    {"graph", 0, NULL, "launched inside a CUDA graph", set_graph},
    {"breakdown", 0, NULL, "add where the time goes: barrier, fixed, transfer, contention (us)", set_split},
    {"calib", 0, "FILE", "apply a calibration profile (collsim calibrate)", set_calib},
    {"without", 0, "M,...", "switch model mechanisms off: write-collapse, read-collapse, hol, req-size, socket-read", set_without},
    {"env", 0, "NCCL_X=Y", "an NCCL setting (repeatable)", set_env},
    {"nccl", 0, "VER", "NCCL version whose decisions are emulated (default: the newest)", set_nccl},
    {"explain", 0, NULL, "before each size, NCCL's choice and the numbers behind it", set_explain},
    {"timeline", 0, "OUT.json", "Perfetto timeline of the largest size", set_timeline},
    {"format", 0, "F", "table (default), csv or json", set_format},
    {"output", 'o', "FILE", "write the report to FILE (default stdout)", set_out},
    {NULL, 0, NULL, NULL, NULL},
};

/* nccl-tests' bus bandwidth factor. */
static double bus_factor(coll_kind k, int n)
{
    switch (k) {
    case COLL_ALLREDUCE: return 2.0 * (n - 1) / n;
    case COLL_BROADCAST: return 1.0;
    default: return (double)(n - 1) / n;
    }
}

static const report_col cols_table[] = {
    {"size_bytes", "size", 12, -1}, {"count", "count", 12, -1}, {"dtype", "type", 8, -1},
    {"redop", "redop", 6, -1},      {"root", "root", 5, -1},    {"time_us", "time", 10, 2},
    {"algbw_GBps", "algbw", 8, 2},  {"busbw_GBps", "busbw", 8, 2}, {"algo", "algo", 13, -1},
    {"proto", "proto", 7, -1},      {"channels", "ch", 4, -1},
};
static const report_col cols_csv[] = {
    {"size_bytes", NULL, 0, -1}, {"count", NULL, 0, -1},   {"dtype", NULL, 0, -1},
    {"algo", NULL, 0, -1},       {"proto", NULL, 0, -1},   {"channels", NULL, 0, -1},
    {"time_us", NULL, 0, 3},     {"algbw_GBps", NULL, 0, 3}, {"busbw_GBps", NULL, 0, 3},
    {"barrier_us", NULL, 0, 3},  {"fixed_us", NULL, 0, 3}, {"transfer_us", NULL, 0, 3},
    {"contention_us", NULL, 0, 3},
};
/* --breakdown appends these to the table (coll_result: where the time goes). */
static const report_col cols_split[] = {
    {"barrier_us", "barrier", 8, 2}, {"fixed_us", "fixed", 8, 2},
    {"transfer_us", "xfer", 8, 2},   {"contention_us", "wait", 8, 2},
};

int cmd_coll(int argc, char **argv, err *e)
{
    coll_args g;
    memset(&g, 0, sizeof g);
    g.topo = "rtxpro6000-8x-pcie5-2s";
    g.out = "-";
    g.minb = 8;
    g.maxb = 128u << 20;
    g.factor = 2;
    g.fmt = REPORT_TABLE;
    g.algo = ALGO_AUTO;
    g.proto = PROTO_AUTO;
    g.dtype = DTYPE_BF16;
    g.env.p2p_level = -1;
    const char *pos[2];
    int npos;
    int prc = cli_parse("collsim coll", synopsis, desc, options, &g, argc, argv, pos, 2, &npos, e);
    if (prc == CLI_HELP_SHOWN)
        return 0;
    TRY(prc);
    if (npos != 1)
        return err_set(e, ERR_USAGE, "coll: name one collective (collsim coll --help)");
    coll_kind kind;
    if (coll_kind_parse(pos[0], &kind))
        return err_set(e, ERR_USAGE, "coll: unknown collective '%s'", pos[0]);
    if (g.factor < 1.000001 && g.minb != g.maxb)
        return err_set(e, ERR_USAGE, "-f: factor must be > 1");
    if (g.explain && g.fmt != REPORT_TABLE)
        return err_set(e, ERR_USAGE, "--explain: only with --format table");
    if (g.minb > g.maxb)
        return err_set(e, ERR_USAGE, "-b %llu is larger than -e %llu", (unsigned long long)g.minb,
                       (unsigned long long)g.maxb);
    if (g.maxb > COLL_MAX_BYTES)
        return err_set(e, ERR_USAGE, "-e %llu is beyond the model's range (64G)",
                       (unsigned long long)g.maxb);
    topo *t = NULL;
    TRY(g.calib ? calib_load_topo(g.topo, g.calib, &t, e) : topo_load(g.topo, &t, e));
    int rc = 0;
    coll_ctx *ctx = coll_ctx_new(t);
    if (!rc && !ctx)
        rc = err_set(e, ERR_SYSTEM, "out of memory");
    if (ctx)
        coll_ctx_without(ctx, g.without);
    coll_req req;
    coll_req_init(&req, t);
    req.kind = kind;
    req.dtype = g.dtype;
    req.algo = g.algo;
    req.proto = g.proto;
    req.channels = (int)g.channels;
    req.root = (int)g.root;
    req.graph = g.graph;
    req.env = g.env;
    if (g.ng)
        req.nranks = (int)g.ng;
    ofile out;
    memset(&out, 0, sizeof out);
    report_col cols[16];   /* the report keeps a pointer to its columns */
    if (!rc)
        rc = ofile_open(&out, g.out, e);
    report *rep = rc ? NULL : report_new(out.f, g.fmt);
    if (!rc && !rep)
        rc = err_set(e, ERR_SYSTEM, "out of memory");
    if (!rc) {
        if (g.fmt != REPORT_CSV) {
            report_meta(rep, "collective", "%s", coll_kind_name(kind));
            report_meta(rep, "topology", "%s (%d GPUs, %d used)", g.topo, topo_ngpus(t),
                        req.nranks);
        }
        int nc = g.fmt == REPORT_CSV ? 9 : 11;
        memcpy(cols, g.fmt == REPORT_CSV ? cols_csv : cols_table, sizeof cols[0] * (size_t)nc);
        if (g.split)
            memcpy(cols + nc, g.fmt == REPORT_CSV ? cols_csv + 9 : cols_split, sizeof cols[0] * 4);
        report_table(rep, g.fmt == REPORT_CSV ? NULL : coll_kind_name(kind), cols,
                     nc + (g.split ? 4 : 0));
    }
    int esz = coll_dtype_size(g.dtype);
    for (uint64_t sz = g.minb; !rc && sz <= g.maxb;) {
        req.bytes = sz;
        coll_result res;
        if (g.explain && g.fmt == REPORT_TABLE) {
            fflush(out.f);
            rc = coll_explain(ctx, &req, sz == g.minb, out.f, e);
            if (rc)
                break;
        }
        rc = coll_predict(ctx, &req, &res, e);
        if (rc)
            break;
        double us = (double)res.time_ps / 1e6;
        double algbw = us > 0 ? (double)sz / (us * 1e3) : 0;
        double busbw = algbw * bus_factor(kind, req.nranks);
        char chs[16];
        /* All-to-all runs as grouped point-to-point sends, not a ring. */
        const char *aname = kind == COLL_ALLTOALL ? "p2p" : coll_algo_name(res.algo);
        snprintf(chs, sizeof chs, "%d", res.channels);
        report_int(rep, (long long)sz);
        report_int(rep, (long long)(sz / (uint64_t)esz));
        report_str(rep, coll_dtype_name(g.dtype));
        if (g.fmt == REPORT_CSV) {
            report_str(rep, aname);
            report_str(rep, res.proto == PROTO_AUTO ? "-" : coll_proto_name(res.proto));
            report_int(rep, res.channels);
        } else {
            report_str(rep, "sum");
            report_int(rep, kind == COLL_BROADCAST ? req.root : -1);
        }
        report_num(rep, us);
        report_num(rep, algbw);
        report_num(rep, busbw);
        if (g.fmt != REPORT_CSV) {
            report_str(rep, aname);
            report_str(rep, res.proto == PROTO_AUTO ? "-" : coll_proto_name(res.proto));
            report_str(rep, res.channels ? chs : "-");
        }
        if (g.split) {
            report_num(rep, (double)res.barrier_ps / 1e6);
            report_num(rep, (double)res.fixed_ps / 1e6);
            report_num(rep, (double)res.transfer_ps / 1e6);
            report_num(rep, (double)res.contention_ps / 1e6);
        }
        report_end_row(rep);
        double grown = (double)sz * g.factor;
        if (g.minb == g.maxb || grown > (double)g.maxb)   /* also keeps the cast in range */
            break;
        uint64_t next = (uint64_t)grown;
        if (next <= sz)   /* a small size times a small factor: step one element */
            next = sz + (uint64_t)esz;
        sz = next;
    }
    if (!rc)
        rc = report_finish(rep, e);
    if (!rc)
        rc = ofile_commit(&out, e);
    else if (out.f)
        ofile_abort(&out);
    if (!rc && g.timeline) {
        ofile tl;
        req.bytes = g.maxb;
        coll_result res;
        rc = ofile_open(&tl, g.timeline, e);
        if (!rc) {
            rc = coll_predict_timeline(ctx, &req, &res, tl.f, e);
            rc = rc ? (ofile_abort(&tl), rc) : ofile_commit(&tl, e);
        }
    }
    report_free(rep);
    coll_ctx_free(ctx);
    topo_free(t);
    return rc;
}
