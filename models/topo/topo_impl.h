/* Inside the topology: the graph's storage and route cache, shared by the
 * graph (models/topo/topo.c) and the routes (models/topo/route.c) and by
 * nothing else. Read models/topo/topo.h for the contract. */
#ifndef MODELS_TOPO_TOPO_IMPL_H
#define MODELS_TOPO_TOPO_IMPL_H

#include <pthread.h>
#include <stdatomic.h>
#include <stdint.h>

#include "models/topo/topo.h"
#include "sim/arena.h"

typedef struct route {
    int dst;            /* b of the pair a->b */
    int n;              /* hops; -1: unreachable */
    int *links;
    int8_t *dirs;
    int64_t dist_ps;    /* -1: unreachable */
} route;

/* Shortest-path tree from one source (Dijkstra); a few recent ones are kept
 * to answer bursts of questions from one source. */
typedef struct tree {
    int src;
    int64_t *dist_ps;   /* INT64_MAX = unreachable */
    unsigned char *off; /* 1 once the path left the NVLink fabric (see tree_step) */
    int *hops;
    int *pred;          /* link id into the node, -1 at the source */
    unsigned uses;      /* routes walked from it (topo_route_copy) */
    int only;           /* >= 0: a search for that node alone (route.c) */
    struct hent *hp;    /* the search's heap while it grows; NULL once whole */
    int nh;
    unsigned char *done; /* settled nodes, while it grows */
    /* A search for one node (only >= 0) records the nodes it sets, so the
     * next such search in the same arrays resets those alone (NULL: none). */
    int *touch, ntouch;
} tree;

/* Free a tree and its search state (NULL ok). */
void topo_tree_free(tree *tr);

/* TREE_CACHE trees kept; a tree's first ROUTES_KEPT routes are stored per
 * pair, later ones walked; nparts PARTS_MANY: topo_route_expect_many. */
enum { TREE_CACHE = 8, ROUTES_KEPT = 16, PARTS_MANY = 3 };

struct topo {
    arena *ar;
    const char *name;
    topo_node *nodes;
    long *node_line;
    int nnodes, cap_nodes;
    topo_link *links;
    long *link_line;
    unsigned char *bw_given;
    int nlinks, cap_links;
    int *gpus;
    int ngpus, cap_gpus;
    int *hash; /* open addressing on names; node ids, -1 empty */
    int hash_cap;
    int *lhash; /* open addressing on node pairs; link ids, -1 empty */
    int lhash_cap;
    long cur_line;
    topo_params params;
    int *p2p;          /* triples (gpu a, gpu b, topo_p2p) of pairs not OK */
    int np2p, cap_p2p;
    const char **assumed;  /* topo_assume's lines (arena strings) */
    int nassumed, cap_assumed;
    int finished;
    const char *where;
    int *adj_start, *adj; /* CSR of link ids per node */
    /* Route cache, under mu: the routes asked for (pairs a,b in an open
     * addressing table, key ((a+1) << 32 | b)), recent trees, and how many
     * trees each source has needed (a source asked again after its tree
     * left the cache gets all its routes stored at once). Memory follows
     * the pairs in use, not all nodes squared. */
    pthread_mutex_t mu;
    uint64_t *pkey;
    route **pval;
    size_t pcap, plen;
    tree *tc[TREE_CACHE];
    tree *part; /* the arrays of the searches stopped at one target, reused (route.c) */
    int tc_next;
    unsigned char *ntrees;
    /* Per source, the predecessor links of its whole tree once that tree
     * served many routes (a one-shot's source reaches every node): routes
     * from it are walked, neither kept per pair nor searched again. */
    int **walk;
    /* Walks relabelled from a twin's (route.c [route-twins]): the source
     * topo_route_preds searched last (twin_full, -1 none); the first such
     * source with NVLink links (twin_base) and which nodes its tree reaches
     * over NVLink alone (twin_off[v] == 0; NULL until then); the walks
     * relabelled so far (nrelabel, for the tests). */
    int twin_full, twin_base;
    unsigned char *twin_off;
    unsigned nrelabel;
    /* Per source whose walk has unset entries: its whole tree's
     * predecessors, made when one of those is asked (route.c walk_full). */
    int **walk_full;
    unsigned char *nparts; /* per source: searches stopped at a target (route.c), or
                              PARTS_MANY: said to reach many (topo_route_expect_many) */
    /* Lock-free first look: per source node, the route last asked for (a
     * ring asks the same pair again and again). */
    _Atomic(route *) *last;
    /* GPUs 0..nvl_prefix-1 are pairwise joined by NVLink lanes (set by
     * topo_nvl_prefix in topo_finish). */
    int nvl_prefix;
};

/* The route a->b (computed on first use, then cached; all = store every route
 * of a's tree at once); NULL when out of memory. */
const route *topo_get_route(const topo *t, int a, int b, int all);
/* 1 for nodes data may cross (switches, CPUs), 0 for endpoints (GPU, host
 * memory); inline, as the route searches ask for every link they relax. */
static inline int topo_is_transit(const topo *t, int v)
{
    topo_kind k = t->nodes[v].kind;
    return k != TOPO_GPU && k != TOPO_HOSTMEM;
}
static inline int topo_other_end(const topo_link *l, int v) { return l->a == v ? l->b : l->a; }
/* The largest k such that GPUs 0..k-1 are pairwise NVLinked: the longest
 * prefix attached to one NVSwitch, then extended pair by pair (direct
 * meshes), so O(GPUs x links) on NVSwitch boxes. */
int topo_nvl_prefix(const topo *t);
/* The CPU at the top of v's PCI parent chain, -1 if none. */
int topo_top_cpu(const topo *t, int v);

#endif
