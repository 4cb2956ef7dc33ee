/* Topology graph: nodes, full-duplex links, the PCI parent tree and checks
 * (routes and path types are models/topo/route.c).
 * Nodes and links live in growable arrays (ids are indices, stable); names
 * and route arrays live in the topology's arena. topo_finish validates the
 * graph, fills PCIe bandwidths from the link math, builds an adjacency
 * (CSR) and, for small topologies, every route among GPUs and host memory. */
#include "models/topo/topo.h"
#include "models/topo/topo_impl.h"

#include <math.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "sim/arena.h"

enum {
    TOPO_MAX_GPUS = 4096,
    TOPO_MAX_NODES = 1 << 20,
    EAGER_MAX_ENDPOINTS = 64, /* routes of smaller topologies built in finish */
};
#define TOPO_MAX_BW_Bps 100e12 /* 100 TB/s: anything above is a typo */
#define TOPO_MAX_LAT_PS 1000000000LL /* 1 ms per hop */


static uint64_t hash_str(const char *s)
{
    uint64_t h = 1469598103934665603ULL; /* FNV-1a */
    for (; *s; s++)
        h = (h ^ (unsigned char)*s) * 1099511628211ULL;
    return h;
}

static void default_params(topo_params *p)
{
    p->pcie_mps_bytes = 256;
    p->pcie_mrrs_bytes = 512;
    p->pcie_tlp_overhead_bytes = 24;
    p->read_tags = 256;
    p->read_extra_lat_ps = 200000;
    p->arb_collapse_Bps = 0;
    p->arb_collapse_read_Bps = 0;
    p->socket_read_Bps = 0;
    p->sm_req_bytes = 128;
    p->cta_store_Bps = p->cta_load_Bps = 0;
    p->launch_ps = 4000000;
    p->graph_node_ps = 1500000;
    p->hostmem_Bps = 200e9;
    p->kernel_base_ps = 2000000;
    p->gpu_mem_Bps = 1792e9;
    p->copy_setup_ps = 0; /* uncalibrated: set by collsim calibrate from copies */
    p->copy_issue_ps = 0; /* uncalibrated: set by collsim calibrate from timed loops */
    p->staged_chunk_bytes = 1048576; /* assumed: no public source gives the driver's */
    p->staged_buffers = 2;           /* assumed: double buffering */
    p->staged_handover_ps = 0;       /* uncalibrated: copy-staged rows (collsim calibrate) */
    p->fence_sys_ps = 0;  /* uncalibrated: hwcheck launch's fence-sys row */
    p->fence_ack_ps = 0;  /* not measured: the route's write latency (coll_oneshot.c settle) */
    p->block_wait_ps = 0; /* uncalibrated: custom kernels of 1..32 blocks on one GPU */
    p->gpu_sm = 0;
    p->cpu = CPU_UNKNOWN;
    p->nvlink_half_blocks = 0;
    p->cta_store_host_Bps = p->cta_load_host_Bps = 0;
    p->host_sm_mixed_Bps = 0;
    p->cta_ceil_Bps = p->cta_ceil_far_Bps = 0;
    p->l2_load_speedup = 0;
    p->trip_load_ps = 0;
    p->trip_Bps = 0;
    p->l2_bytes = 0;
    p->tlp_rcb_bytes = 64;
    p->tlp_cpl_bytes = 256;
    p->tlp_sw_hdr = 256;
    p->tlp_sw_data_bytes = 32768;
    p->tlp_rc_hdr = 256;
    p->tlp_rc_data_bytes = 32768;
    p->tlp_ep_hdr = 256;
    p->tlp_ep_data_bytes = 32768;
    /* Completions a root port or CPU forwards (peer to peer, or from host
     * memory): a finite buffer like the other types' (docs/model.md "A root
     * complex's buffer for forwarded completions"); 0 = infinite. */
    p->tlp_rc_cpl_hdr = 256, p->tlp_rc_cpl_data_bytes = 32768;
    p->tlp_fc_ps = 100000;
    p->tlp_turn_ps = 0;
    p->tlp_turn_cpl_ps = 0;
    p->tlp_dllp_bytes = 0;
    /* NCCL's tuning-table latencies (src/graph/tuning.cc baseLat, ring) as
     * the kernel start, and the per-step costs of docs/model.md: defaults
     * until `collsim calibrate` fits them from forced-protocol runs. */
    static const int64_t start_ps[3] = {6600000, 14000000, 8400000};
    static const int64_t step_ps[3] = {200000, 400000, 1000000};
    for (int i = 0; i < TOPO_NCCL_NPROTO; i++) {
        p->nccl_start_ps[i] = start_ps[i];
        p->nccl_step_ps[i] = step_ps[i];
    }
    p->nccl_call_ps = 0;
    p->nccl_graph_call_ps = 0;
    p->nccl_host_ps = 0;
    p->nccl_group_ps = 0;
    p->nccl_p2p_op_ps = 0;
    p->nccl_chan_ps = 0;
}

int64_t topo_copy_setup_ps(const topo_params *p, int host)
{
    return host && p->copy_host_setup_ps > 0 ? p->copy_host_setup_ps : p->copy_setup_ps;
}

int64_t topo_nccl_issue_ps(const topo_params *p, int graph, int nranks, int p2p_ops)
{
    if (graph)
        return p->nccl_graph_call_ps > 0 ? p->nccl_graph_call_ps : p->graph_node_ps;
    /* nccl_call_us, when given, stands for a collective call and, without a
     * group key, for a group too. */
    if (p->nccl_call_ps > 0 && (p2p_ops == 0 || p->nccl_group_ps == 0))
        return p->nccl_call_ps;
    /* One rank: the front end ends in a copy (enqueue.cc ncclLaunchOneRank). */
    if (p2p_ops == 0 && nranks <= 1)
        return p->launch_ps + p->nccl_host_ps;
    /* Otherwise the calls' appends (a collective is one call: taskAppend, as
     * a send's p2pTaskAppend), group end, plan and one kernel launch
     * (group.cc doLaunches). */
    int calls = p2p_ops > 0 ? p2p_ops : 1;
    return p->launch_ps + p->nccl_group_ps + calls * p->nccl_p2p_op_ps;
}

int64_t topo_nccl_thread_issue_ps(const topo_params *p, int graph, int nranks, int p2p_ops,
                                  int gpus)
{
    int64_t one = topo_nccl_issue_ps(p, graph, nranks, p2p_ops);
    if (graph || gpus <= 1 || nranks <= 1 || p->nccl_call_ps > 0)
        return one;
    return (gpus < nranks ? gpus : nranks) * one;
}

int64_t topo_nccl_probe_issue_ps(const topo_params *p, int graph, int nranks, int p2p_ops,
                                 int gpus, int64_t probe_ps)
{
    if (probe_ps <= 0 || graph || nranks <= 1 || p->nccl_call_ps > 0)
        return topo_nccl_thread_issue_ps(p, graph, nranks, p2p_ops, gpus);
    /* The process's own group of one send and one receive stands for its
     * launch, NCCL's group path and 2 calls; then the rank's own calls. */
    int g = gpus < 1 ? 1 : gpus < nranks ? gpus : nranks;
    int calls = p2p_ops > 0 ? p2p_ops : 1;
    return g * (probe_ps + (calls - 2) * p->nccl_p2p_op_ps);
}

int64_t topo_nccl_chan_issue_ps(const topo_params *p, int graph, int nranks, int p2p_ops,
                                int channels, int gpus)
{
    if (graph || nranks <= 1 || p2p_ops > 0 || channels <= 1 || p->nccl_call_ps > 0)
        return 0;
    int g = gpus < 1 ? 1 : gpus < nranks ? gpus : nranks;
    return (int64_t)g * (channels - 1) * p->nccl_chan_ps;
}

static const char *const cpu_names[CPU_NKINDS] = {
    "unknown", "amd", "intel-bdw", "intel-skl", "intel-srp", "intel-erp",
    "arm", "power", "zhaoxin", "zhaoxin-yongfeng"};

const char *topo_cpu_name(topo_cpu c) { return c >= 0 && c < CPU_NKINDS ? cpu_names[c] : NULL; }

int topo_cpu_parse(const char *s, topo_cpu *out)
{
    for (int i = 0; i < CPU_NKINDS; i++)
        if (!strcmp(cpu_names[i], s)) {
            *out = (topo_cpu)i;
            return 0;
        }
    return -1;
}

topo *topo_new(const char *name)
{
    topo *t = calloc(1, sizeof *t);
    if (!t)
        return NULL;
    t->ar = arena_new();
    t->hash_cap = 64;
    t->hash = malloc(sizeof(int) * (size_t)t->hash_cap);
    if (!t->ar || !t->hash || pthread_mutex_init(&t->mu, NULL) != 0) {
        arena_free(t->ar);
        free(t->hash);
        free(t);
        return NULL;
    }
    memset(t->hash, 0xff, sizeof(int) * (size_t)t->hash_cap);
    t->name = arena_strdup(t->ar, name ? name : "topology");
    t->where = t->name;
    default_params(&t->params);
    if (!t->name) {
        topo_free(t);
        return NULL;
    }
    return t;
}

void topo_free(topo *t)
{
    if (!t)
        return;
    free(t->nodes);
    free(t->node_line);
    free(t->links);
    free(t->link_line);
    free(t->bw_given);
    free(t->p2p);
    free(t->gpus);
    free(t->hash);
    free(t->lhash);
    free(t->adj_start);
    free(t->adj);
    free(t->pkey);
    free(t->pval);
    for (int i = 0; i < TREE_CACHE; i++)
        topo_tree_free(t->tc[i]);
    topo_tree_free(t->part);
    for (int v = 0; t->walk && v < t->nnodes; v++)
        free(t->walk[v]);
    free(t->walk);
    free(t->twin_off);
    for (int v = 0; t->walk_full && v < t->nnodes; v++)
        free(t->walk_full[v]);
    free(t->walk_full);
    free(t->ntrees);
    free(t->nparts);
    free(t->last);
    pthread_mutex_destroy(&t->mu);
    arena_free(t->ar);
    free(t);
}

const char *topo_name(const topo *t) { return t->name; }

int topo_set_name(topo *t, const char *name)
{
    const char *n = arena_strdup(t->ar, name);
    if (!n)
        return err_set(NULL, ERR_SYSTEM, "out of memory");
    t->name = n;
    return 0;
}

int topo_assume(topo *t, err *e, const char *fmt, ...)
{
    char buf[512];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(buf, sizeof buf, fmt, ap);
    va_end(ap);
    if (t->nassumed == t->cap_assumed) {
        int cap = t->cap_assumed ? 2 * t->cap_assumed : 8;
        const char **a = arena_alloc(t->ar, sizeof *a * (size_t)cap);
        if (!a)
            return err_set(e, ERR_SYSTEM, "out of memory");
        if (t->nassumed)
            memcpy(a, t->assumed, sizeof *a * (size_t)t->nassumed);
        t->assumed = a;
        t->cap_assumed = cap;
    }
    const char *s = arena_strdup(t->ar, buf);
    if (!s)
        return err_set(e, ERR_SYSTEM, "out of memory");
    t->assumed[t->nassumed++] = s;
    return 0;
}

int topo_nassumed(const topo *t) { return t->nassumed; }

const char *topo_assumed(const topo *t, int i)
{
    ASSERTF(i >= 0 && i < t->nassumed, "assumption %d of %d", i, t->nassumed);
    return t->assumed[i];
}

void topo_set_line(topo *t, long line) { t->cur_line = line; }

topo_params *topo_params_mut(topo *t) { return &t->params; }
const topo_params *topo_params_get(const topo *t) { return &t->params; }

/* Grow an array to hold n+1 elements of size sz; 0 or -1 on OOM. */
static int grow(void **p, int *cap, int n, size_t sz)
{
    if (n < *cap)
        return 0;
    int nc = *cap ? *cap * 2 : 16;
    void *q = realloc(*p, (size_t)nc * sz);
    if (!q)
        return -1;
    *p = q;
    *cap = nc;
    return 0;
}

static int hash_insert(topo *t, int id)
{
    if (2 * (t->nnodes + 1) > t->hash_cap) {
        int nc = t->hash_cap * 2;
        int *h = malloc(sizeof(int) * (size_t)nc);
        if (!h)
            return -1;
        memset(h, 0xff, sizeof(int) * (size_t)nc);
        for (int i = 0; i < t->hash_cap; i++) {
            int v = t->hash[i];
            if (v < 0)
                continue;
            size_t j = hash_str(t->nodes[v].name) & (size_t)(nc - 1);
            while (h[j] >= 0)
                j = (j + 1) & (size_t)(nc - 1);
            h[j] = v;
        }
        free(t->hash);
        t->hash = h;
        t->hash_cap = nc;
    }
    size_t j = hash_str(t->nodes[id].name) & (size_t)(t->hash_cap - 1);
    while (t->hash[j] >= 0)
        j = (j + 1) & (size_t)(t->hash_cap - 1);
    t->hash[j] = id;
    return 0;
}

int topo_find(const topo *t, const char *name)
{
    size_t j = hash_str(name) & (size_t)(t->hash_cap - 1);
    while (t->hash[j] >= 0) {
        if (!strcmp(t->nodes[t->hash[j]].name, name))
            return t->hash[j];
        j = (j + 1) & (size_t)(t->hash_cap - 1);
    }
    return -1;
}

static const char *const kind_names[TOPO_NKINDS] = {
    "gpu", "switch", "root", "cpu", "nvswitch", "hostmem",
};

static int err_here(const topo *t, err *e, long line, const char *what)
{
    return err_at(e, t->where, line, "%s", what);
}

int topo_add_node(topo *t, const char *name, topo_kind kind, int numa, err *e)
{
    char msg[256];
    ASSERTF(!t->finished, "topo_add_node after topo_finish (%s)", name);
    if ((int)kind < 0 || kind >= TOPO_NKINDS) {
        err_at(e, t->where, t->cur_line, "node '%s': bad kind %d", name, (int)kind);
        return -1;
    }
    if (!name[0] || strlen(name) > 63) {
        err_at(e, t->where, t->cur_line, "node name '%s' must have 1 to 63 characters",
               name);
        return -1;
    }
    int old = topo_find(t, name);
    if (old >= 0) {
        snprintf(msg, sizeof msg, "duplicate node name '%s' (first defined at line %ld)",
                 name, t->node_line[old]);
        err_at(e, t->where, t->cur_line, "%s", msg);
        return -1;
    }
    if (kind == TOPO_GPU && t->ngpus >= TOPO_MAX_GPUS) {
        err_at(e, t->where, t->cur_line, "more than %d GPUs", TOPO_MAX_GPUS);
        return -1;
    }
    if (t->nnodes >= TOPO_MAX_NODES) {
        err_at(e, t->where, t->cur_line, "more than %d nodes", TOPO_MAX_NODES);
        return -1;
    }
    if (numa < -1 || numa > 65535) {
        err_at(e, t->where, t->cur_line, "node '%s': numa %d out of range 0..65535", name,
               numa);
        return -1;
    }
    int cap = t->cap_nodes;
    if (grow((void **)&t->nodes, &cap, t->nnodes, sizeof(topo_node)) ||
        grow((void **)&t->node_line, &t->cap_nodes, t->nnodes, sizeof(long))) {
        err_set(e, ERR_SYSTEM, "out of memory");
        return -1;
    }
    if (kind == TOPO_GPU && grow((void **)&t->gpus, &t->cap_gpus, t->ngpus, sizeof(int))) {
        err_set(e, ERR_SYSTEM, "out of memory");
        return -1;
    }
    const char *n = arena_strdup(t->ar, name);
    if (!n) {
        err_set(e, ERR_SYSTEM, "out of memory");
        return -1;
    }
    int id = t->nnodes;
    t->nodes[id] = (topo_node){n, kind, kind == TOPO_GPU ? t->ngpus : -1, numa, -1, 0};
    t->node_line[id] = t->cur_line;
    t->nnodes++;
    if (hash_insert(t, id)) {
        t->nnodes--;
        err_set(e, ERR_SYSTEM, "out of memory");
        return -1;
    }
    if (kind == TOPO_GPU)
        t->gpus[t->ngpus++] = id;
    return id;
}

/* Which node kinds each link kind may join (bit masks over topo_kind). */
#define K(x) (1u << (x))
static const struct {
    const char *name;
    unsigned ends;
} link_rules[LINK_NKINDS] = {
    [LINK_PCIE] = {"pcie", K(TOPO_GPU) | K(TOPO_SWITCH) | K(TOPO_ROOT) | K(TOPO_CPU)},
    [LINK_FABRIC] = {"fabric", K(TOPO_SWITCH) | K(TOPO_ROOT) | K(TOPO_CPU)},
    [LINK_SOCKET] = {"socket", K(TOPO_CPU) | K(TOPO_ROOT)},
    [LINK_NVLINK] = {"nvlink", K(TOPO_GPU) | K(TOPO_NVSWITCH)},
    [LINK_MEM] = {"mem", K(TOPO_CPU) | K(TOPO_HOSTMEM)},
};

static size_t pair_slot(int a, int b, int cap)
{
    uint64_t k = a < b ? ((uint64_t)a << 32 | (uint64_t)b) : ((uint64_t)b << 32 | (uint64_t)a);
    k *= 0x9E3779B97F4A7C15ULL;
    return (size_t)(k >> 20) & (size_t)(cap - 1);
}

/* Link id joining a and b, or -1. */
static int find_link(const topo *t, int a, int b)
{
    if (!t->lhash_cap)
        return -1;
    for (size_t j = pair_slot(a, b, t->lhash_cap); t->lhash[j] >= 0;
         j = (j + 1) & (size_t)(t->lhash_cap - 1)) {
        const topo_link *o = &t->links[t->lhash[j]];
        if ((o->a == a && o->b == b) || (o->a == b && o->b == a))
            return t->lhash[j];
    }
    return -1;
}

static int lhash_insert(topo *t, int id)
{
    if (2 * (t->nlinks + 1) > t->lhash_cap) {
        int nc = t->lhash_cap ? 2 * t->lhash_cap : 64;
        int *h = malloc(sizeof(int) * (size_t)nc);
        if (!h)
            return -1;
        memset(h, 0xff, sizeof(int) * (size_t)nc);
        for (int i = 0; i < t->lhash_cap; i++) {
            int v = t->lhash[i];
            if (v < 0)
                continue;
            size_t j = pair_slot(t->links[v].a, t->links[v].b, nc);
            while (h[j] >= 0)
                j = (j + 1) & (size_t)(nc - 1);
            h[j] = v;
        }
        free(t->lhash);
        t->lhash = h;
        t->lhash_cap = nc;
    }
    size_t j = pair_slot(t->links[id].a, t->links[id].b, t->lhash_cap);
    while (t->lhash[j] >= 0)
        j = (j + 1) & (size_t)(t->lhash_cap - 1);
    t->lhash[j] = id;
    return 0;
}

int topo_add_link(topo *t, const topo_link *l, err *e)
{
    ASSERTF(!t->finished, "topo_add_link after topo_finish");
    long ln = t->cur_line;
    if (l->a < 0 || l->a >= t->nnodes || l->b < 0 || l->b >= t->nnodes) {
        err_at(e, t->where, ln, "link between unknown nodes %d and %d", l->a, l->b);
        return -1;
    }
    const char *na = t->nodes[l->a].name, *nb = t->nodes[l->b].name;
    if (l->a == l->b) {
        err_at(e, t->where, ln, "link from '%s' to itself", na);
        return -1;
    }
    if ((int)l->kind < 0 || l->kind >= LINK_NKINDS) {
        err_at(e, t->where, ln, "link %s-%s: bad kind %d", na, nb, (int)l->kind);
        return -1;
    }
    unsigned ends = link_rules[l->kind].ends;
    topo_kind ka = t->nodes[l->a].kind, kb = t->nodes[l->b].kind;
    if (!(ends & K(ka)) || !(ends & K(kb)) ||
        (l->kind == LINK_MEM && ka == kb) ||
        (l->kind == LINK_NVLINK && ka == TOPO_NVSWITCH && kb == TOPO_NVSWITCH)) {
        err_at(e, t->where, ln, "a %s link cannot join %s '%s' and %s '%s'",
               link_rules[l->kind].name, kind_names[ka], na, kind_names[kb], nb);
        return -1;
    }
    int old = find_link(t, l->a, l->b);
    if (old >= 0) {
        err_at(e, t->where, ln, "second link between '%s' and '%s' (first at line %ld)",
               na, nb, t->link_line[old]);
        return -1;
    }
    if (!(l->bw_Bps >= 0) || l->bw_Bps > TOPO_MAX_BW_Bps ||
        (l->bw_Bps == 0 && l->kind != LINK_PCIE)) {
        err_at(e, t->where, ln, "link %s-%s: bandwidth %g GB/s must be > 0 and <= 100000",
               na, nb, l->bw_Bps / 1e9);
        return -1;
    }
    if (!(l->bw_back_Bps >= 0) || l->bw_back_Bps > TOPO_MAX_BW_Bps) {
        err_at(e, t->where, ln, "link %s-%s: back bandwidth %g GB/s must be > 0 and <= "
               "100000", na, nb, l->bw_back_Bps / 1e9);
        return -1;
    }
    if (l->kind == LINK_PCIE) {
        if (l->pcie_gen < 1 || l->pcie_gen > 6) {
            err_at(e, t->where, ln, "link %s-%s: PCIe gen %d not in 1..6", na, nb, l->pcie_gen);
            return -1;
        }
        int w = l->pcie_width;
        if (w != 1 && w != 2 && w != 4 && w != 8 && w != 12 && w != 16 && w != 32) {
            err_at(e, t->where, ln, "link %s-%s: PCIe width x%d not one of 1,2,4,8,12,16,32",
                   na, nb, w);
            return -1;
        }
    }
    if (l->kind == LINK_NVLINK && (l->nvlinks < 1 || l->nvlinks > 1024)) {
        err_at(e, t->where, ln, "link %s-%s: NVLink lanes %d not in 1..1024", na, nb,
               l->nvlinks);
        return -1;
    }
    if (l->lat_ps < 0 || l->lat_ps > TOPO_MAX_LAT_PS) {
        err_at(e, t->where, ln, "link %s-%s: latency %lld ps not in 0..1 ms", na, nb,
               (long long)l->lat_ps);
        return -1;
    }
    int cap = t->cap_links, cap2 = t->cap_links;
    if (grow((void **)&t->links, &cap, t->nlinks, sizeof(topo_link)) ||
        grow((void **)&t->bw_given, &cap2, t->nlinks, 1) ||
        grow((void **)&t->link_line, &t->cap_links, t->nlinks, sizeof(long))) {
        err_set(e, ERR_SYSTEM, "out of memory");
        return -1;
    }
    int id = t->nlinks++;
    t->links[id] = *l;
    if (l->kind != LINK_PCIE)
        t->links[id].pcie_gen = t->links[id].pcie_width = 0;
    if (l->kind != LINK_NVLINK)
        t->links[id].nvlinks = 0;
    t->bw_given[id] = l->bw_Bps > 0;
    t->link_line[id] = ln;
    if (lhash_insert(t, id)) {
        t->nlinks--;
        err_set(e, ERR_SYSTEM, "out of memory");
        return -1;
    }
    return id;
}

int topo_set_read_tags(topo *t, int node, int tags, err *e)
{
    ASSERTF(node >= 0 && node < t->nnodes, "node %d", node);
    if (t->nodes[node].kind != TOPO_GPU)
        return err_at(e, t->where, t->node_line[node], "tags= on '%s': only a GPU has read tags",
                      t->nodes[node].name);
    if (tags < 0 || tags > 16384)
        return err_at(e, t->where, t->node_line[node], "tags=%d on '%s' is not in 1..16384",
                      tags, t->nodes[node].name);
    t->nodes[node].read_tags = tags;
    return 0;
}

int topo_read_tags(const topo *t, int node)
{
    int own = node >= 0 && node < t->nnodes ? t->nodes[node].read_tags : 0;
    return own > 0 ? own : t->params.read_tags;
}

int topo_ce_read_tags(const topo *t, int node)
{
    int tags = topo_read_tags(t, node), ce = t->params.ce_read_tags;
    return ce > 0 && ce < tags ? ce : tags;
}

int topo_set_parent(topo *t, int node, int parent, err *e)
{
    ASSERTF(node >= 0 && node < t->nnodes, "node %d", node);
    long ln = t->node_line[node];
    const topo_node *n = &t->nodes[node];
    if (parent < 0) {
        t->nodes[node].pci_parent = -1;
        return 0;
    }
    ASSERTF(parent < t->nnodes, "parent %d", parent);
    const topo_node *p = &t->nodes[parent];
    if (n->kind == TOPO_CPU || n->kind == TOPO_NVSWITCH || n->kind == TOPO_HOSTMEM)
        return err_at(e, t->where, ln, "%s '%s' cannot have a PCI parent",
                      kind_names[n->kind], n->name);
    if (p->kind != TOPO_SWITCH && p->kind != TOPO_ROOT && p->kind != TOPO_CPU)
        return err_at(e, t->where, ln, "PCI parent '%s' of '%s' is a %s, not a switch, root "
                      "or cpu", p->name, n->name, kind_names[p->kind]);
    for (int a = parent, steps = 0; a >= 0; a = t->nodes[a].pci_parent, steps++)
        if (a == node || steps > t->nnodes)
            return err_at(e, t->where, ln, "PCI parent cycle: '%s' is its own ancestor "
                          "through '%s'", n->name, p->name);
    t->nodes[node].pci_parent = parent;
    return 0;
}

/* PCIe generations: GT/s per lane and line-code efficiency. Gen6 uses FLIT
 * mode: 236 of 256 flit bytes carry TLPs (docs/model.md). */
static const struct {
    double gtps, enc;
} pcie_gens[7] = {
    {0, 0}, {2.5, 0.8}, {5.0, 0.8}, {8.0, 128.0 / 130}, {16.0, 128.0 / 130},
    {32.0, 128.0 / 130}, {64.0, 236.0 / 256},
};

double topo_pcie_bw_Bps(int gen, int width, const topo_params *p)
{
    if (gen < 1 || gen > 6 || width < 1 || p->pcie_mps_bytes <= 0 ||
        p->pcie_tlp_overhead_bytes < 0)
        return 0;
    double raw = pcie_gens[gen].gtps * 1e9 * width * pcie_gens[gen].enc / 8;
    double mps = p->pcie_mps_bytes;
    return raw * mps / (mps + p->pcie_tlp_overhead_bytes);
}

int topo_link_bw_given(const topo *t, int id) { return t->bw_given[id]; }

int topo_nnodes(const topo *t) { return t->nnodes; }
int topo_nlinks(const topo *t) { return t->nlinks; }
int topo_ngpus(const topo *t) { return t->ngpus; }

static const char *const p2p_names[P2P_NKINDS] = {"OK", "NS", "CNS", "GNS", "TNS", "U"};

const char *topo_p2p_name(topo_p2p s)
{
    return (unsigned)s < P2P_NKINDS ? p2p_names[s] : NULL;
}

int topo_p2p_parse(const char *s, topo_p2p *out)
{
    for (int i = 0; i < P2P_NKINDS; i++)
        if (!strcasecmp(s, p2p_names[i])) {
            *out = (topo_p2p)i;
            return 0;
        }
    return -1;
}

int topo_set_p2p(topo *t, int a, int b, topo_p2p s, err *e)
{
    if (a < 0 || b < 0 || a >= t->ngpus || b >= t->ngpus || (unsigned)s >= P2P_NKINDS)
        return err_set(e, ERR_INPUT, "p2p: GPU %d or %d out of range (%d GPUs)", a, b,
                       t->ngpus);
    for (int i = 0; i < t->np2p; i++)
        if (t->p2p[3 * i] == a && t->p2p[3 * i + 1] == b) {
            if (s == P2P_OK) { /* drop it: keep the list to the pairs not OK */
                memmove(t->p2p + 3 * i, t->p2p + 3 * i + 3,
                        sizeof(int) * 3 * (size_t)(t->np2p - i - 1));
                t->np2p--;
            } else {
                t->p2p[3 * i + 2] = (int)s;
            }
            return 0;
        }
    if (s == P2P_OK)
        return 0;
    if (t->np2p == t->cap_p2p) {
        int cap = t->cap_p2p ? 2 * t->cap_p2p : 16;
        int *p = realloc(t->p2p, sizeof(int) * 3 * (size_t)cap);
        if (!p)
            return err_set(e, ERR_SYSTEM, "out of memory");
        t->p2p = p;
        t->cap_p2p = cap;
    }
    t->p2p[3 * t->np2p] = a;
    t->p2p[3 * t->np2p + 1] = b;
    t->p2p[3 * t->np2p + 2] = (int)s;
    t->np2p++;
    return 0;
}

topo_p2p topo_gpu_p2p(const topo *t, int a, int b)
{
    for (int i = 0; i < t->np2p; i++)
        if (t->p2p[3 * i] == a && t->p2p[3 * i + 1] == b)
            return (topo_p2p)t->p2p[3 * i + 2];
    return P2P_OK;
}

int topo_p2p_count(const topo *t) { return t->np2p; }

void topo_p2p_at(const topo *t, int i, int *a, int *b, topo_p2p *s)
{
    *a = t->p2p[3 * i];
    *b = t->p2p[3 * i + 1];
    *s = (topo_p2p)t->p2p[3 * i + 2];
}

double topo_nvlink_lane_GBps(int sm)
{
    return sm >= 100 ? 40.1 : sm >= 90 ? 20.6 : sm == 86 ? 12.0 : sm >= 70 ? 20.0
         : sm >= 60 ? 18.0 : 20.0;
}
const topo_node *topo_node_at(const topo *t, int id) { return &t->nodes[id]; }
const topo_link *topo_link_at(const topo *t, int id) { return &t->links[id]; }
int topo_gpu_node(const topo *t, int gpu)
{
    return gpu >= 0 && gpu < t->ngpus ? t->gpus[gpu] : -1;
}

static int build_adjacency(topo *t)
{
    t->adj_start = calloc((size_t)t->nnodes + 1, sizeof(int));
    t->adj = malloc(sizeof(int) * (size_t)(2 * t->nlinks + 1));
    if (!t->adj_start || !t->adj)
        return -1;
    for (int i = 0; i < t->nlinks; i++) {
        t->adj_start[t->links[i].a + 1]++;
        t->adj_start[t->links[i].b + 1]++;
    }
    for (int v = 0; v < t->nnodes; v++)
        t->adj_start[v + 1] += t->adj_start[v];
    int *fill = malloc(sizeof(int) * (size_t)(t->nnodes + 1));
    if (!fill)
        return -1;
    memcpy(fill, t->adj_start, sizeof(int) * (size_t)(t->nnodes + 1));
    for (int i = 0; i < t->nlinks; i++) { /* link order within a node */
        t->adj[fill[t->links[i].a]++] = i;
        t->adj[fill[t->links[i].b]++] = i;
    }
    free(fill);
    return 0;
}

/* Reachability over routable paths from src, or from every GPU if src < 0
 * (sources expand; other GPUs and host memory never do); seen[v] = 1 for
 * reached nodes. */
static int reach(const topo *t, int src, unsigned char *seen)
{
    int *q = malloc(sizeof(int) * (size_t)t->nnodes);
    if (!q)
        return -1;
    memset(seen, 0, (size_t)t->nnodes);
    int head = 0, tail = 0;
    for (int g = 0; g < t->ngpus; g++)
        if (src < 0 || t->gpus[g] == src) {
            q[tail++] = t->gpus[g];
            seen[t->gpus[g]] = 1;
        }
    int nsrc = tail;
    while (head < tail) {
        int u = q[head++];
        if (head > nsrc && !topo_is_transit(t, u))
            continue;
        for (int i = t->adj_start[u]; i < t->adj_start[u + 1]; i++) {
            int v = topo_other_end(&t->links[t->adj[i]], u);
            if (!seen[v]) {
                seen[v] = 1;
                q[tail++] = v;
            }
        }
    }
    free(q);
    return 0;
}

static int linked(const topo *t, int a, int b) { return find_link(t, a, b) >= 0; }

int topo_top_cpu(const topo *t, int v)
{
    int steps = 0;
    while (t->nodes[v].pci_parent >= 0 && steps++ <= t->nnodes)
        v = t->nodes[v].pci_parent;
    return t->nodes[v].kind == TOPO_CPU ? v : -1;
}

int topo_root_port(const topo *t, int v)
{
    for (int steps = 0; v >= 0 && steps <= t->nnodes; steps++) {
        if (t->nodes[v].kind == TOPO_ROOT)
            return v;
        v = t->nodes[v].pci_parent;
    }
    return -1;
}


int topo_finish(topo *t, const char *where, err *e)
{
    if (t->finished)
        return 0;
    char msg[512];
    if (where && !(t->where = arena_strdup(t->ar, where)))
        return err_set(e, ERR_SYSTEM, "out of memory");
    if (t->ngpus == 0)
        return err_at(e, t->where, 0, "topology has no GPUs");
    const topo_params *p = &t->params;
    if (p->pcie_mps_bytes < 64 || p->pcie_mps_bytes > 4096 ||
        p->pcie_mrrs_bytes < 64 || p->pcie_mrrs_bytes > 4096 ||
        p->pcie_tlp_overhead_bytes < 0 || p->pcie_tlp_overhead_bytes > 64 ||
        p->read_tags < 1 || p->read_tags > 16384 || p->read_extra_lat_ps < 0 ||
        !(p->arb_collapse_Bps >= 0) || p->arb_collapse_Bps > TOPO_MAX_BW_Bps ||
        !(p->arb_collapse_read_Bps >= 0) || p->arb_collapse_read_Bps > TOPO_MAX_BW_Bps ||
        !(p->socket_read_Bps >= 0) || p->socket_read_Bps > TOPO_MAX_BW_Bps ||
        p->sm_req_bytes < 16 || p->sm_req_bytes > 4096 ||
        !(p->cta_store_Bps >= 0) || p->cta_store_Bps > TOPO_MAX_BW_Bps ||
        !(p->cta_load_Bps >= 0) || p->cta_load_Bps > TOPO_MAX_BW_Bps ||
        p->launch_ps < 0 || p->graph_node_ps < 0 || !(p->hostmem_Bps > 0) ||
        p->hostmem_Bps > TOPO_MAX_BW_Bps || p->kernel_base_ps < 0 ||
        !(p->gpu_mem_Bps >= 0) || p->gpu_mem_Bps > TOPO_MAX_BW_Bps ||
        p->tlp_rcb_bytes < 64 || p->tlp_rcb_bytes > 128 || p->tlp_cpl_bytes < p->tlp_rcb_bytes ||
        p->tlp_cpl_bytes > 4096 || p->tlp_cpl_bytes % p->tlp_rcb_bytes ||
        p->tlp_sw_hdr < 0 || p->tlp_rc_hdr < 0 || p->tlp_ep_hdr < 0 ||
        p->tlp_sw_data_bytes < 0 || p->tlp_rc_data_bytes < 0 || p->tlp_ep_data_bytes < 0 ||
        p->tlp_rc_cpl_hdr < 0 || p->tlp_rc_cpl_data_bytes < 0 ||
        p->tlp_fc_ps < 0 || p->tlp_turn_ps < 0 || p->tlp_turn_cpl_ps < 0 ||
        p->tlp_dllp_bytes < 0 || p->tlp_dllp_bytes > 256 ||
        p->nccl_call_ps < 0 || p->nccl_graph_call_ps < 0 || p->nccl_host_ps < 0 ||
        p->nccl_group_ps < 0 || p->nccl_p2p_op_ps < 0 || p->nccl_chan_ps < 0 ||
        p->nccl_start_ps[0] < 0 ||
        p->nccl_start_ps[1] < 0 || p->nccl_start_ps[2] < 0 || p->nccl_step_ps[0] < 0 ||
        p->nccl_step_ps[1] < 0 || p->nccl_step_ps[2] < 0 ||
        !(p->nvlink_half_blocks >= 0) || p->nvlink_half_blocks > 1e4 ||
        !(p->cta_store_host_Bps >= 0) || p->cta_store_host_Bps > TOPO_MAX_BW_Bps ||
        !(p->cta_load_host_Bps >= 0) || p->cta_load_host_Bps > TOPO_MAX_BW_Bps ||
        !(p->host_sm_mixed_Bps >= 0) || p->host_sm_mixed_Bps > TOPO_MAX_BW_Bps ||
        !(p->cta_ceil_Bps >= 0) || p->cta_ceil_Bps > TOPO_MAX_BW_Bps ||
        !(p->cta_ceil_far_Bps >= 0) || p->cta_ceil_far_Bps > TOPO_MAX_BW_Bps ||
        !(p->l2_load_speedup >= 0) || p->l2_load_speedup > 100 || p->trip_load_ps < 0 ||
        !(p->trip_Bps >= 0) || p->trip_Bps > TOPO_MAX_BW_Bps ||
        !(p->l2_bytes >= 0) || p->l2_bytes > 1e12)
        return err_at(e, t->where, 0, "topology parameters out of range "
                      "(docs/formats.md lists the ranges)");
    for (int i = 0; i < t->nlinks; i++) {
        topo_link *l = &t->links[i];
        if (l->kind == LINK_PCIE && !t->bw_given[i])
            l->bw_Bps = topo_pcie_bw_Bps(l->pcie_gen, l->pcie_width, p);
        if (!(l->bw_Bps > 0))
            return err_at(e, t->where, t->link_line[i], "link %s-%s has no bandwidth",
                          t->nodes[l->a].name, t->nodes[l->b].name);
    }
    if (build_adjacency(t))
        return err_set(e, ERR_SYSTEM, "out of memory");
    /* PCI tree: every parent is linked to its child; every GPU reaches a CPU. */
    for (int v = 0; v < t->nnodes; v++) {
        const topo_node *n = &t->nodes[v];
        if (n->pci_parent >= 0 && !linked(t, v, n->pci_parent)) {
            snprintf(msg, sizeof msg, "'%s' has PCI parent '%s' but no link to it",
                     n->name, t->nodes[n->pci_parent].name);
            return err_here(t, e, t->node_line[v], msg);
        }
        if (n->kind == TOPO_GPU && topo_top_cpu(t, v) < 0) {
            snprintf(msg, sizeof msg, "GPU '%s' has no PCI path to a CPU (set parent= up "
                     "to a cpu node)", n->name);
            return err_here(t, e, t->node_line[v], msg);
        }
    }
    /* NUMA affinity not given: that of the CPU at the top of the PCI tree. */
    for (int v = 0; v < t->nnodes; v++)
        if (t->nodes[v].numa < 0 && t->nodes[v].pci_parent >= 0) {
            int c = topo_top_cpu(t, v);
            if (c >= 0)
                t->nodes[v].numa = t->nodes[c].numa;
        }
    unsigned char *seen = malloc((size_t)t->nnodes);
    if (!seen || reach(t, t->gpus[0], seen)) {
        free(seen);
        return err_set(e, ERR_SYSTEM, "out of memory");
    }
    for (int g = 1; g < t->ngpus; g++)
        if (!seen[t->gpus[g]]) {
            free(seen);
            snprintf(msg, sizeof msg, "GPU '%s' is not connected to GPU '%s'",
                     t->nodes[t->gpus[g]].name, t->nodes[t->gpus[0]].name);
            return err_here(t, e, t->node_line[t->gpus[g]], msg);
        }
    /* Host memory must be reachable from some GPU (in a generated family a
     * later box's memory is reached from that box's GPUs only). */
    if (reach(t, -1, seen)) {
        free(seen);
        return err_set(e, ERR_SYSTEM, "out of memory");
    }
    int nhost = 0;
    for (int v = 0; v < t->nnodes; v++) {
        if (t->nodes[v].kind != TOPO_HOSTMEM)
            continue;
        nhost++;
        if (!seen[v]) {
            free(seen);
            snprintf(msg, sizeof msg, "host memory '%s' is not reachable from any GPU",
                     t->nodes[v].name);
            return err_here(t, e, t->node_line[v], msg);
        }
    }
    free(seen);
    t->ntrees = calloc((size_t)t->nnodes, 1);
    t->walk = calloc((size_t)t->nnodes, sizeof *t->walk);
    t->twin_full = -1;
    t->nparts = calloc((size_t)t->nnodes, 1);
    t->last = malloc(sizeof *t->last * (size_t)t->nnodes);
    if (!t->ntrees || !t->nparts || !t->last || !t->walk)
        return err_set(e, ERR_SYSTEM, "out of memory");
    for (int v = 0; v < t->nnodes; v++)
        atomic_init(&t->last[v], NULL);
    t->finished = 1;
    t->nvl_prefix = topo_nvl_prefix(t);
    if (t->ngpus + nhost <= EAGER_MAX_ENDPOINTS) {
        for (int a = 0; a < t->nnodes; a++) {
            if (topo_is_transit(t, a))
                continue;
            for (int b = 0; b < t->nnodes; b++)
                if (!topo_is_transit(t, b) && b != a) {
                    if (!topo_get_route(t, a, b, 1))
                        return err_set(e, ERR_SYSTEM, "out of memory");
                    break; /* one call stores all of a's routes */
                }
        }
    }
    return 0;
}

