/* The engine: tasks in flat arrays, each with a linked list of successor
 * records (8 bytes per dependency, newest first, built as dependencies are
 * added), an event queue (sim/evq) and a flow network (sim/flownet). A run
 * counts predecessors, starts every task without any at time 0; ending a
 * task releases its successors (newest dependency first), which start at
 * once (so a task starts at the latest end of its predecessors). Flow completions and task
 * ends are events; the flow network is re-solved once per distinct event
 * time, after every event of that time, so simultaneous arrivals and
 * departures cost one re-solve. Tasks that never end are reported: flows with
 * no bandwidth first, else a dependency cycle (one is traced and named).
 * Nothing is allocated per task or per event in the loop: arrays grow by
 * doubling and are kept by sched_reset for the next run. */
#include "sim/sched.h"

#include <inttypes.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "sim/arena.h"
#include "sim/evq.h"
#include "sim/flownet.h"
#include "sim/json.h"

enum { EV_FLOW_DONE = 1, EV_TASK_END = 2, EV_JOIN = 3 };
enum { NL_JOIN = -2 }; /* nlinks of a join: a delay that waits on edges alone */
enum { TCHUNK_BITS = 9, TCHUNK = 1 << TCHUNK_BITS, RBLOCK = 1 << 14 };

struct task {
    sim_ps start_ps, end_ps; /* -1 until started / ended */
    sim_ps lat_ps;           /* flow: latency after the last byte; delay: duration */
    double bytes, cap_Bps;
    const char *label;
    const int32_t *links;    /* flow: its link list, in a refs block */
    const double *w;         /* weight of each link, NULL = all 1 */
    int32_t nlinks;          /* -1 for a delay */
    uint32_t tag;
    int32_t track;
    int32_t succ;            /* its latest dependency record, -1 none */
    int32_t npred;           /* run: unfinished predecessors */
    int32_t crit;            /* run: its predecessor that ended last (ties: lower id), -1 */
    sim_ps crit_ps;          /* when that one ended */
    sim_ps acc[4];           /* run: critical path up to its end (sched_path_sums) */
    double frac_ps;          /* run, in [0, 1): until it starts, how far its exact start
                                precedes its start; then how far its end follows its
                                exact end (the sub-ps remainder carried along) */
    uint32_t lane, note;     /* timeline: its lane key and note (sched_task_lane) */
};

struct dep {
    int32_t after;           /* the task that waits; <= -2: edge -2 - after */
    int32_t next;            /* next record of the same predecessor (or free), -1 */
};

/* A latency edge (sched_dep_lat): its join waits for its predecessor's end
 * plus lat_ps, as it would for a delay task of lat_ps labelled label
 * between them. key orders edges as those delays' ids would (creation). */
struct ledge {
    int32_t join;            /* the join that waits; next free record when free */
    int32_t key;
    sim_ps lat_ps;
    const char *label;
};

/* Link lists of flows live in blocks that never move (the flow network
 * keeps pointers into them while a flow runs); streaming frees a block once
 * every task using it is recycled. */
struct rblock {
    int32_t *links;
    double *w;               /* allocated on the first weighted flow */
    size_t cap, used;
    size_t last_task;        /* highest task id with refs here */
};

struct sched {
    struct task **chunk;     /* task id >> TCHUNK_BITS -> TCHUNK tasks */
    size_t nchunk_cap;
    size_t nchunk_made;      /* chunks allocated (sched_task_room) */
    size_t ntasks;           /* ids handed out */
    struct task *spare;      /* recycled chunks kept for reuse, linked through
                                their first bytes (spare_next) */
    struct rblock *blocks;   /* [bhead, nblocks) live, the last one current */
    size_t bhead, nblocks, blocks_cap;
    struct dep *deps;        /* successor lists, linked newest first */
    size_t ndeps, deps_cap;  /* records handed out (below ndeps) */
    int32_t dep_free;        /* free list of records (streaming), -1 */
    struct ledge *ledges;    /* latency edges (sched_dep_lat) */
    size_t nledges, ledges_cap;
    int32_t ledge_free;      /* free list of edges (streaming), -1 */
    int32_t ledge_keys;      /* edges made since the reset */
    /* streaming (sched_generate) */
    sched_gen_fn *gen;
    void *gen_ctx;
    int gen_more;            /* the generator may emit more */
    int gen_failed;
    int keep;                /* keep ended tasks (sched_keep) */
    int running;
    size_t horizon;          /* tasks below have all their dependents */
    size_t lo;               /* tasks below are recycled */
    /* run state */
    size_t nended;
    uint64_t events;
    sim_ps makespan, now;
    evq *q;
    flownet *net;
    /* the timeline being written (sched_timeline_begin), NULL none */
    struct tlw *tlw;
    /* tags given back as their flows end (sched_on_flow_end) */
    sched_tag_fn *tag_fn;
    void *tag_ctx;
    /* critical path, followed as the run goes (sched_path_sums) */
    sched_class_fn *class_fn;
    int32_t path_task;
    sim_ps path_end, path[4];
    /* links */
    arena *names;
    const char **link_names;   /* NULL: named by namer when first asked */
    size_t link_names_cap;
    sched_name_fn *namer;
    const void *namer_ctx;
};

static inline struct task *T(const sched *s, size_t id)
{
    return &s->chunk[id >> TCHUNK_BITS][id & (TCHUNK - 1)];
}

/* The recycled chunk after c (sched.spare's list). */
static struct task *spare_next(struct task *c)
{
    struct task *next;
    memcpy(&next, c, sizeof next);
    return next;
}

static void tlw_free(sched *s);
static void tlw_task(sched *s, int32_t t, sim_ps now);

static int grow(void *arr, size_t *cap, size_t need, size_t sz)
{
    if (need <= *cap)
        return 0;
    size_t ncap = *cap ? *cap : 64;
    while (ncap < need)
        ncap *= 2;
    if (ncap > SIZE_MAX / sz)
        return -1;
    void *p = realloc(*(void **)arr, ncap * sz);
    if (!p)
        return -1;
    *(void **)arr = p;
    *cap = ncap;
    return 0;
}

sched *sched_new(void)
{
    sched *s = calloc(1, sizeof(*s));
    if (!s)
        return NULL;
    s->dep_free = -1;
    s->ledge_free = -1;
    s->keep = 1;
    s->q = evq_new();
    s->net = flownet_new();
    s->names = arena_new();
    if (!s->q || !s->net || !s->names) {
        sched_free(s);
        return NULL;
    }
    return s;
}

void sched_free(sched *s)
{
    if (!s)
        return;
    for (size_t c = 0; c < s->nchunk_cap; c++)
        free(s->chunk[c]);
    free(s->chunk);
    while (s->spare) {
        struct task *next = spare_next(s->spare);
        free(s->spare);
        s->spare = next;
    }
    for (size_t b = s->bhead; b < s->nblocks; b++) {
        free(s->blocks[b].links);
        free(s->blocks[b].w);
    }
    free(s->blocks);
    free(s->deps);
    free(s->ledges);
    tlw_free(s);
    evq_free(s->q);
    flownet_free(s->net);
    arena_free(s->names);
    free(s->link_names);
    free(s);
}

/* --- building ------------------------------------------------------------ */

int sched_link(sched *s, double cap_Bps, const char *name)
{
    int n = flownet_nlinks(s->net);
    if (grow(&s->link_names, &s->link_names_cap, (size_t)n + 1, sizeof(char *)))
        return -1;
    const char *copy = name || !s->namer ? arena_strdup(s->names, name ? name : "") : NULL;
    if (!copy && (name || !s->namer))
        return -1;
    int id = flownet_add_link(s->net, cap_Bps);
    if (id < 0)
        return -1;
    s->link_names[id] = copy;
    return id;
}

int sched_nlinks(const sched *s) { return flownet_nlinks(s->net); }

int sched_links_room(const sched *s) { return flownet_links_room(s->net); }

int sched_reserve_links(sched *s, int nlinks)
{
    if (nlinks < 0 || grow(&s->link_names, &s->link_names_cap, (size_t)nlinks, sizeof(char *)))
        return -1;
    return flownet_reserve_links(s->net, nlinks);
}

void sched_link_namer(sched *s, sched_name_fn *fn, const void *ctx)
{
    s->namer = fn;
    s->namer_ctx = ctx;
}

/* A link's name, made by the namer the first time (the names are logically
 * const); "" if that runs out of memory. */
static const char *name_of(const sched *sc, int link)
{
    sched *s = (sched *)sc;
    if (!s->link_names[link]) {
        char buf[160];
        s->namer(s->namer_ctx, link, buf, sizeof buf);
        s->link_names[link] = arena_strdup(s->names, buf);
    }
    return s->link_names[link] ? s->link_names[link] : "";
}

const char *sched_link_name(const sched *s, int link)
{
    ASSERTF(link >= 0 && link < sched_nlinks(s), "link %d of %d", link, sched_nlinks(s));
    return name_of(s, link);
}

void sched_link_rule(sched *s, int link, sched_cap_fn *fn, void *ctx)
{
    flownet_set_rule(s->net, link, fn, ctx);
}

void sched_link_cap(sched *s, int link, double cap_Bps)
{
    ASSERTF(link >= 0 && link < sched_nlinks(s), "link %d of %d", link, sched_nlinks(s));
    flownet_set_cap(s->net, link, cap_Bps);
}

void sched_on_flow_end(sched *s, sched_tag_fn *fn, void *ctx)
{
    s->tag_fn = fn;
    s->tag_ctx = ctx;
}

static int new_task(sched *s)
{
    size_t id = s->ntasks, c = id >> TCHUNK_BITS;
    size_t had = s->nchunk_cap;
    if (id >= INT32_MAX || grow(&s->chunk, &s->nchunk_cap, c + 1, sizeof(struct task *)))
        return -1;
    for (size_t i = had; i < s->nchunk_cap; i++)
        s->chunk[i] = NULL;
    if (!s->chunk[c]) {
        if (s->spare) {
            s->chunk[c] = s->spare;
            s->spare = spare_next(s->spare);
        } else if (!(s->chunk[c] = malloc(sizeof(struct task) * TCHUNK))) {
            return -1;
        } else {
            s->nchunk_made++;
        }
    }
    T(s, id)->succ = -1;
    T(s, id)->npred = 0;
    s->ntasks++;
    return (int)id;
}

int sched_delay(sched *s, sim_ps dur_ps, int track, const char *label)
{
    ASSERTF(dur_ps >= 0, "delay of %" PRId64 " ps", dur_ps);
    int id = new_task(s);
    if (id < 0)
        return -1;
    struct task *k = T(s, (size_t)id);
    *k = (struct task){-1, -1, dur_ps, 0, 0, label, NULL, NULL, -1, 0, track, -1, 0, -1, -1, {0}, 0, 0, 0};
    return id;
}

int sched_flow(sched *s, const int *links, int nlinks, double bytes,
               double rate_cap_Bps, sim_ps lat_ps, uint32_t tag, int track,
               const char *label)
{
    return sched_flow_w(s, links, NULL, nlinks, bytes, rate_cap_Bps, lat_ps, tag, track,
                        label);
}

/* Room for n refs (and their weights if weighted) in the current block. */
static struct rblock *refs_room(sched *s, size_t n, int weighted)
{
    struct rblock *b = s->nblocks > s->bhead ? &s->blocks[s->nblocks - 1] : NULL;
    if (!b || b->used + n > b->cap) {
        if (s->bhead > 0 && s->bhead == s->nblocks) /* all freed: restart the list */
            s->bhead = s->nblocks = 0;
        if (grow(&s->blocks, &s->blocks_cap, s->nblocks + 1, sizeof(struct rblock)))
            return NULL;
        size_t cap = n > RBLOCK ? n : RBLOCK;
        b = &s->blocks[s->nblocks];
        *b = (struct rblock){malloc(cap * sizeof(int32_t)), NULL, cap, 0, 0};
        if (!b->links)
            return NULL;
        s->nblocks++;
    }
    if (weighted && !b->w && !(b->w = malloc(b->cap * sizeof(double))))
        return NULL;
    return b;
}

int sched_flow_w(sched *s, const int *links, const double *weights, int nlinks,
                 double bytes, double rate_cap_Bps, sim_ps lat_ps, uint32_t tag,
                 int track, const char *label)
{
    ASSERTF(nlinks >= 0 && bytes >= 0 && isfinite(bytes) && lat_ps >= 0,
            "flow of %g bytes, %d links, latency %" PRId64 " ps", bytes, nlinks, lat_ps);
    int nl = sched_nlinks(s);
    for (int k = 0; k < nlinks; k++)
        ASSERTF(links[k] >= 0 && links[k] < nl, "link %d of %d", links[k], nl);
    int weighted = 0;
    for (int k = 0; weights && k < nlinks; k++) {
        ASSERTF(weights[k] > 0 && isfinite(weights[k]), "weight %g on link %d", weights[k],
                links[k]);
        weighted |= weights[k] != 1.0;
    }
    struct rblock *b = refs_room(s, (size_t)nlinks, weighted);
    if (!b)
        return -1;
    int id = new_task(s);
    if (id < 0)
        return -1;
    int32_t *l = b->links + b->used;
    double *w = weighted ? b->w + b->used : NULL;
    for (int k = 0; k < nlinks; k++) {
        l[k] = links[k];
        if (w)
            w[k] = weights[k];
    }
    b->used += (size_t)nlinks;
    b->last_task = (size_t)id;
    double cap = isfinite(rate_cap_Bps) && rate_cap_Bps > 0 ? rate_cap_Bps : 0;
    *T(s, (size_t)id) =
        (struct task){-1, -1, lat_ps, bytes, cap, label, l, w, nlinks, tag, track, -1, 0, -1, -1, {0}, 0, 0, 0};
    return id;
}

/* A successor record of task a: after (a task, or -2 - edge). 0, -1 OOM. */
static int add_succ(sched *s, struct task *a, int32_t after)
{
    int32_t d = s->dep_free;
    if (d >= 0) {
        s->dep_free = s->deps[d].next;
    } else {
        if (s->ndeps >= INT32_MAX || (s->ndeps == s->deps_cap &&
                                      grow(&s->deps, &s->deps_cap, s->ndeps + 1,
                                           sizeof(struct dep))))
            return -1;
        d = (int32_t)s->ndeps++;
    }
    s->deps[d] = (struct dep){after, a->succ};
    a->succ = d;
    return 0;
}

int sched_dep(sched *s, int before, int after)
{
    ASSERTF(before >= 0 && (size_t)before < s->ntasks && after >= 0 &&
                (size_t)after < s->ntasks && (size_t)after >= s->lo,
            "dependency %d -> %d with %zu tasks (%zu recycled)", before, after, s->ntasks,
            s->lo);
    ASSERTF(T(s, (size_t)after)->nlinks != NL_JOIN, "task %d is a join: it waits on edges alone",
            after);
    /* Added during a run after its predecessor ended (recycled ones have):
     * already met. */
    if (s->running && ((size_t)before < s->lo || T(s, (size_t)before)->end_ps >= 0))
        return 0;
    if (add_succ(s, T(s, (size_t)before), after))
        return -1;
    T(s, (size_t)after)->npred++;
    return 0;
}

int sched_join(sched *s, sim_ps dur_ps, int track, const char *label)
{
    int id = sched_delay(s, dur_ps, track, label);
    if (id >= 0)
        T(s, (size_t)id)->nlinks = NL_JOIN;
    return id;
}

int sched_dep_lat(sched *s, int before, int join, sim_ps lat_ps, const char *label)
{
    ASSERTF(before >= 0 && (size_t)before < s->ntasks && join >= 0 &&
                (size_t)join < s->ntasks && (size_t)join >= s->lo && lat_ps >= 0,
            "edge %d -> %d (%" PRId64 " ps) with %zu tasks (%zu recycled)", before, join,
            lat_ps, s->ntasks, s->lo);
    struct task *kb = T(s, (size_t)before), *kj = T(s, (size_t)join);
    ASSERTF(kj->nlinks == NL_JOIN, "task %d is not a join (sched_join)", join);
    /* A delay task in its place would start at once, out of the order of
     * the tasks it was made among: the horizon's contract rules it out. */
    ASSERTF(!s->running || ((size_t)before >= s->lo && kb->end_ps < 0),
            "edge from task %d, which has ended", before);
    ASSERTF(s->ledge_keys < INT32_MAX, "%d edges", s->ledge_keys);
    int32_t e = s->ledge_free;
    if (e >= 0) {
        s->ledge_free = s->ledges[e].join;
    } else {
        if (s->nledges >= INT32_MAX - 2 ||
            (s->nledges == s->ledges_cap &&
             grow(&s->ledges, &s->ledges_cap, s->nledges + 1, sizeof(struct ledge))))
            return -1;
        e = (int32_t)s->nledges++;
    }
    if (add_succ(s, kb, -2 - e)) {
        s->ledges[e].join = s->ledge_free;
        s->ledge_free = e;
        return -1;
    }
    s->ledges[e] = (struct ledge){join, s->ledge_keys++, lat_ps, label};
    kj->npred++;
    return 0;
}

void sched_generate(sched *s, sched_gen_fn *fn, void *ctx)
{
    ASSERTF(s->ntasks == 0, "sched_generate with %zu tasks already added", s->ntasks);
    s->gen = fn;
    s->gen_ctx = ctx;
    s->gen_more = fn != NULL;
    s->horizon = 0;
}

void sched_horizon(sched *s, int task)
{
    ASSERTF(task >= 0 && (size_t)task <= s->ntasks, "horizon %d with %zu tasks", task,
            s->ntasks);
    if ((size_t)task > s->horizon)
        s->horizon = (size_t)task;
}

void sched_keep(sched *s, int on) { s->keep = on; }

void sched_trace_links(sched *s, int on) { flownet_record(s->net, on); }

void sched_reset(sched *s)
{
    /* Keep the first chunk and the first refs block for the next graph. */
    for (size_t c = 1; c < s->nchunk_cap; c++) {
        free(s->chunk[c]);
        s->chunk[c] = NULL;
    }
    if (s->nchunk_cap && !s->chunk[0] && s->spare) {
        s->chunk[0] = s->spare;
        s->spare = spare_next(s->spare);
    }
    size_t keep = s->nblocks > s->bhead && s->blocks[s->bhead].cap == RBLOCK ? 1 : 0;
    for (size_t b = s->bhead + keep; b < s->nblocks; b++) {
        free(s->blocks[b].links);
        free(s->blocks[b].w);
    }
    if (keep) {
        s->blocks[0] = s->blocks[s->bhead];
        s->blocks[0].used = 0;
        s->blocks[0].last_task = 0;
    }
    s->bhead = 0;
    s->nblocks = keep;
    s->ntasks = s->ndeps = s->nended = 0;
    s->dep_free = -1;
    s->nledges = 0;
    s->ledge_free = -1;
    s->ledge_keys = 0;
    s->gen = NULL;
    s->gen_ctx = NULL;
    s->gen_more = s->gen_failed = s->running = 0;
    s->horizon = s->lo = 0;
    s->events = 0;
    s->makespan = 0;
    tlw_free(s);
    evq_clear(s->q);
    flownet_reset(s->net);
}

/* --- running ------------------------------------------------------------- */

static int oom(err *e) { return err_set(e, ERR_SYSTEM, "scheduler: out of memory"); }

/* The task a successor record names (an edge's join). */
static int32_t succ_task(const sched *s, int32_t after)
{
    return after >= 0 ? after : s->ledges[-2 - after].join;
}

/* Count each task's predecessors from the successor lists (a static graph,
 * which may be run again). */
static void count_preds(sched *s)
{
    for (size_t t = 0; t < s->ntasks; t++)
        T(s, t)->npred = 0;
    for (size_t t = 0; t < s->ntasks; t++)
        for (int32_t d = T(s, t)->succ; d >= 0; d = s->deps[d].next)
            T(s, (size_t)succ_task(s, s->deps[d].after))->npred++;
}

static int start_task(sched *s, int32_t t, sim_ps now)
{
    struct task *k = T(s, (size_t)t);
    k->start_ps = now;
    sim_ps end;
    if (k->nlinks < 0 || k->bytes <= 0) {  /* whole ps: the remainder carries over */
        end = now + k->lat_ps;
    } else if (k->nlinks == 0) {  /* no links: only its own cap limits it */
        double x = k->cap_Bps > 0 ? k->bytes / k->cap_Bps * 1e12 - k->frac_ps : 0;
        int64_t d = flownet_ceil_ps(x);
        ASSERTF(d >= 0, "task %d: %g bytes at %g B/s overflow", t, k->bytes, k->cap_Bps);
        double late = (double)d - x;
        k->frac_ps = late > 0 && late < 1 ? late : 0;
        end = now + d + k->lat_ps;
    } else {
        int f = flownet_start_w(s->net, k->links, k->w, k->nlinks, k->bytes, k->cap_Bps,
                                k->tag, t);
        if (f >= 0 && k->frac_ps > 0)
            flownet_head_start(s->net, f, k->frac_ps);
        return f < 0 ? -1 : 0;
    }
    return evq_push(s->q, end, EV_TASK_END, t) < 0 ? -1 : 0;
}

/* Ask the generator for more tasks once; new tasks whose predecessors have
 * all ended start now (in id order). -1 on failure (s->gen_failed if the
 * generator's). */
static int pull(sched *s, sim_ps now)
{
    size_t from = s->ntasks, h = s->horizon;
    int rc = s->gen(s->gen_ctx, s);
    if (rc < 0) {
        s->gen_failed = 1;
        return -1;
    }
    if (rc == 0) {
        s->gen_more = 0;
        s->horizon = SIZE_MAX;
    }
    ASSERTF(rc == 0 || s->ntasks > from || s->horizon > h,
            "task generator made no progress at task %zu", from);
    for (size_t t = from; t < s->ntasks; t++)
        if (T(s, t)->npred == 0 && start_task(s, (int32_t)t, now))
            return -1;
    return 0;
}

/* Streaming: drop ended tasks from the bottom while every dependent of
 * theirs is known, with the chunks and refs blocks they alone used. */
static void recycle(sched *s)
{
    size_t lo = s->lo;
    while (lo < s->ntasks && lo < s->horizon && T(s, lo)->end_ps >= 0)
        lo++;
    for (size_t c = s->lo >> TCHUNK_BITS; c < lo >> TCHUNK_BITS; c++) {
        memcpy(s->chunk[c], &s->spare, sizeof s->spare);
        s->spare = s->chunk[c];
        s->chunk[c] = NULL;
    }
    s->lo = lo;
    while (s->bhead + 1 < s->nblocks && s->blocks[s->bhead].last_task < lo) {
        free(s->blocks[s->bhead].links);
        free(s->blocks[s->bhead].w);
        s->bhead++;
    }
}

static void path_end(sched *s, int32_t t, sim_ps now);

/* k, ended at now, releases edge e: its join sees what the end of a delay
 * task of the edge's latency (k its one predecessor) would have shown it at
 * now + lat, the edge's arrival: k's exact-start remainder, k's path with
 * the wait added in the delay's class (path_end), and the edge's key for
 * its id. The join's start is kept as the latest arrival (ties: the lowest
 * key, the least remainder), whatever order the releases come in, which is
 * what the delays' ends in time order leave. Its one event sits where the
 * latest arrival's delay would have ended: each release takes one sequence
 * number, as that delay's end event did, and moves the event there when it
 * arrives no earlier than the event (a later sequence at the same time is
 * popped later). An event popped while releases are still due does nothing
 * (as that delay's end would have done but count), and the next release
 * pushes it anew. */
static int release_edge(sched *s, int32_t e, const struct task *k, sim_ps now)
{
    const struct ledge *l = &s->ledges[e];
    struct task *ku = T(s, (size_t)l->join);
    sim_ps t = now + l->lat_ps;
    int later = ku->crit < 0 || t > ku->crit_ps, same = !later && t == ku->crit_ps;
    if (later || (same && k->frac_ps < ku->frac_ps))
        ku->frac_ps = k->frac_ps;
    if (later || (same && l->key < ku->crit)) {
        ku->crit = l->key;
        ku->crit_ps = t;
        memcpy(ku->acc, k->acc, sizeof ku->acc);
        ku->acc[s->class_fn && s->class_fn(l->label) ? 1 : 0] += l->lat_ps;
    }
    int32_t ev = (int32_t)ku->tag - 1;
    if (ev < 0) {
        if ((ev = evq_push(s->q, t, EV_JOIN, l->join)) < 0)
            return -1;
        ku->tag = (uint32_t)ev + 1;
    } else if (t >= evq_time_ps(s->q, ev) ? evq_move(s->q, ev, t) : evq_skip(s->q)) {
        return -1;
    }
    ku->npred--;
    return 0;
}

static int end_task(sched *s, int32_t t, sim_ps now)
{
    /* Every dependent of t must exist before t releases them. */
    while (s->gen_more && (size_t)t >= s->horizon)
        if (pull(s, now))
            return -1;
    struct task *k = T(s, (size_t)t);
    k->end_ps = now;
    if (now > s->makespan)
        s->makespan = now;
    s->nended++;
    path_end(s, t, now);
    if (s->tlw)
        tlw_task(s, t, now);
    if (s->tag_fn && k->nlinks >= 0 && k->tag != 0)
        s->tag_fn(s->tag_ctx, k->tag);
    int32_t last = -1;
    for (int32_t d = k->succ; d >= 0; d = s->deps[d].next) {
        int32_t u = s->deps[d].after;
        last = d;
        if (u < 0) {
            int32_t e = -2 - u;
            if (release_edge(s, e, k, now))
                return -1;
            if (!s->keep && s->gen) { /* spent */
                s->ledges[e].join = s->ledge_free;
                s->ledge_free = e;
            }
            continue;
        }
        struct task *ku = T(s, (size_t)u);
        /* u's exact start: the latest exact end (now - frac) among its
         * predecessors; of those ending at now, the one with least frac. */
        if (ku->crit < 0 || now > ku->crit_ps || k->frac_ps < ku->frac_ps)
            ku->frac_ps = k->frac_ps;
        /* Ends come in time order: t is u's critical predecessor unless an
         * earlier one ended at the same time with a lower id. */
        if (ku->crit < 0 || now > ku->crit_ps || t < ku->crit) {
            ku->crit = t;
            ku->crit_ps = now;
            memcpy(ku->acc, k->acc, sizeof ku->acc);
        }
        if (--ku->npred == 0 && start_task(s, u, now))
            return -1;
    }
    if (!s->keep && s->gen) {
        if (last >= 0) { /* its records are spent */
            s->deps[last].next = s->dep_free;
            s->dep_free = k->succ;
            k->succ = -1;
        }
        recycle(s);
    }
    return 0;
}

static const char *label_of(const sched *s, int32_t t)
{
    return T(s, (size_t)t)->label ? T(s, (size_t)t)->label : "";
}

/* Tasks never started: walk back through not-ended predecessors (each has
 * one, or it would have started) until a task repeats: that is a cycle.
 * Recycled tasks (below s->lo) have all ended and play no part. */
static int report_cycle(sched *s, err *e)
{
    size_t n = s->ntasks, left = n - s->nended, lo = s->lo, m = n - lo;
    int32_t *pred = malloc(m * sizeof(int32_t)), *seen = malloc(m * sizeof(int32_t));
    if (!pred || !seen) {
        free(pred);
        free(seen);
        return oom(e);
    }
    for (size_t i = 0; i < m; i++)
        pred[i] = seen[i] = -1;
    for (size_t a = lo; a < n; a++)
        for (int32_t d = T(s, a)->succ; d >= 0; d = s->deps[d].next) {
            int32_t u = succ_task(s, s->deps[d].after);
            if (T(s, a)->end_ps < 0 && T(s, (size_t)u)->start_ps < 0)
                pred[(size_t)u - lo] = (int32_t)a;
        }
    size_t t0 = lo;
    while (t0 < n && T(s, t0)->start_ps >= 0)
        t0++;
    int32_t t = t0 < n ? (int32_t)t0 : -1;
    int32_t step = 0;
    while (t >= 0 && seen[(size_t)t - lo] < 0) {
        seen[(size_t)t - lo] = step++;
        t = pred[(size_t)t - lo];
    }
    free(seen);
    if (t < 0) {  /* cannot happen: a not-started task has a blocked predecessor */
        free(pred);
        return err_set(e, ERR_CHECK, "%zu of %zu tasks never ended", left, n);
    }
    /* t is on the cycle; name it as "t <- what t waits for <- ..." */
    char buf[512];
    size_t len = 0;
    int32_t u = t, shown = 0, clen = 0;
    do {
        clen++;
        u = pred[(size_t)u - lo];
    } while (u != t);
    buf[0] = 0;
    u = t;
    do {
        if (shown < 4) {
            int w = snprintf(buf + len, sizeof(buf) - len, "%s%d '%s'", shown ? " <- " : "",
                             u, label_of(s, u));
            if (w > 0 && (size_t)w < sizeof(buf) - len)
                len += (size_t)w;
        }
        shown++;
        u = pred[(size_t)u - lo];
    } while (u != t);
    free(pred);
    return err_set(e, ERR_CHECK,
                   "dependency cycle: %zu of %zu tasks never started; cycle of %d "
                   "task(s): %s%s",
                   left, n, clen, buf, clen > 4 ? " <- ..." : "");
}

static int report_starved(sched *s, err *e)
{
    int f = flownet_first_active(s->net);
    int32_t t = flownet_flow_user(s->net, f);
    int nl = 0;
    const int32_t *ls = flownet_flow_links(s->net, f, &nl);
    int32_t worst = ls[0];
    for (int k = 1; k < nl; k++)
        if (flownet_link_cap(s->net, ls[k]) < flownet_link_cap(s->net, worst))
            worst = ls[k];
    return err_set(e, ERR_CHECK,
                   "flow task %d '%s' can never finish: %d flow(s) stuck at rate 0 "
                   "(link '%s' has %g B/s); %zu of %zu tasks never ended",
                   t, label_of(s, t), flownet_nactive(s->net), name_of(s, worst),
                   flownet_link_cap(s->net, worst), s->ntasks - s->nended, s->ntasks);
}

static int run_loop(sched *s)
{
    evq_clear(s->q);
    flownet_reset(s->net);
    s->events = 0;
    s->makespan = 0;
    s->nended = 0;
    s->path_task = -1;
    s->path_end = 0;
    memset(s->path, 0, sizeof s->path);
    if (s->gen) {
        ASSERTF(s->ntasks == 0, "a generated graph runs once (%zu tasks)", s->ntasks);
        s->running = 1;
        if (pull(s, 0))
            return -1;
    } else {
        count_preds(s);
        for (size_t t = 0; t < s->ntasks; t++) {
            struct task *k = T(s, t);
            k->start_ps = k->end_ps = k->crit_ps = -1;
            k->crit = -1;
            k->frac_ps = 0;
            if (k->nlinks == NL_JOIN)
                k->tag = 0;
            memset(k->acc, 0, sizeof k->acc);
        }
        s->running = 1;
        for (size_t t = 0; t < s->ntasks; t++)
            if (T(s, t)->npred == 0 && start_task(s, (int32_t)t, 0))
                return -1;
    }
    sim_ps now = 0;
    for (;;) {
        if (flownet_dirty(s->net) && evq_top_ps(s->q) > now) {
            if (flownet_solve(s->net, now, s->q, EV_FLOW_DONE))
                return -1;
            continue;
        }
        int64_t t;
        uint32_t kind;
        int32_t arg;
        if (!evq_pop(s->q, &t, &kind, &arg)) {
            if (s->gen_more && !flownet_dirty(s->net)) { /* nothing runs: ask for more */
                if (pull(s, now))
                    return -1;
                continue;
            }
            break;
        }
        now = t;
        s->events++;
        if (kind == EV_FLOW_DONE) {
            double late = flownet_flow_late_ps(s->net, arg);
            int32_t task = flownet_finish(s->net, arg, now);
            T(s, (size_t)task)->frac_ps = late;
            sim_ps lat = T(s, (size_t)task)->lat_ps;
            if (lat == 0 ? end_task(s, task, now)
                         : evq_push(s->q, now + lat, EV_TASK_END, task) < 0)
                return -1;
        } else if (kind == EV_JOIN) {
            struct task *k = T(s, (size_t)arg);
            k->tag = 0; /* its event is spent; one popped early did nothing */
            if (k->npred == 0 && start_task(s, arg, now))
                return -1;
        } else if (end_task(s, arg, now)) {
            return -1;
        }
    }
    return 0;
}

int sched_run(sched *s, err *e)
{
    int rc = run_loop(s);
    s->running = 0;
    if (rc)
        return s->gen_failed ? (e->code ? e->code
                                        : err_set(e, ERR_SYSTEM, "task generator failed"))
                             : oom(e);
    if (s->nended == s->ntasks)
        return 0;
    if (flownet_nactive(s->net) > 0)
        return report_starved(s, e);
    return report_cycle(s, e);
}

sim_ps sched_start(const sched *s, int task)
{
    ASSERTF(task >= 0 && (size_t)task < s->ntasks && (size_t)task >= s->lo,
            "task %d of %zu (%zu recycled)", task, s->ntasks, s->lo);
    return T(s, (size_t)task)->start_ps;
}

sim_ps sched_end(const sched *s, int task)
{
    ASSERTF(task >= 0 && (size_t)task < s->ntasks && (size_t)task >= s->lo,
            "task %d of %zu (%zu recycled)", task, s->ntasks, s->lo);
    return T(s, (size_t)task)->end_ps;
}

sim_ps sched_makespan(const sched *s) { return s->makespan; }
int sched_ntasks(const sched *s) { return (int)s->ntasks; }
uint64_t sched_events(const sched *s) { return s->events; }
size_t sched_task_room(const sched *s) { return s->nchunk_made * TCHUNK; }

double sched_link_bytes(const sched *s, int link)
{
    ASSERTF(link >= 0 && link < sched_nlinks(s), "link %d of %d", link, sched_nlinks(s));
    return flownet_link_bytes(s->net, link);
}

sim_ps sched_link_busy_ps(const sched *s, int link)
{
    ASSERTF(link >= 0 && link < sched_nlinks(s), "link %d of %d", link, sched_nlinks(s));
    return flownet_link_busy_ps(s->net, link);
}

/* --- timeline ------------------------------------------------------------ */

/* The timeline being written: per track, its lanes (a key, its number among
 * the key's lanes, the end of its last slice), opened as tasks need them,
 * and the span of its tasks so far. */
enum { MAX_LANES = 256, NAME_MAX_B = 256 };

typedef struct tlw_slot {
    uint32_t key;
    int sub;                /* 1 for the key's first lane, 2, ... */
    sim_ps end;
} tlw_slot;

typedef struct tlw_track {
    tlw_slot *lanes;
    int nlanes, cap;
    sim_ps first, last;     /* span of its written tasks; first < 0: none */
} tlw_track;

struct tlw {
    timeline tl;
    const char *const *names;
    int ntracks;
    int oom;               /* a lane could not be opened: reported at the end */
    int named;             /* nm holds the namers */
    sched_tl_names nm;
    tlw_track *tracks;
};

static void tlw_free(sched *s)
{
    struct tlw *w = s->tlw;
    if (!w)
        return;
    for (int i = 0; w->tracks && i < w->ntracks; i++)
        free(w->tracks[i].lanes);
    free(w->tracks);
    if (w->tl.g)  /* not closed (sched_reset or sched_free before the end) */
        json_gen_free(w->tl.g);
    free(w);
    s->tlw = NULL;
    flownet_record_sink(s->net, NULL, NULL);
}

static void tlw_counter(void *ctx, int64_t t, int link, double rate_Bps)
{
    sched *s = ctx;
    tl_counter(&s->tlw->tl, TL_PID_LINKS, t, name_of(s, link), "GB/s", rate_Bps * 1e-9);
}

void sched_task_lane(sched *s, int task, uint32_t lane, uint32_t note)
{
    ASSERTF(task >= 0 && (size_t)task < s->ntasks && (size_t)task >= s->lo,
            "task %d of %zu (%zu recycled)", task, s->ntasks, s->lo);
    struct task *k = T(s, (size_t)task);
    k->lane = lane;
    k->note = note;
}

/* Declare lane l of track tr (thread l of its process): "lane l" without
 * namers, else the key's name (and " #sub" past the first), sorted by the
 * key's sort key, then by sub-lane. */
static void tlw_declare(struct tlw *w, int tr, int l)
{
    const tlw_slot *ln = &w->tracks[tr].lanes[l];
    char name[NAME_MAX_B];
    long long sort = l;
    if (!w->named) {
        snprintf(name, sizeof name, "lane %d", l);
    } else {
        name[0] = 0;
        int key = w->nm.lane(w->nm.ctx, tr, ln->key, name, sizeof name);
        size_t m = strlen(name);
        if (ln->sub > 1 && m < sizeof name)
            snprintf(name + m, sizeof name - m, " #%d", ln->sub);
        sort = (long long)(key > 0 ? key : 0) * MAX_LANES + ln->sub;
    }
    tl_thread(&w->tl, TL_PID_GPU(tr), l, name, sort > INT32_MAX ? INT32_MAX : (int)sort);
}

/* Open a lane of key on track tr: its index, -1 on out of memory, -2 when
 * the track has MAX_LANES already. */
static int tlw_open(struct tlw *w, int tr, uint32_t key)
{
    tlw_track *k = &w->tracks[tr];
    if (k->nlanes == MAX_LANES)
        return -2;
    if (k->nlanes == k->cap) {
        int cap = k->cap ? 2 * k->cap : 4;
        tlw_slot *p = realloc(k->lanes, sizeof *p * (size_t)cap);
        if (!p) {
            w->oom = 1;
            return -1;
        }
        k->lanes = p;
        k->cap = cap;
    }
    int sub = 1;
    for (int i = 0; i < k->nlanes; i++)
        sub += k->lanes[i].key == key;
    int l = k->nlanes++;
    k->lanes[l] = (tlw_slot){key, sub, 0};
    return l;
}

int sched_timeline_begin(sched *s, FILE *f, const char *const *track_names, int ntracks,
                         const sched_tl_names *names, err *e)
{
    tlw_free(s);
    struct tlw *w = calloc(1, sizeof *w);
    if (!w || !(w->tracks = calloc(ntracks > 0 ? (size_t)ntracks : 1, sizeof *w->tracks))) {
        free(w);
        return err_set(e, ERR_SYSTEM, "out of memory");
    }
    w->names = track_names;
    w->ntracks = ntracks;
    if (names && names->lane && names->slice) {
        w->named = 1;
        w->nm = *names;
    }
    if (tl_open(&w->tl, f, e)) {
        free(w->tracks);
        free(w);
        return ERR_SYSTEM;
    }
    s->tlw = w;
    /* Every track's process and its first lane up front (the span's lane
     * when spans are drawn, else the first key's); further lanes as they
     * open. */
    for (int i = 0; i < ntracks; i++) {
        w->tracks[i].first = -1;
        tl_process(&w->tl, TL_PID_GPU(i), track_names ? track_names[i] : NULL, i);
        uint32_t key = w->named && w->nm.span ? w->nm.span_lane : 0;
        if (w->named && !w->nm.span)
            continue;
        if (tlw_open(w, i, key) < 0) {
            tlw_free(s);
            return err_set(e, ERR_SYSTEM, "out of memory");
        }
        tlw_declare(w, i, 0);
    }
    tl_process(&w->tl, TL_PID_LINKS, "links", 1 << 20);
    flownet_record_sink(s->net, tlw_counter, s);
    return 0;
}

/* Each track's span slice: its first task's start to its last task's end. */
static void tlw_spans(struct tlw *w)
{
    for (int i = 0; i < w->ntracks && w->named && w->nm.span; i++) {
        const tlw_track *k = &w->tracks[i];
        if (k->first < 0)
            continue;
        char name[NAME_MAX_B];
        name[0] = 0;
        w->nm.span(w->nm.ctx, i, name, sizeof name);
        tl_slice(&w->tl, TL_PID_GPU(i), 0, k->first, k->last - k->first, name, "kernel");
        tl_slice_end(&w->tl);
    }
}

int sched_timeline_end(sched *s, err *e)
{
    struct tlw *w = s->tlw;
    if (!w)
        return 0;
    flownet_record_flush(s->net);
    tlw_spans(w);
    int rc = tl_close(&w->tl, e);
    if (!rc && w->oom)
        rc = err_set(e, ERR_SYSTEM, "timeline: out of memory");
    tlw_free(s);
    return rc;
}

/* Lane of a task of track tr with lane key `key` from start to end: the
 * first of that key whose last slice ended by start (a new one if none;
 * beyond MAX_LANES the last is shared). The span's lane takes no task. */
static int tlw_lane(struct tlw *w, int tr, uint32_t key, sim_ps start, sim_ps end)
{
    tlw_track *k = &w->tracks[tr];
    int span = w->named && w->nm.span;
    int l = 0;
    while (l < k->nlanes &&
           (k->lanes[l].key != key || k->lanes[l].end > start || (span && l == 0)))
        l++;
    if (l == k->nlanes) {
        l = tlw_open(w, tr, key);
        if (l == -1)
            return -1;
        if (l >= 0)
            tlw_declare(w, tr, l);
        else
            l = MAX_LANES - 1;
    }
    k->lanes[l].end = end;
    if (k->first < 0 || start < k->first)
        k->first = start;
    if (end > k->last)
        k->last = end;
    return l;
}

static void tlw_task(sched *s, int32_t t, sim_ps now)
{
    struct tlw *w = s->tlw;
    const struct task *k = T(s, (size_t)t);
    if (k->track < 0 || k->track >= w->ntracks)
        return;
    int lane = tlw_lane(w, k->track, w->named ? k->lane : 0, k->start_ps, now);
    if (lane < 0)
        return;
    timeline *tl = &w->tl;
    char name[NAME_MAX_B];
    const char *label = k->label;
    if (w->named) {
        name[0] = 0;
        w->nm.slice(w->nm.ctx, k->track, k->label, k->note, name, sizeof name);
        label = name;
    }
    tl_slice(tl, TL_PID_GPU(k->track), lane, k->start_ps, now - k->start_ps, label,
             k->nlinks < 0 ? "wait" : "transfer");
    json_kv_int(tl->g, "task", (long long)t);
    if (k->nlinks >= 0) {
        json_kv_num(tl->g, "bytes", k->bytes);
        char links[1024];
        size_t m = 0;
        links[0] = 0;
        for (int32_t j = 0; j < k->nlinks && m < sizeof links; j++)
            m += (size_t)snprintf(links + m, sizeof links - m, "%s%s", j ? " " : "",
                                  name_of(s, k->links[j]));
        json_kv_str(tl->g, "links", links);
    }
    tl_slice_end(tl);
}

/* --- what a task cost alone, and the critical path ------------------------ */

sim_ps sched_alone_ps(const sched *s, int task)
{
    ASSERTF(task >= 0 && (size_t)task < s->ntasks && (size_t)task >= s->lo,
            "task %d of %zu (%zu recycled)", task, s->ntasks, s->lo);
    const struct task *k = T(s, (size_t)task);
    if (k->nlinks < 0 || k->bytes <= 0)
        return k->lat_ps;
    double r = k->cap_Bps > 0 ? k->cap_Bps : INFINITY;
    for (int i = 0; i < k->nlinks; i++) {
        double w = k->w ? k->w[i] : 1.0;
        double c = flownet_link_nominal(s->net, k->links[i]) / w;
        if (c < r)
            r = c;
    }
    if (!isfinite(r))
        return k->lat_ps;
    return r > 0 ? flownet_ticks(k->bytes, r) + k->lat_ps : INT64_MAX;
}


void sched_path_class(sched *s, sched_class_fn *fn) { s->class_fn = fn; }

void sched_path_sums(const sched *s, sim_ps sums[4])
{
    for (int i = 0; i < 4; i++)
        sums[i] = s->path[i];
}

/* t ends at now: its own share of a critical path through it (from its
 * start, the end of its critical predecessor, to its end) on top of that
 * predecessor's path; the run's path ends at the task that ended last
 * (ties: the lower id). */
static void path_end(sched *s, int32_t t, sim_ps now)
{
    struct task *k = T(s, (size_t)t);
    sim_ps own = now - k->start_ps;
    if (s->class_fn && s->class_fn(k->label)) {
        k->acc[1] += own;
    } else if (k->nlinks < 0) {
        k->acc[0] += own;
    } else {
        sim_ps alone = sched_alone_ps(s, t);
        sim_ps x = alone < own ? alone : own;
        k->acc[2] += x;
        k->acc[3] += own - x;
    }
    if (s->path_task < 0 || now > s->path_end || (now == s->path_end && t < s->path_task)) {
        s->path_task = t;
        s->path_end = now;
        memcpy(s->path, k->acc, sizeof s->path);
    }
}
