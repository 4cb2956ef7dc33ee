/* `collsim trace gen|import|show`: generate a trace from a model
 * description (a what-if scenario and its knobs), import Kineto JSON (one
 * file per rank), or summarise a trace. Every output file is written to a
 * temporary and renamed only when complete (no partial files on errors). */
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cmd/cmd_ctx.h"
#include "cmd/cmds.h"
#include "models/coll/coll.h"
#include "sim/report.h"
#include "traces/kineto.h"
#include "traces/trace.h"
#include "traces/whatif.h"

/* splitmix64: small, deterministic, good enough for sampling accept lengths */
static uint64_t rng_next(uint64_t *s)
{
    uint64_t z = (*s += 0x9e3779b97f4a7c15ULL);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
    return z ^ (z >> 31);
}

/* Where generated ops go: the writer, without the host lane if asked. */
typedef struct gen_sink {
    trace_writer *w;
    int host;            /* 0: leave out host and sync ops (the GPU side only) */
} gen_sink;

static int sink_writer(void *arg, const trace_op *op, err *e)
{
    const gen_sink *g = arg;
    if (!g->host && (op->kind == OP_HOST || op->kind == OP_SYNC))
        return 0;
    return trace_write_op(g->w, op, e);
}

static const char gen_synopsis[] = "collsim trace gen [options] -o OUT";
static const char gen_desc[] =
    "Writes --cycles cycles of a scenario as a trace (gzipped if OUT ends in .gz). The\n"
    "--set keys are the what-if knobs (collsim whatif --keys); accept_hist samples per\n"
    "cycle with a fixed-seed generator, so the output is reproducible.";

enum { GEN_MAX_SETS = 64 };

/* What the options of gen set. */
typedef struct gen_args {
    cmd_ctx cc;              /* -o */
    const char *model, *mode;
    long cycles, seed;
    const char *sets[GEN_MAX_SETS];
    int nsets;
    int host;
} gen_args;

#define ARGS ((gen_args *)ctx)
static int gen_set_model(void *ctx, const char *a, err *e) { (void)e; ARGS->model = a; return 0; }
static int gen_set_mode(void *ctx, const char *a, err *e) { (void)e; ARGS->mode = a; return 0; }
static int gen_set_cycles(void *ctx, const char *a, err *e) { return cli_parse_long("--cycles", a, 1, 100000000, &ARGS->cycles, e); }
static int gen_set_seed(void *ctx, const char *a, err *e) { return cli_parse_long("--seed", a, 0, 1L << 62, &ARGS->seed, e); }

static int gen_set_host(void *ctx, const char *a, err *e)
{
    if (strcmp(a, "on") && strcmp(a, "off"))
        return err_set(e, ERR_USAGE, "--host: '%s' is not on or off", a);
    ARGS->host = !strcmp(a, "on");
    return 0;
}

static int gen_set_set(void *ctx, const char *a, err *e)
{
    if (ARGS->nsets == GEN_MAX_SETS)
        return err_set(e, ERR_USAGE, "too many --set");
    ARGS->sets[ARGS->nsets++] = a;
    return 0;
}
#undef ARGS

static const cli_opt gen_options[] = {
    {"model", 0, "M", "kimi-k2 (default) or a what-if scenario (name or file)", gen_set_model},
    {"mode", 0, "MODE", "decode or eagle3 (default: the scenario's)", gen_set_mode},
    {"cycles", 0, "N", "cycles to write (default 100)", gen_set_cycles},
    {"seed", 0, "S", "seed of the accept_hist sampler (default 1)", gen_set_seed},
    {"set", 0, "KEY=VALUE", "a what-if knob (repeatable)", gen_set_set},
    {"host", 0, "on|off", "write the host lane (host work, syncs; default on) or the GPU side only", gen_set_host},
    {"output", 'o', "OUT", "the trace to write (required)", cmd_set_output},
    {NULL, 0, NULL, NULL, NULL},
};

static int cmd_gen(int argc, char **argv, err *e)
{
    gen_args g = {.model = "kimi-k2", .cycles = 100, .seed = 1, .host = 1};
    cmd_ctx_init(&g.cc);
    const char *pos[1];
    int npos;
    int prc = cli_parse("collsim trace gen", gen_synopsis, gen_desc, gen_options, &g, argc, argv,
                        pos, 0, &npos, e);
    if (prc == CLI_HELP_SHOWN)
        return 0;
    TRY(prc);
    const char *model = g.model, *out = g.cc.out_given ? g.cc.out : NULL, *mode = g.mode;
    long cycles = g.cycles, seed = g.seed;
    const char *const *sets = g.sets;
    int nsets = g.nsets;
    if (!out)
        return err_set(e, ERR_USAGE, "trace gen: -o OUT is required");
    whatif_scenario s;
    const char *scen = !strcmp(model, "kimi-k2") ? "kimi-k2-eagle3-8x-pcie5" : model;
    TRY(whatif_scenario_load(scen, &s, e));
    if (mode)
        TRY(whatif_set(&s, "mode", mode, e));
    for (int i = 0; i < nsets; i++) {
        char kv[512];
        snprintf(kv, sizeof kv, "%s", sets[i]);
        char *eq = strchr(kv, '=');
        if (!eq)
            return err_set(e, ERR_USAGE, "--set %s: want KEY=VALUE", sets[i]);
        *eq = 0;
        TRY(whatif_set(&s, kv, eq + 1, e));
    }
    whatif_ctx *c = whatif_ctx_new();
    if (!c)
        return err_set(e, ERR_SYSTEM, "out of memory");
    int rc = whatif_calibrate(c, &s, NULL, e);
    if (!rc)
        rc = whatif_derive(c, &s, e);
    whatif_ctx_free(c);
    TRY(rc);
    trace_writer *w = trace_writer_new(out, e);
    if (!w)
        return e->code;
    char buf[512];
    snprintf(buf, sizeof buf, "%s", model);
    rc = trace_write_meta(w, "model", buf, e);
    snprintf(buf, sizeof buf, "%d", s.tp);
    if (!rc)
        rc = trace_write_meta(w, "ranks", buf, e);
    if (!rc)
        rc = trace_write_meta(w, "graph", s.graph ? "1" : "0", e);
    /* The host side travels too: each phase says graph or eager, the ops
     * carry the host work and syncs, these the per-kernel and per-rank
     * costs (collsim replay reads them; docs/formats.md). */
    snprintf(buf, sizeof buf, "%.17g", s.host_jitter);
    if (!rc)
        rc = trace_write_meta(w, "host_jitter", buf, e);
    snprintf(buf, sizeof buf, "%.17g", s.sync_us);
    if (!rc)
        rc = trace_write_meta(w, "sync_us", buf, e);
    snprintf(buf, sizeof buf, "%.17g", s.eager_op_us);
    if (!rc)
        rc = trace_write_meta(w, "op_host_us", buf, e);
    snprintf(buf, sizeof buf, "%.17g", s.eager_coll_us);
    if (!rc)
        rc = trace_write_meta(w, "coll_host_us", buf, e);
    if (!rc)
        rc = trace_write_meta(w, "source", "collsim trace gen", e);
    /* The scenario's NCCL settings and topology travel with the trace, so a
     * replay predicts the same collectives (replay --env replaces them). */
    coll_env_format(&s.env, ',', buf, sizeof buf);
    if (!rc && buf[0])
        rc = trace_write_meta(w, "nccl_env", buf, e);
    if (!rc && s.topo[0])
        rc = trace_write_meta(w, "topo", s.topo, e);
    snprintf(buf, sizeof buf,
             "mode=%s layers=%d hidden=%d tp=%d batch=%d draft_tokens=%d accept_len=%g "
             "gpu_mem_GBps=%g efficiency=%.6f host_us=%.3f",
             s.mode == WHATIF_EAGLE3 ? "eagle3" : "decode", s.layers, s.hidden, s.tp, s.batch,
             s.draft_tokens, s.accept_len, s.gpu_mem_GBps, s.efficiency, s.host_us);
    if (!rc)
        rc = trace_write_comment(w, buf, e);
    uint64_t st = (uint64_t)seed;
    for (long k = 0; k < cycles && !rc; k++) {
        double tokens = s.batch;
        if (s.mode == WHATIF_EAGLE3) {
            if (s.accept_nhist > 0) {
                tokens = 0;
                for (int b = 0; b < s.batch; b++) {
                    double u = (double)(rng_next(&st) >> 11) / 9007199254740992.0, acc = 0;
                    int got = s.accept_nhist;
                    for (int j = 0; j < s.accept_nhist; j++) {
                        acc += s.accept_hist[j];
                        if (u < acc) {
                            got = j + 1;
                            break;
                        }
                    }
                    tokens += got;
                }
            } else {
                tokens = s.accept_len * s.batch;
            }
        }
        gen_sink gs = {w, g.host};
        rc = whatif_emit_cycle(&s, tokens, sink_writer, &gs, e);
    }
    if (rc) {
        trace_writer_abort(w);
        return rc;
    }
    return trace_writer_commit(w, e);
}

static const char import_synopsis[] = "collsim trace import kineto FILE... -o OUT [options]";
static const char import_desc[] =
    "Reads PyTorch profiler (Kineto) JSON, plain or gzipped, one file per rank (docs/traces.md),\n"
    "writes the trace of the lowest rank and prints one row per file.";

enum { IMPORT_MAX_FILES = 1024 };

/* What the options of import set. */
typedef struct import_args {
    cmd_ctx cc;              /* -o, --format */
    kineto_opts o;
} import_args;

#define ARGS ((import_args *)ctx)
static int import_set_bytes(void *ctx, const char *a, err *e)
{
    TRY(cli_parse_size("--default-bytes", a, &ARGS->o.default_bytes, e));
    return ARGS->o.default_bytes > COLL_MAX_BYTES
               ? err_set(e, ERR_USAGE, "--default-bytes: at most 64G") : 0;
}

static int import_set_tokens(void *ctx, const char *a, err *e)
{
    TRY(cli_parse_double("--tokens-per-cycle", a, &ARGS->o.tokens_per_cycle, e));
    return ARGS->o.tokens_per_cycle > 0 ? 0 : err_set(e, ERR_USAGE, "--tokens-per-cycle must be > 0");
}
#undef ARGS

static const cli_opt import_options[] = {
    {"output", 'o', "OUT", "the trace to write (required)", cmd_set_output},
    {"tokens-per-cycle", 0, "X", "tokens per cycle where a step does not say (default 1)", import_set_tokens},
    {"default-bytes", 0, "B", "size of collectives whose size is not found (default 0: left 0)", import_set_bytes},
    {"format", 0, "F", "the summary as table (default), csv or json", cmd_set_format},
    {NULL, 0, NULL, NULL, NULL},
};

static int cmd_import(int argc, char **argv, err *e)
{
    import_args g = {.o = {0, 0}};  /* 0: not given (1 a cycle) */
    cmd_ctx_init(&g.cc);
    /* "kineto", the files, and one more so that too many get their own message */
    const char *pos[IMPORT_MAX_FILES + 2];
    int npos;
    int prc = cli_parse("collsim trace import", import_synopsis, import_desc, import_options, &g,
                        argc, argv, pos, IMPORT_MAX_FILES + 2, &npos, e);
    if (prc == CLI_HELP_SHOWN)
        return 0;
    TRY(prc);
    if (npos < 1 || strcmp(pos[0], "kineto") != 0)
        return err_set(e, ERR_USAGE,
                       "trace import: the only importer is 'kineto' (collsim trace import --help)");
    if (npos - 1 > IMPORT_MAX_FILES)
        return err_set(e, ERR_USAGE, "more than %d files", IMPORT_MAX_FILES);
    const char *out = g.cc.out_given ? g.cc.out : NULL;
    const char *const *files = pos + 1;
    int nfiles = npos - 1;
    const kineto_opts o = g.o;
    report_format fmt = g.cc.fmt;
    if (!out || nfiles == 0)
        return err_set(e, ERR_USAGE, "trace import kineto: FILE... and -o OUT are required");
    kineto_rank **ranks = calloc((size_t)nfiles, sizeof *ranks);
    if (!ranks)
        return err_set(e, ERR_SYSTEM, "out of memory");
    int rc = 0;
    for (int i = 0; i < nfiles && !rc; i++)
        rc = kineto_load(files[i], &ranks[i], e);
    kineto_summary sum;
    trace_writer *w = NULL;
    if (!rc) {
        w = trace_writer_new(out, e);
        if (!w)
            rc = e->code;
    }
    if (!rc)
        rc = kineto_write(ranks, nfiles, &o, w, &sum, e);
    if (!rc) {
        rc = trace_writer_commit(w, e);
        w = NULL;
    }
    trace_writer_abort(w);
    for (int i = 0; !rc && i < sum.nassumed; i++)   /* as in the trace's comments */
        fprintf(stderr, "collsim: trace import kineto: assumed: %s\n", sum.assumed[i]);
    if (!rc) {
        report *r = report_new(stdout, fmt);
        static const report_col cols[] = {
            {"file", NULL, 40, -1}, {"rank", NULL, 5, -1}, {"events", NULL, 8, -1},
            {"gpu_ops", NULL, 8, -1}, {"steps", NULL, 6, -1}, {"collectives", NULL, 12, -1},
            {"sized", NULL, 6, -1}, {"cpu_ops", NULL, 8, -1}, {"launches", NULL, 9, -1},
            {"graph_launches", NULL, 15, -1}, {"syncs", NULL, 6, -1}, {"sync_us", NULL, 10, 1},
        };
        report_meta(r, "output", "%s", out);
        report_meta(r, "ranks", "%d", sum.nranks);
        report_meta(r, "written_rank", "%d", sum.rank);
        report_meta(r, "cycles", "%ld", sum.cycles);
        report_meta(r, "dropped_gpu_ops", "%ld", sum.dropped);
        report_meta(r, "host", "%ld host ops (%.1f us) and %ld syncs written for rank %d",
                    sum.host_ops, sum.host_us, sum.syncs, sum.rank);
        if (sum.nranks > 1) {
            report_meta(r, "max_end_spread_us", "%.3f", sum.max_end_spread_us);
            report_meta(r, "start_spread_us", "%.3f mean, %.3f max (the ranks' skew at the "
                        "collectives)", sum.mean_start_spread_us, sum.max_start_spread_us);
            report_meta(r, "wait_us", "%.3f", sum.wait_us);
        }
        report_table(r, "import", cols, 12);
        for (int i = 0; i < nfiles; i++) {
            const char *base = strrchr(files[i], '/');
            report_str(r, base ? base + 1 : files[i]);
            report_int(r, kineto_rank_id(ranks[i]));
            report_int(r, kineto_nevents(ranks[i]));
            report_int(r, kineto_nkernels(ranks[i]));
            report_int(r, kineto_nsteps(ranks[i]));
            report_int(r, kineto_ncomm(ranks[i]));
            long sized = 0;
            for (long j = 0; j < kineto_ncomm(ranks[i]); j++)
                sized += kineto_comm_at(ranks[i], j)->bytes > 0;
            report_int(r, sized);
            const kineto_host *h = kineto_host_of(ranks[i]);
            report_int(r, h->cpu_ops);
            report_int(r, h->launches);
            report_int(r, h->graph_launches);
            report_int(r, h->syncs);
            report_num(r, h->sync_us);
            report_end_row(r);
        }
        rc = report_finish(r, e);
        report_free(r);
    }
    for (int i = 0; i < nfiles; i++)
        kineto_free(ranks[i]);
    free(ranks);
    return rc;
}

enum { SHOW_SIZES = 64 };

typedef struct show_size {
    coll_kind kind;
    uint64_t bytes;
    long n;
} show_size;

static const char show_synopsis[] = "collsim trace show TRACE [options]";
static const char show_desc[] =
    "Prints a trace's metadata, its ops by kind, compute time per phase and the\n"
    "distinct collectives with their counts.";

static const cli_opt show_options[] = {
    {"format", 0, "F", "table (default), csv or json", cmd_set_format},
    {NULL, 0, NULL, NULL, NULL},
};

static int cmd_show(int argc, char **argv, err *e)
{
    cmd_ctx cc;   /* --format */
    cmd_ctx_init(&cc);
    const char *pos[2];   /* one more than allowed, to say why */
    int npos;
    int prc = cli_parse("collsim trace show", show_synopsis, show_desc, show_options, &cc, argc,
                        argv, pos, 2, &npos, e);
    if (prc == CLI_HELP_SHOWN)
        return 0;
    TRY(prc);
    if (npos > 1)
        return err_set(e, ERR_USAGE, "trace show: one trace at a time");
    if (npos == 0)
        return err_set(e, ERR_USAGE, "trace show: TRACE is required");
    const char *path = pos[0];
    trace_reader *tr;
    TRY(trace_open(path, &tr, e));
    long cycles = 0, count[OP_N] = {0}, kernels = 0;
    double tokens = 0, compute_us[PHASE_N] = {0}, idle_us = 0;
    long phase_ops[PHASE_N] = {0};
    show_size sizes[SHOW_SIZES];
    int nsizes = 0;
    uint64_t coll_bytes = 0;
    trace_phase ph = PHASE_OTHER;
    trace_op op;
    int rc;
    while ((rc = trace_next(tr, &op, e)) == 1) {
        count[op.kind]++;
        if (op.kind == OP_CYCLE) {
            cycles++;
            tokens += op.tokens;
        } else if (op.kind == OP_PHASE) {
            ph = op.phase;
        } else if (op.kind == OP_COMPUTE) {
            compute_us[ph] += op.dur_us;
            kernels += op.kernels;
            phase_ops[ph]++;
        } else if (op.kind == OP_IDLE) {
            idle_us += op.dur_us;
        } else if (op.kind == OP_COLL) {
            coll_bytes += op.bytes;
            kernels += op.kernels;
            phase_ops[ph]++;
            int j;
            for (j = 0; j < nsizes; j++)
                if (sizes[j].kind == op.coll && sizes[j].bytes == op.bytes)
                    break;
            if (j == nsizes && nsizes < SHOW_SIZES)
                sizes[nsizes++] = (show_size){op.coll, op.bytes, 0};
            if (j < nsizes)
                sizes[j].n++;
        }
    }
    if (rc != 0) {
        trace_close(tr);
        return rc;
    }
    if (count[OP_CYCLE] == 0 && (count[OP_COMPUTE] || count[OP_COLL]))
        cycles = 1, tokens = 1;
    report *r = report_new(stdout, cc.fmt);
    report_meta(r, "trace", "%s", path);
    const char *keys[] = {"model", "source", "ranks", "graph", "overhead"};
    for (int i = 0; i < 5; i++)
        if (trace_meta(tr, keys[i]))
            report_meta(r, keys[i], "%s", trace_meta(tr, keys[i]));
    report_meta(r, "cycles", "%ld", cycles);
    report_meta(r, "tokens", "%g", tokens);
    report_meta(r, "kernels", "%ld", kernels);
    report_meta(r, "idle_us", "%.3f", idle_us);
    static const report_col ocols[] = {{"op", NULL, 10, -1}, {"count", NULL, 10, -1},
                                       {"bytes", NULL, 16, -1}};
    static const char *const opn[OP_N] = {"cycle", "phase", "compute", "coll", "idle", "wait",
                                          "host", "sync"};
    report_table(r, "ops", ocols, 3);
    for (int k = 0; k < OP_N; k++) {
        report_str(r, opn[k]);
        report_int(r, count[k]);
        report_int(r, k == OP_COLL ? (long long)coll_bytes : 0);
        report_end_row(r);
    }
    static const report_col pcols[] = {{"phase", NULL, 10, -1}, {"ops", NULL, 10, -1},
                                       {"compute_us", NULL, 14, 3},
                                       {"compute_us_per_cycle", "per_cycle_us", 14, 3}};
    report_table(r, "phases", pcols, 4);
    for (int p = 0; p < PHASE_N; p++) {
        if (!phase_ops[p])
            continue;
        report_str(r, trace_phase_name((trace_phase)p));
        report_int(r, phase_ops[p]);
        report_num(r, compute_us[p]);
        report_num(r, cycles ? compute_us[p] / (double)cycles : 0);
        report_end_row(r);
    }
    static const report_col ccols[] = {{"collective", NULL, 14, -1}, {"bytes", NULL, 12, -1},
                                       {"count", NULL, 10, -1}};
    report_table(r, "collectives", ccols, 3);
    for (int j = 0; j < nsizes; j++) {
        report_str(r, coll_kind_name(sizes[j].kind));
        report_int(r, (long long)sizes[j].bytes);
        report_int(r, sizes[j].n);
        report_end_row(r);
    }
    rc = report_finish(r, e);
    report_free(r);
    trace_close(tr);
    return rc;
}

/* The subcommands; `collsim trace --help` lists their synopses. */
typedef struct trace_sub {
    const char *name, *synopsis;
    cli_run_fn *run;
} trace_sub;

static const trace_sub subs[] = {
    {"gen", gen_synopsis, cmd_gen},
    {"import", import_synopsis, cmd_import},
    {"show", show_synopsis, cmd_show},
    {NULL, NULL, NULL},
};

static void trace_usage(void)
{
    for (const trace_sub *t = subs; t->name; t++)
        printf("%s %s\n", t == subs ? "usage:" : "      ", t->synopsis);
    printf("options of each: collsim trace gen|import|show --help\n");
}

int cmd_trace(int argc, char **argv, err *e)
{
    if (argc < 2 || !strcmp(argv[1], "--help") || !strcmp(argv[1], "-h")) {
        trace_usage();
        return argc < 2 ? err_set(e, ERR_USAGE, "trace: gen, import or show?") : 0;
    }
    for (const trace_sub *t = subs; t->name; t++)
        if (!strcmp(argv[1], t->name))
            return t->run(argc - 1, argv + 1, e);
    return err_set(e, ERR_USAGE, "trace: unknown subcommand '%s' (gen, import, show)", argv[1]);
}
