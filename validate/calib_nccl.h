/* NCCL runtime-cost microbenchmarks for calibration: the rows of hwcheck
 * `coll` files that isolate NCCL's fixed costs (docs/formats.md "NCCL cost
 * microbenchmarks"): NCCL with the algorithm (Ring) and protocol forced, on
 * 2 real ranks, at sizes where NCCL runs one channel and that are at most
 * CALIB_NCCL_MAX_BYTES, eager or inside a CUDA graph. Such a row costs a
 * kernel start, 2(n-1) steps of a few bytes and, timed back to back, at
 * least the host cost of one call: it fits nccl_start_*_us and
 * nccl_call_us / nccl_graph_call_us, never an auto-selected collective. The
 * sets are borrowed and must outlive the points. */
#ifndef VALIDATE_CALIB_NCCL_H
#define VALIDATE_CALIB_NCCL_H

#include <stddef.h>
#include <stdint.h>

#include "models/coll_types.h"
#include "models/topo/topo.h"
#include "sim/err.h"
#include "validate/meas.h"

enum { CALIB_NCCL_MAX_BYTES = 65536 };

typedef struct calib_nccl_point {
    const meas_set *set;
    long line;
    double meas_us;
    coll_proto proto;
    int graph;
    uint64_t bytes;
    char label[64];        /* "allreduce ring(LL) 8 B graph" */
} calib_nccl_point;

typedef struct calib_nccl calib_nccl;

/* The points of the coll sets among sets[0..n-1] for topology t (other
 * kinds are skipped). ERR_USAGE naming the file and why when a coll set
 * does not isolate a cost (not NCCL, algorithm or protocol not forced, not
 * 2 real ranks, no row small enough on one channel); errors of the model. */
int calib_nccl_build(meas_set *const *sets, int n, const topo *t, calib_nccl **out, err *e);
void calib_nccl_free(calib_nccl *c);                 /* NULL ok */
size_t calib_nccl_count(const calib_nccl *c);
const calib_nccl_point *calib_nccl_at(const calib_nccl *c, size_t i);
/* Rows of the sets left out (larger, or on more than one channel). */
size_t calib_nccl_left_out(const calib_nccl *c);
/* Whether a point of protocol p, eager (graph 0) or in a graph, exists. */
int calib_nccl_has(const calib_nccl *c, coll_proto p, int graph);
/* Predicted time per iteration of every point on t: the collective's
 * simulated time, at least the host cost of one call (topo_nccl_issue_ps). */
int calib_nccl_predict(const calib_nccl *c, const topo *t, double *pred_us, err *e);

#endif
