/* Max-min fair bandwidth sharing with selective re-solving.
 * Links keep the ids of their active flows in arrival order; flows point at
 * their link list. Starting or finishing a flow only appends or removes ids
 * and marks the links dirty. flownet_solve walks, from each dirty link, the
 * connected component of links and flows (breadth first, stamped with a
 * generation counter so nothing is cleared between solves), applies the
 * capacity rules of its dirty links, and runs progressive filling on that
 * component alone: all unfixed flows rise together; the next constraint to
 * saturate (a link's (capacity - weighted fixed rates) / weight of unfixed
 * flows, or a flow's own cap) fixes its flows at that level. Link levels only
 * grow as flows get fixed, so a lazy min-heap of (level, link) finds the next
 * one; components with few links for their flows scan the links instead
 * (docs/model.md "Engine"). A flow whose
 * rate changed (beyond FLOWNET_EPS) gets its remaining bytes brought up to
 * the solve time and its completion event moved; the others keep theirs.
 * A finished flow stays listed, dead, on its links until the next solve
 * compacts the dirty links once (so a crowd leaving a link costs O(crowd)).
 * Invariants: a live flow is in the flow list of each of its links once per
 * crossing; outside flownet_solve, nlive counts the live entries; rem_bytes
 * is exact as of last_ps under rate_Bps. */
#include "sim/flownet.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "sim/err.h"
#include "sim/pool.h"

struct link {
    double nominal_Bps, cap_Bps; /* cap_Bps: after the rule */
    double bytes;                /* carried by finished flows */
    double rate_Bps;             /* total rate last recorded */
    double sum_Bps;              /* record(): total rate being computed */
    int32_t *flows;              /* flow ids, arrival order; between a finish
                                    and the next solve, dead ones too */
    int32_t nflows, flows_cap;   /* entries in flows[] */
    int32_t nlive;               /* live flows among them */
    double wsum;                 /* weights of its live flows, summed */
    double wfree;                /* progressive filling: weight not yet fixed */
    flownet_cap_fn *rule;
    void *ctx;
    uint32_t seen;               /* == gen: in the component being solved */
    uint8_t dirty, done;
    /* progressive filling scratch */
    int32_t nfree;
    uint32_t hver;
    double rem_Bps;
    int64_t last_rec;            /* index of its last rate record, -1 none */
    int64_t busy_since, busy_ps; /* recording: when its rate last rose above 0; time
                                    it was above 0 before that */
};

struct flow {
    const int32_t *links;
    const double *w;  /* weight on links[k], NULL = all 1 */
    int32_t nlinks;
    int32_t ev;       /* completion event, -1 if none */
    int32_t user;     /* -1 when the slot is free */
    uint32_t tag;
    uint32_t seen;
    uint8_t fixed;
    double bytes, rem_bytes, rate_Bps, cap_Bps, new_Bps;
    int64_t last_ps;
    double ahead_ps;  /* head start not yet applied (flownet_head_start) */
    double late_ps;   /* its completion event after its exact end, [0, 1) */
};

struct lvl {          /* lazy heap entry: link level */
    double level;
    int32_t link;
    uint32_t ver;
};

struct capkey {       /* a capped flow, sorted by (cap, id) */
    double cap;
    int32_t f;
};

struct rec {
    int64_t t;
    double rate;
    int32_t link;
};

struct flownet {
    struct link *links;
    int32_t nlinks, links_cap;
    pool flows;        /* struct flow */
    int32_t *zombies;  /* finished flows still listed on their links */
    size_t nzombies, zombies_cap;
    uint32_t gen;
    int32_t *dirty;    /* dirty link ids */
    size_t ndirty, dirty_cap;
    /* component scratch */
    int32_t *cl, *cf;
    struct capkey *capped;
    size_t ncl, ncf, cl_cap, cf_cap, capped_cap;
    struct lvl *heap;
    size_t nheap, heap_cap;
    int use_heap;      /* this component finds bottlenecks with the heap */
    int method;        /* 0 auto, 1 heap, 2 scan (flownet_method) */
    uint32_t *tags;
    size_t tags_cap;
    /* rate records */
    int recording;
    struct rec *recs;
    size_t nrecs, recs_cap;
    flownet_rec_fn *sink;  /* hand records over instead of keeping them */
    void *sink_ctx;
};

/* Grow *arr (elements of size sz) to hold at least need; 0 or -1 on OOM. */
static int grow(void *arr, size_t *cap, size_t need, size_t sz)
{
    if (need <= *cap)
        return 0;
    size_t ncap = *cap ? *cap : 16;
    while (ncap < need)
        ncap *= 2;
    void *p = realloc(*(void **)arr, ncap * sz);
    if (!p)
        return -1;
    *(void **)arr = p;
    *cap = ncap;
    return 0;
}

static inline struct flow *fl(const flownet *n, int32_t f)
{
    return &POOL_AT(&n->flows, struct flow, f);
}

static inline double max2(double a, double b) { return a > b ? a : b; }

flownet *flownet_new(void)
{
    flownet *n = calloc(1, sizeof(*n));
    if (n)
        pool_init(&n->flows, sizeof(struct flow));
    return n;
}

void flownet_free(flownet *n)
{
    if (!n)
        return;
    for (int32_t i = 0; i < n->nlinks; i++)
        free(n->links[i].flows);
    free(n->links);
    pool_fini(&n->flows);
    free(n->dirty);
    free(n->zombies);
    free(n->cl);
    free(n->cf);
    free(n->capped);
    free(n->heap);
    free(n->tags);
    free(n->recs);
    free(n);
}

int flownet_add_link(flownet *n, double cap_Bps)
{
    ASSERTF(isfinite(cap_Bps) && cap_Bps >= 0, "link capacity %g B/s", cap_Bps);
    if (n->nlinks == INT32_MAX)
        return -1;
    size_t cap = (size_t)n->links_cap;
    if (grow(&n->links, &cap, (size_t)n->nlinks + 1, sizeof(struct link)) ||
        grow(&n->dirty, &n->dirty_cap, (size_t)n->nlinks + 1, sizeof(int32_t)))
        return -1;
    n->links_cap = (int32_t)(cap > INT32_MAX ? INT32_MAX : cap);
    struct link *l = &n->links[n->nlinks];
    memset(l, 0, sizeof(*l));
    l->nominal_Bps = l->cap_Bps = cap_Bps;
    l->last_rec = -1;
    return n->nlinks++;
}

int flownet_nlinks(const flownet *n) { return n->nlinks; }

int flownet_links_room(const flownet *n) { return n->links_cap; }

int flownet_reserve_links(flownet *n, int nlinks)
{
    if (nlinks <= n->links_cap)
        return 0;
    size_t cap = (size_t)nlinks;
    struct link *l = realloc(n->links, cap * sizeof *l);
    if (!l)
        return -1;
    n->links = l;
    n->links_cap = nlinks;
    if (cap > n->dirty_cap) {
        int32_t *d = realloc(n->dirty, cap * sizeof *d);
        if (!d)
            return -1;
        n->dirty = d;
        n->dirty_cap = cap;
    }
    return 0;
}

void flownet_set_cap(flownet *n, int link, double cap_Bps)
{
    ASSERTF(link >= 0 && link < n->nlinks && isfinite(cap_Bps) && cap_Bps >= 0,
            "link %d of %d, capacity %g B/s", link, n->nlinks, cap_Bps);
    struct link *l = &n->links[link];
    ASSERTF(l->nflows == 0 && l->bytes == 0, "link %d already in use", link);
    l->nominal_Bps = l->cap_Bps = cap_Bps;
}

void flownet_set_rule(flownet *n, int link, flownet_cap_fn *fn, void *ctx)
{
    ASSERTF(link >= 0 && link < n->nlinks, "link %d of %d", link, n->nlinks);
    n->links[link].rule = fn;
    n->links[link].ctx = ctx;
}

double flownet_link_cap(const flownet *n, int link) { return n->links[link].cap_Bps; }
double flownet_link_nominal(const flownet *n, int link) { return n->links[link].nominal_Bps; }
double flownet_link_bytes(const flownet *n, int link) { return n->links[link].bytes; }

int64_t flownet_link_busy_ps(const flownet *n, int link) { return n->links[link].busy_ps; }

void flownet_reset(flownet *n)
{
    for (int32_t i = 0; i < n->nlinks; i++) {
        struct link *l = &n->links[i];
        l->cap_Bps = l->nominal_Bps;
        l->bytes = 0;
        l->rate_Bps = 0;
        l->nflows = l->nlive = 0;
        l->wsum = 0;
        l->dirty = 0;
        l->last_rec = -1;
        l->busy_since = l->busy_ps = 0;
    }
    pool_clear(&n->flows);
    n->nzombies = 0;
    n->ndirty = 0;
    n->nrecs = 0;
}

/* The dirty list has room for every link (sized by flownet_add_link), and
 * holds each at most once. */
static void mark_dirty(flownet *n, int32_t link)
{
    struct link *l = &n->links[link];
    if (!l->dirty) {
        l->dirty = 1;
        n->dirty[n->ndirty++] = link;
    }
}

int flownet_start(flownet *n, const int32_t *links, int nlinks, double bytes,
                  double cap_Bps, uint32_t tag, int32_t user)
{
    return flownet_start_w(n, links, NULL, nlinks, bytes, cap_Bps, tag, user);
}

int flownet_start_w(flownet *n, const int32_t *links, const double *w, int nlinks,
                    double bytes, double cap_Bps, uint32_t tag, int32_t user)
{
    ASSERTF(nlinks >= 1 && bytes > 0, "flow of %g bytes over %d links", bytes, nlinks);
    /* Room for every flow to become a zombie, so flownet_finish cannot fail. */
    if (grow(&n->zombies, &n->zombies_cap, (size_t)n->flows.live + 1, sizeof(int32_t)))
        return -1;
    int32_t f = pool_get(&n->flows);
    if (f < 0)
        return -1;
    struct flow *p = fl(n, f);
    p->links = links;
    p->w = w;
    p->nlinks = nlinks;
    p->ev = -1;
    p->user = user;
    p->tag = tag;
    p->seen = 0;
    p->fixed = 0;
    p->bytes = p->rem_bytes = bytes;
    p->rate_Bps = p->new_Bps = 0;
    p->cap_Bps = cap_Bps > 0 ? cap_Bps : 0;
    p->last_ps = 0;
    p->ahead_ps = p->late_ps = 0;
    for (int k = 0; k < nlinks; k++) {  /* room first: all or nothing */
        int32_t li = links[k];
        ASSERTF(li >= 0 && li < n->nlinks, "flow on link %d of %d", li, n->nlinks);
        struct link *l = &n->links[li];
        size_t cap = (size_t)l->flows_cap;
        if (grow(&l->flows, &cap, (size_t)l->nflows + (size_t)nlinks, sizeof(int32_t))) {
            p->user = -1;
            pool_put(&n->flows, f);
            return -1;
        }
        l->flows_cap = (int32_t)cap;
    }
    for (int k = 0; k < nlinks; k++) {
        struct link *l = &n->links[links[k]];
        double wk = w ? w[k] : 1.0;
        ASSERTF(wk > 0 && isfinite(wk), "flow weight %g", wk);
        l->wsum += wk;
        l->flows[l->nflows++] = f;
        l->nlive++;
        mark_dirty(n, links[k]);
    }
    return f;
}

int flownet_dirty(const flownet *n) { return n->ndirty > 0; }

int32_t flownet_finish(flownet *n, int flow, int64_t now_ps)
{
    (void)now_ps;
    struct flow *p = fl(n, flow);
    ASSERTF(p->user >= 0, "flow %d is not active", flow);
    /* O(route): the flow stays listed (dead) on its links until the next
     * solve compacts them all in one pass, so that n flows leaving one link
     * at once cost O(n), not O(n^2). */
    for (int k = 0; k < p->nlinks; k++) {
        struct link *l = &n->links[p->links[k]];
        double wk = p->w ? p->w[k] : 1.0;
        l->nlive--;
        l->wsum = l->nlive ? l->wsum - wk : 0;
        l->bytes += p->bytes * wk;
        mark_dirty(n, p->links[k]);
    }
    int32_t user = p->user;
    p->user = -1;
    p->ev = -1;
    n->zombies[n->nzombies++] = flow;
    return user;
}

/* Drop dead entries from the dirty links (keeping arrival order), then free
 * the zombie flows. Every link of a zombie is dirty. */
static void compact(flownet *n)
{
    if (!n->nzombies)
        return;
    for (size_t i = 0; i < n->ndirty; i++) {
        struct link *l = &n->links[n->dirty[i]];
        if (l->nlive == l->nflows)
            continue;
        int32_t j = 0;
        for (int32_t k = 0; k < l->nflows; k++)
            if (fl(n, l->flows[k])->user >= 0) {
                l->flows[j++] = l->flows[k];
            }
        ASSERTF(j == l->nlive, "link %d: %d live flows, %d counted", n->dirty[i], l->nlive, j);
        l->nflows = j;
    }
    for (size_t i = 0; i < n->nzombies; i++)
        pool_put(&n->flows, n->zombies[i]);
    n->nzombies = 0;
}

/* --- progressive filling ------------------------------------------------- */

static inline int lvl_less(const struct lvl *a, const struct lvl *b)
{
    return a->level < b->level || (a->level == b->level && a->link < b->link);
}

static int heap_push(flownet *n, double level, int32_t link, uint32_t ver)
{
    if (grow(&n->heap, &n->heap_cap, n->nheap + 1, sizeof(struct lvl)))
        return -1;
    struct lvl e = {level, link, ver};
    size_t i = n->nheap++;
    while (i > 0) {
        size_t p = (i - 1) / 2;
        if (!lvl_less(&e, &n->heap[p]))
            break;
        n->heap[i] = n->heap[p];
        i = p;
    }
    n->heap[i] = e;
    return 0;
}

static void heap_pop(flownet *n)
{
    struct lvl e = n->heap[--n->nheap];
    size_t i = 0, m = n->nheap;
    if (m == 0)
        return;
    for (;;) {
        size_t c = 2 * i + 1;
        if (c >= m)
            break;
        if (c + 1 < m && lvl_less(&n->heap[c + 1], &n->heap[c]))
            c++;
        if (!lvl_less(&n->heap[c], &e))
            break;
        n->heap[i] = n->heap[c];
        i = c;
    }
    n->heap[i] = e;
}

/* The common rate at which link l saturates: its remaining capacity over
 * the weight of its unfixed flows (the weight may drift below 0 by rounding
 * while nfree > 0 says flows are left). */
static inline double level(const struct link *l)
{
    return l->rem_Bps / max2(l->wfree, FLOWNET_EPS);
}

/* Fix flow f at rate x: take x (times its weight) from each of its links and
 * re-queue their new levels. */
static int fix(flownet *n, int32_t f, double x)
{
    struct flow *p = fl(n, f);
    p->new_Bps = x;
    p->fixed = 1;
    for (int k = 0; k < p->nlinks; k++) {
        struct link *l = &n->links[p->links[k]];
        double wk = p->w ? p->w[k] : 1.0;
        l->rem_Bps -= x * wk;
        if (l->rem_Bps < FLOWNET_EPS * l->cap_Bps)
            l->rem_Bps = 0;
        l->nfree--;
        l->wfree -= wk;
        l->hver++;
        if (n->use_heap && l->nfree > 0 && !l->done &&
            heap_push(n, level(l), p->links[k], l->hver))
            return -1;
    }
    return 0;
}


static inline int capkey_less(const struct capkey *x, const struct capkey *y)
{
    return x->cap < y->cap || (x->cap == y->cap && x->f < y->f);
}

static void capkey_down(struct capkey *v, size_t i, size_t n)
{
    struct capkey e = v[i];
    for (size_t c; (c = 2 * i + 1) < n; i = c) {
        if (c + 1 < n && capkey_less(&v[c], &v[c + 1]))
            c++;
        if (!capkey_less(&e, &v[c]))
            break;
        v[i] = v[c];
    }
    v[i] = e;
}

/* Heapsort by (cap, flow id): in place (qsort may allocate), and the keys
 * are unique, so the order is fully determined. */
static void capkey_sort(struct capkey *v, size_t n)
{
    for (size_t i = n / 2; i-- > 0;)
        capkey_down(v, i, n);
    for (size_t m = n; m > 1; m--) {
        struct capkey t = v[0];
        v[0] = v[m - 1];
        v[m - 1] = t;
        capkey_down(v, 0, m - 1);
    }
}

/* Progressive filling over the component in n->cl / n->cf: sets new_Bps. */
static int fill(flownet *n)
{
    if (n->ncf == 1) {  /* one flow alone on its links: the tightest one */
        struct flow *p = fl(n, n->cf[0]);
        double x = p->cap_Bps > 0 ? p->cap_Bps : INFINITY;
        for (int k = 0; k < p->nlinks; k++) {
            const struct link *l = &n->links[p->links[k]];
            double c = l->cap_Bps / l->wsum; /* its weights on l, summed */
            if (c < x)
                x = c;
        }
        p->new_Bps = x;
        return 0;
    }
    /* The next bottleneck: a lazy heap costs O(log) per link update, a scan
     * O(links) per round; scan when links are few for the flows' routes. */
    size_t nrefs = 0;
    for (size_t i = 0; i < n->ncl; i++)
        nrefs += (size_t)n->links[n->cl[i]].nflows;
    n->use_heap = n->method ? n->method == 1 : n->ncl * n->ncl > 32 * nrefs;
    n->nheap = 0;
    for (size_t i = 0; i < n->ncl; i++) {
        struct link *l = &n->links[n->cl[i]];
        l->rem_Bps = l->cap_Bps;
        l->nfree = l->nflows;
        l->wfree = l->wsum;
        l->done = 0;
        l->hver++;
        if (n->use_heap && l->nfree > 0 && heap_push(n, level(l), n->cl[i], l->hver))
            return -1;
    }
    size_t ncapped = 0;
    for (size_t i = 0; i < n->ncf; i++) {
        struct flow *p = fl(n, n->cf[i]);
        p->fixed = 0;
        if (p->cap_Bps > 0)
            ncapped++;
    }
    struct capkey *ck = NULL;
    if (ncapped) {
        if (grow(&n->capped, &n->capped_cap, ncapped, sizeof(struct capkey)))
            return -1;
        ck = n->capped;
        size_t j = 0;
        for (size_t i = 0; i < n->ncf; i++) {
            struct flow *p = fl(n, n->cf[i]);
            if (p->cap_Bps > 0)
                ck[j++] = (struct capkey){p->cap_Bps, n->cf[i]};
        }
        capkey_sort(ck, ncapped);
    }
    size_t nfixed = 0, ci = 0;
    while (nfixed < n->ncf) {
        int32_t li = -1;
        double xl = INFINITY;
        if (n->use_heap) {
            while (n->nheap) {
                const struct lvl *t = &n->heap[0];
                const struct link *l = &n->links[t->link];
                if (t->ver == l->hver && !l->done && l->nfree > 0)
                    break;
                heap_pop(n);
            }
            if (n->nheap) {
                xl = n->heap[0].level;
                li = n->heap[0].link;
            }
        } else {
            for (size_t i = 0; i < n->ncl; i++) {
                const struct link *l = &n->links[n->cl[i]];
                if (l->done || l->nfree <= 0)
                    continue;
                double lv = level(l);
                if (lv < xl) {
                    xl = lv;
                    li = n->cl[i];
                }
            }
        }
        while (ci < ncapped && fl(n, ck[ci].f)->fixed)
            ci++;
        double xc = ci < ncapped ? ck[ci].cap : INFINITY;
        ASSERTF(li >= 0 || ci < ncapped, "%zu flows left with no constraint",
                n->ncf - nfixed);
        if (ci < ncapped && xc <= xl) {
            if (fix(n, ck[ci].f, xc))
                return -1;
            nfixed++;
            continue;
        }
        if (n->use_heap)
            heap_pop(n);
        struct link *l = &n->links[li];
        l->done = 1;
        for (int32_t j = 0; j < l->nflows; j++) {
            int32_t f = l->flows[j];
            if (!fl(n, f)->fixed) {
                if (fix(n, f, xl))
                    return -1;
                nfixed++;
            }
        }
    }
    return 0;
}

/* Collect the component around link l0 into n->cl / n->cf. */
static int component(flownet *n, int32_t l0)
{
    n->ncl = n->ncf = 0;
    if (grow(&n->cl, &n->cl_cap, 1, sizeof(int32_t)))
        return -1;
    n->cl[n->ncl++] = l0;
    n->links[l0].seen = n->gen;
    for (size_t k = 0; k < n->ncl; k++) {
        const struct link *l = &n->links[n->cl[k]];
        for (int32_t j = 0; j < l->nflows; j++) {
            int32_t f = l->flows[j];
            struct flow *p = fl(n, f);
            if (p->seen == n->gen)
                continue;
            p->seen = n->gen;
            if (grow(&n->cf, &n->cf_cap, n->ncf + 1, sizeof(int32_t)))
                return -1;
            n->cf[n->ncf++] = f;
            for (int m = 0; m < p->nlinks; m++) {
                struct link *o = &n->links[p->links[m]];
                if (o->seen == n->gen)
                    continue;
                o->seen = n->gen;
                if (grow(&n->cl, &n->cl_cap, n->ncl + 1, sizeof(int32_t)))
                    return -1;
                n->cl[n->ncl++] = p->links[m];
            }
        }
    }
    return 0;
}

static int apply_rules(flownet *n)
{
    for (size_t i = 0; i < n->ncl; i++) {
        struct link *l = &n->links[n->cl[i]];
        if (!l->rule || !l->dirty)
            continue;
        if (grow(&n->tags, &n->tags_cap, (size_t)l->nflows + 1, sizeof(uint32_t)))
            return -1;
        for (int32_t j = 0; j < l->nflows; j++)
            n->tags[j] = fl(n, l->flows[j])->tag;
        double c = l->rule(l->ctx, n->cl[i], n->tags, l->nflows, l->nominal_Bps);
        l->cap_Bps = isfinite(c) && c > 0 ? c : 0;
    }
    return 0;
}

int64_t flownet_ceil_ps(double x)
{
    if (!(x < 4.6e18))
        return -1;
    if (x <= 0)
        return 0;
    double r = nearbyint(x);
    if (fabs(x - r) <= FLOWNET_EPS * x)
        return (int64_t)r;
    return (int64_t)ceil(x);
}

int64_t flownet_ticks(double bytes, double rate_Bps)
{
    if (!(rate_Bps > 0))
        return -1;
    return flownet_ceil_ps(bytes / rate_Bps * 1e12);
}

void flownet_head_start(flownet *n, int flow, double ahead_ps)
{
    struct flow *p = fl(n, flow);
    ASSERTF(p->user >= 0 && ahead_ps >= 0 && ahead_ps < 1, "flow %d, head start %g ps", flow,
            ahead_ps);
    p->ahead_ps = ahead_ps;
}

double flownet_flow_late_ps(const flownet *n, int flow) { return fl(n, flow)->late_ps; }

/* The part of a ps by which an event at whole-ps delay d follows an exact
 * delay of x ps. */
static double late_of(int64_t d, double x)
{
    double l = (double)d - x;
    return l > 0 ? (l < 1 ? l : 0) : 0;
}

static int reschedule(flownet *n, int64_t now, evq *q, uint32_t kind)
{
    for (size_t i = 0; i < n->ncf; i++) {
        int32_t f = n->cf[i];
        struct flow *p = fl(n, f);
        double x = p->new_Bps, old = p->rate_Bps;
        if (fabs(x - old) <= FLOWNET_EPS * max2(x, old))
            continue;
        if (old > 0) {
            p->rem_bytes -= old * (double)(now - p->last_ps) * 1e-12;
        } else if (p->ahead_ps > 0 && x > 0) {
            /* Its first rate: it has run at it since its exact start. */
            p->rem_bytes -= x * p->ahead_ps * 1e-12;
            p->ahead_ps = 0;
        }
        p->last_ps = now;
        p->rate_Bps = x;
        int64_t t;
        if (p->rem_bytes <= FLOWNET_EPS * p->bytes) {
            p->late_ps = x > 0 ? late_of(0, p->rem_bytes / x * 1e12) : 0;
            p->rem_bytes = 0;
            t = now;
        } else {
            double exact = x > 0 ? p->rem_bytes / x * 1e12 : 0;
            int64_t d = flownet_ticks(p->rem_bytes, x);
            p->late_ps = d < 0 ? 0 : late_of(d, exact);
            t = d < 0 ? -1 : now + d;
        }
        if (t < 0) {
            if (p->ev >= 0)
                evq_cancel(q, p->ev);
            p->ev = -1;
        } else if (p->ev >= 0) {
            if (evq_move(q, p->ev, t))
                return -1;
        } else {
            p->ev = evq_push(q, t, kind, f);
            if (p->ev < 0)
                return -1;
        }
    }
    return 0;
}

void flownet_record_flush(flownet *n)
{
    if (!n->sink)
        return;
    for (size_t i = 0; i < n->nrecs; i++) {
        n->sink(n->sink_ctx, n->recs[i].t, n->recs[i].link, n->recs[i].rate);
        n->links[n->recs[i].link].last_rec = -1;
    }
    n->nrecs = 0;
}

void flownet_record_sink(flownet *n, flownet_rec_fn *fn, void *ctx)
{
    flownet_record_flush(n);
    n->sink = fn;
    n->sink_ctx = ctx;
}

static int record(flownet *n, int64_t now)
{
    /* Records of an earlier time are final: a later solve only rewrites
     * its own instant's. */
    if (n->sink && n->nrecs > 0 && n->recs[0].t < now)
        flownet_record_flush(n);
    for (size_t i = 0; i < n->ncl; i++)
        n->links[n->cl[i]].sum_Bps = 0;
    for (size_t i = 0; i < n->ncf; i++) {
        const struct flow *p = fl(n, n->cf[i]);
        for (int k = 0; k < p->nlinks; k++)
            n->links[p->links[k]].sum_Bps += p->rate_Bps * (p->w ? p->w[k] : 1.0);
    }
    for (size_t i = 0; i < n->ncl; i++) {
        int32_t li = n->cl[i];
        struct link *l = &n->links[li];
        double sum = l->sum_Bps;
        if (fabs(sum - l->rate_Bps) <= FLOWNET_EPS * max2(sum, l->rate_Bps))
            continue;
        if (l->rate_Bps <= 0 && sum > 0)
            l->busy_since = now;
        else if (l->rate_Bps > 0 && sum <= 0)
            l->busy_ps += now - l->busy_since;
        l->rate_Bps = sum;
        if (n->recording == 2)
            continue;  /* busy time only */
        if (l->last_rec >= 0 && n->recs[l->last_rec].t == now) {
            n->recs[l->last_rec].rate = sum;
            continue;
        }
        if (grow(&n->recs, &n->recs_cap, n->nrecs + 1, sizeof(struct rec)))
            return -1;
        n->recs[n->nrecs] = (struct rec){now, sum, li};
        l->last_rec = (int64_t)n->nrecs++;
    }
    return 0;
}

int flownet_solve(flownet *n, int64_t now_ps, evq *q, uint32_t kind)
{
    if (++n->gen == 0) {  /* wrapped: clear the stamps once */
        for (int32_t i = 0; i < n->nlinks; i++)
            n->links[i].seen = 0;
        for (int32_t f = 0; f < n->flows.top; f++)
            fl(n, f)->seen = 0;
        n->gen = 1;
    }
    compact(n);
    int rc = 0;
    for (size_t i = 0; i < n->ndirty && rc == 0; i++) {
        int32_t l0 = n->dirty[i];
        const struct link *d = &n->links[l0];
        if (d->seen == n->gen)
            continue;
        if (d->nflows == 0 && !d->rule && !n->recording)
            continue;  /* emptied: nothing to re-rate, no rule to call */
        rc = component(n, l0);
        if (rc == 0)
            rc = apply_rules(n);
        if (rc == 0 && n->ncf)
            rc = fill(n);
        if (rc == 0 && n->ncf)
            rc = reschedule(n, now_ps, q, kind);
        if (rc == 0 && n->recording)
            rc = record(n, now_ps);
    }
    for (size_t i = 0; i < n->ndirty; i++)
        n->links[n->dirty[i]].dirty = 0;
    n->ndirty = 0;
    return rc;
}

int flownet_nactive(const flownet *n) { return n->flows.live - (int)n->nzombies; }

int flownet_first_active(const flownet *n)
{
    int best = -1;
    for (int32_t f = 0; f < n->flows.top; f++) {
        const struct flow *p = fl(n, f);
        if (p->user >= 0 && (best < 0 || p->user < fl(n, best)->user))
            best = f;
    }
    return best;
}

int32_t flownet_flow_user(const flownet *n, int flow) { return fl(n, flow)->user; }
double flownet_flow_rate(const flownet *n, int flow) { return fl(n, flow)->rate_Bps; }

const int32_t *flownet_flow_links(const flownet *n, int flow, int *nlinks)
{
    *nlinks = fl(n, flow)->nlinks;
    return fl(n, flow)->links;
}

void flownet_record(flownet *n, int on) { n->recording = on == 2 ? 2 : on != 0; }
void flownet_method(flownet *n, int method) { n->method = method; }
size_t flownet_nrecords(const flownet *n) { return n->nrecs; }

void flownet_record_get(const flownet *n, size_t i, int64_t *time_ps, int *link,
                        double *rate_Bps)
{
    *time_ps = n->recs[i].t;
    *link = n->recs[i].link;
    *rate_Bps = n->recs[i].rate;
}
