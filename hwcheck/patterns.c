/* The pattern table. Each pattern enumerates its cases in a fixed order
 * (ordered pairs by source then destination), so case numbers are stable and
 * a measurement row can be matched with its prediction by (pattern, case).
 * same-uplink assumes that GPUs 2k and 2k+1 share a switch uplink and that
 * the two halves of the box are behind different root ports, which is how
 * typical 8-GPU PCIe servers are wired (check with `nvidia-smi topo -m`). */
#include "hwcheck/patterns.h"

#include <stddef.h>
#include <string.h>

static int put(patterns_flow *out, int max, int k, int src, int dst)
{
    if (k < max) {
        out[k].src = src;
        out[k].dst = dst;
    }
    return k + 1;
}

/* Ordered pair number c (i != j) -> (i, j), by source then destination. */
static void ordered_pair(int n, int c, int *i, int *j)
{
    *i = c / (n - 1);
    int r = c % (n - 1);
    *j = r < *i ? r : r + 1;
}

static int n_ordered(int n) { return n >= 2 ? n * (n - 1) : 0; }
static int n_unordered(int n) { return n >= 2 ? n * (n - 1) / 2 : 0; }
static int n_per_gpu(int n) { return n >= 2 ? n : 0; }
static int n_one(int n) { return n >= 2 ? 1 : 0; }
static int n_half_pairs(int n) { return n >= 4 ? n / 2 : 0; }
static int n_gpus(int n) { return n >= 1 ? n : 0; }
/* Host patterns: every GPU alone, then all GPUs together (if more than one). */
static int n_host(int n) { return n >= 1 ? (n > 1 ? n + 1 : n) : 0; }

static int f_pair(int n, int c, patterns_flow *out, int max)
{
    int i, j;
    ordered_pair(n, c, &i, &j);
    return put(out, max, 0, i, j);
}

static int f_bidir(int n, int c, patterns_flow *out, int max)
{
    for (int i = 0; i < n; i++)
        for (int j = i + 1; j < n; j++)
            if (c-- == 0)
                return put(out, max, put(out, max, 0, i, j), j, i);
    return 0;
}

static int f_same_source(int n, int c, patterns_flow *out, int max)
{
    int k = 0;
    for (int j = 0; j < n; j++)
        if (j != c)
            k = put(out, max, k, c, j);
    return k;
}

static int f_fan_in(int n, int c, patterns_flow *out, int max)
{
    int k = 0;
    for (int i = 0; i < n; i++)
        if (i != c)
            k = put(out, max, k, i, c);
    return k;
}

/* Case c: GPUs 2c' and 2c'+1 (c' = c) send to two different GPUs of the
 * other half: 0->4 and 1->6 on 8 GPUs (0->2 and 1->3 on 4). */
static int f_same_uplink(int n, int c, patterns_flow *out, int max)
{
    int half = n / 2, a = 2 * c;
    if (a + 1 >= n)
        return 0;
    int other = a < half ? half : 0;
    int off = half >= 4 ? 2 : 1;
    int k = put(out, max, 0, a, other + a % half);
    return put(out, max, k, a + 1, other + (a % half + off) % half);
}

static int f_all_to_all(int n, int c, patterns_flow *out, int max)
{
    (void)c;
    int k = 0;
    for (int i = 0; i < n; i++)
        for (int j = 0; j < n; j++)
            if (i != j)
                k = put(out, max, k, i, j);
    return k;
}

static int f_ring(int n, int c, patterns_flow *out, int max)
{
    (void)c;
    int k = 0;
    for (int i = 0; i < n; i++)
        k = put(out, max, k, i, (i + 1) % n);
    return k;
}

/* Case c: GPU c copies inside its own memory (source and destination both
 * its own): a block's rate against local memory alone. */
static int f_local(int n, int c, patterns_flow *out, int max)
{
    (void)n;
    return put(out, max, 0, c, c);
}

static int host_flows(int n, int c, int h2d, int d2h, patterns_flow *out, int max)
{
    int lo = c < n ? c : 0, hi = c < n ? c + 1 : n, k = 0;
    for (int g = lo; g < hi; g++) {
        if (h2d)
            k = put(out, max, k, PATTERNS_HOST, g);
        if (d2h)
            k = put(out, max, k, g, PATTERNS_HOST);
    }
    return k;
}

static int f_h2d(int n, int c, patterns_flow *out, int max) { return host_flows(n, c, 1, 0, out, max); }
static int f_d2h(int n, int c, patterns_flow *out, int max) { return host_flows(n, c, 0, 1, out, max); }
static int f_h2d_d2h(int n, int c, patterns_flow *out, int max) { return host_flows(n, c, 1, 1, out, max); }

static const patterns_entry table[] = {
    {"pair", "one flow i->j for every ordered pair (bandwidth matrix)", 2, 0, 0, n_ordered, f_pair},
    {"bidir", "i->j and j->i together for every pair", 2, 0, 0, n_unordered, f_bidir},
    {"latency", "one-way latency of a 4-byte flag, every ordered pair", 2, 0, 1, n_ordered, f_pair},
    {"same-source", "GPU i sends to every other GPU at once", 2, 0, 0, n_per_gpu, f_same_source},
    {"same-uplink", "GPUs 2k and 2k+1 send to two different GPUs of the other half", 4, 0, 0,
     n_half_pairs, f_same_uplink},
    {"all-to-all", "every GPU sends to every other GPU at once", 2, 0, 0, n_one, f_all_to_all},
    {"ring", "i -> i+1 (mod n) for all i at once", 2, 0, 0, n_one, f_ring},
    {"fan-in", "every other GPU sends to GPU j at once", 2, 0, 0, n_per_gpu, f_fan_in},
    {"h2d", "pinned host -> GPU, each GPU alone, then all at once", 1, 1, 0, n_host, f_h2d},
    {"d2h", "GPU -> pinned host, each GPU alone, then all at once", 1, 1, 0, n_host, f_d2h},
    {"h2d-d2h", "both directions at once, each GPU alone, then all", 1, 1, 0, n_host, f_h2d_d2h},
    {"local", "GPU i copies inside its own memory, each GPU alone", 1, 0, 0, n_gpus, f_local},
};

int patterns_count(void) { return (int)(sizeof table / sizeof table[0]); }

const patterns_entry *patterns_at(int i)
{
    return i >= 0 && i < patterns_count() ? &table[i] : NULL;
}

const patterns_entry *patterns_find(const char *name)
{
    for (int i = 0; i < patterns_count(); i++)
        if (!strcmp(table[i].name, name))
            return &table[i];
    return NULL;
}

int patterns_case(const patterns_entry *p, int n, int c, patterns_flow *out, int max)
{
    if (n < p->min_gpus || c < 0 || c >= p->ncases(n))
        return 0;
    return p->flows(n, c, out, max);
}
