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

enum { EV_FLOW_DONE = 1, EV_TASK_END = 2 };

struct task {
    sim_ps start_ps, end_ps; /* -1 until started / ended */
    sim_ps lat_ps;           /* flow: latency after the last byte; delay: duration */
    double bytes, cap_Bps;
    const char *label;
    uint32_t link_off;       /* into s->refs */
    int32_t nlinks;          /* -1 for a delay */
    uint32_t tag;
    int32_t track;
};

struct dep {
    int32_t after;           /* the task that waits */
    int32_t next;            /* next record of the same predecessor, -1 */
};

struct sched {
    struct task *tasks;
    size_t ntasks, tasks_cap;
    int32_t *refs;           /* link lists of flow tasks */
    size_t nrefs, refs_cap;
    double *wrefs;           /* weight of each entry of refs, if wrefs_used */
    size_t wrefs_cap;
    int wrefs_used;          /* some flow since the last reset is weighted */
    int32_t *succ_head;      /* per task: its latest dependency record, -1 none */
    size_t head_cap;
    struct dep *deps;        /* successor lists, linked newest first */
    size_t ndeps, deps_cap;
    /* run state */
    int32_t *npred;          /* unfinished predecessors */
    size_t npred_cap;
    size_t nended;
    uint64_t events;
    sim_ps makespan;
    evq *q;
    flownet *net;
    /* links */
    arena *names;
    const char **link_names;
    size_t link_names_cap;
};

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
    free(s->tasks);
    free(s->refs);
    free(s->wrefs);
    free(s->succ_head);
    free(s->deps);
    free(s->npred);
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
    const char *copy = arena_strdup(s->names, name ? name : "");
    if (!copy)
        return -1;
    int id = flownet_add_link(s->net, cap_Bps);
    if (id < 0)
        return -1;
    s->link_names[id] = copy;
    return id;
}

int sched_nlinks(const sched *s) { return flownet_nlinks(s->net); }

const char *sched_link_name(const sched *s, int link)
{
    ASSERTF(link >= 0 && link < sched_nlinks(s), "link %d of %d", link, sched_nlinks(s));
    return s->link_names[link];
}

void sched_link_rule(sched *s, int link, sched_cap_fn *fn, void *ctx)
{
    flownet_set_rule(s->net, link, fn, ctx);
}

static int new_task(sched *s)
{
    if (s->ntasks >= INT32_MAX ||
        grow(&s->tasks, &s->tasks_cap, s->ntasks + 1, sizeof(struct task)) ||
        grow(&s->succ_head, &s->head_cap, s->ntasks + 1, sizeof(int32_t)))
        return -1;
    s->succ_head[s->ntasks] = -1;
    return (int)s->ntasks++;
}

int sched_delay(sched *s, sim_ps dur_ps, int track, const char *label)
{
    ASSERTF(dur_ps >= 0, "delay of %" PRId64 " ps", dur_ps);
    int id = new_task(s);
    if (id < 0)
        return -1;
    s->tasks[id] = (struct task){-1, -1, dur_ps, 0, 0, label, 0, -1, 0, track};
    return id;
}

int sched_flow(sched *s, const int *links, int nlinks, double bytes,
               double rate_cap_Bps, sim_ps lat_ps, uint32_t tag, int track,
               const char *label)
{
    return sched_flow_w(s, links, NULL, nlinks, bytes, rate_cap_Bps, lat_ps, tag, track,
                        label);
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
    if (s->nrefs + (size_t)nlinks > UINT32_MAX ||
        grow(&s->refs, &s->refs_cap, s->nrefs + (size_t)nlinks, sizeof(int32_t)))
        return -1;
    /* Weights are stored (parallel to refs) only once a flow has some. */
    if ((weighted || s->wrefs_used) &&
        grow(&s->wrefs, &s->wrefs_cap, s->refs_cap, sizeof(double)))
        return -1;
    if (weighted && !s->wrefs_used) {
        for (size_t i = 0; i < s->nrefs; i++)
            s->wrefs[i] = 1.0;
        s->wrefs_used = 1;
    }
    int id = new_task(s);
    if (id < 0)
        return -1;
    uint32_t off = (uint32_t)s->nrefs;
    for (int k = 0; k < nlinks; k++) {
        if (s->wrefs_used)
            s->wrefs[s->nrefs] = weights ? weights[k] : 1.0;
        s->refs[s->nrefs++] = links[k];
    }
    double cap = isfinite(rate_cap_Bps) && rate_cap_Bps > 0 ? rate_cap_Bps : 0;
    s->tasks[id] = (struct task){-1, -1, lat_ps, bytes, cap, label, off, nlinks, tag, track};
    return id;
}

int sched_dep(sched *s, int before, int after)
{
    ASSERTF(before >= 0 && (size_t)before < s->ntasks && after >= 0 &&
                (size_t)after < s->ntasks,
            "dependency %d -> %d with %zu tasks", before, after, s->ntasks);
    if (s->ndeps >= INT32_MAX ||
        grow(&s->deps, &s->deps_cap, s->ndeps + 1, sizeof(struct dep)))
        return -1;
    s->deps[s->ndeps] = (struct dep){after, s->succ_head[before]};
    s->succ_head[before] = (int32_t)s->ndeps++;
    return 0;
}

void sched_trace_links(sched *s, int on) { flownet_record(s->net, on); }

void sched_reset(sched *s)
{
    s->ntasks = s->nrefs = s->ndeps = s->nended = 0;
    s->wrefs_used = 0;
    s->events = 0;
    s->makespan = 0;
    evq_clear(s->q);
    flownet_reset(s->net);
}

/* --- running ------------------------------------------------------------- */

static int oom(err *e) { return err_set(e, ERR_SYSTEM, "scheduler: out of memory"); }

/* Count each task's predecessors (the successor lists are built as
 * dependencies are added). */
static int build_graph(sched *s)
{
    size_t n = s->ntasks;
    if (grow(&s->npred, &s->npred_cap, n + 1, sizeof(int32_t)))
        return -1;
    memset(s->npred, 0, n * sizeof(int32_t));
    for (size_t d = 0; d < s->ndeps; d++)
        s->npred[s->deps[d].after]++;
    return 0;
}

static int start_task(sched *s, int32_t t, sim_ps now)
{
    struct task *k = &s->tasks[t];
    k->start_ps = now;
    sim_ps end;
    if (k->nlinks < 0 || k->bytes <= 0) {
        end = now + k->lat_ps;
    } else if (k->nlinks == 0) {  /* no links: only its own cap limits it */
        int64_t d = k->cap_Bps > 0 ? flownet_ticks(k->bytes, k->cap_Bps) : 0;
        ASSERTF(d >= 0, "task %d: %g bytes at %g B/s overflow", t, k->bytes, k->cap_Bps);
        end = now + d + k->lat_ps;
    } else {
        const double *w = s->wrefs_used ? s->wrefs + k->link_off : NULL;
        return flownet_start_w(s->net, s->refs + k->link_off, w, k->nlinks, k->bytes,
                               k->cap_Bps, k->tag, t) < 0 ? -1 : 0;
    }
    return evq_push(s->q, end, EV_TASK_END, t) < 0 ? -1 : 0;
}

static int end_task(sched *s, int32_t t, sim_ps now)
{
    s->tasks[t].end_ps = now;
    if (now > s->makespan)
        s->makespan = now;
    s->nended++;
    for (int32_t d = s->succ_head[t]; d >= 0; d = s->deps[d].next) {
        int32_t u = s->deps[d].after;
        if (--s->npred[u] == 0 && start_task(s, u, now))
            return -1;
    }
    return 0;
}

static const char *label_of(const sched *s, int32_t t)
{
    return s->tasks[t].label ? s->tasks[t].label : "";
}

/* Tasks never started: walk back through not-ended predecessors (each has
 * one, or it would have started) until a task repeats: that is a cycle. */
static int report_cycle(sched *s, err *e)
{
    size_t n = s->ntasks, left = n - s->nended;
    int32_t *pred = malloc(n * sizeof(int32_t));
    if (!pred)
        return oom(e);
    for (size_t t = 0; t < n; t++)
        pred[t] = -1;
    for (size_t a = 0; a < n; a++)
        for (int32_t d = s->succ_head[a]; d >= 0; d = s->deps[d].next)
            if (s->tasks[a].end_ps < 0 && s->tasks[s->deps[d].after].start_ps < 0)
                pred[s->deps[d].after] = (int32_t)a;
    int32_t t = 0;
    while (s->tasks[t].start_ps >= 0)
        t++;
    /* npred is free now: reuse it as the step at which the walk saw t. */
    for (size_t i = 0; i < n; i++)
        s->npred[i] = -1;
    int32_t step = 0;
    while (t >= 0 && s->npred[t] < 0) {
        s->npred[t] = step++;
        t = pred[t];
    }
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
        u = pred[u];
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
        u = pred[u];
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
                   t, label_of(s, t), flownet_nactive(s->net), s->link_names[worst],
                   flownet_link_cap(s->net, worst), s->ntasks - s->nended, s->ntasks);
}

int sched_run(sched *s, err *e)
{
    if (build_graph(s))
        return oom(e);
    evq_clear(s->q);
    flownet_reset(s->net);
    s->events = 0;
    s->makespan = 0;
    s->nended = 0;
    for (size_t t = 0; t < s->ntasks; t++)
        s->tasks[t].start_ps = s->tasks[t].end_ps = -1;
    for (size_t t = 0; t < s->ntasks; t++)
        if (s->npred[t] == 0 && start_task(s, (int32_t)t, 0))
            return oom(e);
    sim_ps now = 0;
    for (;;) {
        if (flownet_dirty(s->net) && evq_top_ps(s->q) > now) {
            if (flownet_solve(s->net, now, s->q, EV_FLOW_DONE))
                return oom(e);
            continue;
        }
        int64_t t;
        uint32_t kind;
        int32_t arg;
        if (!evq_pop(s->q, &t, &kind, &arg))
            break;
        now = t;
        s->events++;
        if (kind == EV_FLOW_DONE) {
            int32_t task = flownet_finish(s->net, arg, now);
            sim_ps lat = s->tasks[task].lat_ps;
            if (lat == 0 ? end_task(s, task, now)
                         : evq_push(s->q, now + lat, EV_TASK_END, task) < 0)
                return oom(e);
        } else if (end_task(s, arg, now)) {
            return oom(e);
        }
    }
    if (s->nended == s->ntasks)
        return 0;
    if (flownet_nactive(s->net) > 0)
        return report_starved(s, e);
    return report_cycle(s, e);
}

sim_ps sched_start(const sched *s, int task)
{
    ASSERTF(task >= 0 && (size_t)task < s->ntasks, "task %d of %zu", task, s->ntasks);
    return s->tasks[task].start_ps;
}

sim_ps sched_end(const sched *s, int task)
{
    ASSERTF(task >= 0 && (size_t)task < s->ntasks, "task %d of %zu", task, s->ntasks);
    return s->tasks[task].end_ps;
}

sim_ps sched_makespan(const sched *s) { return s->makespan; }
int sched_ntasks(const sched *s) { return (int)s->ntasks; }
uint64_t sched_events(const sched *s) { return s->events; }

double sched_link_bytes(const sched *s, int link)
{
    ASSERTF(link >= 0 && link < sched_nlinks(s), "link %d of %d", link, sched_nlinks(s));
    return flownet_link_bytes(s->net, link);
}

/* --- timeline ------------------------------------------------------------ */

/* Tasks by track, then start (longer first on ties), for lane assignment. */
typedef struct tl_key {
    int32_t track, idx;
    sim_ps start, end;
} tl_key;

static int by_track_start(const void *pa, const void *pb)
{
    const tl_key *a = pa, *b = pb;
    if (a->track != b->track)
        return a->track < b->track ? -1 : 1;
    if (a->start != b->start)
        return a->start < b->start ? -1 : 1;
    if (a->end != b->end)
        return a->end > b->end ? -1 : 1;
    return a->idx < b->idx ? -1 : 1;
}

enum { MAX_LANES = 256 };

int sched_timeline(const sched *s, FILE *f, const char *const *track_names,
                   int ntracks, err *e)
{
    /* Tasks of a track that overlap in time go on separate lanes (threads
     * of the track's process), each lane taking the first task that starts
     * after its last one ended, so slices never overlap on one thread. */
    tl_key *order = malloc((s->ntasks ? s->ntasks : 1) * sizeof *order);
    int32_t *lane = malloc((s->ntasks ? s->ntasks : 1) * sizeof *lane);
    if (!order || !lane) {
        free(order);
        free(lane);
        return err_set(e, ERR_SYSTEM, "out of memory");
    }
    size_t n = 0;
    for (size_t t = 0; t < s->ntasks; t++)
        if (s->tasks[t].track >= 0 && s->tasks[t].track < ntracks && s->tasks[t].end_ps >= 0)
            order[n++] = (tl_key){s->tasks[t].track, (int32_t)t, s->tasks[t].start_ps,
                                  s->tasks[t].end_ps};
    qsort(order, n, sizeof *order, by_track_start);
    int nlanes_of[4096] = {0};
    sim_ps lane_end[MAX_LANES];
    for (size_t i = 0; i < n;) {
        int tr = order[i].track, nl = 0;
        for (; i < n && order[i].track == tr; i++) {
            const struct task *k = &s->tasks[order[i].idx];
            int l = 0;
            while (l < nl && lane_end[l] > k->start_ps)
                l++;
            if (l == nl && nl < MAX_LANES)
                nl++;
            if (l == MAX_LANES)
                l = MAX_LANES - 1;  /* beyond 256 concurrent slices: share the last lane */
            lane_end[l] = k->end_ps;
            lane[order[i].idx] = l;
        }
        if (tr < 4096)
            nlanes_of[tr] = nl;
    }
    timeline tl;
    if (tl_open(&tl, f, e)) {
        free(order);
        free(lane);
        return ERR_SYSTEM;
    }
    for (int i = 0; i < ntracks; i++) {
        tl_process(&tl, TL_PID_GPU(i), track_names ? track_names[i] : NULL, i);
        int nl = i < 4096 && nlanes_of[i] ? nlanes_of[i] : 1;
        for (int l = 0; l < nl; l++) {
            char name[32];
            snprintf(name, sizeof name, "lane %d", l);
            tl_thread(&tl, TL_PID_GPU(i), l, name, l);
        }
    }
    tl_process(&tl, TL_PID_LINKS, "links", 1 << 20);
    for (size_t i = 0; i < n; i++) {
        size_t t = (size_t)order[i].idx;
        const struct task *k = &s->tasks[t];
        tl_slice(&tl, TL_PID_GPU(k->track), lane[t], k->start_ps, k->end_ps - k->start_ps,
                 k->label, k->nlinks < 0 ? "wait" : "transfer");
        json_kv_int(tl.g, "task", (long long)t);
        if (k->nlinks >= 0) {
            json_kv_num(tl.g, "bytes", k->bytes);
            char links[1024];
            size_t m = 0;
            links[0] = 0;
            for (int32_t j = 0; j < k->nlinks && m < sizeof links; j++)
                m += (size_t)snprintf(links + m, sizeof links - m, "%s%s", j ? " " : "",
                                      s->link_names[s->refs[k->link_off + (uint32_t)j]]);
            json_kv_str(tl.g, "links", links);
        }
        tl_slice_end(&tl);
    }
    free(order);
    free(lane);
    size_t nrec = flownet_nrecords(s->net);
    for (size_t i = 0; i < nrec; i++) {
        int64_t t;
        int link;
        double rate;
        flownet_record_get(s->net, i, &t, &link, &rate);
        if (flownet_link_bytes(s->net, link) <= 0)
            continue;
        tl_counter(&tl, TL_PID_LINKS, t, s->link_names[link], "GB/s", rate * 1e-9);
    }
    return tl_close(&tl, e);
}

/* --- after a run: what a task cost alone, and the critical path ---------- */

sim_ps sched_alone_ps(const sched *s, int task)
{
    ASSERTF(task >= 0 && (size_t)task < s->ntasks, "task %d of %zu", task, s->ntasks);
    const struct task *k = &s->tasks[task];
    if (k->nlinks < 0 || k->bytes <= 0)
        return k->lat_ps;
    double r = k->cap_Bps > 0 ? k->cap_Bps : INFINITY;
    for (int i = 0; i < k->nlinks; i++) {
        double w = s->wrefs_used ? s->wrefs[k->link_off + (uint32_t)i] : 1.0;
        double c = flownet_link_nominal(s->net, s->refs[k->link_off + (uint32_t)i]) / w;
        if (c < r)
            r = c;
    }
    if (!isfinite(r))
        return k->lat_ps;
    return r > 0 ? flownet_ticks(k->bytes, r) + k->lat_ps : INT64_MAX;
}

const char *sched_label(const sched *s, int task) { return s->tasks[task].label; }
int sched_is_flow(const sched *s, int task) { return s->tasks[task].nlinks >= 0; }

int sched_critical_path(sched *s, int *path, int max)
{
    size_t n = s->ntasks;
    if (n == 0)
        return 0;
    int32_t *crit = malloc(sizeof(int32_t) * n);
    if (!crit)
        return -1;
    for (size_t t = 0; t < n; t++)
        crit[t] = -1;
    /* The latest-ending predecessor of each task (ties: the lower id). */
    for (size_t t = 0; t < n; t++)
        for (int32_t d = s->succ_head[t]; d >= 0; d = s->deps[d].next) {
            int32_t u = s->deps[d].after;
            if (crit[u] < 0 || s->tasks[t].end_ps > s->tasks[crit[u]].end_ps ||
                (s->tasks[t].end_ps == s->tasks[crit[u]].end_ps && (int32_t)t < crit[u]))
                crit[u] = (int32_t)t;
        }
    int32_t last = 0;
    for (size_t t = 1; t < n; t++)
        if (s->tasks[t].end_ps > s->tasks[last].end_ps)
            last = (int32_t)t;
    int len = 0;
    for (int32_t t = last; t >= 0 && len < max; t = crit[t])
        path[len++] = t;
    free(crit);
    return len;
}
