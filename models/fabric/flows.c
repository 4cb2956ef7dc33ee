/* Named point-to-point patterns and their simulation. Each flow of a case is
 * an independent transfer (as when a benchmark drives each pair from its own
 * stream); writes are posted, reads non-posted (the reader is the
 * destination); write and read are a kernel's SM stores and loads, the copy
 * ops copy-engine transfers (flows.h says which engine). */
#include "models/fabric/flows.h"
#include "sim/cli.h"
#include "sim/sched.h"

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

typedef int expand_fn(const topo *t, const int *g, int ng, flows_case *out, int max);

/* An expander's answer when out of memory. */
enum { NO_MEMORY = -1000000 };

int flows_case_add(flows_case *c, int src, int dst)
{
    if (c->n == c->cap) {
        int cap = c->cap ? 2 * c->cap : 4;
        int *s = realloc(c->src, sizeof(int) * (size_t)cap);
        if (!s)
            return -1;
        c->src = s;
        int *d = realloc(c->dst, sizeof(int) * (size_t)cap);
        if (!d)
            return -1;
        c->dst = d;
        c->cap = cap;
    }
    c->src[c->n] = src;
    c->dst[c->n++] = dst;
    return 0;
}

void flows_case_free(flows_case *c)
{
    free(c->src);
    free(c->dst);
    c->src = c->dst = NULL;
    c->n = c->cap = 0;
}

void flows_cases_free(flows_case *c, int n)
{
    for (int i = 0; c && i < n; i++)
        flows_case_free(&c[i]);
    free(c);
}

/* Case k of out gets the flows (s[i], d[i]), i < m. */
static int put(flows_case *out, int k, const int *s, const int *d, int m)
{
    for (int i = 0; i < m; i++)
        if (flows_case_add(&out[k], s[i], d[i]))
            return NO_MEMORY;
    return 0;
}

static int ex_pair(const topo *t, const int *g, int ng, flows_case *out, int max)
{
    (void)t;
    int k = 0;
    for (int i = 0; i < ng; i++)
        for (int j = 0; j < ng; j++)
            if (i != j && k < max) {
                if (put(out, k++, &g[i], &g[j], 1))
                    return NO_MEMORY;
            }
    return k;
}

static int ex_bidir(const topo *t, const int *g, int ng, flows_case *out, int max)
{
    (void)t;
    int k = 0;
    for (int i = 0; i < ng; i++)
        for (int j = i + 1; j < ng; j++)
            if (k < max) {
                int a[2] = {g[i], g[j]}, b[2] = {g[j], g[i]};
                if (put(out, k++, a, b, 2))
                    return NO_MEMORY;
            }
    return k;
}

/* First GPU listed sends to the next two at once. */
static int ex_same_source(const topo *t, const int *g, int ng, flows_case *out, int max)
{
    (void)t;
    if (ng < 3 || max < 1)
        return -3;
    int a[2] = {g[0], g[0]}, b[2] = {g[1], g[2]};
    return put(out, 0, a, b, 2) ? NO_MEMORY : 1;
}

/* Two sources (g0, g1) to two different targets (g2, g3). */
static int ex_same_uplink(const topo *t, const int *g, int ng, flows_case *out, int max)
{
    (void)t;
    if (ng < 4 || max < 1)
        return -4;
    int a[2] = {g[0], g[1]}, b[2] = {g[2], g[3]};
    return put(out, 0, a, b, 2) ? NO_MEMORY : 1;
}

/* All but the last GPU write into the last. */
static int ex_fan_in(const topo *t, const int *g, int ng, flows_case *out, int max)
{
    (void)t;
    if (ng < 3 || max < 1)
        return -3;
    for (int i = 0; i + 1 < ng; i++)
        if (put(out, 0, &g[i], &g[ng - 1], 1))
            return NO_MEMORY;
    return 1;
}

static int ex_all_to_all(const topo *t, const int *g, int ng, flows_case *out, int max)
{
    (void)t;
    if (ng < 2 || max < 1)
        return -2;
    for (int i = 0; i < ng; i++)
        for (int j = 0; j < ng; j++)
            if (i != j && put(out, 0, &g[i], &g[j], 1))
                return NO_MEMORY;
    return 1;
}

static int ex_ring(const topo *t, const int *g, int ng, flows_case *out, int max)
{
    (void)t;
    if (ng < 2 || max < 1)
        return -2;
    for (int i = 0; i < ng; i++)
        if (put(out, 0, &g[i], &g[(i + 1) % ng], 1))
            return NO_MEMORY;
    return 1;
}

static int host_cases(const topo *t, const int *g, int ng, flows_case *out, int max, int dir)
{
    (void)t;
    int k = 0;
    for (int i = 0; i < ng && k < max; i++) {
        int host = FLOWS_HOST(topo_node_at(t, topo_gpu_node(t, g[i]))->numa < 0
                                  ? 0 : topo_node_at(t, topo_gpu_node(t, g[i]))->numa);
        int a[2] = {dir == 1 ? g[i] : host, g[i]}, b[2] = {dir == 1 ? host : g[i], host};
        if (put(out, k++, a, b, dir == 2 ? 2 : 1))
            return NO_MEMORY;
    }
    return k;
}

static int ex_h2d(const topo *t, const int *g, int ng, flows_case *o, int m) { return host_cases(t, g, ng, o, m, 0); }
static int ex_d2h(const topo *t, const int *g, int ng, flows_case *o, int m) { return host_cases(t, g, ng, o, m, 1); }
static int ex_h2d_d2h(const topo *t, const int *g, int ng, flows_case *o, int m) { return host_cases(t, g, ng, o, m, 2); }

static const struct {
    const char *name, *desc;
    expand_fn *expand;
    double bytes; /* < 0: use the caller's */
} patterns[] = {
    {"pair", "each ordered GPU pair alone (the bandwidth matrix)", ex_pair, -1},
    {"bidir", "each GPU pair in both directions at once", ex_bidir, -1},
    {"latency", "each ordered pair alone, a 4-byte flag (one-way latency; with op copy-write: "
                "back-to-back copies in one stream, time per copy)", ex_pair, 4},
    {"same-source", "GPU a to b and to c at once (--gpus a,b,c)", ex_same_source, -1},
    {"same-uplink", "a to c and b to d at once: two sources on one uplink (--gpus a,b,c,d)",
     ex_same_uplink, -1},
    {"fan-in", "every listed GPU but the last into the last", ex_fan_in, -1},
    {"all-to-all", "every ordered pair of the listed GPUs at once", ex_all_to_all, -1},
    {"ring", "each listed GPU to the next at once", ex_ring, -1},
    {"h2d", "pinned host memory to each GPU (its NUMA node)", ex_h2d, -1},
    {"d2h", "each GPU to pinned host memory", ex_d2h, -1},
    {"h2d-d2h", "both directions between each GPU and host memory at once", ex_h2d_d2h, -1},
};
enum { NPATTERNS = sizeof patterns / sizeof patterns[0] };

const char *flows_pattern_name(int i) { return i >= 0 && i < NPATTERNS ? patterns[i].name : NULL; }
const char *flows_pattern_desc(int i) { return i >= 0 && i < NPATTERNS ? patterns[i].desc : NULL; }

static const char *const op_names[FLOWS_NOPS] = {"write", "read", "copy", "copy-write",
                                                  "copy-read", "copy-staged"};

int flows_op_parse(const char *s, flows_op *op)
{
    for (int i = 0; i < FLOWS_NOPS; i++)
        if (!strcmp(s, op_names[i])) {
            *op = (flows_op)i;
            return 0;
        }
    return -1;
}

const char *flows_op_name(flows_op op) { return op_names[op]; }

int flows_issue_parse(const char *s, flows_issue *is)
{
    static const char *const names[] = {"streams", "torch"};
    for (int i = 0; i < 2; i++)
        if (!strcmp(s, names[i])) {
            *is = (flows_issue)i;
            return 0;
        }
    return -1;
}

int flows_issue_check(const flows_case *c, err *e)
{
    if (c->issue != FLOWS_ISSUE_TORCH)
        return c->orders ? err_set(e, ERR_USAGE, "--orders: the orderings of --issue torch; "
                                   "streams issue every flow at once") : 0;
    if (c->op != FLOWS_COPY && c->op != FLOWS_COPY_WRITE && c->op != FLOWS_COPY_READ)
        return err_set(e, ERR_USAGE, "--issue torch: PyTorch's copy_ is a copy-engine copy "
                       "(--op copy, copy-write or copy-read), not %s", op_names[c->op]);
    for (int i = 0; i < c->n; i++)
        if (c->src[i] < 0 || c->dst[i] < 0)
            return err_set(e, ERR_USAGE, "--issue torch: flow %d involves host memory; the "
                           "issue model covers copies between GPUs", i);
    return 0;
}

int flows_preds(const flows_case *c, int i, int pred[2])
{
    if (c->issue != FLOWS_ISSUE_TORCH)
        return 0;
    int orders = c->orders ? c->orders : FLOWS_ORDER_CE | FLOWS_ORDER_DST;
    /* copy-read is issued under the reader's stream: the destination's
     * current stream is the pair's own, so only the write forms wait on it. */
    int dst_wait = (orders & FLOWS_ORDER_DST) && c->op != FLOWS_COPY_READ;
    int np = 0, ce = -1, dst = -1;
    for (int j = i - 1; j >= 0 && ((orders & FLOWS_ORDER_CE && ce < 0) || (dst_wait && dst < 0));
         j--) {
        if (ce < 0 && (orders & FLOWS_ORDER_CE) && c->src[j] == c->src[i])
            ce = j;
        if (dst < 0 && dst_wait && c->dst[j] == c->dst[i])
            dst = j;
    }
    if (ce >= 0)
        pred[np++] = ce;
    if (dst >= 0 && dst != ce)
        pred[np++] = dst;
    return np;
}

int flows_case_repeat(flows_case *c, int rounds)
{
    int n = c->n;
    for (int r = 1; r < rounds; r++)
        for (int i = 0; i < n; i++)
            if (flows_case_add(c, c->src[i], c->dst[i]))
                return -1;
    return 0;
}

int flows_expand(const topo *t, const char *pattern, flows_op op, double bytes,
                 const int *gpus, int ngpus, flows_case **cases, int *ncases, err *e)
{
    int p = -1;
    for (int i = 0; i < NPATTERNS; i++)
        if (!strcmp(pattern, patterns[i].name))
            p = i;
    if (p < 0) {
        const char *names[NPATTERNS];
        for (int i = 0; i < NPATTERNS; i++)
            names[i] = patterns[i].name;
        return cli_unknown(e, ERR_USAGE, "--pattern", pattern, names, NPATTERNS);
    }
    int ng = ngpus ? ngpus : topo_ngpus(t);
    int *g = malloc(sizeof(int) * (size_t)(ng > 0 ? ng : 1));
    unsigned char *seen = calloc((size_t)topo_ngpus(t) + 1, 1);
    if (!g || !seen) {
        free(g);
        free(seen);
        return err_set(e, ERR_SYSTEM, "out of memory");
    }
    for (int i = 0; i < ng; i++) {
        g[i] = ngpus ? gpus[i] : i;
        int bad = g[i] < 0 || g[i] >= topo_ngpus(t), twice = !bad && seen[g[i]];
        if (bad || twice) { /* a pair of a GPU with itself would be a flow to nowhere */
            int gi = g[i];
            free(g);
            free(seen);
            return bad ? err_set(e, ERR_USAGE, "GPU %d: topology '%s' has %d GPUs", gi,
                                 topo_name(t), topo_ngpus(t))
                       : err_set(e, ERR_USAGE, "GPU %d is listed twice", gi);
        }
        seen[g[i]] = 1;
    }
    free(seen);
    /* pair and latency: one case per ordered pair; the others fewer */
    size_t max = (size_t)ng * (size_t)ng + 1;
    flows_case *c = max <= (size_t)INT32_MAX ? calloc(max, sizeof *c) : NULL;
    if (!c) {
        free(g);
        return err_set(e, ERR_SYSTEM, "out of memory");
    }
    int k = patterns[p].expand(t, g, ng, c, (int)max);
    free(g);
    if (k == NO_MEMORY) {
        flows_cases_free(c, (int)max);
        return err_set(e, ERR_SYSTEM, "out of memory");
    }
    if (k < 0) {
        free(c);
        return err_set(e, ERR_USAGE, "pattern '%s' needs at least %d GPUs, %d given", pattern,
                       -k, ng);
    }
    for (int i = 0; i < k; i++) {
        c[i].pattern = patterns[p].name;
        c[i].op = op;
        c[i].bytes = patterns[p].bytes >= 0 ? patterns[p].bytes : bytes;
    }
    *cases = c;
    *ncases = k;
    return 0;
}

static int parse_end(const topo *t, const char *s, size_t n, int *out, err *e)
{
    char buf[32];
    if (n == 0 || n >= sizeof buf)
        return err_set(e, ERR_USAGE, "--flows: bad endpoint '%.*s'", (int)n, s);
    memcpy(buf, s, n);
    buf[n] = 0;
    char *end;
    int host = buf[0] == 'h';
    long v = strtol(buf + host, &end, 10);
    if (*end || end == buf + host || v < 0)
        return err_set(e, ERR_USAGE, "--flows: bad endpoint '%s' (GPU index or hN)", buf);
    if (!host && v >= topo_ngpus(t))
        return err_set(e, ERR_USAGE, "--flows: GPU %ld: topology has %d GPUs", v, topo_ngpus(t));
    *out = host ? FLOWS_HOST((int)v) : (int)v;
    return 0;
}

int flows_parse(const topo *t, const char *spec, flows_op op, double bytes, flows_case *c,
                err *e)
{
    flows_case_free(c);
    memset(c, 0, sizeof *c);
    c->pattern = "custom";
    c->op = op;
    c->bytes = bytes;
    const char *p = spec;
    while (*p) {
        const char *comma = strchr(p, ','), *end = comma ? comma : p + strlen(p);
        const char *gt = memchr(p, '>', (size_t)(end - p));
        if (!gt)
            return err_set(e, ERR_USAGE, "--flows: '%.*s' is not SRC>DST", (int)(end - p), p);
        int src, dst;
        TRY(parse_end(t, p, (size_t)(gt - p), &src, e));
        TRY(parse_end(t, gt + 1, (size_t)(end - gt - 1), &dst, e));
        if (src == dst)
            return err_set(e, ERR_USAGE, "--flows: '%.*s' goes nowhere", (int)(end - p), p);
        if (flows_case_add(c, src, dst))
            return err_set(e, ERR_SYSTEM, "out of memory");
        p = comma ? comma + 1 : end;
    }
    if (!c->n)
        return err_set(e, ERR_USAGE, "--flows: empty");
    return 0;
}

static int node_of(const fabric *f, int ep, err *e)
{
    const topo *t = fabric_topo(f);
    if (ep >= 0)
        return topo_gpu_node(t, ep);
    int numa = -1 - ep;
    for (int i = 0; i < topo_nnodes(t); i++) {
        const topo_node *n = topo_node_at(t, i);
        if ((n->kind == TOPO_HOSTMEM) && n->numa == numa)
            return i;
    }
    for (int i = 0; i < topo_nnodes(t); i++) {
        const topo_node *n = topo_node_at(t, i);
        if (n->kind == TOPO_CPU && n->numa == numa)
            return i;
    }
    return err_set(e, ERR_USAGE, "no host memory on NUMA node %d in '%s'", numa, topo_name(t)),
           -1;
}

/* The engine op flow i of c runs as (before the PyTorch issue's rule). */
static fab_op flow_op(const fabric *f, const flows_case *c, int i)
{
    static const fab_op ops[FLOWS_NOPS] = {FAB_WRITE, FAB_READ, FAB_CE_READ, FAB_CE_WRITE,
                                           FAB_CE_READ, FAB_CE_WRITE};
    fab_op op = ops[c->op];
    if (c->op == FLOWS_COPY && c->dst[i] < 0)
        op = FAB_CE_WRITE;
    /* A peer copy between GPUs joined by NVLink: the source's engine pushes
     * (docs/model.md "Timed loops": on the H200 pair a 4 KiB copy loops at
     * 2.05 us, under a pull's setup and round trip, and both directions at
     * once slow a copy by 1.2% as they do writes, against 10.8% for reads). */
    if (c->op == FLOWS_COPY && c->src[i] >= 0 && c->dst[i] >= 0 &&
        topo_gpu_nvlinks(fabric_topo(f), c->src[i], c->dst[i]) > 0)
        op = FAB_CE_WRITE;
    return op;
}

double flows_staged_Bps(const topo_params *tp, double up_Bps, double down_Bps, int sharing)
{
    double C = tp->staged_chunk_bytes, setup = (double)tp->copy_setup_ps * 1e-12;
    if (!(C > 0) || !(up_Bps > 0) || !(down_Bps > 0) || tp->staged_buffers < 1)
        return 0;
    double a = setup + C / up_Bps, b = setup + C / down_Bps;
    /* One buffer's turn: filled, handed over, drained; the pool's P buffers
     * turn at once, shared by the process's staged copies in flight. */
    double cycle = a + b + (double)tp->staged_handover_ps * 1e-12;
    double period = cycle * (sharing > 1 ? sharing : 1) / tp->staged_buffers;
    period = fmax(period, fmax(a, b));
    return C / period;
}

/* The staged copies of c in flight at once: one pool of staging buffers
 * per process (flows without a predecessor; all of them start together). */
static int staged_in_flight(const flows_case *c)
{
    int n = 0, pred[2];
    for (int i = 0; i < c->n; i++)
        n += c->op == FLOWS_COPY_STAGED && c->src[i] >= 0 && c->dst[i] >= 0 &&
             !flows_preds(c, i, pred);
    return n;
}

/* Flow i of case c on fabric f: its engine flow's id in id[i]. */
static int add_flow(fabric *f, const flows_case *c, int i, int *id, err *e)
{
    int s = node_of(f, c->src[i], e), d = node_of(f, c->dst[i], e);
    if (s < 0 || d < 0)
        return e->code;
    if (c->op == FLOWS_COPY_STAGED && c->src[i] >= 0 && c->dst[i] >= 0) {
        /* A peer copy without P2P: the driver stages it through pinned
         * host memory (next to the destination), the source's copy
         * engine writing, the destination's reading, chunk by chunk:
         * one pipelined transfer, two engines' setups, at most the chunk
         * pipeline's rate (flows_staged_Bps). */
        int mem = fabric_hostmem_of(f, d);
        if (mem < 0)
            return err_set(e, ERR_USAGE, "copy-staged needs host memory in the topology");
        const topo_params *tp = topo_params_get(fabric_topo(f));
        sim_ps setup2 = 2 * tp->copy_setup_ps;
        double cap = fabric_disabled(f) & FAB_NO_STAGED_POOL ? 0
                     : flows_staged_Bps(tp, fabric_route_Bps(f, FAB_CE_WRITE, s, mem),
                                        fabric_route_Bps(f, FAB_CE_READ, mem, d),
                                        staged_in_flight(c));
        id[i] = fabric_xfer_staged_cap(f, FAB_CE_WRITE, s, mem, FAB_CE_READ, d, c->bytes, 1, 0,
                                       0, cap, setup2, i, c->pattern, e);
        return id[i] < 0 ? e->code : 0;
    }
    fab_op op = flow_op(f, c, i);
    /* PyTorch runs every peer copy on the source's stream: its engine pushes. */
    int pred[2], np = flows_preds(c, i, pred);
    if (c->issue == FLOWS_ISSUE_TORCH)
        op = FAB_CE_WRITE;
    /* A transfer starts with its engine: a copy engine's setup, or the
     * copy kernel's own start (kernel_base); a latency probe is a flag
     * between kernels already running (hwcheck's ping-pong). */
    const topo_params *tp = topo_params_get(fabric_topo(f));
    int probe = c->pattern && !strcmp(c->pattern, "latency");
    sim_ps setup = op == FAB_CE_READ || op == FAB_CE_WRITE
                       ? topo_copy_setup_ps(tp, c->src[i] < 0 || c->dst[i] < 0)
                   : probe                                  ? 0
                                                            : tp->kernel_base_ps;
    /* A copy queued behind another starts when it ends: the engine is running. */
    if (np)
        setup = 0;
    int init = fab_is_read(op) ? d : s, peer = fab_is_read(op) ? s : d;
    id[i] = fabric_xfer_group_blocks(f, op, init, &peer, 1, c->bytes, 1,
                                     fabric_cta_cap_to_Bps(f, op, c->blocks, peer, init, c->inflight_B, c->threads), c->blocks,
                                     setup,
                                     i, c->pattern, e);
    if (id[i] < 0)
        return e->code;
    for (int k = 0; k < np; k++)
        if (sched_dep(fabric_sched(f), id[pred[k]], id[i]) < 0)
            return err_set(e, ERR_SYSTEM, "out of memory");
    return 0;
}

/* A latency case of copy-engine pushes is p2pBandwidthLatencyTest's: small
 * copies queued back to back in one stream, timed per copy. A pushing
 * engine's copy is done when its last posted write has left, so the next
 * copy starts then and the flight latency is paid once for the stream (the
 * sample's 100 copies: lat / 100 per copy, left out): each copy costs its
 * engine's setup and its bytes. A pulling engine's copy waits for its
 * completions, so reads keep the round trip. */
static int stream_of_pushes(const flows_case *c)
{
    return c->pattern && !strcmp(c->pattern, "latency") && c->op == FLOWS_COPY_WRITE &&
           c->issue == FLOWS_ISSUE_STREAMS;
}

int flows_run(fabric *f, const flows_case *c, sim_ps *time_ps, err *e)
{
    TRY(flows_issue_check(c, e));
    fabric_reset(f);
    int *id = malloc(sizeof(int) * (size_t)(c->n > 0 ? c->n : 1)), rc = 0;
    if (!id)
        return err_set(e, ERR_SYSTEM, "out of memory");
    for (int i = 0; i < c->n && !rc; i++)
        rc = add_flow(f, c, i, id, e);
    if (!rc)
        rc = sched_run(fabric_sched(f), e);
    for (int i = 0; i < c->n && !rc; i++) {
        time_ps[i] = sched_end(fabric_sched(f), id[i]);
        if (stream_of_pushes(c)) {
            int s = node_of(f, c->src[i], e), d = node_of(f, c->dst[i], e);
            if (s < 0 || d < 0) {
                rc = e->code;
                break;
            }
            time_ps[i] -= fabric_lat_ps(f, FAB_CE_WRITE, s, d);
        }
    }
    free(id);
    return rc;
}

