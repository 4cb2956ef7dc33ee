/* `collsim replay TRACE...`: predict each trace on a topology and print one
 * row per trace: cycles, tokens, tok/s and steps/s, and the cycle's parts in
 * the names of docs/cli.md "Where the time goes" (compute, comm, launch, host,
 * wait); --breakdown adds the same parts per phase. A trace captured on fewer
 * ranks than the topology has GPUs, or one whose cycles state no tokens, is
 * said so on stderr. --timeline writes the first cycle of the first trace as
 * Perfetto JSON. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cmd/cmd_ctx.h"
#include "cmd/cmds.h"
#include "sim/ofile.h"
#include "sim/report.h"
#include "traces/replay.h"
#include "validate/calib.h"

static const char synopsis[] = "collsim replay TRACE... [options]";
static const char desc[] =
    "Predicts each trace on a topology and prints one row per trace (the columns of\n"
    "hwcheck's replay measurements); identical collectives are predicted once.";

/* What the options set. */
typedef struct replay_args {
    cmd_ctx cc;  /* first: --topo --calib --timeline --format --env */
    char trace_topo[256];  /* the first trace's "meta topo" */
    replay_opts o;
    int breakdown;
} replay_args;

#define ARGS ((replay_args *)ctx)
static int set_measured(void *ctx, const char *a, err *e) { (void)a, (void)e; ARGS->o.measured = 1; return 0; }
static int set_breakdown(void *ctx, const char *a, err *e) { (void)a, (void)e; ARGS->breakdown = 1; return 0; }

static int set_allreduce(void *ctx, const char *a, err *e)
{
    if (!coll_algo_parse(a, &ARGS->o.allreduce))
        return 0;
    const char *names[ALGO_NALGOS];
    for (int i = 0; i < ALGO_NALGOS; i++)
        names[i] = coll_algo_name((coll_algo)i);
    return cli_unknown(e, ERR_USAGE, "--allreduce", a, names, ALGO_NALGOS);
}

static int set_proto(void *ctx, const char *a, err *e)
{
    static const char *const names[] = {"LL", "LL128", "Simple", "auto"};
    return coll_proto_parse(a, &ARGS->o.proto) ? cli_unknown(e, ERR_USAGE, "--proto", a, names, 4) : 0;
}

static int set_graph(void *ctx, const char *a, err *e)
{
    long n;
    TRY(cli_parse_long("--graph", a, 0, 1, &n, e));
    ARGS->o.graph = (int)n;
    return 0;
}

static int set_compute_scale(void *ctx, const char *a, err *e)
{
    TRY(cli_parse_double("--compute-scale", a, &ARGS->o.compute_scale, e));
    return ARGS->o.compute_scale > 0 ? 0 : err_set(e, ERR_USAGE, "--compute-scale must be > 0");
}
#undef ARGS

static const cli_opt options[] = {
    {"topo", 0, "T", "preset (collsim topo list) or topology file; default: the first trace's "
                     "meta topo, else rtxpro6000-8x-pcie5-2s", cmd_set_topo},
    {"calib", 0, "FILE", "apply a calibration profile (collsim calibrate)", cmd_set_calib},
    {"allreduce", 0, "ALG", "ring, tree, oneshot, twoshot, oneshot-push, twoshot-push, auto (default: as the trace)", set_allreduce},
    {"proto", 0, "P", "LL, LL128, Simple, auto (default)", set_proto},
    {"env", 0, "NCCL_X=Y", "an NCCL setting (repeatable; replaces the trace's meta nccl_env)", cmd_set_env},
    {"graph", 0, "0|1", "CUDA graphs off or on (default: as the trace)", set_graph},
    {"measured", 0, NULL, "use captured collective times (measured_us) where a trace has them", set_measured},
    {"compute-scale", 0, "X", "multiply compute times by X (default 1)", set_compute_scale},
    {"timeline", 0, "OUT.json", "Perfetto timeline of the first cycle of the first trace ('-': stdout, "
                                "the report then goes to stderr)", cmd_set_timeline},
    {"breakdown", 0, NULL, "add the cycle's parts per phase (decode, draft, verify, ...)", set_breakdown},
    {"format", 0, "F", "table (default), csv or json", cmd_set_format},
    {NULL, 0, NULL, NULL, NULL},
};

enum { MAX_TRACES = 256 };

int cmd_replay(int argc, char **argv, err *e)
{
    replay_args g;
    memset(&g, 0, sizeof g);
    cmd_ctx_init(&g.cc);
    replay_opts_init(&g.o);
    /* one more than allowed, so that too many traces get their own message */
    const char *files[MAX_TRACES + 1];
    int nfiles;
    int prc = cli_parse("collsim replay", synopsis, desc, options, &g, argc, argv, files,
                        MAX_TRACES + 1, &nfiles, e);
    if (prc == CLI_HELP_SHOWN)
        return 0;
    TRY(prc);
    if (nfiles > MAX_TRACES)
        return err_set(e, ERR_USAGE, "replay: at most %d traces", MAX_TRACES);
    if (nfiles == 0)
        return err_set(e, ERR_USAGE, "replay: no trace given (collsim replay --help)");
    trace_reader *first = NULL;   /* read once: the file may be a pipe */
    if (!g.cc.topo_given && strcmp(files[0], "-")) {
        /* A generated trace names its scenario's topology. */
        TRY(trace_open(files[0], &first, e));
        const char *mt = trace_meta(first, "topo");
        if (mt) {
            snprintf(g.trace_topo, sizeof g.trace_topo, "%s", mt);
            g.cc.topo = g.trace_topo;
        }
    }
    const char *topo_name = g.cc.topo, *tl_path = g.cc.timeline;
    /* --env replaces a trace's meta nccl_env */
    g.o.env = g.cc.env;
    g.o.env_given = g.cc.env_given;
    const replay_opts o = g.o;
    report_format fmt = g.cc.fmt;
    topo *t = NULL;
    int trc = cmd_load_topo(&g.cc, &t, e);
    if (trc) {
        trace_close(first);
        return trc;
    }
    coll_ctx *c = coll_ctx_new(t);
    if (!c) {
        trace_close(first);
        topo_free(t);
        return err_set(e, ERR_SYSTEM, "%s: cannot create the collective model", topo_name);
    }
    replay_result *res = calloc((size_t)nfiles, sizeof *res);
    ofile tl = {0};
    int rc = res ? 0 : err_set(e, ERR_SYSTEM, "out of memory");
    if (!rc && tl_path)
        rc = ofile_open(&tl, tl_path, e);
    for (int i = 0; i < nfiles && !rc; i++) {
        FILE *tf = i == 0 && tl_path ? tl.f : NULL;
        rc = first && i == 0 ? replay_reader(first, files[0], t, c, &o, tf, &res[0], e)
                             : replay_file(files[i], t, c, &o, tf, &res[i], e);
        if (i == 0)
            first = NULL;   /* replay_reader closed it */
        int tr = rc ? 0 : res[i].trace_ranks, ng = topo_ngpus(t);
        if (tr > 0 && tr < ng)
            fprintf(stderr, "collsim replay: warning: %s was captured on %d rank%s (meta ranks "
                            "%d) and is replayed on %s's %d GPUs: its collectives are predicted "
                            "for the group each names (by default the %d captured), its compute "
                            "is the captured rank's\n", files[i], tr, tr == 1 ? "" : "s", tr,
                    topo_name, ng, tr);
        if (!rc && !res[i].tokens_stated)
            fprintf(stderr, "collsim replay: note: %s states no tokens per cycle (meta tokens "
                            "none: a training or profiler step): tok_per_s is left empty, "
                            "steps_per_s is the rate\n", files[i]);
    }
    trace_close(first);
    if (tl_path && tl.f) {
        if (rc)
            ofile_abort(&tl);
        else
            rc = ofile_commit(&tl, e);
    }
    if (!rc) {
        /* --timeline - owns stdout: the report goes to stderr. */
        FILE *rf = cmd_report_to_stderr(&g.cc) ? stderr : stdout;
        report *r = report_new(rf, fmt);
        static const report_col cols[] = {
            {"trace", NULL, 24, -1},     {"allreduce", NULL, 9, -1},
            {"cycles", NULL, 8, -1},     {"tokens", NULL, 10, -1},
            {"cycle_us", NULL, 11, 2},   {"tok_per_s", NULL, 10, 2},
            {"steps_per_s", NULL, 11, 2}, {"compute_us", NULL, 11, 2},
            {"comm_us", NULL, 10, 2},    {"launch_us", NULL, 10, 2},
            {"host_us", NULL, 10, 2},    {"wait_us", NULL, 10, 2},
        };
        static const report_col pcols[] = {
            {"trace", NULL, 24, -1},     {"phase", NULL, 8, -1},
            {"time_us", NULL, 11, 2},    {"compute_us", NULL, 11, 2},
            {"comm_us", NULL, 10, 2},    {"launch_us", NULL, 10, 2},
            {"host_us", NULL, 10, 2},    {"wait_us", NULL, 10, 2},
        };
        report_meta(r, "topo", "%s", topo_name);
        report_meta(r, "calibration", "%s", g.cc.calib ? g.cc.calib : "none (preset parameters)");
        char envs[512];
        report_meta(r, "env", "%s",
                    o.env_given ? coll_env_format(&o.env, ' ', envs, sizeof envs)
                                : "as each trace's meta nccl_env (NCCL defaults if none)");
        report_meta(r, "graph", "%s", o.graph < 0 ? "as each trace" : o.graph ? "1" : "0");
        if (coll_algo_is_custom(o.allreduce) && coll_custom_ar_gated(t, topo_ngpus(t)))
            report_meta(r, "note", "%s", COLL_CUSTOM_AR_NOTE);
        uint64_t preds = 0, colls = 0;
        for (int i = 0; i < nfiles; i++) {
            preds += res[i].predictions;
            colls += res[i].colls;
        }
        /* Comments go before the header so csv stays clean. */
        report_note(r, "%llu collectives replayed, %llu distinct predictions",
                    (unsigned long long)colls, (unsigned long long)preds);
        report_table(r, "replay", cols, 12);
        for (int i = 0; i < nfiles; i++) {
            const char *base = strrchr(files[i], '/');
            report_str(r, base ? base + 1 : files[i]);
            report_str(r, o.allreduce == ALGO_AUTO ? "trace" : coll_algo_name(o.allreduce));
            report_int(r, res[i].cycles);
            report_num(r, res[i].tokens);
            report_num(r, res[i].cycle_us);
            report_num(r, res[i].tokens_stated ? res[i].tok_per_s : NAN);
            report_num(r, res[i].total_us > 0 ? (double)res[i].cycles / (res[i].total_us / 1e6) : NAN);
            report_num(r, res[i].compute_us);
            report_num(r, res[i].comm_us);
            report_num(r, res[i].launch_us);
            /* host: the host work and syncs the GPU waits for, and the
             * capture's GPU-side gaps (docs/cli.md, "Where the time goes") */
            report_num(r, res[i].host_us + res[i].idle_us);
            report_num(r, res[i].wait_us);
            report_end_row(r);
        }
        /* --breakdown: the same parts per phase (per cycle, phases that ran). */
        if (g.breakdown) {
            report_table(r, "phases", pcols, 8);
            for (int i = 0; i < nfiles; i++)
                for (int ph = 0; ph < PHASE_N; ph++) {
                    if (res[i].phase_us[ph] <= 0)
                        continue;
                    const char *base = strrchr(files[i], '/');
                    report_str(r, base ? base + 1 : files[i]);
                    report_str(r, trace_phase_name((trace_phase)ph));
                    report_num(r, res[i].phase_us[ph]);
                    const double *pp = res[i].phase_part_us[ph];
                    report_num(r, pp[REPLAY_COMPUTE]);
                    report_num(r, pp[REPLAY_COMM]);
                    report_num(r, pp[REPLAY_LAUNCH]);
                    report_num(r, pp[REPLAY_HOST] + pp[REPLAY_IDLE]);
                    report_num(r, pp[REPLAY_WAIT]);
                    report_end_row(r);
                }
        }
        rc = report_finish(r, e);
        report_free(r);
    }
    free(res);
    coll_ctx_free(c);
    topo_free(t);
    return rc;
}
