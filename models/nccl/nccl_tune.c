/* NCCL's decisions, emulated from its source (docs/model.md "NCCL's
 * decisions" lists each rule with its file and function). Rules were read in
 * NVIDIA/nccl v2.28.9-1 and v2.30.7-1, and their differences in v2.26.6-1,
 * v2.27.7-1 and v2.29.7-1; where versions differ the version table says so. The emulation builds NCCL's own picture of the machine (GPU, PCI,
 * NVS and CPU nodes; directed links with NCCL's bandwidth figures, not the
 * simulator's), computes paths the way NCCL does (fewest hops, then highest
 * bandwidth; type = worst link), applies the P2P level, runs the ring and
 * tree searches (a backtracking search that subtracts each channel's
 * bandwidth from every link it crosses, with NCCL's step budgets), and then
 * tuning and enqueue arithmetic. Floats are used where NCCL uses floats, so
 * near-ties fall the same way. Invariant: after nccl_tune_new nothing here
 * mutates a nccl_tune. */
#include "models/nccl/nccl_tune.h"

#include "models/nccl/nccl_graphfile.h"
#include "models/nccl/nccl_nvls.h"

#include <float.h>
#include <math.h>
#include <stdlib.h>
#include <stdatomic.h>
#include <string.h>

/* --- versions ------------------------------------------------------------ */

static const float sm100_intra_226[] = {90, 80, 70, 60, 50, 40, 30, 24, 20, 19};
static const float sm100_intra_228[] = {90, 80, 70, 60, 50, 40, 30, 24, 20, 19, 18};
static const float sm100_intra_230[] = {90, 80, 70, 60, 50, 45, 40, 30, 24, 20, 19, 18};
static const float sm90_intra[] = {60, 50, 40, 30, 24, 20, 15, 12, 11, 6, 3};
static const float base_intra[] = {40, 30, 20, 18, 15, 12, 10, 9, 7, 6, 5, 4, 3};

static const struct nccl_version {
    const char *name, *tag;
    const float *sm100_intra;   /* search.cc sm100SpeedArrayIntra */
    int n_sm100_intra;
    float bw_ring_ll128_blackwell;  /* tuning.cc perChMaxRingLL128Bws[Blackwell][1 node] */
    float bw_tree_ll128_blackwell;  /* tuning.cc perChMaxTreeLL128Bws[Blackwell][1 node] */
    int min_traffic_per_channel;    /* enqueue.cc MinTrafficPerChannel */
    int per_channel_floor;          /* scheduleCollTasksToPlan: trafficPerChannel =
                                       max(MinTrafficPerChannel, traffic / nc) (1, up to
                                       2.28) or divUp(traffic / nc, 16) x 16 (0, 2.29 on) */
    int p2p_ll_per_send;            /* enqueue.cc addP2pToPlan: a send is LL when it is at
                                       most P2P_LL_THRESHOLD per channel it is split over (1,
                                       2.29 on), or per p2pnChannelsPerPeer, its channels
                                       then counted in LL's steps (0, up to 2.28) */
} versions[] = {
    {"2.30", "v2.30.7-1", sm100_intra_230, 12, 40.0f, 55.6f, 32 << 10, 0, 1},
    {"2.29", "v2.29.7-1", sm100_intra_230, 12, 40.0f, 55.6f, 32 << 10, 0, 1},
    {"2.28", "v2.28.9-1", sm100_intra_228, 11, 2 * 36.7f, 55.6f, 16 << 10, 1, 0},
    {"2.27", "v2.27.7-1", sm100_intra_228, 11, 2 * 36.7f, 2 * 36.7f, 16 << 10, 1, 0},
    {"2.26", "v2.26.6-1", sm100_intra_226, 10, 2 * 36.7f, 2 * 36.7f, 16 << 10, 1, 0},
};
enum { NVERSIONS = sizeof versions / sizeof versions[0] };

int nccl_tune_nversions(void) { return NVERSIONS; }
const char *nccl_tune_version_name(int v) { return v >= 0 && v < NVERSIONS ? versions[v].name : NULL; }
const char *nccl_tune_version_tag(int v) { return v >= 0 && v < NVERSIONS ? versions[v].tag : NULL; }

int nccl_tune_version_parse(const char *s)
{
    for (int v = 0; v < NVERSIONS; v++) {
        size_t l = strlen(versions[v].name);
        if (!strncmp(s, versions[v].name, l) && (s[l] == 0 || s[l] == '.'))
            return v;
    }
    return -1;
}

const char *nccl_tune_version_list(char *buf, size_t size)
{
    buf[0] = 0;
    for (int v = 0; v < NVERSIONS; v++)
        snprintf(buf + strlen(buf), size - strlen(buf), "%s%s", v ? ", " : "", versions[v].name);
    return buf;
}

/* --- NCCL's system graph ------------------------------------------------- */

/* Node and link types as NCCL numbers them (src/graph/topo.h). */
enum { N_GPU, N_PCI, N_NVS, N_CPU };
enum { L_LOC = 0, L_NVL = 1, L_PCI = 4, L_SYS = 9 };
enum { P_LOC = 0, P_NVL = 1, P_NVB = 2, P_PIX = 4, P_PXB = 5, P_PXN = 7, P_PHB = 8, P_SYS = 9,
       P_DIS = 11 };
enum { MAX_NODES = 4 * NCCL_TUNE_MAX_RANKS + 64, MAX_LINKS = NCCL_TUNE_MAX_RANKS + 64,
       MAX_HOPS = 32, MAX_SEARCH_CH = 32 };
/* A link id: node << HOP_SHIFT | its index among the node's links. */
enum { HOP_SHIFT = 8 };
_Static_assert(MAX_LINKS <= 1 << HOP_SHIFT, "link index fits below HOP_SHIFT");
#define LOC_BW 5000.0f

typedef struct nlink {
    float bw;        /* remaining: the search subtracts from it */
    int32_t milli;   /* bw in thousandths during a try in integers (search_try) */
    int16_t to, from;   /* the nodes it joins (MAX_NODES fits) */
    int16_t rev;     /* index of to's link back to from of the same type (link_reverse) */
    uint8_t type;
    uint8_t exact;   /* exact_bw of its starting bandwidth (link_reverse) */
    uint8_t on_path; /* listed in the search's lk (search_prep) */
} nlink;
_Static_assert(MAX_NODES < 32768 && MAX_LINKS < 32768, "nlink's node and link fields fit");

typedef struct nnode {
    int type, rank;   /* rank for GPUs, else -1 */
    int nlinks, cap;  /* links[0 .. nlinks), MAX_LINKS at most; cap allocated */
    nlink *links;
} nnode;

/* A path to a base node: its hops are this node's first hop (link id
 * node << HOP_SHIFT | index), then the path of the node it leads to (the
 * breadth-first search builds each path on one already final), or (via >= 0,
 * a GPU pair's detour through a CPU) the path to via, then via's. */
typedef struct npath {
    float bw;
    int32_t hop0;
    int16_t via;
    uint8_t count, type;   /* MAX_HOPS, P_DIS at most */
} npath;

/* One GPU pair's path as the search reads it (search_prep). */
typedef struct gpath {
    uint8_t type, rtype;      /* path type a -> b and b -> a */
    uint8_t intel_phb;        /* INTEL_P2P_OVERHEAD applies to its PCI links */
    uint8_t exact;            /* every link's bandwidth exact (exact_bw) at the start */
    int count, off;           /* its links: ghop[off .. off + count) */
    float min_other, min_pci; /* the least starting bandwidth of its non-PCI, PCI links */
} gpath;

enum { MAX_MEMO = 512, MAX_CAPS = 64 };

/* A search try that completed no channel (search_try). */
/* deep: the try reached the chains' last GPU (rec_gpu at step n - 1). */
typedef struct memo { int pattern, same, budget, type, caps, left, deep; } memo;

typedef struct sys {
    int nn, ngpu;
    nnode *node;
    int gpu[NCCL_TUNE_MAX_RANKS];   /* node id of rank r */
    npath *path;                    /* path[slot[base]*nn + from]: from -> base */
    int *slot;                      /* a GPU's or CPU's row of path, -1 other nodes */
    float max_bw, total_bw;
    topo_cpu cpu;
    int sm;
    int nends;                      /* GPU and CPU nodes: every path read starts at one */
    /* The search's candidate order (next_gpus), fixed once the paths are:
     * order[r * ngpu + i] for i < norder[r], computed by search_prep; cand,
     * ncand: the same less what one try refuses whatever happens. */
    int *order, norder[NCCL_TUNE_MAX_RANKS];
    int *cand, ncand[NCCL_TUNE_MAX_RANKS];
    int cand_for[2];                /* cand's try: 1 + is_tree, type (0: none yet) */
    float cand_bw;
    int has_nvs;
    /* The search's state and its copy of the GPU pairs' paths, by rank. */
    gpath *gp;                      /* gp_at */
    int gp_nbr;
    nlink **ghop;
    uint64_t used[NCCL_TUNE_MAX_RANKS];   /* bit per channel */
    /* Tries answered from earlier ones (search_try): the links on GPU
     * paths, their use counts per amount (caps, one row per amount in
     * caps_f, rows equal to an earlier one share its class), the tries. */
    int every_step;                 /* nccl_env's search_every_step: none of the shortcuts */
    /* A try in thousandths (search_try): the links' and amounts' figures as
     * integers, lk_exact while every link on a GPU path is exact. */
    int milli, lk_exact;
    int32_t milli_bw, milli_pci;
    int memo_ok, any_intel_phb, types;
    int rtype_le;        /* every searched pair's reverse type at most its own */
    nlink **lk;
    int nlk, ncaps, nmemo;
    uint16_t *caps;
    float caps_f[MAX_CAPS];
    int caps_class[MAX_CAPS];
    memo memo[MAX_MEMO];
} sys;

#define PATH(s, from, base) \
    (&(s)->path[(size_t)(s)->slot[base] * (size_t)(s)->nn + (size_t)(from)])

static nlink *hop_link(const sys *s, int h)
{
    return &s->node[h >> HOP_SHIFT].links[h & ((1 << HOP_SHIFT) - 1)];
}

static int add_node(sys *s, int type, int rank)
{
    if (s->nn == MAX_NODES)
        return -1;
    s->node[s->nn] = (nnode){type, rank, 0, 0, NULL};
    return s->nn++;
}

/* topo.cc ncclTopoConnectNodes: links to the same node and type merge (bw
 * adds up); links stay sorted by bandwidth, highest first. */
static int link_nodes(sys *s, int a, int b, int type, float bw)
{
    nnode *n = &s->node[a];
    int i;
    for (i = 0; i < n->nlinks; i++)
        if (n->links[i].to == b && n->links[i].type == type)
            break;
    if (i == n->nlinks) {
        if (n->nlinks == MAX_LINKS)
            return -1;
        if (n->nlinks == n->cap) {
            int cap = n->cap ? 2 * n->cap : 4;
            nlink *l = realloc(n->links, sizeof *l * (size_t)cap);
            if (!l)
                return -1;
            n->links = l;
            n->cap = cap;
        }
        n->links[n->nlinks++] =
            (nlink){.to = (int16_t)b, .from = (int16_t)a, .rev = -1, .type = (uint8_t)type};
    }
    n->links[i].bw += bw;
    while (i > 0 && n->links[i - 1].bw < n->links[i].bw) {
        nlink t = n->links[i - 1];
        n->links[i - 1] = n->links[i];
        n->links[i] = t;
        i--;
    }
    return 0;
}

/* NCCL's per-lane NVLink figure (the topology's table). */
static float nvlink_bw(int sm) { return (float)topo_nvlink_lane_GBps(sm); }

/* topo.cc ncclTopoGetInterCpuBw: one figure per CPU family. */
static float socket_bw(topo_cpu c)
{
    switch (c) {
    case CPU_AMD: return 16.0f;            /* AMD_BW */
    case CPU_INTEL_BDW: return 6.0f;       /* BDW_QPI_BW */
    case CPU_INTEL_SKL: return 10.0f;      /* SKL_QPI_BW */
    case CPU_INTEL_SRP: return 22.0f;      /* SRP_QPI_BW */
    case CPU_INTEL_ERP: return 40.0f;      /* ERP_QPI_BW */
    case CPU_ARM: return 6.0f;             /* ARM_BW */
    case CPU_POWER: return 32.0f;          /* P9_BW */
    case CPU_ZHAOXIN: return 6.0f;         /* ZPI_BW */
    case CPU_ZHAOXIN_YONGFENG: return 9.0f;
    default: return LOC_BW;                /* unknown x86 vendor: LOC_BW */
    }
}

static int is_intel(topo_cpu c) { return c >= CPU_INTEL_BDW && c <= CPU_INTEL_ERP; }

/* NCCL rates a PCIe link at width x per-lane speed / 80 (topo.cc,
 * kvDictPciGen: 2.5 GT/s = 15 ... 64 GT/s = 480, unknown 60, width 0 = 16). */
static float pcie_bw(const topo_link *l)
{
    static const int speed[] = {60, 15, 30, 60, 120, 240, 480};
    int g = l && l->kind == LINK_PCIE && l->pcie_gen >= 1 && l->pcie_gen <= 6 ? l->pcie_gen : 0;
    int w = l && l->kind == LINK_PCIE && l->pcie_width > 0 ? l->pcie_width : 16;
    return (float)(w * speed[g]) / 80.0f;
}

/* up[v]: the first link (by index) between node v and its PCI parent, or
 * NULL; one pass over the links. */
static void parent_links(const topo *t, const topo_link **up)
{
    for (int v = 0; v < topo_nnodes(t); v++)
        up[v] = NULL;
    for (int i = 0; i < topo_nlinks(t); i++) {
        const topo_link *l = topo_link_at(t, i);
        if (!up[l->a] && topo_node_at(t, l->a)->pci_parent == l->b)
            up[l->a] = l;
        if (!up[l->b] && topo_node_at(t, l->b)->pci_parent == l->a)
            up[l->b] = l;
    }
}

static int exact_bw(float v);

/* Each link's rev: the index of the link back (set_paths walks paths
 * backwards), -1 if none, and whether its bandwidth is exact; after the
 * links are final (link_nodes sorts). */
static void link_reverse(sys *s)
{
    for (int v = 0; v < s->nn; v++)
        for (int l = 0; l < s->node[v].nlinks; l++) {
            nlink *k = &s->node[v].links[l];
            const nnode *w = &s->node[k->to];
            k->exact = (uint8_t)exact_bw(k->bw);
            k->rev = -1;
            for (int j = 0; j < w->nlinks; j++)
                if (w->links[j].to == v && w->links[j].type == k->type) {
                    k->rev = (int16_t)j;
                    break;
                }
        }
}

/* NCCL's nodes for collsim's: GPUs of the communicator, switches as PCI
 * nodes, CPUs; a root port is part of its CPU; all NVSwitches are one NVS
 * node (as NCCL merges them); host memory is not a node. */
static int build_sys(sys *s, const topo *t, int nranks, err *e)
{
    int nt = topo_nnodes(t);
    int *map = malloc(sizeof(int) * (size_t)nt);
    const topo_link **up = malloc(sizeof *up * (size_t)nt);
    if (!map || !up) {
        free(map);
        free(up);
        return err_set(e, ERR_SYSTEM, "out of memory");
    }
    parent_links(t, up);
    const topo_params *tp = topo_params_get(t);
    s->cpu = tp->cpu;
    s->sm = tp->gpu_sm > 0 ? tp->gpu_sm : 80;
    s->ngpu = nranks;
    int nvs = -1, rc = 0;
    /* Only what the communicator's GPUs hang from (NCCL trims the rest;
     * other CPUs could never be on a path, CPUs being fully meshed). */
    for (int v = 0; v < nt; v++)
        map[v] = -2;
    for (int r = 0; r < nranks; r++)
        for (int v = topo_gpu_node(t, r); v >= 0; v = topo_node_at(t, v)->pci_parent)
            map[v] = -1;
    for (int i = 0; i < topo_nlinks(t); i++) {
        const topo_link *l = topo_link_at(t, i);
        int a = topo_node_at(t, l->a)->gpu, b = topo_node_at(t, l->b)->gpu;
        if (l->kind == LINK_NVLINK && ((a >= 0 && a < nranks) || (b >= 0 && b < nranks)))
            map[l->a] = map[l->b] = -1;
    }
    for (int r = 0; r < nranks && !rc; r++)
        rc = (s->gpu[r] = add_node(s, N_GPU, r)) < 0;
    for (int v = 0; v < nt && !rc; v++) {
        const topo_node *n = topo_node_at(t, v);
        int needed = map[v] == -1;
        map[v] = -1;
        if (!needed)
            continue;
        if (n->kind == TOPO_GPU)
            map[v] = n->gpu < nranks ? s->gpu[n->gpu] : -1;
        else if (n->kind == TOPO_SWITCH)
            rc = (map[v] = add_node(s, N_PCI, -1)) < 0;
        else if (n->kind == TOPO_CPU)
            rc = (map[v] = add_node(s, N_CPU, -1)) < 0;
        else if (n->kind == TOPO_NVSWITCH)
            rc = (map[v] = nvs >= 0 ? nvs : (nvs = add_node(s, N_NVS, -1))) < 0;
    }
    for (int v = 0; v < nt && !rc; v++) {
        /* A root port stands for its CPU. */
        const topo_node *n = topo_node_at(t, v);
        if (n->kind != TOPO_ROOT)
            continue;
        int p = n->pci_parent;
        while (p >= 0 && topo_node_at(t, p)->kind == TOPO_ROOT)
            p = topo_node_at(t, p)->pci_parent;
        map[v] = p >= 0 ? map[p] : -1;
    }
    /* PCI tree: child -> parent at the child's own link speed and width. */
    for (int v = 0; v < nt && !rc; v++) {
        const topo_node *n = topo_node_at(t, v);
        if ((n->kind != TOPO_GPU && n->kind != TOPO_SWITCH) || map[v] < 0 || n->pci_parent < 0 ||
            map[n->pci_parent] < 0)
            continue;
        float bw = pcie_bw(up[v]);
        rc = link_nodes(s, map[v], map[n->pci_parent], L_PCI, bw) ||
             link_nodes(s, map[n->pci_parent], map[v], L_PCI, bw);
    }
    /* NVLink: lanes x NCCL's per-lane figure, both ways. */
    for (int i = 0; i < topo_nlinks(t) && !rc; i++) {
        const topo_link *l = topo_link_at(t, i);
        if (l->kind != LINK_NVLINK || map[l->a] < 0 || map[l->b] < 0)
            continue;
        float bw = (float)(l->nvlinks > 0 ? l->nvlinks : 1) * nvlink_bw(s->sm);
        rc = link_nodes(s, map[l->a], map[l->b], L_NVL, bw) ||
             link_nodes(s, map[l->b], map[l->a], L_NVL, bw);
    }
    /* topo.cc ncclTopoConnectCpus: every CPU pair, one figure per family
     * (map reused for the CPUs' node ids). */
    int ncpu = 0;
    for (int a = 0; a < s->nn; a++)
        if (s->node[a].type == N_CPU)
            map[ncpu++] = a;
    for (int a = 0; a < ncpu && !rc; a++)
        for (int b = 0; b < ncpu && !rc; b++)
            if (a != b)
                rc = link_nodes(s, map[a], map[b], L_SYS, socket_bw(s->cpu));
    if (!rc)
        link_reverse(s);
    for (int v = 0; v < s->nn; v++)
        s->nends += s->node[v].type == N_GPU || s->node[v].type == N_CPU;
    free(map);
    free(up);
    if (rc)
        return err_set(e, ERR_USAGE, "topology '%s' is too large for the NCCL emulation",
                       topo_name(t));
    return 0;
}

/* paths.cc ncclTopoSetPaths: breadth-first from base; a node takes the
 * path of fewest hops, then of highest bandwidth; no transit through a GPU
 * except one NVLink hop (NVB). Only paths from GPUs and CPUs are read (and
 * the nodes on them, nearer the base), and a node's path is final once the
 * layer before it is done, so the search stops after the layer that
 * reached the last GPU and CPU: the farther nodes keep no path. */
static void set_paths(sys *s, int base)
{
    npath *row = PATH(s, 0, base);   /* row[v]: v -> base */
    for (int v = 0; v < s->nn; v++)
        row[v] = (npath){0, -1, -1, 0, P_DIS};
    row[base].bw = LOC_BW;
    row[base].type = P_LOC;
    int cur[MAX_NODES], next[MAX_NODES], queued[MAX_NODES], nc = 1, nx;
    int ends = s->node[base].type == N_GPU || s->node[base].type == N_CPU;
    memset(queued, 0, sizeof *queued * (size_t)s->nn);
    cur[0] = base;
    while (nc && ends < s->nends) {
        nx = 0;
        for (int i = 0; i < nc; i++) {
            int v = cur[i];
            const nnode *n = &s->node[v];
            const npath *p = &row[v];
            /* No transit through a GPU but one NVLink hop to a GPU. */
            int gpu_transit = v != base && n->type == N_GPU;
            if (gpu_transit && p->count > 1)
                continue;
            for (int l = 0; l < n->nlinks; l++) {
                const nlink *k = &n->links[l];
                int w = k->to, wtype = s->node[w].type;
                if (gpu_transit && (k->type != L_NVL || wtype != N_GPU))
                    continue;
                npath *rp = &row[w];
                float bw = p->bw < k->bw ? p->bw : k->bw;
                if (!((rp->bw == 0 || rp->count > p->count) && rp->bw < bw))
                    continue;
                if (k->rev < 0 || p->count + 1 > MAX_HOPS)
                    continue;
                ends += rp->bw == 0 && (wtype == N_GPU || wtype == N_CPU);
                rp->hop0 = w << HOP_SHIFT | k->rev;
                rp->count = (uint8_t)(p->count + 1);
                rp->bw = bw;
                int type = k->type;
                if (n->type == N_PCI && wtype == N_PCI)
                    type = P_PXB;
                if (k->type == L_PCI && (n->type == N_CPU || wtype == N_CPU))
                    type = P_PHB;
                if (n->type == N_GPU && p->type == P_NVL && type == P_NVL && rp->count > 1)
                    type = P_NVB;
                rp->type = (uint8_t)(p->type > type ? p->type : type);
                if (!queued[w]) {
                    queued[w] = 1;
                    next[nx++] = w;
                }
            }
        }
        memcpy(cur, next, sizeof(int) * (size_t)nx);
        nc = nx;
    }
}

/* The hops of from -> base into out (MAX_HOPS at most); returns their count. */
static int path_hops(const sys *s, int from, int base, int *out)
{
    const npath *p = PATH(s, from, base);
    if (p->via >= 0) {
        int c = path_hops(s, from, p->via, out);
        return c + path_hops(s, p->via, base, out + c);
    }
    for (int i = 0, v = from; i < p->count; i++) {
        out[i] = PATH(s, v, base)->hop0;
        v = hop_link(s, out[i])->to;
    }
    return p->count;
}

/* paths.cc ncclGetLocalCpu: the CPU fewest hops away (first on ties). */
static int local_cpu(sys *s, int g)
{
    int best = -1, hops = 0;
    for (int c = 0; c < s->nn; c++) {
        if (s->node[c].type != N_CPU)
            continue;
        int h = PATH(s, g, c)->count;
        if (h > 0 && (hops == 0 || h < hops)) {
            best = c;
            hops = h;
        }
    }
    return best;
}

/* --- the search (search.cc) ---------------------------------------------- */

enum { PAT_BALANCED_TREE = 1, PAT_TREE = 3, PAT_RING = 4 };
enum { ORDER_NONE, ORDER_PCI, ORDER_REPLAY };

typedef struct sgraph {
    int pattern, nch, min_ch, max_ch, same, type_intra, nhops;
    float bw_intra, bw_inter;
    int intra[MAX_SEARCH_CH * NCCL_TUNE_MAX_RANKS];
} sgraph;

static int is_tree(int pat) { return pat >= PAT_BALANCED_TREE && pat <= PAT_TREE; }

/* roundf for |x| < 2^23 (larger floats are whole already), inlined: the
 * fraction x - trunc(x) is exact, ties go away from zero, the sign is x's. */
static float round_half_away(float x)
{
    if (!(fabsf(x) < 8388608.0f))
        return x;
    float t = (float)(int32_t)x, d = x - t;
    if (d >= 0.5f)
        t += 1.0f;
    else if (d <= -0.5f)
        t -= 1.0f;
    return copysignf(t, x);
}

/* SUB_ROUND's rounding to 1/1000 (search.cc). */
static float round3(float v) { return round_half_away(v * 1000) / 1000; }

/* A bandwidth the search can subtract and add back without a trace:
 * round3(v) == v below 1024 GB/s. For such a link and amount f (also
 * exact), round3(round3(v - f) + f) == v: v and f lie within 2^-15 of
 * multiples of 1/1000, so v*1000 - f*1000 is within 0.13 of an integer
 * at both roundings and each rounds to that integer. */
static int exact_bw(float v) { return v >= 0 && v < 1024.0f && round3(v) == v; }

/* followPath: take bw off each of the first max_steps links, stopping at
 * the first without enough; Intel root complexes cost 6/5 on the PCI links
 * of a PHB path (INTEL_P2P_OVERHEAD). Returns the steps done. */
static int follow(const gpath *p, nlink *const *hop, int max_steps, float bw)
{
    float pci_bw = p->intel_phb ? bw * 6 / 5 : bw;
    for (int i = 0; i < max_steps; i++) {
        nlink *k = hop[i];
        float fw = k->type == L_PCI ? pci_bw : bw;
        if (k->bw < fw)
            return i;
        k->bw = round3(k->bw - fw);
    }
    return max_steps;
}

/* follow in thousandths: for exact links and amounts (exact_bw) each
 * round3(v - f) is (V - F) / 1000 exactly and v < f is V < F (distinct
 * thousandths below 1024 are distinct floats), so integers take the same
 * steps and leave the same figures (written back by search_try). */
static int follow_milli(const gpath *p, nlink *const *hop, int max_steps, int32_t bw,
                        int32_t pci)
{
    int32_t pci_bw = p->intel_phb ? pci : bw;
    for (int i = 0; i < max_steps; i++) {
        nlink *k = hop[i];
        int32_t fw = k->type == L_PCI ? pci_bw : bw;
        if (k->milli < fw)
            return i;
        k->milli -= fw;
    }
    return max_steps;
}

/* GPU pair a -> b's gpath: gp[a * ngpu + b], or with gp_nbr (search_pair:
 * only index neighbours) gp[2a] for b = a + 1 and gp[2a + 1] for a - 1. */
static inline gpath *gp_at(const sys *s, int a, int b)
{
    if (__builtin_expect(s->gp_nbr, 0))
        return &s->gp[2 * a + (b != a + 1 && b != a + 1 - s->ngpu)];
    return &s->gp[a * s->ngpu + b];
}
#define GP(s, a, b) gp_at(s, a, b)
/* The same without NVSwitches (never gp_nbr there). */
#define GP_ALL(s, a, b) (&(s)->gp[(a) * (s)->ngpu + (b)])

/* ncclTopoFollowPath between the GPUs of ranks a -> b (a < 0: the start).
 * Returns b, or -1 when the path type or bandwidth does not fit (undone). */
static int follow_gpu(sys *s, sgraph *g, int a, int b, float mult)
{
    if (a < 0)
        return b;
    const gpath *p = GP(s, a, b);
    if (p->type >= P_DIS)
        return -1;
    if (mult == 1 && p->type > g->type_intra)
        return -1;
    if (mult == 1 && is_tree(g->pattern) && p->rtype > g->type_intra)
        return -1;
    float bw = g->bw_intra * mult;
    nlink *const *hop = s->ghop + p->off;
    if (s->milli) {
        int32_t m = (int32_t)mult;
        int step = follow_milli(p, hop, p->count, m * s->milli_bw, m * s->milli_pci);
        if (step < p->count) {
            follow_milli(p, hop, step, -m * s->milli_bw, -m * s->milli_pci);
            return -1;
        }
        g->nhops += (int)mult * p->count;
        return b;
    }
    int step = follow(p, hop, p->count, bw);
    if (step < p->count) {
        follow(p, hop, step, -bw);
        return -1;
    }
    g->nhops += (int)mult * p->count;
    return b;
}

typedef struct search {
    sys *s;
    sgraph *save;
    int time;
    int completed;   /* channels completed (step n reached) in this try */
    uint64_t digest; /* the time left at each completion (nccl_tune's search_digest) */
    int deep;        /* this try reached step n - 1 (memo's deep) */
} search;

static void rec(search *x, sgraph *g);

/* FNV-1a over v's 8 bytes (nccl_tune's search_digest). */
static uint64_t digest(uint64_t h, uint64_t v)
{
    if (!h)
        h = 14695981039346656037ULL;
    for (int i = 0; i < 8; i++, v >>= 8)
        h = (h ^ (v & 0xff)) * 1099511628211ULL;
    return h;
}

/* A channel completed: counted, and the time left then digested. */
static void completion(search *x)
{
    x->completed++;
    x->digest = digest(x->digest, (uint64_t)(int64_t)x->time);
}
static void rec_gpu(search *x, sgraph *g, int gpu, int step, int back_first, int order);

static void try_gpu(search *x, sgraph *g, int step, int back_first, int order, int from, int to)
{
    uint64_t flag = 1ULL << g->nch;
    int gpu = follow_gpu(x->s, g, from, to, 1);
    if (gpu < 0)
        return;
    x->s->used[gpu] ^= flag;
    rec_gpu(x, g, gpu, step, back_first, order);
    x->s->used[gpu] ^= flag;
    follow_gpu(x->s, g, from, to, -1);
}

/* A candidate's sort key: its path's bandwidth (as an int), then hops. */
typedef struct score { int hops, bw; } score;

static int score_before(score p, score q) { return p.bw != q.bw ? p.bw > q.bw : p.hops < q.hops; }

/* a's candidates in ncclTopoSearchNextGpuSort's order into out: by key,
 * ties by distance in index. Candidates come in that distance, so each
 * key's in turn, in the order of the keys (a GPU's paths have few). */
static int sort_candidates(const sys *s, int a, int *out)
{
    int n = s->ngpu, nkey = 0, count = 0;
    score key[NCCL_TUNE_MAX_RANKS], of[NCCL_TUNE_MAX_RANKS];
    int g[NCCL_TUNE_MAX_RANKS];
    for (int i = 1; i < n; i++) {
        int r = (a + i) % n;
        const gpath *p = GP_ALL(s, a, r);
        if (!p->count)
            continue;
        score k = {p->count, (int)PATH(s, s->gpu[a], s->gpu[r])->bw};
        g[count] = r;
        of[count++] = k;
        int j = 0;
        while (j < nkey && score_before(key[j], k))
            j++;
        if (j < nkey && key[j].bw == k.bw && key[j].hops == k.hops)
            continue;
        memmove(key + j + 1, key + j, sizeof *key * (size_t)(nkey - j));
        key[j] = k;
        nkey++;
    }
    int c = 0;
    for (int j = 0; j < nkey; j++)
        for (int i = 0; i < count; i++)
            if (of[i].bw == key[j].bw && of[i].hops == key[j].hops)
                out[c++] = g[i];
    return c;
}

/* ncclTopoSearchNextGpuSort (intra-node): unused GPUs by path bandwidth
 * (as an int), then hops, then distance in index; with NVSwitches only
 * the index neighbours are tried. The order depends only on the paths,
 * which the search does not change, and it is total (distances differ), so
 * it is sorted once per GPU here and filtered by use in next_gpus: the same
 * sequence as sorting the unused ones at every step. Also the search's copy
 * of the GPU pairs' paths (gpath), read where it runs. */
/* With NVSwitches the search reads only the paths between index neighbours
 * (next_gpus, and the replays and closing hops of chains made of them), so
 * only theirs are copied and only their links and types count for the
 * tries' memo, which is sound: nothing else can act on a try. The
 * step-by-step search keeps every pair, so the tests compare the two.
 * search_pairs: how many GPUs b the search reads pairs a -> b of, and with
 * NVSwitches (not step by step) those b, a's index neighbours, ascending,
 * into out (else every b = 0..n-1, out not written). */
static int search_pairs(const sys *s, int a, int *out)
{
    int n = s->ngpu, c = 0;
    if (!s->has_nvs || s->every_step)
        return n; /* out not written: b = 0..n-1 */
    int lo = (a + n - 1) % n, hi = (a + 1) % n;
    if (lo > hi) {
        int x = lo;
        lo = hi;
        hi = x;
    }
    out[c++] = lo;
    if (hi != lo)
        out[c++] = hi;
    return c;
}

static int search_prep(sys *s)
{
    int n = s->ngpu, nh = 0;
    for (int v = 0; v < s->nn; v++)
        s->has_nvs |= s->node[v].type == N_NVS;
    int pb[NCCL_TUNE_MAX_RANKS], nbr = s->has_nvs && !s->every_step;
    for (int a = 0; a < n; a++)
        for (int i = 0, np = search_pairs(s, a, pb); i < np; i++)
            nh += PATH(s, s->gpu[a], s->gpu[nbr ? pb[i] : i])->count;
    s->order = malloc(sizeof(int) * (size_t)n * (size_t)n);
    s->cand = malloc(sizeof(int) * (size_t)n * (size_t)n);
    s->gp_nbr = s->has_nvs && !s->every_step;
    s->gp = malloc(sizeof *s->gp * (s->gp_nbr ? 2 * (size_t)n : (size_t)n * (size_t)n));
    s->ghop = malloc(sizeof *s->ghop * (size_t)(nh > 0 ? nh : 1));
    if (!s->order || !s->cand || !s->gp || !s->ghop)
        return -1;
    /* ... and the links on GPU paths, once each, for the tries' use counts. */
    s->lk = malloc(sizeof *s->lk * (size_t)(nh > 0 ? nh : 1));
    s->memo_ok = 1;
    s->rtype_le = 1;
    if (!s->lk)
        return -1;
    nh = 0;
    for (int a = 0; a < n; a++)
        for (int j = 0, np = search_pairs(s, a, pb); j < np; j++) {
            int b = nbr ? pb[j] : j;
            const npath *p = PATH(s, s->gpu[a], s->gpu[b]);
            gpath *q = GP(s, a, b);
            *q = (gpath){(uint8_t)p->type, (uint8_t)PATH(s, s->gpu[b], s->gpu[a])->type, 0, 1,
                         p->count, nh, FLT_MAX, FLT_MAX};
            int hops[MAX_HOPS];
            path_hops(s, s->gpu[a], s->gpu[b], hops);
            for (int i = 0; i < p->count; i++) {
                nlink *k = hop_link(s, hops[i]);
                s->ghop[nh++] = k;
                if (!k->on_path) {
                    k->on_path = 1;
                    s->lk[s->nlk++] = k;
                }
                if (p->type == P_PHB && is_intel(s->cpu) && s->node[k->to].type == N_CPU)
                    q->intel_phb = 1;
                q->exact &= (uint8_t)k->exact;
                float *m = k->type == L_PCI ? &q->min_pci : &q->min_other;
                *m = k->bw < *m ? k->bw : *m;
            }
            if (!q->count)
                continue;
            s->rtype_le &= q->rtype <= q->type;
            s->types |= 1 << q->type | 1 << q->rtype;
            s->memo_ok &= q->exact;
            s->any_intel_phb |= q->intel_phb;
        }
    s->lk_exact = 1;
    for (int l = 0; l < s->nlk; l++)
        s->lk_exact &= s->lk[l]->exact;
    if (!(s->caps = malloc(sizeof *s->caps * MAX_CAPS * (size_t)(s->nlk > 0 ? s->nlk : 1))))
        return -1;
    /* With NVSwitches next_gpus takes index neighbours, not this order. */
    for (int a = 0; a < n && !s->has_nvs; a++)
        s->norder[a] = sort_candidates(s, a, s->order + a * n);
    return 0;
}

/* A candidate a -> b that follow_gpu would refuse in this try whatever the
 * search has used, so that leaving it out changes nothing: its path type
 * is above the try's, or (exact links, exact amounts: see exact_bw, so
 * that a refused follow leaves every link as it was and no link gains) a
 * link had less than the amount when the try began. */
static int refused(const sys *s, const sgraph *g, const gpath *p, float pci_bw, int exact)
{
    if (p->type >= P_DIS || p->type > g->type_intra ||
        (is_tree(g->pattern) && p->rtype > g->type_intra))
        return 1;
    if (!exact || !p->exact || s->every_step)
        return 0;
    return p->min_other < g->bw_intra || p->min_pci < (p->intel_phb ? pci_bw : g->bw_intra);
}

/* The candidates of every GPU for one try, in next_gpus's order, less
 * those refused whatever happens (cand[a * n + i], i < ncand[a]). */
static void try_candidates(sys *s, const sgraph *g)
{
    int n = s->ngpu;
    float pci_bw = g->bw_intra * 6 / 5;
    /* What they depend on, as the last try's (the ladder tries same, then not). */
    if (s->cand_for[0] == is_tree(g->pattern) + 1 && s->cand_for[1] == g->type_intra &&
        s->cand_bw == g->bw_intra)
        return;
    s->cand_for[0] = is_tree(g->pattern) + 1;
    s->cand_for[1] = g->type_intra;
    s->cand_bw = g->bw_intra;
    int exact = exact_bw(g->bw_intra) && exact_bw(pci_bw);
    for (int a = 0; a < n; a++) {
        int c = 0;
        for (int i = 0; i < s->norder[a]; i++) {
            int r = s->order[a * n + i];
            if (!refused(s, g, GP_ALL(s, a, r), pci_bw, exact))
                s->cand[a * n + c++] = r;
        }
        s->ncand[a] = c;
    }
}

static int next_gpus(search *x, sgraph *g, int gpu, int *next)
{
    sys *s = x->s;
    int n = s->ngpu, count = 0;
    uint64_t flag = 1ULL << g->nch;
    if (!s->has_nvs) {
        const int *c = s->cand + gpu * n;
        for (int i = 0; i < s->ncand[gpu]; i++)
            if (!(s->used[c[i]] & flag))
                next[count++] = c[i];
        return count;
    }
    /* With NVSwitches NCCL moves the index neighbours that are candidates
     * to the front, one after the other, and tries only those. */
    int prev = (gpu - 1 + n) % n, nxt = (gpu + 1) % n, first[2], nf;
    if (g->pattern == PAT_RING)
        first[0] = nxt, first[1] = prev, nf = 2;
    else if (g->pattern == PAT_BALANCED_TREE)
        first[0] = prev, first[1] = nxt, nf = 2;
    else
        first[0] = nxt, nf = 1;
    if (nxt == prev && nf == 2)
        nf = 1;
    for (int f = 0; f < nf; f++) {
        int v = first[f];
        if (!GP(s, gpu, v)->count || (s->used[v] & flag))
            continue;
        for (int i = count; i > 0; i--)
            next[i] = next[i - 1];
        next[0] = v;
        count++;
    }
    return count;
}

/* ncclTopoCompareGraphs: more total bandwidth wins, then fewer hops. */
static int better(const sgraph *g, const sgraph *ref)
{
    if (g->nch < g->min_ch)
        return 0;
    float a = (float)g->nch * g->bw_intra, b = (float)ref->nch * ref->bw_intra;
    if (a != b)
        return a > b;
    return g->pattern == ref->pattern && g->nhops < ref->nhops;
}

/* A channel of g completed (search.cc ncclTopoSearchRecGpu, step == ngpus):
 * count it, keep g if it beats the saved graph (a full house ends the search:
 * time -1), and say whether to search for one more channel. The caller
 * recurses, then takes the channel back (g->nch--). */
static int channel_done(search *x, sgraph *g)
{
    g->nch++;
    completion(x);
    if (better(g, x->save)) {
        memcpy(x->save, g, sizeof *g);
        if (g->nch == g->max_ch)
            x->time = -1;
    }
    return g->nch < g->max_ch;
}

/* gpu, first and the entries of intra are ranks (rank r is NCCL node r). */
static void rec_gpu(search *x, sgraph *g, int gpu, int step, int back_first, int order)
{
    sys *s = x->s;
    int n = s->ngpu;
    if (x->time <= 0)
        return;
    x->time--;
    x->deep |= step >= n - 1;
    if (step == n) {
        if (channel_done(x, g))
            rec(x, g);
        g->nch--;
        return;
    }
    g->intra[g->nch * n + step] = gpu;
    if (step < n - 1) {
        int next[NCCL_TUNE_MAX_RANKS], count;
        if (order == ORDER_PCI) {
            next[0] = step + 1;
            count = 1;
        } else if (order == ORDER_REPLAY) {
            next[0] = g->intra[(g->nch - 1) * n + step + 1];
            count = 1;
        } else {
            count = next_gpus(x, g, gpu, next);
        }
        for (int i = 0; i < count; i++)
            try_gpu(x, g, step + 1, back_first, order, gpu, next[i]);
    } else if (step == back_first) {
        int first = g->intra[g->nch * n];
        if (follow_gpu(s, g, gpu, first, 1) >= 0) {
            rec_gpu(x, g, first, step + 1, -1, order);
            follow_gpu(s, g, gpu, first, -1);
        }
    } else {
        rec_gpu(x, g, gpu, n, -1, order);
    }
}

/* ncclTopoSearchRec (intra-node): PCI order first (or the last channel
 * replayed), then every GPU as the start unless channels must be equal. */
static void rec(search *x, sgraph *g)
{
    sys *s = x->s;
    int n = s->ngpu, back_first = g->pattern == PAT_RING ? n - 1 : -1;
    if (g->nch == 0)
        try_gpu(x, g, 0, back_first, ORDER_PCI, -1, 0);
    else
        try_gpu(x, g, 0, back_first, ORDER_REPLAY, -1, g->intra[(g->nch - 1) * n]);
    if (!g->same || g->nch == 0)
        for (int r = 0; r < n; r++)
            try_gpu(x, g, 0, back_first, ORDER_NONE, -1, r);
}

/* Tries that complete no channel leave nothing but the steps they took,
 * and what such a try does depends only on: the pattern (with NVSwitches;
 * else ring or tree), same, its step budget, the path types it admits, and
 * how many times each link can give the try's amount. So with exact links
 * and amounts (exact_bw) a try that matches an earlier one that completed
 * nothing is answered from it: most of the speed ladder, when nothing fits. */
static int memo_caps(sys *s, float f)
{
    for (int c = 0; c < s->ncaps; c++)
        if (s->caps_f[c] == f)
            return s->caps_class[c];
    if (s->ncaps == MAX_MEMO)
        return -1;
    uint16_t *v = s->caps + (size_t)s->ncaps * (size_t)s->nlk;
    for (int l = 0; l < s->nlk; l++) {
        float b = s->lk[l]->bw;
        int c = 0;
        while (b >= f && c < 65535) {
            b = round3(b - f);
            c++;
        }
        v[l] = (uint16_t)c;
    }
    int cls = s->ncaps;
    for (int c = 0; c < s->ncaps; c++)
        if (!memcmp(s->caps + (size_t)c * (size_t)s->nlk, v, sizeof *v * (size_t)s->nlk)) {
            cls = s->caps_class[c];
            break;
        }
    s->caps_f[s->ncaps] = f;
    s->caps_class[s->ncaps++] = cls;
    return cls;
}

/* With NVSwitches a try follows only index neighbours (next_gpus). Where
 * every neighbour's path is the sender's own link to the NVSwitch and then
 * the receiver's own link from it, all exact (exact_bw), a follow succeeds
 * or not by how many times those two links are in use: each gives the
 * try's amount cap times and is refused after, and a refused follow leaves
 * no trace. Such a try is replayed here chain by chain with a use count per
 * link, in the search's order, with its step budget, its saves and its end:
 * the same steps, saves and result, without the path walks. */
typedef struct nvs_run {
    search *x;
    sgraph *g;
    int n, ring, nf, first[2];   /* step 0's candidates, as index offsets */
    int cap_up[NCCL_TUNE_MAX_RANKS], cap_down[NCCL_TUNE_MAX_RANKS];
    int up[NCCL_TUNE_MAX_RANKS], down[NCCL_TUNE_MAX_RANKS];   /* uses */
    int ups_spent;               /* links up at their cap */
    /* Links taken off at least once (nvs_cap: a link's first figure that is
     * not exact becomes after_up/after_down then). */
    uint8_t touched_up[NCCL_TUNE_MAX_RANKS], touched_down[NCCL_TUNE_MAX_RANKS];
    float after_up[NCCL_TUNE_MAX_RANKS], after_down[NCCL_TUNE_MAX_RANKS];
    int inexact;                 /* some link's figure is not exact */
    /* Rings on links of one cap: at channel c every link is in use c times,
     * so a chain goes through whole (c < cap) or stops at its first hop;
     * a channel is its start and direction (rows written when saved). */
    int open_below, start[MAX_SEARCH_CH], dir[MAX_SEARCH_CH];
} nvs_run;

static int cap_count(float v, float f)
{
    int c = 0;
    while (v >= f && c <= MAX_SEARCH_CH) {
        v = round3(v - f);
        c++;
    }
    return c;
}

/* How many times a link of bandwidth v gives the exact amount f (at most
 * one more than a try can use: a link serves one hop per channel), or -1
 * where a use count cannot stand for it. Exact v: a use and its undo leave
 * it as it was (exact_bw). Not exact (a link's first figure): its first use
 * and undo leave it at *after = round3(round3(v - f) + f); where that is
 * exact and taking f off it gives the same v1 = round3(v - f) again, it
 * counts as v does from then on, so the count stands if v gives f at all. */
static int nvs_cap(float v, float f, float *after)
{
    int c = cap_count(v, f);
    *after = v;
    if (exact_bw(v) || c == 0)
        return c;
    float v1 = round3(v - f), v2 = round3(v1 + f);
    if (!(v < 1024.0f) || !exact_bw(v1) || !exact_bw(v2) || !(v2 >= f) || round3(v2 - f) != v1)
        return -1;
    *after = v2;
    return c;
}

static int nvs_tick(search *x)
{
    if (x->time <= 0)
        return 0;
    x->time--;
    return 1;
}

/* followPath a -> b: 1 if it went through (its uses counted). */
static int nvs_follow(nvs_run *r, int a, int b)
{
    if (r->up[a] >= r->cap_up[a])
        return 0;
    r->touched_up[a] = 1;   /* taken off, and given back if down refuses */
    if (r->down[b] >= r->cap_down[b])
        return 0;
    r->touched_down[b] = 1;
    r->ups_spent += ++r->up[a] == r->cap_up[a];
    r->down[b]++;
    r->g->nhops += 2;
    return 1;
}

static void nvs_unfollow(nvs_run *r, int a, int b)
{
    r->ups_spent -= r->up[a]-- == r->cap_up[a];
    r->down[b]--;
    r->g->nhops -= 2;
}

static void nvs_rec(nvs_run *r);

/* Channel g->nch from rank start, its step 0 counted, going d (+1, -1)
 * through the indices, or (d 0) replaying the channel before: the hops and
 * steps (rec_gpu), the closing hop of a ring, the completion with the
 * deeper channels, and the hops given back. Its row of intra is written as
 * the chain goes. */
static void nvs_chain(nvs_run *r, int start, int d)
{
    search *x = r->x;
    sgraph *g = r->g;
    int n = r->n, *row = g->intra + g->nch * n, applied = 0, reached = 1;
    row[0] = start;
    for (int k = 1; k < n; k++) {
        int v = d ? row[k - 1] + d : row[k - n];
        row[k] = v < 0 ? v + n : v >= n ? v - n : v;
        if (!nvs_follow(r, row[k - 1], row[k]))
            break;
        applied++;
        if (!nvs_tick(x))
            break;
        reached++;
    }
    int closed = 0, complete = 0;
    if (reached == n) {
        if (!r->ring)
            complete = nvs_tick(x);
        else if ((closed = nvs_follow(r, row[n - 1], row[0])))
            complete = nvs_tick(x);
    }
    if (complete) {
        if (channel_done(x, g))
            nvs_rec(r);
        g->nch--;
    }
    if (closed)
        nvs_unfollow(r, row[n - 1], row[0]);
    for (int k = applied; k >= 1; k--)
        nvs_unfollow(r, row[k - 1], row[k]);
}

/* rec: the PCI order (rank 0 onwards) or the last channel replayed, then
 * (unless channels must be equal) every start with each of its neighbours. */
static void nvs_rec(nvs_run *r)
{
    search *x = r->x;
    sgraph *g = r->g;
    int n = r->n;
    if (r->ups_spent == n) {
        /* Every first hop is refused: one step per start tried. */
        int steps = g->same && g->nch > 0 ? 1 : 1 + n;
        x->time = x->time > steps ? x->time - steps : x->time > 0 ? 0 : x->time;
        return;
    }
    if (nvs_tick(x)) {
        if (g->nch == 0)
            nvs_chain(r, 0, 1);
        else
            nvs_chain(r, g->intra[(g->nch - 1) * n], 0);
    }
    if (g->same && g->nch > 0)
        return;
    for (int s = 0; s < n && x->time > 0; s++) {
        if (!nvs_tick(x))
            return;
        for (int f = 0; f < r->nf && x->time > 0; f++)
            nvs_chain(r, s, r->first[f]);
    }
}

/* nvs_rec by bit masks (n <= 64, exact links): the links at their cap are
 * bits, so that a chain's first refused hop is found at once. A chain going
 * d from s meets hop k (x_{k-1} -> x_k, x_k = s + k d) refused where GPU
 * x_{k-1}'s link up or x_k's down is at its cap: bit x_{k-1} of up_full |
 * (down_full shifted by d). A chain that completes uses every link but
 * (a tree) its last GPU's up and its first's down, so with c channels
 * GPU v's up is in use c - miss_up[v] times and at its cap when key
 * cap_up[v] + miss_up[v] <= c: a chain adds a channel and moves one GPU's
 * key, in O(1). Follows, ticks, closing hop, completion and saves are
 * nvs_chain's, in the same order; rows are written when saved
 * (nvs_uniform_chain's rule). */
typedef uint64_t nvs_mask;

typedef struct nvs_fast {
    nvs_run *r;
    int n, base;                 /* GPUs; g->nhops before the try */
    nvs_mask full;               /* n bits */
    int key_up[64], key_down[64];
    nvs_mask by_key_up[2 * MAX_SEARCH_CH + 8], by_key_down[2 * MAX_SEARCH_CH + 8];
} nvs_fast;

/* Bit y of the result: bit (y + k) mod n of m (0 <= k < n). */
static nvs_mask rot_right(nvs_mask m, int k, int n, nvs_mask full)
{
    return k ? ((m >> k) | (m << (n - k))) & full : m;
}

static void fast_move(int *key, nvs_mask *by_key, int v, int add)
{
    by_key[key[v]] &= ~(1ULL << v);
    key[v] += add;
    by_key[key[v]] |= 1ULL << v;
}

static void nvs_fast_rec(nvs_fast *f, nvs_mask up_full, nvs_mask down_full);

/* The refusals of chains going d: bit y where hop x_{k-1} = y -> y + d is refused. */
static nvs_mask refusals(const nvs_fast *f, nvs_mask up_full, nvs_mask down_full, int d)
{
    return up_full | rot_right(down_full, d > 0 ? 1 : f->n - 1, f->n, f->full);
}

/* The follows of the chains from every start, where each stops at its first
 * refusal (bits of m, at least one): from a start in a gap of L between two
 * refusals, L - 1 down to 0 (the refusal's own start), sum L(L-1)/2. A gap
 * of L is a refusal and the run of L - 1 free bits after it (cyclically), so
 * the sum is over the runs of free bits, z(z+1)/2 each: a loop per run, not
 * per refusal (dense masks have few runs). */
static long gap_steps(nvs_mask m, int n)
{
    nvs_mask full = n == 64 ? ~0ULL : (1ULL << n) - 1, z = ~m & full;
    long sum = 0, first = 0;
    int wrap = z & 1 && z >> (n - 1) & 1; /* a run through bit n-1 into bit 0 */
    while (z) {
        int at = __builtin_ctzll(z);
        nvs_mask rest = ~(z >> at);
        int len = rest ? __builtin_ctzll(rest) : 64 - at;
        z = len + at >= 64 ? 0 : z & ~(((1ULL << len) - 1) << at);
        if (wrap && at == 0) {
            first = len; /* joined with the run that ends at bit n-1 */
            continue;
        }
        long r = len + (wrap && at + len == n ? first : 0);
        sum += r * (r + 1) >> 1;
    }
    return sum;
}

static void nvs_fast_chain(nvs_fast *f, int s, int d, nvs_mask up_full, nvs_mask down_full)
{
    nvs_run *r = f->r;
    search *x = r->x;
    sgraph *g = r->g;
    int n = f->n, c = g->nch, t;
    nvs_mask m = refusals(f, up_full, down_full, d);
    if (d > 0) {
        nvs_mask q = rot_right(m, s, n, f->full);
        t = q ? __builtin_ctzll(q) : n;
    } else {
        /* bit n-1-t of q: bit (s - t) mod n */
        nvs_mask q = rot_right(m, s + 1 < n ? s + 1 : 0, n, f->full);
        t = q ? n - 1 - (63 - __builtin_clzll(q)) : n;
    }
    int hops = t < n - 1 ? t : n - 1;   /* follows that go through */
    /* A tick after each (nvs_tick: none once the time is out). */
    if (x->time <= 0)
        return;
    if (x->time < hops) {
        x->time = 0;
        return;
    }
    x->time -= hops;
    if (hops < n - 1)
        return;
    /* Step n reached: a tree completes with its tick, a ring closes first. */
    if (r->ring && t < n)
        return;
    if (!nvs_tick(x))
        return;
    r->start[c] = s;
    r->dir[c] = d;
    int last = s - d < 0 ? n - 1 : s - d >= n ? 0 : s - d;
    nvs_mask uf = up_full | f->by_key_up[c + 1], df = down_full | f->by_key_down[c + 1];
    if (!r->ring) {
        uf = up_full | (f->by_key_up[c + 1] & ~(1ULL << last));
        df = down_full | (f->by_key_down[c + 1] & ~(1ULL << s));
        fast_move(f->key_up, f->by_key_up, last, 1);
        fast_move(f->key_down, f->by_key_down, s, 1);
    }
    g->nch++;
    completion(x);
    g->nhops = f->base + 2 * (r->ring ? n : n - 1) * g->nch;
    if (better(g, x->save)) {
        for (int k = 0; k < g->nch; k++) {
            int *row = g->intra + k * n;
            for (int i = 0, v = r->start[k]; i < n; i++) {
                row[i] = v;
                v += r->dir[k];
                v = v < 0 ? n - 1 : v >= n ? 0 : v;
            }
        }
        memcpy(x->save, g, sizeof *g);
        if (g->nch == g->max_ch)
            x->time = -1;
    }
    if (g->nch < g->max_ch)
        nvs_fast_rec(f, uf, df);
    g->nch--;
    g->nhops = f->base + 2 * (r->ring ? n : n - 1) * g->nch;
    if (!r->ring) {
        fast_move(f->key_up, f->by_key_up, last, -1);
        fast_move(f->key_down, f->by_key_down, s, -1);
    }
}

static void nvs_fast_rec(nvs_fast *f, nvs_mask up_full, nvs_mask down_full)
{
    nvs_run *r = f->r;
    search *x = r->x;
    sgraph *g = r->g;
    int n = f->n, c = g->nch;
    if (up_full == f->full) {
        /* Every first hop is refused: one step per start tried. */
        int steps = g->same && c > 0 ? 1 : 1 + n;
        x->time = x->time > steps ? x->time - steps : x->time > 0 ? 0 : x->time;
        return;
    }
    if (nvs_tick(x))
        nvs_fast_chain(f, c ? r->start[c - 1] : 0, c ? r->dir[c - 1] : 1, up_full, down_full);
    if (g->same && c > 0)
        return;
    /* Where no chain of the loop below can complete (a tree's, with two
     * refusals; a ring's, with one), it only takes steps: a tick per start
     * and each chain's follows, each taken while time is left, so in all
     * the time less their sum, or nothing left. */
    long steps = n;
    int completes = 0;
    for (int k = 0; k < r->nf; k++) {
        nvs_mask m = refusals(f, up_full, down_full, r->first[k]);
        completes |= __builtin_popcountll(m) < (r->ring ? 1 : 2);
        if (m)
            steps += gap_steps(m, n);
    }
    if (!completes) {
        if (x->time > 0)
            x->time = x->time > steps ? x->time - (int)steps : 0;
        return;
    }
    for (int s = 0; s < n && x->time > 0; s++) {
        if (!nvs_tick(x))
            return;
        for (int k = 0; k < r->nf && x->time > 0; k++)
            nvs_fast_chain(f, s, r->first[k], up_full, down_full);
    }
}

/* nvs_fast_rec from channel 0. */
static void nvs_fast_try(nvs_run *r, int base)
{
    nvs_fast f = {.r = r, .n = r->n, .base = base};
    f.full = f.n == 64 ? ~0ULL : (1ULL << f.n) - 1;
    nvs_mask uf = 0, df = 0;
    for (int a = 0; a < f.n; a++) {
        f.key_up[a] = r->cap_up[a];
        f.key_down[a] = r->cap_down[a];
        f.by_key_up[r->cap_up[a]] |= 1ULL << a;
        f.by_key_down[r->cap_down[a]] |= 1ULL << a;
        uf |= (nvs_mask)(r->cap_up[a] == 0) << a;
        df |= (nvs_mask)(r->cap_down[a] == 0) << a;
    }
    nvs_fast_rec(&f, uf, df);
}

static void nvs_uniform_rec(nvs_run *r);

/* A chain of nvs_uniform_rec: n steps and the completion, or nothing. */
static void nvs_uniform_chain(nvs_run *r, int start, int d, int base_hops)
{
    search *x = r->x;
    sgraph *g = r->g;
    int n = r->n, c = g->nch;
    if (c >= r->open_below)
        return;
    if (x->time < n) {
        x->time = 0;
        return;
    }
    x->time -= n;
    r->start[c] = start;
    r->dir[c] = d;
    g->nch++;
    g->nhops = base_hops + 2 * n * g->nch;
    completion(x);
    if (better(g, x->save)) {
        for (int k = 0; k < g->nch; k++)
            for (int i = 0; i < n; i++)
                g->intra[k * n + i] = ((r->start[k] + r->dir[k] * i) % n + n) % n;
        memcpy(x->save, g, sizeof *g);
        if (g->nch == g->max_ch)
            x->time = -1;
    }
    if (g->nch < g->max_ch)
        nvs_uniform_rec(r);
    g->nch--;
    g->nhops = base_hops + 2 * n * g->nch;
}

static void nvs_uniform_rec(nvs_run *r)
{
    search *x = r->x;
    sgraph *g = r->g;
    int n = r->n, c = g->nch, base = g->nhops - 2 * n * c;
    if (c >= r->open_below) {
        /* Every first hop is refused: one step per start tried. */
        int steps = g->same && c > 0 ? 1 : 1 + n;
        x->time = x->time > steps ? x->time - steps : x->time > 0 ? 0 : x->time;
        return;
    }
    if (nvs_tick(x))
        nvs_uniform_chain(r, c ? r->start[c - 1] : 0, c ? r->dir[c - 1] : 1, base);
    if (g->same && c > 0)
        return;
    for (int s = 0; s < n && x->time > 0; s++) {
        if (!nvs_tick(x))
            return;
        for (int f = 0; f < r->nf && x->time > 0; f++)
            nvs_uniform_chain(r, s, r->first[f], base);
    }
}

/* The replay of this try if it applies (1), else 0 (nothing done). */
static int nvs_try(search *x, sgraph *g)
{
    sys *s = x->s;
    int n = s->ngpu;
    if (!s->has_nvs || n < 3 || !exact_bw(g->bw_intra) ||
        (g->pattern != PAT_RING && !is_tree(g->pattern)))
        return 0;
    nvs_run r = {.x = x, .g = g, .n = n, .ring = g->pattern == PAT_RING};
    /* next_gpus moves the candidates to the front one after the other. */
    if (g->pattern == PAT_RING)
        r.nf = 2, r.first[0] = -1, r.first[1] = 1;
    else if (g->pattern == PAT_BALANCED_TREE)
        r.nf = 2, r.first[0] = 1, r.first[1] = -1;
    else
        r.nf = 1, r.first[0] = 1;
    nlink *up[NCCL_TUNE_MAX_RANKS], *down[NCCL_TUNE_MAX_RANKS];
    for (int a = 0; a < n; a++)
        for (int d = -1; d <= 1; d += 2) {
            int b = (a + d + n) % n;
            const gpath *p = GP(s, a, b);
            nlink *const *hop = s->ghop + p->off;
            if (p->count != 2 || p->type > g->type_intra || p->intel_phb ||
                (is_tree(g->pattern) && p->rtype > g->type_intra))
                return 0;
            if (d < 0)
                up[a] = hop[0];
            if (hop[0] != up[a])
                return 0;
        }
    for (int b = 0; b < n; b++) {
        down[b] = s->ghop[GP(s, (b + n - 1) % n, b)->off + 1];
        if (s->ghop[GP(s, (b + 1) % n, b)->off + 1] != down[b])
            return 0;
    }
    /* 2n links, each on its own: GPU a's own link up, and a link of a
     * node that is no GPU down to b. */
    for (int a = 0; a < n; a++) {
        if (up[a]->from != s->gpu[a] || down[a]->to != s->gpu[a] ||
            s->node[down[a]->from].type == N_GPU)
            return 0;
    }
    /* Links of one figure have one count: the last few figures' kept. */
    float seen_v[4], seen_after[4];
    int seen_cap[4], nseen = 0;
    for (int a = 0; a < 2 * n; a++) {
        nlink *k = a < n ? up[a] : down[a - n];
        int i = 0, *cap = a < n ? &r.cap_up[a] : &r.cap_down[a - n];
        float *after = a < n ? &r.after_up[a] : &r.after_down[a - n];
        while (i < nseen && seen_v[i] != k->bw)
            i++;
        if (i == nseen) {
            i = nseen < 4 ? nseen++ : 3;
            seen_v[i] = k->bw;
            seen_cap[i] = nvs_cap(k->bw, g->bw_intra, &seen_after[i]);
        }
        *cap = seen_cap[i];
        *after = seen_after[i];
    }
    for (int a = 0; a < n; a++) {
        if (r.cap_up[a] < 0 || r.cap_down[a] < 0)
            return 0;
        r.inexact |= r.after_up[a] != up[a]->bw || r.after_down[a] != down[a]->bw;
        r.ups_spent += r.cap_up[a] == 0;
    }
    int base = g->nhops, uniform = r.ring;
    for (int a = 0; a < n; a++)
        uniform &= r.cap_up[a] == r.cap_up[0] && r.cap_down[a] == r.cap_down[0];
    if (uniform) {
        r.open_below = r.cap_up[0] < r.cap_down[0] ? r.cap_up[0] : r.cap_down[0];
        /* Its first chain goes all round (open_below > 0, the budget more
         * than n), taking off every link; else the links it touches are not
         * followed here. */
        if (r.inexact && (r.open_below == 0 || x->time <= n))
            return 0;
        memset(r.touched_up, 1, sizeof r.touched_up);
        memset(r.touched_down, 1, sizeof r.touched_down);
    }
    x->completed = 0;
    if (uniform) {
        nvs_uniform_rec(&r);
    } else if (n <= 64 && !r.inexact) {
        nvs_fast_try(&r, base);
    } else {
        nvs_rec(&r);
    }
    g->nhops = base;
    /* What the step-by-step search leaves on the links: the figures after
     * a first use where they were not exact. */
    for (int a = 0; a < n && r.inexact; a++) {
        if (r.touched_up[a])
            up[a]->bw = r.after_up[a];
        if (r.touched_down[a])
            down[a]->bw = r.after_down[a];
    }
    return 1;
}

/* Tree tries answered from a ring's (nccl_tune_tree_tries_from_ring). */
static _Atomic unsigned long tree_from_ring;

unsigned long nccl_tune_tree_tries_from_ring(void)
{
    return atomic_load_explicit(&tree_from_ring, memory_order_relaxed);
}

static void search_try(search *x, sgraph *g)
{
    sys *s = x->s;
    memo key = {0, 0, 0, 0, -1, 0, 0};
    /* Without NVSwitches a tree's try differs from a ring's only where a
     * pair's reverse path is refused while its own is not (never, where no
     * reverse type exceeds its own) and from the chains' last GPU on (a
     * ring's closing hop, a tree's completion): so a tree's try is answered
     * from a ring's like it that completed nothing and never got there. */
    int ring_for_tree = !s->has_nvs && s->rtype_le && is_tree(g->pattern);
    x->deep = 0;
    if (s->memo_ok && !s->every_step && g->nch == 0 && exact_bw(g->bw_intra) &&
        (!s->any_intel_phb || g->bw_intra * 6 / 5 == g->bw_intra)) {
        key.pattern = s->has_nvs ? g->pattern : is_tree(g->pattern);
        key.same = g->same;
        key.budget = x->time;
        key.type = -1;
        for (int t = 0; t < P_DIS; t++)
            if (t <= g->type_intra && (s->types >> t & 1))
                key.type = t;
        key.caps = memo_caps(s, g->bw_intra);
        if (key.caps >= 0)
            for (int i = 0; i < s->nmemo; i++) {
                const memo *m = &s->memo[i];
                if ((m->pattern == key.pattern || (ring_for_tree && m->pattern == 0 && !m->deep)) &&
                    m->same == key.same && m->budget == key.budget && m->type == key.type &&
                    m->caps == key.caps) {
                    if (m->pattern != key.pattern)
                        atomic_fetch_add_explicit(&tree_from_ring, 1, memory_order_relaxed);
                    x->time = m->left;
                    return;
                }
            }
    }
    if (s->every_step || !nvs_try(x, g)) {
        if (!s->has_nvs)
            try_candidates(s, g);
        x->completed = 0;
        float pci = g->bw_intra * 6 / 5;
        s->milli = !s->every_step && s->lk_exact && exact_bw(g->bw_intra) && exact_bw(pci);
        if (s->milli) {
            s->milli_bw = (int32_t)round_half_away(g->bw_intra * 1000);
            s->milli_pci = (int32_t)round_half_away(pci * 1000);
            for (int l = 0; l < s->nlk; l++)
                s->lk[l]->milli = (int32_t)round_half_away(s->lk[l]->bw * 1000);
        }
        rec(x, g);
        if (s->milli)
            for (int l = 0; l < s->nlk; l++)
                s->lk[l]->bw = (float)s->lk[l]->milli / 1000;
        else
            for (int l = 0; l < s->nlk; l++)
                s->lk_exact &= exact_bw(s->lk[l]->bw);
        s->milli = 0;
    }
    if (key.caps >= 0 && !x->completed && s->nmemo < MAX_MEMO) {
        key.left = x->time;
        key.deep = x->deep;
        s->memo[s->nmemo++] = key;
    }
}

/* The intra-node speed ladder of search.cc for SM sm. */
static const float *speeds(const struct nccl_version *ver, int sm, int *ns)
{
    if (sm >= 100)
        return *ns = ver->n_sm100_intra, ver->sm100_intra;
    if (sm >= 90)
        return *ns = (int)(sizeof sm90_intra / sizeof *sm90_intra), sm90_intra;
    return *ns = (int)(sizeof base_intra / sizeof *base_intra), base_intra;
}

/* ncclTopoCompute for one intra-node pattern. */
static void compute(sys *s, const struct nccl_version *ver, sgraph *graph, int min_type,
                    int max_type, nccl_tune *nt, nccl_tune_graph *out)
{
    int ns;
    const float *speed = speeds(ver, s->sm, &ns);
    int n = s->ngpu, amd = s->cpu == CPU_AMD;
    graph->bw_intra = graph->bw_inter = 0;
    graph->type_intra = min_type;
    graph->nch = 0;
    graph->same = 1;
    graph->nhops = 0;
    sgraph tmp;
    memcpy(&tmp, graph, sizeof tmp);
    int pass = 1, si = 0;
    float max_bw = s->max_bw, total_bw = s->total_bw;
    if (n > 1 && graph->pattern != PAT_RING)
        total_bw *= (float)n * 1.0f / (float)(n - 1);
    while ((speed[si] > max_bw || speed[si] * (float)graph->min_ch > total_bw) && si < ns - 1)
        si++;
    tmp.bw_intra = tmp.bw_inter = speed[si];
    nt->speed_first_GBps = speed[si];
    nt->speed_last_GBps = speed[ns - 1];
    long global = 1L << 19;
    search x = {s, graph, 0, 0, 0, 0};
    for (;;) {
        /* search: */
        x.time = tmp.same ? 1 << 8 : 1 << 14;
        tmp.nch = 0;
        global -= x.time;
        int budget = x.time;
        search_try(&x, &tmp);
        nt->search_digest = digest(nt->search_digest ^ x.digest, (uint64_t)(int64_t)(budget - x.time));
        x.digest = 0;
        int done = x.time == -1 || (float)graph->nch * graph->bw_inter >= s->total_bw;
        if (!done && pass == 1) {
            if (tmp.same == 1 && !(amd && tmp.type_intra == P_SYS)) {
                tmp.same = 0;
                continue;
            }
            tmp.same = 1;
            if (x.time != -1)
                global += x.time;
            else
                global = 1L << 19;
            if (!(global < 0 && graph->nch)) {
                if (s->sm >= 90 && tmp.pattern == PAT_BALANCED_TREE) {
                    tmp.pattern = PAT_TREE;
                    continue;
                }
                tmp.pattern = graph->pattern;
                if (tmp.type_intra < max_type &&
                    (graph->nch == 0 || tmp.type_intra < graph->type_intra)) {
                    tmp.type_intra += 1;
                    if (tmp.type_intra < P_DIS)
                        continue;
                }
                tmp.type_intra = min_type;
                if (si < ns - 1 && (graph->nch == 0 || speed[si + 1] / graph->bw_inter > .49f)) {
                    tmp.bw_inter = tmp.bw_intra = speed[++si];
                    continue;
                }
                si = 0;
                while (speed[si] > max_bw && si < ns - 1)
                    si++;
                tmp.bw_intra = tmp.bw_inter = speed[si];
            }
        }
        /* done: */
        if (pass == 1) {
            x.time = -1;
            out->search_channels = graph->nch;
            out->search_bw_GBps = graph->bw_intra;
            /* ncclTopoDupChannels */
            if (graph->nch > 0 && graph->bw_intra >= 25.0f &&
                !(s->sm > 80 && graph->bw_intra < 50.0f && graph->nch > 4)) {
                int dup = graph->nch * 2 < graph->max_ch ? graph->nch * 2 : graph->max_ch;
                int div = (dup + graph->nch - 1) / graph->nch;
                memcpy(graph->intra + graph->nch * n, graph->intra,
                       sizeof(int) * (size_t)((dup - graph->nch) * n));
                graph->bw_intra /= (float)div;
                graph->bw_inter /= (float)div;
                graph->nch = dup;
            }
            memcpy(&tmp, graph, sizeof tmp);
            si = 0;
            while (speed[si] > graph->bw_inter && si < ns - 1)
                si++;
            tmp.bw_intra = tmp.bw_inter = speed[si];
            tmp.min_ch = graph->nch;
            pass = 2;
        }
        if (x.time != 0 && si > 0) {
            if (graph->pattern == PAT_RING) {
                tmp.bw_intra = tmp.bw_inter = speed[--si];
                continue;
            } else if (tmp.bw_intra == graph->bw_intra && tmp.bw_intra < tmp.bw_inter * 2) {
                tmp.bw_intra = speed[--si];
                continue;
            }
        }
        break;
    }
    out->found = graph->nch > 0;
    if (!graph->nch) {
        /* "Could not find a path ... falling back to simple order" */
        for (int r = 0; r < n; r++)
            graph->intra[r] = r;
        graph->bw_intra = graph->bw_inter = 0.1f;
        graph->type_intra = P_SYS;
        graph->nch = 1;
        out->search_channels = 0;
    }
    out->nchannels = graph->nch;
    out->bw_intra_GBps = graph->bw_intra;
    out->type_intra = graph->type_intra;
    out->type_inter = out->found ? P_PIX : P_SYS;
    out->same_channels = graph->same;
    memcpy(out->order, graph->intra, sizeof(int) * (size_t)n);
}

/* --- tuning (tuning.cc ncclTopoTuneModel) -------------------------------- */

/* [hw: NVLink, PCI][tree, ring][LL, LL128, Simple], us. */
static const float base_lat[2][3] = {{6.8f, 14.0f, 8.4f}, {6.6f, 14.0f, 8.4f}};
static const float hw_lat[2][2][3] = {{{.6f, 1.25f, 4.0f}, {.6f, 1.9f, 3.4f}},
                                      {{1.0f, 1.9f, 4.0f}, {1.0f, 2.5f, 5.7f}}};

/* Single-node columns of the caps, by arch (Volta, Ampere, Hopper, Blackwell). */
static const float ll_max_bw[4] = {39.0f, 87.7f, 141.0f, 2 * 141.0f};
static const float tree_max_bw[4] = {26.5f, 24.0f, 38.7f, 70.0f};
static const float tree_ll128_max_bw[4] = {20.0f, 20.0f, 36.7f, 55.6f};
static const float ring_ll128_max_bw[3] = {20.0f, 20.0f, 36.7f};
/* ncclTopoGetAlgoTime treeCorrectionFactor[proto][log2(bytes/64)]. */
static const float tree_corr[3][23] = {
    {1.0f, 1.0f, 1.0f, 1.0f, .9f, .8f, .7f, .7f, .7f, .7f, .6f, .5f, .4f, .4f, .5f, .6f, .7f,
     .8f, .9f, 1.0f, 1.0f, 1.0f, 1.0f},
    {1.0f, 1.0f, 1.0f, 1.0f, 1.0f, .9f, .8f, .8f, .8f, .7f, .6f, .6f, .6f, .6f, .6f, .6f, .8f,
     .9f, .9f, .9f, .9f, 1.0f, 1.0f},
    {.9f, .9f, .9f, .9f, .9f, .9f, .9f, .8f, .7f, .6f, .6f, .5f, .5f, .5f, .5f, .6f, .7f, .8f,
     .7f, .7f, .8f, .9f, .9f}};

static int pidx(coll_proto p) { return p == PROTO_LL ? 0 : p == PROTO_LL128 ? 1 : 2; }

/* getNthreads: NCCL_NTHREADS if a multiple of 32 within [min, max]. */
static int nthreads(int env, int lo, int hi, int def)
{
    if (env <= 0)
        return def;
    if (env % 32)
        return hi;
    return env > hi ? hi : env < lo ? lo : env;
}

static void tune(nccl_tune *nt, const struct nccl_version *ver, int max_tree_pattern,
                 const nccl_env *env)
{
    int n = nt->nranks, cc = nt->sm;
    int arch = cc >= 100 ? 3 : cc >= 90 ? 2 : cc >= 80 ? 1 : 0;
    const nccl_tune_graph *gr[2] = {&nt->tree, &nt->ring};
    int simple_def = nt->ring.bw_intra_GBps * (float)nt->ring.nchannels <= 12.0f ? 256 : 512;
    nt->max_threads[1][2] = nthreads(env->nthreads, 64, 512, simple_def);
    nt->max_threads[0][2] = nthreads(env->nthreads, 64, 512, 512);
    nt->max_threads[0][0] = nt->max_threads[1][0] = nthreads(env->nthreads, 64, 512, 512);
    nt->max_threads[0][1] = nt->max_threads[1][1] = 640;   /* NCCL_LL128_NTHREADS unset */
    for (int a = 0; a < 2; a++) {
        nt->thread_threshold[a][0] = 8;
        nt->thread_threshold[a][1] = 8;
        nt->thread_threshold[a][2] = 64;
        nt->hw_nvlink[a] = gr[a]->type_intra == L_NVL;
    }
    nt->thread_threshold[1][0] *= n;
    float ring_ll128 = arch == 3 ? ver->bw_ring_ll128_blackwell : ring_ll128_max_bw[arch];
    for (int k = 0; k < COLL_NKINDS; k++) {
        if (k == COLL_ALLTOALL)
            continue;
        int nsteps = k == COLL_ALLREDUCE ? 2 * (n - 1) : k == COLL_BROADCAST ? n : n - 1;
        for (int a = 0; a < 2; a++) {
            if (a == 0 && k != COLL_ALLREDUCE)
                continue; /* tree: allreduce only among what collsim runs */
            const nccl_tune_graph *g = gr[a];
            for (int p = 0; p < 3; p++) {
                float nch = (float)g->nchannels;
                float bus = nch * g->bw_intra_GBps;
                if (a == 1 && p == 0)
                    bus = fminf(ll_max_bw[arch], bus * .5f);
                if (a == 1 && p == 1)
                    bus = fminf(bus * 0.92f, nch * ring_ll128);
                if (a == 0) {
                    bus = fminf(bus * .92f, nch * tree_max_bw[arch]);
                    if (p == 0)
                        bus = fminf(bus * 1.0f / 3.8f, ll_max_bw[arch]);
                    if (p == 1)
                        bus = fminf(bus * 7.0f / 9.0f,
                                    nch * (arch == 3 ? ver->bw_tree_ll128_blackwell
                                                     : tree_ll128_max_bw[arch]));
                    if (max_tree_pattern == PAT_TREE)
                        bus *= .85f;
                }
                bus *= a == 1 ? (float)n / (float)nsteps : .5f;
                /* Protocol enable: LL128 by default only over NVLink-class
                 * paths; NCCL_PROTO naming it skips that rule (tuning.cc
                 * ncclTopoTuneModel: pEnable 1, not 2, when set). */
                int on = 1;
                if (p == 1 && env->proto != PROTO_LL128) {
                    int type_inter = g->type_inter;
                    on = (cc >= 90 ? type_inter <= P_PXN : type_inter <= P_PXB) &&
                         g->type_intra <= P_NVB && cc >= 70;
                }
                if (env->proto != PROTO_AUTO && pidx(env->proto) != p)
                    on = 0;
                if (env->algo != ALGO_AUTO && env->algo != (a == 0 ? ALGO_TREE : ALGO_RING))
                    on = 0;
                nt->bw_GBps[k][a][p] = on ? bus : 0;
                float intra = hw_lat[nt->hw_nvlink[a] ? 0 : 1][a][p], lat = base_lat[a][p];
                if (a == 1 && k == COLL_BROADCAST) {
                    if (g->same_channels)
                        lat += intra;
                    else
                        lat += (float)nsteps * (p == 2 ? hw_lat[nt->hw_nvlink[a] ? 0 : 1][0][p]
                                                       : intra);
                } else if (a == 1) {
                    lat += (float)nsteps * intra;
                } else {
                    lat += 2 * ((float)(n - 1) * intra);
                }
                nt->lat_us[k][a][p] = lat;
            }
        }
    }
}

/* --- point-to-point ------------------------------------------------------- */

enum { P2P_LL_THRESHOLD = 16384,       /* enqueue.cc NCCL_P2P_LL_THRESHOLD */
       LL_STEP_BYTES = 8 * 512 * 16,   /* DEFAULT_LL_BUFFSIZE / NCCL_STEPS */
       DEFAULT_BUFFSIZE = 4 << 20 };

static int pow2_up(int x)
{
    int y = 1;
    while (y < x)
        y <<= 1;
    return y;
}

/* paths.cc ncclTopoComputeP2pChannelsPerPeer and ncclTopoComputeP2pChannels
 * (one node): p2pnChannels is the communicator's channels rounded up to a
 * power of 2 (NCCL_MAX_P2P_NCHANNELS 64); per peer, 2 x the NVLink lanes of
 * a P2P NVLink path (path bandwidth over one lane's), 2 otherwise; the
 * fewest of every rank's peers, rounded up to a power of 2, at most
 * p2pnChannels. */
static void p2p_channels(nccl_tune *nt, sys *s)
{
    int nc = nt->nchannels < NCCL_TUNE_MAX_CHANNELS ? nt->nchannels : NCCL_TUNE_MAX_CHANNELS;
    nt->p2p_nchannels = pow2_up(nc);
    int per_peer = NCCL_TUNE_MAX_CHANNELS;
    float lane = nvlink_bw(s->sm);
    for (int g = 0; g < nt->searched; g++)
        for (int p = 0; p < nt->searched; p++) {
            if (p == g)
                continue;
            int ch = 2;
            if (nt->p2p[p][g] && nt->path_type[p][g] <= P_NVB) {
                int lanes = (int)(nt->path_bw_GBps[p][g] / lane);
                ch = 2 * (lanes > 1 ? lanes : 1);
            }
            per_peer = ch < per_peer ? ch : per_peer;
        }
    per_peer = pow2_up(per_peer);
    nt->p2p_per_peer = per_peer < nt->p2p_nchannels ? per_peer : nt->p2p_nchannels;
}

/* init.cc computeBuffSizes: Simple's p2p step is NCCL_P2P_NVL_CHUNKSIZE
 * (512 KiB) when every pair is NVLink, else NCCL_P2P_PCI_CHUNKSIZE (128 KiB),
 * at most NCCL_BUFFSIZE / NCCL_STEPS. */
static void p2p_chunk(nccl_tune *nt, const nccl_env *env)
{
    long long buff = env->buffsize_bytes > 0 ? env->buffsize_bytes : DEFAULT_BUFFSIZE;
    long long chunk = nt->all_nvlink ? 1 << 19 : 1 << 17;
    if (chunk * 8 > buff)
        chunk = buff / 8;
    nt->p2p_chunk_bytes = (int)chunk;
}

/* addP2pToPlan: the channels a send of b bytes is split over, parts of at
 * least step / 8 and at most 32 steps (one node). */
static int p2p_split(uint64_t b, uint64_t step, int min_ch, int max_ch)
{
    if (b == 0)
        return 1;
    uint64_t lo = step / 8, hi = step * 32;
    uint64_t parts = (b + lo - 1) / lo;
    int nch = parts < (uint64_t)min_ch ? (int)parts : min_ch;
    uint64_t part = (b + (uint64_t)nch - 1) / (uint64_t)nch;
    part = part > lo ? part : lo;
    while (part > hi && nch <= max_ch / 2) {
        nch *= 2;
        part = (b + (uint64_t)nch - 1) / (uint64_t)nch;
    }
    return nch;
}

void nccl_tune_p2p_op(const nccl_tune *nt, uint64_t peer_bytes, nccl_tune_p2p *out)
{
    /* scheduleP2pTasksToPlan: every channel, but one per peer's send when
     * all ranks' would not fit in p2pnChannels. */
    int n = nt->nranks, max_ch = nt->p2p_per_peer, min_ch = max_ch;
    while (min_ch * n > nt->p2p_nchannels && min_ch > 1)
        min_ch /= 2;
    out->min_channels = min_ch;
    if (n < 2) {
        /* Only the send to itself: a copy, never LL. */
        out->proto = PROTO_SIMPLE;
        out->nchannels = p2p_split(peer_bytes, (uint64_t)nt->p2p_chunk_bytes, min_ch, max_ch);
        return;
    }
    int ll;
    if (versions[nt->version].p2p_ll_per_send) {
        out->nchannels = p2p_split(peer_bytes, (uint64_t)nt->p2p_chunk_bytes, min_ch, max_ch);
        ll = peer_bytes <= (uint64_t)out->nchannels * P2P_LL_THRESHOLD;
    } else {
        ll = peer_bytes <= (uint64_t)max_ch * P2P_LL_THRESHOLD;
        out->nchannels = p2p_split(peer_bytes, ll ? LL_STEP_BYTES : (uint64_t)nt->p2p_chunk_bytes,
                                   min_ch, max_ch);
    }
    out->proto = ll ? PROTO_LL : PROTO_SIMPLE;
}

/* --- the communicator ---------------------------------------------------- */

/* search.cc ncclTopoCompute: a graph of NCCL_GRAPH_FILE with the search's id
 * and channels replaces the search (no DupChannels, no pass 2). */
static void from_file(const nccl_graphfile *gf, int id, sgraph *sg, nccl_tune_graph *out)
{
    const nccl_graphfile_graph *g = gf ? nccl_graphfile_find(gf, id) : NULL;
    if (!g)
        return;
    sg->pattern = g->pattern;
    out->found = 1;
    out->from_file = 1;
    out->nchannels = out->search_channels = g->nchannels;
    out->search_bw_GBps = out->bw_intra_GBps = g->speed_intra_GBps;
    out->type_intra = g->type_intra;
    out->type_inter = g->type_inter;
    out->same_channels = g->same_channels;
    memcpy(out->order, g->order, sizeof out->order);
}

int nccl_tune_new(const topo *t, int nranks, const nccl_env *env, nccl_tune **out, err *e)
{
    *out = NULL;
    int ver = env->version;
    if (ver < 0 || ver >= NVERSIONS)
        return err_set(e, ERR_USAGE, "NCCL version index %d out of range", ver);
    nccl_tune *nt = calloc(1, sizeof *nt);
    if (!nt)
        return err_set(e, ERR_SYSTEM, "out of memory");
    nt->version = ver;
    nt->nranks = nranks;
    nt->cpu = topo_params_get(t)->cpu;
    nt->sm = topo_params_get(t)->gpu_sm > 0 ? topo_params_get(t)->gpu_sm : 80;
    nt->socket_GBps = socket_bw(nt->cpu);
    if (nranks < 1) {
        free(nt);
        return err_set(e, ERR_USAGE, "NCCL needs at least one rank");
    }
    /* Above NCCL's local ranks the search runs on the first of them. */
    int ns = nranks < NCCL_TUNE_MAX_RANKS ? nranks : NCCL_TUNE_MAX_RANKS;
    nt->searched = ns;
    sys s;
    memset(&s, 0, sizeof s);
    s.every_step = env->search_every_step;
    s.node = calloc(MAX_NODES, sizeof *s.node);
    int rc = s.node ? build_sys(&s, t, ns, e) : err_set(e, ERR_SYSTEM, "out of memory");
    int nbase = 0;
    if (!rc && (s.slot = malloc(sizeof *s.slot * (size_t)s.nn)))
        for (int v = 0; v < s.nn; v++)
            s.slot[v] = s.node[v].type == N_CPU || s.node[v].type == N_GPU ? nbase++ : -1;
    if (!rc && (!s.slot || !(s.path = malloc(sizeof *s.path * (size_t)nbase * (size_t)s.nn))))
        rc = err_set(e, ERR_SYSTEM, "out of memory");
    sgraph *ring = NULL, *tree = NULL;
    if (!rc && (!(ring = calloc(1, sizeof *ring)) || !(tree = calloc(1, sizeof *tree))))
        rc = err_set(e, ERR_SYSTEM, "out of memory");
    nccl_graphfile *gf = NULL;
    if (!rc && env->graph_file[0] && ns < nranks)
        rc = err_set(e, ERR_USAGE, "NCCL_GRAPH_FILE: a graph of %d ranks is more than NCCL's %d "
                     "local ranks", nranks, NCCL_TUNE_MAX_RANKS);
    if (!rc && env->graph_file[0] && !(gf = malloc(sizeof *gf)))
        rc = err_set(e, ERR_SYSTEM, "out of memory");
    if (!rc && gf)
        rc = nccl_graphfile_read(env->graph_file, nranks, gf, e);
    if (!rc) {
        /* The CPUs' rows only for a detour (below): they change nothing else. */
        for (int v = 0; v < s.nn; v++)
            if (s.node[v].type == N_GPU)
                set_paths(&s, v);
        int cpu_rows = 0;
        /* paths.cc ncclTopoCheckP2p: default PATH_PXB; SYS on AMD with at
         * most 2 GPUs; NCCL_P2P_DISABLE=1 is LOC; NCCL_P2P_LEVEL overrides. */
        nt->p2p_level = P_PXB;
        nt->p2p_level_why = "default";
        if (s.cpu == CPU_AMD && nranks <= 2) {
            nt->p2p_level = P_SYS;
            nt->p2p_level_why = "AMD CPU with <= 2 GPUs";
        }
        if (env->p2p_disable) {
            nt->p2p_level = P_LOC;
            nt->p2p_level_why = "NCCL_P2P_DISABLE=1";
        } else if (env->p2p_level >= 0) {
            nt->p2p_level = env->p2p_level;
            nt->p2p_level_why = "NCCL_P2P_LEVEL";
        }
        /* ncclTopoComputePaths: a pair without P2P goes through the CPU
         * closest to the receiver (SHM). */
        for (int g = 0; g < ns && !rc; g++)
            for (int p = 0; p < ns && !rc; p++) {
                int vg = s.gpu[g], vp = s.gpu[p];
                npath *pp = PATH(&s, vp, vg);
                nt->path_type[p][g] = (uint8_t)pp->type;
                nt->p2p[p][g] = (uint8_t)(pp->type <= nt->p2p_level);
                /* ncclTopoCheckP2p: within the level NVML must report P2P
                 * read and write OK (topo_gpu_p2p); on an NVLink path NCCL
                 * refuses to run unless NCCL_IGNORE_DISABLED_P2P=1, else the
                 * pair falls back to SHM. 2 skips the check. */
                topo_p2p st = p == g ? P2P_OK : topo_gpu_p2p(t, p, g);
                if (nt->p2p[p][g] && st != P2P_OK && env->ignore_disabled_p2p != 2) {
                    if (pp->type <= P_NVB && !env->ignore_disabled_p2p)
                        rc = err_set(e, ERR_USAGE, "GPU%d -> GPU%d: NVML reports P2P %s between "
                                     "NVLink-connected GPUs: NCCL stops here (\"P2P is "
                                     "disabled between NVLINK connected GPUs\") unless "
                                     "NCCL_IGNORE_DISABLED_P2P=1", p, g, topo_p2p_name(st));
                    nt->p2p[p][g] = 0;
                    nt->p2p_nvml[p][g] = (uint8_t)st;
                }
                if (!nt->p2p[p][g]) {
                    if (env->shm_disable)
                        rc = err_set(e, ERR_USAGE, "GPU%d -> GPU%d: no P2P at this level and "
                                     "NCCL_SHM_DISABLE=1: NCCL would need a network", p, g);
                    for (int v = 0; v < s.nn && !cpu_rows; v++)
                        if (s.node[v].type == N_CPU)
                            set_paths(&s, v);
                    cpu_rows = 1;
                    int c = local_cpu(&s, vg);
                    npath *a = c >= 0 ? PATH(&s, vp, c) : NULL, *b = c >= 0 ? PATH(&s, c, vg) : NULL;
                    if (!rc && (c < 0 || a->count + b->count > MAX_HOPS))
                        rc = err_set(e, ERR_USAGE, "GPU%d -> GPU%d: no path through a CPU", p, g);
                    if (!rc) {
                        /* hop0 stays: an NVB path through this GPU walks it. */
                        pp->count = (uint8_t)(a->count + b->count);
                        pp->type = a->type > b->type ? a->type : b->type;
                        pp->bw = fminf(a->bw, b->bw);
                        pp->via = (int16_t)c;
                    }
                }
                nt->path_bw_GBps[p][g] = pp->bw;
            }
    }
    if (!rc && nranks > 1 && search_prep(&s))
        rc = err_set(e, ERR_SYSTEM, "out of memory");
    if (!rc && nranks > 1) {
        /* ncclTopoSearchInit */
        for (int r = 0; r < ns; r++) {
            nnode *g = &s.node[s.gpu[r]];
            for (int q = 0; q < ns; q++) {
                npath *p = PATH(&s, s.gpu[r], s.gpu[q]);
                if (p->count)
                    s.max_bw = fmaxf(s.max_bw, p->bw);
            }
            float nvl = 0, pci = 0;
            for (int l = 0; l < g->nlinks; l++) {
                if (g->links[l].type == L_NVL)
                    nvl += g->links[l].bw;
                if (g->links[l].type == L_PCI)
                    pci = g->links[l].bw;
            }
            s.total_bw = fmaxf(s.total_bw, fmaxf(pci, nvl));
        }
        nt->max_bw_GBps = s.max_bw;
        nt->total_bw_GBps = s.total_bw;
        int min_type = P_SYS, max_type = P_LOC;
        for (int a = 0; a < ns; a++)
            for (int b = 0; b < ns; b++)
                if (a != b) {
                    int ty = PATH(&s, s.gpu[a], s.gpu[b])->type;
                    min_type = ty < min_type ? ty : min_type;
                    max_type = ty > max_type ? ty : max_type;
                }
        ring->pattern = PAT_RING;
        ring->min_ch = 1;
        ring->max_ch = MAX_SEARCH_CH;
        compute(&s, &versions[ver], ring, min_type, max_type, nt, &nt->ring);
        from_file(gf, 0, ring, &nt->ring);
        tree->pattern = PAT_BALANCED_TREE;
        tree->min_ch = tree->max_ch = nt->ring.nchannels;
        compute(&s, &versions[ver], tree, min_type, max_type, nt, &nt->tree);
        from_file(gf, 1, tree, &nt->tree);
        /* init.cc: min of the two; connect.cc doubles, then NCCL_MAX/MIN_NCHANNELS. */
        int nc = nt->ring.nchannels < nt->tree.nchannels ? nt->ring.nchannels : nt->tree.nchannels;
        nt->ring.nchannels = nt->tree.nchannels = nc;
        nc = nc * 2 < NCCL_TUNE_MAX_CHANNELS ? nc * 2 : NCCL_TUNE_MAX_CHANNELS;
        int maxc = env->max_channels > 0 ? env->max_channels : NCCL_TUNE_MAX_CHANNELS;
        int minc = env->min_channels > 1 ? env->min_channels : 1;
        nc = nc < maxc ? nc : maxc;
        nc = nc > minc ? nc : minc;
        nt->nchannels = nc;
        for (int v = 0; v < s.nn; v++)
            for (int l = 0; l < s.node[v].nlinks; l++) {
                uint32_t bits;
                memcpy(&bits, &s.node[v].links[l].bw, sizeof bits);
                nt->search_digest = digest(nt->search_digest, bits);
            }
        tune(nt, &versions[ver], tree->pattern, env);
        nt->all_nvlink = max_type < P_PIX;   /* paths.cc ncclTopoPathAllNVLink */
        p2p_channels(nt, &s);
        if (ns == nranks) {
            int nsp;
            const float *speed = speeds(&versions[ver], s.sm, &nsp);
            rc = nccl_nvls_setup(nt, t, env, speed, nsp, gf ? nccl_graphfile_find(gf, 3) : NULL,
                                 e);
        } else {
            nt->nvls.why = "more ranks than NCCL's local ranks: not emulated";
        }
    } else if (!rc) {
        nt->nchannels = 1;
        nt->all_nvlink = 1;
        p2p_channels(nt, &s);
    }
    if (!rc)
        p2p_chunk(nt, env);
    for (int v = 0; s.node && v < s.nn; v++)
        free(s.node[v].links);
    free(s.node);
    free(s.path);
    free(s.slot);
    free(s.order);
    free(s.cand);
    free(s.gp);
    free(s.ghop);
    free(s.lk);
    free(s.caps);
    free(ring);
    free(tree);
    free(gf);
    if (rc) {
        free(nt);
        return rc;
    }
    *out = nt;
    return 0;
}

void nccl_tune_free(nccl_tune *nt) { free(nt); }

/* --- one operation (enqueue.cc) ------------------------------------------ */

static int log2_down(uint64_t x)
{
    int l = -1;
    while (x) {
        x >>= 1;
        l++;
    }
    return l;
}

static uint64_t div_up(uint64_t a, uint64_t b) { return (a + b - 1) / b; }

/* scheduleCollTasksToPlan for a lone task: the work is cut in cells of
 * MinTrafficPerChannel traffic and spread so each channel carries about
 * traffic / nc; returns the channels used. */
static int spread(const nccl_tune *nt, coll_kind k, uint64_t bytes, coll_proto p, int nc_task)
{
    uint64_t min_traffic = (uint64_t)versions[nt->version].min_traffic_per_channel;
    int n = nt->nranks, ncomm = nt->nchannels;
    uint64_t per_byte = k == COLL_ALLREDUCE ? 2
                      : (k == COLL_ALLGATHER || k == COLL_REDUCESCATTER) ? (uint64_t)n : 1;
    uint64_t count = (k == COLL_ALLGATHER || k == COLL_REDUCESCATTER) ? bytes / (uint64_t)n
                                                                       : bytes;
    if (count == 0)
        return 1;
    uint64_t traffic = count * per_byte * (p == PROTO_LL ? 4 : 1);
    int nch = nc_task < ncomm ? nc_task : ncomm;
    uint64_t tot = traffic > min_traffic ? traffic : min_traffic;
    uint64_t per_ch = versions[nt->version].per_channel_floor
                          ? (tot / (uint64_t)nch > min_traffic ? tot / (uint64_t)nch : min_traffic)
                          : div_up(tot / (uint64_t)nch, 16) * 16;
    if (p == PROTO_LL)
        per_byte *= 4;
    uint64_t cell = div_up(div_up(min_traffic, per_byte), 16) * 16;
    uint64_t cells = div_up(count, cell);
    uint64_t per_cell = cell * per_byte;
    uint64_t cpc = div_up(per_ch, per_cell);
    cpc = cells < cpc ? cells : cpc;
    uint64_t lo = ncomm == 1 ? cells : (cells < div_up(per_ch, per_cell) ? cells
                                                                         : div_up(per_ch, per_cell));
    int64_t mid = (int64_t)((cells - lo) / cpc);
    uint64_t hi = (cells - lo) % cpc;
    int used = (lo != 0) + (int)mid + (hi != 0);
    if (ncomm < used) {
        mid = ncomm - 2;
        cpc = (cells - lo) / (uint64_t)(mid + 1);
        hi = cpc + (cells - lo) % (uint64_t)(mid + 1);
    }
    if (hi == 0 && mid != 0) {
        hi = cpc;
        mid -= 1;
    }
    if (lo == 0) {
        if (mid == 0) {
            lo = hi;
            hi = 0;
        } else {
            lo = cpc;
            mid -= 1;
        }
    }
    return (lo != 0) + (int)mid + (hi != 0);
}

int nccl_tune_op_choose(const nccl_tune *nt, coll_kind kind, uint64_t bytes, coll_dtype dtype,
                        coll_algo algo, coll_proto proto, nccl_tune_op *out, err *e)
{
    memset(out, 0, sizeof *out);
    for (int a = 0; a < 2; a++)
        for (int p = 0; p < 3; p++)
            out->time_us[a][p] = -1;
    out->nvls_time_us = -1;
    if (kind == COLL_ALLTOALL)
        return err_set(e, ERR_USAGE, "an all-to-all is NCCL's grouped send/recv, not a "
                       "tuned collective (nccl_tune_p2p_op)");
    if (nt->nranks == 1) {
        out->algo = ALGO_RING;
        out->proto = PROTO_SIMPLE;
        out->time_us[1][2] = 0;
        out->max_channels = out->nchannels = 1;
        out->nthreads = nt->max_threads[1][2];
        return 0;
    }
    int ba = -1, bp = -1;
    float best = 3600000000.0f;
    for (int a = 0; a < 2; a++) {
        if (algo != ALGO_AUTO && algo != (a == 0 ? ALGO_TREE : ALGO_RING))
            continue;
        for (int p = 0; p < 3; p++) {
            if (proto != PROTO_AUTO && pidx(proto) != p)
                continue;
            float bw = nt->bw_GBps[kind][a][p];
            if (bw == 0)
                continue;
            int ls = log2_down(bytes >> 6);
            if (a == 0 && kind == COLL_ALLREDUCE && ls >= 0 && ls < 23)
                bw *= tree_corr[p][ls];
            float t = nt->lat_us[kind][a][p] + (float)bytes / (1000 * bw);
            out->time_us[a][p] = t;
            if (t >= 0 && t < best) {
                best = t;
                ba = a;
                bp = p;
            }
        }
    }
    /* NVLS (Simple only) after the others, as in NCCL's algorithm order. */
    if ((algo == ALGO_AUTO || algo == ALGO_NVLS) && (proto == PROTO_AUTO || proto == PROTO_SIMPLE))
        out->nvls_time_us = nccl_nvls_time_us(nt, kind, dtype, bytes);
    if (out->nvls_time_us >= 0 && out->nvls_time_us < best) {
        /* topoGetAlgoInfo: nc = nvlsChannels, all NCCL_MAX_NTHREADS threads. */
        out->algo = ALGO_NVLS;
        out->proto = PROTO_SIMPLE;
        out->max_channels = out->nchannels = nt->nvls.nchannels;
        out->nthreads = 640;
        return 0;
    }
    if (ba < 0)
        return err_set(e, ERR_USAGE, "no NCCL algorithm/protocol is enabled for %s%s",
                       coll_kind_name(kind), algo == ALGO_NVLS ? " (NVLS is off: see --explain)"
                                                               : "");
    static const coll_proto protos[3] = {PROTO_LL, PROTO_LL128, PROTO_SIMPLE};
    out->algo = ba == 0 ? ALGO_TREE : ALGO_RING;
    out->proto = protos[bp];
    /* topoGetAlgoInfo: fewer channels, then fewer threads, for small sizes. */
    int nc = nt->nchannels, th = nt->max_threads[ba][bp];
    uint64_t thr = (uint64_t)nt->thread_threshold[ba][bp];
    while (bytes < (uint64_t)nc * (uint64_t)th * thr && nc >= 2)
        nc--;
    while (bytes < (uint64_t)nc * (uint64_t)th * thr && th % 128 == 0)
        th /= 2;
    if (bp == 2)
        th += ba == 1 ? 32 : 4 * 32;
    if (th / 32 < 3)
        th = 3 * 32;
    if (ba == 0)
        th = 640;
    out->max_channels = nc;
    out->nthreads = th;
    out->nchannels = spread(nt, kind, bytes, out->proto, nc);
    return 0;
}

/* --- explain ------------------------------------------------------------- */

static const char *pname(int type)
{
    static const char *const names[] = {"LOC", "NVL", "NVB", "C2C", "PIX", "PXB",
                                        "P2C", "PXN", "PHB", "SYS", "NET", "DIS"};
    return type >= 0 && type <= 11 ? names[type] : "?";
}

static void print_graph(FILE *f, const char *what, const nccl_tune *nt, const nccl_tune_graph *g)
{
    if (!g->found)
        fprintf(f, "#   %s: nothing fits from %.1f down to %.1f GB/s: fallback to PCI order, "
                "1 channel at 0.1 GB/s, type SYS\n", what, (double)nt->speed_first_GBps,
                (double)nt->speed_last_GBps);
    else if (g->from_file)
        fprintf(f, "#   %s: %d channel%s at %.1f GB/s, type %s, from NCCL_GRAPH_FILE (no "
                "search)\n", what, g->nchannels, g->nchannels == 1 ? "" : "s",
                (double)g->bw_intra_GBps, pname(g->type_intra));
    else if (g->nchannels != g->search_channels)
        fprintf(f, "#   %s: %d channel%s at %.1f GB/s, type %s, duplicated to %d at %.1f GB/s\n",
                what, g->search_channels, g->search_channels == 1 ? "" : "s",
                (double)g->search_bw_GBps, pname(g->type_intra), g->nchannels,
                (double)g->bw_intra_GBps);
    else
        fprintf(f, "#   %s: %d channel%s at %.1f GB/s, type %s\n", what, g->nchannels,
                g->nchannels == 1 ? "" : "s", (double)g->bw_intra_GBps, pname(g->type_intra));
    fprintf(f, "#   %s 00 :", what);
    for (int r = 0; r < nt->searched; r++)
        fprintf(f, " %d", g->order[r]);
    fprintf(f, "\n");
}

void nccl_tune_explain(const nccl_tune *nt, const topo *t, coll_kind kind, uint64_t bytes,
                       const nccl_tune_op *op, int comm, FILE *f)
{
    static const char *const pn[3] = {"LL", "LL128", "Simple"}, *const an[2] = {"Tree", "Ring"};
    if (!comm)
        goto op;
    fprintf(f, "# NCCL %s (rules read in NVIDIA/nccl %s) on %s, %d ranks\n",
            versions[nt->version].name, versions[nt->version].tag, topo_name(t), nt->nranks);
    if (nt->searched < nt->nranks)
        fprintf(f, "# more ranks than NCCL's %d local ranks (NCCL_MAX_LOCAL_RANKS): the search "
                "and the transports below are of GPUs 0-%d; their graph is tuned for all %d "
                "ranks\n", NCCL_TUNE_MAX_RANKS, nt->searched - 1, nt->nranks);
    fprintf(f, "# system: GPU SM %d, CPU %s: NCCL rates the socket link at %.1f GB/s; "
            "maxBw %.1f totalBw %.1f GB/s\n", nt->sm, topo_cpu_name(nt->cpu),
            (double)nt->socket_GBps, (double)nt->max_bw_GBps, (double)nt->total_bw_GBps);
    fprintf(f, "# P2P level %s (%s)\n", pname(nt->p2p_level), nt->p2p_level_why);
    fprintf(f, "# transport of the ring's hops (paths.cc):\n");
    for (int i = 0; i < nt->searched && nt->nranks > 1; i++) {
        int a = nt->ring.order[i], b = nt->ring.order[(i + 1) % nt->searched];
        fprintf(f, "#   GPU%d -> GPU%d  %-4s %s%s%s  %.1f GB/s\n", a, b,
                pname(nt->path_type[a][b]),
                nt->p2p[a][b] ? "P2P" : "SHM (through the receiver's CPU)",
                nt->p2p_nvml[a][b] ? ", NVML P2P status " : "",
                nt->p2p_nvml[a][b] ? topo_p2p_name((topo_p2p)nt->p2p_nvml[a][b]) : "",
                (double)nt->path_bw_GBps[a][b]);
    }
    if (nt->nranks < 2) {
        fprintf(f, "# one rank: no search, no tuning; NCCL copies locally (Ring/Simple)\n");
        return;
    }
    fprintf(f, "# search (search.cc), speeds for SM %d:\n", nt->sm);
    print_graph(f, "Ring", nt, &nt->ring);
    print_graph(f, "Tree", nt, &nt->tree);
    fprintf(f, "# channels: min(ring, tree) = %d, doubled at connect, NCCL_MIN/MAX_NCHANNELS "
            "-> %d\n", nt->ring.nchannels, nt->nchannels);
    nccl_nvls_explain(nt, f);
    fprintf(f, "# tuning (tuning.cc), latency us / bandwidth GB/s, %s latencies:\n",
            nt->hw_nvlink[1] ? "NVLink" : "PCI");
    fprintf(f, "#   %-13s", "Algorithm");
    for (int a = 0; a < 2; a++)
        for (int p = 0; p < 3; p++)
            fprintf(f, " %7s/%-6s", an[a], pn[p]);
    fprintf(f, "\n#   %-13s", "Max NThreads");
    for (int a = 0; a < 2; a++)
        for (int p = 0; p < 3; p++)
            fprintf(f, " %14d", nt->max_threads[a][p]);
    fprintf(f, "\n");
    for (int k = 0; k < COLL_NKINDS; k++) {
        if (k == COLL_ALLTOALL)
            continue;
        fprintf(f, "#   %-13s", coll_kind_name((coll_kind)k));
        for (int a = 0; a < 2; a++)
            for (int p = 0; p < 3; p++)
                fprintf(f, " %7.1f/%6.2f", (double)nt->lat_us[k][a][p],
                        (double)nt->bw_GBps[k][a][p]);
        fprintf(f, "\n");
    }
op:
    if (kind == COLL_ALLTOALL) {
        uint64_t peer = bytes / (uint64_t)nt->nranks;
        nccl_tune_p2p po;
        nccl_tune_p2p_op(nt, peer, &po);
        fprintf(f, "# alltoall of %llu bytes (enqueue.cc addP2pToPlan): grouped send/recv of "
                "%llu bytes to every peer; p2p channels %d, %d per peer, %d per send at least; "
                "Simple step %d bytes\n", (unsigned long long)bytes, (unsigned long long)peer,
                nt->p2p_nchannels, nt->p2p_per_peer, po.min_channels, nt->p2p_chunk_bytes);
        fprintf(f, "#   -> %s (LL up to %d bytes per %s), %d channel%s per send\n",
                pn[pidx(po.proto)], P2P_LL_THRESHOLD,
                versions[nt->version].p2p_ll_per_send ? "channel of the send"
                                                      : "channel per peer",
                po.nchannels, po.nchannels == 1 ? "" : "s");
        return;
    }
    if (!op || nt->nranks < 2)
        return;
    fprintf(f, "# %s of %llu bytes (enqueue.cc), time = lat + bytes / (1000 bw):\n",
            coll_kind_name(kind), (unsigned long long)bytes);
    for (int a = 0; a < 2; a++)
        for (int p = 0; p < 3; p++)
            if (op->time_us[a][p] >= 0)
                fprintf(f, "#   %s/%s %.2f us\n", an[a], pn[p], (double)op->time_us[a][p]);
    if (op->nvls_time_us >= 0)
        fprintf(f, "#   NVLS/Simple %.2f us\n", (double)op->nvls_time_us);
    fprintf(f, "#   -> %s/%s, %d channel%s (nc %d after the size loop) x %d threads\n",
            op->algo == ALGO_TREE ? "Tree" : op->algo == ALGO_NVLS ? "NVLS" : "Ring",
            pn[pidx(op->proto)], op->nchannels,
            op->nchannels == 1 ? "" : "s", op->max_channels, op->nthreads);
}
