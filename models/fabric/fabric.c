/* Fabric: engine links for every direction of every topology link, plus
 * virtual links that carry budgets rather than wires: per GPU its
 * outstanding-read budget and its posted-write ingress (head-of-line
 * coupling), per socket-link direction the peer-read completions it can
 * carry. Transfers become engine flows along topo_route(). The arbitration
 * rules sit on every switch-to-root (uplink) direction; a flow's tag names
 * its group, a slot that lists, for each uplink the group crosses, which
 * GPU injects the data there (the writer, or the completer of a read) and
 * towards which root port, so a rule sees the pattern of every stream of an
 * interleaved group (docs/model.md). A slot lives while its flow does: the
 * engine gives the tag back when the flow ends (sched_on_flow_end) and the
 * slot, with its buffer, goes on a free list for the next group, so the
 * table follows the flows in flight, not all the flows of a run. */
#include "models/fabric/fabric.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>


/* One stream of a group crossing an uplink: what the rules look at. */
typedef struct upent {
    int link;          /* engine link id of the uplink direction */
    int cpl;           /* 0: posted write, 1: read completion, 2: an NVLink
                          crossing (quotient), 3: a read's requests */
    int src;           /* GPU index injecting the TLPs, -1 host */
    int root;          /* root port node above the data's destination */
    double lu;         /* link units (payload x TLP weight) of one of its TLPs */
    double per;        /* its TLPs per byte of the stream's data */
} upent;

/* A slot of the group table: tag = slot index + 1. Its buffer is kept when
 * the slot is freed and reused, so a run allocates only while the number
 * of groups in flight (or their size) reaches a new high. */
enum { GLAT_MAX = 128 };

typedef struct group {
    upent *ups;        /* its uplink crossings */
    int n, cap;
    int next_free;     /* free list link, -1 end; -2 while in use */
    int owner;         /* GPU node whose thread blocks issue the flow, -1 */
    double blocks;     /* those blocks (NCCL channels, kernel blocks); 0 unknown */
} group;

struct fabric {
    const topo *t;
    /* The topology's links and nodes, one array each (fixed once it is
     * finished): the hot paths index them, not a call per element. */
    const topo_link *L;
    const topo_node *N;
    sched *s;
    int nlinks_topo;
    int off;           /* FAB_NO_* bits */
    int *read_link;    /* per node: virtual read-budget link, -1 if not a GPU */
    double *read_cap;  /* per node: that link's capacity (MRRS requests) */
    int *hol_link;     /* per node: virtual posted-write ingress link, -1 */
    int *hol_out;      /* per node: engine link of its own PCIe link out, -1 */
    int *cta_st, *cta_ld; /* per node: one thread block's store / load budget, -1 */
    int *cta_sth, *cta_ldh; /* the same to / from host memory (= cta_st / cta_ld unless
                               the host rates are set) */
    double *ldh_trip;  /* per GPU node: cta_ldh's rate when it is the reference block's
                          bytes in flight per round trip to its host memory (no
                          measured rate; -1 until its first use), else 0 */
    int *host_mix;     /* per GPU node: its SM loads from and stores into host memory
                          together (host_sm_mixed), -1 */
    int *cta_ceil;     /* per GPU node: one thread block's ceiling at any depth (its
                          stores, far ones weighing cta_ceil / cta_ceil_far), -1 */
    int *sock_link;    /* per engine link: its virtual peer-read link, -1 */
    int *is_uplink;    /* per engine link */
    int *is_nvlink;    /* per engine link: carries the gradual-saturation rule */
    int *root_of;      /* per node: root port above it, -1 */
    int *hostmem_of;   /* per node */
    unsigned char *host; /* per node: host memory or a CPU (is_host) */
    /* group table (tags): slots in use by flows in flight, and a free list */
    group *groups;
    int ngroups, groups_cap;
    int free_group;    /* first free slot, -1 none */
    int live_groups;   /* slots in use */
    /* scratch for group flows; slot[l] = index of engine link l in lk, or -1 */
    int *slot;
    int *lk;
    double *w;
    int scratch_cap;
    int *rl;           /* scratch for one route's links and directions */
    int8_t *rd;
    int rcap;
    /* A rotation quotient for the next run (fabric_rotation_quotient): flows
     * cross qmap[l] for engine link l; off again at fabric_reset. */
    int quot;
    int *qmap;         /* and after it the links' steps from their orbit's name */
    int *qoff;
    int qp, qn;        /* its period and ranks */
    /* Route latencies between GPUs (topology only, so kept across runs):
     * glat[src * ngpu + dst] = latency + 2, 0 not asked yet; up to
     * GLAT_MAX GPUs (a barrier asks for every pair, twice). */
    int64_t *glat;
    unsigned char glat_asked[GLAT_MAX]; /* 1: a row has missed once */
    int *glat_dst;     /* the GPUs' nodes, for lat_row */
    /* per node, NULL or its tree's predecessors (fabric_expect_many), the
     * topology's and as long-lived */
    const int **preds;
};

static void group_ended(void *ctx, uint32_t tag);

static double link_cap(const topo *t, int engine_link)
{
    const topo_link *l = topo_link_at(t, engine_link / 2);
    return (engine_link & 1) && l->bw_back_Bps > 0 ? l->bw_back_Bps : l->bw_Bps;
}

/* Count distinct values among up to 2: enough for the ">= 2" triggers. */
typedef struct two {
    int first, n;
} two;

static void two_add(two *d, int v)
{
    if (d->n == 0) {
        d->first = v;
        d->n = 1;
    } else if (d->n == 1 && v != d->first) {
        d->n = 2;
    }
}

/* The streams of one TLP class on an uplink, by requester and root. */
enum { TURN_MAX = 64 };
typedef struct turn_mix {
    int n;
    int src[TURN_MAX], root[TURN_MAX];
    double cnt[TURN_MAX], lu[TURN_MAX];
} turn_mix;

static void mix_add(turn_mix *m, const upent *u)
{
    for (int i = 0; i < m->n; i++)
        if (m->src[i] == u->src && m->root[i] == u->root) {
            m->cnt[i] += 1;
            m->lu[i] += u->lu;
            return;
        }
    if (m->n == TURN_MAX)  /* beyond: the pattern is set by the first ones */
        return;
    m->src[m->n] = u->src;
    m->root[m->n] = u->root;
    m->cnt[m->n] = 1;
    m->lu[m->n++] = u->lu;
}

/* The share of a class's consecutive TLPs at an uplink that come from
 * different requesters, when its requesters' TLPs of other classes (a read's
 * requests, writes beside completions) number lambda per TLP of the class
 * (docs/model.md "The collapse from the turnaround": fitted to the
 * transaction level, FABRIC_TURN_MIX_B). */
double fabric_turn_alternation(double lambda)
{
    if (!(lambda > 0))
        return 1;
    return (1 + 1 / (1 + FABRIC_TURN_MIX_B * lambda)) / 2;
}

/* The uplink's rate under the root ports' ordering turnaround, the
 * transaction level's collapse mechanism in fluid form (docs/model.md "The
 * collapse from the turnaround"): requesters alternate TLP by TLP (round
 * robin at the switch's egress), each spreading its TLPs evenly over its
 * streams; a TLP whose requester and destination root both differ from the
 * previous one's starts turn_ps after it, any other one after the previous
 * one's serialization. P = the mean over ordered pairs of distinct
 * requesters (i, j) of 1 - sum_r f_i(r) f_j(r), and the rate is the mean TLP
 * over (1 - P) t_ser + P max(turn, t_ser). */
double fabric_turn_rate(const int *src, const int *root, const double *cnt, const double *lu,
                        int n, double nominal_Bps, double turn_ps, double alt)
{
    int rq[TURN_MAX], k = 0;
    double tot[TURN_MAX], lus[TURN_MAX];
    for (int a = 0; a < n; a++) {
        int i = 0;
        while (i < k && rq[i] != src[a])
            i++;
        if (i == k) {
            rq[k] = src[a];
            tot[k] = lus[k] = 0;
            k++;
        }
        tot[i] += cnt[a];
        lus[i] += lu[a];
    }
    if (k < 2 || !(turn_ps > 0) || !(nominal_Bps > 0))
        return nominal_Bps;
    double P = 0, mlu = 0;
    for (int i = 0; i < k; i++) {
        mlu += lus[i] / tot[i] / k;
        for (int j = 0; j < k; j++) {
            if (i == j)
                continue;
            double same = 0;
            for (int a = 0; a < n; a++)
                for (int b = 0; b < n; b++)
                    if (src[a] == rq[i] && src[b] == rq[j] && root[a] == root[b])
                        same += cnt[a] / tot[i] * cnt[b] / tot[j];
            P += (1 - same) / (k * (k - 1));
        }
    }
    P *= alt;
    double ser = mlu / nominal_Bps, turn = turn_ps * 1e-12;
    double per = (1 - P) * ser + P * (turn > ser ? turn : ser);
    return per > 0 && mlu / per < nominal_Bps ? mlu / per : nominal_Bps;
}

static double collapse_rule(void *ctx, int link, const uint32_t *tags, int ntags,
                            double nominal_Bps)
{
    const fabric *f = ctx;
    const topo_params *p = topo_params_get(f->t);
    /* Per class (posted writes, read completions): the turnaround where the
     * topology has one (the collapse follows from it and the uplink's mix;
     * both engines share the parameter), else the constant rate. */
    int64_t turn[2] = {f->off & FAB_NO_COLLAPSE_WRITE ? 0 : p->tlp_turn_ps,
                       f->off & FAB_NO_COLLAPSE_READ ? 0 : p->tlp_turn_cpl_ps};
    double cst[2] = {f->off & FAB_NO_COLLAPSE_WRITE ? 0 : p->arb_collapse_Bps,
                     f->off & FAB_NO_COLLAPSE_READ ? 0 : p->arb_collapse_read_Bps};
    if ((turn[0] <= 0 && turn[1] <= 0 && cst[0] <= 0 && cst[1] <= 0) || ntags < 1)
        return nominal_Bps;
    /* Trigger of the constant rule (docs/model.md): >= 2 distinct GPUs
     * injecting on this uplink and their data heading to >= 2 distinct root
     * ports; posted writes and read completions are counted apart. */
    two src[2] = {{0, 0}, {0, 0}}, root[2] = {{0, 0}, {0, 0}};
    turn_mix m[2];
    m[0].n = m[1].n = 0;
    /* TLPs per data byte, each stream counted evenly: per class (posted,
     * completions), and per requester GPU of every class (requests too), for
     * the other classes' share (fabric_turn_alternation). */
    double per_cls[2] = {0, 0}, per_gpu[TURN_MAX][4];
    int gpu_id[TURN_MAX], ng = 0;
    for (int i = 0; i < ntags; i++) {
        if (tags[i] == 0 || tags[i] > (uint32_t)f->ngroups)
            continue;
        const group *g = &f->groups[tags[i] - 1];
        ASSERTF(g->next_free == -2, "tag %u of a flow in flight names a free group", tags[i]);
        for (int k = 0; k < g->n; k++) {
            const upent *u = &g->ups[k];
            if (u->link != link || u->cpl == 2)
                continue;
            int j = 0;
            while (j < ng && gpu_id[j] != u->src)
                j++;
            if (j == ng && ng < TURN_MAX) {
                gpu_id[ng] = u->src;
                per_gpu[ng][0] = per_gpu[ng][1] = per_gpu[ng][2] = per_gpu[ng][3] = 0;
                ng++;
            }
            if (j < ng)
                per_gpu[j][u->cpl] += u->per;
            if (u->cpl == 3)
                continue;
            per_cls[u->cpl] += u->per;
            two_add(&src[u->cpl], u->src);
            two_add(&root[u->cpl], u->root);
            if (turn[u->cpl] > 0)
                mix_add(&m[u->cpl], u);
        }
    }
    double cap = nominal_Bps;
    for (int c = 0; c < 2; c++) {
        double r = nominal_Bps;
        if (turn[c] > 0) {
            /* The class's requesters' TLPs of the other classes per TLP of
             * the class. */
            double other = 0;
            for (int j = 0; j < ng; j++)
                if (per_gpu[j][c] > 0)
                    other += per_gpu[j][1 - c] + per_gpu[j][3];
            double lambda = f->off & FAB_NO_TURN_MIX || !(per_cls[c] > 0) ? 0 : other / per_cls[c];
            r = fabric_turn_rate(m[c].src, m[c].root, m[c].cnt, m[c].lu, m[c].n, nominal_Bps,
                                 (double)turn[c], fabric_turn_alternation(lambda));
        }
        else if (cst[c] > 0 && src[c].n >= 2 && root[c].n >= 2)
            r = cst[c];
        if (r < cap)
            cap = r;
    }
    return cap;
}

/* Gradual saturation of an NVLink direction under SM traffic (docs/model.md
 * "Thread blocks"): with N thread blocks storing or loading across it, the
 * link delivers C N / (N + N0), N0 = nvlink_half_blocks; blocks of one
 * owner count once (a channel's pipelined steps are the same blocks). A flow
 * of unknown block count (a copy engine, a kernel of one block per SM) on
 * the link leaves it at C. */
enum { MAXO = 64 };

/* One sender's blocks on an NVLink: the largest of its flows' counts, or
 * beyond MAXO senders counted per flow. */
static void owner_add(int *owner, double *most, int *no, double *sum, int key, double blocks)
{
    int k = 0;
    while (k < *no && owner[k] != key)
        k++;
    if (k == *no && *no < MAXO) {
        owner[*no] = key;
        most[(*no)++] = blocks;
    } else if (k < *no && blocks > most[k]) {
        most[k] = blocks;
    } else if (k == *no) {
        *sum += blocks;
    }
}

static double nvlink_rule(void *ctx, int link, const uint32_t *tags, int ntags,
                          double nominal_Bps)
{
    const fabric *f = ctx;
    double n0 = topo_params_get(f->t)->nvlink_half_blocks;
    int owner[MAXO], no = 0;
    double most[MAXO], sum = 0;
    if (n0 <= 0 || ntags < 1 || (f->off & FAB_NO_NVLINK_SAT))
        return nominal_Bps;
    for (int i = 0; i < ntags; i++) {
        if (tags[i] == 0 || tags[i] > (uint32_t)f->ngroups)
            return nominal_Bps;
        const group *g = &f->groups[tags[i] - 1];
        ASSERTF(g->next_free == -2, "tag %u of a flow in flight names a free group", tags[i]);
        if (g->blocks <= 0)
            return nominal_Bps;
        if (!f->quot) {
            owner_add(owner, most, &no, &sum, g->owner, g->blocks);
            continue;
        }
        /* On a quotient each crossing of this link's orbit stands for its
         * sender as many rotations back as its link is from the orbit's
         * name (fabric_rotation_quotient): one sender per crossing. */
        for (int k = 0; k < g->n; k++)
            if (g->ups[k].link == link && g->ups[k].cpl == 2)
                owner_add(owner, most, &no, &sum, g->ups[k].src, g->blocks);
    }
    for (int k = 0; k < no; k++)
        sum += most[k];
    return nominal_Bps * sum / (sum + n0);
}

static int host_node(const topo *t, int node)
{
    topo_kind k = topo_node_at(t, node)->kind;
    return k == TOPO_HOSTMEM || k == TOPO_CPU;
}

/* Is node host memory or a CPU? (host_node, kept per node: the rotation
 * check asks four times per leg) */
static int is_host(const fabric *f, int node) { return f->host[node]; }

static int compute_hostmem(const topo *t, int node)
{
    int numa = topo_node_at(t, node)->numa, cpu = -1;
    for (int i = 0; i < topo_nnodes(t); i++) {
        const topo_node *nd = topo_node_at(t, i);
        if (nd->kind == TOPO_HOSTMEM && (nd->numa == numa || numa < 0))
            return i;
        if (nd->kind == TOPO_CPU && cpu < 0 && (nd->numa == numa || numa < 0))
            cpu = i;
    }
    return cpu;
}

/* A transfer's latency from its route's one way latency. */
static sim_ps lat_of(const fabric *f, fab_op op, sim_ps one)
{
    if (!fab_is_read(op))
        return one;
    return 2 * one + topo_params_get(f->t)->read_extra_lat_ps;
}

/* A source said to reach many GPUs (a one-shot's, a barrier's) has its
 * latencies to every GPU asked for: row (glat's, latency + 2) filled from
 * its one tree at once (topo_route_lat_row: the same latencies); 0 when it
 * is not such a source or memory runs out (nothing filled). */
static int lat_row(fabric *f, int src, int64_t *row)
{
    int n = topo_ngpus(f->t);
    if (!f->glat_dst && (f->glat_dst = malloc(sizeof(int) * (size_t)n)))
        for (int g = 0; g < n; g++)
            f->glat_dst[g] = topo_gpu_node(f->t, g);
    if (!f->glat_dst || topo_route_lat_row(f->t, src, f->glat_dst, n, row))
        return 0;
    for (int g = 0; g < n; g++)
        row[g] += 2;
    return 1;
}

sim_ps fabric_lat_ps(const fabric *fc, fab_op op, int src, int dst)
{
    fabric *f = (fabric *)fc; /* the latency cache is logically const */
    int n = topo_ngpus(f->t), gs = f->N[src].gpu, gd = f->N[dst].gpu;
    if (gs < 0 || gd < 0 || n > GLAT_MAX ||
        (!f->glat && !(f->glat = calloc((size_t)n * (size_t)n, sizeof *f->glat))))
        return lat_of(f, op, topo_route_lat_ps(f->t, src, dst));
    int64_t *row = &f->glat[(size_t)gs * (size_t)n], *c = &row[gd];
    if (!*c) {
        /* A row's first miss is asked alone (a bundled barrier asks each
         * source for one peer), a later one fills the row. */
        int filled = f->glat_asked[gs] && lat_row(f, src, row);
        f->glat_asked[gs] = 1;
        if (!filled)
            *c = topo_route_lat_ps(f->t, src, dst) + 2;
    }
    return lat_of(f, op, *c - 2);
}

/* Does the route a->b cross a PCIe link? The outstanding-request bound is a
 * PCIe mechanism; NVLink reads are not modelled as tag-limited. */
static int route_has_pcie(const topo *t, int a, int b)
{
    enum { CAP = 64 };
    int buf[CAP];
    int8_t dbuf[CAP];
    int64_t lat;
    const int *links = buf;
    const int8_t *dirs = dbuf;
    int h = topo_route_copy(t, a, b, buf, dbuf, CAP, &lat);
    if (h > CAP) /* a long route: the cached one */
        h = topo_route(t, a, b, &links, &dirs);
    for (int i = 0; i < h; i++)
        if (topo_link_at(t, links[i])->kind == LINK_PCIE)
            return 1;
    return 0;
}

/* Payload bytes of one request (reads: of one completion) for op. */
static int req_bytes(const fabric *f, fab_op op)
{
    const topo_params *p = topo_params_get(f->t);
    int mps = p->pcie_mps_bytes, sm = f->off & FAB_NO_REQ_SIZE ? mps : p->sm_req_bytes;
    switch (op) {
    case FAB_CE_WRITE: return mps;
    case FAB_CE_READ: return p->pcie_mrrs_bytes;
    case FAB_READ: return f->off & FAB_NO_REQ_SIZE ? p->pcie_mrrs_bytes : sm;
    default: return sm < mps ? sm : mps;
    }
}

double fabric_tlp_weight(const fabric *f, fab_op op)
{
    const topo_params *p = topo_params_get(f->t);
    double o = p->pcie_tlp_overhead_bytes, mps = p->pcie_mps_bytes;
    double pay = req_bytes(f, op);
    if (pay > mps)   /* completions and writes are split at MPS */
        pay = mps;
    return ((pay + o) / pay) / ((mps + o) / mps);
}

/* The read bound of reader given whether the route crosses PCIe and its
 * round trip: its tags (its own or the topology's) x request / RTT. */
static double read_cap(const fabric *f, fab_op op, int reader, int pcie, sim_ps rtt)
{
    int tags = op == FAB_CE_READ ? topo_ce_read_tags(f->t, reader) : topo_read_tags(f->t, reader);
    if (!pcie || tags <= 0 || rtt <= 0)
        return 0;
    return (double)tags * req_bytes(f, op) / ((double)rtt * 1e-12);
}

double fabric_read_cap_Bps(const fabric *f, fab_op op, int reader, int target)
{
    if (!route_has_pcie(f->t, target, reader))
        return 0;
    return read_cap(f, op, reader, 1, fabric_lat_ps(f, FAB_READ, target, reader));
}

void fabric_disable(fabric *f, int off) { f->off = off; }
int fabric_disabled(const fabric *f) { return f->off; }

static const fabric_mech mechs[] = {
    {"write-collapse", FAB_NO_COLLAPSE_WRITE}, {"read-collapse", FAB_NO_COLLAPSE_READ},
    {"hol", FAB_NO_HOL}, {"req-size", FAB_NO_REQ_SIZE}, {"socket-read", FAB_NO_SOCKET_READ},
    {"nvlink-sat", FAB_NO_NVLINK_SAT}, {"serial-loads", FAB_NO_SERIAL_LOADS},
    {"host-inflight", FAB_NO_HOST_INFLIGHT}, {"host-mixed", FAB_NO_HOST_MIXED},
    {"block-ceiling", FAB_NO_BLOCK_CEIL}, {"shm-order", FAB_NO_SHM_ORDER},
    {"fifo-l2", FAB_NO_FIFO_L2}, {"first-round", FAB_NO_FIRST_ROUND},
    {"l2-sources", FAB_NO_L2_SOURCES}, {"shm-poll", FAB_NO_SHM_POLL},
    {"trip-issue", FAB_NO_TRIP_ISSUE}, {"nvlink-req", FAB_NO_NVLINK_REQ},
    {"turn-others", FAB_NO_TURN_MIX},
    {"own-round", FAB_NO_OWN_ROUND}, {"load-trip", FAB_NO_LOAD_TRIP},
    {"whole-rounds", FAB_NO_WHOLE_ROUNDS}, {"dllp", FAB_NO_DLLP},
    {"round-skew", FAB_NO_ROUND_SKEW},
    {"staged-pool", FAB_NO_STAGED_POOL},
};

int fabric_mech_list_parse(const fabric_mech *tab, size_t n, const char *what, const char *list,
                           int *off, err *e)
{
    *off = 0;
    for (const char *p = list; *p;) {
        size_t len = strcspn(p, ",");
        int bit = 0;
        for (size_t i = 0; i < n; i++)
            if (strlen(tab[i].name) == len && !strncmp(p, tab[i].name, len))
                bit = tab[i].bit;
        if (!bit) {
            char names[512] = "";
            for (size_t i = 0; i < n; i++)
                snprintf(names + strlen(names), sizeof names - strlen(names), "%s%s",
                         i ? ", " : "", tab[i].name);
            return err_set(e, ERR_USAGE, "--without: unknown %s '%.*s' (%s)", what, (int)len, p,
                           names);
        }
        *off |= bit;
        p += len + (p[len] == ',');
    }
    return 0;
}

int fabric_mech_parse(const char *list, int *off, err *e)
{
    return fabric_mech_list_parse(mechs, sizeof mechs / sizeof mechs[0], "mechanism", list, off,
                                  e);
}

/* hol_out[v] of every node: the engine link of its first PCIe link (lowest
 * id), leaving it; -1 none. One pass over the links, not one per node. */
static void pcie_outs(const topo *t, int *out)
{
    for (int v = 0; v < topo_nnodes(t); v++)
        out[v] = -1;
    for (int l = 0; l < topo_nlinks(t); l++) {
        const topo_link *tl = topo_link_at(t, l);
        if (tl->kind != LINK_PCIE)
            continue;
        if (out[tl->a] < 0)
            out[tl->a] = 2 * l;
        if (out[tl->b] < 0)
            out[tl->b] = 2 * l + 1;
    }
}

/* Read budget of GPU node n in B/s: tags x MRRS over its shortest round trip
 * to a GPU or host memory across PCIe (one shortest-path tree from n); 0: none.
 * A single flow is also capped by its own round trip (fabric_read_cap_Bps). */
/* The read budget of a zero round trip: above any link's rate. */
static const double read_unbounded_Bps = 1e15;

static double read_budget(const fabric *f, int n)
{
    const topo_params *p = topo_params_get(f->t);
    int64_t one = topo_nearest_host_lat_ps(f->t, n);
    int tags = topo_read_tags(f->t, n);
    if (one < 0 || tags <= 0)
        return 0;
    double rtt = 2.0 * (double)one + (double)p->read_extra_lat_ps;
    /* A zero round trip (latencies a fit ran to 0) bounds nothing: a rate no
     * link reaches, never 0, which would stall every read. */
    return rtt > 0 ? (double)tags * p->pcie_mrrs_bytes / (rtt * 1e-12) : read_unbounded_Bps;
}

/* buf = a sep b, cut at n - 1 bytes as snprintf would: every link has a
 * name, so this runs for each (a formatted print costs 5 times as much). */
static void join_name(char *buf, size_t n, const char *a, const char *sep, const char *b)
{
    const char *part[3] = {a, sep, b};
    size_t k = 0;
    for (int i = 0; i < 3; i++)
        for (const char *c = part[i]; *c && k + 1 < n; c++)
            buf[k++] = *c;
    buf[k] = 0;
}

/* Engine link 2l (2l + 1) of topology link l: "a>b" ("b>a"). */
static void engine_link_name(const void *ctx, int link, char *buf, size_t n)
{
    const topo *t = ctx;
    const topo_link *tl = topo_link_at(t, link / 2);
    const char *a = topo_node_at(t, tl->a)->name, *b = topo_node_at(t, tl->b)->name;
    join_name(buf, n, link % 2 ? b : a, ">", link % 2 ? a : b);
}

/* part[v]: a representative of the nodes joined to v by links (those
 * other than PCIe when pcie is 0): union-find, paths halved. */
static void link_parts(const topo *t, int pcie, int *part)
{
    for (int v = 0; v < topo_nnodes(t); v++)
        part[v] = v;
    for (int l = 0; l < topo_nlinks(t); l++) {
        const topo_link *tl = topo_link_at(t, l);
        if (tl->kind == LINK_PCIE && !pcie)
            continue;
        int a = tl->a, b = tl->b;
        while (part[a] != a)
            a = part[a] = part[part[a]];
        while (part[b] != b)
            b = part[b] = part[part[b]];
        if (a != b)
            part[a < b ? b : a] = a < b ? a : b;
    }
    for (int v = 0; v < topo_nnodes(t); v++)
        while (part[v] != part[part[v]])
            part[v] = part[part[v]];
}

/* Is the copy-engine read bound of GPU node n from host memory m > 0
 * (fabric_read_cap_Bps)? Without a route where n and m are joined (part[0])
 * but only through PCIe (part[1]), so their route crosses PCIe, and the
 * round trip is positive whatever the route (read_extra_lat_ps > 0). */
static int reads_host_over_pcie(const fabric *f, int *const part[2], int n, int m)
{
    const topo_params *p = topo_params_get(f->t);
    if (part[0][n] == part[0][m] && part[1][n] != part[1][m] && topo_read_tags(f->t, n) > 0 &&
        p->read_extra_lat_ps > 0 && p->pcie_mrrs_bytes > 0)
        return 1;
    return fabric_read_cap_Bps(f, FAB_CE_READ, n, m) > 0;
}

/* The value of GPU node n's read budget, at its first read (all of them at
 * set-up would be O(N^2) routes). */
/* GPU node n's block load rate from host memory where none is measured
 * (ldh_trip < 0 until the first use of any: then every GPU's is set, as a
 * rotation quotient's flows cross another GPU's budget in place of theirs):
 * the reference block's 8 KiB per round trip of its route to its host
 * memory; a zero round trip bounds nothing. 0 where a rate is measured or
 * there is no host memory. */
static double ldh_trip_rate(fabric *f, int n)
{
    for (int g = 0, all = f->ldh_trip[n] < 0; all && g < topo_ngpus(f->t); g++) {
        int k = topo_gpu_node(f->t, g);
        if (f->ldh_trip[k] >= 0)
            continue;
        sim_ps rtt = lat_of(f, FAB_READ, topo_route_lat_ps(f->t, f->hostmem_of[k], k));
        f->ldh_trip[k] = rtt > 0 ? FABRIC_CTA_REF_INFLIGHT_B / ((double)rtt * 1e-12)
                                 : read_unbounded_Bps;
        sched_link_cap(f->s, f->cta_ldh[k], f->ldh_trip[k]);
    }
    return f->ldh_trip[n];
}

static void read_init(fabric *f, int n)
{
    if (f->read_link[n] >= 0 && f->read_cap[n] < 0) {
        f->read_cap[n] = read_budget(f, n);
        sched_link_cap(f->s, f->read_link[n], f->read_cap[n]);
    }
}

fabric *fabric_new(const topo *t, err *e)
{
    int *parts[2] = {NULL, NULL};
    fabric *f = calloc(1, sizeof *f);
    int nn = topo_nnodes(t), ntl = topo_nlinks(t);
    if (f) {
        f->L = ntl > 0 ? topo_link_at(t, 0) : NULL;
        f->N = nn > 0 ? topo_node_at(t, 0) : NULL;
    }
    if (!f || !(f->s = sched_new()) || !(f->read_link = malloc(sizeof(int) * (size_t)nn)) ||
        !(f->read_cap = calloc((size_t)nn, sizeof(double))) ||
        !(f->hol_link = malloc(sizeof(int) * (size_t)nn)) ||
        !(f->hol_out = malloc(sizeof(int) * (size_t)nn)) ||
        !(f->cta_st = malloc(sizeof(int) * (size_t)nn)) ||
        !(f->cta_ld = malloc(sizeof(int) * (size_t)nn)) ||
        !(f->cta_sth = malloc(sizeof(int) * (size_t)nn)) ||
        !(f->cta_ldh = malloc(sizeof(int) * (size_t)nn)) ||
        !(f->ldh_trip = calloc((size_t)(nn > 0 ? nn : 1), sizeof(double))) ||
        !(f->host_mix = malloc(sizeof(int) * (size_t)nn)) ||
        !(f->cta_ceil = malloc(sizeof(int) * (size_t)nn)) ||
        !(f->sock_link = malloc(sizeof(int) * (size_t)(2 * ntl + 1))) ||
        !(f->is_uplink = calloc((size_t)(2 * ntl + 1), sizeof(int))) ||
        !(f->is_nvlink = calloc((size_t)(2 * ntl + 1), sizeof(int))) ||
        !(f->root_of = malloc(sizeof(int) * (size_t)nn)) ||
        !(f->hostmem_of = malloc(sizeof(int) * (size_t)nn)) ||
        !(f->host = malloc((size_t)(nn > 0 ? nn : 1))))
        goto oom;
    f->t = t;
    f->nlinks_topo = ntl;
    const topo_params *p = topo_params_get(t);
    /* Room for the engine links made below at once (at most): each topology
     * link's two directions, a socket link's peer reads, a GPU's budgets. */
    int nsock = 0, per_gpu = 3 + (p->cta_store_Bps > 0) + (p->cta_load_Bps > 0) +
                             (p->cta_store_host_Bps > 0) +
                             (p->host_sm_mixed_Bps > 0) +
                             (p->cta_ceil_Bps > 0 && p->cta_ceil_far_Bps > 0 && p->cta_store_Bps > 0);
    for (int l = 0; p->socket_read_Bps > 0 && l < ntl; l++)
        nsock += 2 * (topo_link_at(t, l)->kind == LINK_SOCKET);
    if (sched_reserve_links(f->s, 2 * ntl + nsock + per_gpu * topo_ngpus(t)))
        goto oom;
    char name[160];
    /* A topology link's two directions are "a>b" and "b>a", named only when
     * a name is asked for (engine_link_name). */
    sched_link_namer(f->s, engine_link_name, t);
    for (int l = 0; l < ntl; l++) {
        const topo_link *tl = topo_link_at(t, l);
        if (sched_link(f->s, link_cap(t, 2 * l), NULL) != 2 * l ||
            sched_link(f->s, link_cap(t, 2 * l + 1), NULL) != 2 * l + 1)
            goto oom;
        /* The arbitration rules watch traffic leaving a switch upwards. */
        const topo_node *na = topo_node_at(t, tl->a), *nb = topo_node_at(t, tl->b);
        if (na->kind == TOPO_SWITCH && na->pci_parent == tl->b) {
            sched_link_rule(f->s, 2 * l, collapse_rule, f);
            f->is_uplink[2 * l] = 1;
        }
        if (nb->kind == TOPO_SWITCH && nb->pci_parent == tl->a) {
            sched_link_rule(f->s, 2 * l + 1, collapse_rule, f);
            f->is_uplink[2 * l + 1] = 1;
        }
        if (tl->kind == LINK_NVLINK && p->nvlink_half_blocks > 0) {
            sched_link_rule(f->s, 2 * l, nvlink_rule, f);
            sched_link_rule(f->s, 2 * l + 1, nvlink_rule, f);
            f->is_nvlink[2 * l] = f->is_nvlink[2 * l + 1] = 1;
        }
    }
    /* Peer-read completions a socket link can carry, per direction. */
    for (int i = 0; i < 2 * ntl; i++) {
        f->sock_link[i] = -1;
        const topo_link *tl = topo_link_at(t, i / 2);
        if (tl->kind != LINK_SOCKET || p->socket_read_Bps <= 0)
            continue;
        join_name(name, sizeof name, sched_link_name(f->s, i), ".peer-reads", "");
        if ((f->sock_link[i] = sched_link(f->s, p->socket_read_Bps, name)) < 0)
            goto oom;
    }
    for (int n = 0; n < nn; n++) {
        f->root_of[n] = topo_root_port(t, n);
        f->hostmem_of[n] = compute_hostmem(t, n);
        f->host[n] = (unsigned char)host_node(t, n);
        f->read_link[n] = f->hol_link[n] = f->hol_out[n] = f->cta_st[n] = f->cta_ld[n] = -1;
        f->cta_sth[n] = f->cta_ldh[n] = f->host_mix[n] = f->cta_ceil[n] = -1;
    }
    int *pcie_out = malloc(sizeof(int) * (size_t)(nn > 0 ? nn : 1));
    if (!pcie_out)
        goto oom;
    pcie_outs(t, pcie_out);
    for (int g = 0; g < topo_ngpus(t); g++)
        f->hol_out[topo_gpu_node(t, g)] = pcie_out[topo_gpu_node(t, g)];
    free(pcie_out);
    /* The parts of the topology joined by links, and by links other than PCIe. */
    if (!(parts[0] = malloc(sizeof(int) * 2 * (size_t)(nn > 0 ? nn : 1))))
        goto oom;
    parts[1] = parts[0] + nn;
    link_parts(t, 1, parts[0]);
    link_parts(t, 0, parts[1]);
    for (int g = 0; g < topo_ngpus(t); g++) {
        int n = topo_gpu_node(t, g);
        /* Read budget of each GPU, in copy-engine requests: tags x MRRS over
         * its shortest round trip to any other GPU or host memory; a single
         * flow is also capped by its own round trip (fabric_read_cap_Bps). */
        /* Whether it has one is decided here, cheaply when it reads its host
         * memory over PCIe; its value waits for its first read (read_budget:
         * all GPU pairs would be O(N^2) routes). */
        int m = f->hostmem_of[n];
        double best = m >= 0 && reads_host_over_pcie(f, parts, n, m) ? -1 : read_budget(f, n);
        if (best != 0) {
            join_name(name, sizeof name, topo_node_at(t, n)->name, ".read-tags", "");
            if ((f->read_link[n] = sched_link(f->s, best > 0 ? best : 0, name)) < 0)
                goto oom;
            f->read_cap[n] = best;
        }
        /* Posted-write ingress: the GPU's writes share one ordered queue at
         * the switch port, at the rate of its own PCIe link. */
        /* One thread block's peer stores and loads (an NCCL channel). */
        if (p->cta_store_Bps > 0) {
            join_name(name, sizeof name, topo_node_at(t, n)->name, ".block-stores", "");
            if ((f->cta_st[n] = sched_link(f->s, p->cta_store_Bps, name)) < 0)
                goto oom;
        }
        if (p->cta_load_Bps > 0) {
            join_name(name, sizeof name, topo_node_at(t, n)->name, ".block-loads", "");
            if ((f->cta_ld[n] = sched_link(f->s, p->cta_load_Bps, name)) < 0)
                goto oom;
        }
        /* Host memory has rates of its own when the topology gives them. */
        f->cta_sth[n] = f->cta_st[n];
        f->cta_ldh[n] = f->cta_ld[n];
        if (p->cta_store_host_Bps > 0) {
            join_name(name, sizeof name, topo_node_at(t, n)->name, ".block-stores-host", "");
            if ((f->cta_sth[n] = sched_link(f->s, p->cta_store_host_Bps, name)) < 0)
                goto oom;
        }
        /* Unmeasured, a block's loads from host memory still wait a round
         * trip each: the reference block (512 threads, one 16-byte load in
         * flight each) moves its 8 KiB per round trip to its GPU's host
         * memory (Little's law; docs/model.md "A block's loads from host
         * memory"), the route's read latency. */
        double lh = p->cta_load_host_Bps;
        /* (its rate waits for its first use, ldh_trip_rate: a route per GPU
         * here would cost every run's set-up) */
        if (!(lh > 0) && !(p->cta_load_Bps > 0) && m >= 0)
            f->ldh_trip[n] = -1;
        if (lh > 0 || f->ldh_trip[n] < 0) {
            join_name(name, sizeof name, topo_node_at(t, n)->name, ".block-loads-host", "");
            if ((f->cta_ldh[n] = sched_link(f->s, lh > 0 ? lh : 0, name)) < 0)
                goto oom;
        }
        /* SM loads from and stores into host memory share one budget on the
         * GPU's link, both directions counted (docs/model.md "Loads and stores
         * at once"). */
        if (p->host_sm_mixed_Bps > 0) {
            join_name(name, sizeof name, topo_node_at(t, n)->name, ".sm-host-mixed", "");
            if ((f->host_mix[n] = sched_link(f->s, p->host_sm_mixed_Bps, name)) < 0)
                goto oom;
        }
        /* A block's ceiling whatever its depth (docs/model.md "A block's
         * ceiling"): only with both figures and the reference block's. */
        if (p->cta_ceil_Bps > 0 && p->cta_ceil_far_Bps > 0 && p->cta_store_Bps > 0) {
            snprintf(name, sizeof name, "%s.block-ceiling", topo_node_at(t, n)->name);
            if ((f->cta_ceil[n] = sched_link(f->s, p->cta_ceil_Bps, name)) < 0)
                goto oom;
        }
        int out = f->hol_out[n];
        if (out >= 0) {
            join_name(name, sizeof name, topo_node_at(t, n)->name, ".posted", "");
            if ((f->hol_link[n] = sched_link(f->s, link_cap(t, out), name)) < 0)
                goto oom;
        }
    }
    free(parts[0]);
    parts[0] = NULL;
    int nl = sched_nlinks(f->s);
    if (!(f->slot = malloc(sizeof(int) * (size_t)(nl > 0 ? nl : 1))))
        goto oom;
    for (int i = 0; i < nl; i++)
        f->slot[i] = -1;
    f->free_group = -1;
    sched_on_flow_end(f->s, group_ended, f);
    return f;
oom:
    free(parts[0]);
    fabric_free(f);
    err_set(e, ERR_SYSTEM, "out of memory building the fabric");
    return NULL;
}

void fabric_free(fabric *f)
{
    if (!f)
        return;
    sched_free(f->s);
    free(f->rl);
    free(f->rd);
    free(f->read_link);
    free(f->read_cap);
    free(f->hol_link);
    free(f->hol_out);
    free(f->cta_st);
    free(f->cta_ld);
    free(f->cta_sth);
    free(f->cta_ldh);
    free(f->ldh_trip);
    free(f->host_mix);
    free(f->cta_ceil);
    free(f->sock_link);
    free(f->is_uplink);
    free(f->is_nvlink);
    free(f->root_of);
    free(f->hostmem_of);
    free(f->host);
    for (int i = 0; f->groups && i < f->ngroups; i++)
        free(f->groups[i].ups);
    free(f->groups);
    free(f->lk);
    free(f->w);
    free(f->slot);
    free(f->qmap);
    free(f->glat);
    free(f->preds);
    free(f->glat_dst);
    free(f);
}

sched *fabric_sched(fabric *f) { return f->s; }
const topo *fabric_topo(const fabric *f) { return f->t; }
int fabric_root_of(const fabric *f, int node) { return f->root_of[node]; }
int fabric_hostmem_of(const fabric *f, int gpu_node) { return f->hostmem_of[gpu_node]; }

/* Every slot free again, in index order; buffers kept. */
static void groups_clear(fabric *f)
{
    for (int i = 0; i < f->ngroups; i++)
        f->groups[i].next_free = i + 1 < f->ngroups ? i + 1 : -1;
    f->free_group = f->ngroups > 0 ? 0 : -1;
    f->live_groups = 0;
}

void fabric_reset(fabric *f)
{
    sched_reset(f->s);
    groups_clear(f);
    f->quot = 0;
}

int fabric_live_groups(const fabric *f) { return f->live_groups; }

/* A slot for the group being built (empty), or -1 on OOM. */
static int group_take(fabric *f)
{
    int i = f->free_group;
    if (i >= 0) {
        f->free_group = f->groups[i].next_free;
    } else {
        if (f->ngroups == f->groups_cap) {
            int cap = f->groups_cap ? 2 * f->groups_cap : 64;
            group *g = realloc(f->groups, sizeof *g * (size_t)cap);
            if (!g)
                return -1;
            f->groups = g;
            f->groups_cap = cap;
        }
        i = f->ngroups++;
        f->groups[i] = (group){NULL, 0, 0, -1, -1, 0};
    }
    f->groups[i].n = 0;
    f->groups[i].next_free = -2;
    f->live_groups++;
    return i;
}

static void group_give(fabric *f, int i)
{
    ASSERTF(i >= 0 && i < f->ngroups && f->groups[i].next_free == -2,
            "group %d of %d given back twice (a fabric's graph runs once per reset)", i,
            f->ngroups);
    f->groups[i].next_free = f->free_group;
    f->free_group = i;
    f->live_groups--;
}

/* The engine's sched_on_flow_end: the flow of this tag has ended. */
static void group_ended(void *ctx, uint32_t tag)
{
    group_give(ctx, (int)tag - 1);
}

static int grow(fabric *f, int need, err *e)
{
    if (need <= f->scratch_cap)
        return 0;
    int cap = need * 2;
    int *lk = realloc(f->lk, sizeof(int) * (size_t)cap);
    if (lk)
        f->lk = lk;
    double *w = realloc(f->w, sizeof(double) * (size_t)cap);
    if (w)
        f->w = w;
    if (!lk || !w)
        return err_set(e, ERR_SYSTEM, "out of memory");
    f->scratch_cap = cap;
    return 0;
}

/* Add link id with weight wt to the scratch list, merging. Returns the count. */
static inline int add_link(fabric *f, int n, int id, double wt)
{
    if (f->quot)
        id = f->qmap[id];
    if (f->slot[id] < 0) {
        f->slot[id] = n;
        f->lk[n] = id;
        f->w[n++] = wt;
    } else {
        f->w[f->slot[id]] += wt;
    }
    return n;
}

/* Room in g for one more crossing: 0, or -1 on OOM. */
static int group_room(group *g)
{
    if (g->n < g->cap)
        return 0;
    int cap = g->cap ? 2 * g->cap : 4;
    upent *u = realloc(g->ups, sizeof *u * (size_t)cap);
    if (!u)
        return -1;
    g->ups = u;
    g->cap = cap;
    return 0;
}

/* On a quotient, the sender that owner_gpu's crossing of link id stands for
 * (its rank on the orbit's link, 0..qn-1). */
static int quot_owner(const fabric *f, int id, int owner_gpu)
{
    return ((owner_gpu - f->qoff[id] * f->qp) % f->qn + f->qn) % f->qn;
}

/* Grows a list of links and its list of directions (or kinds) together to
 * cap entries; a list that grew is kept even when the other fails. 0, or -1
 * on OOM. */
static int grow_links(int **links, int8_t **dirs, int cap)
{
    int *l = realloc(*links, sizeof(int) * (size_t)cap);
    if (l)
        *links = l;
    int8_t *d = realloc(*dirs, (size_t)cap);
    if (d)
        *dirs = d;
    return l && d ? 0 : -1;
}

void fabric_expect_many(fabric *f, int node)
{
    topo_route_expect_many(f->t, node);
    if (!f->preds)
        f->preds = calloc((size_t)topo_nnodes(f->t), sizeof *f->preds);
    if (f->preds) /* else (out of memory) its routes are the topology's copies */
        f->preds[node] = topo_route_preds(f->t, node);
}

static inline int link_other_end(const topo_link *l, int v) { return l->a == v ? l->b : l->a; }

/* The route a->b into *rl and *rd (grown as needed, *rcap their room), its
 * latency in *lat: walked back from b over a's tree where a is said to reach
 * many (fabric_expect_many: the topology's lock and lookups once per source,
 * not per route), else topo_route_copy's; the same route either way. The hop
 * count, -1 no route (*lat -1), -2 out of memory. */
static int route_copy(fabric *f, int a, int b, int **rl, int8_t **rd, int *rcap, int64_t *lat)
{
    const int *pw = f->preds && a != b ? f->preds[a] : NULL;
    int n = 0, v = b;
    if (!pw || pw[b] == TOPO_WALK_UNSET) { /* (there the topology fills it in) */
        while ((n = topo_route_copy(f->t, a, b, *rl, *rd, *rcap, lat)) > *rcap) {
            if (grow_links(rl, rd, n))
                return -2;
            *rcap = n;
        }
        return n;
    }
    /* One pass back from b: the hops kept from the end of a buffer of
     * WALK_HOPS, copied out once counted (a longer route walks again). */
    enum { WALK_HOPS = 64 };
    int wl[WALK_HOPS];
    int8_t wd[WALK_HOPS];
    const topo_link *L = f->L;
    int64_t sum = 0;
    while (v != a && pw[v] >= 0) {
        const topo_link *l = &L[pw[v]];
        if (++n <= WALK_HOPS) {
            wl[WALK_HOPS - n] = pw[v];
            wd[WALK_HOPS - n] = (int8_t)(l->b == v ? 0 : 1);
        }
        sum += l->lat_ps;
        v = link_other_end(l, v);
    }
    if (v != a) {
        *lat = -1;
        return -1;
    }
    if (n > *rcap) {
        if (grow_links(rl, rd, n))
            return -2;
        *rcap = n;
    }
    if (n <= 4) { /* a crossbar's routes: a call costs more than the copy */
        for (int i = 0; i < n; i++) {
            (*rl)[i] = wl[WALK_HOPS - n + i];
            (*rd)[i] = wd[WALK_HOPS - n + i];
        }
    } else if (n <= WALK_HOPS) {
        memcpy(*rl, wl + (WALK_HOPS - n), sizeof(int) * (size_t)n);
        memcpy(*rd, wd + (WALK_HOPS - n), (size_t)n);
    } else {
        v = b;
        for (int i = n - 1; i >= 0; i--) {
            const topo_link *l = &L[pw[v]];
            (*rl)[i] = pw[v];
            (*rd)[i] = (int8_t)(l->b == v ? 0 : 1);
            v = link_other_end(l, v);
        }
    }
    *lat = sum;
    return n;
}

/* Add the route a->b (one stream of op) to the scratch list: wt on every
 * link, times the TLP weight on PCIe links; the stream's uplink crossings
 * go to the group table. Returns the new count, or -1 on OOM. */
static int add_route(fabric *f, group *g, int n, int a, int b, fab_op op, double wt,
                     double tlp, int src_gpu, int dst_root, int owner_gpu, double *min_Bps,
                     int *first, int *nvl, int *pcie_any, int64_t *route_lat_ps)
{
    /* Copied, not kept: a source reaching every GPU (a one-shot) costs its
     * shortest-path tree, not a cached route per pair. */
    int64_t lat;
    int h = route_copy(f, a, b, &f->rl, &f->rd, &f->rcap, &lat);
    if (h < -1)
        return -1;
    *route_lat_ps = lat;
    *pcie_any = 0;
    int pay = req_bytes(f, op), mps = topo_params_get(f->t)->pcie_mps_bytes;
    double lu = tlp * (pay < mps ? pay : mps);  /* one TLP (a completion: split at MPS) */
    const int *links = f->rl;
    const int8_t *dirs = f->rd;
    *first = h > 0 ? 2 * links[0] + dirs[0] : -1;
    /* NVLink reads: each request of pay bytes crosses the other direction
     * as req bytes of wire, where a data packet carries pay and a header as
     * large (docs/model.md "Read requests on NVLink"). */
    double req = topo_params_get(f->t)->nvlink_req_bytes;
    /* DLLPs [dllp]: a PCIe receiver returns tlp_dllp_bytes of wire (an Ack,
     * an UpdateFC) on the link's other direction per TLP it takes, in link
     * units dllp x MPS / (MPS + o) (rates are stated for MPS writes): per
     * payload byte 1 / (one TLP's payload) of it against the data, and for a
     * read 1 / (its request size) along the data, for the requests going the
     * other way (docs/model.md "DLLPs on the reverse direction"). Not on an
     * uplink's direction, whose capacity the collapse rule sets when it
     * binds (TLPs at the root port, not wire bytes). */
    const topo_params *tp = topo_params_get(f->t);
    double dllp = f->off & FAB_NO_DLLP ? 0
                  : tp->tlp_dllp_bytes * (double)mps / (mps + tp->pcie_tlp_overhead_bytes);
    for (int i = 0; i < h; i++) {
        int id = 2 * links[i] + dirs[i];
        const topo_link *tl = &f->L[links[i]];
        int pcie = tl->kind == LINK_PCIE;
        *pcie_any |= pcie;
        /* link_cap's figure, from the link already at hand */
        double c = ((id & 1) && tl->bw_back_Bps > 0 ? tl->bw_back_Bps : tl->bw_Bps) /
                   (pcie ? tlp : 1);
        if (min_Bps && c < *min_Bps)
            *min_Bps = c;
        n = add_link(f, n, id, pcie ? wt * tlp : wt);
        if (pcie && dllp > 0 && pay > 0) {
            if (!f->is_uplink[id ^ 1])
                n = add_link(f, n, id ^ 1, wt * dllp / (pay < mps ? pay : mps));
            if (fab_is_read(op) && !f->is_uplink[id])
                n = add_link(f, n, id, wt * dllp / pay);
        }
        *nvl |= f->is_nvlink[id];
        int reqs = fab_is_read(op) && f->is_nvlink[id] && req > 0 && pay > 0 &&
                   !(f->off & FAB_NO_NVLINK_REQ);
        if (reqs)
            n = add_link(f, n, id ^ 1, wt * req / (pay + req));
        if (fab_is_read(op) && f->sock_link[id] >= 0 && !(f->off & FAB_NO_SOCKET_READ))
            n = add_link(f, n, f->sock_link[id], wt);
        /* On a quotient an NVLink crossing records the sender it stands for
         * (the requests' crossing too: the saturation rule sees the group on
         * both directions, as it does off a quotient). */
        int qnv = f->quot && f->is_nvlink[id];
        if (qnv && reqs) {
            if (group_room(g))
                return -1;
            int rid = id ^ 1;
            g->ups[g->n++] = (upent){f->qmap[rid], 2,
                                     quot_owner(f, rid, owner_gpu),
                                     -1, 0, 0};
        }
        if (f->is_uplink[id] || qnv) {
            if (group_room(g))
                return -1;
            /* In a quotient the rules run on the orbit's link; a collapse
             * rule's crossings lie on it (fabric_rotation_quotient). */
            if (qnv)
                g->ups[g->n++] = (upent){f->qmap[id], 2,
                                         quot_owner(f, id, owner_gpu),
                                         -1, 0, 0};
            else
                g->ups[g->n++] = (upent){f->quot ? f->qmap[id] : id, fab_is_read(op), src_gpu,
                                         dst_root, lu, 1.0 / (pay < mps ? pay : mps)};
        }
        /* A read's requests go the other way: where its data come down a
         * link whose other direction is an uplink, they go up that uplink. */
        if (fab_is_read(op) && !f->is_nvlink[id] && f->is_uplink[id ^ 1]) {
            if (group_room(g))
                return -1;
            g->ups[g->n++] = (upent){f->quot ? f->qmap[id ^ 1] : id ^ 1, 3,
                                     topo_node_at(f->t, b)->gpu, -1, 0, 1.0 / pay};
            /* On that uplink with a vanishing weight, so that its rule sees
             * the flow (the requests' own bytes are not charged). */
            n = add_link(f, n, id ^ 1, wt * 1e-9);
        }
    }
    return n;
}

int fabric_xfer(fabric *f, fab_op op, int src, int dst, double bytes, double wire,
                sim_ps extra_lat_ps, int track, const char *label, err *e)
{
    int initiator = fab_is_read(op) ? dst : src;
    return fabric_xfer_group(f, op, initiator, fab_is_read(op) ? &src : &dst, 1, bytes,
                             wire, extra_lat_ps, track, label, e);
}

/* One leg of a flow: a stream of op between a and b (a the data's source). */
typedef struct leg {
    fab_op op;
    int a, b;
} leg;

/* One engine flow over the legs' routes, advancing at one rate: the streams
 * of an interleaved group (initiator = the GPU issuing them), or the two
 * halves of a staged transfer. Latency: the largest leg's (group) or their
 * sum (staged). */
static int xfer_legs(fabric *f, const leg *legs, int n, int staged, double block,
                     double blocks, double load_inflight_B, const double *leg_bw, int ceil_gpu,
                     double ceil_w, double bytes_each, double wire, double cap_Bps,
                     sim_ps extra_lat_ps, int track, const char *label, err *e)
{
    if (n < 1 || wire < 1)
        return err_set(e, ERR_SYSTEM, "fabric: bad group (n=%d wire=%g)", n, wire), -1;
    /* Links are merged by slot: at most every engine link once. */
    if (grow(f, sched_nlinks(f->s), e))
        return -1;
    int gi = group_take(f);
    if (gi < 0)
        return err_set(e, ERR_SYSTEM, "out of memory"), -1;
    int nl = 0, nreads = 0, reader = -1, nvl = 0;
    int owner_gpu = topo_node_at(f->t, fab_is_read(legs[0].op) ? legs[0].b : legs[0].a)->gpu;
    sim_ps lat = 0;
    double cap = 0, req_per = 1, tlp = 1;
    for (int i = 0; i < n; i++) {
        fab_op op = legs[i].op;
        int rd = fab_is_read(op), a = legs[i].a, b = legs[i].b;
        /* one op's weight for all its legs (an exchange's 63 are one op) */
        if (i == 0 || op != legs[i - 1].op)
            tlp = f->off & FAB_NO_REQ_SIZE ? 1 : fabric_tlp_weight(f, op);
        int src_gpu = f->N[a].gpu;
        double min_Bps = INFINITY;
        int first, pcie;
        int64_t one;
        nl = add_route(f, &f->groups[gi], nl, a, b, op, wire, tlp, src_gpu, f->root_of[b],
                       owner_gpu, &min_Bps, &first, &nvl, &pcie, &one);
        if (nl < 0) {
            group_give(f, gi);
            return err_set(e, ERR_SYSTEM, "out of memory"), -1;
        }
        /* Head of line: each byte of a stream that leaves through the GPU's
         * own PCIe port holds the port's ingress queue for 1/min_Bps (its
         * route's payload rate); on a link of capacity C: weight C/min_Bps. */
        if (!rd && first >= 0 && first == f->hol_out[a] && isfinite(min_Bps) && min_Bps > 0) {
            /* Each sender's own queue: a bundle's legs may start at several GPUs. */
            if (!(f->off & FAB_NO_HOL))
                nl = add_link(f, nl, f->hol_link[a], wire * link_cap(f->t, first) / min_Bps);
        }
        sim_ps l = lat_of(f, op, one);
        lat = staged ? lat + l : (l > lat ? l : lat);
        if (rd) {
            /* Streams interleaved by one reader share its tags: the group's
             * per-stream rate is bounded by the slowest stream's own cap. */
            nreads++;
            reader = b;
            req_per = (double)topo_params_get(f->t)->pcie_mrrs_bytes / req_bytes(f, op);
            /* A copy engine holding fewer tags than its GPU: each of its
             * requests weighs the GPU's tags over the engine's. */
            if (op == FAB_CE_READ)
                req_per *= (double)topo_read_tags(f->t, b) / topo_ce_read_tags(f->t, b);
            double c = read_cap(f, op, b, pcie, l);
            if (c > 0 && (cap == 0 || c < cap))
                cap = c;
        }
    }
    if (nreads > 1)
        cap /= nreads;
    if (reader >= 0 && f->read_link[reader] >= 0 && cap > 0) {
        read_init(f, reader);
        /* The budget is in MRRS-sized requests: a smaller request uses a
         * whole tag for fewer bytes. */
        nl = add_link(f, nl, f->read_link[reader], (double)nreads * req_per);
    }
    if (cap_Bps > 0 && (cap == 0 || cap_Bps < cap))
        cap = cap_Bps;
    /* One thread block issues the flow (an NCCL channel): the writer's stores
     * and the reader's loads share that block's budget with its other flows
     * (the steps of pipelined loops). */
    for (int i = 0; (block > 0 || leg_bw) && i < n; i++) {
        if (legs[i].op != FAB_WRITE && legs[i].op != FAB_READ)
            continue;   /* a copy engine's leg: no thread block */
        int rd = fab_is_read(legs[i].op), far = rd ? legs[i].a : legs[i].b;
        int host = is_host(f, far);
        int w = rd ? (host ? f->cta_ldh : f->cta_ld)[legs[i].b]
                   : (host ? f->cta_sth : f->cta_st)[legs[i].a];
        if (rd && host && f->ldh_trip[legs[i].b] != 0 &&
            ((f->off & FAB_NO_LOAD_TRIP) || !(ldh_trip_rate(f, legs[i].b) > 0)))
            w = -1;
        /* Against host memory a block's loads move its bytes in flight per
         * round trip: more in flight, a lighter weight on the reference budget. */
        double wb = leg_bw ? leg_bw[i]
                  : rd && host ? block / fabric_host_load_scale(f, load_inflight_B, 0) : block;
        if (w >= 0 && wb > 0)
            nl = add_link(f, nl, w, wb);
    }
    if (ceil_gpu >= 0 && ceil_w > 0 && f->cta_ceil[ceil_gpu] >= 0)
        nl = add_link(f, nl, f->cta_ceil[ceil_gpu], ceil_w);
    /* SM traffic to and from host memory: the issuing GPU's mixed budget. */
    for (int i = 0; i < n; i++) {
        if (legs[i].op != FAB_WRITE && legs[i].op != FAB_READ)
            continue;
        int rd = fab_is_read(legs[i].op), gpu = rd ? legs[i].b : legs[i].a;
        int far = rd ? legs[i].a : legs[i].b;
        if (is_host(f, far) && f->host_mix[gpu] >= 0 && !(f->off & FAB_NO_HOST_MIXED))
            nl = add_link(f, nl, f->host_mix[gpu], wire);
    }
    for (int i = 0; i < nl; i++)  /* clear the slots for the next group */
        f->slot[f->lk[i]] = -1;
    /* A group that crosses no uplink and no NVLink needs no slot (tag 0). */
    uint32_t tag = 0;
    if (f->groups[gi].n > 0 || nvl) {
        f->groups[gi].owner = fab_is_read(legs[0].op) ? legs[0].b : legs[0].a;
        f->groups[gi].blocks = blocks;
        tag = (uint32_t)gi + 1;
    } else {
        group_give(f, gi);
    }
    int id = sched_flow_w(f->s, f->lk, f->w, nl, bytes_each, cap, lat + extra_lat_ps, tag,
                          track, label);
    if (id < 0) {
        if (tag)
            group_give(f, gi);
        err_set(e, ERR_SYSTEM, "out of memory adding a transfer");
    }
    return id;
}

int fabric_xfer_group(fabric *f, fab_op op, int initiator, const int *peers, int n,
                      double bytes_each, double wire, sim_ps extra_lat_ps, int track,
                      const char *label, err *e)
{
    return fabric_xfer_group_cap(f, op, initiator, peers, n, bytes_each, wire, 0, extra_lat_ps,
                                 track, label, e);
}

double fabric_cta_cap_Bps(const fabric *f, fab_op op, int blocks)
{
    const topo_params *p = topo_params_get(f->t);
    double per = op == FAB_WRITE ? p->cta_store_Bps : op == FAB_READ ? p->cta_load_Bps : 0;
    return blocks > 0 && per > 0 ? blocks * per : 0;
}

/* A load from the GPU's own memory costs its latency like a peer's: the
 * copy kernel storing into a peer (or into host memory) waits for its local
 * load every iteration, its stores being posted, so cta_store is the
 * per-block rate of local loads (docs/model.md "Serial loads"). */
double fabric_cta_serial_Bps(const fabric *f, int blocks, int local, int remote)
{
    const topo_params *p = topo_params_get(f->t);
    if (f->off & FAB_NO_SERIAL_LOADS)
        local = 0;
    double t = 0;
    if (local > 0 && p->cta_store_Bps > 0)
        t += local / p->cta_store_Bps;
    if (remote > 0 && p->cta_load_Bps > 0)
        t += remote / p->cta_load_Bps;
    return blocks > 0 && t > 0 ? blocks / t : 0;
}

double fabric_host_load_scale(const fabric *f, double inflight_B, double threads)
{
    if (inflight_B <= 0 || (f->off & FAB_NO_HOST_INFLIGHT))
        return 1;
    const topo_params *p = topo_params_get(f->t);
    double scale = inflight_B / FABRIC_CTA_REF_INFLIGHT_B;
    double h = p->cta_load_host_Bps > 0 ? p->cta_load_host_Bps : p->cta_load_Bps;
    if ((f->off & FAB_NO_TRIP_ISSUE) || h <= 0 || (p->trip_load_ps <= 0 && p->trip_Bps <= 0))
        return scale;
    double ref = FABRIC_CTA_REF_INFLIGHT_B / h;
    double loads = inflight_B / ((threads > 0 ? threads : FABRIC_CTA_REF_THREADS) * 16.0);
    double grow = (double)p->trip_load_ps * 1e-12 * (loads > 1 ? loads - 1 : 0) +
                  (p->trip_Bps > 0 ? (inflight_B - FABRIC_CTA_REF_INFLIGHT_B) / p->trip_Bps : 0);
    return ref + grow > 0.1 * ref ? scale * ref / (ref + grow) : scale * 10;
}

double fabric_cta_cap_to_Bps(const fabric *f, fab_op op, int blocks, int peer, int gpu,
                             double inflight_B, double threads)
{
    const topo_params *p = topo_params_get(f->t);
    if (peer >= 0 && is_host(f, peer)) {
        double h = op == FAB_WRITE ? p->cta_store_host_Bps
                 : op == FAB_READ  ? p->cta_load_host_Bps : 0;
        if (h == 0)
            h = op == FAB_WRITE ? p->cta_store_Bps : op == FAB_READ ? p->cta_load_Bps : 0;
        /* Unmeasured: the reference block's bytes per round trip over
         * this route (ldh_trip's rule, the route's own trip). */
        if (h == 0 && op == FAB_READ && gpu >= 0 && f->ldh_trip[gpu] != 0 &&
            !(f->off & FAB_NO_LOAD_TRIP)) {
            sim_ps rtt = lat_of(f, FAB_READ, topo_route_lat_ps(f->t, peer, gpu));
            h = rtt > 0 ? FABRIC_CTA_REF_INFLIGHT_B / ((double)rtt * 1e-12) : 0;
        }
        if (op == FAB_READ)
            h *= fabric_host_load_scale(f, inflight_B, threads);
        return blocks > 0 && h > 0 ? blocks * h : 0;
    }
    return fabric_cta_cap_Bps(f, op, blocks);
}

int fabric_xfer_group_cap(fabric *f, fab_op op, int initiator, const int *peers, int n,
                          double bytes_each, double wire, double cap_Bps, sim_ps extra_lat_ps,
                          int track, const char *label, err *e)
{
    return fabric_xfer_group_blocks(f, op, initiator, peers, n, bytes_each, wire, cap_Bps, 0,
                                    extra_lat_ps, track, label, e);
}

int fabric_xfer_group_blocks(fabric *f, fab_op op, int initiator, const int *peers, int n,
                             double bytes_each, double wire, double cap_Bps, int blocks,
                             sim_ps extra_lat_ps, int track, const char *label, err *e)
{
    if (n < 1)
        return err_set(e, ERR_SYSTEM, "fabric: bad group (n=%d wire=%g)", n, wire), -1;
    leg one[16], *legs = n <= 16 ? one : malloc(sizeof *legs * (size_t)n);
    if (!legs)
        return err_set(e, ERR_SYSTEM, "out of memory"), -1;
    for (int i = 0; i < n; i++)
        legs[i] = fab_is_read(op) ? (leg){op, peers[i], initiator} : (leg){op, initiator, peers[i]};
    int id = xfer_legs(f, legs, n, 0, 0, blocks, 0, NULL, -1, 0, bytes_each, wire, cap_Bps,
                       extra_lat_ps, track, label, e);
    if (legs != one)
        free(legs);
    return id;
}

int fabric_xfer_channel(fabric *f, int src, int stage, int dst, double bytes, double wire,
                        double block_wire, sim_ps extra_lat_ps, int track, const char *label,
                        err *e)
{
    leg legs[2] = {{FAB_WRITE, src, stage >= 0 ? stage : dst}, {FAB_READ, stage, dst}};
    /* wire / block_wire: the channels this flow carries, each one block. */
    double blocks = block_wire > 0 ? wire / block_wire : 0;
    return xfer_legs(f, legs, stage >= 0 ? 2 : 1, stage >= 0, block_wire, blocks, 0, NULL, -1, 0,
                     bytes, wire, 0, extra_lat_ps, track, label, e);
}

int fabric_xfer_staged(fabric *f, fab_op up, int src, int stage, fab_op down, int dst,
                       double bytes, double wire, double block_wire, double load_inflight_B,
                       sim_ps extra_lat_ps, int track, const char *label, err *e)
{
    return fabric_xfer_staged_cap(f, up, src, stage, down, dst, bytes, wire, block_wire,
                                  load_inflight_B, 0, extra_lat_ps, track, label, e);
}

int fabric_xfer_staged_cap(fabric *f, fab_op up, int src, int stage, fab_op down, int dst,
                           double bytes, double wire, double block_wire, double load_inflight_B,
                           double cap_Bps, sim_ps extra_lat_ps, int track, const char *label,
                           err *e)
{
    if (fab_is_read(up) || !fab_is_read(down))
        return err_set(e, ERR_SYSTEM, "fabric: a staged transfer is a write then a read"), -1;
    leg legs[2] = {{up, src, stage}, {down, stage, dst}};
    double blocks = block_wire > 0 ? wire / block_wire : 0;
    return xfer_legs(f, legs, 2, 1, block_wire, blocks, load_inflight_B, NULL, -1, 0, bytes,
                     wire, cap_Bps, extra_lat_ps, track, label, e);
}

int fabric_xfer_bundle(fabric *f, const int *src, const int *dst, int n, double bytes,
                       double wire, double block_wire, sim_ps extra_lat_ps, int track,
                       const char *label, err *e)
{
    leg *legs = malloc(sizeof *legs * (size_t)(n > 0 ? n : 1));
    if (!legs)
        return err_set(e, ERR_SYSTEM, "out of memory"), -1;
    for (int i = 0; i < n; i++)
        legs[i] = (leg){FAB_WRITE, src[i], dst[i]};
    int id = xfer_legs(f, legs, n, 0, block_wire, block_wire > 0 ? wire / block_wire : 0, 0,
                       NULL, -1, 0, bytes, wire, 0, extra_lat_ps, track, label, e);
    free(legs);
    return id;
}

/* A read's time at its route's narrowest link alone (no other flow):
 * bytes x wire x TLP weight over that link's rate. */
static double route_time_s(const fabric *f, fab_op op, int a, int b, double bytes, double wire)
{
    const int *l;
    const int8_t *d;
    double least = INFINITY;
    for (int i = 0, h = topo_route(f->t, a, b, &l, &d); i < h; i++) {
        double c = link_cap(f->t, 2 * l[i] + d[i]);
        least = c > 0 && c < least ? c : least;
    }
    double tlp = f->off & FAB_NO_REQ_SIZE ? 1 : fabric_tlp_weight(f, op);
    return isfinite(least) ? bytes * wire * tlp / least : 0;
}

double fabric_route_Bps(const fabric *f, fab_op op, int a, int b)
{
    double t = route_time_s(f, op, a, b, 1, 1);
    return t > 0 ? 1 / t : 0;
}

int fabric_xfer_block(fabric *f, const fabric_leg *legs, int n, const fabric_block *blk,
                      double bytes, double wire, sim_ps extra_lat_ps, int track, const char *label,
                      err *e)
{
    if (n < 1 || n > 2)
        return err_set(e, ERR_SYSTEM, "fabric: a block's step has 1 or 2 legs (%d)", n), -1;
    const topo_params *p = topo_params_get(f->t);
    double per = blk->blocks > 0 ? wire / blk->blocks : wire;
    int ceil = blk->gpu >= 0 && f->cta_ceil[blk->gpu] >= 0 && !(f->off & FAB_NO_BLOCK_CEIL);
    double ref = blk->inflight_B > 0 ? FABRIC_CTA_REF_INFLIGHT_B / blk->inflight_B : 1;
    double rounds = blk->rounds > 0 ? blk->rounds : 1;
    leg l[2];
    double bw[2], cw = ceil ? blk->local_B : 0;
    for (int i = 0; i < n; i++) {
        l[i] = (leg){legs[i].op, legs[i].a, legs[i].b};
        int rd = fab_is_read(legs[i].op), host = is_host(f, rd ? legs[i].a : legs[i].b);
        /* The block's loads move its bytes in flight per round trip: from
         * host memory under host-inflight, elsewhere under a ceiling
         * (block-ceiling); else the reference block's weight. Against host
         * memory the leg's latency L is a round trip the rate holds too:
         * the block's bytes at its rate take t = bytes x weight / budget,
         * the link alone t_l, and the step max(t, L + t_l), not L + t (its
         * latency shrinks by min(L, max(0, t - t_l))). */
        if (rd && host && (f->off & FAB_NO_HOST_INFLIGHT)) {
            bw[i] = per;
        } else if (rd && host) {
            bw[i] = per / fabric_host_load_scale(f, blk->inflight_B, blk->threads) *
                    (ceil ? rounds : 1);
            double cap = p->cta_load_host_Bps > 0 ? p->cta_load_host_Bps
                       : p->cta_load_Bps > 0      ? p->cta_load_Bps
                       : f->off & FAB_NO_LOAD_TRIP ? 0
                                                  : ldh_trip_rate(f, legs[i].b);
            double lat = (double)fabric_lat_ps(f, FAB_READ, legs[i].a, legs[i].b);
            double t = cap > 0 ? bytes * bw[i] / cap * 1e12 : 0;
            /* The rate holds the trip only where the block's rounds bind:
             * the step takes max(its rounds' trips, L + the bytes at the
             * route's narrowest link), so L shrinks by what the rounds take
             * beyond the link's time (docs/model.md "A block's loads from
             * host memory"). */
            double tl = route_time_s(f, FAB_READ, legs[i].a, legs[i].b, bytes, wire) * 1e12;
            t = t > tl ? t - tl : 0;
            extra_lat_ps -= (sim_ps)(t < lat ? t : lat);
        } else
            bw[i] = per * (ceil ? ref * rounds : 1);
        /* Its stores leave the GPU: each byte weighs ceiling / far ceiling. */
        if (ceil && !rd && legs[i].op == FAB_WRITE)
            cw += per * p->cta_ceil_Bps / p->cta_ceil_far_Bps;
        if (legs[i].op != FAB_WRITE && legs[i].op != FAB_READ)
            bw[i] = 0;
    }
    return xfer_legs(f, l, n, 1, 0, blk->blocks, 0, bw, blk->gpu, cw, bytes, wire, 0, extra_lat_ps,
                     track, label, e);
}

/* The block budget link a leg of op a -> b crosses (as xfer_legs), or -1. */
static int leg_block(const fabric *f, fab_op op, int a, int b)
{
    if (op == FAB_WRITE)
        return (is_host(f, b) ? f->cta_sth : f->cta_st)[a];
    return (is_host(f, a) ? f->cta_ldh : f->cta_ld)[b];
}

int fabric_leg_alike(const fabric *f, fab_op op, int a0, int b0, int a1, int b1)
{
    const int *l0, *l1;
    const int8_t *d0, *d1;
    if (op != FAB_WRITE && op != FAB_READ)
        return 0;
    int h = topo_route(f->t, a0, b0, &l0, &d0), rd = op == FAB_READ;
    if (h <= 0 || topo_route(f->t, a1, b1, &l1, &d1) != h)
        return 0;
    if (fabric_lat_ps(f, op, a0, b0) != fabric_lat_ps(f, op, a1, b1) ||
        is_host(f, a0) != is_host(f, a1) || is_host(f, b0) != is_host(f, b1) ||
        (leg_block(f, op, a0, b0) < 0) != (leg_block(f, op, a1, b1) < 0))
        return 0;
    if (!rd && (f->hol_link[a0] < 0) != (f->hol_link[a1] < 0))
        return 0;
    /* A read: the same bound of its own and the same budget of its reader. */
    if (rd && (fabric_read_cap_Bps(f, op, b0, a0) != fabric_read_cap_Bps(f, op, b1, a1) ||
               (f->read_link[b0] < 0) != (f->read_link[b1] < 0) ||
               (f->read_link[b0] >= 0 && read_budget(f, b0) != read_budget(f, b1))))
        return 0;
    for (int i = 0; i < h; i++) {
        int x = 2 * l0[i] + d0[i], y = 2 * l1[i] + d1[i];
        const topo_link *kx = topo_link_at(f->t, l0[i]), *ky = topo_link_at(f->t, l1[i]);
        if (kx->kind != ky->kind || kx->lat_ps != ky->lat_ps || link_cap(f->t, x) != link_cap(f->t, y) ||
            f->is_uplink[x] != f->is_uplink[y] || f->is_nvlink[x] != f->is_nvlink[y] ||
            (rd && (f->sock_link[x] < 0) != (f->sock_link[y] < 0)) ||
            (!rd && i == 0 && (x == f->hol_out[a0]) != (y == f->hol_out[a1])))
            return 0;
    }
    return 1;
}

int fabric_block_pass(fabric *f, const int *gpu, int n, double bytes, double block_wire,
                      double local_B, sim_ps extra_lat_ps, int track, const char *label, err *e)
{
    if (grow(f, 2 * n + 1, e))
        return -1;
    int nl = 0;
    for (int i = 0; i < n; i++) {
        if (f->cta_st[gpu[i]] >= 0)
            nl = add_link(f, nl, f->cta_st[gpu[i]], block_wire);
        if (local_B > 0 && f->cta_ceil[gpu[i]] >= 0 && !(f->off & FAB_NO_BLOCK_CEIL))
            nl = add_link(f, nl, f->cta_ceil[gpu[i]], local_B);
    }
    for (int i = 0; i < nl; i++)
        f->slot[f->lk[i]] = -1;
    int id = sched_flow_w(f->s, f->lk, f->w, nl, nl ? bytes : 0, 0, extra_lat_ps, 0, track,
                          label);
    if (id < 0)
        err_set(e, ERR_SYSTEM, "out of memory adding a transfer");
    return id;
}

/* --- rotation quotients (docs/model.md "Bundled steps") ----------------- */

/* What a crossing is, so that hops r and r + p are compared slot by slot;
 * XK_LEG opens each leg (x: its index in the hop's legs, not a link). */
enum { XK_LEG, XK_ROUTE, XK_SOCK, XK_HOL, XK_TAGS, XK_BLOCK, XK_MIX, XK_PASS };

/* One hop's legs and the links they may cross, in a fixed order. */
typedef struct qhop {
    fab_op *op;
    int *a, *b, nlegs, lcap;
    int64_t *lat;      /* per leg: its route's one-way latency */
    int *x, m, xcap;   /* crossings: engine link (XK_LEG: the leg) */
    int8_t *k;
} qhop;

static void qhop_free(qhop *h)
{
    free(h->op);
    free(h->a);
    free(h->b);
    free(h->lat);
    free(h->x);
    free(h->k);
    memset(h, 0, sizeof *h);
}

static int qgrow(qhop *h)
{
    int cap = h->xcap ? 2 * h->xcap : 64;
    if (grow_links(&h->x, &h->k, cap))
        return -1;
    h->xcap = cap;
    return 0;
}

static inline int qput(qhop *h, int x, int k)
{
    if (h->m == h->xcap && qgrow(h))
        return -1;
    h->x[h->m] = x;
    h->k[h->m++] = (int8_t)k;
    return 0;
}

/* Hop r's legs (from fn) and crossings: per SM leg of op a -> b its route
 * (a read: each socket link's peer-read budget after it), the sender's posted
 * queue (a write leaving through its own port), the reader's tag budget, the
 * issuing block's budget and the GPU's budget for SM traffic with host
 * memory, a superset of what xfer_legs adds; then the pass's block. Routes
 * are copied, not kept (a one-shot's hop reaches every GPU). 1, 0 if a leg is
 * no SM leg or has no route, -1 out of memory. */
static int qhop_fill(fabric *f, fabric_hop_fn *fn, void *ctx, int r, qhop *h, int **rl,
                     int8_t **rd, int *rcap)
{
    int pass = -1, k;
    while ((k = fn(ctx, r, h->op, h->a, h->b, h->lcap, &pass)) > h->lcap) {
        int cap = k;
        fab_op *op = realloc(h->op, sizeof *op * (size_t)cap);
        if (op)
            h->op = op;
        int *a = realloc(h->a, sizeof(int) * (size_t)cap);
        if (a)
            h->a = a;
        int *b = realloc(h->b, sizeof(int) * (size_t)cap);
        if (b)
            h->b = b;
        int64_t *lat = realloc(h->lat, sizeof(int64_t) * (size_t)cap);
        if (lat)
            h->lat = lat;
        if (!op || !a || !b || !lat)
            return -1;
        h->lcap = cap;
    }
    h->nlegs = k > 0 ? k : 0;
    h->m = 0;
    if (k < 1)
        return 0;
    for (int g = 0; g < k; g++) {
        fab_op op = h->op[g];
        int a = h->a[g], b = h->b[g], rdg = op == FAB_READ, hops;
        if (op != FAB_WRITE && op != FAB_READ)
            return 0;
        hops = route_copy(f, a, b, rl, rd, rcap, &h->lat[g]);
        if (hops < -1)
            return -1;
        if (hops <= 0)
            return 0;
        if (qput(h, g, XK_LEG))
            return -1;
        for (int i = 0; i < hops; i++) {
            int id = 2 * (*rl)[i] + (*rd)[i];
            if (qput(h, id, XK_ROUTE) || (rdg && f->sock_link[id] >= 0 && qput(h, f->sock_link[id], XK_SOCK)))
                return -1;
        }
        int first = 2 * (*rl)[0] + (*rd)[0], w = leg_block(f, op, a, b), gpu = rdg ? b : a;
        if ((!rdg && f->hol_link[a] >= 0 && first == f->hol_out[a] && qput(h, f->hol_link[a], XK_HOL)) ||
            (rdg && f->read_link[b] >= 0 && qput(h, f->read_link[b], XK_TAGS)) ||
            (w >= 0 && qput(h, w, XK_BLOCK)) ||
            (is_host(f, rdg ? a : b) && f->host_mix[gpu] >= 0 && qput(h, f->host_mix[gpu], XK_MIX)))
            return -1;
    }
    if (pass >= 0 && f->cta_st[pass] >= 0 && qput(h, f->cta_st[pass], XK_PASS))
        return -1;
    return 1;
}

/* Does a capacity rule act on engine link l with the parameters and
 * switches now set? 1: an uplink's collapse, 2: an NVLink's saturation. */
static int link_ruled(const fabric *f, int l)
{
    if (l >= 2 * f->nlinks_topo)
        return 0;
    const topo_params *p = topo_params_get(f->t);
    int cw = !(f->off & FAB_NO_COLLAPSE_WRITE) && (p->arb_collapse_Bps > 0 || p->tlp_turn_ps > 0);
    int cr = !(f->off & FAB_NO_COLLAPSE_READ) &&
             (p->arb_collapse_read_Bps > 0 || p->tlp_turn_cpl_ps > 0);
    if (f->is_uplink[l] && (cw || cr))
        return 1;
    return f->is_nvlink[l] && p->nvlink_half_blocks > 0 && !(f->off & FAB_NO_NVLINK_SAT) ? 2 : 0;
}

/* Hop h1 meets the fabric h0 meets, slot by slot: the same legs (op, ends
 * in host memory or not, latency, the reader's read budget), the same kinds
 * of crossing, each route link of the same kind, capacity, latency and
 * rules (fabric_leg_alike's conditions, on the copied routes). budget[]
 * caches read_budget per node (NAN: not yet); alike[x] == y says route
 * links x and y were found alike already (their figures are the links'
 * own, whichever hops cross them), so they are not compared again. */
static int qhop_alike(const fabric *f, const qhop *h0, const qhop *h1, double *budget,
                      int *alike)
{
    if (h0->nlegs != h1->nlegs || h0->m != h1->m)
        return 0;
    for (int g = 0; g < h0->nlegs; g++) {
        int a0 = h0->a[g], b0 = h0->b[g], a1 = h1->a[g], b1 = h1->b[g];
        if (h0->op[g] != h1->op[g] || h0->lat[g] != h1->lat[g] ||
            is_host(f, a0) != is_host(f, a1) || is_host(f, b0) != is_host(f, b1))
            return 0;
        if (h0->op[g] == FAB_READ && topo_read_tags(f->t, b0) != topo_read_tags(f->t, b1))
            return 0;
        if (h0->op[g] == FAB_READ && f->read_link[b0] >= 0) {
            if (isnan(budget[b0]))
                budget[b0] = read_budget(f, b0);
            if (isnan(budget[b1]))
                budget[b1] = read_budget(f, b1);
            if (budget[b0] != budget[b1])
                return 0;
        }
    }
    for (int j = 0; j < h0->m; j++) {
        int x = h0->x[j], y = h1->x[j];
        if (h0->k[j] != h1->k[j])
            return 0;
        if (h0->k[j] != XK_ROUTE)
            continue;
        if (alike[x] == y) /* found alike already */
            continue;
        const topo_link *kx = &f->L[x / 2], *ky = &f->L[y / 2];
        if (kx->kind != ky->kind || kx->lat_ps != ky->lat_ps || link_cap(f->t, x) != link_cap(f->t, y) ||
            f->is_uplink[x] != f->is_uplink[y] || f->is_nvlink[x] != f->is_nvlink[y])
            return 0;
        alike[x] = y;
    }
    return 1;
}

typedef struct hop_arr {
    const fabric_hop *h;
} hop_arr;

static int hop_arr_fn(void *ctx, int r, fab_op *op, int *a, int *b, int cap, int *pass_gpu)
{
    const fabric_hop *h = &((const hop_arr *)ctx)->h[r];
    if (h->nlegs > cap)
        return h->nlegs;
    for (int g = 0; g < h->nlegs; g++) {
        op[g] = h->op[g];
        a[g] = h->a[g];
        b[g] = h->b[g];
    }
    *pass_gpu = h->pass_gpu;
    return h->nlegs;
}

int fabric_rotation_quotient(fabric *f, const fabric_hop *hops, int n, int p)
{
    hop_arr ha = {hops};
    return fabric_rotation_quotient_fn(f, hop_arr_fn, &ha, n, p) > 0;
}

int fabric_rotation_quotient_fn(fabric *f, fabric_hop_fn *fn, void *ctx, int n, int p)
{
    if (p < 1 || n < 2 || n % p || p >= n)
        return 0;
    int nl = sched_nlinks(f->s), nn = topo_nnodes(f->t), cycle = n / p, ok = 1, seen = 0;
    /* reps[0..p-1]: hops 0..p-1; win[r % p]: hop r + p, computed at step r. */
    qhop *reps = calloc(2 * (size_t)p, sizeof *reps), *win = reps ? reps + p : NULL;
    int *img = malloc(sizeof(int) * (size_t)nl * 6), *rl = NULL, rcap = 0;
    int8_t *rd = NULL;
    double *budget = malloc(sizeof(double) * (size_t)(nn > 0 ? nn : 1));
    int *pre = img ? img + nl : NULL, *rep = img ? img + 2 * nl : NULL;
    int *cnt = img ? img + 3 * nl : NULL, *off = img ? img + 4 * nl : NULL;
    int *alike = img ? img + 5 * nl : NULL;
    ok = reps && img && budget;
    for (int i = 0; ok && i < 6 * nl; i++)
        img[i] = i < 3 * nl || i >= 5 * nl ? -1 : 0;
    for (int v = 0; ok && v < nn; v++)
        budget[v] = NAN;
    /* A few hops spread over the ring first, before the representatives:
     * routes that do not turn with the rotation (ties broken by node order)
     * show there at once, where the pass below would meet them only
     * half-way, and so at half its cost; and a refusal there costs no
     * representative's fill (a tree one-shot's p = 4: 6 fills, not 10).
     * They are kept (early[], hop index in early_r[]) for the pass below,
     * which takes each instead of filling it again: a fill depends on the
     * hop index alone, so the pass compares the same crossings. (Where a
     * representative could not be filled, every longer period fails on it
     * too, so a refusal here that says -1 instead of 0 misleads no caller.) */
    qhop early[14] = {{0}}, spare = {0};
    int early_r[14], nearly = 0;
    for (int k = 1; ok && n >= 16 && k < 8; k++) {
        int r = k * (n / 8);
        qhop *h0 = &early[nearly], *h1 = &early[nearly + 1];
        early_r[nearly] = r;
        early_r[nearly + 1] = (r + p) % n;
        nearly += 2;
        ok = qhop_fill(f, fn, ctx, r, h0, &rl, &rd, &rcap) > 0 &&
             qhop_fill(f, fn, ctx, (r + p) % n, h1, &rl, &rd, &rcap) > 0 &&
             qhop_alike(f, h0, h1, budget, alike);
        for (int j = 0; ok && j < h0->m; j++) {
            if (h0->k[j] == XK_LEG)
                continue;
            int x = h0->x[j], y = h1->x[j];
            ok = (img[x] < 0 || img[x] == y) && (pre[y] < 0 || pre[y] == x);
            img[x] = y;
            pre[y] = x;
            seen = ok ? 0 : n; /* alike hops whose links do not turn together */
        }
    }
    for (int r = 0; ok && r < p; r++)
        ok = qhop_fill(f, fn, ctx, r, &reps[r], &rl, &rd, &rcap) > 0;
    for (int i = 0; ok && i < 2 * nl; i++)
        img[i] = -1;
    /* The rotation on links: the link of crossing j of hop r goes to that of
     * crossing j of hop r + p; a permutation of the crossed links. */
    for (int r = 0; ok && r < n; r++) {
        /* hop r: a representative, or computed at step r - p into win[r % p],
         * which hop r + p (if any) takes over now */
        qhop cur = {0};
        const qhop *h0 = &reps[r < p ? r : 0], *h1;
        if (r >= p) {
            cur = win[r % p];
            memset(&win[r % p], 0, sizeof win[r % p]);
            h0 = &cur;
        }
        if (r + p < n) {
            h1 = &win[r % p];
            int e = 0;
            while (e < nearly && (early_r[e] != r + p || !early[e].nlegs))
                e++;
            if (e < nearly) { /* filled by the spread hops above */
                win[r % p] = early[e];
                memset(&early[e], 0, sizeof early[e]);
            } else {
                win[r % p] = spare; /* the last hop's buffers, refilled */
                memset(&spare, 0, sizeof spare);
                ok = qhop_fill(f, fn, ctx, r + p, &win[r % p], &rl, &rd, &rcap) > 0;
            }
        } else {
            h1 = &reps[r + p - n];
        }
        ok = ok && qhop_alike(f, h0, h1, budget, alike);
        seen = r;
        for (int j = 0; ok && j < h0->m; j++) {
            if (h0->k[j] == XK_LEG)
                continue;
            int x = h0->x[j], y = h1->x[j];
            ok = (img[x] < 0 || img[x] == y) && (pre[y] < 0 || pre[y] == x);
            img[x] = y;
            pre[y] = x;
        }
        qhop_free(&spare);
        spare = cur;
    }
    qhop_free(&spare);
    for (int e = 0; e < nearly; e++)
        qhop_free(&early[e]);
    /* Each orbit of n / p links, named by its first link crossed by hops
     * 0..p-1, off[] the step of each link from it. A collapse rule's link
     * carries crossings of those hops only on the orbit's named link (they
     * see the pattern of the full run's streams there); an NVLink's counts
     * the senders of a crossing at step j as the sender j rotations back. */
    for (int r = 0; ok && r < p; r++)
        for (int j = 0; ok && j < reps[r].m; j++) {
            if (reps[r].k[j] == XK_LEG)
                continue;
            int x = reps[r].x[j];
            if (rep[x] < 0) {
                int y = x, len = 0;
                do {
                    rep[y] = x;
                    off[y] = len++;
                    y = img[y];
                } while (y >= 0 && y != x && len <= cycle);
                ok = y == x && len == cycle;
            }
            cnt[rep[x]]++;
            ok = ok && (link_ruled(f, x) != 1 || off[x] == 0);
        }
    if (ok && !f->qmap)
        ok = (f->qmap = malloc(sizeof(int) * (size_t)nl * 2)) != NULL;
    if (ok) {
        for (int l = 0; l < nl; l++) {
            f->qmap[l] = rep[l] >= 0 ? rep[l] : l;
            f->qmap[nl + l] = rep[l] >= 0 ? off[l] : 0;
        }
        f->qoff = f->qmap + nl;
        f->qp = p;
        f->qn = n;
        /* A read budget's value is set at its first read: that of each
         * orbit's named reader before any flow maps onto it. */
        for (int r = 0; r < p; r++)
            for (int g = 0; g < reps[r].nlegs; g++)
                if (reps[r].op[g] == FAB_READ)
                    read_init(f, reps[r].b[g]);
        f->quot = 1;
    }
    for (int r = 0; reps && r < 2 * p; r++)
        qhop_free(&reps[r]);
    free(reps);
    free(img);
    free(budget);
    free(rl);
    free(rd);
    /* Refused only after hops beyond the first p matched: the routes do not
     * turn with the rotation (a tie between equal ways broken by node order),
     * which a longer period would meet as well. */
    return ok ? 1 : seen >= p ? -1 : 0;
}
