/* The fabric's PCIe mechanisms, each on a small hand-built topology whose
 * numbers make the expected times easy to derive by hand (docs/model.md,
 * "PCIe transactions and the fabric"):
 *
 *   socket 0: cpu0 - rp0 - sw0 - {g0, g1}    socket 1: cpu1 - rp3 - sw3 - g4
 *                  - rp1 - sw1 - g2
 *                  - rp2 - sw2 - g3
 *
 * Every PCIe link 10 GB/s, every root port - CPU link 10 GB/s, the socket
 * link 20 GB/s; latencies 0 except where a test needs them, so times are
 * bytes over rates. 1 GB per flow: 0.1 s at 10 GB/s. */
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <cmocka.h>

#include "models/coll/coll.h"
#include "models/fabric/fabric.h"
#include "models/fabric/flows.h"
#include "tests/unit/near.h"

#define GB 1e9
/* |got - want| <= tol x want, printing both on failure. */
#define NEAR_REL(got, want, tol)                                                 \
    do {                                                                         \
        double g_ = (got), w_ = (want);                                          \
        if (!(fabs(g_ - w_) <= (tol) * fabs(w_)))                                \
            fail_msg("%s = %.9g, expected %.9g (relative tolerance %g)", #got,  \
                     g_, w_, (double)(tol));                                     \
    } while (0)

static void add(topo *t, const char *a, const char *b, topo_link_kind k, double bw)
{
    err e = {0};
    topo_link l = {.a = topo_find(t, a), .b = topo_find(t, b), .kind = k,
                   .pcie_gen = k == LINK_PCIE ? 5 : 0, .pcie_width = k == LINK_PCIE ? 16 : 0,
                   .bw_Bps = bw, .lat_ps = 0};
    if (topo_add_link(t, &l, &e) < 0)
        fail_msg("link %s-%s: %s", a, b, e.msg);
}

static int node(topo *t, const char *name, topo_kind k, int numa, const char *parent)
{
    err e = {0};
    int id = topo_add_node(t, name, k, numa, &e);
    if (id < 0)
        fail_msg("node %s: %s", name, e.msg);
    if (parent && topo_set_parent(t, id, topo_find(t, parent), &e))
        fail_msg("parent of %s: %s", name, e.msg);
    return id;
}

/* The topology above; the caller may set params before topo_finish. */
static topo *build(void)
{
    topo *t = topo_new("fabric-test");
    node(t, "cpu0", TOPO_CPU, 0, NULL);
    node(t, "cpu1", TOPO_CPU, 1, NULL);
    add(t, "cpu0", "cpu1", LINK_SOCKET, 20 * GB);
    static const char *const rp[] = {"rp0", "rp1", "rp2", "rp3"};
    static const char *const sw[] = {"sw0", "sw1", "sw2", "sw3"};
    for (int i = 0; i < 4; i++) {
        const char *cpu = i < 3 ? "cpu0" : "cpu1";
        node(t, rp[i], TOPO_ROOT, i < 3 ? 0 : 1, cpu);
        add(t, rp[i], cpu, LINK_FABRIC, 10 * GB);
        node(t, sw[i], TOPO_SWITCH, i < 3 ? 0 : 1, rp[i]);
        add(t, sw[i], rp[i], LINK_PCIE, 10 * GB);
    }
    static const char *const gpus[][2] = {{"g0", "sw0"}, {"g1", "sw0"}, {"g2", "sw1"},
                                          {"g3", "sw2"}, {"g4", "sw3"}};
    for (int i = 0; i < 5; i++) {
        node(t, gpus[i][0], TOPO_GPU, i < 4 ? 0 : 1, gpus[i][1]);
        add(t, gpus[i][0], gpus[i][1], LINK_PCIE, 10 * GB);
    }
    topo_params *p = topo_params_mut(t);
    p->read_tags = 16384;          /* reads not tag-bound unless a test says so */
    p->read_extra_lat_ps = 0;
    p->sm_req_bytes = 256;         /* = MPS: no TLP penalty unless a test says so */
    p->copy_setup_ps = 0;
    p->kernel_base_ps = 0;         /* kernels start at once unless a test says so */
    return t;
}

static void finish(topo *t)
{
    err e = {0};
    if (topo_finish(t, "fabric-test", &e))
        fail_msg("topo_finish: %s", e.msg);
}

/* Run one concurrent case; returns the time of the slowest flow, in s. */
static double run_case(const topo *t, const char *spec, flows_op op, int without)
{
    err e = {0};
    fabric *f = fabric_new(t, &e);
    assert_non_null(f);
    fabric_disable(f, without);
    flows_case c = {0};
    if (flows_parse(t, spec, op, 1e9, &c, &e))
        fail_msg("%s: %s", spec, e.msg);
    sim_ps tp[64], tmax = 0;
    if (flows_run(f, &c, tp, &e))
        fail_msg("%s: %s", spec, e.msg);
    for (int i = 0; i < c.n; i++)
        if (tp[i] > tmax)
            tmax = tp[i];
    flows_case_free(&c);
    fabric_free(f);
    return (double)tmax * 1e-12;
}

/* Which copies a PyTorch-issued list waits for (flows.h FLOWS_ISSUE_TORCH):
 * copy-write 0>4, 0>2, 1>4, 0>5, 1>2: the second waits for the first (g0's
 * engine), the third for the first (into 4), the fourth for the second (g0),
 * the fifth for the third (g1's engine) and the second (into 2). As
 * copy-read the destination waits go: the third and fifth wait for g1's
 * engine only, the third not at all. Streams issue: nothing waits. */
static void test_torch_preds(void **state)
{
    (void)state;
    flows_case c = {0};
    static const int src[] = {0, 0, 1, 0, 1}, dst[] = {4, 2, 4, 5, 2};
    for (int i = 0; i < 5; i++)
        assert_int_equal(flows_case_add(&c, src[i], dst[i]), 0);
    c.op = FLOWS_COPY_WRITE;
    c.issue = FLOWS_ISSUE_TORCH;
    int p[2];
    static const int want_n[] = {0, 1, 1, 1, 2}, want[][2] = {{-1}, {0}, {0}, {1}, {2, 1}};
    for (int i = 0; i < 5; i++) {
        assert_int_equal(flows_preds(&c, i, p), want_n[i]);
        for (int k = 0; k < want_n[i]; k++)
            assert_int_equal(p[k], want[i][k]);
    }
    c.op = FLOWS_COPY_READ;
    static const int rd_n[] = {0, 1, 0, 1, 1}, rd[][1] = {{-1}, {0}, {-1}, {1}, {2}};
    for (int i = 0; i < 5; i++) {
        assert_int_equal(flows_preds(&c, i, p), rd_n[i]);
        if (rd_n[i])
            assert_int_equal(p[0], rd[i][0]);
    }
    c.issue = FLOWS_ISSUE_STREAMS;
    assert_int_equal(flows_preds(&c, 4, p), 0);
    /* Kernels are not PyTorch copies. */
    err e = {0};
    c.issue = FLOWS_ISSUE_TORCH;
    c.op = FLOWS_WRITE;
    assert_int_equal(flows_issue_check(&c, &e), ERR_USAGE);
    flows_case_free(&c);
}

/* The same issue on the flow engine: g0 -> g1 then g0 -> g3 (10 GB/s paths,
 * 1 GB each): g0's one engine runs them in turn, the first ending at 0.1 s,
 * the second at 0.2 s; interleaved (CE order off) the head-of-line weight
 * gives each 5 GB/s and both end at 0.2 s. Repeated twice (--repeat 2): four
 * copies in a row, 0.4 s. */
static void test_torch_issue_flow(void **state)
{
    (void)state;
    topo *t = build();
    finish(t);
    err e = {0};
    fabric *f = fabric_new(t, &e);
    assert_non_null(f);
    flows_case c = {0};
    assert_int_equal(flows_parse(t, "0>1,0>3", FLOWS_COPY_WRITE, 1e9, &c, &e), 0);
    c.issue = FLOWS_ISSUE_TORCH;
    sim_ps tp[4];
    assert_int_equal(flows_run(f, &c, tp, &e), 0);
    NEAR_REL((double)tp[0] * 1e-12, 0.1, 1e-6);
    NEAR_REL((double)tp[1] * 1e-12, 0.2, 1e-6);
    c.orders = FLOWS_ORDER_DST;
    assert_int_equal(flows_run(f, &c, tp, &e), 0);
    NEAR_REL((double)tp[0] * 1e-12, 0.2, 1e-6);
    c.orders = 0;
    assert_int_equal(flows_case_repeat(&c, 2), 0);
    assert_int_equal(c.n, 4);
    assert_int_equal(flows_run(f, &c, tp, &e), 0);
    NEAR_REL((double)tp[3] * 1e-12, 0.4, 1e-6);
    flows_case_free(&c);
    fabric_free(f);
    topo_free(t);
}

static void test_read_collapse(void **state)
{
    (void)state;
    /* g2 reads g0 and g3 reads g1: the completions of two GPUs (g0, g1) go up
     * sw0's uplink towards two root ports (rp1, rp2): the read-completion
     * collapse sets that uplink to 1 GB/s, shared by the two flows, so each
     * moves 1 GB at 0.5 GB/s: 2 s. */
    topo *t = build();
    topo_params_mut(t)->arb_collapse_read_Bps = 1 * GB;
    finish(t);
    NEAR_REL(run_case(t, "0>2,1>3", FLOWS_COPY_READ, 0), 2.0, 1e-9);
    /* One completer (g0 read by g2 and g3): one source on the uplink, no
     * collapse; g0's own link (10 GB/s) carries both: 0.2 s. */
    NEAR_REL(run_case(t, "0>2,0>3", FLOWS_COPY_READ, 0), 0.2, 1e-9);
    /* The same pattern as posted writes does not trip the read rule (the
     * write collapse is off here): the uplink carries 2 GB at 10 GB/s. */
    NEAR_REL(run_case(t, "0>2,1>3", FLOWS_COPY_WRITE, 0), 0.2, 1e-9);
    /* Switched off: link-bound as the write, 0.2 s. */
    NEAR_REL(run_case(t, "0>2,1>3", FLOWS_COPY_READ, FAB_NO_COLLAPSE_READ), 0.2, 1e-9);
    topo_free(t);
}

static void test_write_collapse_group(void **state)
{
    (void)state;
    /* Two writers on sw0's uplink towards two root ports: 0>2 and 1>3 as
     * posted writes collapse the uplink to 1 GB/s: 2 GB / 1 GB/s = 2 s. */
    topo *t = build();
    topo_params_mut(t)->arb_collapse_Bps = 1 * GB;
    finish(t);
    NEAR_REL(run_case(t, "0>2,1>3", FLOWS_COPY_WRITE, 0), 2.0, 1e-9);
    /* The rule sees every stream of an interleaved group: g0 writes to g2
     * and g3 as one engine flow (two streams, one tag) while g1 writes to
     * g2. Two writers, two root ports: collapse. The uplink carries three
     * streams of one rate r: 3r = 1 GB/s, each 1 GB takes 3 s. */
    err e = {0};
    fabric *f = fabric_new(t, &e);
    int g0 = topo_gpu_node(t, 0), g1 = topo_gpu_node(t, 1);
    int peers[2] = {topo_gpu_node(t, 2), topo_gpu_node(t, 3)};
    int a = fabric_xfer_group(f, FAB_CE_WRITE, g0, peers, 2, 1e9, 1, 0, 0, "group", &e);
    int b = fabric_xfer(f, FAB_CE_WRITE, g1, peers[0], 1e9, 1, 0, 1, "single", &e);
    assert_true(a >= 0 && b >= 0);
    assert_int_equal(sched_run(fabric_sched(f), &e), 0);
    NEAR_REL((double)sched_end(fabric_sched(f), a) * 1e-12, 3.0, 1e-9);
    fabric_free(f);
    /* Both writers towards one root port (rp1): no collapse; the uplink
     * carries 2 GB at 10 GB/s and rp1's link the same: 0.2 s. */
    NEAR_REL(run_case(t, "0>2,1>2", FLOWS_COPY_WRITE, 0), 0.2, 1e-9);
    topo_free(t);
}

static void test_turn_collapse(void **state)
{
    (void)state;
    /* The collapse derived from the root ports' turnaround (fabric.c
     * fabric_turn_rate; docs/model.md "The collapse from the turnaround"):
     * turn 256 ns, MPS 256 B, so a TLP that turns moves 256 B per 256 ns =
     * 1 GB/s; one that does not takes its 25.6 ns on the 10 GB/s uplink.
     * 0>2 and 1>3 alternate at sw0's uplink, requester and root always
     * change: P = 1, 1 GB/s for both, 2 GB in 2 s. */
    topo *t = build();
    topo_params_mut(t)->tlp_turn_ps = 256000;
    topo_params_mut(t)->tlp_turn_cpl_ps = 256000;
    finish(t);
    NEAR_REL(run_case(t, "0>2,1>3", FLOWS_COPY_WRITE, 0), 2.0, 1e-9);
    /* One root port (rp1) for both: the root never changes, P = 0: the
     * uplink's 10 GB/s, 0.2 s. One writer to two roots: one requester, no
     * turn: g0's link, 0.2 s. */
    NEAR_REL(run_case(t, "0>2,1>2", FLOWS_COPY_WRITE, 0), 0.2, 1e-9);
    NEAR_REL(run_case(t, "0>2,0>3", FLOWS_COPY_WRITE, 0), 0.2, 1e-9);
    /* Each GPU to both roots: the next TLP's root differs from the last one's
     * with P = 1 - (1/2 x 1/2 + 1/2 x 1/2) = 1/2, so a TLP takes on average
     * 0.5 x 25.6 + 0.5 x 256 = 140.8 ns: 256 B / 140.8 ns = 1.8182 GB/s for
     * the four flows, 4 GB in 2.2 s (the constant rule would give 1 GB/s). */
    NEAR_REL(run_case(t, "0>2,0>3,1>2,1>3", FLOWS_COPY_WRITE, 0), 2.2, 1e-9);
    /* Read completions of g0 and g1 towards g2's and g3's roots: the same
     * arithmetic with completions of MPS (copy-engine reads), 2 s. */
    NEAR_REL(run_case(t, "0>2,1>3", FLOWS_COPY_READ, 0), 2.0, 1e-9);
    /* Switched off per class: link-bound, 0.2 s. */
    NEAR_REL(run_case(t, "0>2,1>3", FLOWS_COPY_WRITE, FAB_NO_COLLAPSE_WRITE), 0.2, 1e-9);
    NEAR_REL(run_case(t, "0>2,1>3", FLOWS_COPY_READ, FAB_NO_COLLAPSE_READ), 0.2, 1e-9);
    topo_free(t);
    /* SM stores of 128 B: a turn moves 128 B per 256 ns = 0.5 GB/s of
     * payload (the TLP weight cancels: link units per TLP over the same
     * wait), 2 GB in 4 s. */
    t = build();
    topo_params_mut(t)->tlp_turn_ps = 256000;
    topo_params_mut(t)->sm_req_bytes = 128;
    finish(t);
    NEAR_REL(run_case(t, "0>2,1>3", FLOWS_WRITE, 0), 4.0, 1e-9);
    topo_free(t);
    /* Three requesters, A and C to root 1, B to root 2: ordered pairs (A,B),
     * (B,A), (B,C), (C,B) turn, (A,C), (C,A) do not: P = 4/6; a TLP takes
     * 25.6 / 3 + 256 x 2/3 = 179.2 ns = 7 x 25.6: 10/7 GB/s. A turnaround
     * shorter than the serialization costs nothing: the nominal 10 GB/s. */
    int src[3] = {0, 1, 2}, root[3] = {1, 2, 1};
    double cnt[3] = {1, 1, 1}, lu[3] = {256, 256, 256};
    NEAR_REL(fabric_turn_rate(src, root, cnt, lu, 3, 10 * GB, 256000, 1), 10 * GB / 7, 1e-12);
    NEAR_REL(fabric_turn_rate(src, root, cnt, lu, 3, 10 * GB, 20000, 1), 10 * GB, 1e-12);
    NEAR_REL(fabric_turn_rate(src, root, cnt, lu, 1, 10 * GB, 256000, 1), 10 * GB, 1e-12);
}

/* The requesters' other TLPs at the turnaround (fabric_turn_alternation;
 * docs/model.md "The collapse from the turnaround"): the turn 256 ns, MPS
 * 256 B, MRRS 512 B, as test_turn_collapse. g0 and g1 (sw0) serve reads of g2
 * and g3 (0>2, 1>3: completions towards two roots, P = 1 between the two
 * completers) and read from g2 and g3 themselves (2>0, 3>1), whose 512-byte
 * requests go up sw0's uplink: per byte of data a completer sends 1/256
 * completions and, reading, 1/512 requests, so lambda = (2/512) / (2/256) =
 * 0.5 request per completion and the completions alternate in
 * (1 + 1 / (1 + 0.68 x 0.5)) / 2 = 0.873134 of consecutive pairs: a
 * completion takes 25.6 + 0.873134 x (256 - 25.6) = 226.770 ns, 256 B /
 * 226.770 ns = 1.128896 GB/s for the two, 2 GB in 1.77164 s (2 s in strict
 * alternation, without turn-others; 2>0 and 3>1 cross no shared uplink: 0.1 s). */
static void test_turn_mix(void **state)
{
    (void)state;
    assert_true(fabric_turn_alternation(0) == 1);
    NEAR_REL(fabric_turn_alternation(1), (1 + 1 / 1.68) / 2, 1e-12);
    topo *t = build();
    topo_params_mut(t)->tlp_turn_cpl_ps = 256000;
    finish(t);
    NEAR_REL(run_case(t, "0>2,1>3,2>0,3>1", FLOWS_COPY_READ, 0), 1.77164, 1e-5);
    NEAR_REL(run_case(t, "0>2,1>3,2>0,3>1", FLOWS_COPY_READ, FAB_NO_TURN_MIX), 2.0, 1e-6);
    /* Without the readers' requests the completers alternate strictly. */
    NEAR_REL(run_case(t, "0>2,1>3", FLOWS_COPY_READ, 0), 2.0, 1e-9);
    topo_free(t);
}

static void test_gpu_read_tags(void **state)
{
    (void)state;
    /* A GPU's own read tags (a node's tags=; GPUs 6 and 7 of the reference
     * box): no link latency, a 1 us completer turnaround, so every round
     * trip is 1 us. g2 with 10 tags of its own reads 1 GB from g0 with copy
     * engine requests of 512 B: 10 x 512 B / 1 us = 5.12 GB/s, 1e9 / 5.12e9
     * = 0.1953 s (plus the 1 us round trip); g3 keeps the topology's 16384
     * tags and is held by its 10 GB/s link: 0.1 s. */
    topo *t = build();
    topo_params_mut(t)->read_extra_lat_ps = 1000000;
    err e = {0};
    assert_int_equal(topo_set_read_tags(t, topo_find(t, "g2"), 10, &e), 0);
    finish(t);
    NEAR_REL(run_case(t, "0>2", FLOWS_COPY_READ, 0), 1e9 / 5.12e9 + 1e-6, 1e-6);
    NEAR_REL(run_case(t, "1>3", FLOWS_COPY_READ, 0), 0.1 + 1e-6, 1e-6);
    /* Only a GPU has tags. */
    assert_int_equal(topo_set_read_tags(t, topo_find(t, "sw0"), 10, &e), ERR_INPUT);
    topo_free(t);
}

static void test_ce_read_tags(void **state)
{
    (void)state;
    /* A copy engine's own cap on its GPU's tags (ce_read_tags; the reference
     * box's 256 of 768): a 1 us completer turnaround and no link latency, so
     * every round trip is 1 us. With ce_read_tags 10, g3 reads 1 GB from g1
     * with copy-engine requests of 512 B at 10 x 512 B / 1 us = 5.12 GB/s:
     * 0.1953 s (plus the round trip); its SM loads (of MPS here) keep the
     * GPU's 16384 tags and are held by the 10 GB/s link: 0.1 s. Two copy-engine reads of g2 (from g0 and g1) share
     * its engine's 10 tags: 2.56 GB/s each, 0.3906 s. With ce_read_tags 0
     * (no cap) the copy-engine read is the link's: 0.1 s. */
    topo *t = build();
    topo_params_mut(t)->read_extra_lat_ps = 1000000;
    topo_params_mut(t)->ce_read_tags = 10;
    finish(t);
    NEAR_REL(run_case(t, "1>3", FLOWS_COPY_READ, 0), 1e9 / 5.12e9 + 1e-6, 1e-6);
    NEAR_REL(run_case(t, "1>3", FLOWS_READ, 0), 0.1 + 1e-6, 1e-6);
    NEAR_REL(run_case(t, "0>2,1>2", FLOWS_COPY_READ, 0), 2e9 / 5.12e9 + 1e-6, 1e-6);
    topo_params_mut(t)->ce_read_tags = 0;
    NEAR_REL(run_case(t, "1>3", FLOWS_COPY_READ, 0), 0.1 + 1e-6, 1e-6);
    topo_free(t);
}

/* A streamed chain: each call adds the next write g0 -> g2 after the last. */
typedef struct chain {
    fabric *f;
    int n, made, last, peak;
} chain;

static int chain_gen(void *ctx, sched *s)
{
    chain *c = ctx;
    int live = fabric_live_groups(c->f);
    if (live > c->peak)
        c->peak = live;
    if (c->made == c->n)
        return 0;
    err e = {0};
    const topo *t = fabric_topo(c->f);
    int id = fabric_xfer(c->f, FAB_CE_WRITE, topo_gpu_node(t, 0), topo_gpu_node(t, 2), 1e8, 1, 0,
                         0, "link", &e);
    if (id < 0 || (c->last >= 0 && sched_dep(s, c->last, id)))
        return -1;
    c->last = id;
    c->made++;
    sched_horizon(s, id);
    return 1;
}

static void test_groups_released(void **state)
{
    (void)state;
    topo *t = build();
    topo_params_mut(t)->arb_collapse_Bps = 1 * GB;
    finish(t);
    err e = {0};
    fabric *f = fabric_new(t, &e);
    sched *s = fabric_sched(f);
    int g[4];
    for (int i = 0; i < 4; i++)
        g[i] = topo_gpu_node(t, i);
    /* Three phases, each after the last, every flow crossing sw0's uplink.
     * 1: g0>g2, g1>g3, two writers to two root ports: collapse, 2 GB at
     * 1 GB/s: ends at 2 s. 2: g0>g2, g1>g2, one root port: no collapse, 2 GB
     * at 10 GB/s: 2.2 s. 3: as 1: 4.2 s. Phases 2 and 3 reuse the records
     * of the flows before them, so a stale one would change the rule's
     * verdict (and these times). */
    int dst[3][2] = {{g[2], g[3]}, {g[2], g[2]}, {g[2], g[3]}}, prev[2] = {-1, -1};
    for (int ph = 0; ph < 3; ph++) {
        int cur[2];
        for (int i = 0; i < 2; i++) {
            cur[i] = fabric_xfer(f, FAB_CE_WRITE, g[i], dst[ph][i], 1e9, 1, 0, i, "w", &e);
            assert_true(cur[i] >= 0);
            for (int j = 0; j < 2; j++)
                if (prev[j] >= 0)
                    assert_int_equal(sched_dep(s, prev[j], cur[i]), 0);
        }
        prev[0] = cur[0];
        prev[1] = cur[1];
    }
    /* Built whole: one record per flow until the flows end, then none. */
    assert_int_equal(fabric_live_groups(f), 6);
    assert_int_equal(sched_run(s, &e), 0);
    NEAR_REL((double)sched_end(s, prev[0]) * 1e-12, 4.2, 1e-9);
    NEAR_REL((double)sched_end(s, prev[1]) * 1e-12, 4.2, 1e-9);
    assert_int_equal(fabric_live_groups(f), 0);
    /* Streamed, 1,000 writes of 0.1 GB one after another at 10 GB/s: 10 s,
     * and never more than two records held (the flow running and the one
     * being added), not one per flow. */
    fabric_reset(f);
    chain c = {f, 1000, 0, -1, 0};
    sched_keep(s, 0);
    sched_generate(s, chain_gen, &c);
    assert_int_equal(sched_run(s, &e), 0);
    NEAR_REL((double)sched_makespan(s) * 1e-12, 10.0, 1e-9);
    assert_int_equal(c.made, 1000);
    assert_true(c.peak <= 2);
    assert_int_equal(fabric_live_groups(f), 0);
    fabric_free(f);
    topo_free(t);
}

static void test_head_of_line(void **state)
{
    (void)state;
    /* Two switches under one CPU; g2's own link is 5 GB/s. g0 writes 1 GB to
     * g1 (same switch: 10 GB/s alone, 0.1 s) and 1 GB to g2 (5 GB/s alone,
     * 0.2 s). Together, head of line: each byte holds g0's ingress queue for
     * 1/R of its path, so with equal rates x, x (1/10 + 1/5) s/GB = 1:
     * x = 3.333 GB/s, and both end together at 1 / 3.333 = 0.3 s. Without the
     * coupling, max-min gives g0->g2 its 5 and g0->g1 the other 5 of g0's
     * port: both end at 0.2 s. */
    topo *t = topo_new("fabric-test-hol");
    node(t, "cpu0", TOPO_CPU, 0, NULL);
    node(t, "rp0", TOPO_ROOT, 0, "cpu0");
    add(t, "rp0", "cpu0", LINK_FABRIC, 10 * GB);
    node(t, "sw0", TOPO_SWITCH, 0, "rp0");
    add(t, "sw0", "rp0", LINK_PCIE, 10 * GB);
    node(t, "rp1", TOPO_ROOT, 0, "cpu0");
    add(t, "rp1", "cpu0", LINK_FABRIC, 10 * GB);
    node(t, "sw1", TOPO_SWITCH, 0, "rp1");
    add(t, "sw1", "rp1", LINK_PCIE, 10 * GB);
    node(t, "g0", TOPO_GPU, 0, "sw0");
    add(t, "g0", "sw0", LINK_PCIE, 10 * GB);
    node(t, "g1", TOPO_GPU, 0, "sw0");
    add(t, "g1", "sw0", LINK_PCIE, 10 * GB);
    node(t, "g2", TOPO_GPU, 0, "sw1");
    add(t, "g2", "sw1", LINK_PCIE, 5 * GB);
    topo_params_mut(t)->sm_req_bytes = 256;
    topo_params_mut(t)->read_extra_lat_ps = 0;
    topo_params_mut(t)->kernel_base_ps = 0;
    finish(t);
    NEAR_REL(run_case(t, "0>1,0>2", FLOWS_COPY_WRITE, 0), 0.3, 1e-9);
    NEAR_REL(run_case(t, "0>1,0>2", FLOWS_COPY_WRITE, FAB_NO_HOL), 0.2, 1e-9);
    /* Reads are not posted: no coupling (g1 and g2 pulled by g0's engine:
     * g0's down link carries both, 2 GB at 10 GB/s, g2's up link 1 GB at 5:
     * 0.2 s). */
    NEAR_REL(run_case(t, "1>0,2>0", FLOWS_COPY_READ, 0), 0.2, 1e-9);
    topo_free(t);
}

static void test_request_size(void **state)
{
    (void)state;
    /* A kernel's stores of 128 B (sm_req_bytes) become 128-byte TLPs: with
     * 24 bytes of overhead a payload byte costs (152/128) / (280/256) =
     * 1.0857143 of a link rated for 256-byte writes, so 1 GB over 10 GB/s
     * takes 0.10857143 s; a copy engine's 256-byte writes take 0.1 s. */
    topo *t = build();
    topo_params_mut(t)->sm_req_bytes = 128;
    finish(t);
    double w = (152.0 / 128.0) / (280.0 / 256.0);
    NEAR_REL(run_case(t, "0>1", FLOWS_WRITE, 0), 0.1 * w, 1e-9);
    NEAR_REL(run_case(t, "0>1", FLOWS_COPY_WRITE, 0), 0.1, 1e-9);
    topo_free(t);
    /* Reads: 64 tags of 128 B over a round trip of 2 x 1 us = 2 us bound an
     * SM reader at 64 x 128 / 2e-6 = 4.096 GB/s; a copy engine's 512-byte
     * requests at 16.384 GB/s, above the link (10 GB/s: its completions of
     * MPS 256 bytes cost nothing extra). SM completions of 128 B do:
     * 1 GB at min(4.096, 10 / 1.0857) = 4.096 GB/s = 0.244140625 s, plus
     * the 2 us round trip. */
    t = topo_new("fabric-test-rtt");
    node(t, "cpu0", TOPO_CPU, 0, NULL);
    node(t, "rp0", TOPO_ROOT, 0, "cpu0");
    add(t, "rp0", "cpu0", LINK_FABRIC, 10 * GB);
    node(t, "sw0", TOPO_SWITCH, 0, "rp0");
    add(t, "sw0", "rp0", LINK_PCIE, 10 * GB);
    for (int i = 0; i < 2; i++) {
        char g[8];
        snprintf(g, sizeof g, "g%d", i);
        node(t, g, TOPO_GPU, 0, "sw0");
        err e = {0};
        topo_link l = {.a = topo_find(t, g), .b = topo_find(t, "sw0"), .kind = LINK_PCIE,
                       .pcie_gen = 5, .pcie_width = 16, .bw_Bps = 10 * GB, .lat_ps = 500000};
        assert_true(topo_add_link(t, &l, &e) >= 0);
    }
    topo_params *p = topo_params_mut(t);
    p->read_tags = 64;
    p->read_extra_lat_ps = 0;
    p->sm_req_bytes = 128;
    p->kernel_base_ps = 0;
    finish(t);
    NEAR_REL(run_case(t, "1>0", FLOWS_READ, 0), 1e9 / 4.096e9 + 2e-6, 1e-9);
    NEAR_REL(run_case(t, "1>0", FLOWS_COPY_READ, 0), 0.1 + 2e-6, 1e-9);
    topo_free(t);
}

static void test_socket_read_and_back_rate(void **state)
{
    (void)state;
    /* Read completions crossing the socket link are bounded by
     * socket_read_Bps: g0 reading 1 GB from g4 (socket 1) with 4 GB/s takes
     * 1 / 4 = 0.25 s. */
    topo *t = build();
    topo_params_mut(t)->socket_read_Bps = 4 * GB;
    finish(t);
    NEAR_REL(run_case(t, "4>0", FLOWS_COPY_READ, 0), 0.25, 1e-9);
    /* Posted writes across the socket do not use it: 10 GB/s, 0.1 s. */
    NEAR_REL(run_case(t, "4>0", FLOWS_COPY_WRITE, 0), 0.1, 1e-9);
    NEAR_REL(run_case(t, "4>0", FLOWS_COPY_READ, FAB_NO_SOCKET_READ), 0.1, 1e-9);
    topo_free(t);
    /* A link with its own back rate: rp0 - cpu0 at 10 up (rp0 -> cpu0) and
     * 2 down (cpu0 -> rp0). g2 -> g0 comes down through it: 1 GB / 2 = 0.5 s;
     * g0 -> g2 goes up: 0.1 s. */
    t = topo_new("fabric-test-back");
    node(t, "cpu0", TOPO_CPU, 0, NULL);
    for (int i = 0; i < 2; i++) {
        char rp[8], sw[8], g[8];
        snprintf(rp, sizeof rp, "rp%d", i);
        snprintf(sw, sizeof sw, "sw%d", i);
        snprintf(g, sizeof g, "g%d", i);
        node(t, rp, TOPO_ROOT, 0, "cpu0");
        err e = {0};
        topo_link l = {.a = topo_find(t, rp), .b = topo_find(t, "cpu0"), .kind = LINK_FABRIC,
                       .bw_Bps = 10 * GB, .bw_back_Bps = i == 0 ? 2 * GB : 0};
        assert_true(topo_add_link(t, &l, &e) >= 0);
        node(t, sw, TOPO_SWITCH, 0, rp);
        add(t, sw, rp, LINK_PCIE, 10 * GB);
        node(t, g, TOPO_GPU, 0, sw);
        add(t, g, sw, LINK_PCIE, 10 * GB);
    }
    finish(t);
    NEAR_REL(run_case(t, "1>0", FLOWS_COPY_WRITE, 0), 0.5, 1e-9);
    NEAR_REL(run_case(t, "0>1", FLOWS_COPY_WRITE, 0), 0.1, 1e-9);
    topo_free(t);
}

static void test_cta_blocks(void **state)
{
    (void)state;
    /* A copy kernel of 2 thread blocks, each storing at most 3 GB/s into a
     * peer: 6 GB/s on a 10 GB/s path, 1 GB in 1/6 s; loads at 2 GB/s per
     * block: 4 GB/s, 0.25 s. Without a block count (one block per SM, as
     * hwcheck's default) the link binds: 0.1 s. A copy engine has no blocks. */
    topo *t = build();
    topo_params_mut(t)->cta_store_Bps = 3 * GB;
    topo_params_mut(t)->cta_load_Bps = 2 * GB;
    finish(t);
    err e = {0};
    fabric *f = fabric_new(t, &e);
    flows_case c = {0};
    sim_ps tp[1];
    assert_int_equal(flows_parse(t, "0>1", FLOWS_WRITE, 1e9, &c, &e), 0);
    c.blocks = 2;
    assert_int_equal(flows_run(f, &c, tp, &e), 0);
    NEAR_REL((double)tp[0] * 1e-12, 1.0 / 6.0, 1e-9);
    assert_int_equal(flows_parse(t, "0>1", FLOWS_READ, 1e9, &c, &e), 0);
    c.blocks = 2;
    assert_int_equal(flows_run(f, &c, tp, &e), 0);
    NEAR_REL((double)tp[0] * 1e-12, 0.25, 1e-9);
    assert_int_equal(flows_parse(t, "0>1", FLOWS_WRITE, 1e9, &c, &e), 0);
    assert_int_equal(flows_run(f, &c, tp, &e), 0);
    NEAR_REL((double)tp[0] * 1e-12, 0.1, 1e-9);
    assert_int_equal(flows_parse(t, "0>1", FLOWS_COPY_WRITE, 1e9, &c, &e), 0);
    c.blocks = 2;
    assert_int_equal(flows_run(f, &c, tp, &e), 0);
    NEAR_REL((double)tp[0] * 1e-12, 0.1, 1e-9);
    flows_case_free(&c);
    fabric_free(f);
    topo_free(t);
}

static void test_channel_block(void **state)
{
    (void)state;
    /* One NCCL channel is one thread block storing at most 3 GB/s: two hops
     * of the same channel in flight from g0 (to g1 and to g2, say two
     * pipelined steps) share it: 1.5 GB/s each, 1 GB in 2/3 s. A bundle of 2
     * channels (wire 2, one channel's wire 1) moves 1 GB per channel at 3 GB/s
     * each (6 GB/s on the link): 1/3 s. */
    topo *t = build();
    topo_params_mut(t)->cta_store_Bps = 3 * GB;
    finish(t);
    err e = {0};
    fabric *f = fabric_new(t, &e);
    sched *s = fabric_sched(f);
    int g0 = topo_gpu_node(t, 0), g1 = topo_gpu_node(t, 1), g2 = topo_gpu_node(t, 2);
    int a = fabric_xfer_channel(f, g0, -1, g1, 1e9, 1, 1, 0, 0, "step0", &e);
    int b = fabric_xfer_channel(f, g0, -1, g2, 1e9, 1, 1, 0, 0, "step1", &e);
    assert_true(a >= 0 && b >= 0);
    assert_int_equal(sched_run(s, &e), 0);
    NEAR_REL((double)sched_end(s, a) * 1e-12, 2.0 / 3.0, 1e-9);
    fabric_reset(f);
    a = fabric_xfer_channel(f, g0, -1, g1, 1e9, 2, 1, 0, 0, "bundle", &e);
    assert_int_equal(sched_run(s, &e), 0);
    NEAR_REL((double)sched_end(s, a) * 1e-12, 1.0 / 3.0, 1e-9);
    fabric_free(f);
    topo_free(t);
}

static void test_nvlink_saturation(void **state)
{
    (void)state;
    /* h200-2x: NVLink 369.1 GB/s per direction, blocks storing at most
     * 19.25 GB/s each, gradual saturation N0 = nvlink_half_blocks = 3.17.
     * 24 NCCL channels from GPU 0 to GPU 1 (one bundled hop, wire 24, one
     * channel's wire 1): the link delivers 369.1 x 24 / (24 + 3.17), so each
     * channel moves 369.1 / 27.17 = 13.58 GB/s (its block could do 19.25):
     * 1 GB per channel in 27.17 / 369.1 s = 73.611 ms, plus the route's
     * 2 x 678.6 ns. Without the mechanism: 369.1 / 24 GB/s, 65.02 ms. Two
     * channels: the link would give 369.1 x 2 / 5.17 = 143 GB/s, more than
     * 2 x 19.25: block-bound, 1 GB in 1 / 19.25 s. A transfer of unknown
     * block count (a copy kernel of one block per SM) keeps the full rate:
     * 1 GB in 1 / 369.1 s. */
    err e = {0};
    topo *t = NULL;
    assert_int_equal(topo_load("h200-2x", &t, &e), 0);
    fabric *f = fabric_new(t, &e);
    sched *s = fabric_sched(f);
    int g0 = topo_gpu_node(t, 0), g1 = topo_gpu_node(t, 1);
    double lat = 2 * 678.6e-9;
    int a = fabric_xfer_channel(f, g0, -1, g1, 1e9, 24, 1, 0, 0, "24ch", &e);
    assert_true(a >= 0);
    assert_int_equal(sched_run(s, &e), 0);
    NEAR_REL((double)sched_end(s, a) * 1e-12, 27.17 / 369.1e9 * 1e9 + lat, 1e-6);
    fabric_reset(f);
    a = fabric_xfer_channel(f, g0, -1, g1, 1e9, 2, 1, 0, 0, "2ch", &e);
    assert_int_equal(sched_run(s, &e), 0);
    NEAR_REL((double)sched_end(s, a) * 1e-12, 1e9 / 19.25e9 + lat, 1e-6);
    fabric_reset(f);
    a = fabric_xfer(f, FAB_WRITE, g0, g1, 1e9, 1, 0, 0, "kernel", &e);
    assert_int_equal(sched_run(s, &e), 0);
    NEAR_REL((double)sched_end(s, a) * 1e-12, 1e9 / 369.1e9 + lat, 1e-6);
    fabric_disable(f, FAB_NO_NVLINK_SAT);
    fabric_reset(f);
    a = fabric_xfer_channel(f, g0, -1, g1, 1e9, 24, 1, 0, 0, "24ch", &e);
    assert_int_equal(sched_run(s, &e), 0);
    NEAR_REL((double)sched_end(s, a) * 1e-12, 24 / 369.1e9 * 1e9 + lat, 1e-6);
    fabric_free(f);
    topo_free(t);
}

static void test_block_pass(void **state)
{
    (void)state;
    /* LL's final receive on one block storing at most 3 GB/s: 1 GB of lines
     * (wire 2 per payload byte) in 2/3 s, alone; while a channel hop of the
     * same block (wire 1, 1 GB) runs, they share the block's 3 GB/s by
     * max-min: each at rate x with 2x + x = 3 GB/s until the pass ends
     * (1 GB at 1 GB/s: 1 s); the hop has moved 1 GB by then too: both 1 s. */
    topo *t = build();
    topo_params_mut(t)->cta_store_Bps = 3 * GB;
    finish(t);
    err e = {0};
    fabric *f = fabric_new(t, &e);
    sched *s = fabric_sched(f);
    int g0 = topo_gpu_node(t, 0), g1 = topo_gpu_node(t, 1);
    int a = fabric_block_pass(f, &g0, 1, 1e9, 2, 0, 0, 0, "pass", &e);
    assert_true(a >= 0);
    assert_int_equal(sched_run(s, &e), 0);
    NEAR_REL((double)sched_end(s, a) * 1e-12, 2.0 / 3.0, 1e-9);
    fabric_reset(f);
    a = fabric_block_pass(f, &g0, 1, 1e9, 2, 0, 0, 0, "pass", &e);
    int b = fabric_xfer_channel(f, g0, -1, g1, 1e9, 1, 1, 0, 0, "hop", &e);
    assert_int_equal(sched_run(s, &e), 0);
    NEAR_REL((double)sched_end(s, a) * 1e-12, 1.0, 1e-9);
    NEAR_REL((double)sched_end(s, b) * 1e-12, 1.0, 1e-6);
    fabric_free(f);
    topo_free(t);
}

/* One NCCL channel's block on h200-2x (cta_store 19.13 GB/s at the
 * reference 8 KiB in flight; ceilings 48.9 copying inside the GPU, 42.1
 * storing outside it), sending 1 GB into the peer over NVLink (379.4 GB/s,
 * one block: 379.4 / (1 + 4.27) = 72.0 GB/s; route 2 x 578.3 ns):
 * - Simple's send (64 KiB in flight, one round): its depth allows 8 x 19.13
 *   = 153 GB/s, its far stores the ceiling 42.1: 1e9 / 42.1e9 + 1.1566 us;
 * - with one local store per byte too (recvReduceCopySend): the ceiling
 *   sees 48.9 / 42.1 + 1 = 2.1615 per byte: 22.62 GB/s;
 * - LL128's recv-and-send (640 threads x 64 B = 40 KiB, two rounds, 128/120
 *   wire bytes): depth 19.13 / (1.0667 x 2 x 8192 / 40960) = 44.8 GB/s,
 *   ceiling 48.9 / (1.0667 x 48.9 / 42.1) = 39.47 GB/s;
 * - block-ceiling off: the reference block, 19.25 GB/s, whatever the depth.
 * Tolerance 1e-6. */
static void test_block_ceiling(void **state)
{
    (void)state;
    err e = {0};
    topo *t = NULL;
    assert_int_equal(topo_load("h200-2x", &t, &e), 0);
    fabric *f = fabric_new(t, &e);
    sched *s = fabric_sched(f);
    int g0 = topo_gpu_node(t, 0), g1 = topo_gpu_node(t, 1);
    fabric_leg leg = {FAB_WRITE, g0, g1};
    const double lat = 2 * 678.6e-9, ll128 = 128.0 / 120;
    const struct {
        fabric_block blk;
        double wire, rate;
        int off;
    } c[] = {
        {{g0, 1, 65536, 1, 0, 0}, 1, 42.1e9, 0},
        {{g0, 1, 65536, 1, 1, 0}, 1, 48.9e9 / (48.9 / 42.1 + 1), 0},
        {{g0, 1, 40960, 2, 0, 0}, ll128, 48.9e9 / (ll128 * 48.9 / 42.1), 0},
        {{g0, 1, 65536, 1, 1, 0}, 1, 19.25e9, FAB_NO_BLOCK_CEIL},
    };
    for (size_t i = 0; i < sizeof c / sizeof c[0]; i++) {
        fabric_reset(f);
        fabric_disable(f, c[i].off);
        int a = fabric_xfer_block(f, &leg, 1, &c[i].blk, 1e9, c[i].wire, 0, 0, "step", &e);
        assert_true(a >= 0);
        assert_int_equal(sched_run(s, &e), 0);
        NEAR_REL((double)sched_end(s, a) * 1e-12, 1e9 / c[i].rate + lat, 1e-6);
    }
    fabric_free(f);
    topo_free(t);
}

/* SHM receivers' blocks loading from host memory (h200-2x: cta_load_host
 * 6.07 GB/s at 8 KiB, a round trip of 8192 B / 6.07 GB/s = 1.34958 us;
 * Simple's 64 KiB in flight over 512 threads, 8 loads each, a trip 7 x
 * 17.2 ns + (65536 - 8192) B / 390 GB/s = 0.26743 us longer ("A trip's
 * issue"): 65536 B / 1.61701 us = 40.53 GB/s a block; the PCIe link down
 * under 128-byte loads, 51.53 / 1.085714 = 47.46 GB/s; the read's round
 * trip L = 2 x (515.2 + 202.5 + 100) ns = 1.6354 us, the preset's
 * read_extra_lat 0). The rate holds the round trip only where the block's
 * rounds bind: a step takes max(t, L + t_l), t the block's own time at its
 * rate and t_l the bytes at the link alone, so its latency is L - min(L,
 * max(0, t - t_l)):
 * - 4 channels as one flow, 1 MiB a channel: the link binds (11.87 GB/s a
 *   channel; a stream's 256 read tags, 256 x 128 B over the round trip,
 *   12.47, do not): t = 25.87 us < t_l = 88.35 us: 1 MiB / 11.87 + L;
 * - one channel of the reference block (8 KiB in flight, 6.07 GB/s, below
 *   its 256 read tags' 20.04 and the link), 1 MiB: t - t_l = 172.75 -
 *   22.09 us > L: 128 rounds, 1 MiB / 6.07 GB/s;
 * - the same, 4 KiB: t - t_l = 0.6748 - 0.0863 = 0.5885 us < L: 4 KiB /
 *   6.07 GB/s + L - 0.5885 us (= L + 4 KiB / 47.46 GB/s).
 * Tolerance 1e-6. */
static void test_block_host_trip(void **state)
{
    (void)state;
    err e = {0};
    topo *t = NULL;
    assert_int_equal(topo_load("h200-2x", &t, &e), 0);
    fabric *f = fabric_new(t, &e);
    sched *s = fabric_sched(f);
    int g0 = topo_gpu_node(t, 0);
    fabric_leg leg = {FAB_READ, fabric_hostmem_of(f, g0), g0};
    const double L = 2 * (515.2e-9 + 202.5e-9 + 100e-9);
    const double link = 51.53e9 / ((128.0 + 24) / 128 / ((256.0 + 24) / 256));
    struct {
        int ch;
        double inflight, bytes, want;
    } c[3] = {{4, 65536, 1048576, 1048576 / (link / 4) + L},
              {1, 8192, 1048576, 1048576 / 6.07e9},
              {1, 8192, 4096, 4096 / 6.07e9 + L - (4096 / 6.07e9 - 4096 / link)}};
    for (int i = 0; i < 3; i++) {
        fabric_reset(f);
        fabric_block blk = {g0, c[i].ch, c[i].inflight, 1, 0, 0};
        int a = fabric_xfer_block(f, &leg, 1, &blk, c[i].bytes, c[i].ch, 0, 0, "recv", &e);
        assert_true(a >= 0);
        assert_int_equal(sched_run(s, &e), 0);
        NEAR_REL((double)sched_end(s, a) * 1e-12, c[i].want, 1e-6);
    }
    fabric_free(f);
    topo_free(t);
}

/* A block's loads from host memory with no measured rate (docs/model.md "A
 * block's loads from host memory"): rtxpro6000-8x-pcie5-1s sets neither
 * cta_load_host nor cta_load (`collsim topo show`), so each thread's 16-byte
 * load waits its round trip: gpu0 <- mem0 one way 340.25 + 57.5 + 138.4 +
 * 100 = 636.15 ns (presets.c build_1s), L = 2 x 636.15 + 200 (read_extra_lat)
 * = 1472.3 ns; the reference block (512 threads, 8 KiB in flight) loads
 * 8192 B / L = 5.5641 GB/s, B / 8192 times that with B in flight (no trip-issue keys). The
 * route's narrowest link, gpu0-sw0 56.30 GB/s, under 128-byte loads carries
 * 56.30 / ((152 / 128) / (280 / 256)) = 51.855 GB/s. A step takes max(its
 * rounds x L, L + bytes / link):
 * - 8 KiB in flight, 64 KiB: 8 rounds, 8 x 1.4723 = 11.778 us (the link
 *   alone 1.2638 + 1.4723);
 * - 128 KiB in flight (16 x the reference, 89.03 GB/s), 1 MiB, with 768
 *   read tags (the preset's 256 x 128 B per trip would bind at 22.26 GB/s,
 *   the reference block's rate x 4: 768 give 66.77): the link binds, 1 MiB
 *   / 51.855 GB/s + L = 20.221 + 1.4723 us;
 * - load-trip off: the link alone, 64 KiB in 1.2638 + 1.4723 us.
 * fabric_cta_cap_to_Bps: one reference block 5.5641 GB/s, 3 blocks 16.69;
 * no GPU given, or load-trip off: 0 (unbounded). Tolerance 1e-6. */
static void test_load_trip(void **state)
{
    (void)state;
    err e = {0};
    topo *t = NULL;
    assert_int_equal(topo_load("rtxpro6000-8x-pcie5-1s", &t, &e), 0);
    topo_params_mut(t)->read_tags = 768;
    fabric *f = fabric_new(t, &e);
    sched *s = fabric_sched(f);
    int g0 = topo_gpu_node(t, 0), m = fabric_hostmem_of(f, g0);
    fabric_leg leg = {FAB_READ, m, g0};
    const double L = 2 * 636.15e-9 + 200e-9, ref = 8192 / L;
    const double link = 56.30e9 / ((152.0 / 128) / (280.0 / 256));
    struct {
        double inflight, bytes;
        int off;
        double want;
    } c[3] = {{8192, 65536, 0, 8 * L},
              {131072, 1048576, 0, 1048576 / link + L},
              {8192, 65536, FAB_NO_LOAD_TRIP, 65536 / link + L}};
    for (int i = 0; i < 3; i++) {
        fabric_reset(f);
        fabric_disable(f, c[i].off);
        fabric_block blk = {g0, 1, c[i].inflight, 1, 0, 0};
        int a = fabric_xfer_block(f, &leg, 1, &blk, c[i].bytes, 1, 0, 0, "recv", &e);
        assert_true(a >= 0);
        assert_int_equal(sched_run(s, &e), 0);
        NEAR_REL((double)sched_end(s, a) * 1e-12, c[i].want, 1e-6);
    }
    fabric_disable(f, 0);
    NEAR_REL(fabric_cta_cap_to_Bps(f, FAB_READ, 1, m, g0, 0, 0), ref, 1e-6);
    NEAR_REL(fabric_cta_cap_to_Bps(f, FAB_READ, 3, m, g0, 0, 0), 3 * ref, 1e-6);
    assert_true(fabric_cta_cap_to_Bps(f, FAB_READ, 1, m, -1, 0, 0) == 0);
    fabric_disable(f, FAB_NO_LOAD_TRIP);
    assert_true(fabric_cta_cap_to_Bps(f, FAB_READ, 1, m, g0, 0, 0) == 0);
    fabric_free(f);
    topo_free(t);
}

/* A trip's issue (fabric_host_load_scale, docs/model.md "A trip's issue"):
 * on h200-1x (cta_load_host 6.07 GB/s: the reference block, 512 threads x
 * one 16-byte load, 8192 B a round trip of 8192 / 6.07 GB/s = 1.34958 us;
 * trip_load 17.2 ns, trip 390 GB/s) a block's rate against the reference is
 * (B / 8192) x 1.34958 / (1.34958 + 17.2 ns x (U - 1) + (B - 8192) / 390
 * GB/s), U = B / (threads x 16):
 * - the reference shape: 1;
 * - 512 threads, U = 8 (NCCL Simple's receiver, 64 KiB): 8 x 1.34958 /
 *   (1.34958 + 0.1204 + 0.147031) = 6.6771 (40.53 GB/s, measured 38.96);
 * - 128 threads, U = 8 (16 KiB): 2 x 1.34958 / (1.34958 + 0.1204 +
 *   0.021005) = 1.81032 (10.99 GB/s, measured 10.34);
 * - 1024 threads, U = 1 (16 KiB): 2 x 1.34958 / (1.34958 + 0.021005) =
 *   1.96935;
 * - trip-issue off: B / 8192 (8, 2, 2); host-inflight off: 1. */
static void test_trip_issue(void **state)
{
    (void)state;
    err e = {0};
    topo *t = NULL;
    assert_int_equal(topo_load("h200-1x", &t, &e), 0);
    fabric *f = fabric_new(t, &e);
    const double ref = 8192 / 6.07e9;
    NEAR_REL(fabric_host_load_scale(f, 8192, 512), 1, 1e-9);
    NEAR_REL(fabric_host_load_scale(f, 65536, 512), 8 * ref / (ref + 0.1204e-6 + 57344 / 390e9),
             1e-9);
    NEAR_REL(fabric_host_load_scale(f, 65536, 0), 6.6771, 1e-4);
    NEAR_REL(fabric_host_load_scale(f, 16384, 128), 1.81032, 1e-4);
    NEAR_REL(fabric_host_load_scale(f, 16384, 1024), 1.96935, 1e-4);
    fabric_disable(f, FAB_NO_TRIP_ISSUE);
    NEAR_REL(fabric_host_load_scale(f, 65536, 512), 8, 1e-12);
    NEAR_REL(fabric_host_load_scale(f, 16384, 128), 2, 1e-12);
    fabric_disable(f, FAB_NO_HOST_INFLIGHT);
    NEAR_REL(fabric_host_load_scale(f, 65536, 512), 1, 1e-12);
    fabric_free(f);
    topo_free(t);
}

static void test_kernel_start(void **state)
{
    (void)state;
    /* A copy kernel's transfer starts after the kernel's own start
     * (kernel_base 3 us): 1 GB at 10 GB/s ends at 0.1 s + 3 us; a latency
     * probe (a flag between kernels already running) does not pay it. */
    topo *t = build();
    topo_params_mut(t)->kernel_base_ps = 3000000;
    finish(t);
    NEAR_REL(run_case(t, "0>1", FLOWS_WRITE, 0), 0.1 + 3e-6, 1e-9);
    err e = {0};
    fabric *f = fabric_new(t, &e);
    flows_case c = {0};
    sim_ps tp[1];
    assert_int_equal(flows_parse(t, "0>1", FLOWS_WRITE, 4, &c, &e), 0);
    c.pattern = "latency";
    assert_int_equal(flows_run(f, &c, tp, &e), 0);
    NEAR_REL((double)tp[0] * 1e-12, 4.0 / 10e9, 1e-9);
    flows_case_free(&c);
    fabric_free(f);
    topo_free(t);
}

/* Two GPUs on one switch, each GPU link 10 GB/s with 500 ns one way: a
 * route g0 -> g1 of 1 us. */
static topo *build_lat(void)
{
    topo *t = topo_new("fabric-test-lat");
    node(t, "cpu0", TOPO_CPU, 0, NULL);
    node(t, "sw0", TOPO_SWITCH, 0, "cpu0");
    add(t, "sw0", "cpu0", LINK_PCIE, 10 * GB);
    static const char *const g[] = {"g0", "g1"};
    for (int i = 0; i < 2; i++) {
        node(t, g[i], TOPO_GPU, 0, "sw0");
        err e = {0};
        topo_link l = {.a = topo_find(t, g[i]), .b = topo_find(t, "sw0"), .kind = LINK_PCIE,
                       .pcie_gen = 5, .pcie_width = 16, .bw_Bps = 10 * GB, .lat_ps = 500000};
        if (topo_add_link(t, &l, &e) < 0)
            fail_msg("link: %s", e.msg);
    }
    topo_params *p = topo_params_mut(t);
    p->read_tags = 16384;
    p->read_extra_lat_ps = 0;
    p->sm_req_bytes = 256;
    p->copy_setup_ps = 500000; /* 0.5 us per copy-engine copy */
    p->kernel_base_ps = 0;
    finish(t);
    return t;
}

static double run_4B(const topo *t, const char *pattern, flows_op op)
{
    err e = {0};
    fabric *f = fabric_new(t, &e);
    flows_case c = {0};
    sim_ps tp[1];
    assert_int_equal(flows_parse(t, "0>1", op, 4, &c, &e), 0);
    c.pattern = pattern;
    if (flows_run(f, &c, tp, &e))
        fail_msg("%s: %s", pattern, e.msg);
    flows_case_free(&c);
    fabric_free(f);
    return (double)tp[0] * 1e-12;
}

/* h200-2x (NVLink 369.1 GB/s per direction, 678.6 ns a hop, two hops GPU to
 * GPU through the NVSwitch; copy setup 0.558 us, a host copy's 1.574):
 * - a peer copy over NVLink is pushed by the source's engine (posted
 *   writes): 1 GB ends at 0.558 us + 2 x 678.6 ns + 1 GB / 369.1 GB/s; a
 *   pull by the destination's engine would wait a round trip, 4 x 678.6;
 * - a copy into host memory pays copy_host_setup, not copy_setup: with it
 *   at 5 us against 1 us the same copy ends 4 us later (0 = copy_setup);
 * - NVLink read requests (nvlink_req_bytes 16, not in the preset): two
 *   copy kernels of one block per SM (the full link) reading each other's
 *   memory load each direction with one's data and the other's requests,
 *   r (1 + 16 / (128 + 16)) = C, so 1 GB takes 1 GB x (1 + 1/9) / C: 1 GB
 *   x (1/9) / 369.1 GB/s = 301.03 us longer than one read alone, which
 *   keeps its own time (its requests cross an idle direction); without
 *   the key, or under nvlink-req off, the two are equal. */
static void test_nvlink_copies_and_requests(void **state)
{
    (void)state;
    err e = {0};
    topo *t = NULL;
    assert_int_equal(topo_load("h200-2x", &t, &e), 0);
    const double C = 369.1e9, L = 2 * 678.6e-9;
    NEAR_REL(run_case(t, "0>1", FLOWS_COPY, 0), 0.558e-6 + L + 1e9 / C, 1e-7);
    topo_params *p = topo_params_mut(t);
    p->copy_host_setup_ps = 5000000;
    double t5 = run_case(t, "0>h0", FLOWS_COPY, 0);
    p->copy_host_setup_ps = 1000000;
    double t1 = run_case(t, "0>h0", FLOWS_COPY, 0);
    NEAR((t5 - t1) * 1e6, 4.0, 1e-6);
    p->copy_host_setup_ps = 0;
    double t0 = run_case(t, "0>h0", FLOWS_COPY, 0);
    NEAR((t5 - t0) * 1e6, 5.0 - 0.558, 1e-6);
    double pair = run_case(t, "0>1", FLOWS_READ, 0), bidir = run_case(t, "0>1,1>0", FLOWS_READ, 0);
    NEAR((bidir - pair) * 1e6, 0, 1e-6);
    p->nvlink_req_bytes = 16;
    NEAR((run_case(t, "0>1", FLOWS_READ, 0) - pair) * 1e6, 0, 1e-6);
    NEAR((run_case(t, "0>1,1>0", FLOWS_READ, 0) - pair) * 1e6, 1e15 / 9 / C, 1e-3);
    NEAR((run_case(t, "0>1,1>0", FLOWS_READ, FAB_NO_NVLINK_REQ) - pair) * 1e6, 0, 1e-6);
    topo_free(t);
}

/* DLLPs on the reverse direction (tlp_dllp_bytes 16): g0 and g1 on sw0, 10
 * GB/s links (stated for 256-byte writes, 280 wire bytes: o = 24). A
 * receiver returns 16 wire bytes per TLP on the link's other direction, in
 * link units 16 x 256 / 280 bytes:
 * - copy writes 0>1 and 1>0 at once: each direction carries one flow's TLPs
 *   and the other's DLLPs, x (1 + 16 / 280) = C, so 1 GB takes 1 GB x (16 /
 *   280) / 10 GB/s = 5.714 ms longer than one write alone, whose DLLPs cross
 *   idle wires (its time as without the key); with dllp off, no longer;
 * - one copy read 1>0 (g0 reads g1 in 512-byte requests): its data
 *   direction also carries the DLLPs of its own requests, 16 x 256 / 280 /
 *   512 = 8 / 280 per byte, so 1 GB takes 1 GB x (8 / 280) / 10 GB/s =
 *   2.857 ms longer than without the key. */
static void test_dllp_reverse(void **state)
{
    (void)state;
    topo *t = build_lat();
    topo_params *p = topo_params_mut(t);
    p->pcie_mps_bytes = 256;
    p->pcie_mrrs_bytes = 512;
    p->pcie_tlp_overhead_bytes = 24;
    double w1 = run_case(t, "0>1", FLOWS_COPY_WRITE, 0);
    double r0 = run_case(t, "1>0", FLOWS_COPY_READ, 0);
    p->tlp_dllp_bytes = 16;
    NEAR((run_case(t, "0>1", FLOWS_COPY_WRITE, 0) - w1) * 1e3, 0, 1e-9);
    NEAR((run_case(t, "0>1,1>0", FLOWS_COPY_WRITE, 0) - w1) * 1e3, 1e9 * 16 / 280 / 10e9 * 1e3,
         1e-6);
    NEAR((run_case(t, "0>1,1>0", FLOWS_COPY_WRITE, FAB_NO_DLLP) - w1) * 1e3, 0, 1e-9);
    NEAR((run_case(t, "1>0", FLOWS_COPY_READ, 0) - r0) * 1e3, 1e9 * 8 / 280 / 10e9 * 1e3, 1e-6);
    topo_free(t);
}

static void test_stream_of_pushes(void **state)
{
    (void)state;
    /* p2pBandwidthLatencyTest's latency matrix: copies queued back to back
     * in one stream, timed per copy. g0 -> g1 is 1 us one way, 4 B move in
     * 0.4 ns at 10 GB/s, a copy-engine copy costs 0.5 us of setup.
     * - a flag (op write, pattern latency): the flight, 1 us + 0.4 ns;
     * - one copy alone (pattern pair, copy-write): setup + flight + bytes,
     *   1.5 us + 0.4 ns;
     * - a stream of pushes (pattern latency, copy-write): a copy is done when
     *   its last write has left, so each costs setup + bytes, 0.5 us + 0.4 ns,
     *   whatever the route (the flight is paid once per stream);
     * - a stream of pulls (copy-read) waits for each copy's completions:
     *   setup + the round trip 2 x 1 us + bytes = 2.5 us + 0.4 ns. */
    topo *t = build_lat();
    const double b = 4 / 10e9;
    NEAR_REL(run_4B(t, "latency", FLOWS_WRITE), 1e-6 + b, 1e-6);
    NEAR_REL(run_4B(t, "pair", FLOWS_COPY_WRITE), 1.5e-6 + b, 1e-6);
    NEAR_REL(run_4B(t, "latency", FLOWS_COPY_WRITE), 0.5e-6 + b, 1e-6);
    NEAR_REL(run_4B(t, "latency", FLOWS_COPY_READ), 2.5e-6 + b, 1e-6);
    topo_free(t);
}

static void test_read_group_order(void **state)
{
    (void)state;
    /* A reader's interleaved group is bounded by its slowest stream's own
     * read cap, whatever the order of its peers. On the default preset GPU0
     * reads 100 MB from GPU4 (other socket: RTT 2 x 1.315 + 0.2 = 2.83 us,
     * SM bound with the preset's 768 tags 768 x 128 B / 2.83 us = 34.7
     * GB/s) and from GPU1 (same switch, 60.3 GB/s): per stream 34.7 / 2
     * GB/s, so each stream's 100 MB takes 1e8 x 2 x 2.83e-6 / 98304 =
     * 5.758 ms, plus the 2.83 us round trip, in either order. */
    err e = {0};
    topo *t = NULL;
    assert_int_equal(topo_load("rtxpro6000-8x-pcie5-2s", &t, &e), 0);
    fabric *f = fabric_new(t, &e);
    sched *s = fabric_sched(f);
    int g0 = topo_gpu_node(t, 0), ab[2] = {topo_gpu_node(t, 4), topo_gpu_node(t, 1)};
    int ba[2] = {ab[1], ab[0]};
    double want = 1e8 * 2 * 2.83e-6 / 98304 + 2.83e-6;
    int x = fabric_xfer_group(f, FAB_READ, g0, ab, 2, 1e8, 1, 0, 0, "ab", &e);
    assert_int_equal(sched_run(s, &e), 0);
    NEAR_REL((double)sched_end(s, x) * 1e-12, want, 1e-6);
    fabric_reset(f);
    x = fabric_xfer_group(f, FAB_READ, g0, ba, 2, 1e8, 1, 0, 0, "ba", &e);
    assert_int_equal(sched_run(s, &e), 0);
    NEAR_REL((double)sched_end(s, x) * 1e-12, want, 1e-6);
    fabric_free(f);
    topo_free(t);
}

static void test_staged(void **state)
{
    (void)state;
    /* NCCL's SHM hop, g0 -> host memory of socket 0 (here the CPU node) ->
     * g1, after a 1 s delay: one pipelined flow over both routes. Up to cpu0
     * and back down, every link at 10 GB/s and no latency: 1 GB moves in
     * 0.1 s once the delay has ended, so it ends at 1.1 s (the two halves
     * are neither serialised nor started before their data is ready). */
    topo *t = build();
    finish(t);
    err e = {0};
    fabric *f = fabric_new(t, &e);
    sched *s = fabric_sched(f);
    int d = sched_delay(s, 1000000000000LL, 0, "ready");
    int x = fabric_xfer_channel(f, topo_gpu_node(t, 0), fabric_hostmem_of(f, topo_gpu_node(t, 1)),
                                topo_gpu_node(t, 1), 1e9, 1, 0, 0, 0, "shm", &e);
    assert_true(d >= 0 && x >= 0);
    assert_int_equal(sched_dep(s, d, x), 0);
    assert_int_equal(sched_run(s, &e), 0);
    NEAR_REL((double)sched_start(s, x) * 1e-12, 1.0, 1e-12);
    NEAR_REL((double)sched_end(s, x) * 1e-12, 1.1, 1e-9);
    fabric_free(f);
    topo_free(t);
}

static void test_copy_staged(void **state)
{
    (void)state;
    /* A peer copy without P2P, g0 -> g2: the source's copy engine writes into
     * host memory next to g2 (socket 0: the CPU node here), g2's engine reads
     * it back, pipelined: one transfer over g0 -> sw0 -> rp0 -> cpu0 and
     * cpu0 -> rp1 -> sw1 -> g2, every link 10 GB/s, no latency: 1 GB in
     * 0.1 s, plus two copy setups (2 x 5 us). A second copy from g1 at the
     * same time shares g0's switch uplink sw0 -> rp0 and rp0 -> cpu0: each
     * at 5 GB/s, 0.2 s. */
    topo *t = build();
    topo_params_mut(t)->copy_setup_ps = 5000000;
    finish(t);
    /* (the links alone: the driver's chunk pipeline is test_staged_pipeline's) */
    NEAR_REL(run_case(t, "0>2", FLOWS_COPY_STAGED, FAB_NO_STAGED_POOL), 0.1 + 10e-6, 1e-9);
    NEAR_REL(run_case(t, "0>2,1>3", FLOWS_COPY_STAGED, FAB_NO_STAGED_POOL), 0.2 + 10e-6, 1e-9);
    topo_free(t);
    /* NCCL's SHM hop g0 -> host -> g2 on one channel with blocks storing
     * 1 GB/s and loading 2 GB/s: SM stores up and SM loads down, the slower
     * block bounds it: 1 GB in 1 s; a copy engine up (NCCL_SHM_USE_CUDA_MEMCPY,
     * mode 1): only the receiver's block, 0.5 s; copy engines both ways (mode
     * 3): the 10 GB/s links, 0.1 s. */
    t = build();
    topo_params_mut(t)->cta_store_Bps = 1 * GB;
    topo_params_mut(t)->cta_load_Bps = 2 * GB;
    finish(t);
    err e = {0};
    fabric *f = fabric_new(t, &e);
    sched *s = fabric_sched(f);
    int g0 = topo_gpu_node(t, 0), g2 = topo_gpu_node(t, 2), mem = fabric_hostmem_of(f, g2);
    static const fab_op up[3] = {FAB_WRITE, FAB_CE_WRITE, FAB_CE_WRITE};
    static const fab_op down[3] = {FAB_READ, FAB_READ, FAB_CE_READ};
    static const double want[3] = {1.0, 0.5, 0.1};
    for (int k = 0; k < 3; k++) {
        fabric_reset(f);
        int x = fabric_xfer_staged(f, up[k], g0, mem, down[k], g2, 1e9, 1, 1, 0, 0, 0, "shm", &e);
        assert_true(x >= 0);
        assert_int_equal(sched_run(s, &e), 0);
        NEAR_REL((double)sched_end(s, x) * 1e-12, want[k], 1e-9);
    }
    assert_true(fabric_xfer_staged(f, FAB_READ, g0, mem, FAB_READ, g2, 1, 1, 1, 0, 0, 0, "x", &e) < 0);
    fabric_free(f);
    topo_free(t);
}

static void test_staged_pipeline(void **state)
{
    (void)state;
    /* The driver's chunk pipeline (docs/model.md "Staged peer copies"), on
     * build()'s 10 GB/s links, copy setup s = 5 us, chunks C = 1 MB, P = 2
     * buffers, hand-over L = 80 us. Each half of a chunk: a = b = s + C / 10
     * GB/s = 105 us; a buffer's turn a + b + L = 290 us, two buffers turning
     * at once: a chunk every max(a, b, 290 / 2) = 145 us, 6.897 GB/s: 1 GB
     * in 0.145 s plus the two setups of the first chunk (10 us). */
    topo *t = build();
    topo_params *p = topo_params_mut(t);
    p->copy_setup_ps = 5000000;
    p->staged_chunk_bytes = 1e6;
    p->staged_buffers = 2;
    p->staged_handover_ps = 80000000;
    finish(t);
    NEAR_REL(run_case(t, "0>2", FLOWS_COPY_STAGED, 0), 0.145 + 10e-6, 1e-9);
    /* Both directions at once (2>0 stages into host memory next to g0, the
     * same socket): the links carry each direction apart, but the two copies
     * share the process's pool, one buffer each: a chunk every 290 us per
     * copy, 0.290 s each, where independent pipelines would take 0.145. */
    NEAR_REL(run_case(t, "0>2,2>0", FLOWS_COPY_STAGED, 0), 0.290 + 10e-6, 1e-9);
    /* Without the pool (ablation): the links alone, 1 GB at 10 GB/s. */
    NEAR_REL(run_case(t, "0>2", FLOWS_COPY_STAGED, FAB_NO_STAGED_POOL), 0.1 + 10e-6, 1e-9);
    /* One buffer: the halves in series and the hand-over, every 290 us: 0.290 s,
     * slower than the halves alone one after the other (0.210 s). */
    p->staged_buffers = 1;
    NEAR_REL(run_case(t, "0>2", FLOWS_COPY_STAGED, 0), 0.290 + 10e-6, 1e-9);
    /* A fast hand-over (L = 0) with two buffers: the link binds, 0.105 s per
     * 1 GB (each chunk's half also pays its setup: a = 105 us per 100 us of
     * bytes). */
    p->staged_buffers = 2;
    p->staged_handover_ps = 0;
    NEAR_REL(run_case(t, "0>2", FLOWS_COPY_STAGED, 0), 0.105 + 10e-6, 1e-9);
    topo_free(t);
}

static void test_host_blocks(void **state)
{
    (void)state;
    /* Thread blocks against host memory have rates of their own: one block
     * loading 2 GB/s from pinned host memory (cta_load_host) but 5 GB/s from
     * a peer (cta_load): 1 GB from host memory in 0.5 s, from g1 in 0.2 s;
     * stores into host memory with no host figure fall back to the peer's
     * (4 GB/s: 0.25 s). An SHM channel g0 -> host -> g2 (stores 4, host
     * loads 2): the receiver's block bounds it, 0.5 s. */
    topo *t = build();
    topo_params *p = topo_params_mut(t);
    p->cta_load_Bps = 5 * GB;
    p->cta_store_Bps = 4 * GB;
    p->cta_load_host_Bps = 2 * GB;
    finish(t);
    err e = {0};
    fabric *f = fabric_new(t, &e);
    flows_case c = {0};
    sim_ps tp[64];
    assert_int_equal(flows_parse(t, "h0>0", FLOWS_READ, 1e9, &c, &e), 0);
    c.blocks = 1;
    assert_int_equal(flows_run(f, &c, tp, &e), 0);
    NEAR_REL((double)tp[0] * 1e-12, 0.5, 1e-9);
    assert_int_equal(flows_parse(t, "1>0", FLOWS_READ, 1e9, &c, &e), 0);
    c.blocks = 1;
    assert_int_equal(flows_run(f, &c, tp, &e), 0);
    NEAR_REL((double)tp[0] * 1e-12, 0.2, 1e-9);
    assert_int_equal(flows_parse(t, "0>h0", FLOWS_WRITE, 1e9, &c, &e), 0);
    c.blocks = 1;
    assert_int_equal(flows_run(f, &c, tp, &e), 0);
    NEAR_REL((double)tp[0] * 1e-12, 0.25, 1e-9);
    flows_case_free(&c);
    fabric_reset(f);
    int g0 = topo_gpu_node(t, 0), g2 = topo_gpu_node(t, 2);
    int x = fabric_xfer_channel(f, g0, fabric_hostmem_of(f, g2), g2, 1e9, 1, 1, 0, 0, "shm", &e);
    assert_int_equal(sched_run(fabric_sched(f), &e), 0);
    NEAR_REL((double)sched_end(fabric_sched(f), x) * 1e-12, 0.5, 1e-9);
    fabric_free(f);
    topo_free(t);
}

static void test_host_inflight_and_mixed(void **state)
{
    (void)state;
    /* A block's loads from host memory move its bytes in flight per round
     * trip: cta_load_host 1 GB/s is the 8 KiB block; a copy kernel of one block
     * with 32 KiB in flight (512 threads x 4 loads) loads 4 GB/s: 1 GB from
     * host memory in 0.25 s (the 10 GB/s links do not bind); 128 KiB: 16 GB/s
     * would pass the links, so the first 10 GB/s link bounds it, 0.1 s.
     * Stores keep their figure (cta_store_host 2 GB/s): 0.5 s whatever the
     * depth. */
    topo *t = build();
    topo_params *p = topo_params_mut(t);
    p->cta_load_host_Bps = 1 * GB;
    p->cta_store_host_Bps = 2 * GB;
    finish(t);
    err e = {0};
    fabric *f = fabric_new(t, &e);
    flows_case c = {0};
    sim_ps tp[64];
    static const double inflight[3] = {32768, 131072, 0}, want[3] = {0.25, 0.1, 1.0};
    for (int k = 0; k < 3; k++) {
        assert_int_equal(flows_parse(t, "h0>0", FLOWS_READ, 1e9, &c, &e), 0);
        c.blocks = 1;
        c.inflight_B = inflight[k];
        assert_int_equal(flows_run(f, &c, tp, &e), 0);
        NEAR_REL((double)tp[0] * 1e-12, want[k], 1e-9);
    }
    assert_int_equal(flows_parse(t, "0>h0", FLOWS_WRITE, 1e9, &c, &e), 0);
    c.blocks = 1;
    c.inflight_B = 131072;
    assert_int_equal(flows_run(f, &c, tp, &e), 0);
    NEAR_REL((double)tp[0] * 1e-12, 0.5, 1e-9);
    flows_case_free(&c);
    /* An SHM hop g0 -> host -> g2 (NCCL Simple: the receiver keeps 64 KiB in
     * flight, 8 x the reference): the receiver's block loads 8 GB/s, the
     * sender's stores 2 GB/s bound it: 1 GB in 0.5 s; with the reference
     * depth (0) the receiver's 1 GB/s binds: 1 s. */
    fabric_free(f);
    f = fabric_new(t, &e);
    int g0 = topo_gpu_node(t, 0), g1 = topo_gpu_node(t, 1), g2 = topo_gpu_node(t, 2);
    int mem = fabric_hostmem_of(f, g2);
    static const double depth[2] = {65536, 0}, want2[2] = {0.5, 1.0};
    for (int k = 0; k < 2; k++) {
        fabric_reset(f);
        int x = fabric_xfer_staged(f, FAB_WRITE, g0, mem, FAB_READ, g2, 1e9, 1, 1, depth[k], 0, 0,
                                   "shm", &e);
        assert_true(x >= 0);
        assert_int_equal(sched_run(fabric_sched(f), &e), 0);
        NEAR_REL((double)sched_end(fabric_sched(f), x) * 1e-12, want2[k], 1e-9);
    }
    fabric_free(f);
    topo_free(t);
    /* Loads and stores at once: host_sm_mixed 6 GB/s per GPU, both directions
     * counted, no block bounds. The SHM channel bound of a ring of two GPUs
     * g0 <-> g1 (one switch sw0, the CPU's host memory), each sending 1 GB to
     * the other: each GPU's budget carries its own stores (1 GB) and its own
     * loads (1 GB), 2 GB at 6 GB/s; the links carry 2 GB each way on
     * sw0 -> rp0 at 10 GB/s (0.2 s): the budget binds, 2 / 6 = 0.333 s. One
     * hop alone: g0's budget carries 1 GB (its stores), g1's 1 GB (its loads):
     * 1/6 s, slower than the 10 GB/s links (0.1 s). */
    t = build();
    topo_params_mut(t)->host_sm_mixed_Bps = 6 * GB;
    finish(t);
    f = fabric_new(t, &e);
    int m0 = fabric_hostmem_of(f, g0);
    int a = fabric_xfer_staged(f, FAB_WRITE, g0, m0, FAB_READ, g1, 1e9, 1, 0, 0, 0, 0, "a", &e);
    int b = fabric_xfer_staged(f, FAB_WRITE, g1, m0, FAB_READ, g0, 1e9, 1, 0, 0, 0, 1, "b", &e);
    assert_true(a >= 0 && b >= 0);
    assert_int_equal(sched_run(fabric_sched(f), &e), 0);
    NEAR_REL((double)sched_end(fabric_sched(f), a) * 1e-12, 1.0 / 3, 1e-9);
    NEAR_REL((double)sched_end(fabric_sched(f), b) * 1e-12, 1.0 / 3, 1e-9);
    fabric_reset(f);
    a = fabric_xfer_staged(f, FAB_WRITE, g0, m0, FAB_READ, g1, 1e9, 1, 0, 0, 0, 0, "a", &e);
    assert_int_equal(sched_run(fabric_sched(f), &e), 0);
    NEAR_REL((double)sched_end(fabric_sched(f), a) * 1e-12, 1.0 / 6, 1e-9);
    fabric_free(f);
    topo_free(t);
}

static void test_breakdown_sums(void **state)
{
    (void)state;
    /* Where the time goes adds up to the predicted time, for every
     * algorithm on the default preset at the reference sizes; a one-shot
     * pull there waits on collapsed read completions (contention > 0) and
     * meets at a flag barrier (barrier > 0); a ring has no barrier. */
    err e = {0};
    topo *t = NULL;
    assert_int_equal(topo_load("rtxpro6000-8x-pcie5-2s", &t, &e), 0);
    coll_ctx *c = coll_ctx_new(t);
    static const coll_algo algos[] = {ALGO_RING, ALGO_ONESHOT, ALGO_TWOSHOT,
                                      ALGO_ONESHOT_PUSH, ALGO_TWOSHOT_PUSH};
    for (size_t i = 0; i < sizeof algos / sizeof algos[0]; i++)
        for (uint64_t s = 14336; s <= 43008; s += 28672) {
            coll_req r;
            coll_req_init(&r, t);
            r.algo = algos[i];
            r.bytes = s;
            coll_result res;
            assert_int_equal(coll_predict(c, &r, &res, &e), 0);
            assert_int_equal(res.barrier_ps + res.fixed_ps + res.transfer_ps + res.contention_ps,
                             res.time_ps);
            if (algos[i] == ALGO_ONESHOT) {
                assert_true(res.contention_ps > 0 && res.barrier_ps > 0);
            }
            if (algos[i] == ALGO_RING)
                assert_int_equal(res.barrier_ps, 0);
        }
    coll_ctx_free(c);
    topo_free(t);
}

static void test_oneshot_graph_barrier(void **state)
{
    (void)state;
    /* In a CUDA graph the one-shot pull keeps both barriers (vLLM's
     * barrier_at_end runs in graphs too); its kernel start is the eager one
     * less what a graph node saves over a launch, kernel_base - (launch -
     * graph_node), at least graph_node: on the default preset (kernel_base
     * 2, launch 4, graph node 1.5 us) 1.5 us, so the graph run is 0.5 us
     * shorter with the same barrier time. */
    err e = {0};
    topo *t = NULL;
    assert_int_equal(topo_load("rtxpro6000-8x-pcie5-2s", &t, &e), 0);
    coll_ctx *c = coll_ctx_new(t);
    coll_req r;
    coll_req_init(&r, t);
    r.algo = ALGO_ONESHOT;
    r.bytes = 43008;
    coll_result eager, graph;
    assert_int_equal(coll_predict(c, &r, &eager, &e), 0);
    r.graph = 1;
    assert_int_equal(coll_predict(c, &r, &graph, &e), 0);
    assert_int_equal(eager.barrier_ps, graph.barrier_ps);
    assert_int_equal(eager.time_ps - graph.time_ps, 500000);
    coll_ctx_free(c);
    topo_free(t);
}

/* pcie-8's shape by hand: per socket s a CPU with host memory (10 GB/s each
 * way), a root port (40 GB/s to the CPU) and two switches of two GPUs, every
 * PCIe link 40 GB/s, the socket link 40 GB/s; latencies 0. */
static topo *ring8(void)
{
    topo *t = topo_new("ring8");
    char a[16], b[16], c[16];
    for (int s = 0; s < 2; s++) {
        snprintf(a, sizeof a, "cpu%d", s);
        snprintf(b, sizeof b, "mem%d", s);
        snprintf(c, sizeof c, "rp%d", s);
        node(t, a, TOPO_CPU, s, NULL);
        node(t, b, TOPO_HOSTMEM, s, NULL);
        add(t, a, b, LINK_MEM, 10 * GB);
        node(t, c, TOPO_ROOT, s, a);
        add(t, c, a, LINK_FABRIC, 40 * GB);
    }
    add(t, "cpu0", "cpu1", LINK_SOCKET, 40 * GB);
    for (int w = 0; w < 4; w++) {
        snprintf(a, sizeof a, "sw%d", w);
        snprintf(b, sizeof b, "rp%d", w / 2);
        node(t, a, TOPO_SWITCH, w / 2, b);
        add(t, a, b, LINK_PCIE, 40 * GB);
    }
    for (int g = 0; g < 8; g++) {
        snprintf(a, sizeof a, "g%d", g);
        snprintf(b, sizeof b, "sw%d", g / 2);
        node(t, a, TOPO_GPU, g / 4, b);
        add(t, a, b, LINK_PCIE, 40 * GB);
    }
    topo_params *p = topo_params_mut(t);
    p->read_tags = 16384;
    p->read_extra_lat_ps = 0;
    p->sm_req_bytes = 256;
    finish(t);
    return t;
}

/* Ring hops r -> r+1 of 1 GB, started together: odd hops through the
 * receiver's host memory (SHM: a write into it, the receiver's read), even
 * ones P2P writes; ends[r] for r < nrun (the hops run). */
static void ring8_run(fabric *f, const fabric_hop *h, int nrun, sim_ps *ends)
{
    err e = {0};
    int id[8];
    for (int r = 0; r < nrun; r++) {
        id[r] = h[r].nlegs == 1
                    ? fabric_xfer_channel(f, h[r].a[0], -1, h[r].b[0], 1e9, 1, 0, 0, r, "p2p", &e)
                    : fabric_xfer_staged(f, FAB_WRITE, h[r].a[0], h[r].b[0], FAB_READ, h[r].b[1],
                                         1e9, 1, 0, 0, 0, r, "shm", &e);
        assert_true(id[r] >= 0);
    }
    assert_int_equal(sched_run(fabric_sched(f), &e), 0);
    for (int r = 0; r < nrun; r++)
        ends[r] = sched_end(fabric_sched(f), id[r]);
    /* Every flow crosses an uplink (SHM hops) or none: once all have ended
     * the fabric holds no record of theirs, quotient or not. */
    assert_int_equal(fabric_live_groups(f), 0);
}

/* The quotient of bundled steps (docs/model.md "Bundled steps"). On ring8
 * hops 1 and 7 write into mem0, hops 3 and 5 into mem1: two flows share each
 * memory link at 10 GB/s, 5 GB/s each, so an SHM hop takes 0.2 s; a P2P hop
 * alone at 40 GB/s 0.025 s. Hop r + 4 is hop r's image (p = 4, orbits of 2
 * links), and run alone on the quotient, hops 0..3 end as in the full run:
 * hop 3 shares the orbit of mem1's links with hop 1 (without the quotient it
 * would be alone there: 0.1 s). Refused: p = 2 (hop 1 writes into its own
 * socket's memory, hop 3 across the socket link: not alike), and a ring of
 * g0..g3 with every hop through mem0, p = 2: hop r + 2 is hop r's image link
 * by link, but mem0's links are their own images, an orbit of 1 link where
 * the full run has 2 streams (the quotient would count one). */
static void test_rotation_quotient(void **state)
{
    (void)state;
    topo *t = ring8();
    err e = {0};
    fabric *f = fabric_new(t, &e);
    assert_non_null(f);
    fabric_hop h[8];
    for (int r = 0; r < 8; r++) {
        int src = topo_gpu_node(t, r), dst = topo_gpu_node(t, (r + 1) % 8);
        int mem = fabric_hostmem_of(f, dst);
        h[r] = r % 2 ? (fabric_hop){2, {FAB_WRITE, FAB_READ}, {src, mem}, {mem, dst}, dst}
                     : (fabric_hop){1, {FAB_WRITE, FAB_WRITE}, {src, -1}, {dst, -1}, dst};
    }
    sim_ps full[8], quot[4];
    ring8_run(f, h, 8, full);
    for (int r = 0; r < 8; r++)
        NEAR_REL((double)full[r] * 1e-12, r % 2 ? 0.2 : 0.025, 1e-9);
    fabric_reset(f);
    assert_int_equal(fabric_rotation_quotient(f, h, 8, 2), 0);
    assert_int_equal(fabric_rotation_quotient(f, h, 8, 4), 1);
    ring8_run(f, h, 4, quot);
    for (int r = 0; r < 4; r++)
        assert_int_equal(quot[r], full[r]);
    /* The quotient lasts one run: after a reset hop 3 alone on mem1 again. */
    fabric_reset(f);
    ring8_run(f, h, 4, quot);
    NEAR_REL((double)quot[3] * 1e-12, 0.1, 1e-9);
    fabric_reset(f);
    int mem0 = fabric_hostmem_of(f, topo_gpu_node(t, 0));
    for (int r = 0; r < 4; r++) {
        int src = topo_gpu_node(t, r), dst = topo_gpu_node(t, (r + 1) % 4);
        h[r] = (fabric_hop){2, {FAB_WRITE, FAB_READ}, {src, mem0}, {mem0, dst}, dst};
    }
    assert_int_equal(fabric_rotation_quotient(f, h, 4, 2), 0);
    fabric_free(f);
    topo_free(t);
}

/* One-shot writes on an NVLink crossbar bundled on the quotient: 4 GPUs,
 * each NVLink 400 GB/s into the switch and 100 GB/s out of it, latency 0;
 * saturation N0 = 4 blocks; every GPU writes 1 GB to each of its 3 peers as
 * one group of 4 blocks. A sender's link carries its own group (one sender,
 * 4 blocks): 400 x 4 / (4 + 4) = 200 GB/s for 3 streams; a receiver's carries
 * the groups of 3 senders, 12 blocks: 100 x 12 / 16 = 75 GB/s, 25 GB/s a
 * stream, which binds: 0.04 s. On the quotient (p = 1) GPU 0's group alone
 * crosses the orbit of the links out of the switch 3 times, each crossing
 * one of the 3 senders: the same 0.04 s (counted as one sender, 100 x 4 / 8
 * = 50 GB/s, it would take 0.06 s). */
/* Rank r's writes to its 3 peers r + 1, r + 2, r + 3 (ctx: the GPU nodes). */
static int xbar4_legs(void *ctx, int r, fab_op *op, int *a, int *b, int cap, int *pass_gpu)
{
    const int *node = ctx;
    if (cap < 3)
        return 3;
    for (int q = 1; q < 4; q++)
        op[q - 1] = FAB_WRITE, a[q - 1] = node[r], b[q - 1] = node[(r + q) % 4];
    *pass_gpu = -1;
    return 3;
}

/* The engine links of a fabric are reserved at once (sched_reserve_links),
 * not grown by doubling as they are added. nvswitch-64 (`collsim topo show
 * nvswitch-64`: 216 links; no block, socket-read or host-mix budget set):
 * each link's two directions, 2 x 216 = 432, and each GPU's read tags,
 * posted-write queue and its block's loads from host memory (no measured
 * rate: the round trip's, ldh_trip), 3 x 64 = 192: 624 engine links, and
 * room for exactly 624 (grown from 16 by doubling the room would be 1,024). */
static void test_links_reserved(void **state)
{
    (void)state;
    topo *t = NULL;
    err e = {0};
    assert_int_equal(topo_load("nvswitch-64", &t, &e), 0);
    assert_int_equal(topo_nlinks(t), 216);
    fabric *f = fabric_new(t, &e);
    assert_non_null(f);
    assert_int_equal(sched_nlinks(fabric_sched(f)), 624);
    assert_int_equal(sched_links_room(fabric_sched(f)), 624);
    fabric_free(f);
    topo_free(t);
}

/* A topology link's engine links are named when first asked for, as they
 * were when made: rtxpro6000-8x-pcie5-2s (`collsim topo show`) lists cpu0-mem0
 * as link 0 and the socket link cpu0-cpu1 as link 2, so engine links 0, 1 are
 * "cpu0>mem0", "mem0>cpu0" and 4, 5 "cpu0>cpu1", "cpu1>cpu0"; its socket link
 * is the only one, so the peer-read links of its two directions come first
 * after the 2 x ntl directions: "cpu0>cpu1.peer-reads", "cpu1>cpu0.peer-reads". */
static void test_link_names(void **state)
{
    (void)state;
    topo *t = NULL;
    err e = {0};
    assert_int_equal(topo_load("rtxpro6000-8x-pcie5-2s", &t, &e), 0);
    fabric *f = fabric_new(t, &e);
    assert_non_null(f);
    const sched *s = fabric_sched(f);
    int ntl = topo_nlinks(t);
    assert_string_equal(sched_link_name(s, 5), "cpu1>cpu0");
    assert_string_equal(sched_link_name(s, 0), "cpu0>mem0");
    assert_string_equal(sched_link_name(s, 1), "mem0>cpu0");
    assert_string_equal(sched_link_name(s, 4), "cpu0>cpu1");
    assert_string_equal(sched_link_name(s, 2 * ntl), "cpu0>cpu1.peer-reads");
    assert_string_equal(sched_link_name(s, 2 * ntl + 1), "cpu1>cpu0.peer-reads");
    fabric_free(f);
    topo_free(t);
}

/* A one-shot's writes from rank r to every peer (ctx: the GPU nodes, 16),
 * counting the hops whose legs it writes. */
typedef struct count_legs {
    const int *node;
    int fills;
} count_legs;

static int xbar16_legs(void *ctx, int r, fab_op *op, int *a, int *b, int cap, int *pass_gpu)
{
    count_legs *c = ctx;
    if (cap < 15)
        return 15;
    for (int q = 1; q < 16; q++)
        op[q - 1] = FAB_WRITE, a[q - 1] = c->node[r], b[q - 1] = c->node[(r + q) % 16];
    *pass_gpu = -1;
    c->fills++;
    return 15;
}

/* The rotation check takes each hop's legs once. nvswitch-16, p = 1: it
 * fills hop 0 (the representative), then the seven spread pairs r = 2k and
 * r + 1 for k = 1..7 (hops 2..15), which the pass over r = 0..15 takes
 * instead of filling them again, so that it fills hop 1 alone: 16 fills,
 * one per hop (filled again: 1 + 14 + 15 = 30). Every hop is its
 * predecessor's image on the crossbar: bundled (1). */
static void test_quotient_fills_once(void **state)
{
    (void)state;
    topo *t = NULL;
    err e = {0};
    assert_int_equal(topo_load("nvswitch-16", &t, &e), 0);
    fabric *f = fabric_new(t, &e);
    assert_non_null(f);
    int node_of[16];
    for (int g = 0; g < 16; g++)
        node_of[g] = topo_gpu_node(t, g);
    count_legs c = {node_of, 0};
    assert_int_equal(fabric_rotation_quotient_fn(f, xbar16_legs, &c, 16, 1), 1);
    assert_int_equal(c.fills, 16);
    fabric_free(f);
    topo_free(t);
}

static void test_quotient_nvlink_senders(void **state)
{
    (void)state;
    topo *t = topo_new("xbar4");
    err e = {0};
    node(t, "cpu0", TOPO_CPU, 0, NULL);
    node(t, "nvs", TOPO_NVSWITCH, -1, NULL);
    char nm[8];
    for (int g = 0; g < 4; g++) {
        snprintf(nm, sizeof nm, "g%d", g);
        node(t, nm, TOPO_GPU, 0, "cpu0");
        /* (each GPU's PCIe link to the CPU, 1 us: no GPU pair's route) */
        topo_link l = {.a = topo_find(t, nm), .b = topo_find(t, "nvs"), .kind = LINK_NVLINK,
                       .nvlinks = 1, .bw_Bps = 400 * GB, .bw_back_Bps = 100 * GB, .lat_ps = 0},
                  pl = {.a = topo_find(t, nm), .b = topo_find(t, "cpu0"), .kind = LINK_PCIE,
                        .pcie_gen = 5, .pcie_width = 16, .bw_Bps = 10 * GB, .lat_ps = 1000000};
        if (topo_add_link(t, &l, &e) < 0 || topo_add_link(t, &pl, &e) < 0)
            fail_msg("link: %s", e.msg);
    }
    topo_params_mut(t)->nvlink_half_blocks = 4;
    finish(t);
    fabric *f = fabric_new(t, &e);
    assert_non_null(f);
    int node_of[4], peers[3];
    for (int g = 0; g < 4; g++)
        node_of[g] = topo_gpu_node(t, g);
    for (int pass = 0; pass < 2; pass++) {
        /* pass 0: every GPU's group; pass 1: GPU 0's on the quotient */
        fabric_reset(f);
        int run = 4;
        if (pass == 1) {
            assert_int_equal(fabric_rotation_quotient_fn(f, xbar4_legs, node_of, 4, 1), 1);
            run = 1;
        }
        int id[4];
        for (int r = 0; r < run; r++) {
            for (int q = 1; q < 4; q++)
                peers[q - 1] = node_of[(r + q) % 4];
            id[r] = fabric_xfer_group_blocks(f, FAB_WRITE, node_of[r], peers, 3, 1e9, 1, 0, 4, 0,
                                             r, "push", &e);
            assert_true(id[r] >= 0);
        }
        assert_int_equal(sched_run(fabric_sched(f), &e), 0);
        for (int r = 0; r < run; r++)
            NEAR_REL((double)sched_end(fabric_sched(f), id[r]) * 1e-12, 0.04, 1e-9);
        assert_int_equal(fabric_live_groups(f), 0);
    }
    fabric_free(f);
    topo_free(t);
}

/* The rotation's check compares the figures of every pair of route links
 * it maps (and, once a pair is found alike, not again): on the crossbar of
 * test_quotient_nvlink_senders with every link alike, GPU r's writes to its
 * 3 peers are GPU 0's rotated r times (accepted, p = 1); with g3's link out
 * of the switch at 50 GB/s (100 for the others), hop 0's write to g2 and
 * hop 1's to g3 cross links of different capacities at the same place, so
 * hop 1 is no image of hop 0: refused at the first hop (0). */
static void test_quotient_unlike_links(void **state)
{
    (void)state;
    for (int slow = 0; slow < 2; slow++) {
        topo *t = topo_new("xbar4");
        err e = {0};
        node(t, "cpu0", TOPO_CPU, 0, NULL);
        node(t, "nvs", TOPO_NVSWITCH, -1, NULL);
        char nm[8];
        for (int g = 0; g < 4; g++) {
            snprintf(nm, sizeof nm, "g%d", g);
            node(t, nm, TOPO_GPU, 0, "cpu0");
            topo_link l = {.a = topo_find(t, nm), .b = topo_find(t, "nvs"), .kind = LINK_NVLINK,
                           .nvlinks = 1, .bw_Bps = 400 * GB,
                           .bw_back_Bps = (slow && g == 3 ? 50 : 100) * GB, .lat_ps = 0},
                      pl = {.a = topo_find(t, nm), .b = topo_find(t, "cpu0"), .kind = LINK_PCIE,
                            .pcie_gen = 5, .pcie_width = 16, .bw_Bps = 10 * GB, .lat_ps = 1000000};
            if (topo_add_link(t, &l, &e) < 0 || topo_add_link(t, &pl, &e) < 0)
                fail_msg("link: %s", e.msg);
        }
        finish(t);
        fabric *f = fabric_new(t, &e);
        assert_non_null(f);
        int node_of[4];
        for (int g = 0; g < 4; g++)
            node_of[g] = topo_gpu_node(t, g);
        assert_int_equal(fabric_rotation_quotient_fn(f, xbar4_legs, node_of, 4, 1), !slow);
        fabric_free(f);
        topo_free(t);
    }
}

static void test_mech_parse(void **state)
{
    (void)state;
    err e = {0};
    int off = 0;
    assert_int_equal(fabric_mech_parse("hol,read-collapse", &off, &e), 0);
    assert_int_equal(off, FAB_NO_HOL | FAB_NO_COLLAPSE_READ);
    assert_int_equal(fabric_mech_parse("hol,bogus", &off, &e), ERR_USAGE);
    assert_non_null(strstr(e.msg, "'bogus'"));
    /* Every mechanism the message offers parses, each to its own bit: all
     * twenty-three together switch off 1 + 2 + 4 + ... + 4194304 = 8388607. */
    assert_non_null(strstr(e.msg, "(write-collapse, read-collapse, hol, req-size, socket-read, "
                               "nvlink-sat, serial-loads, host-inflight, host-mixed, "
                               "block-ceiling, shm-order, fifo-l2, first-round, l2-sources, "
                               "shm-poll, trip-issue, nvlink-req, turn-others, own-round, load-trip, "
                               "whole-rounds, dllp, round-skew, staged-pool)"));
    assert_int_equal(fabric_mech_parse("write-collapse,read-collapse,hol,req-size,socket-read,"
                                       "nvlink-sat,serial-loads,host-inflight,host-mixed,"
                                       "block-ceiling,shm-order,fifo-l2,first-round,l2-sources,"
                                       "shm-poll,trip-issue,nvlink-req,turn-others,own-round,load-trip,"
                                       "whole-rounds,dllp,round-skew", &off, &e), 0);
    assert_int_equal(off, 8388607);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_read_collapse),     cmocka_unit_test(test_write_collapse_group),
        cmocka_unit_test(test_turn_collapse),
        cmocka_unit_test(test_turn_mix),    cmocka_unit_test(test_gpu_read_tags),
        cmocka_unit_test(test_ce_read_tags),
        cmocka_unit_test(test_groups_released),
        cmocka_unit_test(test_head_of_line),      cmocka_unit_test(test_request_size),
        cmocka_unit_test(test_socket_read_and_back_rate), cmocka_unit_test(test_staged),
        cmocka_unit_test(test_cta_blocks),       cmocka_unit_test(test_channel_block),
        cmocka_unit_test(test_kernel_start),     cmocka_unit_test(test_read_group_order),
        cmocka_unit_test(test_breakdown_sums),    cmocka_unit_test(test_oneshot_graph_barrier),
        cmocka_unit_test(test_rotation_quotient), cmocka_unit_test(test_quotient_nvlink_senders),
        cmocka_unit_test(test_quotient_unlike_links), cmocka_unit_test(test_links_reserved),
        cmocka_unit_test(test_quotient_fills_once), cmocka_unit_test(test_link_names),
        cmocka_unit_test(test_mech_parse),        cmocka_unit_test(test_nvlink_saturation),
        cmocka_unit_test(test_block_pass),        cmocka_unit_test(test_block_ceiling),
        cmocka_unit_test(test_block_host_trip),   cmocka_unit_test(test_trip_issue),
        cmocka_unit_test(test_load_trip),
        cmocka_unit_test(test_copy_staged), cmocka_unit_test(test_staged_pipeline),       cmocka_unit_test(test_stream_of_pushes),
        cmocka_unit_test(test_dllp_reverse),
        cmocka_unit_test(test_nvlink_copies_and_requests),
        cmocka_unit_test(test_host_blocks),
        cmocka_unit_test(test_host_inflight_and_mixed),
        cmocka_unit_test(test_torch_preds),       cmocka_unit_test(test_torch_issue_flow),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
