/* collsim sweep GRID: parse the grid, check every input and knob, fork the
 * workers, join the MPI job when launched by mpirun (after the fork, so the
 * workers never inherit MPI state), run this rank's share and, on rank 0,
 * write the rows and report failed runs. The progress line goes to stderr
 * only when it is a terminal. docs/sweep.md is the user's guide. */
#define _GNU_SOURCE   /* sched_getaffinity: the cores we may use, not all the box's */
#include <errno.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "cmd/cmd_ctx.h"
#include "cmd/cmds.h"
#include "sim/cli.h"
#include "sim/ofile.h"
#include "traces/sweep.h"
#include "traces/sweep_grid.h"
#include "traces/sweep_mpi.h"
#include "traces/sweep_whatif.h"
#include "validate/plot.h"

static const char synopsis[] = "collsim sweep GRID [options]";
static const char desc[] =
    "Runs every point of GRID (docs/formats.md \"Sweep grid\", docs/sweep.md): scenario\n"
    "points through what-if, trace points through replay. Under mpirun, ranks share\n"
    "the grid and rank 0 writes. Exit 1 if runs failed.";

static double now_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

static int cores(void)
{
    cpu_set_t set;
    if (sched_getaffinity(0, sizeof set, &set) == 0 && CPU_COUNT(&set) > 0)
        return CPU_COUNT(&set);
    long n = sysconf(_SC_NPROCESSORS_ONLN);
    return n > 0 ? (int)n : 1;
}

typedef struct progress {
    double t0, last;
} progress;

static void show_time(char *buf, size_t n, double s)
{
    long t = (long)(s + 0.5);
    if (t >= 3600)
        snprintf(buf, n, "%ld:%02ld:%02ld", t / 3600, t / 60 % 60, t % 60);
    else
        snprintf(buf, n, "%ld:%02ld", t / 60, t % 60);
}

/* "sweep: 1234/10000 runs, 456.7 runs/s, 0:19 left", at most 5 times a second. */
static void on_progress(void *ctx, long written, long total, long resumed)
{
    progress *p = ctx;
    double t = now_s();
    if (written < total && t - p->last < 0.2)
        return;
    p->last = t;
    double rate = t > p->t0 ? (double)(written - resumed) / (t - p->t0) : 0;
    char left[32] = "?";
    if (rate > 0)
        show_time(left, sizeof left, (double)(total - written) / rate);
    fprintf(stderr, "\rsweep: %ld/%ld runs, %.1f runs/s, %s left \033[K", written, total, rate,
            left);
    if (written == total)
        fputc('\n', stderr);
}

static int list_keys(void)
{
    for (int i = 0; sweep_whatif_trace_key(i); i++)
        printf("%-14s %s\n", sweep_whatif_trace_key(i), sweep_whatif_trace_key_desc(i));
    printf("%-14s %s\n", "NCCL_*", "an NCCL setting, e.g. NCCL_PROTO=LL");
    return 0;
}

/* What the options set. */
typedef struct args {
    cmd_ctx cc;              /* -o, --format */
    const char *grid, *out, *jsonl, *plot;   /* out: -o's file, NULL without -o */
    long jobs, stop_after;
    int resume, keys;
} args;

#define ARGS ((args *)ctx)
static int set_jsonl(void *ctx, const char *a, err *e) { (void)e; ARGS->jsonl = a; return 0; }
static int set_plot(void *ctx, const char *a, err *e) { (void)e; ARGS->plot = a; return 0; }
static int set_resume(void *ctx, const char *a, err *e) { (void)a, (void)e; ARGS->resume = 1; return 0; }
static int set_keys(void *ctx, const char *a, err *e) { (void)a, (void)e; ARGS->keys = 1; return 0; }
static int set_jobs(void *ctx, const char *a, err *e) { return cli_parse_long("-j", a, 1, 4096, &ARGS->jobs, e); }
static int set_stop_after(void *ctx, const char *a, err *e) { return cli_parse_long("--stop-after", a, 1, 1L << 40, &ARGS->stop_after, e); }
#undef ARGS

static const cli_opt options[] = {
    {"output", 'o', "OUT.csv", "write the rows as csv (through OUT.csv.part until complete)", cmd_set_output},
    {"jsonl", 0, "FILE", "also write them as json lines (needs -o)", set_jsonl},
    {"jobs", 'j', "N", "workers on this machine (default: the cores we may use; 1 per rank under mpirun)", set_jobs},
    {"resume", 0, NULL, "continue an interrupted sweep: keep the rows of OUT.csv.part", set_resume},
    {"plot", 0, "OUT.svg", "draw tok/s, speedup and each cycle's parts over one or two varied knobs (needs -o)", set_plot},
    {"format", 0, "F", "stdout without -o: table (default), csv or json", cmd_set_format},
    {"stop-after", 0, "N", "stop after N new rows, as if interrupted (for tests)", set_stop_after},
    {"keys", 0, NULL, "list the knobs of trace points (scenario knobs: whatif --keys)", set_keys},
    {NULL, 0, NULL, NULL, NULL},
};

/* 0, CLI_HELP_SHOWN after --help, or ERR_USAGE. */
static int parse_args(int argc, char **argv, args *a, err *e)
{
    *a = (args){0};
    cmd_ctx_init(&a->cc);
    const char *pos[2];   /* one more than allowed, to name the extra one */
    int npos;
    int rc = cli_parse("collsim sweep", synopsis, desc, options, a, argc, argv, pos, 2, &npos, e);
    if (rc == CLI_HELP_SHOWN)
        printf("MPI: %s\n", !sweep_mpi_built() ? "no (rebuild with make MPI=1)"
                            : sweep_mpi_static() ? "yes (this collsim is static: under a "
                                                   "launcher it runs collsim-mpi beside it)"
                                                 : "yes");
    TRY(rc);
    a->out = a->cc.out_given ? a->cc.out : NULL;
    if (npos > 1)
        return err_set(e, ERR_USAGE, "sweep: one grid file only ('%s')", pos[1]);
    a->grid = npos ? pos[0] : NULL;
    if (a->keys)
        return 0;
    if (!a->grid)
        return err_set(e, ERR_USAGE, "sweep: no grid file given (try --help)");
    if (!a->out && (a->jsonl || a->resume || a->stop_after || a->plot))
        return err_set(e, ERR_USAGE, "sweep: --jsonl, --resume, --stop-after and --plot need -o");
    if (a->out && !strcmp(a->out, "-"))
        return err_set(e, ERR_USAGE, "sweep: -o needs a file (without -o, rows go to stdout)");
    if (a->out && a->jsonl) {
        /* One file for both would interleave csv and json (a device is fine). */
        struct stat so, sj;
        int have = stat(a->out, &so) == 0, same = !strcmp(a->out, a->jsonl);
        if (have && stat(a->jsonl, &sj) == 0 && so.st_dev == sj.st_dev && so.st_ino == sj.st_ino)
            same = 1;
        if (same && !(have && !S_ISREG(so.st_mode)))
            return err_set(e, ERR_USAGE, "sweep: -o and --jsonl name the same file '%s'", a->out);
    }
    return 0;
}

/* --plot: read the rows back from OUT.csv (the bytes the sweep wrote) and
 * draw one or two varied knobs (the input counts as one when the grid has
 * several): tok/s and speedup as grouped bars (the first knob along x, a bar
 * per value of the second), and each run's cycle as stacked parts. */
enum { PLOT_MAX_COLS = 64, PLOT_MAX_ROWS = 4096 };

/* Split a csv line in place (quoted cells as sweep writes them); n cells. */
static int csv_split(char *s, char **cell, int max)
{
    int n = 0;
    while (n < max) {
        char *w = s, *r = s;
        cell[n++] = w;
        if (*r == '"') {
            for (r++; *r && !(r[0] == '"' && r[1] != '"'); r++)
                *w++ = *r == '"' ? *++r : *r;
            if (*r == '"')
                r++;
        } else {
            while (*r && *r != ',' && *r != '\n')
                *w++ = *r++;
        }
        int more = *r == ',';
        *w = '\0';
        if (!more)
            break;
        s = r + 1;
    }
    return n;
}

static int col_index(char **hdr, int n, const char *name)
{
    for (int i = 0; i < n; i++)
        if (!strcmp(hdr[i], name))
            return i;
    return -1;
}

static int write_plot(const char *csv, const char *grid, const char *svg, err *e)
{
    FILE *f = fopen(csv, "r");
    if (!f)
        return err_set(e, ERR_SYSTEM, "--plot: %s: %s", csv, strerror(errno));
    char *line = NULL, *hdr_line = NULL, *hdr[PLOT_MAX_COLS];
    size_t cap = 0;
    int rc = 0, nh = 0;
    char **rows = calloc(PLOT_MAX_ROWS, sizeof *rows);
    long nrows = 0;
    if (!rows)
        rc = err_set(e, ERR_SYSTEM, "out of memory");
    while (!rc && getline(&line, &cap, f) > 0) {
        if (!hdr_line) {
            hdr_line = strdup(line);
            nh = hdr_line ? csv_split(hdr_line, hdr, PLOT_MAX_COLS) : 0;
            if (!hdr_line)
                rc = err_set(e, ERR_SYSTEM, "out of memory");
        } else if (nrows < PLOT_MAX_ROWS) {
            if (!(rows[nrows++] = strdup(line)))
                rc = err_set(e, ERR_SYSTEM, "out of memory");
        } else {
            rc = err_set(e, ERR_USAGE, "--plot: more than %d runs to draw", PLOT_MAX_ROWS);
        }
    }
    fclose(f);
    free(line);
    int c_input = -1, c_status = -1, c_tok = -1, c_sp = -1, c_part[6];
    static const char *const parts[6] = {"compute_us", "comm_us", "launch_us", "host_us",
                                         "wait_us", "unexplained_us"};
    if (!rc) {
        c_input = col_index(hdr, nh, "input");
        c_status = col_index(hdr, nh, "status");
        c_tok = col_index(hdr, nh, "tok_per_s");
        c_sp = col_index(hdr, nh, "speedup");
        for (int k = 0; k < 6; k++)
            c_part[k] = col_index(hdr, nh, parts[k]);
        if (c_input < 0 || c_status < 0 || c_tok < 0)
            rc = err_set(e, ERR_INPUT, "--plot: %s is not a sweep's csv", csv);
    }
    /* The varied dimensions: input (if several) and knob columns with more than one value. */
    int dims[PLOT_MAX_COLS], nd = 0;
    char *cells[PLOT_MAX_COLS];
    for (int c = c_input; !rc && c < c_status; c++) {
        char first[256] = "";
        int varied = 0;
        for (long i = 0; i < nrows && !varied; i++) {
            char buf[8192];
            snprintf(buf, sizeof buf, "%s", rows[i]);
            int n = csv_split(buf, cells, PLOT_MAX_COLS);
            if (c >= n)
                continue;
            if (i == 0)
                snprintf(first, sizeof first, "%s", cells[c]);
            else
                varied = strcmp(first, cells[c]) != 0;
        }
        if (varied)
            dims[nd++] = c;
    }
    if (!rc && (nd < 1 || nd > 2))
        rc = err_set(e, ERR_USAGE, "--plot draws one or two varied knobs; %s varies %d%s", grid,
                     nd, nd ? " (give the others one value with set lines)" : "");
    char title[512];
    if (!rc) {
        const char *gb = strrchr(grid, '/');
        if (nd == 1)
            snprintf(title, sizeof title, "collsim sweep %s: %ld runs over %s", gb ? gb + 1 : grid,
                     nrows, hdr[dims[0]]);
        else
            snprintf(title, sizeof title, "collsim sweep %s: %ld runs over %s x %s",
                     gb ? gb + 1 : grid, nrows, hdr[dims[0]], hdr[dims[1]]);
    }
    plot *p = rc ? NULL : plot_new(title, hdr[dims[0]], "");
    int pt = -1, ps = -1, pb = -1;
    if (!rc && !p)
        rc = err_set(e, ERR_SYSTEM, "out of memory");
    if (!rc && ((pt = plot_panel_kind(p, "tokens per second (higher is better)", PLOT_CATS, NULL,
                                      "tok/s", e)) < 0 ||
                (c_sp >= 0 && (ps = plot_panel_kind(p, "speedup (scenarios: over plain decode)", PLOT_CATS,
                                                    NULL, "speedup", e)) < 0) ||
                (pb = plot_panel_kind(p, "where a cycle goes (us)", PLOT_STACK, "", "us", e)) < 0))
        rc = ERR_SYSTEM;
    for (long i = 0; i < nrows && !rc; i++) {
        char buf[8192];
        snprintf(buf, sizeof buf, "%s", rows[i]);
        int n = csv_split(buf, cells, PLOT_MAX_COLS);
        if (n < nh || strcmp(cells[c_status], "ok"))
            continue;  /* a failed run has no numbers */
        char cat[256], lab[256], run[300];
        snprintf(cat, sizeof cat, "%s", cells[dims[0]]);
        if (nd == 2)
            snprintf(lab, sizeof lab, "%s=%s", hdr[dims[1]], cells[dims[1]]);
        else
            snprintf(lab, sizeof lab, "%s", "tok/s");
        snprintf(run, sizeof run, nd == 2 ? "%s %s" : "%s", cells[dims[0]],
                 nd == 2 ? cells[dims[1]] : "");
        char *end;
        double tok = strtod(cells[c_tok], &end);
        if (end != cells[c_tok])
            rc = plot_value(p, pt, cat, lab, tok, e);
        if (!rc && ps >= 0) {
            double sp = strtod(cells[c_sp], &end);
            if (end != cells[c_sp])
                rc = plot_value(p, ps, cat, lab, sp, e);
        }
        for (int k = 0; k < 6 && !rc; k++)
            if (c_part[k] >= 0) {
                char pn[32];
                snprintf(pn, sizeof pn, "%.*s", (int)(strlen(parts[k]) - 3), parts[k]);
                double v = strtod(cells[c_part[k]], &end);
                if (end != cells[c_part[k]])
                    rc = plot_value(p, pb, run, pn, v, e);
            }
    }
    if (!rc)
        rc = ofile_write(svg, plot_svg_writer, p, e);
    plot_free(p);
    for (long i = 0; i < nrows; i++)
        free(rows[i]);
    free(rows);
    free(hdr_line);
    return rc;
}

/* Rank 0 names each failed run listed, then sums up. */
static int report_failed(const sweep_grid *g, const sweep_summary *sum, const char *out,
                         err *e)
{
    for (int i = 0; i < sum->nlisted; i++) {
        sweep_point pt;
        sweep_grid_point(g, sum->failed_run[i], &pt);
        fprintf(stderr, "collsim: sweep: run %ld (%s %s", pt.run, sweep_kind_name(pt.kind),
                pt.input);
        for (int c = 0; c < sweep_grid_ncols(g); c++)
            if (pt.val[c])
                fprintf(stderr, " %s=%s", sweep_grid_col(g, c), pt.val[c]);
        fprintf(stderr, ") failed: %s\n", sum->failed_msg[i]);
    }
    if (sum->failed <= sum->nlisted)
        return err_set(e, ERR_CHECK, "sweep: %ld of %ld runs failed", sum->failed, sum->runs);
    return err_set(e, ERR_CHECK, "sweep: %ld of %ld runs failed (%d named above; every one is "
                   "a row with status failed%s%s)", sum->failed, sum->runs, sum->nlisted,
                   out ? " in " : "", out ? out : "");
}

int cmd_sweep(int argc, char **argv, err *e)
{
    args a;
    int rc = parse_args(argc, argv, &a, e);
    if (rc)
        return rc == CLI_HELP_SHOWN ? 0 : rc;
    if (a.keys)
        return list_keys();
    if ((rc = sweep_mpi_handoff(e)) != 0)
        return rc;
    /* Every rank checks the grid; only the first says what is wrong. */
    int quiet = sweep_mpi_env_rank() > 0;
    sweep_grid *g = NULL;
    sweep_whatif *w = sweep_whatif_new();
    sweep *s = NULL;
    sweep_mpi *m = NULL;
    sweep_runner r;
    char out_path[4096], jsonl_path[4096];   /* -o, --jsonl with links followed */
    if (!w)
        rc = err_set(e, ERR_SYSTEM, "out of memory");
    if (!rc)
        rc = sweep_grid_load(a.grid, &g, e);
    if (!rc) {
        sweep_whatif_runner(w, &r);
        rc = sweep_check(g, &r, e);
    }
    if (!rc && !a.jobs)
        a.jobs = getenv("OMPI_COMM_WORLD_SIZE") || getenv("PMIX_RANK") || getenv("PMI_RANK")
                     ? 1 : cores();
    if (!rc && (s = sweep_new(g, &r, (int)a.jobs, e)) == NULL)
        rc = e->code;
    if (!rc)
        rc = sweep_mpi_init(&m, e);
    if (rc) {
        if (quiet)
            e->msg[0] = '\0';
    } else {
        int rank0 = sweep_mpi_rank(m) == 0;
        progress p = {now_s(), now_s()};   /* first line after 0.2 s */
        /* -o and --jsonl through a symbolic link: the file it leads to. */
        if (a.out && !(rc = ofile_target(a.out, out_path, sizeof out_path, e)))
            a.out = out_path;
        if (!rc && a.jsonl && !(rc = ofile_target(a.jsonl, jsonl_path, sizeof jsonl_path, e)))
            a.jsonl = jsonl_path;
        sweep_opts o = {.out_path = a.out, .jsonl_path = a.jsonl, .stdout_fmt = a.cc.fmt,
                        .resume = a.resume, .stop_after = a.stop_after,
                        /* rows on a terminal show progress themselves */
                        .progress = rank0 && isatty(2) && (a.out || !isatty(1)) ? on_progress
                                                                               : NULL,
                        .progress_ctx = &p};
        sweep_summary sum;
        if (!rc)
            rc = sweep_exec(s, m, &o, &sum, e);
        if (!rc && rank0 && a.plot)
            rc = write_plot(a.out, a.grid, a.plot, e);
        if (!rc && rank0 && sum.failed > 0)
            rc = report_failed(g, &sum, a.out, e);
    }
    sweep_free(s);           /* workers first: they must not outlive the job */
    sweep_mpi_finish(m);
    sweep_whatif_free(w);
    sweep_grid_free(g);
    return rc;
}
