/* Points: cases are built once from the measurement rows (flows of a case
 * must share op and size, as in `collsim flows`); a case contributes one
 * point per flow row with a measured time, or, when only the total was
 * published, one point for the whole case (the time its last flow ends).
 * Launch rows map onto launch_ps (`launch`), graph_node_ps (`graph-node`),
 * copy_issue_ps (`memcpy-host`), fence_sys_ps (`fence-sys`), NCCL's host
 * cost per call (`nccl-call-host`, `nccl-p2p-K-host`, each less the same
 * file's `launch-host`: NCCL's own work beyond the launch, so the machine's
 * launch cost cancels) and nccl_graph_call_ps (`nccl-graph-node`), these
 * three only in `hwcheck launch --nccl-only` files (or `hwcheck all`'s
 * nccl-host.csv, whose `part:` names that command); from `hwcheck launch
 * --post --peer` files two points of row differences (fence-ack, peer-load:
 * derive_peer below); other
 * launch rows (graph-launch, sync, ...) have no model parameter and are
 * left out. */
#include "validate/points.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "models/fabric/fabric.h"
#include "models/coll/coll.h"
#include "models/fabric/flows.h"
#include "models/tlp/tlp_flows.h"
#include "sim/cli.h"

typedef struct pcase {
    flows_case fc;
    /* hwcheck times a case as a loop: per iteration one host thread issues
     * every flow's operation (bw_case), so an iteration costs at least
     * nkernels launches and ncopies copy issues (docs/model.md, "Timed
     * loops"); 0, 0 for other sources and for the latency ping-pong. */
    int nkernels, ncopies;
    int iters;      /* the loop's timed iterations (hwcheck -n; its default 10) */
} pcase;

struct pts {
    pts_point *pt;
    size_t n, cap;
    pcase *cs;
    int ncs, capcs;
    unsigned ops;          /* bit per meas_op */
    int loop_copies;       /* a timed loop issues copies (copy_issue_ps applies) */
    int launch, graph_node, memcpy_host, fence_sys, fence_ack, host;
    int nccl_host, nccl_graph;
    unsigned group_ops;    /* bit per distinct call count of nccl-p2p-K rows (K <= 8) */
    unsigned char *used;   /* per link of the build topology */
    int nlinks;
    char *labels;          /* one block of label strings */
    size_t lab_len, lab_cap;
};

static pts_point *add_point(pts *p, err *e)
{
    if (p->n == p->cap) {
        size_t cap = p->cap ? 2 * p->cap : 64;
        pts_point *x = realloc(p->pt, cap * sizeof *x);
        if (!x)
            return err_set(e, ERR_SYSTEM, "out of memory"), NULL;
        p->pt = x;
        p->cap = cap;
    }
    pts_point *x = &p->pt[p->n++];
    memset(x, 0, sizeof *x);
    return x;
}

/* Labels are stored as offsets until the end (the block may move). */
static size_t add_label(pts *p, const char *s, err *e)
{
    size_t n = strlen(s) + 1;
    if (p->lab_len + n > p->lab_cap) {
        size_t cap = p->lab_cap ? 2 * p->lab_cap : 4096;
        while (cap < p->lab_len + n)
            cap *= 2;
        char *b = realloc(p->labels, cap);
        if (!b)
            return err_set(e, ERR_SYSTEM, "out of memory"), (size_t)-1;
        p->labels = b;
        p->lab_cap = cap;
    }
    memcpy(p->labels + p->lab_len, s, n);
    p->lab_len += n;
    return p->lab_len - n;
}

static int endpoint(const topo *t, const meas_set *m, const meas_xfer *x, int ep, int *out,
                    err *e)
{
    char buf[16];
    if (MEAS_IS_HOST(ep)) {
        int numa = MEAS_HOST_NODE(ep);
        for (int i = 0; i < topo_nnodes(t); i++)
            if (topo_node_at(t, i)->kind == TOPO_CPU && topo_node_at(t, i)->numa == numa) {
                *out = FLOWS_HOST(numa);
                return 0;
            }
        return err_at(e, meas_name(m), x->line, "topology '%s' has no CPU on NUMA node %d",
                      topo_name(t), numa);
    }
    if (ep >= topo_ngpus(t))
        return err_at(e, meas_name(m), x->line, "GPU %s is not in topology '%s' (%d GPUs)",
                      meas_ep_name(ep, buf), topo_name(t), topo_ngpus(t));
    *out = ep;
    return 0;
}

/* Node id of a flows endpoint, for route marking. */
static int node_of(const topo *t, int ep)
{
    if (ep >= 0)
        return topo_gpu_node(t, ep);
    for (int i = 0; i < topo_nnodes(t); i++)
        if (topo_node_at(t, i)->kind == TOPO_CPU && topo_node_at(t, i)->numa == -1 - ep)
            return i;
    return -1;
}

static void mark_route(pts *p, const topo *t, int a, int b)
{
    int na = node_of(t, a), nb = node_of(t, b);
    const int *links;
    const int8_t *dirs;
    if (na < 0 || nb < 0)
        return;
    /* Host endpoints route from the socket's memory when there is one. */
    int h = topo_route(t, na, nb, &links, &dirs);
    for (int i = 0; i < h; i++)
        p->used[links[i]] = 1;
}

int pts_filter_parse(const char *patterns, const char *sizes, pts_filter *f, err *e)
{
    memset(f, 0, sizeof *f);
    f->hi = UINT64_MAX;
    char buf[1024];
    if (patterns) {
        TRY(cli_check_list("--patterns", patterns, sizeof buf - 1, e));
        snprintf(buf, sizeof buf, "%s", patterns);
        for (char *q = strtok(buf, ","); q; q = strtok(NULL, ",")) {
            if (f->npatterns == PTS_MAX_SEL || strlen(q) >= sizeof f->patterns[0])
                return err_set(e, ERR_USAGE, "--patterns: too many or too long ('%s')", q);
            const char *names[64];
            int n = 0, known = 0;
            for (; n < 63 && flows_pattern_name(n); n++)
                known |= !strcmp(q, names[n] = flows_pattern_name(n));
            names[n++] = "custom";
            if (!known && strcmp(q, "custom"))
                return cli_unknown(e, ERR_USAGE, "--patterns", q, names, n);
            snprintf(f->patterns[f->npatterns++], sizeof f->patterns[0], "%s", q);
        }
    }
    if (sizes) {
        snprintf(buf, sizeof buf, "%s", sizes);
        char *colon = strchr(buf, ':');
        if (colon) {
            *colon = 0;
            TRY(cli_parse_size("--sizes", buf, &f->lo, e));
            TRY(cli_parse_size("--sizes", colon + 1, &f->hi, e));
            if (f->lo > f->hi)
                return err_set(e, ERR_USAGE, "--sizes: %s is an empty range", sizes);
        } else {
            for (char *q = strtok(buf, ","); q; q = strtok(NULL, ",")) {
                if (f->nsizes == PTS_MAX_SEL)
                    return err_set(e, ERR_USAGE, "--sizes: more than %d sizes", PTS_MAX_SEL);
                TRY(cli_parse_size("--sizes", q, &f->sizes[f->nsizes++], e));
            }
        }
    }
    return 0;
}

/* Does f keep a case of this pattern and per-flow size? */
static int selected(const pts_filter *f, const char *pattern, uint64_t bytes)
{
    if (!f)
        return 1;
    int ok = f->npatterns == 0;
    for (int i = 0; i < f->npatterns && !ok; i++)
        ok = !strcmp(f->patterns[i], pattern);
    if (!ok)
        return 0;
    if (f->nsizes == 0)
        return bytes >= f->lo && bytes <= f->hi;
    for (int i = 0; i < f->nsizes; i++)
        if (f->sizes[i] == bytes)
            return 1;
    return 0;
}

/* A timed loop's iterations: hwcheck's -n N (--iters N, --iters=N) in the
 * file's `part` line (a part of hwcheck all) or else its command; 10, the
 * p2p, flows and host modes' default, when neither gives it. */
static int loop_iters(const meas_set *m)
{
    const char *lines[2] = {meas_meta(m, "part"), meas_meta(m, "command")};
    for (int k = 0; k < 2; k++) {
        const char *c = lines[k];
        for (const char *q = c; q && *q; q++) {
            if (q != c && q[-1] != ' ')
                continue;
            const char *v = !strncmp(q, "-n ", 3)        ? q + 3
                            : !strncmp(q, "--iters ", 8) ? q + 8
                            : !strncmp(q, "--iters=", 8) ? q + 8
                                                         : NULL;
            if (v && atoi(v) > 0)
                return atoi(v);
        }
    }
    return 10;
}

static int build_set(pts *p, const meas_set *m, const topo *t, const pts_filter *f, err *e)
{
    size_t n = meas_nxfer(m);
    static const flows_op ops[MEAS_NOPS] = {FLOWS_WRITE, FLOWS_READ, FLOWS_COPY,
                                            FLOWS_COPY_WRITE, FLOWS_COPY_READ, FLOWS_COPY_STAGED};
    for (size_t i = 0; i < n;) {
        const meas_xfer *first = meas_xfer_at(m, i);
        size_t j = i;
        while (j < n && meas_xfer_at(m, j)->case_id == first->case_id)
            j++;
        /* The case's per-flow size: its first flow row's bytes. */
        uint64_t flow_bytes = first->bytes;
        for (size_t k = i; k < j; k++)
            if (meas_xfer_at(m, k)->flow >= 0) {
                flow_bytes = meas_xfer_at(m, k)->bytes;
                break;
            }
        if (!selected(f, first->pattern, flow_bytes)) {
            i = j;
            continue;
        }
        if (p->ncs == p->capcs) {
            int cap = p->capcs ? 2 * p->capcs : 32;
            pcase *c = realloc(p->cs, (size_t)cap * sizeof *c);
            if (!c)
                return err_set(e, ERR_SYSTEM, "out of memory");
            p->cs = c;
            p->capcs = cap;
        }
        int ci = p->ncs++;
        flows_case *fc = &p->cs[ci].fc;
        memset(&p->cs[ci], 0, sizeof p->cs[ci]);
        const char *cmd = meas_meta(m, "command");
        int loop = cmd && !strncmp(cmd, "hwcheck ", 8) && strcmp(first->pattern, "latency");
        fc->pattern = first->pattern;
        p->cs[ci].iters = loop ? loop_iters(m) : 0;
        /* hwcheck records its copy kernels' grid: "36 x 512 threads ..."; the
         * default (one block per SM) is taken as enough for the links. */
        const char *kb = meas_meta(m, "kernel_blocks");
        if (kb && !strstr(kb, "per SM"))
            fc->blocks = atoi(kb) > 0 ? atoi(kb) : 0;
        /* "N x T threads", "# kernel_unroll: U loads ...": each block keeps
         * T x U x 16 bytes in flight (no such lines: the plain copy). */
        const char *by = kb ? strstr(kb, " x ") : NULL, *ku = meas_meta(m, "kernel_unroll");
        int threads = by && atoi(by + 3) > 0 ? atoi(by + 3) : 512;
        int unroll = ku && atoi(ku) > 0 ? atoi(ku) : 1;
        fc->inflight_B = (double)threads * unroll * 16;
        fc->threads = threads;
        const meas_xfer *agg = NULL;
        int timed = 0, have_op = 0;
        for (size_t k = i; k < j; k++) {
            const meas_xfer *x = meas_xfer_at(m, k);
            if (x->flow < 0) {
                agg = x;
                continue;
            }
            if (!have_op) {
                fc->op = ops[x->op];
                fc->bytes = (double)x->bytes;
                have_op = 1;
                p->ops |= 1u << x->op;
            } else if (ops[x->op] != fc->op || (double)x->bytes != fc->bytes) {
                return err_at(e, meas_name(m), x->line,
                              "flows of case %d differ in op or bytes (the model runs a case's "
                              "flows with one op and size)", x->case_id);
            }
            int src, dst;
            TRY(endpoint(t, m, x, x->src, &src, e));
            TRY(endpoint(t, m, x, x->dst, &dst, e));
            if (flows_case_add(fc, src, dst))
                return err_set(e, ERR_SYSTEM, "out of memory");
            p->host |= MEAS_IS_HOST(x->src) || MEAS_IS_HOST(x->dst);
            if (loop && (x->op == MEAS_WRITE || x->op == MEAS_READ))
                p->cs[ci].nkernels++;
            else if (loop)
                p->cs[ci].ncopies++;
            mark_route(p, t, src, dst);
            timed += !isnan(x->time_us);
        }
        p->loop_copies |= p->cs[ci].ncopies > 0;
        char lab[96], s1[16], s2[16];
        for (size_t k = i; k < j; k++) {
            const meas_xfer *x = meas_xfer_at(m, k);
            double t_us = x->time_us;
            if (x->flow < 0 ? timed > 0 : isnan(t_us))
                continue;
            if (isnan(t_us) && !isnan(x->bw_GBps) && x->bw_GBps > 0)
                t_us = (double)x->bytes / (x->bw_GBps * 1e3);
            if (isnan(t_us))
                continue;
            pts_point *pt = add_point(p, e);
            if (!pt)
                return ERR_SYSTEM;
            *pt = (pts_point){m, x->line, ci, x->flow < 0 ? -1 : (int)(k - i) - (agg && agg < x),
                              t_us, NULL, 0, 1};
            if (fc->n == 1 || x->flow >= 0)
                snprintf(lab, sizeof lab, "%s %s %s>%s", x->pattern, meas_op_name(x->op),
                         meas_ep_name(x->flow < 0 ? meas_xfer_at(m, i + (agg == first))->src
                                                  : x->src, s1),
                         meas_ep_name(x->flow < 0 ? meas_xfer_at(m, i + (agg == first))->dst
                                                  : x->dst, s2));
            else
                snprintf(lab, sizeof lab, "%s %s (%d flows)", x->pattern, meas_op_name(x->op),
                         fc->n);
            size_t off = add_label(p, lab, e);
            if (off == (size_t)-1)
                return ERR_SYSTEM;
            pt->label = (const char *)(uintptr_t)off;
        }
        i = j;
    }
    return 0;
}

/* The launch row of m named what; NULL when there is none. */
static const meas_launch *launch_row(const meas_set *m, const char *what)
{
    for (size_t i = 0; i < meas_nlaunch(m); i++)
        if (!strcmp(meas_launch_at(m, i)->what, what))
            return meas_launch_at(m, i);
    return NULL;
}

/* Which parameter a launch row measures (PTS_*), -1 for none; *ops = the
 * send/receive calls of an nccl-p2p-K-host row (2K) per communicator, *comms
 * the communicators of an nccl-Ccomm-p2p-K-host row (C; else 1). */
static int launch_kind(const char *what, int *ops, int *comms)
{
    static const struct {
        const char *what;
        int kind;
    } rows[] = {{"launch", PTS_LAUNCH},
                {"graph-node", PTS_GRAPH_NODE},
                {"memcpy-host", PTS_COPY_ISSUE},   /* the host time of one copy's issue */
                {"fence-sys", PTS_FENCE_SYS},      /* a barrier signal's fence */
                {"nccl-call-host", PTS_NCCL_HOST},
                {"nccl-graph-node", PTS_NCCL_GRAPH}};
    *ops = 0;
    *comms = 1;
    for (size_t i = 0; i < sizeof rows / sizeof rows[0]; i++)
        if (!strcmp(what, rows[i].what))
            return rows[i].kind;
    int k = 0, c = 0, end = 0;
    if (sscanf(what, "nccl-p2p-%d-host%n", &k, &end) == 1 && what[end] == 0 && k >= 1 &&
        k <= 8) {
        *ops = 2 * k;
        return PTS_NCCL_GROUP;
    }
    end = 0;
    if (sscanf(what, "nccl-%dcomm-p2p-%d-host%n", &c, &k, &end) == 2 && what[end] == 0 &&
        c >= 2 && c <= 8 && k >= 1 && k <= 8) {
        *ops = 2 * k;
        *comms = c;
        return PTS_NCCL_GROUP;
    }
    return -1;
}

/* The two points of `hwcheck launch --post --peer` (GPU 0's one block
 * against GPU 1's memory, per slice):
 *   fence-ack = (post-peer-4096-fence - post-peer-4096)
 *             - (post-dev-4096-fence - post-dev-4096)
 * what the fence waits after 4 KiB of stores into the peer beyond what it
 * waits after the same stores into its own memory (its own cost, the
 * device stores' drain, the loop cancel), and
 *   peer-load = recv-peer-16384-tail - recv-peer-16384
 * one thread's load of an already-set flag from the peer before the
 * block's loads of the slice (the block waits for it at its barrier): a
 * remote load's round trip in program order. A point needs all its rows. */
static int derive_peer(pts *p, const meas_set *m, err *e)
{
    static const struct {
        int kind;
        const char *label, *rows[4]; /* value = (r0 - r1) - (r2 - r3); NULL: 0 */
    } der[] = {
        {PTS_FENCE_ACK, "fence-ack (post-peer-4096 fence - none less post-dev-4096's)",
         {"post-peer-4096-fence", "post-peer-4096", "post-dev-4096-fence", "post-dev-4096"}},
        {PTS_PEER_LOAD, "peer-load (recv-peer-16384-tail - recv-peer-16384)",
         {"recv-peer-16384-tail", "recv-peer-16384", NULL, NULL}},
    };
    for (size_t k = 0; k < sizeof der / sizeof der[0]; k++) {
        const meas_launch *r[4] = {NULL, NULL, NULL, NULL};
        int have = 1;
        for (int j = 0; j < 4; j++)
            if (der[k].rows[j] && !(r[j] = launch_row(m, der[k].rows[j])))
                have = 0;
        if (!have)
            continue;
        double v = r[0]->time_us - r[1]->time_us;
        if (r[2])
            v -= r[2]->time_us - r[3]->time_us;
        pts_point *pt = add_point(p, e);
        if (!pt)
            return ERR_SYSTEM;
        size_t off = add_label(p, der[k].label, e);
        if (off == (size_t)-1)
            return ERR_SYSTEM;
        *pt = (pts_point){m, r[0]->line, -1, der[k].kind, v, (const char *)(uintptr_t)off, 0, 1};
        p->fence_ack |= der[k].kind == PTS_FENCE_ACK;
    }
    return 0;
}

static int build_launch(pts *p, const meas_set *m, err *e)
{
    const meas_launch *base = launch_row(m, "launch-host");
    /* NCCL's host-cost rows count only from `hwcheck launch --nccl-only`,
     * whose rounds interleave them with launch-host (every launch file
     * carries such rows, timed once each). */
    const char *cmd = meas_meta(m, "command"), *part = meas_meta(m, "part");
    /* `hwcheck all` records its own command and the part's equivalent one. */
    int nccl_only = (cmd && strstr(cmd, "--nccl-only")) || (part && strstr(part, "--nccl-only"));
    for (size_t i = 0; i < meas_nlaunch(m); i++) {
        const meas_launch *l = meas_launch_at(m, i);
        int ops, comms, kind = launch_kind(l->what, &ops, &comms);
        int relative = kind == PTS_NCCL_HOST || kind == PTS_NCCL_GROUP;
        int nccl = relative || kind == PTS_NCCL_GRAPH;
        if (kind < 0 || (relative && !base) || (nccl && !nccl_only))
            continue;
        pts_point *pt = add_point(p, e);
        if (!pt)
            return ERR_SYSTEM;
        char lab[80];
        if (comms > 1)
            snprintf(lab, sizeof lab, "%s - %d x launch-host", l->what, comms);
        else
            snprintf(lab, sizeof lab, relative ? "%s - launch-host" : "%s", l->what);
        size_t off = add_label(p, lab, e);
        if (off == (size_t)-1)
            return ERR_SYSTEM;
        *pt = (pts_point){m, l->line, -1, kind,
                          relative ? l->time_us - comms * base->time_us : l->time_us,
                          (const char *)(uintptr_t)off, ops, comms};
        p->launch |= kind == PTS_LAUNCH;
        p->graph_node |= kind == PTS_GRAPH_NODE;
        p->memcpy_host |= kind == PTS_COPY_ISSUE;
        p->fence_sys |= kind == PTS_FENCE_SYS;
        p->nccl_host |= kind == PTS_NCCL_HOST;
        p->nccl_graph |= kind == PTS_NCCL_GRAPH;
        if (kind == PTS_NCCL_GROUP)
            p->group_ops |= 1u << (ops / 2);
    }
    return derive_peer(p, m, e);
}

int pts_build(meas_set *const *sets, int n, const topo *t, const pts_filter *f, pts **out,
              err *e)
{
    *out = NULL;
    pts *p = calloc(1, sizeof *p);
    if (!p || !(p->used = calloc((size_t)topo_nlinks(t) + 1, 1))) {
        free(p);
        return err_set(e, ERR_SYSTEM, "out of memory");
    }
    p->nlinks = topo_nlinks(t);
    int rc = 0;
    for (int i = 0; i < n && !rc; i++) {
        meas_kind k = meas_kind_of(sets[i]);
        if (k == MEAS_P2P || k == MEAS_FLOWS || k == MEAS_HOST)
            rc = build_set(p, sets[i], t, f, e);
        else if (k == MEAS_LAUNCH)
            rc = build_launch(p, sets[i], e);
    }
    if (rc) {
        pts_free(p);
        return rc;
    }
    for (size_t i = 0; i < p->n; i++)
        p->pt[i].label = p->labels + (uintptr_t)p->pt[i].label;
    *out = p;
    return 0;
}

void pts_free(pts *p)
{
    if (!p)
        return;
    free(p->pt);
    for (int i = 0; p->cs && i < p->ncs; i++)
        flows_case_free(&p->cs[i].fc);
    free(p->cs);
    free(p->used);
    free(p->labels);
    free(p);
}

size_t pts_count(const pts *p) { return p->n; }
const pts_point *pts_at(const pts *p, size_t i)
{
    ASSERTF(i < p->n, "i=%zu n=%zu", i, p->n);
    return &p->pt[i];
}
int pts_has_op(const pts *p, meas_op op) { return (p->ops >> op) & 1; }
int pts_has_launch(const pts *p, const char *what)
{
    return !strcmp(what, "launch")            ? p->launch
           : !strcmp(what, "graph-node")      ? p->graph_node
           : !strcmp(what, "memcpy-host")     ? p->memcpy_host
           : !strcmp(what, "fence-sys")       ? p->fence_sys
           : !strcmp(what, "fence-ack")       ? p->fence_ack
           : !strcmp(what, "nccl-call-host")  ? p->nccl_host
           : !strcmp(what, "nccl-graph-node") ? p->nccl_graph
           : !strcmp(what, "nccl-p2p")        ? p->group_ops != 0
                                              : 0;
}
int pts_group_ops_vary(const pts *p) { return (p->group_ops & (p->group_ops - 1)) != 0; }
int pts_has_host(const pts *p) { return p->host; }
int pts_has_loop_copies(const pts *p) { return p->loop_copies; }
int pts_link_used(const pts *p, int link) { return link >= 0 && link < p->nlinks && p->used[link]; }

double pts_loop_iter_ps(const topo_params *tp, int kernels, int nf, int i, int n,
                        int64_t t_ps)
{
    /* Host clock from the start of the first start event's record: every
     * call's work reaches its stream as the call returns. */
    double r = (double)tp->event_record_ps, t = (double)t_ps;
    double issue = kernels ? (double)(tp->launch_ps + tp->loop_issue_ps) : (double)tp->copy_issue_ps;
    double per_iter = nf * issue, upto = (i + 1) * issue;
    double start = (i + 1) * r;                    /* flow i's start event */
    double first = nf * r + upto;                  /* its first operation issued */
    /* back to back from the first (device-bound), or the last one issued
     * (host-bound) runs alone after its issue */
    double last_end = first + n * t;
    double last = first + (n - 1) * per_iter + t;
    last_end = last > last_end ? last : last_end;
    double stop = nf * r + n * per_iter + (i + 1) * r;   /* its end event */
    return ((stop > last_end ? stop : last_end) - start) / n;
}

/* Every point on the flow engine (window_ps < 0) or the transaction-level
 * one. */
static int predict(const pts *p, const topo *t, int64_t window_ps, double *pred_us, err *e)
{
    fabric *f = NULL;
    tlp_net *tn = NULL;
    int most = 1;
    for (int i = 0; i < p->ncs; i++)
        most = p->cs[i].fc.n > most ? p->cs[i].fc.n : most;
    sim_ps *times = malloc((size_t)most * sizeof *times);
    int rc = 0, last = -1;
    if (!times)
        return err_set(e, ERR_SYSTEM, "out of memory");
    for (size_t i = 0; i < p->n && !rc; i++) {
        const pts_point *x = &p->pt[i];
        if (x->case_no < 0 && (x->flow == PTS_FENCE_ACK || x->flow == PTS_PEER_LOAD)) {
            /* GPU 0's block against GPU 1's memory (derive_peer). */
            if (topo_ngpus(t) < 2) {
                rc = err_at(e, meas_name(x->set), x->line,
                            "a peer row needs two GPUs; the topology has %d", topo_ngpus(t));
                break;
            }
            if (!f && !(f = fabric_new(t, e))) {
                rc = e && e->code ? e->code : ERR_SYSTEM;
                break;
            }
            int g0 = topo_gpu_node(t, 0), g1 = topo_gpu_node(t, 1);
            sim_ps v = x->flow == PTS_PEER_LOAD
                           ? fabric_lat_ps(f, FAB_READ, g1, g0)
                           : coll_fence_ack_ps(topo_params_get(t),
                                               fabric_lat_ps(f, FAB_WRITE, g0, g1));
            pred_us[i] = (double)v * 1e-6;
            continue;
        }
        if (x->case_no < 0) {
            const topo_params *tp = topo_params_get(t);
            const sim_ps by_kind[PTS_NKINDS] = {
                tp->launch_ps, tp->graph_node_ps, tp->copy_issue_ps, tp->fence_sys_ps,
                tp->nccl_host_ps, tp->nccl_group_ps + x->ops * tp->nccl_p2p_op_ps,
                topo_nccl_issue_ps(tp, 1, 1, 0)};
            static const char *const key[PTS_NKINDS] = {
                "launch_us", "graph_node_us", "copy_issue_us", "fence_sys_us", "nccl_host_us",
                "nccl_group_us", "nccl_graph_call_us"};
            /* A group over C communicators: each one's group work in turn. */
            sim_ps v = by_kind[x->flow] * (x->flow == PTS_NCCL_GROUP ? x->comms : 1);
            if (v <= 0) {   /* 0 is "not known" (topo.h): no prediction to compare */
                rc = err_at(e, meas_name(x->set), x->line,
                            "the topology does not know %s (0), which this row measures: fit "
                            "it too (--fit ...,%s) or leave the row out",
                            key[x->flow], key[x->flow]);
                break;
            }
            pred_us[i] = (double)v * 1e-6;
            continue;
        }
        if (window_ps < 0 ? !f && !(f = fabric_new(t, e)) : !tn && !(tn = tlp_new(t, e))) {
            rc = e && e->code ? e->code : ERR_SYSTEM;
            break;
        }
        const flows_case *fc = &p->cs[x->case_no].fc;
        if (x->case_no != last) {   /* points of a case are consecutive */
            if ((rc = window_ps < 0 ? flows_run(f, fc, times, e)
                                    : tlp_flows_run(tn, fc, window_ps, times, e)))
                break;
            last = x->case_no;
        }
        const pcase *pc = &p->cs[x->case_no];
        double per = 0;
        for (int k = 0; k < fc->n; k++)
            if (x->flow < 0 || k == x->flow) {
                double v = pc->iters > 0
                               ? pts_loop_iter_ps(topo_params_get(t), pc->nkernels > 0, fc->n, k,
                                                  pc->iters, times[k])
                               : (double)times[k];
                per = v > per ? v : per;
            }
        pred_us[i] = per * 1e-6;
    }
    fabric_free(f);
    tlp_free(tn);
    free(times);
    return rc;
}

int pts_predict(const pts *p, const topo *t, double *pred_us, err *e)
{
    return predict(p, t, -1, pred_us, e);
}

int pts_predict_tlp(const pts *p, const topo *t, int64_t window_ps, double *pred_us, err *e)
{
    return predict(p, t, window_ps < 0 ? 0 : window_ps, pred_us, e);
}
