/* Data routes and path types over a finished topology. Routes are
 * shortest-latency paths (ties: fewer hops, then lower predecessor id) from
 * Dijkstra per source; a source's tree and each materialised route are
 * published with release stores, so lookups are lock-free once computed and
 * first computations take a mutex. GPUs and host memory nodes are endpoints,
 * never transit. Path types are derived from pci_parent chains only (what
 * nvidia-smi and NCCL report). */
#include "models/topo/topo_impl.h"

#include <stdlib.h>
#include <string.h>

/* ---- routes ---------------------------------------------------------------- */

/* A heap entry: the key (off, d, h, v) in two words compared as unsigned,
 * off above a latency d (>= 0, so below 2^63), hops h above node v (both
 * >= 0), which orders entries as the key's fields in turn. */
typedef struct hent {
    uint64_t od, hv;
} hent;

static hent hkey(int off, int64_t d, int h, int v)
{
    return (hent){(uint64_t)off << 63 | (uint64_t)d, (uint64_t)(uint32_t)h << 32 | (uint32_t)v};
}

static int hless(const hent *x, const hent *y)
{
    return x->od != y->od ? x->od < y->od : x->hv < y->hv;
}

static void hpush(hent *hp, int *n, hent x)
{
    int i = (*n)++;
    while (i > 0) {
        int par = (i - 1) / 2;
        if (!hless(&x, &hp[par]))
            break;
        hp[i] = hp[par];
        i = par;
    }
    hp[i] = x;
}

/* The least entry, out of the heap: down the smaller children to a leaf,
 * then the last entry up from there (it is usually large: one comparison a
 * level on the way down, few on the way up). The entries come out in key
 * order whatever the array's layout, so the nodes settle in the same order. */
static hent hpop(hent *hp, int *n)
{
    hent top = hp[0];
    int m = --(*n), i = 0;
    if (m == 0)
        return top;
    hent x = hp[m];
    for (int c = 1; c < m; c = 2 * i + 1) {
        if (c + 1 < m && hless(&hp[c + 1], &hp[c]))
            c++;
        hp[i] = hp[c];
        i = c;
    }
    while (i > 0 && hless(&x, &hp[(i - 1) / 2])) {
        hp[i] = hp[(i - 1) / 2];
        i = (i - 1) / 2;
    }
    hp[i] = x;
    return top;
}

void topo_tree_free(tree *tr)
{
    if (!tr)
        return;
    free(tr->dist_ps);
    free(tr->off);
    free(tr->hops);
    free(tr->pred);
    free(tr->hp);
    free(tr->done);
    free(tr->touch);
    free(tr);
}

/* Dijkstra from src; called with t->mu held. The cost is (left the NVLink
 * fabric, latency, hops) in that order: a path made only of NVLink links
 * beats any path through PCIe or the host, whatever the latencies (CUDA peer
 * access and NCCL's P2P transport use NVLink whenever it connects the pair),
 * and among paths that touch PCIe, latency decides as before. Without this a
 * calibrated NVLink latency above the host path's could reroute GPU-to-GPU
 * traffic through the host. */
/* Dijkstra from src over (off, latency, hops, predecessor id), grown as it
 * is asked (tree_grow): a node's route is final once it is settled, since
 * every node on its path is settled before it (each hop adds one to hops,
 * so a predecessor's key is smaller), so a tree grown until b is settled
 * gives b the route the whole tree gives, and growing it further later
 * changes no settled node. With only >= 0 the search is for that node alone:
 * other endpoints are dead ends on the way and are never entered, so only
 * only's route may be read from it. tree_init (re)starts tr's search from
 * src, allocating the arrays it lacks (0, or -1 out of memory); tree_start
 * makes a new tree. */
static int tree_init(const topo *t, tree *tr, int src, int only)
{
    int n = t->nnodes;
    /* The last search's nodes alone need resetting where it was for one
     * node too and its arrays are all still there (a whole tree drops its
     * heap and done). */
    int partial = only >= 0 && tr->touch && tr->ntouch >= 0 && tr->dist_ps && tr->off &&
                  tr->hops && tr->pred && tr->hp && tr->done;
    if (!tr->dist_ps)
        tr->dist_ps = malloc(sizeof(int64_t) * (size_t)n);
    if (!tr->off)
        tr->off = malloc((size_t)n);
    if (!tr->hops)
        tr->hops = malloc(sizeof(int) * (size_t)n);
    if (!tr->pred)
        tr->pred = malloc(sizeof(int) * (size_t)n);
    if (!tr->hp)
        tr->hp = malloc(sizeof(hent) * (size_t)(2 * t->nlinks + 2));
    if (!tr->done)
        tr->done = malloc((size_t)n);
    if (!tr->dist_ps || !tr->off || !tr->hops || !tr->pred || !tr->hp || !tr->done)
        return -1;
    tr->src = src;
    tr->only = only;
    tr->uses = 0;
    tr->nh = 0;
    if (partial) {
        for (int i = 0; i < tr->ntouch; i++) {
            int v = tr->touch[i];
            tr->done[v] = 0;
            tr->dist_ps[v] = INT64_MAX;
            tr->off[v] = 1;
            tr->hops[v] = 0;
            tr->pred[v] = -1;
        }
    } else {
        memset(tr->done, 0, (size_t)n);
        for (int v = 0; v < n; v++) {
            tr->dist_ps[v] = INT64_MAX;
            tr->off[v] = 1;
            tr->hops[v] = 0;
            tr->pred[v] = -1;
        }
    }
    tr->ntouch = 0;
    if (only >= 0 && !tr->touch)
        tr->touch = malloc(sizeof(int) * (size_t)n);
    if (tr->touch && only < 0) { /* a whole tree now: nothing recorded */
        free(tr->touch);
        tr->touch = NULL;
    }
    if (tr->touch)
        tr->touch[tr->ntouch++] = src;
    tr->dist_ps[src] = 0;
    tr->off[src] = 0;
    hpush(tr->hp, &tr->nh, hkey(0, 0, 0, src));
    return 0;
}

static tree *tree_start(topo *t, int src, int only)
{
    tree *tr = calloc(1, sizeof *tr);
    if (tr && tree_init(t, tr, src, only)) {
        topo_tree_free(tr);
        tr = NULL;
    }
    return tr;
}

/* Is v's route in tr final? */
static int tree_has(const tree *tr, int v) { return !tr->hp || tr->done[v]; }

/* Settle the next node and relax its links: the node, or -1 when the search
 * is over (its state is then dropped: the tree is whole). */
static int tree_step(const topo *t, tree *tr)
{
    hent *hp = tr->hp;
    unsigned char *done = tr->done;
    int src = tr->src, only = tr->only;
    while (hp && tr->nh > 0) {
        hent x = hpop(hp, &tr->nh);
        int u = (int)(uint32_t)x.hv;
        if (done[u])
            continue;
        done[u] = 1;
        if (u != src && !topo_is_transit(t, u))
            return u;
        for (int i = t->adj_start[u]; i < t->adj_start[u + 1]; i++) {
            int li = t->adj[i];
            const topo_link *l = &t->links[li];
            int v = topo_other_end(l, u);
            if (done[v] || (only >= 0 && v != only && !topo_is_transit(t, v)))
                continue;   /* other endpoints are dead ends on the way to only */
            int64_t nd = tr->dist_ps[u] + l->lat_ps;
            int nhops = tr->hops[u] + 1;
            int noff = tr->off[u] || l->kind != LINK_NVLINK;
            int better = tr->dist_ps[v] == INT64_MAX || noff < tr->off[v] ||
                         (noff == tr->off[v] &&
                          (nd < tr->dist_ps[v] ||
                           (nd == tr->dist_ps[v] &&
                            (nhops < tr->hops[v] ||
                             (nhops == tr->hops[v] &&
                              u < topo_other_end(&t->links[tr->pred[v]], v))))));
            if (better) {
                if (tr->touch && tr->dist_ps[v] == INT64_MAX)
                    tr->touch[tr->ntouch++] = v;
                tr->dist_ps[v] = nd;
                tr->off[v] = (unsigned char)noff;
                tr->hops[v] = nhops;
                tr->pred[v] = li;
                hpush(hp, &tr->nh, hkey(noff, nd, nhops, v));
            }
        }
        return u;
    }
    free(tr->hp);
    free(tr->done);
    tr->hp = NULL;
    tr->done = NULL;
    return -1;
}

/* Settle nodes until target is (target < 0, or unreachable: all of them). */
static void tree_grow(const topo *t, tree *tr, int target)
{
    if (target >= 0 && tree_has(tr, target))
        return;
    int u;
    while ((u = tree_step(t, tr)) >= 0 && u != target)
        ;
}

static size_t route_slot(const topo *t, uint64_t key)
{
    /* Fibonacci hashing: the product's top bits, which every bit of the key
     * reaches (its low bits see only the target's, so pairs into one node
     * used to pile up in one run of slots). */
    uint64_t h = key * 0x9e3779b97f4a7c15ULL;
    size_t j = (size_t)(h >> (64 - __builtin_ctzll((unsigned long long)t->pcap)));
    while (t->pkey[j] && t->pkey[j] != key)
        j = (j + 1) & (t->pcap - 1);
    return j;
}

/* Store route r for key; called with t->mu held. 0, or -1 on OOM. */
static int pair_put(topo *t, uint64_t key, route *r)
{
    if ((t->plen + 1) * 2 > t->pcap) {
        size_t ocap = t->pcap, ncap = ocap ? ocap * 2 : 1024;
        uint64_t *ok = t->pkey;
        route **ov = t->pval;
        t->pkey = calloc(ncap, sizeof *t->pkey);
        t->pval = malloc(ncap * sizeof *t->pval);
        if (!t->pkey || !t->pval) {
            free(t->pkey);
            free(t->pval);
            t->pkey = ok;
            t->pval = ov;
            return -1;
        }
        t->pcap = ncap;
        for (size_t i = 0; i < ocap; i++)
            if (ok[i]) {
                size_t j = route_slot(t, ok[i]);
                t->pkey[j] = ok[i];
                t->pval[j] = ov[i];
            }
        free(ok);
        free(ov);
    }
    size_t j = route_slot(t, key);
    t->pkey[j] = key;
    t->pval[j] = r;
    t->plen++;
    return 0;
}

static uint64_t pair_key(int a, int b) { return (uint64_t)(a + 1) << 32 | (uint32_t)b; }

/* The route a->b walked back from the tree; called with t->mu held. */
static route *make_route(topo *t, const tree *tr, int b)
{
    ASSERTF(tree_has(tr, b) && (tr->only < 0 || tr->only == b), "route to %d not settled", b);
    route *r = arena_alloc(t->ar, sizeof *r);
    if (!r)
        return NULL;
    if (tr->dist_ps[b] == INT64_MAX) {
        *r = (route){b, -1, NULL, NULL, -1};
        return r;
    }
    int n = tr->hops[b];
    int *links = arena_alloc(t->ar, sizeof(int) * (size_t)(n + 1));
    int8_t *dirs = links ? arena_alloc(t->ar, (size_t)n + 1) : NULL;
    if (!dirs)
        return NULL;
    *r = (route){b, n, links, dirs, tr->dist_ps[b]};
    int v = b;
    for (int i = n - 1; i >= 0; i--) {
        const topo_link *l = &t->links[tr->pred[v]];
        links[i] = tr->pred[v];
        dirs[i] = (int8_t)(l->b == v ? 0 : 1); /* a->b as stored is 0 */
        v = topo_other_end(l, v);
    }
    ASSERTF(v == tr->src, "route walk ended at %d, not %d", v, tr->src);
    return r;
}

/* The route a->b (a != b), computed once and cached; with all (or when a's
 * tree is needed a second time) every route from a to a non-transit node
 * is stored. NULL only on out of memory. */
static route *get_route_locked(topo *t, int a, int b, int all);

const route *topo_get_route(const topo *tc, int a, int b, int all)
{
    topo *t = (topo *)tc; /* the cache is logically const: computed once */
    route *r = atomic_load_explicit(&t->last[a], memory_order_acquire);
    if (r && r->dst == b && !all)
        return r;
    pthread_mutex_lock(&t->mu);
    r = get_route_locked(t, a, b, all);
    pthread_mutex_unlock(&t->mu);
    return r;
}

/* Put tr in the tree cache, evicting the oldest. A tree that served many
 * walks (a source reaching every node, as a one-shot's does) leaves its
 * predecessor links behind (t->walk), 4 bytes a node, and its source is
 * walked from them from then on; only sources whose trees come and go after
 * a few routes (one target per source in turn) get all their routes stored. */
static void tree_keep(topo *t, tree *tr)
{
    tree *old = t->tc[t->tc_next];
    if (old && old->uses >= ROUTES_KEPT && !t->walk[old->src]) {
        /* Many walks: its predecessors stay, for walks without a search. */
        tree_grow(t, old, -1);
        t->walk[old->src] = old->pred;
        old->pred = NULL;
    }
    topo_tree_free(old);
    t->tc[t->tc_next] = tr;
    t->tc_next = (t->tc_next + 1) % TREE_CACHE;
}

static tree *cached_tree(const topo *t, int src)
{
    for (int i = 0; i < TREE_CACHE; i++)
        if (t->tc[i] && t->tc[i]->src == src)
            return t->tc[i];
    return NULL;
}

/* Route lookup with t->mu held: see topo_get_route. */
static route *get_route_locked(topo *t, int a, int b, int all)
{
    route *r = NULL;
    uint64_t key = pair_key(a, b);
    if (t->pcap) {
        size_t j = route_slot(t, key);
        if (t->pkey[j])
            r = t->pval[j];
    }
    if (r)
        goto out;
    tree *tr = cached_tree(t, a);
    if (!tr && !all && t->ntrees[a] == 0 && t->nparts[a] < 2) {
        /* One of a source's first two targets: a search that stops at b,
         * not kept (a ring asks each GPU for its neighbour and host memory). */
        t->nparts[a]++;
        if (!t->part)
            t->part = calloc(1, sizeof *t->part);
        tree *part = t->part && !tree_init(t, t->part, a, b) ? t->part : NULL;
        if (part)
            tree_grow(t, part, b);
        route *x = part ? make_route(t, part, b) : NULL;
        if (x && !pair_put(t, key, x))
            r = x;
        goto out;
    }
    if (!tr) {
        if (!(tr = tree_start(t, a, -1)))
            goto out;
        tree_keep(t, tr);
        if (t->ntrees[a] < 255)
            t->ntrees[a]++;
    }
    if (all || t->ntrees[a] >= 3) {
        tree_grow(t, tr, -1);
        for (int v = 0; v < t->nnodes; v++) {
            if (v == a || v == b || topo_is_transit(t, v))
                continue;
            uint64_t k = pair_key(a, v);
            if (t->pcap && t->pkey[route_slot(t, k)])
                continue;
            route *x = make_route(t, tr, v);
            if (!x || pair_put(t, k, x))
                goto out;
        }
    }
    tree_grow(t, tr, b);
    route *x = make_route(t, tr, b);
    if (x && !pair_put(t, key, x))
        r = x;
out:
    if (r)
        atomic_store_explicit(&t->last[a], r, memory_order_release);
    return r;
}

/* ---- walks: a source's tree as predecessors ------------------------------- */

/* src's whole walk, for the targets its walk leaves TOPO_WALK_UNSET: the
 * same entries elsewhere, the unset ones from a whole tree of src, made the
 * first time one is asked (t->walk_full; the walk itself, handed out, never
 * changes). Called with t->mu held; NULL out of memory. */
static const int *walk_full(topo *t, int src)
{
    if (!t->walk_full && !(t->walk_full = calloc((size_t)t->nnodes, sizeof *t->walk_full)))
        return NULL;
    if (!t->walk_full[src]) {
        tree *tr = tree_start(t, src, -1);
        if (!tr)
            return NULL;
        tree_grow(t, tr, -1);
        t->walk_full[src] = tr->pred;
        tr->pred = NULL;
        topo_tree_free(tr);
    }
    return t->walk_full[src];
}

/* Is src's walk (if any) unset at b? */
/* x's one link to node w (nvl: of its NVLink links), -1 if none or more
 * than one (parallel links would make a link's image ambiguous). */
static int link_to(const topo *t, int x, int w, int nvl)
{
    int found = -1;
    for (int i = t->adj_start[x]; i < t->adj_start[x + 1]; i++) {
        const topo_link *l = &t->links[t->adj[i]];
        if ((!nvl || l->kind == LINK_NVLINK) && topo_other_end(l, x) == w) {
            if (found >= 0)
                return -1;
            found = t->adj[i];
        }
    }
    return found;
}

static int degree(const topo *t, int x, int nvl)
{
    int d = 0;
    for (int i = t->adj_start[x]; i < t->adj_start[x + 1]; i++)
        d += !nvl || t->links[t->adj[i]].kind == LINK_NVLINK;
    return d;
}

/* Are x and src twins [route-twins] (nvl: over their NVLink links alone)?
 * Distinct endpoints whose links (nvl: NVLink links) go to the same nodes,
 * one link to each, of the same kind and latency, none between them. */
static int twins(const topo *t, int x, int src, int nvl)
{
    if (x < 0 || x == src || topo_is_transit(t, x) || topo_is_transit(t, src))
        return 0;
    int d = 0;
    for (int i = t->adj_start[x]; i < t->adj_start[x + 1]; i++) {
        const topo_link *l = &t->links[t->adj[i]];
        if (nvl && l->kind != LINK_NVLINK)
            continue;
        int w = topo_other_end(l, x), m = w != src ? link_to(t, src, w, nvl) : -1;
        if (m < 0 || link_to(t, x, w, nvl) != t->adj[i] || t->links[m].kind != l->kind ||
            t->links[m].lat_ps != l->lat_ps)
            return 0;
        d++;
    }
    return d > 0 && d == degree(t, src, nvl);
}

/* src's walk as its twin x's relabelled [route-twins]. Swapping twins x
 * and src maps the links (nvl: the NVLink links) onto themselves, fixing
 * every other node, and so every route from x (nvl: that stays on NVLink)
 * onto one from src: such a route's key (off, latency, hops) is what the
 * search orders by, and its ties are broken between transit nodes (never x
 * or src, which carry no route through them and tie with nothing: a
 * neighbour's one-hop route is the only one of its hop count), which the
 * swap leaves alone; parallel links elsewhere keep their order (a node's
 * links are relaxed in one order). So node v gets the image of the entry
 * of its swap (x <-> src) in x's walk, a link of x's to w becoming src's
 * link to w and back. With nvl, only where x's tree reaches that node over
 * NVLink alone (off[] == 0): a route leaving the NVLink fabric need not
 * turn with the swap (PCIe and host links may differ), TOPO_WALK_UNSET,
 * asked of the whole walk (walk_full). NULL out of memory. */
static int relabel_one(const topo *t, int x, int src, const unsigned char *off, int nvl, int v)
{
    int u = v == src ? x : v == x ? src : v; /* the swap */
    int l = t->walk[x][u];
    if (off && off[u])
        return TOPO_WALK_UNSET;
    if (l < 0) /* x itself (u == x: v is src) or unreached */
        return l;
    const topo_link *k = &t->links[l];
    if (k->a == x || k->b == x)
        return link_to(t, src, topo_other_end(k, x), nvl);
    if (k->a == src || k->b == src)
        return link_to(t, x, topo_other_end(k, src), nvl);
    return l;
}

static int *relabel(const topo *t, int x, int src, const unsigned char *off, int nvl)
{
    int n = t->nnodes;
    const int *bw = t->walk[x];
    int *pw = malloc(sizeof(int) * (size_t)n);
    if (!pw)
        return NULL;
    /* A node other than x, src and their neighbours is its own swap, and
     * its entry no link of x's or src's (those lead into a neighbour):
     * copied; those few then each by relabel_one. */
    for (int v = 0; v < n; v++)
        pw[v] = off && off[v] ? TOPO_WALK_UNSET : bw[v];
    pw[x] = relabel_one(t, x, src, off, nvl, x);
    pw[src] = relabel_one(t, x, src, off, nvl, src);
    for (int e = 0; e < 2; e++) {
        int y = e ? src : x;
        for (int i = t->adj_start[y]; i < t->adj_start[y + 1]; i++) {
            int w = topo_other_end(&t->links[t->adj[i]], y);
            pw[w] = relabel_one(t, x, src, off, nvl, w);
        }
    }
    return pw;
}

/* src's walk relabelled from a twin's, where it has one: the last source
 * searched (t->twin_full: GPUs under one PCIe switch follow one another),
 * then the twin base over NVLink (an NVSwitch box's GPUs are each other's
 * NVLink twins, so one search serves them all). NULL: none (or out of
 * memory). */
static int *twin_walk(topo *t, int src)
{
    int *pw = NULL;
    if (twins(t, t->twin_full, src, 0))
        pw = relabel(t, t->twin_full, src, NULL, 0);
    else if (t->twin_off && twins(t, t->twin_base, src, 1))
        pw = relabel(t, t->twin_base, src, t->twin_off, 1);
    if (pw)
        t->nrelabel++;
    return pw;
}

int topo_route_copy(const topo *tc, int a, int b, int *links, int8_t *dirs, int cap,
                    int64_t *lat_ps)
{
    topo *t = (topo *)tc; /* the cache is logically const */
    ASSERTF(t->finished, "topo_route_copy before topo_finish");
    ASSERTF(a >= 0 && a < t->nnodes && b >= 0 && b < t->nnodes, "a=%d b=%d", a, b);
    *lat_ps = 0;
    if (a == b)
        return 0;
    const route *r = atomic_load_explicit(&t->last[a], memory_order_acquire);
    if (!r || r->dst != b) {
        pthread_mutex_lock(&t->mu);
        r = NULL;
        if (t->pcap) {
            size_t j = route_slot(t, pair_key(a, b));
            if (t->pkey[j])
                r = t->pval[j];
        }
        /* A source past its first two targets, whose tree has been needed
         * at most twice: its first 16 routes from the tree are kept, later
         * ones only walked (a one-shot's sources each reach every GPU). */
        const int *pw = r ? NULL : t->walk[a];
        if (pw && pw[b] == TOPO_WALK_UNSET && !(pw = walk_full(t, a))) {
            pthread_mutex_unlock(&t->mu);
            return -2;
        }
        if (pw) {
            /* One walk back from b, its hops kept from the end of a buffer
             * of WALK_HOPS, copied out once their count is known (a longer
             * route is walked again into the caller's buffers). */
            enum { WALK_HOPS = 64 };
            int wl[WALK_HOPS], n = 0, v = b;
            int8_t wd[WALK_HOPS];
            int64_t lat = 0;
            while (v != a && pw[v] >= 0) {
                const topo_link *l = &t->links[pw[v]];
                if (++n <= WALK_HOPS) {
                    wl[WALK_HOPS - n] = pw[v];
                    wd[WALK_HOPS - n] = (int8_t)(l->b == v ? 0 : 1);
                }
                lat += l->lat_ps;
                v = topo_other_end(l, v);
            }
            if (v != a) {
                n = -1; /* b is not reached */
            } else if (n <= cap && n <= WALK_HOPS) {
                memcpy(links, wl + (WALK_HOPS - n), sizeof(int) * (size_t)n);
                memcpy(dirs, wd + (WALK_HOPS - n), (size_t)n);
            } else {
                v = b;
                for (int i = n - 1; n <= cap && i >= 0; i--) {
                    const topo_link *l = &t->links[pw[v]];
                    links[i] = pw[v];
                    dirs[i] = (int8_t)(l->b == v ? 0 : 1);
                    v = topo_other_end(l, v);
                }
            }
            *lat_ps = n < 0 ? -1 : lat;
            pthread_mutex_unlock(&t->mu);
            return n;
        }
        tree *tr = r ? NULL : cached_tree(t, a);
        if (!r && !tr && (t->ntrees[a] > 0 || t->nparts[a] >= 2) && t->ntrees[a] < 2) {
            if ((tr = tree_start(t, a, -1))) {
                /* A source said to reach many targets keeps no route per
                 * pair: its routes are walked from the start. */
                if (t->nparts[a] == PARTS_MANY)
                    tr->uses = ROUTES_KEPT;
                tree_keep(t, tr);
                t->ntrees[a]++;
            }
        }
        if (tr && tr->uses < ROUTES_KEPT) {
            /* A source's first routes are kept: a ring or SHM hop asks for
             * the same few pairs again and again. */
            tr->uses++;
            tree_grow(t, tr, b);
            route *x = make_route(t, tr, b);
            if (x && !pair_put(t, pair_key(a, b), x))
                r = x;
            tr = NULL;
            if (!r) {
                pthread_mutex_unlock(&t->mu);
                return -2;
            }
        }
        if (tr) {
            tr->uses++;
            tree_grow(t, tr, b);
            int n = tr->dist_ps[b] == INT64_MAX ? -1 : tr->hops[b];
            *lat_ps = n < 0 ? -1 : tr->dist_ps[b];
            for (int v = b, i = n - 1; n <= cap && i >= 0; i--) {
                const topo_link *l = &t->links[tr->pred[v]];
                links[i] = tr->pred[v];
                dirs[i] = (int8_t)(l->b == v ? 0 : 1);
                v = topo_other_end(l, v);
            }
            pthread_mutex_unlock(&t->mu);
            return n;
        }
        if (!r)
            r = get_route_locked(t, a, b, 0);
        if (r)
            atomic_store_explicit(&t->last[a], (route *)r, memory_order_release);
        pthread_mutex_unlock(&t->mu);
        if (!r)
            return -2;
    }
    *lat_ps = r->n < 0 ? -1 : r->dist_ps;
    for (int i = 0; r->n <= cap && i < r->n; i++) {
        links[i] = r->links[i];
        dirs[i] = r->dirs[i];
    }
    return r->n;
}

void topo_route_expect_many(const topo *tc, int src)
{
    topo *t = (topo *)tc; /* the cache is logically const */
    ASSERTF(t->finished, "topo_route_expect_many before topo_finish");
    ASSERTF(src >= 0 && src < t->nnodes, "src=%d", src);
    pthread_mutex_lock(&t->mu);
    t->nparts[src] = PARTS_MANY;
    pthread_mutex_unlock(&t->mu);
}

int topo_route_lat_row(const topo *tc, int src, const int *dst, int n, int64_t *lat_ps)
{
    topo *t = (topo *)tc; /* the cache is logically const */
    ASSERTF(t->finished, "topo_route_lat_row before topo_finish");
    ASSERTF(src >= 0 && src < t->nnodes && n >= 0, "src=%d n=%d", src, n);
    pthread_mutex_lock(&t->mu);
    if (t->nparts[src] != PARTS_MANY) {
        pthread_mutex_unlock(&t->mu);
        return -1;
    }
    /* Its walk (the predecessors of its whole tree), else a cached tree or
     * a new one, grown whole: a route's latency is its target's distance in
     * the tree, the sum of the link latencies topo_route_copy adds up. */
    const int *pw = t->walk[src];
    for (int i = 0; pw && t->twin_off && i < n; i++) /* (only a twin's walk has them) */
        if (pw[dst[i]] == TOPO_WALK_UNSET) { /* a relabelled walk: the whole one */
            if (!(pw = walk_full(t, src))) {
                pthread_mutex_unlock(&t->mu);
                return -2;
            }
            break;
        }
    tree *tr = pw ? NULL : cached_tree(t, src);
    int own = !pw && !tr;
    if (own)
        tr = tree_start(t, src, -1);
    if (tr)
        tree_grow(t, tr, -1);
    /* From a walk: each node's latency once (memo: INT64_MIN not yet, -1 no
     * route), a target's path climbed to the first node known, then each
     * node on it given the target's latency less the links below it. */
    int64_t *memo = tr ? NULL : malloc(sizeof(int64_t) * (size_t)t->nnodes);
    int rc = tr || (pw && memo) ? 0 : -2;
    for (int v = 0; memo && v < t->nnodes; v++)
        memo[v] = v == src ? 0 : INT64_MIN;
    for (int i = 0; !rc && i < n; i++) {
        int v = dst[i];
        ASSERTF(v >= 0 && v < t->nnodes, "dst=%d", v);
        int64_t lat = 0;
        if (v == src) {
            lat = 0;
        } else if (tr) {
            lat = tr->dist_ps[v] == INT64_MAX ? -1 : tr->dist_ps[v];
        } else {
            int u = v;
            int64_t up = 0;
            for (; memo[u] == INT64_MIN && pw[u] >= 0; u = topo_other_end(&t->links[pw[u]], u))
                up += t->links[pw[u]].lat_ps;
            if (memo[u] == INT64_MIN)
                memo[u] = -1; /* a dead end short of src */
            lat = memo[u] < 0 ? -1 : memo[u] + up;
            int64_t below = 0; /* from w down to v */
            for (int w = v; w != u; w = topo_other_end(&t->links[pw[w]], w)) {
                memo[w] = lat < 0 ? -1 : lat - below;
                below += t->links[pw[w]].lat_ps;
            }
        }
        lat_ps[i] = lat;
    }
    free(memo);
    if (own && tr) {
        /* Its predecessors stay, for the routes that follow (tree_keep's
         * walk: a source said to reach many targets is walked anyway). */
        t->walk[src] = tr->pred;
        tr->pred = NULL;
        topo_tree_free(tr);
    }
    pthread_mutex_unlock(&t->mu);
    return rc;
}

const int *topo_route_preds(const topo *tc, int src)
{
    topo *t = (topo *)tc; /* the cache is logically const */
    ASSERTF(t->finished, "topo_route_preds before topo_finish");
    ASSERTF(src >= 0 && src < t->nnodes, "src=%d", src);
    pthread_mutex_lock(&t->mu);
    if (t->nparts[src] == PARTS_MANY && !t->walk[src]) {
        /* Its whole tree's predecessors become its walk: a cached tree's
         * copied (the tree keeps its own), else a twin's relabelled
         * (twin_walk), else a new tree's taken: the source is then the one
         * searched last (twin_full), and the first such with NVLink links
         * the twin base. */
        tree *tr = cached_tree(t, src);
        if (tr) {
            tree_grow(t, tr, -1);
            int *pw = malloc(sizeof(int) * (size_t)t->nnodes);
            if (pw)
                memcpy(pw, tr->pred, sizeof(int) * (size_t)t->nnodes);
            t->walk[src] = pw;
        } else if (!(t->walk[src] = twin_walk(t, src)) && (tr = tree_start(t, src, -1))) {
            tree_grow(t, tr, -1);
            t->walk[src] = tr->pred;
            tr->pred = NULL;
            t->twin_full = src;
            if (!t->twin_off && !topo_is_transit(t, src) && degree(t, src, 1) > 0) {
                t->twin_base = src;
                t->twin_off = tr->off;
                tr->off = NULL;
            }
            topo_tree_free(tr);
        }
    }
    const int *pw = t->nparts[src] == PARTS_MANY ? t->walk[src] : NULL;
    pthread_mutex_unlock(&t->mu);
    return pw;
}

int topo_route(const topo *t, int a, int b, const int **links, const int8_t **dirs)
{
    ASSERTF(t->finished, "topo_route before topo_finish");
    ASSERTF(a >= 0 && a < t->nnodes && b >= 0 && b < t->nnodes, "a=%d b=%d", a, b);
    *links = NULL;
    *dirs = NULL;
    if (a == b)
        return 0;
    const route *r = topo_get_route(t, a, b, 0);
    if (!r || r->n < 0)
        return -1;
    *links = r->links;
    *dirs = r->dirs;
    return r->n;
}

/* The nodes topo_nearest_host_lat_ps looks for: another GPU or host memory
 * reached over a route that leaves the NVLink fabric. */
static int far_host(const topo *t, const tree *tr, int v)
{
    topo_kind k = t->nodes[v].kind;
    return v != tr->src && (k == TOPO_GPU || k == TOPO_HOSTMEM) && tr->off[v] &&
           tr->dist_ps[v] != INT64_MAX;
}

int64_t topo_nearest_host_lat_ps(const topo *tc, int src)
{
    topo *t = (topo *)tc; /* the tree cache is logically const */
    ASSERTF(t->finished && src >= 0 && src < t->nnodes, "src=%d", src);
    pthread_mutex_lock(&t->mu);
    tree *tr = cached_tree(t, src);
    int own = !tr;
    if (own)
        tr = tree_start(t, src, -1);
    /* Nodes settle in key order, (off, latency, hops): the first far host
     * settled is the nearest, so the search stops there. Among nodes a
     * cached tree has settled already, the nearest far host is the answer
     * if there is one. */
    int64_t best = -1;
    for (int v = 0; tr && v < t->nnodes; v++)
        if (tree_has(tr, v) && far_host(t, tr, v) && (best < 0 || tr->dist_ps[v] < best))
            best = tr->dist_ps[v];
    for (int u; tr && best < 0 && (u = tree_step(t, tr)) >= 0;)
        if (far_host(t, tr, u))
            best = tr->dist_ps[u];
    if (own)
        topo_tree_free(tr);
    pthread_mutex_unlock(&t->mu);
    return best;
}

int64_t topo_route_lat_ps(const topo *t, int a, int b)
{
    ASSERTF(t->finished, "topo_route_lat_ps before topo_finish");
    ASSERTF(a >= 0 && a < t->nnodes && b >= 0 && b < t->nnodes, "a=%d b=%d", a, b);
    if (a == b)
        return 0;
    int64_t lat;
    return topo_route_copy(t, a, b, NULL, NULL, 0, &lat) < -1 ? -1 : lat;
}

/* ---- path types ------------------------------------------------------------ */

int topo_gpu_nvlinks(const topo *t, int gpu_a, int gpu_b)
{
    ASSERTF(t->finished, "topo_gpu_nvlinks before topo_finish");
    int a = topo_gpu_node(t, gpu_a), b = topo_gpu_node(t, gpu_b);
    ASSERTF(a >= 0 && b >= 0, "gpu %d %d", gpu_a, gpu_b);
    int lanes = 0;
    for (int i = t->adj_start[a]; i < t->adj_start[a + 1]; i++) {
        const topo_link *l = &t->links[t->adj[i]];
        if (l->kind != LINK_NVLINK)
            continue;
        int v = topo_other_end(l, a);
        if (v == b) {
            lanes += l->nvlinks;
        } else if (t->nodes[v].kind == TOPO_NVSWITCH) {
            for (int j = t->adj_start[b]; j < t->adj_start[b + 1]; j++) {
                const topo_link *m = &t->links[t->adj[j]];
                if (m->kind == LINK_NVLINK && topo_other_end(m, b) == v)
                    lanes += l->nvlinks < m->nvlinks ? l->nvlinks : m->nvlinks;
            }
        }
    }
    return lanes;
}

int topo_nvl_prefix(const topo *t)
{
    int best = 0;
    unsigned char *on = calloc((size_t)t->ngpus + 1, 1);
    if (!on)
        return 0;   /* no prefix: callers check pair by pair */
    for (int v = 0; v < t->nnodes; v++) {
        if (t->nodes[v].kind != TOPO_NVSWITCH)
            continue;
        /* GPUs attached to v, then the longest run 0..k-1 among them. */
        memset(on, 0, (size_t)t->ngpus);
        for (int i = t->adj_start[v]; i < t->adj_start[v + 1]; i++) {
            const topo_link *l = &t->links[t->adj[i]];
            int u = topo_other_end(l, v);
            if (l->kind == LINK_NVLINK && l->nvlinks > 0 && t->nodes[u].kind == TOPO_GPU)
                on[t->nodes[u].gpu] = 1;
        }
        int k = 0;
        while (k < t->ngpus && on[k])
            k++;
        best = k > best ? k : best;
    }
    free(on);
    for (int k = best; k < t->ngpus; k++)
        for (int j = 0; j < k; j++)
            if (topo_gpu_nvlinks(t, j, k) <= 0)
                return k < 1 ? 1 : k;
    return t->ngpus;
}

int topo_gpus_nvlinked(const topo *t, int n)
{
    ASSERTF(t->finished, "topo_gpus_nvlinked before topo_finish");
    return n <= t->nvl_prefix;
}

/* Is there a GPU c with direct NVLinks to both a and b (NCCL's NVB)? */
static int nvb(const topo *t, int a, int b)
{
    for (int i = t->adj_start[a]; i < t->adj_start[a + 1]; i++) {
        const topo_link *l = &t->links[t->adj[i]];
        int c = topo_other_end(l, a);
        if (l->kind != LINK_NVLINK || t->nodes[c].kind != TOPO_GPU)
            continue;
        for (int j = t->adj_start[c]; j < t->adj_start[c + 1]; j++) {
            const topo_link *m = &t->links[t->adj[j]];
            if (m->kind == LINK_NVLINK && topo_other_end(m, c) == b)
                return 1;
        }
    }
    return 0;
}

/* The PCI relation of two distinct GPUs, from their pci_parent chains. */
typedef enum pci_rel { REL_PIX, REL_PXB, REL_PHB, REL_NODE, REL_SYS } pci_rel;

static pci_rel pci_relation(const topo *t, int a, int b)
{
    /* Depth of each chain, then climb to the lowest common ancestor, counting
     * the switches passed on both sides. */
    int da = 0, db = 0;
    for (int v = t->nodes[a].pci_parent; v >= 0; v = t->nodes[v].pci_parent)
        da++;
    for (int v = t->nodes[b].pci_parent; v >= 0; v = t->nodes[v].pci_parent)
        db++;
    int x = t->nodes[a].pci_parent, y = t->nodes[b].pci_parent, sw = 0;
    while (da > db) {
        sw += t->nodes[x].kind == TOPO_SWITCH;
        x = t->nodes[x].pci_parent;
        da--;
    }
    while (db > da) {
        sw += t->nodes[y].kind == TOPO_SWITCH;
        y = t->nodes[y].pci_parent;
        db--;
    }
    while (x != y && x >= 0 && y >= 0) {
        sw += (t->nodes[x].kind == TOPO_SWITCH) + (t->nodes[y].kind == TOPO_SWITCH);
        x = t->nodes[x].pci_parent;
        y = t->nodes[y].pci_parent;
    }
    if (x < 0 || y < 0 || x != y) {
        /* Different CPU trees: the same NUMA node is NODE, else SYS. */
        int ca = topo_top_cpu(t, a), cb = topo_top_cpu(t, b);
        int na = ca >= 0 ? t->nodes[ca].numa : -1, nb = cb >= 0 ? t->nodes[cb].numa : -1;
        return na >= 0 && na == nb ? REL_NODE : REL_SYS;
    }
    switch (t->nodes[x].kind) {
    case TOPO_SWITCH:
        return sw + 1 <= 1 ? REL_PIX : REL_PXB;
    case TOPO_ROOT:
        return REL_PHB;
    default:
        return REL_NODE;
    }
}

static const topo_path rel_path[] = {PATH_PIX, PATH_PXB, PATH_PHB, PATH_NODE, PATH_SYS};
static const char *const rel_smi[] = {"PIX", "PXB", "PHB", "NODE", "SYS"};

topo_path topo_gpu_path(const topo *t, int gpu_a, int gpu_b)
{
    ASSERTF(t->finished, "topo_gpu_path before topo_finish");
    if (gpu_a == gpu_b)
        return PATH_LOC;
    if (topo_gpu_nvlinks(t, gpu_a, gpu_b) > 0)
        return PATH_NVL;
    int a = topo_gpu_node(t, gpu_a), b = topo_gpu_node(t, gpu_b);
    if (nvb(t, a, b))
        return PATH_NVB;
    return rel_path[pci_relation(t, a, b)];
}

const char *topo_gpu_path_smi(const topo *t, int gpu_a, int gpu_b, char *buf)
{
    ASSERTF(t->finished, "topo_gpu_path_smi before topo_finish");
    if (gpu_a == gpu_b) {
        snprintf(buf, 8, "X");
        return buf;
    }
    int nv = topo_gpu_nvlinks(t, gpu_a, gpu_b);
    if (nv > 0)
        snprintf(buf, 8, "NV%d", nv > 999 ? 999 : nv);
    else
        snprintf(buf, 8, "%s",
                 rel_smi[pci_relation(t, topo_gpu_node(t, gpu_a), topo_gpu_node(t, gpu_b))]);
    return buf;
}

#define NV10(d) "NV" #d "0", "NV" #d "1", "NV" #d "2", "NV" #d "3", "NV" #d "4", \
                "NV" #d "5", "NV" #d "6", "NV" #d "7", "NV" #d "8", "NV" #d "9"
static const char *const nv_names[] = {
    "NVL", "NV1", "NV2", "NV3", "NV4", "NV5", "NV6", "NV7", "NV8", "NV9",
    NV10(1), NV10(2), NV10(3), NV10(4), NV10(5), NV10(6),
};

const char *topo_path_name(topo_path p, int nvlinks)
{
    switch (p) {
    case PATH_LOC: return "LOC";
    case PATH_NVL:
        return nvlinks > 0 && nvlinks < (int)(sizeof nv_names / sizeof *nv_names)
                   ? nv_names[nvlinks] : "NVL";
    case PATH_NVB: return "NVB";
    case PATH_PIX: return "PIX";
    case PATH_PXB: return "PXB";
    case PATH_PHB: return "PHB";
    case PATH_SYS: return "SYS";
    default: return "?";
    }
}
