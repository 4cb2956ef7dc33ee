/* `collsim trace gen|import|show`: generate a trace from a model
 * description (a what-if scenario and its knobs), import Kineto JSON (one
 * file per rank), or summarise a trace. Every output file is written to a
 * temporary and renamed only when complete (no partial files on errors). */
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "models/cmds.h"
#include "sim/report.h"
#include "traces/kineto.h"
#include "traces/trace.h"
#include "traces/whatif.h"

static const char usage[] =
    "usage: collsim trace gen [--model kimi-k2|SCENARIO] [--mode decode|eagle3] [--cycles N]\n"
    "                         [--seed S] [--set KEY=VALUE]... -o OUT\n"
    "       collsim trace import kineto FILE... -o OUT [--tokens-per-cycle X]\n"
    "                         [--default-bytes B] [--format table|csv|json]\n"
    "       collsim trace show TRACE [--format table|csv|json]\n"
    "gen keys are the what-if knobs (collsim whatif --keys); accept_hist samples\n"
    "per cycle with a fixed-seed generator, so the output is reproducible.\n";

/* splitmix64: small, deterministic, good enough for sampling accept lengths */
static uint64_t rng_next(uint64_t *s)
{
    uint64_t z = (*s += 0x9e3779b97f4a7c15ULL);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
    return z ^ (z >> 31);
}

static int sink_writer(void *arg, const trace_op *op, err *e)
{
    return trace_write_op(arg, op, e);
}

static int cmd_gen(int argc, char **argv, err *e)
{
    const char *model = "kimi-k2", *out = NULL, *mode = NULL;
    long cycles = 100, seed = 1;
    const char *sets[64];
    int nsets = 0;
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i];
        int more = i + 1 < argc;
        if (!strcmp(a, "--model") && more)
            model = argv[++i];
        else if (!strcmp(a, "--mode") && more)
            mode = argv[++i];
        else if (!strcmp(a, "--cycles") && more)
            TRY(cli_parse_long("--cycles", argv[++i], 1, 100000000, &cycles, e));
        else if (!strcmp(a, "--seed") && more)
            TRY(cli_parse_long("--seed", argv[++i], 0, 1L << 62, &seed, e));
        else if (!strcmp(a, "--set") && more) {
            if (nsets == 64)
                return err_set(e, ERR_USAGE, "too many --set");
            sets[nsets++] = argv[++i];
        } else if (!strcmp(a, "-o") && more)
            out = argv[++i];
        else if (!strcmp(a, "--help") || !strcmp(a, "-h")) {
            fputs(usage, stdout);
            return 0;
        } else
            return err_set(e, ERR_USAGE, "trace gen: unknown or incomplete option '%s'\n%s", a,
                           usage);
    }
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
    int rc = whatif_derive(c, &s, e);
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
    if (!rc)
        rc = trace_write_meta(w, "source", "collsim trace gen", e);
    snprintf(buf, sizeof buf,
             "mode=%s layers=%d hidden=%d tp=%d batch=%d draft_tokens=%d accept_len=%g "
             "weight_us_per_layer=%.4f token_us_per_layer=%.4f draft_step_us=%.4f",
             s.mode == WHATIF_EAGLE3 ? "eagle3" : "decode", s.layers, s.hidden, s.tp, s.batch,
             s.draft_tokens, s.accept_len, s.weight_us_per_layer, s.token_us_per_layer,
             s.draft_step_us);
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
        rc = whatif_emit_cycle(&s, tokens, sink_writer, w, e);
    }
    if (rc) {
        trace_writer_abort(w);
        return rc;
    }
    return trace_writer_commit(w, e);
}

static int cmd_import(int argc, char **argv, err *e)
{
    if (argc < 2 || strcmp(argv[1], "kineto") != 0)
        return err_set(e, ERR_USAGE, "trace import: the only importer is 'kineto'\n%s", usage);
    const char *out = NULL;
    const char *files[1024];
    int nfiles = 0;
    kineto_opts o = {1.0, 0};
    report_format fmt = REPORT_TABLE;
    for (int i = 2; i < argc; i++) {
        const char *a = argv[i];
        int more = i + 1 < argc;
        if (!strcmp(a, "-o") && more)
            out = argv[++i];
        else if (!strcmp(a, "--tokens-per-cycle") && more) {
            TRY(cli_parse_double("--tokens-per-cycle", argv[++i], &o.tokens_per_cycle, e));
            if (!(o.tokens_per_cycle > 0))
                return err_set(e, ERR_USAGE, "--tokens-per-cycle must be > 0");
        } else if (!strcmp(a, "--default-bytes") && more)
            TRY(cli_parse_size("--default-bytes", argv[++i], &o.default_bytes, e));
        else if (!strcmp(a, "--format") && more)
            TRY(cli_parse_format(argv[++i], &fmt, e));
        else if (a[0] == '-' && a[1])
            return err_set(e, ERR_USAGE, "trace import: unknown or incomplete option '%s'", a);
        else {
            if (nfiles == 1024)
                return err_set(e, ERR_USAGE, "more than 1024 files");
            files[nfiles++] = a;
        }
    }
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
    if (!rc) {
        report *r = report_new(stdout, fmt);
        static const report_col cols[] = {
            {"file", NULL, 40, -1}, {"rank", NULL, 5, -1}, {"events", NULL, 8, -1},
            {"gpu_ops", NULL, 8, -1}, {"steps", NULL, 6, -1}, {"collectives", NULL, 12, -1},
            {"sized", NULL, 6, -1},
        };
        report_meta(r, "output", "%s", out);
        report_meta(r, "ranks", "%d", sum.nranks);
        report_meta(r, "written_rank", "%d", sum.rank);
        report_meta(r, "cycles", "%ld", sum.cycles);
        report_meta(r, "dropped_gpu_ops", "%ld", sum.dropped);
        if (sum.nranks > 1) {
            report_meta(r, "max_end_spread_us", "%.3f", sum.max_end_spread_us);
            report_meta(r, "wait_us", "%.3f", sum.wait_us);
        }
        report_table(r, "import", cols, 7);
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

static int cmd_show(int argc, char **argv, err *e)
{
    const char *path = NULL;
    report_format fmt = REPORT_TABLE;
    for (int i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "--format") && i + 1 < argc)
            TRY(cli_parse_format(argv[++i], &fmt, e));
        else if (argv[i][0] == '-' && argv[i][1])
            return err_set(e, ERR_USAGE, "trace show: unknown option '%s'", argv[i]);
        else if (!path)
            path = argv[i];
        else
            return err_set(e, ERR_USAGE, "trace show: one trace at a time");
    }
    if (!path)
        return err_set(e, ERR_USAGE, "trace show: TRACE is required");
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
    report *r = report_new(stdout, fmt);
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
    static const char *const opn[OP_N] = {"cycle", "phase", "compute", "coll", "idle", "wait"};
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

int cmd_trace(int argc, char **argv, err *e)
{
    if (argc < 2 || !strcmp(argv[1], "--help") || !strcmp(argv[1], "-h")) {
        fputs(usage, stdout);
        return argc < 2 ? err_set(e, ERR_USAGE, "trace: gen, import or show?") : 0;
    }
    if (!strcmp(argv[1], "gen"))
        return cmd_gen(argc - 1, argv + 1, e);
    if (!strcmp(argv[1], "import"))
        return cmd_import(argc - 1, argv + 1, e);
    if (!strcmp(argv[1], "show"))
        return cmd_show(argc - 1, argv + 1, e);
    return err_set(e, ERR_USAGE, "trace: unknown subcommand '%s' (gen, import, show)", argv[1]);
}
