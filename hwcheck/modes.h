/* hwcheck's modes. Each X_run parses its options (argv[0] is the mode name)
 * and runs on the visible GPUs; each X_measure does the work on an open
 * context and writes rows into an open output, so `all` can run every mode
 * on one context. The mode table itself is in hwcheck/main.c. */
#ifndef HWCHECK_MODES_H
#define HWCHECK_MODES_H

#include "hwcheck/gpu.h"
#include "hwcheck/opts.h"
#include "hwcheck/out.h"
#include "sim/err.h"

int coll_run(int argc, char **argv, err *e);   /* hwcheck/coll.c */
int p2p_run(int argc, char **argv, err *e);    /* hwcheck/xfer.c */
int flows_run(int argc, char **argv, err *e);  /* hwcheck/xfer.c */
int host_run(int argc, char **argv, err *e);   /* hwcheck/xfer.c */
int launch_run(int argc, char **argv, err *e); /* hwcheck/launch.c */
int replay_run(int argc, char **argv, err *e); /* hwcheck/replay.c */
int all_run(int argc, char **argv, err *e);    /* hwcheck/all.c */

/* Collective sweep of o on g into out; *wrong receives the total of wrong
 * elements (the caller turns it into ERR_CHECK). Notes go to out. */
int coll_measure(gpu_ctx *g, const opts *o, out_file *out, long long *wrong, err *e);
/* Transfers of one pattern (p2p, flows, host) into out; skips with a note
 * when the pattern needs more GPUs. */
int xfer_measure(gpu_ctx *g, const opts *o, const char *pattern, out_file *out, err *e);
int launch_measure(gpu_ctx *g, const opts *o, out_file *out, err *e);
/* This process's own host cost of a call, on GPU 0 (hwcheck coll's header
 * `host_probe`): the host time inside an empty kernel launch and inside a
 * one-rank NCCL group of one send and one receive to itself, medians of 5
 * rounds of 200 back to back, in us. The communicator is made and freed here. */
int launch_host_probe(gpu_ctx *g, double *launch_host_us, double *p2p1_host_us, err *e);
/* The same group's host time at any moment of a sweep (hwcheck coll's
 * `probe_us` column): open makes the one-rank communicator on GPU 0 and
 * connects it; run times `calls` groups back to back on GPU 0's stream
 * (drained after), *p2p1_host_us per group; free(NULL) is a no-op. */
typedef struct launch_probe launch_probe;
int launch_probe_open(gpu_ctx *g, launch_probe **out, err *e);
int launch_probe_run(gpu_ctx *g, launch_probe *p, int calls, double *p2p1_host_us, err *e);
void launch_probe_free(gpu_ctx *g, launch_probe *p);

#endif
