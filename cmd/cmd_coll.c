/* `collsim coll`: predicted times of a collective over a size range. The
 * options are nccl-tests' where they mean something for a prediction (-b -e
 * -i -f -g -d -o -r -G; -t -n -w -c -m -a -z -p -C accepted and ignored with
 * a note); collsim's own options have long names only. The table reads like
 * all_reduce_perf (header lines, out-of-place and in-place groups, the
 * "# Avg bus bandwidth" footer) so a prediction diffs against a real run;
 * csv and json go through the shared report writer. */
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cmd/cmd_ctx.h"
#include "cmd/cmds.h"
#include "models/coll/coll.h"
#include "models/fabric/fabric.h"
#include "models/nccl/nccl_tune.h"
#include "models/topo/topo.h"
#include "sim/ofile.h"
#include "sim/report.h"
#include "sim/version.h"
#include "validate/calib.h"

static const char synopsis[] =
    "collsim coll <allreduce|reducescatter|allgather|broadcast|alltoall> [options]";
static const char desc[] =
    "Predicts each size from -b to -e (times -f, or plus -i); sizes take K/M/G (powers of 2).\n"
    "Flags follow nccl-tests (-o is the reduction op, -t the thread count); busbw follows\n"
    "nccl-tests: allreduce x 2(n-1)/n, reducescatter/allgather/alltoall x (n-1)/n, broadcast x 1.";

enum { MAX_ALGOS = ALGO_NALGOS, MAX_ROWS = 1 << 16 };   /* sizes from -b to -e */

/* What the options set. */
typedef struct coll_args {
    cmd_ctx cc;  /* first: --topo --calib --output --timeline --format --env */
    const char *op;
    uint64_t minb, maxb, stepb;
    double factor;
    int factor_set, stepb_set;
    long ng, channels, root;
    report_format fmt;
    coll_algo algos[MAX_ALGOS];
    int nalgos, crossover;
    coll_proto proto;
    coll_dtype dtype;
    int graph, split, without, explain;
    const char *without_list, *nccl;  /* --without as given, for the header */
    char ignored[64];  /* nccl-tests flags accepted and ignored ("-n -w") */
} coll_args;

#define ARGS ((coll_args *)ctx)
static int set_graph(void *ctx, const char *a, err *e) { (void)a, (void)e; ARGS->graph = 1; return 0; }
static int set_crossover(void *ctx, const char *a, err *e) { (void)a, (void)e; ARGS->crossover = 1; return 0; }
static int set_split(void *ctx, const char *a, err *e) { (void)a, (void)e; ARGS->split = 1; return 0; }
static int set_explain(void *ctx, const char *a, err *e) { (void)a, (void)e; ARGS->explain = 1; return 0; }

static int set_nccl(void *ctx, const char *a, err *e)
{
    char as[64];
    snprintf(as, sizeof as, "NCCL_VERSION=%s", a);
    if (strlen(a) > 32 || coll_env_set(&ARGS->cc.env, as, e)) {
        char list[128];
        return err_set(e, ERR_USAGE, "--nccl: '%s' is not an emulated NCCL version (%s)", a,
                       nccl_tune_version_list(list, sizeof list));
    }
    ARGS->nccl = a;
    return 0;
}

static int set_without(void *ctx, const char *a, err *e)
{
    ARGS->without_list = a;
    return fabric_mech_parse(a, &ARGS->without, e);
}
static int set_ng(void *ctx, const char *a, err *e) { return cli_parse_long("-g", a, 1, 4096, &ARGS->ng, e); }
static int set_min(void *ctx, const char *a, err *e) { return cli_parse_size("-b", a, &ARGS->minb, e); }
static int set_max(void *ctx, const char *a, err *e) { return cli_parse_size("-e", a, &ARGS->maxb, e); }
static int set_channels(void *ctx, const char *a, err *e) { return cli_parse_long("--channels", a, 1, 64, &ARGS->channels, e); }
static int set_root(void *ctx, const char *a, err *e) { return cli_parse_long("--root", a, 0, 4095, &ARGS->root, e); }

static int set_factor(void *ctx, const char *a, err *e)
{
    ARGS->factor_set = 1;
    return cli_parse_double("-f", a, &ARGS->factor, e);
}

static int set_step(void *ctx, const char *a, err *e)
{
    ARGS->stepb_set = 1;
    TRY(cli_parse_size("-i", a, &ARGS->stepb, e));
    return ARGS->stepb ? 0 : err_set(e, ERR_USAGE, "-i: the step must be at least 1 byte");
}

/* nccl-tests -G N: N graph launches per size; any N > 0 means "in a graph". */
static int set_cudagraph(void *ctx, const char *a, err *e)
{
    long n;
    TRY(cli_parse_long("-G", a, 0, 1000000, &n, e));
    ARGS->graph = n > 0;
    return 0;
}

static int set_op(void *ctx, const char *a, err *e)
{
    static const char *const ops[] = {"sum", "prod", "min", "max", "avg"};
    for (int i = 0; i < 5; i++)
        if (!strcmp(a, ops[i]))
            return ARGS->op = ops[i], 0;
    if (!strcmp(a, "all"))
        return err_set(e, ERR_USAGE, "-o all: the predicted time does not depend on the op; "
                                     "name one (sum, prod, min, max, avg)");
    return cli_unknown(e, ERR_USAGE, "-o (reduction op)", a, ops, 5);
}

static int set_dtype(void *ctx, const char *a, err *e)
{
    static const char *const names[] = {"bf16", "bfloat16", "fp16", "half", "fp32", "float"};
    if (!coll_dtype_parse(a, &ARGS->dtype))
        return 0;
    return cli_unknown(e, ERR_USAGE, "-d (datatype)", a, names, 6);
}

static const char *const *algo_names(int *n)
{
    static const char *names[ALGO_NALGOS];
    for (int i = 0; i < ALGO_NALGOS; i++)
        names[i] = coll_algo_name((coll_algo)i);
    *n = ALGO_NALGOS;
    return names;
}

/* --algo A or a comma list A,B,C (compared in one table). */
static int set_algo(void *ctx, const char *a, err *e)
{
    char buf[256];
    TRY(cli_check_list("--algo", a, sizeof buf - 1, e));
    snprintf(buf, sizeof buf, "%s", a);
    ARGS->nalgos = 0;
    char *save = NULL;
    for (char *w = strtok_r(buf, ",", &save); w; w = strtok_r(NULL, ",", &save)) {
        coll_algo al;
        if (coll_algo_parse(w, &al)) {
            int n;
            const char *const *names = algo_names(&n);
            return cli_unknown(e, ERR_USAGE, "--algo", w, names, n);
        }
        for (int i = 0; i < ARGS->nalgos; i++)
            if (ARGS->algos[i] == al)
                return err_set(e, ERR_USAGE, "--algo: '%s' named twice", w);
        if (ARGS->nalgos >= MAX_ALGOS)
            return err_set(e, ERR_USAGE, "--algo: at most %d algorithms", MAX_ALGOS);
        ARGS->algos[ARGS->nalgos++] = al;
    }
    return ARGS->nalgos ? 0 : err_set(e, ERR_USAGE, "--algo: name an algorithm");
}

static int set_proto(void *ctx, const char *a, err *e)
{
    static const char *const names[] = {"LL", "LL128", "Simple", "auto"};
    return coll_proto_parse(a, &ARGS->proto) ? cli_unknown(e, ERR_USAGE, "--proto", a, names, 4) : 0;
}

/* nccl-tests flags that measure rather than describe the collective. */
static int set_ignored(const char *flag, void *ctx, const char *a, err *e)
{
    long v;
    if (!strcmp(flag, "-t") && cli_parse_long(flag, a, 0, 1L << 20, &v, NULL))
        return err_set(e, ERR_USAGE, "-t '%s': -t is nccl-tests' thread count; "
                                     "name the topology with --topo", a);
    TRY(cli_parse_long(flag, a, -1000000, 1000000000, &v, e));
    size_t k = strlen(ARGS->ignored);
    if (!strstr(ARGS->ignored, flag))
        snprintf(ARGS->ignored + k, sizeof ARGS->ignored - k, "%s%s", k ? " " : "", flag);
    return 0;
}
#define IGNORED(c)                                                                      \
    static int set_ign_##c(void *ctx, const char *a, err *e) { return set_ignored("-" #c, ctx, a, e); }
IGNORED(t) IGNORED(n) IGNORED(w) IGNORED(c) IGNORED(m) IGNORED(a) IGNORED(z) IGNORED(p) IGNORED(C)
#undef IGNORED
#undef ARGS

static const cli_opt options[] = {
    {"topo", 0, "T", "preset (collsim topo list) or topology file; default rtxpro6000-8x-pcie5-2s", cmd_set_topo},
    {"ngpus", 'g', "N", "ranks: GPUs 0..N-1 (default: all)", set_ng},
    {"minbytes", 'b', "SIZE", "smallest size (default 8)", set_min},
    {"maxbytes", 'e', "SIZE", "largest size (default 128M)", set_max},
    {"stepbytes", 'i', "SIZE", "add SIZE each step (used when -f is not given)", set_step},
    {"stepfactor", 'f', "F", "multiply the size by F each step (default 2)", set_factor},
    {"op", 'o', "OP", "reduction op: sum (default), prod, min, max, avg (time does not depend on it)", set_op},
    {"datatype", 'd', "T", "bf16/bfloat16 (default), fp16/half or fp32/float", set_dtype},
    {"root", 'r', "R", "broadcast root (default 0)", set_root},
    {"algo", 0, "A[,A..]", "ring, tree, oneshot, twoshot, oneshot-push, twoshot-push, auto; "
                           "a list compares them in one table", set_algo},
    {"crossover", 0, NULL, "print the sizes where the fastest of the --algo list changes", set_crossover},
    {"proto", 0, "P", "LL, LL128, Simple, auto", set_proto},
    {"channels", 0, "C", "NCCL channels (default: as NCCL for the size)", set_channels},
    {"graph", 0, NULL, "launched inside a CUDA graph", set_graph},
    {"cudagraph", 'G', "N", "nccl-tests: N graph launches; N > 0 is --graph", set_cudagraph},
    {"calib", 0, "FILE", "apply a calibration profile (collsim calibrate)", cmd_set_calib},
    {"env", 0, "NCCL_X=Y", "an NCCL setting (repeatable)", cmd_set_env},
    {"nccl", 0, "VER", "NCCL version whose decisions are emulated (default: the newest)", set_nccl},
    {"explain", 0, NULL, "before each size, NCCL's choice and the numbers behind it", set_explain},
    {"breakdown", 0, NULL, "add where the time goes: barrier, fixed, transfer, contention (us)", set_split},
    {"without", 0, "M,...", "switch model mechanisms off: write-collapse, read-collapse, hol, req-size, socket-read", set_without},
    {"timeline", 0, "OUT.json", "Perfetto timeline of the largest size ('-': stdout, the report "
                                "then goes to stderr)", cmd_set_timeline},
    {"format", 0, "F", "table (default), csv or json", cmd_set_format},
    {"output", 0, "FILE", "write the report to FILE (default stdout)", cmd_set_output},
    {"nthreads", 't', "N", "nccl-tests: accepted and ignored", set_ign_t},
    {"iters", 'n', "N", "nccl-tests: accepted and ignored", set_ign_n},
    {"warmup_iters", 'w', "N", "nccl-tests: accepted and ignored", set_ign_w},
    {"check", 'c', "N", "nccl-tests: accepted and ignored (a prediction has no data)", set_ign_c},
    {"agg_iters", 'm', "N", "nccl-tests: accepted and ignored", set_ign_m},
    {"average", 'a', "N", "nccl-tests: accepted and ignored", set_ign_a},
    {"blocking", 'z', "N", "nccl-tests: accepted and ignored", set_ign_z},
    {"parallel_init", 'p', "N", "nccl-tests: accepted and ignored", set_ign_p},
    {"report_cputime", 'C', "N", "nccl-tests: accepted and ignored", set_ign_C},
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

/* nccl-tests' names: the type column and the op ("none" where nothing is reduced). */
static const char *nccl_type_name(coll_dtype d)
{
    return d == DTYPE_BF16 ? "bfloat16" : d == DTYPE_FP16 ? "half" : "float";
}

static const char *redop_of(coll_kind k, const char *op)
{
    return k == COLL_ALLREDUCE || k == COLL_REDUCESCATTER ? op : "none";
}

/* One predicted size of one algorithm; ok = 0 where it cannot run (several algorithms). */
typedef struct cell {
    int ok;
    double us, algbw, busbw;
    coll_result res;
} cell;

static const report_col cols_csv[] = {
    {"size_bytes", NULL, 0, -1}, {"count", NULL, 0, -1},   {"dtype", NULL, 0, -1},
    {"algo", NULL, 0, -1},       {"proto", NULL, 0, -1},   {"channels", NULL, 0, -1},
    {"time_us", NULL, 0, 3},     {"algbw_GBps", NULL, 0, 3}, {"busbw_GBps", NULL, 0, 3},
};
static const report_col cols_json[] = {
    {"size_bytes", NULL, 0, -1}, {"count", NULL, 0, -1},   {"dtype", NULL, 0, -1},
    {"redop", NULL, 0, -1},      {"root", NULL, 0, -1},    {"algo", NULL, 0, -1},
    {"proto", NULL, 0, -1},      {"channels", NULL, 0, -1}, {"time_us", NULL, 0, 3},
    {"algbw_GBps", NULL, 0, 3},  {"busbw_GBps", NULL, 0, 3},
};
/* --breakdown: where the time goes (coll_result), after the documented columns. */
static const report_col cols_split[] = {
    {"barrier_us", NULL, 0, 3}, {"fixed_us", NULL, 0, 3}, {"transfer_us", NULL, 0, 3},
    {"contention_us", NULL, 0, 3},
};
static const report_col col_winner = {"winner", NULL, 0, -1};
static const report_col cols_cross[] = {
    {"size_bytes", "size", 12, -1}, {"from", "from", 13, -1}, {"to", "to", 13, -1},
    {"from_time_us", "time_from", 10, 3}, {"to_time_us", "time_to", 10, 3},
};

typedef struct run {
    const coll_args *g;
    coll_kind kind;
    coll_ctx *ctx;
    coll_req req;
    int multi;   /* several algorithms: one that cannot run a size leaves a gap */
    report_col cols[20];  /* the columns of a csv/json table (the report keeps a pointer) */
} run;

static const char *algo_label(const run *r, coll_algo a)
{
    /* All-to-all runs as grouped point-to-point sends, not a ring. */
    return r->kind == COLL_ALLTOALL ? "p2p" : coll_algo_name(a);
}

static int predict(run *r, coll_algo a, uint64_t bytes, cell *c, err *e)
{
    memset(c, 0, sizeof *c);
    r->req.algo = a;
    r->req.bytes = bytes;
    err e2 = {0};
    int rc = coll_predict(r->ctx, &r->req, &c->res, &e2);
    if (rc == ERR_USAGE && r->multi)
        return 0;  /* this algorithm cannot run this size: a gap, not an error */
    if (rc) {
        *e = e2;
        return rc;
    }
    c->ok = 1;
    c->us = (double)c->res.time_ps / 1e6;
    c->algbw = c->us > 0 ? (double)bytes / (c->us * 1e3) : 0;
    c->busbw = c->algbw * bus_factor(r->kind, r->req.nranks);
    return 0;
}

/* Index of the fastest cell that ran, -1 if none. */
static int winner(const cell *c, int n)
{
    int w = -1;
    for (int i = 0; i < n; i++)
        if (c[i].ok && (w < 0 || c[i].us < c[w].us))
            w = i;
    return w;
}

/* nccl-tests prints times with fewer decimals as they grow. */
static void fmt_time(char *buf, size_t n, double us)
{
    snprintf(buf, n, us >= 10000.0 ? "%7.0f" : us >= 100.0 ? "%7.1f" : "%7.2f", us);
}

static void write_meta(report *rep, const run *r, const topo *t, int argc, char **argv)
{
    const coll_args *g = r->g;
    char cmd[1024], algos[160] = "";
    size_t k = 0;
    for (int i = 0; i < g->nalgos; i++)
        k += (size_t)snprintf(algos + k, sizeof algos - (k < sizeof algos ? k : sizeof algos),
                              "%s%s", i ? "," : "", coll_algo_name(g->algos[i]));
    report_meta(rep, "predicted_by", "collsim %s (a model: no GPU ran)", COLLSIM_VERSION);
    report_meta(rep, "command", "%s", cli_command_line(cmd, sizeof cmd, "collsim", argc, argv));
    report_meta(rep, "collective", "%s", coll_kind_name(r->kind));
    report_meta(rep, "topology", "%s (%d GPUs, %d used)", g->cc.topo, topo_ngpus(t), r->req.nranks);
    cmd_meta(&g->cc, rep);
    report_meta(rep, "graph", "%d", g->graph);
    report_meta(rep, "algo", "%s", algos);
    report_meta(rep, "proto", "%s", coll_proto_name(g->proto));
    if (g->nccl)
        report_meta(rep, "nccl", "%s (emulated decisions)", g->nccl);
    if (g->without)
        report_meta(rep, "without", "%s (model mechanisms switched off)", g->without_list);
    int custom = 0;
    for (int i = 0; i < g->nalgos; i++)
        custom |= coll_algo_is_custom(g->algos[i]);
    if (custom && r->kind == COLL_ALLREDUCE && coll_custom_ar_gated(t, r->req.nranks))
        report_meta(rep, "note", "%s", COLL_CUSTOM_AR_NOTE);
}

static uint64_t next_size(const coll_args *g, uint64_t sz)
{
    if (!g->factor_set && g->stepb_set)
        return sz + g->stepb;
    double grown = (double)sz * g->factor;
    if (grown > (double)g->maxb)   /* past the end; also keeps the cast below in range */
        return g->maxb + 1;
    uint64_t next = (uint64_t)grown;
    /* a small size times a small factor: step one element rather than stop */
    return next > sz ? next : sz + (uint64_t)coll_dtype_size(g->dtype);
}

/* The all_reduce_perf layout: one algorithm, table format. */
static int print_nccl_table(FILE *f, run *r, const topo *t, int argc, char **argv, err *e)
{
    const coll_args *g = r->g;
    char step[48];
    if (g->factor_set || !g->stepb_set)
        snprintf(step, sizeof step, "%g(factor)", g->factor);
    else
        snprintf(step, sizeof step, "%llu(bytes)", (unsigned long long)g->stepb);
    fprintf(f, "# nThread 1 nGpus %d minBytes %llu maxBytes %llu step: %s warmup iters: 0 "
               "iters: 0 agg iters: 1 validation: 0 graph: %d\n#\n",
            r->req.nranks, (unsigned long long)g->minb, (unsigned long long)g->maxb, step,
            g->graph);
    report *meta = report_new(f, REPORT_TABLE);
    if (!meta)
        return err_set(e, ERR_SYSTEM, "out of memory");
    write_meta(meta, r, t, argc, argv);
    report_note(meta, "in-place equals out-of-place: the model moves the same bytes either way");
    int frc = report_finish(meta, e);
    report_free(meta);
    TRY(frc);
    fprintf(f, "#\n# %10s  %12s  %8s  %6s  %6s           out-of-place                       "
               "in-place\n", "", "", "", "", "");
    fprintf(f, "# %10s  %12s  %8s  %6s  %6s  %7s  %6s  %6s %6s  %7s  %6s  %6s %6s  %-13s %-6s %3s",
            "size", "count", "type", "redop", "root", "time", "algbw", "busbw", "#wrong", "time",
            "algbw", "busbw", "#wrong", "algo", "proto", "ch");
    if (g->split)  /* --breakdown: where the time goes, us */
        fprintf(f, " %8s %8s %8s %8s", "barrier", "fixed", "xfer", "wait");
    fputc('\n', f);
    fprintf(f, "# %10s  %12s  %8s  %6s  %6s  %7s  %6s  %6s  %5s  %7s  %6s  %6s  %5s\n", "(B)",
            "(elements)", "", "", "", "(us)", "(GB/s)", "(GB/s)", "", "(us)", "(GB/s)", "(GB/s)", "");
    double sum_bw = 0;
    int nrows = 0, esz = coll_dtype_size(g->dtype);
    for (uint64_t sz = g->minb;;) {
        cell c;
        if (g->explain) {
            r->req.algo = g->algos[0];
            r->req.bytes = sz;
            fflush(f);
            TRY(coll_explain(r->ctx, &r->req, sz == g->minb, f, e));
        }
        TRY(predict(r, g->algos[0], sz, &c, e));
        char tm[32], chs[16];
        fmt_time(tm, sizeof tm, c.us);
        snprintf(chs, sizeof chs, c.res.channels ? "%d" : "-", c.res.channels);
        /* A prediction has no separate in-place run: the model moves the same
         * bytes either way, so both groups show the same time; #wrong is N/A as
         * in nccl-tests -c 0. */
        fprintf(f, "%12llu  %12llu  %8s  %6s  %6d  %7s  %6.2f  %6.2f  %5s  %7s  %6.2f  %6.2f  %5s  "
                   "%-13s %-6s %3s",
                (unsigned long long)sz, (unsigned long long)(sz / (uint64_t)esz),
                nccl_type_name(g->dtype), redop_of(r->kind, g->op),
                r->kind == COLL_BROADCAST ? r->req.root : -1, tm, c.algbw, c.busbw, "N/A", tm,
                c.algbw, c.busbw, "N/A", algo_label(r, c.res.algo),
                c.res.proto == PROTO_AUTO ? "-" : coll_proto_name(c.res.proto), chs);
        if (g->split)
            fprintf(f, " %8.2f %8.2f %8.2f %8.2f", (double)c.res.barrier_ps / 1e6,
                    (double)c.res.fixed_ps / 1e6, (double)c.res.transfer_ps / 1e6,
                    (double)c.res.contention_ps / 1e6);
        fputc('\n', f);
        sum_bw += c.busbw;
        nrows++;
        uint64_t next = next_size(g, sz);
        if (next <= sz || next > g->maxb)
            break;
        sz = next;
    }
    fprintf(f, "# Out of bounds values : N/A (a prediction checks no data)\n");
    fprintf(f, "# Avg bus bandwidth    : %g \n#\n", nrows ? sum_bw / nrows : 0.0);
    return 0;
}

/* Several algorithms side by side, table format: time and busbw of each, the winner. */
static int print_compare_table(FILE *f, run *r, const topo *t, int argc, char **argv, err *e)
{
    const coll_args *g = r->g;
    report *meta = report_new(f, REPORT_TABLE);
    if (!meta)
        return err_set(e, ERR_SYSTEM, "out of memory");
    write_meta(meta, r, t, argc, argv);
    int frc = report_finish(meta, e);
    report_free(meta);
    TRY(frc);
    fprintf(f, "#\n# %10s  %12s  %8s  %6s  %6s", "", "", "", "", "");
    for (int i = 0; i < g->nalgos; i++)
        fprintf(f, "  %15s", algo_label(r, g->algos[i]));
    fprintf(f, "\n# %10s  %12s  %8s  %6s  %6s", "size", "count", "type", "redop", "root");
    for (int i = 0; i < g->nalgos; i++)
        fprintf(f, "  %7s  %6s", "time", "busbw");
    fprintf(f, "  %s\n# %10s  %12s  %8s  %6s  %6s", "winner", "(B)", "(elements)", "", "", "");
    for (int i = 0; i < g->nalgos; i++)
        fprintf(f, "  %7s  %6s", "(us)", "(GB/s)");
    fputc('\n', f);
    int esz = coll_dtype_size(g->dtype);
    for (uint64_t sz = g->minb;;) {
        cell c[MAX_ALGOS];
        for (int i = 0; i < g->nalgos; i++)
            TRY(predict(r, g->algos[i], sz, &c[i], e));
        fprintf(f, "%12llu  %12llu  %8s  %6s  %6d", (unsigned long long)sz,
                (unsigned long long)(sz / (uint64_t)esz), nccl_type_name(g->dtype),
                redop_of(r->kind, g->op), r->kind == COLL_BROADCAST ? r->req.root : -1);
        for (int i = 0; i < g->nalgos; i++) {
            char tm[32];
            fmt_time(tm, sizeof tm, c[i].us);
            if (c[i].ok)
                fprintf(f, "  %7s  %6.2f", tm, c[i].busbw);
            else
                fprintf(f, "  %7s  %6s", "-", "-");
        }
        int w = winner(c, g->nalgos);
        fprintf(f, "  %s\n", w < 0 ? "-" : algo_label(r, g->algos[w]));
        uint64_t next = next_size(g, sz);
        if (next <= sz || next > g->maxb)
            break;
        sz = next;
    }
    fprintf(f, "# '-': the algorithm cannot run that size on this topology\n");
    return 0;
}

/* csv and json: one row per size and algorithm; "winner" (1 for the fastest)
 * only when several algorithms are compared. */
static int print_rows(report *rep, run *r, err *e)
{
    const coll_args *g = r->g;
    int json = report_fmt(rep) == REPORT_JSON, multi = g->nalgos > 1;
    int ncols = json ? 11 : 9;
    memcpy(r->cols, json ? cols_json : cols_csv, sizeof r->cols[0] * (size_t)ncols);
    if (g->split) {
        memcpy(r->cols + ncols, cols_split, sizeof cols_split);
        ncols += 4;
    }
    if (multi)
        r->cols[ncols++] = col_winner;
    report_table(rep, coll_kind_name(r->kind), r->cols, ncols);
    int esz = coll_dtype_size(g->dtype);
    for (uint64_t sz = g->minb;;) {
        cell c[MAX_ALGOS];
        for (int i = 0; i < g->nalgos; i++)
            TRY(predict(r, g->algos[i], sz, &c[i], e));
        int w = winner(c, g->nalgos);
        for (int i = 0; i < g->nalgos; i++) {
            report_int(rep, (long long)sz);
            report_int(rep, (long long)(sz / (uint64_t)esz));
            report_str(rep, coll_dtype_name(g->dtype));
            if (json) {
                report_str(rep, redop_of(r->kind, g->op));
                report_int(rep, r->kind == COLL_BROADCAST ? r->req.root : -1);
            }
            report_str(rep, algo_label(r, c[i].ok ? c[i].res.algo : g->algos[i]));
            report_str(rep, !c[i].ok ? "" : c[i].res.proto == PROTO_AUTO ? "-"
                                                                      : coll_proto_name(c[i].res.proto));
            report_int(rep, c[i].res.channels);
            report_num(rep, c[i].ok ? c[i].us : NAN);
            report_num(rep, c[i].ok ? c[i].algbw : NAN);
            report_num(rep, c[i].ok ? c[i].busbw : NAN);
            if (g->split) {
                report_num(rep, c[i].ok ? (double)c[i].res.barrier_ps / 1e6 : NAN);
                report_num(rep, c[i].ok ? (double)c[i].res.fixed_ps / 1e6 : NAN);
                report_num(rep, c[i].ok ? (double)c[i].res.transfer_ps / 1e6 : NAN);
                report_num(rep, c[i].ok ? (double)c[i].res.contention_ps / 1e6 : NAN);
            }
            if (multi)
                report_int(rep, i == w);
            report_end_row(rep);
        }
        uint64_t next = next_size(g, sz);
        if (next <= sz || next > g->maxb)
            break;
        sz = next;
    }
    return 0;
}

/* --crossover: between neighbouring sizes whose winners differ, bisect (in
 * 16-byte steps, which every datatype and custom kernel accepts) for the
 * smallest size at which the earlier winner is no longer fastest. */
enum { CROSS_STEP = 16 };

static int print_crossover(report *rep, run *r, err *e)
{
    const coll_args *g = r->g;
    report_table(rep, "crossover", cols_cross, 5);
    cell c[MAX_ALGOS];
    uint64_t prev = g->minb;
    for (int i = 0; i < g->nalgos; i++)
        TRY(predict(r, g->algos[i], prev, &c[i], e));
    int wprev = winner(c, g->nalgos), found = 0;
    for (uint64_t sz = next_size(g, prev); sz > prev && sz <= g->maxb; prev = sz, sz = next_size(g, sz)) {
        for (int i = 0; i < g->nalgos; i++)
            TRY(predict(r, g->algos[i], sz, &c[i], e));
        int w = winner(c, g->nalgos);
        if (w == wprev || w < 0 || wprev < 0) {
            wprev = w >= 0 ? w : wprev;
            continue;
        }
        /* lo: wprev still wins (or is the sample before); hi: it does not. */
        uint64_t lo = prev, hi = sz;
        while (hi - lo > CROSS_STEP) {
            uint64_t mid = (lo + (hi - lo) / 2) / CROSS_STEP * CROSS_STEP;
            if (mid <= lo)
                break;
            cell m[MAX_ALGOS];
            for (int i = 0; i < g->nalgos; i++)
                TRY(predict(r, g->algos[i], mid, &m[i], e));
            if (winner(m, g->nalgos) == wprev)
                lo = mid;
            else
                hi = mid;
        }
        cell h[MAX_ALGOS];
        for (int i = 0; i < g->nalgos; i++)
            TRY(predict(r, g->algos[i], hi, &h[i], e));
        int wh = winner(h, g->nalgos);
        report_int(rep, (long long)hi);
        report_str(rep, algo_label(r, g->algos[wprev]));
        report_str(rep, wh < 0 ? "-" : algo_label(r, g->algos[wh]));
        report_num(rep, h[wprev].ok ? h[wprev].us : NAN);
        report_num(rep, wh >= 0 ? h[wh].us : NAN);
        report_end_row(rep);
        found = 1;
        wprev = w;
    }
    if (!found && wprev >= 0 && report_fmt(rep) == REPORT_TABLE)
        report_note(rep, "no crossover from %llu to %llu bytes: %s is fastest at every size",
                    (unsigned long long)g->minb, (unsigned long long)g->maxb,
                    algo_label(r, g->algos[wprev]));
    return 0;
}

int cmd_coll(int argc, char **argv, err *e)
{
    coll_args g;
    memset(&g, 0, sizeof g);
    cmd_ctx_init(&g.cc);
    g.op = "sum";
    g.minb = 8;
    g.maxb = 128u << 20;
    g.factor = 2;
    g.algos[0] = ALGO_AUTO;
    g.nalgos = 1;
    g.proto = PROTO_AUTO;
    g.dtype = DTYPE_BF16;
    const char *pos[2];
    int npos;
    int prc = cli_parse("collsim coll", synopsis, desc, options, &g, argc, argv, pos, 2, &npos, e);
    if (prc == CLI_HELP_SHOWN)
        return 0;
    TRY(prc);
    if (npos != 1)
        return err_set(e, ERR_USAGE, "coll: name one collective (collsim coll --help)");
    coll_kind kind;
    if (coll_kind_parse(pos[0], &kind)) {
        const char *names[COLL_NKINDS];
        for (int i = 0; i < COLL_NKINDS; i++)
            names[i] = coll_kind_name((coll_kind)i);
        return cli_unknown(e, ERR_USAGE, "coll: collective", pos[0], names, COLL_NKINDS);
    }
    if (g.factor_set && g.factor < 1.000001 && g.minb != g.maxb)
        return err_set(e, ERR_USAGE, "-f: factor must be > 1");
    if (g.explain && (g.cc.fmt != REPORT_TABLE || g.crossover))
        return err_set(e, ERR_USAGE, "--explain: only with --format table");
    if (g.explain && g.nalgos > 1)
        return err_set(e, ERR_USAGE, "--explain: with one --algo");
    if (g.minb > g.maxb)
        return err_set(e, ERR_USAGE, "-b %llu is larger than -e %llu", (unsigned long long)g.minb,
                       (unsigned long long)g.maxb);
    if (g.maxb > COLL_MAX_BYTES)
        return err_set(e, ERR_USAGE, "-e %llu is beyond the model's range (64G)",
                       (unsigned long long)g.maxb);
    long nsizes = 1;
    for (uint64_t sz = g.minb, nx; (nx = next_size(&g, sz)) > sz && nx <= g.maxb; sz = nx)
        if (++nsizes > MAX_ROWS)
            return err_set(e, ERR_USAGE, "-b %llu to -e %llu gives more than %d sizes: a larger "
                           "-i or -f", (unsigned long long)g.minb, (unsigned long long)g.maxb,
                           MAX_ROWS);
    if (g.crossover && g.nalgos < 2) {
        /* Nothing to compare with one algorithm: compare the allreduce
         * families (NCCL's ring against the custom kernels) by default. */
        if (g.nalgos == 1 && g.algos[0] != ALGO_AUTO)
            return err_set(e, ERR_USAGE, "--crossover compares algorithms: give a list, "
                                         "e.g. --algo ring,oneshot,twoshot");
        g.algos[0] = ALGO_RING, g.algos[1] = ALGO_ONESHOT, g.algos[2] = ALGO_TWOSHOT;
        g.nalgos = 3;
    }
    if (g.ignored[0])
        fprintf(stderr, "collsim coll: note: nccl-tests option(s) %s ignored: a prediction has "
                        "no threads, iterations, warm-up or data to check\n", g.ignored);
    /* --timeline -: stdout carries the timeline alone; the report goes to stderr. */
    int rep_stderr = cmd_report_to_stderr(&g.cc);
    topo *t = NULL;
    TRY(cmd_load_topo(&g.cc, &t, e));
    int rc = 0;
    run r;
    memset(&r, 0, sizeof r);
    r.g = &g;
    r.kind = kind;
    r.multi = g.nalgos > 1;
    r.ctx = coll_ctx_new(t);
    if (!r.ctx)
        rc = err_set(e, ERR_SYSTEM, "out of memory");
    else
        coll_ctx_without(r.ctx, g.without);
    coll_req_init(&r.req, t);
    r.req.kind = kind;
    r.req.dtype = g.dtype;
    r.req.proto = g.proto;
    r.req.channels = (int)g.channels;
    r.req.root = (int)g.root;
    r.req.graph = g.graph;
    r.req.env = g.cc.env;
    if (g.ng)
        r.req.nranks = (int)g.ng;
    ofile out;
    memset(&out, 0, sizeof out);
    if (!rc)
        rc = rep_stderr ? (out.f = stderr, 0) : ofile_open(&out, g.cc.out, e);
    report *rep = NULL;
    if (!rc && (g.cc.fmt != REPORT_TABLE || g.crossover)) {
        rep = report_new(out.f, g.cc.fmt);
        if (!rep)
            rc = err_set(e, ERR_SYSTEM, "out of memory");
        if (!rc) {
            write_meta(rep, &r, t, argc, argv);
            rc = g.crossover ? print_crossover(rep, &r, e) : print_rows(rep, &r, e);
        }
        if (!rc)
            rc = report_finish(rep, e);
    } else if (!rc) {
        rc = g.nalgos > 1 ? print_compare_table(out.f, &r, t, argc, argv, e)
                          : print_nccl_table(out.f, &r, t, argc, argv, e);
        errno = 0;
        if (!rc && (fflush(out.f) || ferror(out.f)))
            rc = err_set(e, ERR_SYSTEM, "writing the report failed%s%s", errno ? ": " : "",
                         errno ? strerror(errno) : "");
    }
    if (rep_stderr)
        out.f = NULL;
    ofile tl;
    memset(&tl, 0, sizeof tl);
    if (!rc && g.cc.timeline) {
        r.req.bytes = g.maxb;
        r.req.algo = g.algos[0];
        coll_result res;
        rc = ofile_open(&tl, g.cc.timeline, e);
        if (!rc)
            rc = coll_predict_timeline(r.ctx, &r.req, &res, tl.f, e);
    }
    /* The report and the timeline replace their files together or not at all. */
    ofile *outs[2];
    int nouts = 0;
    if (out.f)
        outs[nouts++] = &out;
    if (tl.f)
        outs[nouts++] = &tl;
    if (!rc)
        rc = ofile_commit_all(outs, nouts, e);
    else
        for (int i = 0; i < nouts; i++)
            ofile_abort(outs[i]);
    report_free(rep);
    coll_ctx_free(r.ctx);
    topo_free(t);
    return rc;
}
