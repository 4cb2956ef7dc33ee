/* Named point-to-point patterns and their simulation. Each flow of a case is
 * an independent transfer (as when a benchmark drives each pair from its own
 * stream); writes are posted, reads non-posted (the reader is the
 * destination); write and read are a kernel's SM stores and loads, the copy
 * ops copy-engine transfers (flows.h says which engine). */
#include "models/fabric/flows.h"
#include "sim/cli.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

typedef int expand_fn(const topo *t, const int *g, int ng, flows_case *out, int max);

/* An expander's answer when a case would hold more than FLOWS_MAX flows. */
enum { TOO_MANY = -1000000 };

static int ex_pair(const topo *t, const int *g, int ng, flows_case *out, int max)
{
    (void)t;
    int k = 0;
    for (int i = 0; i < ng; i++)
        for (int j = 0; j < ng; j++)
            if (i != j && k < max) {
                out[k].n = 1;
                out[k].src[0] = g[i];
                out[k++].dst[0] = g[j];
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
                out[k].n = 2;
                out[k].src[0] = g[i];
                out[k].dst[0] = g[j];
                out[k].src[1] = g[j];
                out[k++].dst[1] = g[i];
            }
    return k;
}

/* First GPU listed sends to the next two at once. */
static int ex_same_source(const topo *t, const int *g, int ng, flows_case *out, int max)
{
    (void)t;
    if (ng < 3 || max < 1)
        return -3;
    out[0].n = 2;
    out[0].src[0] = out[0].src[1] = g[0];
    out[0].dst[0] = g[1];
    out[0].dst[1] = g[2];
    return 1;
}

/* Two sources (g0, g1) to two different targets (g2, g3). */
static int ex_same_uplink(const topo *t, const int *g, int ng, flows_case *out, int max)
{
    (void)t;
    if (ng < 4 || max < 1)
        return -4;
    out[0].n = 2;
    out[0].src[0] = g[0];
    out[0].dst[0] = g[2];
    out[0].src[1] = g[1];
    out[0].dst[1] = g[3];
    return 1;
}

/* All but the last GPU write into the last. */
static int ex_fan_in(const topo *t, const int *g, int ng, flows_case *out, int max)
{
    (void)t;
    if (ng < 3 || max < 1)
        return -3;
    if (ng - 1 > FLOWS_MAX)
        return TOO_MANY;
    out[0].n = 0;
    for (int i = 0; i + 1 < ng; i++) {
        out[0].src[out[0].n] = g[i];
        out[0].dst[out[0].n++] = g[ng - 1];
    }
    return 1;
}

static int ex_all_to_all(const topo *t, const int *g, int ng, flows_case *out, int max)
{
    (void)t;
    if (ng < 2 || max < 1)
        return -2;
    if (ng * (ng - 1) > FLOWS_MAX)
        return TOO_MANY;
    out[0].n = 0;
    for (int i = 0; i < ng; i++)
        for (int j = 0; j < ng; j++)
            if (i != j) {
                out[0].src[out[0].n] = g[i];
                out[0].dst[out[0].n++] = g[j];
            }
    return 1;
}

static int ex_ring(const topo *t, const int *g, int ng, flows_case *out, int max)
{
    (void)t;
    if (ng < 2 || max < 1)
        return -2;
    if (ng > FLOWS_MAX)
        return TOO_MANY;
    out[0].n = 0;
    for (int i = 0; i < ng; i++) {
        out[0].src[i] = g[i];
        out[0].dst[i] = g[(i + 1) % ng];
        out[0].n++;
    }
    return 1;
}

static int host_cases(const topo *t, const int *g, int ng, flows_case *out, int max, int dir)
{
    (void)t;
    int k = 0;
    for (int i = 0; i < ng && k < max; i++) {
        int host = FLOWS_HOST(topo_node_at(t, topo_gpu_node(t, g[i]))->numa < 0
                                  ? 0 : topo_node_at(t, topo_gpu_node(t, g[i]))->numa);
        out[k].n = dir == 2 ? 2 : 1;
        out[k].src[0] = dir == 1 ? g[i] : host;
        out[k].dst[0] = dir == 1 ? host : g[i];
        if (dir == 2) {
            out[k].src[1] = g[i];
            out[k].dst[1] = host;
        }
        k++;
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
    {"latency", "each ordered pair alone, a 4-byte flag (one-way latency)", ex_pair, 4},
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
    if (ng > 256)
        return err_set(e, ERR_USAGE, "pattern over %d GPUs: at most 256", ng);
    int g[256];
    for (int i = 0; i < ng; i++) {
        g[i] = ngpus ? gpus[i] : i;
        if (g[i] < 0 || g[i] >= topo_ngpus(t))
            return err_set(e, ERR_USAGE, "GPU %d: topology '%s' has %d GPUs", g[i],
                           topo_name(t), topo_ngpus(t));
        for (int j = 0; j < i; j++)
            if (g[j] == g[i])   /* a pair of it with itself would be a flow to nowhere */
                return err_set(e, ERR_USAGE, "GPU %d is listed twice", g[i]);
    }
    int max = ng * ng + 1;
    flows_case *c = calloc((size_t)max, sizeof *c);
    if (!c)
        return err_set(e, ERR_SYSTEM, "out of memory");
    int k = patterns[p].expand(t, g, ng, c, max);
    if (k == TOO_MANY) {
        free(c);
        return err_set(e, ERR_INPUT, "pattern '%s' over %d GPUs needs more than %d concurrent "
                       "flows, the most one case holds: list fewer (--gpus)", pattern, ng,
                       FLOWS_MAX);
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
        if (c->n >= FLOWS_MAX)
            return err_set(e, ERR_USAGE, "--flows: at most %d flows", FLOWS_MAX);
        TRY(parse_end(t, p, (size_t)(gt - p), &c->src[c->n], e));
        TRY(parse_end(t, gt + 1, (size_t)(end - gt - 1), &c->dst[c->n], e));
        if (c->src[c->n] == c->dst[c->n])
            return err_set(e, ERR_USAGE, "--flows: '%.*s' goes nowhere", (int)(end - p), p);
        c->n++;
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

int flows_run(fabric *f, const flows_case *c, sim_ps *time_ps, err *e)
{
    fabric_reset(f);
    int id[FLOWS_MAX];
    for (int i = 0; i < c->n; i++) {
        int s = node_of(f, c->src[i], e), d = node_of(f, c->dst[i], e);
        if (s < 0 || d < 0)
            return e->code;
        static const fab_op ops[FLOWS_NOPS] = {FAB_WRITE, FAB_READ, FAB_CE_READ, FAB_CE_WRITE,
                                               FAB_CE_READ, FAB_CE_WRITE};
        if (c->op == FLOWS_COPY_STAGED && c->src[i] >= 0 && c->dst[i] >= 0) {
            /* A peer copy without P2P: the driver stages it through pinned
             * host memory (next to the destination), the source's copy
             * engine writing, the destination's reading, chunk by chunk:
             * one pipelined transfer, two engines' setups. */
            int mem = fabric_hostmem_of(f, d);
            if (mem < 0)
                return err_set(e, ERR_USAGE, "copy-staged needs host memory in the topology");
            sim_ps setup2 = 2 * topo_params_get(fabric_topo(f))->copy_setup_ps;
            id[i] = fabric_xfer_staged(f, FAB_CE_WRITE, s, mem, FAB_CE_READ, d, c->bytes, 1, 0, 0,
                                       setup2, i, c->pattern, e);
            if (id[i] < 0)
                return e->code;
            continue;
        }
        fab_op op = ops[c->op];
        if (c->op == FLOWS_COPY && c->dst[i] < 0)
            op = FAB_CE_WRITE;
        /* A transfer starts with its engine: a copy engine's setup, or the
         * copy kernel's own start (kernel_base); a latency probe is a flag
         * between kernels already running (hwcheck's ping-pong). */
        const topo_params *tp = topo_params_get(fabric_topo(f));
        int probe = c->pattern && !strcmp(c->pattern, "latency");
        sim_ps setup = op == FAB_CE_READ || op == FAB_CE_WRITE ? tp->copy_setup_ps
                       : probe                                  ? 0
                                                                : tp->kernel_base_ps;
        int init = fab_is_read(op) ? d : s, peer = fab_is_read(op) ? s : d;
        id[i] = fabric_xfer_group_blocks(f, op, init, &peer, 1, c->bytes, 1,
                                         fabric_cta_cap_to_Bps(f, op, c->blocks, peer, c->inflight_B),
                                         c->blocks,
                                         setup,
                                         i, c->pattern, e);
        if (id[i] < 0)
            return e->code;
    }
    TRY(sched_run(fabric_sched(f), e));
    for (int i = 0; i < c->n; i++)
        time_ps[i] = sched_end(fabric_sched(f), id[i]);
    return 0;
}
