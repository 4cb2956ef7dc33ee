/* A pool of worker processes running numbered jobs for the caller. Job j is
 * run by fn(ctx, j, rec) in a worker forked from the caller (so it sees the
 * caller's memory as of the fork), which fills a fixed-size record that comes
 * back to the caller in completion order. Jobs go out in chunks (fewer as the
 * end nears); a worker that dies costs only the job that killed it, reported
 * with rec == NULL (the rest of its chunk is run again, one job at a time, so
 * fn must depend only on the job number), and is replaced. Even one worker is
 * a separate process, so a crashing job never takes the caller down. */
#ifndef SIM_BATCH_H
#define SIM_BATCH_H

#include <stddef.h>

#include "sim/err.h"

/* Run job into rec (rec_bytes, zeroed before the call). Runs in a worker:
 * it must not print, and what it changes in memory stays in that worker. */
typedef void batch_job_fn(void *ctx, long job, void *rec);
/* A job finished: rec is its record, or NULL if its worker died (why says
 * how, e.g. "worker killed by signal 9"). Nonzero stops the batch. */
typedef int batch_done_fn(void *ctx, long job, const void *rec, const char *why);

typedef struct batch batch;

/* Start workers (>= 1) running fn(fn_ctx, ...); fn_ctx is borrowed.
 * NULL with e set (ERR_SYSTEM) if a worker cannot be started. */
batch *batch_new(int workers, size_t rec_bytes, batch_job_fn *fn, void *fn_ctx, err *e);
/* Stop the workers (a job in flight is abandoned) and wait for them. NULL ok. */
void batch_free(batch *b);
int batch_workers(const batch *b);

/* Run jobs[0..njobs) (any order), calling done in this process once per job
 * as it finishes. Returns 0, done's nonzero value (the jobs in flight then are
 * abandoned), or ERR_SYSTEM if workers cannot be started. */
int batch_run(batch *b, const long *jobs, long njobs, batch_done_fn *done,
              void *done_ctx, err *e);
/* The same for the jobs first + k * stride, k < njobs, never listed (a grid
 * of 10^8 runs needs no array of them). */
int batch_run_range(batch *b, long first, long stride, long njobs, batch_done_fn *done,
                    void *done_ctx, err *e);

#endif
