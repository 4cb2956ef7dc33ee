/* Replay and import benchmark. (1) Generates a 10,000-cycle EAGLE-3 trace
 * of the reference scenario (gzipped, about 2.5M ops) and replays it on the
 * 2-socket preset through the collective model; (2) builds large Kineto
 * files by repeating the events of a real trace (x4 and x16) and imports
 * them. Reports wall time, ops/s, peak resident memory (ru_maxrss, which
 * only grows: the import rows show how much each step added), and every time
 * as a ratio to a reference run (qsort of 1M doubles) in the same process.
 * Usage: bench_replay [--format table|csv|json] [--quick] (--quick: 1,000
 * cycles, x2/x4). Runs from the repository root (reads traces/testdata/). */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <time.h>
#include <unistd.h>
#include <zlib.h>

#include "sim/cli.h"
#include "bench/bench_common.h"
#include "sim/report.h"
#include "traces/kineto.h"
#include "traces/replay.h"
#include "traces/whatif.h"

static int sink(void *arg, const trace_op *op, err *e) { return trace_write_op(arg, op, e); }

/* Read a gzipped file whole (the benchmark's input, a few MB). */
static char *slurp_gz(const char *path, size_t *n)
{
    gzFile g = gzopen(path, "rb");
    if (!g)
        return NULL;
    size_t cap = 1 << 22, len = 0;
    char *buf = malloc(cap);
    int got;
    while (buf && (got = gzread(g, buf + len, (unsigned)(cap - len))) > 0) {
        len += (size_t)got;
        if (len == cap)
            buf = realloc(buf, cap *= 2);
    }
    gzclose(g);
    *n = len;
    return buf;
}

/* The text of the traceEvents array's contents: [start, end). */
static int events_span(const char *s, size_t n, size_t *start, size_t *end)
{
    const char *k = strstr(s, "\"traceEvents\"");
    if (!k)
        return -1;
    const char *p = strchr(k, '[');
    if (!p)
        return -1;
    int depth = 0, in_str = 0;
    for (size_t i = (size_t)(p - s); i < n; i++) {
        char c = s[i];
        if (in_str) {
            if (c == '\\')
                i++;
            else if (c == '"')
                in_str = 0;
            continue;
        }
        if (c == '"')
            in_str = 1;
        else if (c == '[' || c == '{')
            depth++;
        else if (c == ']' || c == '}') {
            if (--depth == 0) {
                *start = (size_t)(p - s) + 1;
                *end = i;
                return 0;
            }
        }
    }
    return -1;
}

static int write_repeated(const char *out, const char *s, size_t a, size_t b, int times,
                          double *mb)
{
    FILE *f = fopen(out, "w");
    if (!f)
        return -1;
    fputs("{\"schemaVersion\":1,\"distributedInfo\":{\"rank\":0,\"world_size\":8},\"traceEvents\":[",
          f);
    for (int t = 0; t < times; t++) {
        if (t)
            fputc(',', f);
        fwrite(s + a, 1, b - a, f);
    }
    fputs("]}\n", f);
    *mb = (double)ftell(f) / 1e6;
    return fclose(f);
}

int main(int argc, char **argv)
{
    report_format fmt = REPORT_TABLE;
    int quick = 0;
    err e = {0};
    for (int i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "--format") && i + 1 < argc) {
            if (cli_parse_format(argv[++i], &fmt, &e) != 0) {
                fprintf(stderr, "bench_replay: %s\n", e.msg);
                return 2;
            }
        } else if (!strcmp(argv[i], "--quick"))
            quick = 1;
        else {
            fprintf(stderr, "usage: bench_replay [--format table|csv|json] [--quick]\n");
            return 2;
        }
    }
    double ref = bench_reference_s();
    char dir[] = "/tmp/collsim_bench_replayXXXXXX";
    if (!mkdtemp(dir)) {
        perror("mkdtemp");
        return 4;
    }
    char trace[256], big[256];
    snprintf(trace, sizeof trace, "%s/eagle3.trace.gz", dir);
    report *r = report_new(stdout, fmt);
    static const report_col cols[] = {
        {"case", NULL, 26, -1},      {"size", NULL, 12, -1},    {"input_MB", NULL, 9, 3},
        {"time_s", NULL, 8, 3},      {"ratio_to_ref", NULL, 12, 2}, {"rate_per_s", NULL, 12, 0},
        {"peak_rss_MB", NULL, 11, 1}, {"result", NULL, 24, -1},
    };
    report_meta(r, "reference", "qsort of 1M doubles: %.4f s", ref);
    report_table(r, "bench_replay", cols, 8);
    int rc = 0;

    /* (1) a 10,000-cycle EAGLE-3 trace, generated with fixed compute parameters */
    long cycles = quick ? 1000 : 10000;
    whatif_scenario s;
    whatif_scenario_load("kimi-k2-eagle3-8x-pcie5", &s, &e);
    s.gpu_mem_GBps = 1792;   /* fixed numbers, no fit: the benchmark times the replay */
    s.efficiency = 0.5;
    s.host_us = 100;         /* the host model as built in: 8 ranks with jitter */
    double t0 = bench_now_s();
    trace_writer *w = trace_writer_new(trace, &e);
    for (long c = 0; w && c < cycles && !rc; c++)
        rc = whatif_emit_cycle(&s, 2.4, sink, w, &e);
    if (w && !rc)
        rc = trace_writer_commit(w, &e);
    else
        trace_writer_abort(w);
    double gen_s = bench_now_s() - t0;
    if (!w || rc) {
        fprintf(stderr, "bench_replay: %s\n", e.msg);
        return 4;
    }
    FILE *tf = fopen(trace, "rb");
    fseek(tf, 0, SEEK_END);
    double trace_mb = (double)ftell(tf) / 1e6;
    fclose(tf);
    topo *t = NULL;
    coll_ctx *cc = NULL;
    replay_opts o;
    replay_opts_init(&o);
    if (topo_load(s.topo, &t, &e) == 0)
        cc = coll_ctx_new(t);
    if (!cc)
        o.coll_us = 40;   /* no collective model built: forced times */
    replay_result res;
    t0 = bench_now_s();
    rc = replay_file(trace, t, cc, &o, NULL, &res, &e);
    double rep_s = bench_now_s() - t0;
    if (rc) {
        fprintf(stderr, "bench_replay: %s\n", e.msg);
        return rc;
    }
    char buf[128];
    report_str(r, "generate eagle3 trace");
    snprintf(buf, sizeof buf, "%ld cycles", cycles);
    report_str(r, buf);
    report_num(r, trace_mb);
    report_num(r, gen_s);
    report_num(r, gen_s / ref);
    report_num(r, (double)res.ops / gen_s);
    report_num(r, bench_peak_mb());
    report_str(r, "-");
    report_end_row(r);
    report_str(r, "replay eagle3 trace");
    report_str(r, buf);
    report_num(r, trace_mb);
    report_num(r, rep_s);
    report_num(r, rep_s / ref);
    report_num(r, (double)res.ops / rep_s);
    report_num(r, bench_peak_mb());
    snprintf(buf, sizeof buf, "%.2f tok/s, %llu predictions", res.tok_per_s,
             (unsigned long long)res.predictions);
    report_str(r, buf);
    report_end_row(r);
    coll_ctx_free(cc);
    topo_free(t);

    /* (2) large Kineto files from a real trace's events, repeated */
    size_t n = 0, a = 0, b = 0;
    char *json = slurp_gz("traces/testdata/TraceLens/eager_trace.json.gz", &n);
    if (!json || events_span(json, n, &a, &b) != 0) {
        fprintf(stderr, "bench_replay: cannot read traces/testdata/TraceLens/eager_trace.json.gz "
                        "(run from the repository root)\n");
        return 4;
    }
    int reps[2] = {quick ? 2 : 4, quick ? 4 : 16};
    for (int k = 0; k < 2 && !rc; k++) {
        snprintf(big, sizeof big, "%s/big%d.json", dir, reps[k]);
        double mb = 0;
        if (write_repeated(big, json, a, b, reps[k], &mb) != 0) {
            fprintf(stderr, "bench_replay: cannot write %s\n", big);
            return 4;
        }
        double before = bench_peak_mb();
        kineto_rank *kr = NULL;
        t0 = bench_now_s();
        rc = kineto_load(big, &kr, &e);
        double imp_s = bench_now_s() - t0;
        if (rc) {
            fprintf(stderr, "bench_replay: %s\n", e.msg);
            return rc;
        }
        snprintf(buf, sizeof buf, "import kineto x%d", reps[k]);
        report_str(r, buf);
        snprintf(buf, sizeof buf, "%ld events", kineto_nevents(kr));
        report_str(r, buf);
        report_num(r, mb);
        report_num(r, imp_s);
        report_num(r, imp_s / ref);
        report_num(r, (double)kineto_nevents(kr) / imp_s);
        report_num(r, bench_peak_mb());
        snprintf(buf, sizeof buf, "+%.1f MB peak, %ld gpu ops", bench_peak_mb() - before,
                 kineto_nkernels(kr));
        report_str(r, buf);
        report_end_row(r);
        kineto_free(kr);
        unlink(big);
    }
    free(json);
    unlink(trace);
    rmdir(dir);
    int frc = report_finish(r, &e);
    report_free(r);
    return rc ? rc : frc;
}
