/* Flow network: directed links with a capacity (bytes/s) shared by the
 * active flows crossing them, by max-min fairness with per-flow rate caps
 * (progressive filling, docs/model.md "Engine"). Arrivals and departures
 * only mark links dirty; flownet_solve then re-solves just the connected
 * components (flows linked by shared links) around the dirty links, brings
 * the remaining bytes of re-rated flows up to date, and keeps one completion
 * event per flow in the caller's evq (moved in place when its rate changes).
 * Knows nothing about tasks: a flow carries an opaque int32 "user". */
#ifndef SIM_FLOWNET_H
#define SIM_FLOWNET_H

#include <stdint.h>

#include "sim/evq.h"

/* The one tolerance for float comparisons in the engine (relative, about 50
 * ulps of a double): rates within it count as unchanged, remaining bytes
 * within it of the total as done, and a duration within it of an integer
 * picosecond rounds to it (so ceil stays exact below 1/(2 eps) ps = 50 s). */
#define FLOWNET_EPS 1e-14

/* Same signature as sched_cap_fn (sim/sched.h). */
typedef double flownet_cap_fn(void *ctx, int link, const uint32_t *tags, int ntags,
                              double nominal_Bps);

typedef struct flownet flownet;

flownet *flownet_new(void);      /* NULL on out of memory */
void flownet_free(flownet *n);   /* NULL ok */
/* Add a link of cap_Bps (finite, >= 0); returns its id or -1 on OOM. */
int flownet_add_link(flownet *n, double cap_Bps);
int flownet_nlinks(const flownet *n);
/* Room for n links in all, allocated at once (no growth while they are
 * added); 0, or -1 on OOM (nothing changed). */
int flownet_reserve_links(flownet *n, int nlinks);
/* Links the network holds room for now (at least flownet_nlinks). */
int flownet_links_room(const flownet *n);
/* Set the nominal capacity of a link no flow has used since the last reset. */
void flownet_set_cap(flownet *n, int link, double cap_Bps);
/* Capacity rule, called by flownet_solve for a link whose flow set changed. */
void flownet_set_rule(flownet *n, int link, flownet_cap_fn *fn, void *ctx);
double flownet_link_cap(const flownet *n, int link); /* current, after its rule */
double flownet_link_nominal(const flownet *n, int link); /* as created, before rules */
double flownet_link_bytes(const flownet *n, int link); /* carried by finished flows */
/* With recording on, the time the link's total rate was above 0 (ps), up to
 * its last fall to 0 (a run's last record of a link is 0). */
int64_t flownet_link_busy_ps(const flownet *n, int link);
/* Drop all flows (their events are the caller's to clear), byte counts and
 * rate records; links and rules stay. */
void flownet_reset(flownet *n);

/* Add a flow of bytes (> 0) over links[0..nlinks-1] (nlinks >= 1; the array
 * must stay valid until the flow finishes); cap_Bps <= 0 means uncapped.
 * Returns the flow id, or -1 on OOM. The flow has rate 0 until the next solve. */
int flownet_start(flownet *n, const int32_t *links, int nlinks, double bytes,
                  double cap_Bps, uint32_t tag, int32_t user);
/* Weighted: on links[k] the flow uses w[k] x its rate (w[k] > 0, finite;
 * w == NULL is all 1; the array must stay valid like links). */
int flownet_start_w(flownet *n, const int32_t *links, const double *w, int nlinks,
                    double bytes, double cap_Bps, uint32_t tag, int32_t user);
int flownet_dirty(const flownet *n);  /* 1 if a solve is pending */
/* Re-rate the components touched since the last solve, at time now_ps: each
 * flow's completion is (re)scheduled in q as an event (kind, arg = flow id),
 * or cancelled if its rate is 0. 0, or -1 on OOM. */
int flownet_solve(flownet *n, int64_t now_ps, evq *q, uint32_t kind);
/* The completion event of flow f was popped at now_ps: remove f, credit its
 * bytes to its links; returns its user. */
int32_t flownet_finish(flownet *n, int flow, int64_t now_ps);
int flownet_nactive(const flownet *n);
/* The active flow with the smallest user, or -1 if none (after a run: the
 * flows that can never finish). */
int flownet_first_active(const flownet *n);
int32_t flownet_flow_user(const flownet *n, int flow);
double flownet_flow_rate(const flownet *n, int flow);  /* bytes/s */
const int32_t *flownet_flow_links(const flownet *n, int flow, int *nlinks);

/* How the next bottleneck is found: 0 auto (by component shape), 1 a lazy
 * heap of link levels, 2 a scan of the links. Same rates; for tests. */
void flownet_method(flownet *n, int method);

/* Rate records: when on (default off), every change of a link's total rate
 * is logged as (time, link, bytes/s), in time order, for timelines; on = 2
 * logs nothing and keeps only each link's busy time (flownet_link_busy_ps). */
void flownet_record(flownet *n, int on);
size_t flownet_nrecords(const flownet *n);
void flownet_record_get(const flownet *n, size_t i, int64_t *time_ps, int *link,
                        double *rate_Bps);
/* With a sink (fn != NULL), records are handed to fn, in the same order,
 * once they are final (when a later time is recorded, or at
 * flownet_record_flush) and not kept: memory for one instant's records. */
typedef void flownet_rec_fn(void *ctx, int64_t time_ps, int link, double rate_Bps);
void flownet_record_sink(flownet *n, flownet_rec_fn *fn, void *ctx);
void flownet_record_flush(flownet *n);

/* Picoseconds to move bytes at rate_Bps: the exact quotient rounded up, or to
 * the nearest integer if within FLOWNET_EPS of it; -1 if rate is 0 or the
 * result does not fit in 2^62 ps. */
int64_t flownet_ticks(double bytes, double rate_Bps);
/* A duration of x ps (real) in whole ps by the same rule; 0 if x <= 0, -1 if
 * it does not fit in 2^62 ps. */
int64_t flownet_ceil_ps(double x);

/* Sub-picosecond remainders (docs/model.md "Tasks and time"): event times
 * are whole ps, a flow's exact end is not. flownet_head_start: flow f's data
 * began ahead_ps (0 <= ahead_ps < 1) before the time it was started at (its
 * predecessor's exact end); applied when it first gets a rate.
 * flownet_flow_late_ps: how far its completion event lies after its exact
 * end (0 <= late < 1), read before flownet_finish. */
void flownet_head_start(flownet *n, int flow, double ahead_ps);
double flownet_flow_late_ps(const flownet *n, int flow);

#endif
