/* Sweep benchmark: runs per second of `collsim sweep` on a 10,000-run grid of
 * the reference scenario (kimi-k2-eagle3-8x-pcie5: 5 allreduce algorithms x
 * 20 batch sizes x 100 accept lengths) with 1 and 2 worker processes, through
 * the same driver and runner as the command, writing csv to a scratch folder.
 * Times are also given as a ratio to a reference run in the same process
 * (qsort of 2^20 doubles). The two outputs must be byte-identical and every
 * run ok, else the benchmark fails (exit 1). Usage: bench_sweep [--format
 * table|csv|json] [--quick] (--quick: 1,000 runs). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "bench/bench_common.h"
#include "sim/cli.h"
#include "sim/report.h"
#include "traces/sweep.h"
#include "traces/sweep_grid.h"
#include "traces/sweep_mpi.h"
#include "traces/sweep_whatif.h"

/* The grid: 5 x 20 x naccept runs of the reference scenario. */
static char *grid_text(int naccept)
{
    char *buf = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&buf, &len);
    if (!f)
        return NULL;
    fputs("collsim-grid 1\nscenario kimi-k2-eagle3-8x-pcie5\n"
          "vary allreduce=ring,oneshot,twoshot,oneshot-push,twoshot-push\nvary batch=", f);
    for (int b = 1; b <= 20; b++)
        fprintf(f, "%s%d", b > 1 ? "," : "", b);
    fputs("\nvary accept_len=", f);
    for (int a = 0; a < naccept; a++)   /* 1.00, 1.02, ... below draft_tokens = 3 */
        fprintf(f, "%s%.2f", a ? "," : "", 1.0 + 1.98 * a / (naccept - 1));
    fputc('\n', f);
    fclose(f);
    return buf;
}

static char *slurp(const char *path, size_t *n)
{
    FILE *f = fopen(path, "rb");
    char *buf = NULL;
    *n = 0;
    if (f && fseek(f, 0, SEEK_END) == 0) {
        long sz = ftell(f);
        rewind(f);
        if (sz >= 0 && (buf = malloc((size_t)sz + 1)) != NULL)
            *n = fread(buf, 1, (size_t)sz, f);
    }
    if (f)
        fclose(f);
    return buf;
}

static const report_col cols[] = {
    {"grid", NULL, 10, -1},     {"workers", NULL, 7, -1}, {"runs", NULL, 6, -1},
    {"failed", NULL, 6, -1},    {"time_s", NULL, 8, 3},   {"runs_per_s", NULL, 10, 1},
    {"per_run_us", NULL, 10, 1}, {"time/ref", NULL, 9, 2},
};

int main(int argc, char **argv)
{
    report_format fmt = REPORT_TABLE;
    int quick = 0;
    err e = {0};
    for (int i = 1; i < argc; i++) {
        if (strcmp(argv[i], "--quick") == 0) {
            quick = 1;
        } else if (strcmp(argv[i], "--format") == 0 && i + 1 < argc) {
            if (cli_parse_format(argv[++i], &fmt, &e)) {
                fprintf(stderr, "bench_sweep: %s\n", e.msg);
                return 2;
            }
        } else {
            fprintf(stderr, "usage: bench_sweep [--format table|csv|json] [--quick]\n");
            return 2;
        }
    }
    char dir[] = "/tmp/bench_sweepXXXXXX";
    char *text = grid_text(quick ? 10 : 100);
    if (!text || !mkdtemp(dir)) {
        fprintf(stderr, "bench_sweep: cannot set up a scratch folder\n");
        return 4;
    }
    FILE *gf = fmemopen(text, strlen(text), "r");
    sweep_grid *g = NULL;
    sweep_whatif *w = sweep_whatif_new();
    int rc = gf && w ? sweep_grid_parse(gf, "bench.grid", "", &g, &e) : ERR_SYSTEM;
    if (gf)
        fclose(gf);
    sweep_runner runner;
    if (!rc) {
        sweep_whatif_runner(w, &runner);
        rc = sweep_check(g, &runner, &e);
    }
    if (rc) {
        fprintf(stderr, "bench_sweep: %s\n", e.msg);
        return rc;
    }
    double ref = bench_reference_s();
    report *r = report_new(stdout, fmt);
    report_meta(r, "reference", "qsort of 2^20 doubles: %.1f ms", ref * 1e3);
    report_meta(r, "scenario", "kimi-k2-eagle3-8x-pcie5, %ld runs", sweep_grid_runs(g));
    report_table(r, "sweep", cols, (int)(sizeof cols / sizeof cols[0]));
    char out[2][300] = {"", ""};
    for (int j = 1; j <= 2 && !rc; j++) {
        snprintf(out[j - 1], sizeof out[0], "%s/j%d.csv", dir, j);
        sweep_opts o = {.out_path = out[j - 1]};
        sweep_summary sum;
        sweep_mpi *m = NULL;
        double t0 = bench_now_s();
        sweep *s = sweep_new(g, &runner, j, &e);
        rc = s ? sweep_mpi_init(&m, &e) : e.code;
        if (!rc)
            rc = sweep_exec(s, m, &o, &sum, &e);
        sweep_free(s);
        double dt = bench_now_s() - t0;
        sweep_mpi_finish(m);
        if (rc) {
            fprintf(stderr, "bench_sweep: -j %d: %s\n", j, e.msg);
            break;
        }
        if (sum.failed) {
            fprintf(stderr, "bench_sweep: -j %d: %ld runs failed, first: %s\n", j, sum.failed,
                    sum.failed_msg[0]);
            rc = 1;
        }
        report_str(r, quick ? "ref-1k" : "ref-10k");
        report_int(r, j);
        report_int(r, sum.runs);
        report_int(r, sum.failed);
        report_num(r, dt);
        report_num(r, (double)sum.runs / dt);
        report_num(r, dt / (double)sum.runs * 1e6);
        report_num(r, dt / ref);
        report_end_row(r);
    }
    if (!rc) {
        size_t n1, n2;
        char *a = slurp(out[0], &n1), *b = slurp(out[1], &n2);
        if (!a || !b || n1 != n2 || memcmp(a, b, n1) != 0) {
            fprintf(stderr, "bench_sweep: -j 1 and -j 2 outputs differ\n");
            rc = 1;
        }
        free(a);
        free(b);
    }
    report_note(r, "workers are processes (one still forks: crash isolation); peak RSS %.1f MiB",
                bench_peak_mb());
    if (report_finish(r, &e) && !rc)
        rc = ERR_SYSTEM;
    report_free(r);
    for (int j = 0; j < 2; j++)
        if (out[j][0])
            unlink(out[j]);
    rmdir(dir);
    sweep_whatif_free(w);
    sweep_grid_free(g);
    free(text);
    return rc;
}
