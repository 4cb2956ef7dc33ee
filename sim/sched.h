/* The engine's public face: a task graph run by discrete events over a flow
 * network. Links are directed resources with a capacity (bytes/s); a flow
 * task moves bytes over a list of links, sharing each link with the other
 * active flows by max-min fairness (progressive filling), optionally capped
 * by its own rate limit; it ends lat_ps after its last byte left. A delay
 * task just takes dur_ps. A task starts when all its dependencies have ended.
 * Time is integer picoseconds; ties are broken by insertion order, so runs
 * are deterministic. sim/ knows nothing about GPUs: tags and tracks are
 * opaque integers given meaning by models/. No globals: many scheds per
 * process are fine; one sched is not thread-safe. */
#ifndef SIM_SCHED_H
#define SIM_SCHED_H

#include <stdint.h>
#include <stdio.h>

#include "sim/err.h"

typedef int64_t sim_ps; /* picoseconds */
#define SIM_PS_PER_US 1000000LL

typedef struct sched sched;

/* Link capacity rule: called when the set of flows on a link changes, with
 * the tags of the flows now on it; returns the link's capacity in bytes/s
 * (e.g. an arbitration collapse when some tag pattern is present). Changes at
 * the same instant are batched: one call per link per instant, before the
 * re-solve; tags are in the flows' arrival order. NaN or < 0 counts as 0. */
typedef double sched_cap_fn(void *ctx, int link, const uint32_t *tags, int ntags,
                            double nominal_Bps);

sched *sched_new(void);                 /* NULL on out of memory */
void sched_free(sched *s);              /* NULL ok */

/* Add a directed link (cap_Bps finite, >= 0; 0 starves its flows); returns
 * its id (>= 0) or -1 on OOM. name is copied; NULL: named by the namer
 * (sched_link_namer) when its name is first asked for, "" without one. */
int sched_link(sched *s, double cap_Bps, const char *name);
/* Writes link's name into buf (n bytes, 160 at least), NUL-terminated. */
typedef void sched_name_fn(const void *ctx, int link, char *buf, size_t n);
/* Names the links added with no name; ctx must outlive s. A builder of many
 * links most runs never name (a topology's) makes no names up front. */
void sched_link_namer(sched *s, sched_name_fn *fn, const void *ctx);
int sched_nlinks(const sched *s);
/* Room for nlinks links in all at once (a builder that knows how many it
 * adds); 0, or -1 on OOM. */
int sched_reserve_links(sched *s, int nlinks);
/* Links the engine holds room for now (at least sched_nlinks). */
int sched_links_room(const sched *s);
const char *sched_link_name(const sched *s, int link);
void sched_link_rule(sched *s, int link, sched_cap_fn *fn, void *ctx);
/* Set a link's capacity later (while no flow has used it), e.g. once it is
 * known to be needed. */
void sched_link_cap(sched *s, int link, double cap_Bps);
/* Called once per run when a flow task with a tag other than 0 ends, with
 * that tag: no flow network or rule looks at the tag afterwards, so the
 * caller may recycle what it names (fn NULL: none; kept by sched_reset). */
typedef void sched_tag_fn(void *ctx, uint32_t tag);
void sched_on_flow_end(sched *s, sched_tag_fn *fn, void *ctx);

/* Tasks; each returns a task id (>= 0) or -1 on OOM. label must outlive the
 * sched (a literal or arena string); track groups tasks in the timeline. */
int sched_delay(sched *s, sim_ps dur_ps, int track, const char *label);
/* links[] is copied; rate_cap_Bps <= 0 means uncapped; bytes >= 0. A 0-byte
 * flow takes exactly lat_ps; one with no links moves at its cap (instantly if
 * uncapped). A link listed twice is crossed twice (takes twice the rate). */
int sched_flow(sched *s, const int *links, int nlinks, double bytes,
               double rate_cap_Bps, sim_ps lat_ps, uint32_t tag, int track,
               const char *label);
/* Weighted flow: on links[i] the flow consumes weights[i] x its rate (a
 * bundle of identical streams, or streams fanned out from one initiator
 * that advance together). weights == NULL means all 1; weights[i] > 0. */
int sched_flow_w(sched *s, const int *links, const double *weights, int nlinks,
                 double bytes, double rate_cap_Bps, sim_ps lat_ps, uint32_t tag,
                 int track, const char *label);
/* after starts only once before has ended. -1 on OOM. */
int sched_dep(sched *s, int before, int after);
/* A join: a delay of dur_ps (its task id, or -1 on OOM) that waits on
 * latency edges alone (sched_dep on it aborts). sched_dep_lat: join waits
 * for before's end plus lat_ps. The run is exactly that of the same graph
 * with, for each edge, a delay task of lat_ps labelled label (made when the
 * edge is) between before and join: every task's start and end, the
 * critical path and its sums, the order of every other event; only the
 * delays are not there (no task, no event of theirs but one per join). An
 * edge is made before before ends (the horizon's contract). 0, -1 on OOM. */
int sched_join(sched *s, sim_ps dur_ps, int track, const char *label);
int sched_dep_lat(sched *s, int before, int join, sim_ps lat_ps, const char *label);

/* Streaming: instead of adding the whole graph before the run, a generator
 * adds it as the run reaches it, so memory follows the tasks in flight. fn
 * is called once when the run starts and again whenever a task at or above
 * the horizon is about to end; each call adds some tasks (with sched_flow,
 * sched_delay, sched_dep) and may raise the horizon; it returns 1 while it
 * has more to add, 0 when done (the horizon is then everything), -1 on
 * failure (its own error reporting; sched_run then returns e's code).
 * Contract: sched_horizon(s, h) promises that every task below h has all
 * its dependents added already; then the run is exactly as if the whole
 * graph had been built first in the same order (a dependency on a task
 * that has already ended counts as met; a new task with nothing to wait
 * for starts at once). Only on a sched with no tasks (after sched_new or
 * sched_reset); such a graph runs once. */
typedef int sched_gen_fn(void *ctx, sched *s);
void sched_generate(sched *s, sched_gen_fn *fn, void *ctx);
void sched_horizon(sched *s, int task);
/* With a generator, ended tasks below the horizon are dropped as the run
 * goes (sched_start/sched_end and the timeline then know only the others)
 * unless kept (default 1; set 0 to drop: memory then follows the active and
 * pending tasks, not the whole graph). Without a generator nothing is
 * dropped. */
void sched_keep(sched *s, int on);

/* Run every task to completion (again, from time 0, if run before).
 * ERR_CHECK if a cycle or a starved flow (zero capacity) keeps tasks from
 * finishing, with the culprit named; ERR_SYSTEM on out of memory. */
int sched_run(sched *s, err *e);
sim_ps sched_start(const sched *s, int task);  /* -1: never started */
sim_ps sched_end(const sched *s, int task);    /* -1: never ended */
sim_ps sched_makespan(const sched *s);     /* latest end of any task */
int sched_ntasks(const sched *s);
uint64_t sched_events(const sched *s);     /* events processed by the last run */
/* Tasks' room allocated since sched_new, in tasks: a streamed run reuses
 * its ended chunks, so its room follows the tasks alive at once. */
size_t sched_task_room(const sched *s);
/* Bytes carried by a link in the last run (for utilisation reports). */
double sched_link_bytes(const sched *s, int link);
/* With sched_trace_links on, the time a link carried any flow in the last
 * run (its total rate above 0), in ps. */
sim_ps sched_link_busy_ps(const sched *s, int link);
/* Time a task would take alone: a delay's duration; for a flow, its bytes
 * at the rate it would get with no other flow and no rule (its cap, each
 * link's nominal capacity over its weight) plus its latency. */
sim_ps sched_alone_ps(const sched *s, int task);
/* The critical path of the last run, followed as it goes (so it needs no
 * task kept): from the task that ended last (ties: the lower id) back to
 * one without predecessors, each step to the predecessor that ended last
 * (ties: the lower id), each task counting from its start to its end.
 * sums[0]: delays; sums[1]: tasks in class 1 (fn(label) != 0, e.g.
 * barriers); sums[2]: flows' time alone (sched_alone_ps, at most their
 * time); sums[3]: the rest of flows' time (sharing). They add up to the
 * makespan. */
typedef int sched_class_fn(const char *label);
void sched_path_class(sched *s, sched_class_fn *fn);
void sched_path_sums(const sched *s, sim_ps sums[4]);
/* Drop all tasks (keep links, rules and memory) so the sched can be reused;
 * a timeline begun and not ended is dropped too. */
void sched_reset(sched *s);

/* Record each link's total rate over time in the next runs (default off);
 * needed for the link tracks of a timeline. Without a timeline the records
 * are kept (memory per rate change); with one they are written as they go.
 * on = 2: no records, only each link's busy time (sched_link_busy_ps). */
void sched_trace_links(sched *s, int on);
/* Timeline lanes: a task's lane key and note, opaque integers given meaning
 * by models/ (default 0, 0); set after the task is added, before it ends. */
void sched_task_lane(sched *s, int task, uint32_t lane, uint32_t note);
/* How a timeline names what it draws (all through ctx): lane() writes the
 * name of lane key `lane` of track into buf (n bytes) and returns its sort
 * key (>= 0; lanes sort by it, then by sub-lane); slice() the name of a task
 * from its label and note; span(), if set, the name of a slice over the
 * track's whole run (its first task's start to its last task's end), drawn
 * when the timeline ends on lane key span_lane (e.g. the kernel on its
 * stream). */
typedef int sched_lane_name_fn(void *ctx, int track, uint32_t lane, char *buf, size_t n);
typedef void sched_slice_name_fn(void *ctx, int track, const char *label, uint32_t note,
                                 char *buf, size_t n);
typedef void sched_span_name_fn(void *ctx, int track, char *buf, size_t n);
typedef struct sched_tl_names {
    sched_lane_name_fn *lane;
    sched_slice_name_fn *slice;
    sched_span_name_fn *span;    /* NULL: no span slices */
    uint32_t span_lane;
    void *ctx;                   /* must outlive the run */
} sched_tl_names;
/* Chrome-trace / Perfetto JSON of the next run, written as it goes
 * (docs/formats.md "Timelines", the layout of sim/json.h), so memory holds
 * lanes, not tasks: track k is process TL_PID_GPU(k) named track_names[k]
 * (the array must outlive the run; tasks with track < 0 or >= ntracks are
 * left out). Each task is written when it ends, on the first lane of its
 * track with its lane key whose last slice ended by its start (a new one,
 * "NAME #2", "#3", ... if none: slices never overlap); cat "transfer" (args
 * bytes, links) or "wait" (a delay). names NULL: one key, threads "lane 0",
 * "lane 1", ..., slices named by their labels. With sched_trace_links on,
 * each change of a link's rate is a counter (GB/s) in process TL_PID_LINKS
 * "links". Call before sched_run; ERR_SYSTEM on out of memory. */
int sched_timeline_begin(sched *s, FILE *f, const char *const *track_names, int ntracks,
                         const sched_tl_names *names, err *e);
/* Finish the timeline after sched_run (whether it succeeded or not) and
 * let it go; ERR_SYSTEM on write failure. A no-op without one. */
int sched_timeline_end(sched *s, err *e);

#endif
