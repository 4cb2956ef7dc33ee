/* Sweep: run every point of a grid (traces/sweep_grid.h) through a runner on
 * a pool of worker processes, on one machine or as one rank of an MPI job,
 * and write one row per run in grid order: a csv (through OUT.part, renamed
 * to OUT when complete, so an interrupted sweep leaves a valid prefix that
 * --resume continues), optionally json lines, or a report on stdout. Bytes
 * depend only on the grid and the runner, never on workers or ranks. */
#ifndef TRACES_SWEEP_H
#define TRACES_SWEEP_H

#include "sim/report.h"
#include "traces/sweep_grid.h"
#include "traces/sweep_mpi.h"

enum { SWEEP_MAX_METRICS = 12, SWEEP_MSG = 512 };

/* A result column: name (csv header) and digits after the point. */
typedef struct sweep_metric {
    const char *name;
    int prec;
} sweep_metric;

/* One run: the input (kind, path to open) with the knobs key[i]=value[i] in
 * order (the first nfixed from set lines, then the point's), into
 * metrics[0..nmetrics). Runs in a worker process; ctx is the runner's, per
 * worker. */
typedef int sweep_run_fn(void *ctx, sweep_kind kind, const char *path, int nfixed, int nknobs,
                         const char *const *key, const char *const *value, double *metrics,
                         err *e);
/* Check an input (key NULL) or one knob for inputs of kind before any run. */
typedef int sweep_check_fn(void *ctx, sweep_kind kind, const char *path, const char *key,
                           const char *value, err *e);

typedef struct sweep_runner {
    const sweep_metric *metrics;
    int nmetrics;             /* <= SWEEP_MAX_METRICS */
    sweep_run_fn *run;
    sweep_check_fn *check;    /* NULL: no checks */
    void *ctx;
} sweep_runner;

/* After each row written (rank 0): rows written of total, resumed of them. */
typedef void sweep_progress_fn(void *ctx, long written, long total, long resumed);

typedef struct sweep_opts {
    const char *out_path;     /* csv; NULL = stdout in stdout_fmt */
    const char *jsonl_path;   /* json lines too; NULL = none */
    report_format stdout_fmt;
    int resume;               /* continue OUT.part (or check a complete OUT) */
    long stop_after;          /* test hook: stop after this many new rows; 0 = no */
    sweep_progress_fn *progress;
    void *progress_ctx;
} sweep_opts;

enum { SWEEP_FAILED_LISTED = 20 };

typedef struct sweep_summary {
    long runs;                /* in the grid */
    long resumed;             /* rows already in OUT.part */
    long failed;              /* rows with status "failed", this time */
    int nlisted;              /* the first failures, in grid order */
    long failed_run[SWEEP_FAILED_LISTED];
    char failed_msg[SWEEP_FAILED_LISTED][SWEEP_MSG];
    int first_failed_code;    /* err code of the first failed run, 0 if none */
} sweep_summary;

typedef struct sweep sweep;

/* Check every input and knob of g with r->check; ERR_INPUT "grid:line: what". */
int sweep_check(const sweep_grid *g, const sweep_runner *r, err *e);
/* Fork `workers` (>= 1) processes that run points of g through r (both
 * borrowed, and must not change). Call before sweep_mpi_init. NULL + e. */
sweep *sweep_new(const sweep_grid *g, const sweep_runner *r, int workers, err *e);
void sweep_free(sweep *s);                                 /* NULL ok */
/* Run this rank's share of the grid (all of it when m has one rank); rank 0
 * gathers and writes. Returns 0 when every row is written (failed runs are
 * rows too: see sum), else ERR_SYSTEM/ERR_INPUT (bad OUT.part on --resume). */
int sweep_exec(sweep *s, sweep_mpi *m, const sweep_opts *o, sweep_summary *sum, err *e);

#endif
