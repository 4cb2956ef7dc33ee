/* The transaction-level engine (tlp.h). Ports are link directions: a
 * serializer at the sender (busy while a TLP's bytes leave), a latency, the
 * credits its receiver granted per type, and at the receiver the FIFOs of the
 * TLPs that came in over it. A TLP waits in the FIFO of its type at each
 * node (one FIFO per type and egress) until the egress of its next hop
 * picks it: round robin over the node's ingress ports (and, at an endpoint, its own requests, writes and
 * completions), the oldest eligible head of an ingress first. Invariants:
 * credits at a sender never go below zero; a TLP leaves an ingress only from
 * the head of its FIFO, and a non-posted or completion head only if no older
 * posted TLP of the same ingress waits for the same egress; a reader never holds
 * more requests than its tags, nor its copy engine more than ce_read_tags.
 * Events are (time, insertion order), so a run is deterministic. */
#include "models/tlp/tlp.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "models/fabric/fabric.h"
#include "sim/evq.h"
#include "sim/pool.h"

enum { C_P, C_NP, C_CPL, NCLS };
enum { EV_ARRIVE, EV_TXDONE, EV_CREDIT, EV_CPLGEN, EV_RETRY };
enum { MAX_HOPS = 64, MAX_CPL = 64 };

#define CRED_INF INT64_MAX
#define TLP_END_TOGETHER 0.02
#define TLP_STEADY 0.02  /* summed rates of two spans this close: steady */

typedef struct pkt {
    int32_t flow, next, rq, bytes, hop, port;
    uint64_t seq;
    int8_t cls;
} pkt;

typedef struct credit {
    int32_t port, data;
    int8_t cls;
} credit;

typedef struct reqrec {
    int32_t left;    /* completion bytes still to come */
} reqrec;

typedef struct fifo {
    int32_t head, tail;
} fifo;

typedef struct port {
    int from, to;
    double ps_per_byte;
    int64_t lat_ps;
    int busy, retry, rr;
    int64_t hdr[NCLS], data[NCLS];   /* credits the sender may still use */
    int64_t hdr0[NCLS], data0[NCLS]; /* what the receiver grants */
    int q_off;                       /* the receiver's queues of this ingress:
                                        qs[q_off + c x outdeg(to) + out index] */
    int oidx;                        /* this port's index among its sender's ports out */
    int turn;                        /* a root port forwarding up into its CPU */
    int last_src[2], last_root[2];
    int64_t last_ps[2];
    double cpl_ps_per_byte;          /* a socket link's peer-read budget, 0 = none */
    int dllp;                        /* a PCIe link: the receiver returns DLLPs on
                                        the other direction (tlp_dllp_bytes) */
    int64_t dllp_ps;                 /* DLLP time queued behind the TLP on the wire */
    int64_t cpl_free_ps;             /* when that budget takes the next completion */
} port;

typedef struct node {
    int in_off, nin;   /* ports into this node: in_list[in_off ..] */
    int out;           /* an endpoint's one port out, -1 */
    int endpoint;
    int fl_off, nfl;   /* flows this endpoint initiates: fl_list[fl_off ..] */
    int nact;          /* of those, the ones still running: act[fl_off ..] */
    int cls_rr;
    int64_t tags;      /* free tags */
    int64_t ce_tags;   /* of those, free to its copy engine's reads */
    fifo cplq;         /* completions generated here, not yet sent */
} node;

typedef struct flow {
    tlp_op op;
    int src, dst, init, data_src;
    int req_bytes;
    int d_off, nd;     /* data route (writer -> target, completer -> reader) */
    int r_off, nr;     /* request route (reader -> completer) */
    int data_src_id, data_root;  /* for the turnaround rule */
    double bytes, rem;
    int64_t total, issued, delivered, half;
    int64_t mark, mark_flight;   /* issued, and in flight, at the last checkpoint */
    int64_t got_ps, half_ps;     /* its last delivery; the last before the checkpoint */
    int64_t end_ps, base_lat_ps;
    int done;
    int npred, waiting;          /* predecessors (tlp_flow_after); those not ended */
    int released;                /* its successors were told it ended */
} flow;

typedef struct dep {
    int before, after;
} dep;

struct tlp_net {
    const topo *t;
    topo_params p;
    int off;
    int nports, nnodes;
    port *ports;
    node *nodes;
    int *in_list;
    int *root_of;
    int *outdeg;       /* per node */
    fifo *qs;          /* per ingress port, type and egress of its receiver */
    int nqs;
    /* flows */
    flow *fl;
    int nfl, fl_cap;
    int *routes;
    int nroutes, routes_cap;
    int *fl_list;
    int *act;          /* per endpoint, its flows with bytes left this phase */
    dep *deps;
    int ndeps, deps_cap;
    /* run state */
    evq *q;
    pool pk, cr, rq;
    int64_t now;
    uint64_t seq;
    tlp_stats st;
    uint64_t rng;      /* the copy engines' interleaving (seeded per run) */
};

/* --- setup ------------------------------------------------------------- */

static void grant(const topo_params *p, topo_kind k, int64_t *hdr, int64_t *data)
{
    int h = 0, d = 0;
    if (k == TOPO_SWITCH)
        h = p->tlp_sw_hdr, d = p->tlp_sw_data_bytes;
    else if (k == TOPO_ROOT || k == TOPO_CPU)
        h = p->tlp_rc_hdr, d = p->tlp_rc_data_bytes;
    else
        h = p->tlp_ep_hdr, d = p->tlp_ep_data_bytes;
    for (int c = 0; c < NCLS; c++) {
        hdr[c] = h > 0 ? h : CRED_INF;
        data[c] = d > 0 ? d : CRED_INF;
    }
    data[C_NP] = CRED_INF; /* requests carry no data */
    /* Endpoints advertise infinite completion credits (PCIe Base spec, flow
     * control rules); root ports and CPUs what the topology says (0 =
     * infinite, the rule for root complexes; docs/model.md). */
    if (k == TOPO_GPU || k == TOPO_HOSTMEM)
        hdr[C_CPL] = data[C_CPL] = CRED_INF;
    if (k == TOPO_ROOT || k == TOPO_CPU) {
        hdr[C_CPL] = p->tlp_rc_cpl_hdr > 0 ? p->tlp_rc_cpl_hdr : CRED_INF;
        data[C_CPL] = p->tlp_rc_cpl_data_bytes > 0 ? p->tlp_rc_cpl_data_bytes : CRED_INF;
    }
}

tlp_net *tlp_new(const topo *t, err *e)
{
    tlp_net *n = calloc(1, sizeof *n);
    if (!n) {
        err_set(e, ERR_SYSTEM, "out of memory");
        return NULL;
    }
    n->t = t;
    n->p = *topo_params_get(t);
    n->nnodes = topo_nnodes(t);
    n->nports = 2 * topo_nlinks(t);
    n->ports = calloc((size_t)n->nports + 1, sizeof *n->ports);
    n->nodes = calloc((size_t)n->nnodes + 1, sizeof *n->nodes);
    n->in_list = calloc((size_t)n->nports + 1, sizeof *n->in_list);
    n->root_of = calloc((size_t)n->nnodes + 1, sizeof *n->root_of);
    n->q = evq_new();
    if (!n->ports || !n->nodes || !n->in_list || !n->root_of || !n->q) {
        tlp_free(n);
        err_set(e, ERR_SYSTEM, "out of memory");
        return NULL;
    }
    pool_init(&n->pk, sizeof(pkt));
    pool_init(&n->cr, sizeof(credit));
    pool_init(&n->rq, sizeof(reqrec));
    const topo_params *p = &n->p;
    double eff = (double)(p->pcie_mps_bytes + p->pcie_tlp_overhead_bytes) / p->pcie_mps_bytes;
    for (int i = 0; i < n->nports; i++) {
        const topo_link *l = topo_link_at(t, i / 2);
        port *pt = &n->ports[i];
        pt->from = (i & 1) ? l->b : l->a;
        pt->to = (i & 1) ? l->a : l->b;
        double bw = (i & 1) && l->bw_back_Bps > 0 ? l->bw_back_Bps : l->bw_Bps;
        /* Link rates are stated for MPS writes; the wire moves header too. */
        pt->ps_per_byte = 1e12 / (bw * eff);
        pt->lat_ps = l->lat_ps;
        grant(p, topo_node_at(t, pt->to)->kind, pt->hdr0, pt->data0);
        pt->turn = topo_node_at(t, pt->from)->kind == TOPO_ROOT &&
                   topo_node_at(t, pt->to)->kind == TOPO_CPU;
        pt->dllp = l->kind == LINK_PCIE;
        if (l->kind == LINK_SOCKET && p->socket_read_Bps > 0)
            pt->cpl_ps_per_byte = 1e12 / (p->socket_read_Bps * eff);
    }
    n->outdeg = calloc((size_t)n->nnodes + 1, sizeof *n->outdeg);
    if (!n->outdeg) {
        tlp_free(n);
        err_set(e, ERR_SYSTEM, "out of memory");
        return NULL;
    }
    for (int i = 0; i < n->nports; i++)
        n->ports[i].oidx = n->outdeg[n->ports[i].from]++;
    for (int i = 0; i < n->nports; i++) {
        n->ports[i].q_off = n->nqs;
        n->nqs += NCLS * n->outdeg[n->ports[i].to];
    }
    n->qs = calloc((size_t)n->nqs + 1, sizeof *n->qs);
    if (!n->qs) {
        tlp_free(n);
        err_set(e, ERR_SYSTEM, "out of memory");
        return NULL;
    }
    int k = 0;
    for (int v = 0; v < n->nnodes; v++) {
        node *nd = &n->nodes[v];
        nd->in_off = k;
        nd->out = -1;
        topo_kind kind = topo_node_at(t, v)->kind;
        nd->endpoint = kind == TOPO_GPU || kind == TOPO_HOSTMEM;
        for (int i = 0; i < n->nports; i++) {
            if (n->ports[i].to == v)
                n->in_list[k++] = i;
            if (n->ports[i].from == v && nd->endpoint) {
                const topo_link *l = topo_link_at(t, i / 2);
                if (l->kind != LINK_NVLINK)
                    nd->out = i;
            }
        }
        nd->nin = k - nd->in_off;
        n->root_of[v] = topo_root_port(t, v);
    }
    return n;
}

void tlp_free(tlp_net *n)
{
    if (!n)
        return;
    free(n->ports);
    free(n->nodes);
    free(n->in_list);
    free(n->root_of);
    free(n->outdeg);
    free(n->qs);
    free(n->fl);
    free(n->routes);
    free(n->fl_list);
    free(n->act);
    free(n->deps);
    evq_free(n->q);
    pool_fini(&n->pk);
    pool_fini(&n->cr);
    pool_fini(&n->rq);
    free(n);
}

void tlp_reset(tlp_net *n)
{
    n->nfl = 0;
    n->nroutes = 0;
    n->ndeps = 0;
}

void tlp_disable(tlp_net *n, int off) { n->off = off; }

static const fabric_mech mechs[] = {
    {"turn", TLP_NO_TURN}, {"credits", TLP_NO_CREDITS}, {"order", TLP_NO_ORDER},
    {"dllp", TLP_NO_DLLP},
    {"tags", TLP_NO_TAGS},
};

int tlp_mech_parse(const char *list, int *off, err *e)
{
    return fabric_mech_list_parse(mechs, sizeof mechs / sizeof mechs[0],
                                  "transaction-level mechanism", list, off, e);
}

static int add_route(tlp_net *n, int a, int b, int *off, int *len, err *e)
{
    const int *links;
    const int8_t *dirs;
    int h = topo_route(n->t, a, b, &links, &dirs);
    if (h < 0)
        return err_set(e, ERR_USAGE, "tlp: no route from %s to %s",
                       topo_node_at(n->t, a)->name, topo_node_at(n->t, b)->name);
    if (h > MAX_HOPS)
        return err_set(e, ERR_USAGE, "tlp: route of %d hops (at most %d)", h, MAX_HOPS);
    if (n->nroutes + h > n->routes_cap) {
        int cap = n->routes_cap ? 2 * n->routes_cap : 1024;
        while (cap < n->nroutes + h)
            cap *= 2;
        int *r = realloc(n->routes, (size_t)cap * sizeof *r);
        if (!r)
            return err_set(e, ERR_SYSTEM, "out of memory");
        n->routes = r;
        n->routes_cap = cap;
    }
    for (int i = 0; i < h; i++) {
        if (topo_link_at(n->t, links[i])->kind == LINK_NVLINK)
            return err_set(e, ERR_USAGE, "tlp: the route from %s to %s crosses NVLink; the "
                           "transaction-level engine models PCIe fabrics only",
                           topo_node_at(n->t, a)->name, topo_node_at(n->t, b)->name);
        n->routes[n->nroutes + i] = 2 * links[i] + dirs[i];
    }
    *off = n->nroutes;
    *len = h;
    n->nroutes += h;
    return 0;
}

int tlp_flow(tlp_net *n, tlp_op op, int src, int dst, double bytes, err *e)
{
    if (src < 0 || dst < 0 || src >= n->nnodes || dst >= n->nnodes || src == dst)
        return err_set(e, ERR_USAGE, "tlp: bad flow endpoints %d -> %d", src, dst), -1;
    if (!n->nodes[src].endpoint || !n->nodes[dst].endpoint)
        return err_set(e, ERR_USAGE, "tlp: flows run between GPUs and host memory"), -1;
    if (!(bytes >= 0) || bytes > 1e15)
        return err_set(e, ERR_USAGE, "tlp: bad byte count %g", bytes), -1;
    if (n->nfl == n->fl_cap) {
        int cap = n->fl_cap ? 2 * n->fl_cap : 64;
        flow *f = realloc(n->fl, (size_t)cap * sizeof *f);
        if (!f)
            return err_set(e, ERR_SYSTEM, "out of memory"), -1;
        n->fl = f;
        n->fl_cap = cap;
    }
    flow *f = &n->fl[n->nfl];
    memset(f, 0, sizeof *f);
    f->op = op;
    f->src = src;
    f->dst = dst;
    int rd = tlp_is_read(op);
    f->init = rd ? dst : src;
    f->data_src = src;
    const topo_params *p = &n->p;
    f->req_bytes = op == TLP_CE_WRITE ? p->pcie_mps_bytes
                   : op == TLP_CE_READ ? p->pcie_mrrs_bytes
                                       : p->sm_req_bytes;
    if (!rd && f->req_bytes > p->pcie_mps_bytes)
        f->req_bytes = p->pcie_mps_bytes;
    if (add_route(n, src, dst, &f->d_off, &f->nd, e))
        return -1;
    if (rd && add_route(n, dst, src, &f->r_off, &f->nr, e))
        return -1;
    if (n->nodes[f->init].out < 0 || n->nodes[f->data_src].out < 0)
        return err_set(e, ERR_USAGE, "tlp: endpoint without a PCIe link"), -1;
    f->data_src_id = src;
    f->data_root = n->root_of[dst] >= 0 ? n->root_of[dst] : dst;
    f->bytes = bytes;
    int64_t lat = 0;
    for (int i = 0; i < f->nd; i++)
        lat += n->ports[n->routes[f->d_off + i]].lat_ps;
    for (int i = 0; i < f->nr; i++)
        lat += n->ports[n->routes[f->r_off + i]].lat_ps;
    f->base_lat_ps = lat + (rd ? p->read_extra_lat_ps : 0);
    return n->nfl++;
}

int tlp_flow_after(tlp_net *n, int after, int before, err *e)
{
    if (after < 0 || after >= n->nfl || before < 0 || before >= after)
        return err_set(e, ERR_USAGE, "tlp: flow %d cannot wait for flow %d", after, before);
    if (n->ndeps == n->deps_cap) {
        int cap = n->deps_cap ? 2 * n->deps_cap : 64;
        dep *d = realloc(n->deps, (size_t)cap * sizeof *d);
        if (!d)
            return err_set(e, ERR_SYSTEM, "out of memory");
        n->deps = d;
        n->deps_cap = cap;
    }
    n->deps[n->ndeps++] = (dep){before, after};
    n->fl[after].npred++;
    return 0;
}

int64_t tlp_end_ps(const tlp_net *n, int id) { return n->fl[id].end_ps; }
tlp_stats tlp_last_stats(const tlp_net *n) { return n->st; }
const topo *tlp_topo(const tlp_net *n) { return n->t; }

int tlp_split_cpl(int64_t addr, int bytes, int rcb, int cpl_max, int *sizes, int max)
{
    int k = 0;
    while (bytes > 0 && k < max) {
        /* A completion ends on an RCB boundary unless it ends the request. */
        int64_t end = addr + cpl_max;
        end -= end % rcb;
        if (end <= addr)
            end = addr + rcb - addr % rcb;
        int s = (int)(end - addr);
        if (s > bytes)
            s = bytes;
        sizes[k++] = s;
        addr += s;
        bytes -= s;
    }
    return k;
}

/* --- the run ------------------------------------------------------------ */

static pkt *P(tlp_net *n, int32_t i) { return &POOL_AT(&n->pk, pkt, i); }

static const int *route_of(const tlp_net *n, const pkt *k)
{
    const flow *f = &n->fl[k->flow];
    return n->routes + (k->cls == C_NP ? f->r_off : f->d_off);
}

static int route_len(const tlp_net *n, const pkt *k)
{
    const flow *f = &n->fl[k->flow];
    return k->cls == C_NP ? f->nr : f->nd;
}

static void fifo_push(tlp_net *n, fifo *q, int32_t i)
{
    P(n, i)->next = -1;
    if (q->tail >= 0)
        P(n, q->tail)->next = i;
    else
        q->head = i;
    q->tail = i;
}

static int32_t fifo_pop(tlp_net *n, fifo *q)
{
    int32_t i = q->head;
    q->head = P(n, i)->next;
    if (q->head < 0)
        q->tail = -1;
    return i;
}

static int wire_bytes(const tlp_net *n, int cls, int payload)
{
    /* MWr: 4-DW header; MRd 4 DW, no payload; CplD: 3-DW header (one DW less). */
    int o = n->p.pcie_tlp_overhead_bytes;
    return cls == C_CPL ? payload + (o > 4 ? o - 4 : o) : cls == C_NP ? o : payload + o;
}

static int credit_ok(const tlp_net *n, const port *pt, int cls, int payload)
{
    if (n->off & TLP_NO_CREDITS)
        return 1;
    int64_t d = (payload + 15) / 16 * 16;
    return pt->hdr[cls] >= 1 && pt->data[cls] >= d;
}

static int push(tlp_net *n, int64_t t, uint32_t kind, int32_t arg)
{
    return evq_push(n->q, t, kind, arg) < 0 ? -1 : 0;
}

/* The ordering turnaround at a root port's peer forwarding: a posted write or
 * completion whose requester and destination root both differ from the
 * previous one's waits tlp_turn after it. */
static int later(tlp_net *n, port *pt, int64_t ok_at, int *fail)
{
    if (!pt->retry) {
        if (push(n, ok_at, EV_RETRY, (int32_t)(pt - n->ports)))
            *fail = 1;
        pt->retry = 1;
    }
    return 0;
}

static int turn_ok(tlp_net *n, port *pt, const pkt *k, int *fail)
{
    if (k->cls == C_CPL && pt->cpl_ps_per_byte > 0 && n->now < pt->cpl_free_ps)
        return later(n, pt, pt->cpl_free_ps, fail);
    if (!pt->turn || k->cls == C_NP || (n->off & TLP_NO_TURN))
        return 1;
    int c = k->cls == C_P ? 0 : 1;
    int64_t turn = c ? n->p.tlp_turn_cpl_ps : n->p.tlp_turn_ps;
    if (turn <= 0 || pt->last_ps[c] < 0)
        return 1;
    const flow *f = &n->fl[k->flow];
    if (f->data_src_id == pt->last_src[c] || f->data_root == pt->last_root[c])
        return 1;
    int64_t ok_at = pt->last_ps[c] + turn;
    if (n->now >= ok_at)
        return 1;
    return later(n, pt, ok_at, fail);
}

/* Ingress port ip's queue of type c towards egress pe (a port out of ip's
 * receiver). */
static fifo *queue(tlp_net *n, int ip, int c, int pe)
{
    const port *in = &n->ports[ip];
    return &n->qs[in->q_off + c * n->outdeg[in->to] + n->ports[pe].oidx];
}

/* The eligible TLP of ingress port ip for egress pe, oldest first; -1.
 * Queues per type and egress: a TLP passes earlier ones of its ingress that
 * go elsewhere, never one to the same egress; an NP or a completion never
 * passes an earlier posted TLP to the same egress. */
static int32_t pick_ingress(tlp_net *n, int ip, int pe, int *fail, int *cls)
{
    port *out = &n->ports[pe];
    int32_t best = -1;
    int32_t ph = queue(n, ip, C_P, pe)->head;
    for (int c = 0; c < NCLS; c++) {
        int32_t h = queue(n, ip, c, pe)->head;
        if (h < 0)
            continue;
        pkt *k = P(n, h);
        if (c != C_P && ph >= 0 && !(n->off & TLP_NO_ORDER) && P(n, ph)->seq < k->seq)
            continue;
        if (!credit_ok(n, out, c, k->bytes) || !turn_ok(n, out, k, fail))
            continue;
        if (best < 0 || k->seq < P(n, best)->seq) {
            best = h;
            *cls = c;
        }
    }
    return best;
}

static int32_t new_pkt(tlp_net *n, int flow_id, int cls, int bytes)
{
    int32_t i = pool_get(&n->pk);
    if (i < 0)
        return -1;
    pkt *k = P(n, i);
    memset(k, 0, sizeof *k);
    k->flow = flow_id;
    k->cls = (int8_t)cls;
    k->bytes = bytes;
    k->rq = -1;
    k->port = -1;
    k->next = -1;
    return i;
}

/* An endpoint's own next TLP for its port out: a completion, a write or a
 * read request, round robin over the three; -2 if none, -1 on OOM. */
static int32_t pick_local(tlp_net *n, int v, int pe)
{
    node *nd = &n->nodes[v];
    port *out = &n->ports[pe];
    for (int r = 0; r < NCLS; r++) {
        int c = (nd->cls_rr + r) % NCLS;
        if (c == C_CPL) {
            int32_t h = nd->cplq.head;
            if (h >= 0 && credit_ok(n, out, C_CPL, P(n, h)->bytes)) {
                fifo_pop(n, &nd->cplq);
                nd->cls_rr = c + 1;
                return h;
            }
            continue;
        }
        int want_read = c == C_NP;
        int tagged = want_read && !(n->off & TLP_NO_TAGS);
        if (tagged && nd->tags <= 0)
            continue;
        /* Concurrent transfers of one device interleave in an order the
         * model cannot know: the next one is drawn (deterministically),
         * uniformly among those with bytes of this kind left to issue. The
         * active list drops transfers fully issued as it is scanned. */
        int *act = n->act + nd->fl_off, m = 0;
        for (int j = 0; j < nd->nact;) {
            const flow *g = &n->fl[act[j]];
            if (g->done || g->issued >= g->total) {
                act[j] = act[--nd->nact];
                continue;
            }
            int engine_full = tagged && g->op == TLP_CE_READ && nd->ce_tags <= 0;
            m += tlp_is_read(g->op) == want_read && !engine_full;
            j++;
        }
        if (m == 0)
            continue;
        int k = 0;
        if (m > 1) {
            n->rng = n->rng * 6364136223846793005ULL + 1442695040888963407ULL;
            k = (int)((n->rng >> 33) % (uint64_t)m);
        }
        for (int j = 0; j < nd->nact; j++) {
            int fi = act[j];
            flow *f = &n->fl[fi];
            if (tlp_is_read(f->op) != want_read ||
                (tagged && f->op == TLP_CE_READ && nd->ce_tags <= 0) || k-- > 0)
                continue;
            int64_t left = f->total - f->issued;
            int b = left < f->req_bytes ? (int)left : f->req_bytes;
            if (!credit_ok(n, out, c, want_read ? 0 : b))
                break;
            int32_t i = new_pkt(n, fi, c, b);
            if (i < 0)
                return -1;
            if (want_read) {
                int32_t q = pool_get(&n->rq);
                if (q < 0)
                    return -1;
                POOL_AT(&n->rq, reqrec, q).left = b;
                P(n, i)->rq = q;
                nd->tags--;
                nd->ce_tags -= f->op == TLP_CE_READ;
            }
            f->issued += b;
            nd->cls_rr = c + 1;
            return i;
        }
    }
    return -2;
}

static int send(tlp_net *n, int pe, int32_t i, int ip)
{
    port *out = &n->ports[pe];
    pkt *k = P(n, i);
    int c = k->cls;
    if (ip >= 0) {
        fifo_pop(n, queue(n, ip, c, pe));
        int32_t r = pool_get(&n->cr);
        if (r < 0)
            return -1;
        credit *cr = &POOL_AT(&n->cr, credit, r);
        cr->port = ip;
        cr->cls = (int8_t)c;
        cr->data = (k->bytes + 15) / 16 * 16;
        if (push(n, n->now + n->p.tlp_fc_ps, EV_CREDIT, r))
            return -1;
    }
    if (!(n->off & TLP_NO_CREDITS)) {
        out->hdr[c] -= out->hdr[c] == CRED_INF ? 0 : 1;
        if (out->data[c] != CRED_INF)
            out->data[c] -= (k->bytes + 15) / 16 * 16;
    }
    if (out->turn && c != C_NP) {
        int t = c == C_P ? 0 : 1;
        const flow *f = &n->fl[k->flow];
        if (n->st.phases == 1 && out->last_ps[t] >= 0) {
            n->st.up[t]++;
            n->st.switched[t] += f->data_src_id != out->last_src[t];
            n->st.turned[t] += f->data_src_id != out->last_src[t] &&
                               f->data_root != out->last_root[t];
        }
        out->last_src[t] = f->data_src_id;
        out->last_root[t] = f->data_root;
        out->last_ps[t] = n->now;
    }
    int wb = wire_bytes(n, c, c == C_NP ? 0 : k->bytes);
    int64_t ser = (int64_t)ceil(wb * out->ps_per_byte);
    if (c == C_CPL && out->cpl_ps_per_byte > 0)
        out->cpl_free_ps = n->now + (int64_t)ceil(wb * out->cpl_ps_per_byte);
    out->busy = 1;
    k->port = pe;
    k->hop++;
    n->st.tlps++;
    if (push(n, n->now + ser, EV_TXDONE, pe) || push(n, n->now + ser + out->lat_ps, EV_ARRIVE, i))
        return -1;
    return 0;
}

static int try_send(tlp_net *n, int pe)
{
    port *out = &n->ports[pe];
    if (out->busy)
        return 0;
    int v = out->from;
    node *nd = &n->nodes[v];
    int local = nd->endpoint && nd->out == pe;
    int ncand = nd->nin + local, fail = 0;
    for (int j = 0; j < ncand; j++) {
        int idx = (out->rr + j) % ncand;
        int32_t i;
        int ip = -1, cls = 0;
        if (idx < nd->nin) {
            ip = n->in_list[nd->in_off + idx];
            i = pick_ingress(n, ip, pe, &fail, &cls);
        } else {
            i = pick_local(n, v, pe);
            if (i == -1)
                return -1;
        }
        if (fail)
            return -1;
        if (i >= 0) {
            out->rr = idx + 1;
            return send(n, pe, i, ip);
        }
    }
    return 0;
}

/* A TLP taken in over PCIe port pe: its receiver returns tlp_dllp_bytes of
 * DLLPs (an Ack and an UpdateFC; PCIe Base spec, Data Link Layer: a DLLP is
 * 6 bytes plus its 2-byte framing token at 8 GT/s and up) on the link's other
 * direction, pe ^ 1: at once on an idle wire, else right behind the TLP
 * leaving on it (docs/model.md "DLLPs on the reverse direction"). */
static int dllp_back(tlp_net *n, int pe)
{
    if (!n->ports[pe].dllp || n->p.tlp_dllp_bytes <= 0 || (n->off & TLP_NO_DLLP))
        return 0;
    port *r = &n->ports[pe ^ 1];
    int64_t t = (int64_t)ceil(n->p.tlp_dllp_bytes * r->ps_per_byte);
    if (r->busy) {
        r->dllp_ps += t;
        return 0;
    }
    r->busy = 1;
    return push(n, n->now + t, EV_TXDONE, pe ^ 1);
}

static void flow_got(tlp_net *n, int fi, int bytes)
{
    flow *f = &n->fl[fi];
    f->delivered += bytes;
    f->got_ps = n->now;
    if (f->delivered >= f->total && !f->done) {
        f->done = 1;
        f->end_ps = n->now;  /* relative to the phase; tlp_run adds the base */
    }
}

static int arrive(tlp_net *n, int32_t i)
{
    pkt *k = P(n, i);
    int pe = k->port;
    port *in = &n->ports[pe];
    int v = in->to;
    if (dllp_back(n, pe))
        return -1;
    if (k->hop < route_len(n, k)) {
        k->seq = ++n->seq;
        int next = route_of(n, k)[k->hop];
        fifo_push(n, queue(n, pe, k->cls, next), i);
        return try_send(n, next);
    }
    /* At its destination: the endpoint takes it at once and frees the credit. */
    int32_t r = pool_get(&n->cr);
    if (r < 0)
        return -1;
    credit *cr = &POOL_AT(&n->cr, credit, r);
    cr->port = pe;
    cr->cls = k->cls;
    cr->data = (k->bytes + 15) / 16 * 16;
    if (push(n, n->now + n->p.tlp_fc_ps, EV_CREDIT, r))
        return -1;
    flow *f = &n->fl[k->flow];
    if (k->cls == C_P) {
        flow_got(n, k->flow, k->bytes);
        pool_put(&n->pk, i);
        return 0;
    }
    if (k->cls == C_NP)
        return push(n, n->now + n->p.read_extra_lat_ps, EV_CPLGEN, i);
    reqrec *q = &POOL_AT(&n->rq, reqrec, k->rq);
    q->left -= k->bytes;
    flow_got(n, k->flow, k->bytes);
    if (q->left <= 0) {
        pool_put(&n->rq, k->rq);
        n->nodes[v].tags++;
        n->nodes[v].ce_tags += f->op == TLP_CE_READ;
        pool_put(&n->pk, i);
        return try_send(n, n->nodes[f->init].out);
    }
    pool_put(&n->pk, i);
    return 0;
}

static int cplgen(tlp_net *n, int32_t i)
{
    pkt *k = P(n, i);
    int fi = k->flow, rq = k->rq, bytes = k->bytes;
    flow *f = &n->fl[fi];
    int sizes[MAX_CPL];
    /* Requests of one flow are contiguous: the address is the flow's offset. */
    int m = tlp_split_cpl(0, bytes, n->p.tlp_rcb_bytes, n->p.tlp_cpl_bytes, sizes, MAX_CPL);
    node *cn = &n->nodes[f->data_src];
    for (int j = 0; j < m; j++) {
        int32_t c = j == 0 ? i : new_pkt(n, fi, C_CPL, sizes[j]);
        if (c < 0)
            return -1;
        pkt *ck = P(n, c);
        ck->cls = C_CPL;
        ck->bytes = sizes[j];
        ck->rq = rq;
        ck->hop = 0;
        ck->port = -1;
        fifo_push(n, &cn->cplq, c);
    }
    return try_send(n, cn->out);
}

static int handle(tlp_net *n, uint32_t kind, int32_t arg)
{
    switch (kind) {
    case EV_ARRIVE:
        return arrive(n, arg);
    case EV_TXDONE: {
        port *pt = &n->ports[arg];
        if (pt->dllp_ps > 0) { /* the DLLPs queued behind the TLP go out next */
            int64_t t = pt->dllp_ps;
            pt->dllp_ps = 0;
            return push(n, n->now + t, EV_TXDONE, arg);
        }
        pt->busy = 0;
        return try_send(n, arg);
    }
    case EV_CREDIT: {
        credit cr = POOL_AT(&n->cr, credit, arg);
        pool_put(&n->cr, arg);
        port *pt = &n->ports[cr.port];
        if (!(n->off & TLP_NO_CREDITS)) {
            if (pt->hdr[cr.cls] != CRED_INF)
                pt->hdr[cr.cls]++;
            if (pt->data[cr.cls] != CRED_INF)
                pt->data[cr.cls] += cr.data;
        }
        return try_send(n, cr.port);
    }
    case EV_CPLGEN:
        return cplgen(n, arg);
    case EV_RETRY:
        n->ports[arg].retry = 0;
        return try_send(n, arg);
    default:
        return 0;
    }
}

static int begin_phase(tlp_net *n)
{
    evq_clear(n->q);
    pool_clear(&n->pk);
    pool_clear(&n->cr);
    pool_clear(&n->rq);
    n->now = 0;
    n->rng = 0x9e3779b97f4a7c15ULL;
    for (int i = 0; i < n->nports; i++) {
        port *pt = &n->ports[i];
        pt->busy = pt->retry = pt->rr = 0;
        pt->dllp_ps = 0;
        memcpy(pt->hdr, pt->hdr0, sizeof pt->hdr);
        memcpy(pt->data, pt->data0, sizeof pt->data);

        pt->last_ps[0] = pt->last_ps[1] = -1;
        pt->cpl_free_ps = 0;
        pt->last_src[0] = pt->last_src[1] = pt->last_root[0] = pt->last_root[1] = -1;
    }
    for (int i = 0; i < n->nqs; i++)
        n->qs[i].head = n->qs[i].tail = -1;
    for (int v = 0; v < n->nnodes; v++) {
        node *nd = &n->nodes[v];
        nd->cls_rr = 0;
        nd->nact = 0;
        for (int j = 0; j < nd->nfl; j++) {
            int fi = n->fl_list[nd->fl_off + j];
            if (n->fl[fi].total > 0)
                n->act[nd->fl_off + nd->nact++] = fi;
        }
        nd->tags = topo_read_tags(n->t, v);
        nd->ce_tags = topo_ce_read_tags(n->t, v);
        nd->cplq.head = nd->cplq.tail = -1;
    }
    for (int v = 0; v < n->nnodes; v++)
        if (n->nodes[v].nfl && n->nodes[v].out >= 0)
            TRY(try_send(n, n->nodes[v].out));
    return 0;
}

/* A flow's rate over the window's second half: the bytes delivered after the
 * checkpoint over the time from the last delivery before it to the last one,
 * so a flow of evenly spaced TLPs gets its exact rate (a count over the span
 * would move in steps of one TLP, and a fit through it would see no slope);
 * over the span when fewer than two deliveries fall in it. */
static double window_rate(const flow *f, double span)
{
    double moved = (double)(f->delivered - f->half), dt = (double)(f->got_ps - f->half_ps);
    return f->half_ps > 0 && dt > 0 && dt <= span ? moved / dt : moved / span;
}

/* Lists of the flows each endpoint initiates, in flow order. */
static int build_lists(tlp_net *n, err *e)
{
    free(n->fl_list);
    free(n->act);
    n->fl_list = malloc(((size_t)n->nfl + 1) * sizeof *n->fl_list);
    n->act = malloc(((size_t)n->nfl + 1) * sizeof *n->act);
    if (!n->fl_list || !n->act)
        return err_set(e, ERR_SYSTEM, "out of memory");
    int k = 0;
    for (int v = 0; v < n->nnodes; v++) {
        node *nd = &n->nodes[v];
        nd->fl_off = k;
        for (int i = 0; i < n->nfl; i++)
            if (n->fl[i].init == v)
                n->fl_list[k++] = i;
        nd->nfl = k - nd->fl_off;
    }
    return 0;
}

static int has_succ(const tlp_net *n, int fi)
{
    for (int k = 0; k < n->ndeps; k++)
        if (n->deps[k].before == fi)
            return 1;
    return 0;
}

/* Flow fi has ended: its successors lose a predecessor; one left with none
 * starts at time t0, the next phase's start (a flow of no bytes ends at
 * once, one way or one round trip later). Returns how many started. */
static int release(tlp_net *n, int fi, int64_t t0, int *active)
{
    int started = 0;
    n->fl[fi].released = 1;
    for (int k = 0; k < n->ndeps; k++) {
        if (n->deps[k].before != fi)
            continue;
        flow *g = &n->fl[n->deps[k].after];
        if (--g->waiting > 0)
            continue;
        started++;
        if (g->bytes < 0.5) {
            g->done = 1;
            g->end_ps = t0 + g->base_lat_ps;
            (*active)--;
            started += release(n, n->deps[k].after, g->end_ps, active);
        }
    }
    return started;
}

/* release() every flow that has ended and not yet told its successors. */
static int release_done(tlp_net *n, int64_t t0, int *active)
{
    int started = 0;
    for (int i = 0; i < n->nfl; i++)
        if (n->fl[i].done && !n->fl[i].released)
            started += release(n, i, t0, active);
    return started;
}

int tlp_run(tlp_net *n, int64_t window_ps, err *e)
{
    memset(&n->st, 0, sizeof n->st);
    n->seq = 0;
    TRY(build_lists(n, e));
    int active = 0;
    for (int i = 0; i < n->nfl; i++) {
        flow *f = &n->fl[i];
        f->rem = f->bytes;
        f->done = 0;
        f->end_ps = 0;
        f->waiting = f->npred;
        f->released = 0;
        active++;
    }
    for (int i = 0; i < n->nfl; i++) {
        flow *f = &n->fl[i];
        if (f->bytes < 0.5 && !f->waiting && !f->done) {
            /* Nothing to move: a write is one way, a read one round trip. */
            f->done = 1;
            f->end_ps = f->base_lat_ps;
            active--;
            release(n, i, f->end_ps, &active);
        }
    }
    int64_t base = 0;
    while (active > 0) {
        n->st.phases++;
        for (int i = 0; i < n->nfl; i++) {
            flow *f = &n->fl[i];
            f->total = f->done || f->waiting ? 0 : (int64_t)llround(f->rem < 1 ? 1 : f->rem);
            f->issued = f->delivered = f->half = f->mark = f->mark_flight = 0;
            f->got_ps = f->half_ps = 0;
        }
        if (begin_phase(n))
            return err_set(e, ERR_SYSTEM, "out of memory");
        /* Checkpoints at W/4, W/2, W, 2W, 4W...: the rates are those between
         * the last two, taken at the first checkpoint from W on after which
         * every flow still running has moved (a flow slowed to a trickle
         * needs longer) and whose span is steady: it starts once the network
         * has turned over (every byte issued by the checkpoint before has
         * arrived) and the flows' summed rate is within TLP_STEADY of the
         * span before, itself so started. A start that fills queues faster
         * than they drain (tag-bound readers behind a slow port) washes out
         * only after that (docs/model.md "Large transfers: the window"). */
        int64_t cp = window_ps / 4 > 0 ? window_ps / 4 : 1, prev_cp = 0, t;
        double last_sum = -1;
        int got = 0, turned_prev = 0;
        uint32_t kind;
        int32_t arg;
        for (;;) {
            while (evq_len(n->q) > 0 && (window_ps <= 0 || evq_top_ps(n->q) <= cp)) {
                evq_pop(n->q, &t, &kind, &arg);
                n->now = t;
                n->st.events++;
                if (handle(n, kind, arg))
                    return err_set(e, ERR_SYSTEM, "out of memory");
            }
            if (window_ps <= 0 || evq_len(n->q) == 0)
                break;
            int moved = 1, turned = prev_cp > 0;
            double sum = 0;
            for (int i = 0; i < n->nfl; i++) {
                const flow *f = &n->fl[i];
                if (!f->total || f->done)
                    continue;
                /* Turned over: what was issued by the checkpoint before has
                 * arrived, or its bytes in flight keep growing (a queue
                 * without a bound never turns over; its rate is steady). */
                if (f->delivered < f->mark &&
                    !((double)(f->issued - f->delivered) > (1 + TLP_STEADY) * (double)f->mark_flight))
                    turned = 0;
                if (f->delivered <= f->half)
                    moved = 0;
                else
                    sum += window_rate(f, (double)(cp - prev_cp));
            }
            if (prev_cp > 0) {
                int steady = turned_prev && last_sum >= 0 && fabs(sum - last_sum) <= TLP_STEADY * sum;
                if (cp >= window_ps && ((moved && steady) || cp >= 64 * window_ps)) {
                    got = moved;
                    break;
                }
                last_sum = moved && turned_prev ? sum : -1;
            }
            turned_prev = turned;
            for (int i = 0; i < n->nfl; i++) {
                flow *f = &n->fl[i];
                f->half = f->delivered, f->half_ps = f->got_ps, f->mark = f->issued;
                f->mark_flight = f->issued - f->delivered;
            }
            prev_cp = cp;
            cp *= 2;
        }
        if (window_ps > 0)
            n->now = cp;
        int left = 0, stuck = -1, wake = 0;
        int64_t last_end = base;
        for (int i = 0; i < n->nfl; i++) {
            flow *f = &n->fl[i];
            if (f->total == 0)
                continue;
            if (f->done) {
                f->end_ps += base;
                f->total = 0;
                f->rem = 0;
                active--;
                if (f->end_ps > last_end)
                    last_end = f->end_ps;
                wake += f->released == 0 && has_succ(n, i);
            } else {
                left++;
                if (stuck < 0 && !got)
                    stuck = i;
            }
        }
        if (!left) {
            /* Every running flow ended in the packets: the ones waiting for
             * them start where the last of them ended. */
            if (!release_done(n, last_end, &active) && active > 0)
                return err_set(e, ERR_CHECK, "tlp: %d flows wait for flows that never end",
                               active);
            base = last_end;
            continue;
        }
        if (stuck >= 0) {
            const flow *f = &n->fl[stuck];
            return err_set(e, ERR_CHECK, "tlp: flow %d (%s -> %s) makes no progress after %.3f us "
                           "(%lld of %lld bytes): a credit or ordering deadlock",
                           stuck, topo_node_at(n->t, f->src)->name,
                           topo_node_at(n->t, f->dst)->name, (double)n->now / 1e6,
                           (long long)f->delivered, (long long)f->total);
        }
        int64_t wend = cp, half = prev_cp; /* the rates' span */
        /* Advance every flow at its rate over the window's second half until
         * the first of them ends. */
        double span = (double)(wend - half), dmin = INFINITY;
        for (int i = 0; i < n->nfl; i++) {
            flow *f = &n->fl[i];
            if (f->done || f->total == 0)
                continue;
            double r = window_rate(f, span);
            double d = (double)(f->total - f->delivered) / r;
            if (d < dmin)
                dmin = d;
        }
        /* Flows due within 2% after the first end with it, each at its own
         * projected time (their leaving is not felt by the others in that
         * interval: at most 2% of the phase). */
        int64_t step = (int64_t)ceil(dmin);
        /* A flow that ended inside the window starts its successors now, so
         * the others are not advanced past that point. */
        if (wake)
            step = 0;
        base += wend;
        for (int i = 0; i < n->nfl; i++) {
            flow *f = &n->fl[i];
            if (f->done || f->total == 0)
                continue;
            double r = window_rate(f, span);
            double d = (double)(f->total - f->delivered) / r;
            double rem = (double)(f->total - f->delivered) - r * (double)step;
            if (d <= dmin * (1 + TLP_END_TOGETHER) || rem < 0.5) {
                f->done = 1;
                f->end_ps = base + (int64_t)ceil(d);
                f->rem = 0;
                active--;
            } else {
                f->rem = rem;
            }
        }
        base += step;
        for (int i = 0; i < n->nfl; i++)
            if (n->fl[i].rem <= 0 && !n->fl[i].done)
                n->fl[i].done = 1;
        release_done(n, base, &active);
        /* Flows that ended stay done; the others restart in the next phase. */
        for (int i = 0; i < n->nfl; i++)
            if (!n->fl[i].done)
                n->fl[i].end_ps = 0;
    }
    return 0;
}
