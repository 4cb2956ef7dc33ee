/* `collsim coll`: predicted times of a collective over a size range. The
 * short options are nccl-tests' (src/common.cu) and mean what they mean
 * there: ranks are processes (--np) x -t x -g, sizes step by -f or -i and are
 * rounded to whole elements per rank as nccl-tests rounds them, -d and -o take
 * nccl-tests' names (and all), -N repeats the size loop, -G is a graph; the
 * flags that set up a measurement (-n -w -c -m -a -z -p -C -y -T -S -M -u -I
 * -K -V, and -R, which the model does not distinguish) are accepted and
 * ignored with a note. collsim's own options have long names only. Where
 * collsim's defaults differ from nccl-tests' the header says so. The table
 * reads like all_reduce_perf so a prediction diffs against a real run; csv
 * and json go through the shared report writer. Everything is checked and
 * predicted before a byte is written (the report is built in memory). */
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
#include "models/tlp/tlp_coll.h"
#include "models/topo/topo.h"
#include "sim/ofile.h"
#include "sim/report.h"
#include "sim/version.h"
#include "validate/calib.h"
#include "validate/plot.h"

static const char synopsis[] =
    "collsim coll <allreduce|reducescatter|allgather|broadcast|alltoall> [options]";
static const char desc[] =
    "Predicts each size from -b to -e (times -f, or plus -i); sizes take K/M/G (powers of 2).\n"
    "Flags follow nccl-tests: ranks = --np x -t x -g, -o is the reduction op (the report file\n"
    "is --output), -d the datatype; busbw follows nccl-tests: allreduce x 2(n-1)/n,\n"
    "reducescatter/allgather/alltoall x (n-1)/n, broadcast x 1. Defaults that differ from\n"
    "nccl-tests' (sizes 8..128M x 2, bfloat16, every GPU) are named in the report's header.";

enum { MAX_ALGOS = ALGO_NALGOS, N_OPS = 6, MAX_ROWS = 1 << 16 };   /* rows: sizes -b..-e */

/* nccl-tests' reduction ops, in its order (test_opnames): -o all runs each. */
static const char *const op_names[N_OPS] = {"sum", "prod", "max", "min", "avg", "mulsum"};

/* What the options set. */
typedef struct coll_args {
    cmd_ctx cc;  /* first: --topo --calib --output --timeline --format --env */
    int ops[N_OPS], nops;            /* -o: indices into op_names */
    coll_dtype types[DTYPE_N];       /* -d: one, or all */
    int ntypes;
    uint64_t minb, maxb, stepb;
    double factor;
    int minb_set, maxb_set, factor_set, stepb_set, dtype_set;
    long ng, nt, np;                 /* -g, -t, --np; ranks = np x nt x ng */
    int ranks_set;
    long cycles;                     /* -N */
    long channels, root;
    report_format fmt;
    coll_algo algos[MAX_ALGOS];
    int nalgos, crossover;
    coll_proto proto;
    int graph, split, without, explain;
    int launch;        /* --launch: 0 device time only, 1 eager, 2 graph */
    const char *without_list, *nccl;  /* --without as given, for the header */
    const char *plot;                 /* --plot FILE */
    char ignored[96];  /* nccl-tests flags accepted and ignored ("-n -w") */
    int reg;           /* -R as given: > 0, registered buffers */
    int tlp;           /* --engine tlp */
    long window_us;    /* --window */
    int window_set;    /* --window given */
} coll_args;

#define ARGS ((coll_args *)ctx)
static int set_graph(void *ctx, const char *a, err *e) { (void)a, (void)e; ARGS->graph = 1; return 0; }
static int set_launch(void *ctx, const char *a, err *e)
{
    if (!strcmp(a, "eager"))
        ARGS->launch = 1;
    else if (!strcmp(a, "graph"))
        ARGS->launch = 2, ARGS->graph = 1;
    else
        return err_set(e, ERR_USAGE, "--launch: '%s' (eager or graph)", a);
    return 0;
}
static int set_crossover(void *ctx, const char *a, err *e) { (void)a, (void)e; ARGS->crossover = 1; return 0; }
static int set_split(void *ctx, const char *a, err *e) { (void)a, (void)e; ARGS->split = 1; return 0; }
static int set_explain(void *ctx, const char *a, err *e) { (void)a, (void)e; ARGS->explain = 1; return 0; }
static int set_plot(void *ctx, const char *a, err *e) { (void)e; ARGS->plot = a; return 0; }

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
    (void)e;
    ARGS->without_list = a;  /* parsed once the engine is known */
    return 0;
}

static int set_engine(void *ctx, const char *a, err *e) { return cmd_parse_engine(a, &ARGS->tlp, e); }

static int set_window(void *ctx, const char *a, err *e)
{
    ARGS->window_set = 1;
    return cli_parse_long("--window", a, 0, 100000, &ARGS->window_us, e);
}

/* Ranks as nccl-tests counts them: MPI processes x threads (-t) x GPUs per
 * thread (-g). Each is checked against the topology once all are known. */
static int set_ng(void *ctx, const char *a, err *e)
{
    ARGS->ranks_set = 1;
    return cli_parse_long("-g", a, 1, 4096, &ARGS->ng, e);
}

static int set_np(void *ctx, const char *a, err *e)
{
    ARGS->ranks_set = 1;
    return cli_parse_long("--np", a, 1, 4096, &ARGS->np, e);
}

static int set_nt(void *ctx, const char *a, err *e)
{
    if (cli_parse_long("-t", a, 1, 4096, &ARGS->nt, NULL))
        return err_set(e, ERR_USAGE, "-t '%s': -t is nccl-tests' thread count (ranks = --np x "
                                     "-t x -g, 1..4096); name the topology with --topo", a);
    ARGS->ranks_set = 1;
    return 0;
}

/* A size as nccl-tests' parsesize reads it: a decimal number, optionally a
 * K, M or G (powers of 2, either case), truncated to bytes; collsim also
 * takes a trailing B. */
static int parse_size(const char *what, const char *s, uint64_t *out, err *e)
{
    char *end;
    errno = 0;
    double v = s && *s != '-' && *s != '+' ? strtod(s, &end) : -1;
    if (!s || v < 0 || end == s || errno == ERANGE || !isfinite(v))
        return err_set(e, ERR_USAGE, "%s: '%s' is not a size", what, s ? s : "");
    while (*end == ' ')
        end++;
    double unit = 1;
    switch (*end) {
    case 'K': case 'k': unit = 1024.0; end++; break;
    case 'M': case 'm': unit = 1048576.0; end++; break;
    case 'G': case 'g': unit = 1073741824.0; end++; break;
    default: break;
    }
    if (*end == 'B' || *end == 'b')
        end++;
    if (*end)
        return err_set(e, ERR_USAGE, "%s: '%s' is not a size (use N, NK, NM, NG)", what, s);
    if (v * unit > 4.0e18)
        return err_set(e, ERR_USAGE, "%s: '%s' is too large (limit 2^62 bytes)", what, s);
    *out = (uint64_t)(v * unit);
    return 0;
}

static int set_min(void *ctx, const char *a, err *e) { ARGS->minb_set = 1; return parse_size("-b", a, &ARGS->minb, e); }
static int set_max(void *ctx, const char *a, err *e) { ARGS->maxb_set = 1; return parse_size("-e", a, &ARGS->maxb, e); }
static int set_channels(void *ctx, const char *a, err *e) { return cli_parse_long("--channels", a, 1, 64, &ARGS->channels, e); }
static int set_root(void *ctx, const char *a, err *e) { return cli_parse_long("--root", a, -1, 4095, &ARGS->root, e); }

/* nccl-tests: a factor > 1 multiplies, anything else steps by -i. collsim
 * keeps a fractional factor (nccl-tests reads -f as an integer). */
static int set_factor(void *ctx, const char *a, err *e)
{
    ARGS->factor_set = 1;
    TRY(cli_parse_double("-f", a, &ARGS->factor, e));
    return ARGS->factor >= 0 ? 0 : err_set(e, ERR_USAGE, "-f: the factor must be >= 0");
}

static int set_step(void *ctx, const char *a, err *e)
{
    ARGS->stepb_set = 1;
    TRY(parse_size("-i", a, &ARGS->stepb, e));
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

/* nccl-tests -N: the size loop runs N times (0 = forever there). */
static int set_cycles(void *ctx, const char *a, err *e)
{
    TRY(cli_parse_long("-N", a, 0, 1000000, &ARGS->cycles, e));
    if (ARGS->cycles == 0)
        return err_set(e, ERR_USAGE, "-N 0 runs forever in nccl-tests; a prediction repeats "
                                     "the same rows, so give a count (1 or more)");
    return 0;
}

static int set_op(void *ctx, const char *a, err *e)
{
    if (!strcmp(a, "all")) {
        for (int i = 0; i < N_OPS; i++)
            ARGS->ops[i] = i;
        ARGS->nops = N_OPS;
        return 0;
    }
    for (int i = 0; i < N_OPS; i++)
        if (!strcmp(a, op_names[i])) {
            ARGS->ops[0] = i;
            ARGS->nops = 1;
            return 0;
        }
    if (strchr(a, '.') || strchr(a, '/'))
        return err_set(e, ERR_USAGE, "-o '%s': -o is nccl-tests' reduction op (sum, prod, max, "
                                     "min, avg, mulsum, all); to write the report to a file "
                                     "use --output %s", a, a);
    return cli_unknown(e, ERR_USAGE, "-o (reduction op)", a, op_names, N_OPS);
}

static int set_dtype(void *ctx, const char *a, err *e)
{
    ARGS->dtype_set = 1;
    if (!strcmp(a, "all")) {
        for (int i = 0; i < DTYPE_N; i++)
            ARGS->types[i] = (coll_dtype)i;
        ARGS->ntypes = DTYPE_N;
        return 0;
    }
    if (!coll_dtype_parse(a, &ARGS->types[0])) {
        ARGS->ntypes = 1;
        return 0;
    }
    const char *names[DTYPE_N];
    for (int i = 0; i < DTYPE_N; i++)
        names[i] = coll_dtype_nccl_name((coll_dtype)i);
    return cli_unknown(e, ERR_USAGE, "-d (datatype)", a, names, DTYPE_N);
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

/* nccl-tests flags that set up a measurement rather than describe the
 * collective: an integer, accepted, listed in the note and the header. */
static int set_ignored(const char *flag, void *ctx, const char *a, err *e)
{
    long v;
    TRY(cli_parse_long(flag, a, -1000000, 1000000000, &v, e));
    size_t k = strlen(ARGS->ignored);
    if (!strstr(ARGS->ignored, flag))
        snprintf(ARGS->ignored + k, sizeof ARGS->ignored - k, "%s%s", k ? " " : "", flag);
    return 0;
}
#define IGNORED(c)                                                                      \
    static int set_ign_##c(void *ctx, const char *a, err *e) { return set_ignored("-" #c, ctx, a, e); }
IGNORED(n) IGNORED(w) IGNORED(c) IGNORED(m) IGNORED(a) IGNORED(z) IGNORED(p) IGNORED(C)
IGNORED(y) IGNORED(T) IGNORED(S) IGNORED(M) IGNORED(u) IGNORED(I) IGNORED(K) IGNORED(V)
#undef IGNORED

/* -R 0|1|2: user-buffer registration (local, symmetric): registered
 * buffers (docs/model.md "Sends and deliveries"), and the header says so. */
static int set_register(void *ctx, const char *a, err *e)
{
    long v;
    TRY(cli_parse_long("-R", a, 0, 2, &v, e));
    ARGS->reg = (int)v;
    return 0;
}

/* -x: NCCL's CTA policy (ncclConfig_t.CTAPolicy); only the default is emulated. */
static int set_cta_policy(void *ctx, const char *a, err *e)
{
    long v;
    (void)ctx;
    TRY(cli_parse_long("-x", a, -1, 2, &v, e));
    return v <= 0 ? 0 : err_set(e, ERR_USAGE, "-x %ld: NCCL's CTA policies other than the "
                                              "default are not emulated", v);
}

/* -D: nccl-tests' device-API implementations (NCCL 2.28+) are not modelled. */
static int set_device_impl(void *ctx, const char *a, err *e)
{
    long v;
    (void)ctx;
    TRY(cli_parse_long("-D", a, 0, 1000, &v, e));
    return v == 0 ? 0 : err_set(e, ERR_USAGE, "-D %ld: nccl-tests' device-API kernels are not "
                                              "modelled (only -D 0, NCCL's own)", v);
}

static int set_json_out(void *ctx, const char *a, err *e)
{
    (void)ctx;
    return err_set(e, ERR_USAGE, "-J %s: nccl-tests' own JSON layout is not written; use "
                                 "--format json --output %s", a, a);
}
#undef ARGS

static const cli_opt options[] = {
    {"topo", 0, "T", "preset (collsim topo list) or topology file; default rtxpro6000-8x-pcie5-2s", cmd_set_topo},
    {"ngpus", 'g', "N", "GPUs per thread (nccl-tests); ranks = np x t x g, default: every GPU", set_ng},
    {"nthreads", 't', "N", "threads per process (nccl-tests); ranks = np x t x g", set_nt},
    {"np", 0, "N", "MPI processes of the nccl-tests run (mpirun -np N), default 1", set_np},
    {"minbytes", 'b', "SIZE", "smallest size (default 8; nccl-tests: 32M)", set_min},
    {"maxbytes", 'e', "SIZE", "largest size (default 128M; nccl-tests: 32M)", set_max},
    {"stepbytes", 'i', "SIZE", "add SIZE each step when the factor is not > 1 (default 1M)", set_step},
    {"stepfactor", 'f', "F", "multiply the size by F each step (default 2; nccl-tests: -i steps)", set_factor},
    {"run_cycles", 'N', "N", "run the size loop N times, printing each (default 1)", set_cycles},
    {"op", 'o', "OP", "reduction op: sum (default), prod, max, min, avg, mulsum, all (labels only)", set_op},
    {"datatype", 'd', "T", "bfloat16 (default; nccl-tests: float), half, float, double, int8, "
                           "uint8, int32, uint32, int64, uint64, f8e4m3, f8e5m2, all", set_dtype},
    {"root", 'r', "R", "broadcast root (default 0; -1: every root in turn)", set_root},
    {"algo", 0, "A[,A..]", "ring, tree, nvls, oneshot, twoshot, oneshot-push, twoshot-push, auto; "
                           "a list compares them in one table", set_algo},
    {"crossover", 0, NULL, "print the sizes where the fastest of the --algo list changes", set_crossover},
    {"proto", 0, "P", "LL, LL128, Simple, auto", set_proto},
    {"channels", 0, "C", "NCCL channels (default: as NCCL for the size)", set_channels},
    {"graph", 0, NULL, "launched inside a CUDA graph", set_graph},
    {"launch", 0, "M", "eager or graph: each call costs at least the host's issue of one (NCCL's "
     "per-call work), as back-to-back calls are timed; default: device time only", set_launch},
    {"cudagraph", 'G', "N", "nccl-tests: N graph launches; N > 0 is --graph", set_cudagraph},
    {"calib", 0, "FILE", "apply a calibration profile (collsim calibrate)", cmd_set_calib},
    {"env", 0, "NCCL_X=Y", "an NCCL setting (repeatable)", cmd_set_env},
    {"nccl", 0, "VER", "NCCL version whose decisions are emulated (default: the newest)", set_nccl},
    {"explain", 0, NULL, "before each size, NCCL's choice and the numbers behind it", set_explain},
    {"breakdown", 0, NULL, "add where the time goes: barrier, fixed, transfer, contention (us)", set_split},
    {"without", 0, "M,...", "switch model mechanisms off: write-collapse, read-collapse, hol, req-size, socket-read, nvlink-sat, serial-loads, host-inflight, host-mixed, block-ceiling, shm-order, fifo-l2, first-round, l2-sources, shm-poll, trip-issue, nvlink-req, turn-others, own-round, load-trip, whole-rounds, dllp, round-skew, staged-pool (--engine tlp: turn, credits, order, tags, dllp)", set_without},
    {"engine", 0, "E", "flow (default) or tlp: the custom kernels at the transaction level (docs/model.md)", set_engine},
    {"window", 0, "US", "--engine tlp: TLPs per phase for US microseconds, then extrapolated (default 50; 0 = every TLP)", set_window},
    {"timeline", 0, "OUT.json", "Perfetto timeline of the largest size ('-': stdout, the report "
                                "then goes to stderr)", cmd_set_timeline},
    {"plot", 0, "FILE.svg", "draw time and busbw against size per algorithm (SVG)", set_plot},
    {"format", 0, "F", "table (default), csv or json", cmd_set_format},
    {"output", 0, "FILE", "write the report to FILE (default stdout; -o is the op)", cmd_set_output},
    {"local_register", 'R', "0|1|2", "nccl-tests: buffer registration (1, 2: registered buffers)", set_register},
    {"cta_policy", 'x', "N", "nccl-tests: NCCL CTA policy; only the default (0) is emulated", set_cta_policy},
    {"device_implementation", 'D', "N", "nccl-tests: device-API kernels; only 0 (NCCL's own)", set_device_impl},
    {"output_file", 'J', "FILE", "nccl-tests' JSON file: refused, use --format json --output", set_json_out},
    {"iters", 'n', "N", "nccl-tests: accepted and ignored", set_ign_n},
    {"warmup_iters", 'w', "N", "nccl-tests: accepted and ignored", set_ign_w},
    {"check", 'c', "N", "nccl-tests: accepted and ignored (a prediction has no data)", set_ign_c},
    {"agg_iters", 'm', "N", "nccl-tests: accepted and ignored", set_ign_m},
    {"average", 'a', "N", "nccl-tests: accepted and ignored", set_ign_a},
    {"blocking", 'z', "N", "nccl-tests: accepted and ignored", set_ign_z},
    {"parallel_init", 'p', "N", "nccl-tests: accepted and ignored", set_ign_p},
    {"report_cputime", 'C', "N", "nccl-tests: accepted and ignored", set_ign_C},
    {"stream_null", 'y', "N", "nccl-tests: accepted and ignored", set_ign_y},
    {"timeout", 'T', "S", "nccl-tests: accepted and ignored (a prediction cannot hang)", set_ign_T},
    {"report_timestamps", 'S', "N", "nccl-tests: accepted and ignored", set_ign_S},
    {"memory", 'M', "N", "nccl-tests: accepted and ignored", set_ign_M},
    {"unalign", 'u', "N", "nccl-tests: accepted and ignored (buffers are taken as aligned)", set_ign_u},
    {"per_iter_timing", 'I', "N", "nccl-tests: accepted and ignored", set_ign_I},
    {"per_iter_skip", 'K', "N", "nccl-tests: accepted and ignored", set_ign_K},
    {"device_cta_count", 'V', "N", "nccl-tests: accepted and ignored (only with -D > 0)", set_ign_V},
    {NULL, 0, NULL, NULL, NULL},
};

static int is_reduction(coll_kind k) { return k == COLL_ALLREDUCE || k == COLL_REDUCESCATTER; }

/* One predicted size of one algorithm; ok = 0 where it cannot run (several algorithms). */
typedef struct cell {
    int ok;
    uint64_t bytes, count;  /* as nccl-tests prints them (rounded to its counts) */
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
static const report_col col_redop = {"redop", NULL, 0, -1};
static const report_col cols_cross[] = {
    {"size_bytes", "size", 12, -1}, {"from", "from", 13, -1}, {"to", "to", 13, -1},
    {"from_time_us", "time_from", 10, 3}, {"to_time_us", "time_to", 10, 3},
};

typedef struct run {
    const coll_args *g;
    coll_kind kind;
    coll_ctx *ctx;
    const topo *t;
    tlp_net *tn;     /* --engine tlp */
    coll_req req;
    int nranks;
    int multi;   /* several algorithms: one that cannot run a size leaves a gap */
    const char *op;  /* the op of the rows being written */
    report_col cols[20];  /* the columns of a csv/json table (the report keeps a pointer) */
} run;

static const char *algo_label(const run *r, coll_algo a)
{
    /* NCCL's all-to-all runs as grouped point-to-point sends, not a ring;
     * oneshot-push is the one-kernel push form (DeepEP-style). */
    return r->kind == COLL_ALLTOALL && a != ALGO_ONESHOT_PUSH ? "p2p" : coll_algo_name(a);
}

static const char *redop_label(const run *r) { return is_reduction(r->kind) ? r->op : "none"; }

/* The size nccl-tests runs for a requested size (setupArgs and each
 * collective's GetCollByteCount): whole elements; for all-gather,
 * reduce-scatter and all-to-all whole 16-byte multiples per rank. count is
 * nccl-tests' count column (per rank for those three). */
static uint64_t nccl_size(const run *r, uint64_t sz, uint64_t *count)
{
    uint64_t esz = (uint64_t)coll_dtype_size(r->req.dtype), n = (uint64_t)r->nranks;
    uint64_t c = sz / esz;
    if (r->kind == COLL_ALLGATHER || r->kind == COLL_REDUCESCATTER || r->kind == COLL_ALLTOALL) {
        uint64_t base = (c / n) & ~(16 / esz - 1);
        *count = base;
        return base * n * esz;
    }
    *count = c;
    return c * esz;
}

static int predict(run *r, coll_algo a, uint64_t sz, cell *c, err *e)
{
    memset(c, 0, sizeof *c);
    c->bytes = nccl_size(r, sz, &c->count);
    r->req.algo = a;
    r->req.bytes = c->bytes;
    err e2 = {0};
    int rc = r->tn ? tlp_coll_predict(r->tn, &r->req, (int64_t)r->g->window_us * 1000000, &c->res,
                                      &e2)
                   : coll_predict(r->ctx, &r->req, &c->res, &e2);
    if (rc == ERR_USAGE && r->multi)
        return 0;  /* this algorithm cannot run this size: a gap, not an error */
    if (rc) {
        *e = e2;
        return rc;
    }
    c->ok = 1;
    sim_ps t_ps = c->res.time_ps;
    if (r->g->launch) { /* back to back: no faster than the host issues them */
        sim_ps issue = coll_issue_ps(r->t, &r->req, &c->res, r->g->launch == 2,
                                     r->g->ranks_set ? (int)r->g->ng : r->nranks);
        if (issue > t_ps)
            t_ps = issue;
    }
    c->us = (double)t_ps / 1e6;
    c->algbw = c->us > 0 ? (double)c->bytes / (c->us * 1e3) : 0;
    c->busbw = c->algbw * coll_bus_factor(r->kind, r->nranks);
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

static void size_str(char *buf, size_t n, uint64_t b)
{
    if (b >= (1u << 20) && b % (1u << 20) == 0)
        snprintf(buf, n, "%lluM", (unsigned long long)(b >> 20));
    else if (b >= 1024 && b % 1024 == 0)
        snprintf(buf, n, "%lluK", (unsigned long long)(b >> 10));
    else
        snprintf(buf, n, "%llu", (unsigned long long)b);
}

/* The defaults in effect that are collsim's, not nccl-tests' (src/common.cu:
 * -b 32M -e 32M, -i 1M steps with -f 1, float, -t 1 -g 1); "" if none. */
static void defaults_differ(const run *r, const topo *t, char *buf, size_t n)
{
    const coll_args *g = r->g;
    size_t k = 0;
    buf[0] = '\0';
#define ADD(...) (k += (size_t)snprintf(buf + k, k < n ? n - k : 0, __VA_ARGS__))
    char a[32];
    if (!g->minb_set)
        size_str(a, sizeof a, g->minb), ADD("%s-b %s (nccl-tests: 32M)", k ? ", " : "", a);
    if (!g->maxb_set)
        size_str(a, sizeof a, g->maxb), ADD("%s-e %s (32M)", k ? ", " : "", a);
    if (!g->factor_set && !g->stepb_set)
        ADD("%s-f %g (nccl-tests: -i 1M steps)", k ? ", " : "", g->factor);
    if (!g->dtype_set)
        ADD("%s-d %s (float)", k ? ", " : "", coll_dtype_nccl_name(g->types[0]));
    if (!g->ranks_set)
        ADD("%s%d ranks: every GPU of %s (nccl-tests: -t 1 -g 1, 1 rank)", k ? ", " : "",
            r->nranks, topo_name(t));
#undef ADD
}

static void write_meta(report *rep, const run *r, const topo *t, int argc, char **argv)
{
    const coll_args *g = r->g;
    char cmd[1024], algos[160] = "", diff[512];
    size_t k = 0;
    for (int i = 0; i < g->nalgos; i++)
        k += (size_t)snprintf(algos + k, sizeof algos - (k < sizeof algos ? k : sizeof algos),
                              "%s%s", i ? "," : "", coll_algo_name(g->algos[i]));
    report_meta(rep, "predicted_by", "collsim %s (a model: no GPU ran)", COLLSIM_VERSION);
    report_meta(rep, "command", "%s", cli_command_line(cmd, sizeof cmd, "collsim", argc, argv));
    report_meta(rep, "collective", "%s", coll_kind_name(r->kind));
    report_meta(rep, "topology", "%s (%d GPUs, %d used)", g->cc.topo, topo_ngpus(t), r->nranks);
    report_meta(rep, "ranks", "%d = %ld processes x %ld threads x %ld GPUs (nccl-tests' --np x -t "
                              "x -g)", r->nranks, g->np, g->nt,
                g->ranks_set ? g->ng : (long)r->nranks);
    defaults_differ(r, t, diff, sizeof diff);
    if (diff[0])
        report_meta(rep, "defaults", "collsim's, not nccl-tests': %s", diff);
    cmd_meta(&g->cc, rep);
    report_meta(rep, "graph", "%d", g->graph);
    if (g->launch)
        report_meta(rep, "launch", "%s: a call costs at least the host's issue of one, %.3g us "
                    "for NCCL (back to back, as nccl-tests and hwcheck time them)",
                    g->launch == 2 ? "graph" : "eager",
                    (double)topo_nccl_thread_issue_ps(topo_params_get(t), g->launch == 2,
                                                      r->nranks, coll_p2p_ops(r->kind, r->nranks),
                                                      g->ranks_set ? (int)g->ng : r->nranks) /
                        1e6);
    report_meta(rep, "algo", "%s", algos);
    report_meta(rep, "proto", "%s", coll_proto_name(g->proto));
    if (g->nccl)
        report_meta(rep, "nccl", "%s (emulated decisions)", g->nccl);
    if (g->without)
        report_meta(rep, "without", "%s (model mechanisms switched off)", g->without_list);
    if (g->tlp)
        report_meta(rep, "engine", "tlp (transaction level, window %ld us)", g->window_us);
    if (g->ignored[0])
        report_meta(rep, "ignored", "%s (nccl-tests measurement settings: a prediction has "
                                    "no iterations, warm-up, streams or data)", g->ignored);
    if (g->reg || g->graph)
        report_meta(rep, "registered", "yes (%s: Ring Simple writes into the peer's buffers and "
                                       "its last receive copies nothing)",
                    g->reg ? "nccl-tests -R" : "a graph capture of cuMem buffers");
    int custom = 0;
    for (int i = 0; i < g->nalgos; i++)
        custom |= coll_algo_is_custom(g->algos[i]);
    if (custom && r->kind == COLL_ALLREDUCE && coll_custom_ar_gated(t, r->nranks))
        report_meta(rep, "note", "%s", COLL_CUSTOM_AR_NOTE);
    int nccl = 0;
    for (int i = 0; i < g->nalgos; i++)
        nccl |= !coll_algo_is_custom(g->algos[i]);
    if (nccl && coll_nccl_graph_derived(r->nranks))
        report_meta(rep, "note", "%s", COLL_DERIVED_GRAPH_NOTE);
}

/* The next size of the loop, as nccl-tests steps: times the factor when it
 * is > 1 (collsim's default 2 when neither -f nor -i is given), else plus -i.
 * A fractional factor is rounded down, and moves at least one element. */
static uint64_t next_size(const run *r, uint64_t sz)
{
    const coll_args *g = r->g;
    int by_factor = g->factor_set ? g->factor > 1 : !g->stepb_set;
    if (!by_factor)
        return sz + g->stepb;
    double grown = (double)sz * g->factor;
    if (grown > (double)g->maxb)   /* past the end; also keeps the cast below in range */
        return g->maxb + 1;
    uint64_t next = (uint64_t)grown;
    /* a small size times a small factor: step one element rather than stop */
    return next > sz ? next : sz + (uint64_t)coll_dtype_size(r->req.dtype);
}

/* The sizes of one pass: first, then next until past -e. */
#define FOR_SIZES(r, sz) \
    for (uint64_t sz = (r)->g->minb, nx_; sz <= (r)->g->maxb; \
         nx_ = next_size((r), sz), sz = nx_ > sz ? nx_ : (r)->g->maxb + 1)

/* Each datatype and op (-d all, -o all), each broadcast root with -r -1,
 * and -N passes, in nccl-tests' order: fn per combination. */
typedef int pass_fn(run *r, void *arg, err *e);
static int for_passes(run *r, pass_fn *fn, void *arg, err *e)
{
    const coll_args *g = r->g;
    int nops = is_reduction(r->kind) ? g->nops : 1;
    int all_roots = r->kind == COLL_BROADCAST && g->root < 0;
    for (int ti = 0; ti < g->ntypes; ti++)
        for (int oi = 0; oi < nops; oi++)
            for (int ro = 0; ro < (all_roots ? r->nranks : 1); ro++)
                for (long cy = 0; cy < g->cycles; cy++) {
                    r->req.dtype = g->types[ti];
                    r->op = op_names[g->ops[oi]];
                    r->req.root = all_roots ? ro : (int)(g->root > 0 ? g->root : 0);
                    TRY(fn(r, arg, e));
                }
    return 0;
}

/* The header of all_reduce_perf (util.cu writeDeviceReport), then collsim's. */

/* "%2d" of v >= 0 into p; the end. */
static char *put_2d(char *p, int v)
{
    char d[12];
    int k = 0;
    do
        d[k++] = (char)('0' + v % 10);
    while ((v /= 10) > 0);
    if (k == 1)
        *p++ = ' ';
    while (k > 0)
        *p++ = d[--k];
    return p;
}

/* nccl-tests' device line of rank i (GPU i, named name): what
 * "#  Rank %2d Group  0 Pid      - on    collsim device %2d [%s] predicted\n"
 * prints, put together by hand (fprintf's format parsing was 2,400
 * instructions a line, 0.15 M of a 64-GPU prediction). */
static void rank_line(FILE *f, int i, const char *name)
{
    static const char mid[] = " Group  0 Pid      - on    collsim device ", tail[] = "] predicted\n";
    char buf[128], *p = buf;
    size_t nl = strlen(name);
    if (nl > sizeof buf - 100) { /* a long name: fprintf, as before */
        fprintf(f, "#  Rank %2d Group  0 Pid      - on    collsim device %2d [%s] predicted\n", i,
                i, name);
        return;
    }
    memcpy(p, "#  Rank ", 8);
    p = put_2d(p + 8, i);
    memcpy(p, mid, sizeof mid - 1);
    p = put_2d(p + sizeof mid - 1, i);
    *p++ = ' ';
    *p++ = '[';
    memcpy(p, name, nl);
    p += nl;
    memcpy(p, tail, sizeof tail - 1);
    p += sizeof tail - 1;
    fwrite(buf, 1, (size_t)(p - buf), f);
}

static int print_header(FILE *f, run *r, const topo *t, int argc, char **argv, err *e)
{
    const coll_args *g = r->g;
    char step[48];
    int by_factor = g->factor_set ? g->factor > 1 : !g->stepb_set;
    if (by_factor)
        snprintf(step, sizeof step, "%g(factor)", g->factor);
    else
        snprintf(step, sizeof step, "%llu(bytes)", (unsigned long long)g->stepb);
    fprintf(f, "# nThread %ld nGpus %ld minBytes %llu maxBytes %llu step: %s warmup iters: 0 "
               "iters: 0 agg iters: 1 validation: 0 graph: %d\n#\n# Using devices\n",
            g->nt, g->ranks_set ? g->ng : (long)r->nranks, (unsigned long long)g->minb,
            (unsigned long long)g->maxb, step, g->graph);
    /* nccl-tests' rank order on one host: rank (proc x nThreads + thread) x
     * nGpus + i on device localRank x nThreads x nGpus + i, i.e. GPU = rank. */
    for (int i = 0; i < r->nranks; i++)
        rank_line(f, i, topo_node_at(t, topo_gpu_node(t, i))->name);
    fprintf(f, "#\n");
    report *meta = report_new(f, REPORT_TABLE);
    if (!meta)
        return err_set(e, ERR_SYSTEM, "out of memory");
    write_meta(meta, r, t, argc, argv);
    if (g->nalgos == 1)
        report_note(meta, "in-place equals out-of-place: the model moves the same bytes either way");
    int frc = report_finish(meta, e);
    report_free(meta);
    return frc;
}

typedef struct nccl_pass {
    FILE *f;
    double sum_bw;
    int nrows;
} nccl_pass;

static int nccl_rows(run *r, void *arg, err *e)
{
    nccl_pass *p = arg;
    const coll_args *g = r->g;
    FILE *f = p->f;
    FOR_SIZES(r, sz) {
        cell c;
        if (g->explain) {
            uint64_t cnt;
            r->req.algo = g->algos[0];
            r->req.bytes = nccl_size(r, sz, &cnt);
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
                (unsigned long long)c.bytes, (unsigned long long)c.count,
                coll_dtype_nccl_name(r->req.dtype), redop_label(r),
                r->kind == COLL_BROADCAST ? r->req.root : -1, tm, c.algbw, c.busbw, "N/A", tm,
                c.algbw, c.busbw, "N/A", algo_label(r, c.res.algo),
                c.res.proto == PROTO_AUTO ? "-" : coll_proto_name(c.res.proto), chs);
        if (g->split)
            fprintf(f, " %8.2f %8.2f %8.2f %10.2f", (double)c.res.barrier_ps / 1e6,
                    (double)c.res.fixed_ps / 1e6, (double)c.res.transfer_ps / 1e6,
                    (double)c.res.contention_ps / 1e6);
        fputc('\n', f);
        p->sum_bw += c.busbw;
        p->nrows++;
    }
    return 0;
}

/* The all_reduce_perf layout: one algorithm, table format. */
static int print_nccl_table(FILE *f, run *r, const topo *t, int argc, char **argv, err *e)
{
    const coll_args *g = r->g;
    TRY(print_header(f, r, t, argc, argv, e));
    fprintf(f, "#\n# %10s  %12s  %8s  %6s  %6s           out-of-place                       "
               "in-place\n", "", "", "", "", "");
    fprintf(f, "# %10s  %12s  %8s  %6s  %6s  %7s  %6s  %6s %6s  %7s  %6s  %6s %6s  %-13s %-6s %3s",
            "size", "count", "type", "redop", "root", "time", "algbw", "busbw", "#wrong", "time",
            "algbw", "busbw", "#wrong", "algo", "proto", "ch");
    if (g->split)  /* --breakdown: where the time goes, us */
        fprintf(f, " %8s %8s %8s %10s", "barrier", "fixed", "transfer", "contention");
    fputc('\n', f);
    fprintf(f, "# %10s  %12s  %8s  %6s  %6s  %7s  %6s  %6s  %5s  %7s  %6s  %6s  %5s\n", "(B)",
            "(elements)", "", "", "", "(us)", "(GB/s)", "(GB/s)", "", "(us)", "(GB/s)", "(GB/s)", "");
    nccl_pass p = {f, 0, 0};
    TRY(for_passes(r, nccl_rows, &p, e));
    fprintf(f, "# Out of bounds values : N/A (a prediction checks no data)\n");
    fprintf(f, "# Avg bus bandwidth    : %g \n#\n", p.nrows ? p.sum_bw / p.nrows : 0.0);
    return 0;
}

static int compare_rows(run *r, void *arg, err *e)
{
    FILE *f = arg;
    const coll_args *g = r->g;
    FOR_SIZES(r, sz) {
        cell c[MAX_ALGOS];
        for (int i = 0; i < g->nalgos; i++)
            TRY(predict(r, g->algos[i], sz, &c[i], e));
        fprintf(f, "%12llu  %12llu  %8s  %6s  %6d", (unsigned long long)c[0].bytes,
                (unsigned long long)c[0].count, coll_dtype_nccl_name(r->req.dtype),
                redop_label(r), r->kind == COLL_BROADCAST ? r->req.root : -1);
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
    }
    return 0;
}

/* Several algorithms side by side, table format: time and busbw of each, the winner. */
static int print_compare_table(FILE *f, run *r, const topo *t, int argc, char **argv, err *e)
{
    const coll_args *g = r->g;
    TRY(print_header(f, r, t, argc, argv, e));
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
    TRY(for_passes(r, compare_rows, f, e));
    fprintf(f, "# '-': the algorithm cannot run that size on this topology\n");
    return 0;
}

static int csv_rows(run *r, void *arg, err *e)
{
    report *rep = arg;
    const coll_args *g = r->g;
    int json = report_fmt(rep) == REPORT_JSON, multi = g->nalgos > 1;
    int with_op = !json && is_reduction(r->kind) && g->nops > 1;
    FOR_SIZES(r, sz) {
        cell c[MAX_ALGOS];
        for (int i = 0; i < g->nalgos; i++)
            TRY(predict(r, g->algos[i], sz, &c[i], e));
        int w = winner(c, g->nalgos);
        for (int i = 0; i < g->nalgos; i++) {
            report_int(rep, (long long)c[i].bytes);
            report_int(rep, (long long)c[i].count);
            report_str(rep, coll_dtype_name(r->req.dtype));
            if (with_op)
                report_str(rep, redop_label(r));
            if (json) {
                report_str(rep, redop_label(r));
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
    }
    return 0;
}

/* csv and json: one row per size and algorithm; "winner" (1 for the fastest)
 * only when several algorithms are compared; csv gets a redop column after
 * dtype with -o all (json always has one). */
static int print_rows(report *rep, run *r, err *e)
{
    const coll_args *g = r->g;
    int json = report_fmt(rep) == REPORT_JSON, multi = g->nalgos > 1;
    int ncols = 0;
    const report_col *base = json ? cols_json : cols_csv;
    for (int i = 0; i < (json ? 11 : 9); i++) {
        r->cols[ncols++] = base[i];
        if (i == 2 && !json && is_reduction(r->kind) && g->nops > 1)
            r->cols[ncols++] = col_redop;
    }
    if (g->split) {
        memcpy(r->cols + ncols, cols_split, sizeof cols_split);
        ncols += 4;
    }
    if (multi)
        r->cols[ncols++] = col_winner;
    report_table(rep, coll_kind_name(r->kind), r->cols, ncols);
    return for_passes(r, csv_rows, rep, e);
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
    for (uint64_t sz = next_size(r, prev); sz > prev && sz <= g->maxb; prev = sz, sz = next_size(r, sz)) {
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
        report_int(rep, (long long)h[0].bytes);
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

/* --plot: time and busbw against size, one series per algorithm (the first
 * datatype and op), crossovers marked on the time panel. */
/* The plot written to of, opened here and left for the caller to commit
 * (removed on an error). */
static int write_plot(run *r, const topo *t, ofile *of, err *e)
{
    const coll_args *g = r->g;
    r->req.dtype = g->types[0];
    r->req.root = g->root > 0 ? (int)g->root : 0;
    size_t cap = 0, n = 0;
    FOR_SIZES(r, sz)
        cap++;
    double *x = calloc(cap, sizeof *x), *us[MAX_ALGOS] = {0}, *bw[MAX_ALGOS] = {0};
    int rc = x ? 0 : err_set(e, ERR_SYSTEM, "out of memory");
    for (int i = 0; i < g->nalgos && !rc; i++)
        if (!(us[i] = calloc(cap, sizeof *us[i])) || !(bw[i] = calloc(cap, sizeof *bw[i])))
            rc = err_set(e, ERR_SYSTEM, "out of memory");
    FOR_SIZES(r, sz) {
        for (int i = 0; i < g->nalgos && !rc && n < cap; i++) {
            cell c;
            rc = predict(r, g->algos[i], sz, &c, e);
            x[n] = (double)c.bytes;
            us[i][n] = c.ok ? c.us : NAN;
            bw[i][n] = c.ok ? c.busbw : NAN;
        }
        if (rc || n >= cap)
            break;
        n++;
    }
    char title[512], cal[256];
    const char *cb = g->cc.calib ? strrchr(g->cc.calib, '/') : NULL;
    snprintf(cal, sizeof cal, "%s", g->cc.calib ? (cb ? cb + 1 : g->cc.calib) : "none");
    snprintf(title, sizeof title, "collsim coll %s: %d ranks of %s, calibration %s, %s%s",
             coll_kind_name(r->kind), r->nranks, topo_name(t), cal,
             coll_dtype_nccl_name(g->types[0]), g->graph ? ", CUDA graph" : "");
    plot *p = rc ? NULL : plot_new(title, "size (bytes)", "time (us)");
    if (!rc && !p)
        rc = err_set(e, ERR_SYSTEM, "out of memory");
    int pt = -1, pb = -1;
    if (!rc && (pt = plot_panel_kind(p, "predicted time (lower is better)", PLOT_LOGLOG, NULL,
                                     NULL, e)) < 0)
        rc = ERR_SYSTEM;
    if (!rc && (pb = plot_panel_kind(p, "bus bandwidth, nccl-tests' busbw (higher is better)",
                                     PLOT_LOGLIN, NULL, "busbw (GB/s)", e)) < 0)
        rc = ERR_SYSTEM;
    for (int i = 0; i < g->nalgos && !rc; i++) {
        const char *lab = algo_label(r, g->algos[i]);
        rc = plot_series(p, pt, lab, PLOT_LINE, x, us[i], n, e);
        if (!rc)
            rc = plot_series(p, pb, lab, PLOT_LINE, x, bw[i], n, e);
    }
    /* crossovers: where the fastest changes between neighbouring sizes */
    for (size_t j = 1; j < n && !rc && g->nalgos > 1; j++) {
        int wa = -1, wb = -1;
        for (int i = 0; i < g->nalgos; i++) {
            if (isfinite(us[i][j - 1]) && (wa < 0 || us[i][j - 1] < us[wa][j - 1]))
                wa = i;
            if (isfinite(us[i][j]) && (wb < 0 || us[i][j] < us[wb][j]))
                wb = i;
        }
        if (wa >= 0 && wb >= 0 && wa != wb) {
            char lab[96];
            snprintf(lab, sizeof lab, "%s -> %s", algo_label(r, g->algos[wa]),
                     algo_label(r, g->algos[wb]));
            rc = plot_mark_x(p, pt, sqrt(x[j - 1] * x[j]), lab, e);
        }
    }
    if (!rc) {
        rc = ofile_open(of, g->plot, e);
        if (!rc && (rc = plot_write_svg(p, of->f, e)) != 0)
            ofile_abort(of);
    }
    plot_free(p);
    free(x);
    for (int i = 0; i < g->nalgos; i++)
        free(us[i]), free(bw[i]);
    return rc;
}

int cmd_coll(int argc, char **argv, err *e)
{
    coll_args g;
    memset(&g, 0, sizeof g);
    cmd_ctx_init(&g.cc);
    g.nops = 1;           /* ops[0] = sum */
    g.types[0] = DTYPE_BF16;
    g.ntypes = 1;
    g.minb = 8;
    g.maxb = 128u << 20;
    g.stepb = 1u << 20;   /* nccl-tests' -i default */
    g.factor = 2;
    g.ng = g.nt = g.np = 1;
    g.cycles = 1;
    g.algos[0] = ALGO_AUTO;
    g.nalgos = 1;
    g.window_us = 50;
    g.proto = PROTO_AUTO;
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
    if (g.window_set && !g.tlp)
        return err_set(e, ERR_USAGE, "--window: only with --engine tlp (the flow engine has no window)");
    if (g.explain && (g.cc.fmt != REPORT_TABLE || g.crossover))
        return err_set(e, ERR_USAGE, "--explain: only with --format table");
    if (g.explain && g.nalgos > 1)
        return err_set(e, ERR_USAGE, "--explain: with one --algo");
    if ((g.crossover || g.explain) &&
        (g.ntypes > 1 || g.nops > 1 || g.cycles > 1 || (kind == COLL_BROADCAST && g.root < 0)))
        return err_set(e, ERR_USAGE, "--%s: with one datatype, one op, one root and -N 1",
                       g.crossover ? "crossover" : "explain");
    if (g.minb > g.maxb)
        return err_set(e, ERR_USAGE, "-b %llu is larger than -e %llu", (unsigned long long)g.minb,
                       (unsigned long long)g.maxb);
    if (g.maxb > COLL_MAX_BYTES)
        return err_set(e, ERR_USAGE, "-e %llu is beyond the model's range (64G)",
                       (unsigned long long)g.maxb);
    run probe;   /* only to step through the sizes */
    memset(&probe, 0, sizeof probe);
    probe.g = &g;
    probe.req.dtype = g.types[0];
    long nsizes = 1;
    for (uint64_t sz = g.minb, nx; (nx = next_size(&probe, sz)) > sz && nx <= g.maxb; sz = nx)
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
    topo *t = NULL;
    TRY(cmd_load_topo(&g.cc, &t, e));
    int ngpu = topo_ngpus(t);
    long nranks = g.ranks_set ? g.np * g.nt * g.ng : ngpu;
    if (nranks > ngpu) {
        topo_free(t);
        return err_set(e, ERR_USAGE, "%ld ranks (--np %ld x -t %ld x -g %ld) but topology '%s' "
                                     "has %d GPUs", nranks, g.np, g.nt, g.ng, g.cc.topo, ngpu);
    }
    if (g.ignored[0])
        fprintf(stderr, "collsim coll: note: nccl-tests option(s) %s ignored: a prediction has "
                        "no iterations, warm-up, streams or data to check\n", g.ignored);
    /* --timeline -: stdout carries the timeline alone; the report goes to stderr. */
    int rep_stderr = cmd_report_to_stderr(&g.cc);
    int rc = 0;
    run r;
    memset(&r, 0, sizeof r);
    r.g = &g;
    r.kind = kind;
    r.nranks = (int)nranks;
    r.multi = g.nalgos > 1;
    r.op = op_names[g.ops[0]];
    r.ctx = coll_ctx_new(t);
    r.t = t;
    if (!r.ctx)
        rc = err_set(e, ERR_SYSTEM, "out of memory");
    if (!rc && g.without_list)
        rc = g.tlp ? tlp_mech_parse(g.without_list, &g.without, e)
                   : fabric_mech_parse(g.without_list, &g.without, e);
    if (!rc && !g.tlp)
        coll_ctx_without(r.ctx, g.without);
    if (!rc && g.tlp) {
        if ((r.tn = tlp_new(t, e)))
            tlp_disable(r.tn, g.without);
        else
            rc = e->code;
    }
    coll_req_init(&r.req, t);
    r.req.kind = kind;
    r.req.dtype = g.types[0];
    r.req.proto = g.proto;
    r.req.channels = (int)g.channels;
    r.req.root = g.root > 0 ? (int)g.root : 0;
    r.req.graph = g.graph;
    /* nccl-tests' -R registers the buffers; a graph capture of cuMem
     * buffers (ncclMemAlloc, as nccl-tests and hwcheck allocate) registers
     * them too under NCCL_GRAPH_REGISTER=1, NCCL's default. */
    r.req.registered = g.reg > 0 || g.graph;
    r.req.env = g.cc.env;
    r.req.nranks = r.nranks;
    /* The report is built in memory and written only once every size is
     * predicted, so a request the model refuses prints nothing but the error. */
    char *buf = NULL;
    size_t len = 0;
    FILE *mf = rc ? NULL : open_memstream(&buf, &len);
    if (!rc && !mf)
        rc = err_set(e, ERR_SYSTEM, "out of memory");
    report *rep = NULL;
    if (!rc && (g.cc.fmt != REPORT_TABLE || g.crossover)) {
        rep = report_new(mf, g.cc.fmt);
        if (!rep)
            rc = err_set(e, ERR_SYSTEM, "out of memory");
        if (!rc) {
            write_meta(rep, &r, t, argc, argv);
            rc = g.crossover ? print_crossover(rep, &r, e) : print_rows(rep, &r, e);
        }
        if (!rc)
            rc = report_finish(rep, e);
    } else if (!rc) {
        rc = g.nalgos > 1 ? print_compare_table(mf, &r, t, argc, argv, e)
                          : print_nccl_table(mf, &r, t, argc, argv, e);
    }
    if (mf && fclose(mf) && !rc)
        rc = err_set(e, ERR_SYSTEM, "out of memory");
    /* The plot, the report and the timeline replace their files together or
     * not at all: each is written, then all are committed. */
    ofile pl, out, tl;
    memset(&pl, 0, sizeof pl);
    memset(&out, 0, sizeof out);
    memset(&tl, 0, sizeof tl);
    if (!rc && g.plot)
        rc = write_plot(&r, t, &pl, e);
    if (!rc)
        rc = rep_stderr ? (out.f = stderr, 0) : ofile_open(&out, g.cc.out, e);
    if (!rc) {
        errno = 0;
        if (fwrite(buf, 1, len, out.f) != len || fflush(out.f) || ferror(out.f))
            rc = err_set(e, ERR_SYSTEM, "writing the report failed%s%s", errno ? ": " : "",
                         errno ? strerror(errno) : "");
    }
    if (rep_stderr)
        out.f = NULL;
    free(buf);
    if (!rc && g.cc.timeline) {
        uint64_t cnt;
        r.req.dtype = g.types[0];
        r.req.root = g.root > 0 ? (int)g.root : 0;
        r.req.bytes = nccl_size(&r, g.maxb, &cnt);
        r.req.algo = g.algos[0];
        coll_result res;
        rc = ofile_open(&tl, g.cc.timeline, e);
        if (!rc)
            rc = coll_predict_timeline(r.ctx, &r.req, &res, tl.f, e);
    }
    ofile *outs[3];
    int nouts = 0;
    if (pl.f)
        outs[nouts++] = &pl;
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
    tlp_free(r.tn);
    topo_free(t);
    return rc;
}
