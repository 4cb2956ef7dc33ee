/* Calibration candidates: the parameters a fit of point-to-point data may
 * move (validate/fit.h fits them), chosen from what the measured points
 * touch (the link classes on their routes, read, collapse, host, launch
 * and NCCL runtime keys), what each point's case looks like, and starting
 * values read from the data. collsim calibrate screens and fits them
 * (docs/calibration.md). A candidate array has at most CAND_MAX entries,
 * owned by the caller. */
#ifndef VALIDATE_CAND_H
#define VALIDATE_CAND_H

#include <stddef.h>
#include <stdint.h>

#include "models/topo/topo.h"
#include "sim/err.h"
#include "validate/calib_nccl.h"
#include "validate/fit.h"
#include "validate/meas.h"
#include "validate/points.h"

/* At most this many candidates (a point's link classes are bits of a uint64_t). */
enum { CAND_MAX = 64 };

typedef struct cand {
    char key[80];
    double topo_value;       /* the topology's value (after START); NaN when the
                                links of the class differ (no one value) */
    double start, lo, hi;    /* where the fit starts, and the key's domain */
    double kept;             /* its value when not fitted */
    int moved;               /* kept differs from the topology's: applied */
    int off;                 /* a mechanism the topology has off (0): reverts to 0 */
    int link;                /* a link-class key (bit in cand_point.cls) */
    int probed;              /* probed already at this start */
    int probe_felt, probe_row;   /* what the probe found (fit_probe) */
    int from_start;          /* START (--calib) names the key */
    const char *status;      /* "fitted" or why it was left out */
    char why[240];
    int active;              /* a candidate (not fixed, not refused by a fit) */
    int screened_out;        /* left out by the last screening */
} cand;

/* What calibrate needs to know of a point beyond pts: its case. */
typedef struct cand_point {
    int nflows;              /* flow rows of its case */
    int nsrc, ndst;          /* distinct GPUs sending / receiving */
    meas_op op;
    double bytes;            /* per flow */
    double bw_GBps;          /* measured: one flow's, or the case's total */
    int latency;             /* a `latency` row */
    uint64_t cls;            /* bit j: candidate j is a link class on its routes */
} cand_point;

/* Fill info[i] for every transfer point of p on t (launch points stay
 * zero); a link class is a bit of cls only for the c[0..nc-1] named. */
void cand_point_info(const pts *p, const topo *t, const cand *c, int nc, cand_point *info);
/* Append to c[0..*n-1] the candidates the points p and nccl touch on t, in
 * screening priority: link bandwidths, link latencies, read parameters,
 * collapse, host, launch, NCCL's runtime costs. ERR_USAGE past CAND_MAX. */
int cand_build(const topo *t, const pts *p, const calib_nccl *nccl, const cand_point *info,
               cand *c, int *n, err *e);
/* With the transfers on the transaction level (calibrate --engine tlp): the
 * root ports' ordering turnarounds (tlp_turn_ns for writes, tlp_turn_cpl_ns
 * for completions), where the topology has them or the data have the
 * pattern of a collapse. ERR_USAGE past CAND_MAX. */
int cand_build_tlp(const topo *t, const pts *p, const cand_point *info, cand *c, int *n,
                   err *e);
/* Starts read from the data into data[0..nc-1] (link latencies scaled to the
 * smallest measured latency when pred_start misses it by more than 25%, link
 * bandwidths raised to a single large flow's plateau); a description into
 * why. Returns 1 if any start differs from c[j].start. */
int cand_data_starts(const pts *p, const cand_point *info, const double *pred_start,
                     const cand *c, int nc, double *data, char *why, size_t nwhy);
/* The fit parameters of the active candidates into fp, their indices into
 * map (-1 terminated); returns how many. */
int cand_load_params(const cand *c, int nc, int *map, fit_param *fp);
/* Why a candidate without influence at the start was left out. */
const char *cand_no_influence_text(const cand *q);
/* q leaves the fit keeping value (moved if it is not the topology's); its
 * reason is fmt with one %s, arg. */
void cand_leave_out(cand *q, double value, const char *fmt, const char *arg);
/* The value a candidate the fit refused (fit_why why) keeps: zero for one
 * that ran to zero, the solution's (solved) for one without influence
 * there, else the topology's (0 for a rule the topology has off). */
double cand_refused_value(const cand *q, int why, double solved);

#endif
