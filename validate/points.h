/* Measured points that the point-to-point model predicts: transfer cases
 * of p2p/flows/host sets (simulated with models/flows, as `collsim flows`
 * does) and launch overheads (compared with the topology's parameters).
 * Calibration fits to these points; validation reports their error. The
 * sets are borrowed and must outlive the points. */
#ifndef VALIDATE_POINTS_H
#define VALIDATE_POINTS_H

#include <stddef.h>
#include <stdint.h>

#include "models/topo/topo.h"
#include "sim/err.h"
#include "validate/meas.h"

typedef struct pts_point {
    const meas_set *set;
    long line;           /* the row it came from */
    int case_no;         /* index into the cases; -1 for a launch point */
    int flow;            /* flow within the case; -1 = the whole case; for a launch
                            point what it measures (PTS_LAUNCH ...) */
    double meas_us;      /* measured time */
    const char *label;   /* "pair 0>4", "same-uplink (2 flows)", "launch" */
    int ops;             /* a launch point's ncclSend/ncclRecv calls (nccl-p2p-K: 2K) */
    int comms;           /* communicators a launch point's group spans, one thread driving
                            them in turn (nccl-Ccomm-p2p-K: C; else 1) */
} pts_point;

/* What a launch point measures (its flow field): the parameter it maps to. */
enum {
    PTS_LAUNCH, PTS_GRAPH_NODE, PTS_COPY_ISSUE, PTS_FENCE_SYS, PTS_NCCL_HOST, PTS_NCCL_GROUP,
    PTS_NCCL_GRAPH, PTS_NKINDS
};

typedef struct pts pts;

/* Which transfer cases to keep (launch points are always kept). */
enum { PTS_MAX_SEL = 64 };
typedef struct pts_filter {
    int npatterns;                     /* 0 = every pattern */
    char patterns[PTS_MAX_SEL][32];
    int nsizes;                        /* 0 = every size (see lo/hi) */
    uint64_t sizes[PTS_MAX_SEL];       /* bytes per flow, exact */
    uint64_t lo, hi;                   /* range when nsizes == 0; 0..UINT64_MAX */
} pts_filter;

/* "h2d,d2h" and "4K,64K,1M" or "4K:16M" (either may be NULL) -> f;
 * ERR_USAGE naming the bad item. */
int pts_filter_parse(const char *patterns, const char *sizes, pts_filter *f, err *e);

/* Collect the points of sets[0..n-1] (kinds coll/replay are left out) for
 * topology t, keeping the cases f selects (f may be NULL). ERR_INPUT
 * "file:line: ..." when a row names a GPU or host the topology does not
 * have, or a case mixes ops or sizes. */
int pts_build(meas_set *const *sets, int n, const topo *t, const pts_filter *f, pts **out,
              err *e);
void pts_free(pts *p);                      /* NULL ok */
size_t pts_count(const pts *p);
const pts_point *pts_at(const pts *p, size_t i);
/* Transfer-op letters used ("w", "r", "c"), launch kinds, for choosing what
 * a fit can determine. */
int pts_has_op(const pts *p, meas_op op);
int pts_has_launch(const pts *p, const char *what);
/* 1 when the send/receive group rows hold at least two call counts (the
 * per-call cost is then separable from the group's). */
int pts_group_ops_vary(const pts *p);
int pts_has_host(const pts *p);
/* Whether a timed loop (an hwcheck transfer case) issues copies: its
 * iterations cost at least one copy_issue_ps per copy. */
int pts_has_loop_copies(const pts *p);
/* Bit i set if link i of t is on the route of some measured flow. */
int pts_link_used(const pts *p, int link);
/* Predicted time of every point on t (same node ids as at build):
 * pred_us[pts_count]. A case hwcheck timed as a loop (every pattern but
 * latency) is predicted as that loop runs (pts_loop_iter_ps). Errors from
 * the simulation. */
/* hwcheck's timed loop (xfer.c bw_case; docs/model.md "Timed loops"): one
 * host thread records a start event on each of the nf flows' streams
 * (event_record_ps each), issues n iterations of every flow's operation in
 * turn (a copy kernel: launch_ps + loop_issue_ps; a copy: copy_issue_ps),
 * records an end event on each stream, and flow i's time is its events'
 * interval / n. Each call's work reaches its stream as the call returns; a
 * stream runs its operations back to back, each taking t_ps (the transfer
 * alone, all flows at once). Flow i (0-based, issue order), with S = nf r,
 * I = its issue, P = nf I (an iteration's issues):
 *   first op issued   F = S + (i+1) I
 *   last op ends      L = max(F + n t, F + (n-1) P + t)
 *   end event         E = max(S + n P + (i+1) r, L)
 *   per iteration     (E - (i+1) r) / n
 * so host-bound it is P + (the last op's run or the events' records) / n,
 * device-bound t + F / n. */
double pts_loop_iter_ps(const topo_params *tp, int kernels, int nf, int i, int n, int64_t t_ps);
int pts_predict(const pts *p, const topo *t, double *pred_us, err *e);
/* The same with the transfer cases on the transaction-level engine
 * (models/tlp; window_ps as tlp_run). ERR_USAGE for a case it cannot run. */
int pts_predict_tlp(const pts *p, const topo *t, int64_t window_ps, double *pred_us, err *e);

#endif
