/* Fabric: engine links for every direction of every topology link, plus one
 * virtual link per GPU that carries its outstanding-read budget. Transfers
 * become engine flows along topo_route(); the switch arbitration rule sits
 * on every switch-to-root (uplink) direction. Tags of write flows encode the
 * source GPU and the destination root port so the rule can see the pattern
 * "two sources on one uplink writing towards two root ports". */
#include "models/fabric.h"

#include <stdlib.h>
#include <string.h>

enum {
    TAG_WRITE = 1u << 31,
    TAG_MULTIROOT = 1u << 30,
    TAG_SRC_SHIFT = 12,
    TAG_FIELD = 0xfff,
    MAX_HOPS = 64
};

struct fabric {
    const topo *t;
    sched *s;
    int nlinks_topo;
    int *read_link;    /* per node: virtual read-budget link, -1 if not a GPU */
    int *root_of;      /* per node: root port above it, -1 */
    int *hostmem_of;   /* per node */
    double *read_Bps;  /* per node: its read link's capacity, -1 until needed */
    /* scratch for group flows; slot[l] = index of engine link l in lk, or -1 */
    int *slot;
    int *lk;
    double *w;
    int scratch_cap;
};

static double collapse_rule(void *ctx, int link, const uint32_t *tags, int ntags,
                            double nominal_Bps)
{
    (void)link;
    const fabric *f = ctx;
    double collapse = topo_params_get(f->t)->arb_collapse_Bps;
    if (collapse <= 0 || ntags < 1)
        return nominal_Bps;
    /* Trigger (docs/model.md): >= 2 distinct writing GPUs on this uplink and
     * their writes heading to >= 2 distinct root ports. */
    uint32_t src0 = UINT32_MAX, root0 = UINT32_MAX;
    int nsrc = 0, nroot = 0;
    for (int i = 0; i < ntags; i++) {
        uint32_t tg = tags[i];
        if (!(tg & TAG_WRITE))
            continue;
        uint32_t src = (tg >> TAG_SRC_SHIFT) & TAG_FIELD, root = tg & TAG_FIELD;
        if (nsrc == 0) {
            src0 = src;
            nsrc = 1;
        } else if (src != src0) {
            nsrc = 2;
        }
        if (tg & TAG_MULTIROOT) {
            nroot = 2;
        } else if (nroot == 0) {
            root0 = root;
            nroot = 1;
        } else if (root != root0) {
            nroot = 2;
        }
    }
    return nsrc >= 2 && nroot >= 2 && collapse < nominal_Bps ? collapse : nominal_Bps;
}

static int compute_root(const topo *t, int node)
{
    for (int n = node, guard = 0; n >= 0 && guard < 4096; guard++) {
        const topo_node *nd = topo_node_at(t, n);
        if (nd->kind == TOPO_ROOT)
            return n;
        n = nd->pci_parent;
    }
    return -1;
}

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

sim_ps fabric_lat_ps(const fabric *f, fab_op op, int src, int dst)
{
    sim_ps one = topo_route_lat_ps(f->t, src, dst);
    if (op == FAB_WRITE)
        return one;
    return 2 * one + topo_params_get(f->t)->read_extra_lat_ps;
}

/* Does the route a->b cross a PCIe link? The outstanding-request bound is a
 * PCIe mechanism; NVLink reads are not modelled as tag-limited. */
static int route_has_pcie(const topo *t, int a, int b)
{
    const int *links;
    const int8_t *dirs;
    int h = topo_route(t, a, b, &links, &dirs);
    for (int i = 0; i < h; i++)
        if (topo_link_at(t, links[i])->kind == LINK_PCIE)
            return 1;
    return 0;
}

double fabric_read_cap_Bps(const fabric *f, int reader, int target)
{
    const topo_params *p = topo_params_get(f->t);
    if (!route_has_pcie(f->t, target, reader))
        return 0;
    sim_ps rtt = fabric_lat_ps(f, FAB_READ, target, reader);
    if (p->read_tags <= 0 || p->pcie_mrrs_bytes <= 0 || rtt <= 0)
        return 0;
    return (double)p->read_tags * p->pcie_mrrs_bytes / ((double)rtt * 1e-12);
}

/* Read budget of GPU node n: tags x request bytes over its shortest round
 * trip to any other GPU or host memory; a single flow is also capped by its
 * own round trip (fabric_read_cap_Bps). 0: none. */
static double read_budget(const fabric *f, int n)
{
    const topo *t = f->t;
    double best = 0;
    for (int h = 0; h < topo_ngpus(t); h++)
        if (topo_gpu_node(t, h) != n) {
            double c = fabric_read_cap_Bps(f, n, topo_gpu_node(t, h));
            if (c > best)
                best = c;
        }
    if (f->hostmem_of[n] >= 0) {
        double c = fabric_read_cap_Bps(f, n, f->hostmem_of[n]);
        if (c > best)
            best = c;
    }
    return best;
}

fabric *fabric_new(const topo *t, err *e)
{
    fabric *f = calloc(1, sizeof *f);
    int nn = topo_nnodes(t);
    if (!f || !(f->s = sched_new()) || !(f->read_link = malloc(sizeof(int) * (size_t)nn)) ||
        !(f->root_of = malloc(sizeof(int) * (size_t)nn)) ||
        !(f->hostmem_of = malloc(sizeof(int) * (size_t)nn)))
        goto oom;
    f->t = t;
    f->nlinks_topo = topo_nlinks(t);
    char name[160];
    for (int l = 0; l < f->nlinks_topo; l++) {
        const topo_link *tl = topo_link_at(t, l);
        const char *a = topo_node_at(t, tl->a)->name, *b = topo_node_at(t, tl->b)->name;
        snprintf(name, sizeof name, "%s>%s", a, b);
        if (sched_link(f->s, tl->bw_Bps, name) != 2 * l)
            goto oom;
        snprintf(name, sizeof name, "%s>%s", b, a);
        if (sched_link(f->s, tl->bw_Bps, name) != 2 * l + 1)
            goto oom;
        /* The arbitration rule watches traffic leaving a switch upwards. */
        const topo_node *na = topo_node_at(t, tl->a), *nb = topo_node_at(t, tl->b);
        if (na->kind == TOPO_SWITCH && na->pci_parent == tl->b)
            sched_link_rule(f->s, 2 * l, collapse_rule, f);
        if (nb->kind == TOPO_SWITCH && nb->pci_parent == tl->a)
            sched_link_rule(f->s, 2 * l + 1, collapse_rule, f);
    }
    for (int n = 0; n < nn; n++) {
        f->root_of[n] = compute_root(t, n);
        f->hostmem_of[n] = compute_hostmem(t, n);
        f->read_link[n] = -1;
    }
    /* Read budget of each GPU (read_budget): whether it has one is decided
     * here, cheaply when it reads its host memory over PCIe; the value
     * waits for its first read (all GPU pairs would be O(N^2) routes). */
    if (!(f->read_Bps = malloc(sizeof(double) * (size_t)nn)))
        goto oom;
    for (int g = 0; g < topo_ngpus(t); g++) {
        int n = topo_gpu_node(t, g);
        int m = f->hostmem_of[n];
        double best = m >= 0 && fabric_read_cap_Bps(f, n, m) > 0 ? -1 : read_budget(f, n);
        if (best != 0) {
            snprintf(name, sizeof name, "%s.read-tags", topo_node_at(t, n)->name);
            f->read_link[n] = sched_link(f->s, best > 0 ? best : 0, name);
            if (f->read_link[n] < 0)
                goto oom;
        }
        f->read_Bps[n] = best;
    }
    int nl = sched_nlinks(f->s);
    if (!(f->slot = malloc(sizeof(int) * (size_t)(nl > 0 ? nl : 1))))
        goto oom;
    for (int i = 0; i < nl; i++)
        f->slot[i] = -1;
    return f;
oom:
    fabric_free(f);
    err_set(e, ERR_SYSTEM, "out of memory building the fabric");
    return NULL;
}

void fabric_free(fabric *f)
{
    if (!f)
        return;
    sched_free(f->s);
    free(f->read_link);
    free(f->root_of);
    free(f->hostmem_of);
    free(f->read_Bps);
    free(f->lk);
    free(f->w);
    free(f->slot);
    free(f);
}

sched *fabric_sched(fabric *f) { return f->s; }
const topo *fabric_topo(const fabric *f) { return f->t; }
void fabric_reset(fabric *f) { sched_reset(f->s); }
int fabric_root_of(const fabric *f, int node) { return f->root_of[node]; }
int fabric_hostmem_of(const fabric *f, int gpu_node) { return f->hostmem_of[gpu_node]; }

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

/* Add the route a->b to the scratch link list with weight wt, merging links
 * already present. Returns the new count. */
static int add_route(fabric *f, int n, int a, int b, double wt)
{
    const int *links;
    const int8_t *dirs;
    int h = topo_route(f->t, a, b, &links, &dirs);
    for (int i = 0; i < h; i++) {
        int id = 2 * links[i] + dirs[i];
        if (f->slot[id] < 0) {
            f->slot[id] = n;
            f->lk[n] = id;
            f->w[n++] = wt;
        } else {
            f->w[f->slot[id]] += wt;
        }
    }
    return n;
}

static uint32_t write_tag(const fabric *f, int src, int dst, int multiroot)
{
    const topo_node *s = topo_node_at(f->t, src);
    uint32_t g = s->gpu >= 0 ? (uint32_t)s->gpu : TAG_FIELD;
    int root = f->root_of[dst];
    uint32_t r = root >= 0 ? (uint32_t)root & TAG_FIELD : TAG_FIELD;
    return TAG_WRITE | (multiroot ? TAG_MULTIROOT : 0) | (g & TAG_FIELD) << TAG_SRC_SHIFT | r;
}

int fabric_xfer(fabric *f, fab_op op, int src, int dst, double bytes, double wire,
                sim_ps extra_lat_ps, int track, const char *label, err *e)
{
    int initiator = op == FAB_WRITE ? src : dst;
    return fabric_xfer_group(f, op, initiator, op == FAB_WRITE ? &dst : &src, 1, bytes,
                             wire, extra_lat_ps, track, label, e);
}

int fabric_xfer_group(fabric *f, fab_op op, int initiator, const int *peers, int n,
                      double bytes_each, double wire, sim_ps extra_lat_ps, int track,
                      const char *label, err *e)
{
    if (n < 1 || wire < 1)
        return err_set(e, ERR_SYSTEM, "fabric: bad group (n=%d wire=%g)", n, wire), -1;
    if (grow(f, MAX_HOPS * (n + 1) + 1, e))
        return -1;
    int nl = 0, multiroot = 0, root0 = -2;
    sim_ps lat = 0;
    double cap = 0;
    for (int i = 0; i < n; i++) {
        int a = op == FAB_WRITE ? initiator : peers[i];
        int b = op == FAB_WRITE ? peers[i] : initiator;
        nl = add_route(f, nl, a, b, wire);
        sim_ps l = fabric_lat_ps(f, op, a, b);
        if (l > lat)
            lat = l;
        if (op == FAB_READ) {
            /* n interleaved streams share the reader's budget: the group's
             * per-stream rate is bounded by the slowest stream's own cap. */
            double c = fabric_read_cap_Bps(f, initiator, peers[i]) / n;
            if (c > 0 && (cap == 0 || c < cap))
                cap = c;
        }
        int r = f->root_of[b];
        if (root0 == -2)
            root0 = r;
        else if (r != root0)
            multiroot = 1;
    }
    if (op == FAB_READ && f->read_link[initiator] >= 0 && cap > 0) {
        if (f->read_Bps[initiator] < 0) { /* first read: the budget's value */
            f->read_Bps[initiator] = read_budget(f, initiator);
            sched_link_cap(f->s, f->read_link[initiator], f->read_Bps[initiator]);
        }
        f->lk[nl] = f->read_link[initiator];
        f->w[nl++] = (double)n;
    }
    for (int i = 0; i < nl; i++)  /* clear the slots for the next group */
        if (f->lk[i] < 2 * f->nlinks_topo)
            f->slot[f->lk[i]] = -1;
    uint32_t tag = op == FAB_WRITE ? write_tag(f, initiator, peers[0], multiroot) : 0;
    int id = sched_flow_w(f->s, f->lk, f->w, nl, bytes_each, cap, lat + extra_lat_ps, tag,
                          track, label);
    if (id < 0)
        err_set(e, ERR_SYSTEM, "out of memory adding a transfer");
    return id;
}

int fabric_xfer_bundle(fabric *f, const int *src, const int *dst, int n, double bytes,
                       double wire, sim_ps extra_lat_ps, int track, const char *label,
                       err *e)
{
    if (n < 1 || wire < 1)
        return err_set(e, ERR_SYSTEM, "fabric: bad bundle (n=%d wire=%g)", n, wire), -1;
    if (grow(f, MAX_HOPS * (n + 1) + 1, e))
        return -1;
    int nl = 0;
    sim_ps lat = 0;
    for (int i = 0; i < n; i++) {
        nl = add_route(f, nl, src[i], dst[i], wire);
        sim_ps l = fabric_lat_ps(f, FAB_WRITE, src[i], dst[i]);
        if (l > lat)
            lat = l;
    }
    for (int i = 0; i < nl; i++)
        f->slot[f->lk[i]] = -1;
    int id = sched_flow_w(f->s, f->lk, f->w, nl, bytes, 0, lat + extra_lat_ps,
                          write_tag(f, src[0], dst[0], 0), track, label);
    if (id < 0)
        err_set(e, ERR_SYSTEM, "out of memory adding a transfer");
    return id;
}
