/* Unit tests of the engine through its public contract (sim/sched.h): every
 * expected time is derived by hand in the comment above its check. Times are
 * integer picoseconds and every case below divides exactly, so the checks
 * are exact (tolerance 0 ps) unless a comment says otherwise. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>
#include <yajl/yajl_tree.h>

#include "sim/sched.h"

#define US 1000000LL /* ps */

static void test_delay_chain_and_diamond(void **state)
{
    (void)state;
    sched *s = sched_new();
    err e = {0};
    /* Chain a(10) -> b(20) -> c(30) us: starts 0, 10, 30; ends 10, 30, 60. */
    int a = sched_delay(s, 10 * US, 0, "a");
    int b = sched_delay(s, 20 * US, 0, "b");
    int c = sched_delay(s, 30 * US, 0, "c");
    sched_dep(s, a, b);
    sched_dep(s, b, c);
    /* Diamond p(10) -> q(5), r(20) -> z(1): z starts at max(15, 30) = 30 us
     * and ends at 31 us. */
    int p = sched_delay(s, 10 * US, 1, "p");
    int q = sched_delay(s, 5 * US, 1, "q");
    int r = sched_delay(s, 20 * US, 1, "r");
    int z = sched_delay(s, 1 * US, 1, "z");
    sched_dep(s, p, q);
    sched_dep(s, p, r);
    sched_dep(s, q, z);
    sched_dep(s, r, z);
    assert_int_equal(sched_run(s, &e), 0);
    assert_int_equal(sched_start(s, b), 10 * US);
    assert_int_equal(sched_start(s, c), 30 * US);
    assert_int_equal(sched_end(s, c), 60 * US);
    assert_int_equal(sched_start(s, z), 30 * US);
    assert_int_equal(sched_end(s, z), 31 * US);
    /* Makespan: the chain's 60 us. 7 delay tasks: 7 end events. */
    assert_int_equal(sched_makespan(s), 60 * US);
    assert_int_equal(sched_events(s), 7);
    sched_free(s);
}

static void test_flow_latency_and_zero_bytes(void **state)
{
    (void)state;
    sched *s = sched_new();
    err e = {0};
    int l = sched_link(s, 1e9, "l");
    /* 1e6 bytes at 1 GB/s = 1 ms, then 3 us of latency: ends at 1003 us. */
    int f = sched_flow(s, &l, 1, 1e6, 0, 3 * US, 0, 0, "f");
    /* A 0-byte flow takes exactly its latency: 7 us. */
    int z = sched_flow(s, &l, 1, 0, 0, 7 * US, 0, 0, "z");
    /* No links, capped at 2 GB/s: 1e6 B in 500 us, + 1 us latency. */
    int c = sched_flow(s, NULL, 0, 1e6, 2e9, 1 * US, 0, 0, "c");
    assert_int_equal(sched_run(s, &e), 0);
    assert_int_equal(sched_end(s, f), 1003 * US);
    assert_int_equal(sched_end(s, z), 7 * US);
    assert_int_equal(sched_end(s, c), 501 * US);
    /* Only f crossed the link. */
    assert_true(sched_link_bytes(s, l) == 1e6);
    sched_free(s);
}

static void test_max_min_end_times(void **state)
{
    (void)state;
    sched *s = sched_new();
    err e = {0};
    /* Bertsekas-Gallager style: L1 = 10, L2 = 4, L3 = 8 GB/s; f0 crosses all
     * three, f1/f2/f3 one each. Max-min rates (progressive filling, derived
     * in flownet_test): f0 = 2, f1 = 8, f2 = 2, f3 = 6 GB/s. With 12e6 bytes
     * each: f0 and f2 would take 6 ms, f3 2 ms, f1 1.5 ms.
     * t = 1.5 ms: f1 done (12e6 at 8 GB/s). Nothing else changes: L1's other
     * flow f0 is held by L2. t = 2 ms: f3 done; f0 still held by L2 at 2.
     * f0, f2 end at 12e6 / 2e9 = 6 ms. */
    int L[3] = {sched_link(s, 10e9, "L1"), sched_link(s, 4e9, "L2"),
                sched_link(s, 8e9, "L3")};
    int f0 = sched_flow(s, L, 3, 12e6, 0, 0, 0, 0, "f0");
    int f1 = sched_flow(s, &L[0], 1, 12e6, 0, 0, 0, 1, "f1");
    int f2 = sched_flow(s, &L[1], 1, 12e6, 0, 0, 0, 2, "f2");
    int f3 = sched_flow(s, &L[2], 1, 12e6, 0, 0, 0, 3, "f3");
    assert_int_equal(sched_run(s, &e), 0);
    assert_int_equal(sched_end(s, f1), 1500 * US);
    assert_int_equal(sched_end(s, f3), 2000 * US);
    assert_int_equal(sched_end(s, f0), 6000 * US);
    assert_int_equal(sched_end(s, f2), 6000 * US);
    sched_free(s);
}

static void test_short_leaves_long_speeds_up(void **state)
{
    (void)state;
    sched *s = sched_new();
    err e = {0};
    /* One 1 GB/s link, three flows of 1e6, 2e6 and 4e6 bytes from time 0.
     * Thirds (1/3 GB/s) until the short one is done: 1e6 / (1e9/3) = 3 ms.
     * The others then have 1e6 and 3e6 left, halves: the middle one is done
     * 1e6 / 0.5e9 = 2 ms later, at 5 ms; the long one has 2e6 left at full
     * rate: 2 ms more, 7 ms. Total bytes 7e6 at 1 GB/s = 7 ms: the link never
     * idles, as max-min promises. Rounding: 3 ms = 3e9 ps exactly after
     * snapping 1e6 * 3 / 1e9 to the nearest ps (within 1e-14). */
    int l = sched_link(s, 1e9, "l");
    int a = sched_flow(s, &l, 1, 1e6, 0, 0, 0, 0, "a");
    int b = sched_flow(s, &l, 1, 2e6, 0, 0, 0, 0, "b");
    int c = sched_flow(s, &l, 1, 4e6, 0, 0, 0, 0, "c");
    assert_int_equal(sched_run(s, &e), 0);
    assert_int_equal(sched_end(s, a), 3000 * US);
    assert_int_equal(sched_end(s, b), 5000 * US);
    assert_int_equal(sched_end(s, c), 7000 * US);
    sched_free(s);
}

static void test_capped_leaves_spare(void **state)
{
    (void)state;
    sched *s = sched_new();
    err e = {0};
    /* 10 GB/s link; a is capped at 2 GB/s, b uncapped takes the other 8.
     * a: 2e6 B / 2 GB/s = 1 ms. b: 16e6 B, 8e6 in the first ms at 8 GB/s,
     * the other 8e6 alone at 10 GB/s: 0.8 ms more: 1.8 ms. */
    int l = sched_link(s, 10e9, "l");
    int a = sched_flow(s, &l, 1, 2e6, 2e9, 0, 0, 0, "a");
    int b = sched_flow(s, &l, 1, 16e6, 0, 0, 0, 0, "b");
    assert_int_equal(sched_run(s, &e), 0);
    assert_int_equal(sched_end(s, a), 1000 * US);
    assert_int_equal(sched_end(s, b), 1800 * US);
    sched_free(s);
}

/* Ring allreduce on n ranks over a crossbar (rank r sends on up[r], receives
 * on down[r]): 2(n-1) steps; at step k rank r sends chunk S/n to r+1 after
 * its own step k-1 send and after receiving r-1's step k-1 send. Returns the
 * id of the first task. */
static int build_ring(sched *s, int n, const int *up, const int *down, double S,
                      sim_ps alpha)
{
    int first = sched_ntasks(s);
    int steps = 2 * (n - 1);
    for (int k = 0; k < steps; k++)
        for (int r = 0; r < n; r++) {
            int links[2] = {up[r], down[(r + 1) % n]};
            int t = sched_flow(s, links, 2, S / n, 0, alpha, 0, r, "step");
            assert_int_equal(t, first + k * n + r);
            if (k > 0) {
                sched_dep(s, t - n, t);
                sched_dep(s, first + (k - 1) * n + (r + n - 1) % n, t);
            }
        }
    return first;
}

static void test_ring_allreduce(void **state)
{
    (void)state;
    enum { N = 8 };
    sched *s = sched_new();
    err e = {0};
    int up[N], down[N];
    for (int r = 0; r < N; r++) {
        up[r] = sched_link(s, 50e9, "up");
        down[r] = sched_link(s, 50e9, "down");
    }
    /* S = 64 MiB, B = 50 GB/s, alpha = 2 us: each step moves S/n = 8 MiB =
     * 8388608 B on links of its own in 8388608 / 50e9 s = 167772.16 ns ->
     * 167772160 ps, then alpha. Total 2(n-1)(alpha + S/(nB)) =
     * 14 * (2000000 + 167772160) = 2376810240 ps. */
    double S = 64.0 * 1024 * 1024;
    build_ring(s, N, up, down, S, 2 * US);
    assert_int_equal(sched_run(s, &e), 0);
    assert_int_equal(sched_makespan(s), 2376810240LL);
    /* Each up link carried 2(n-1) chunks: 14 * 8 MiB. */
    assert_true(sched_link_bytes(s, up[3]) == 14 * S / N);
    /* Events: one flow completion and one task end per flow: 2 * 14 * 8. */
    assert_int_equal(sched_events(s), 2 * 14 * N);

    /* Reset and build it again with alpha = 0: 14 * 167772160 ps, and flows
     * with no latency end with their last byte (one event each). */
    sched_reset(s);
    assert_int_equal(sched_ntasks(s), 0);
    build_ring(s, N, up, down, S, 0);
    assert_int_equal(sched_run(s, &e), 0);
    assert_int_equal(sched_makespan(s), 14 * 167772160LL);
    assert_int_equal(sched_events(s), 14 * N);
    /* Running again without a reset gives the same result. */
    assert_int_equal(sched_run(s, &e), 0);
    assert_int_equal(sched_makespan(s), 14 * 167772160LL);
    sched_free(s);
}

static void test_ring_exact_sub_ps(void **state)
{
    (void)state;
    enum { N = 128 };
    sched *s = sched_new();
    err e = {0};
    int up[N], down[N];
    for (int r = 0; r < N; r++) {
        up[r] = sched_link(s, 30e9, "up");
        down[r] = sched_link(s, 30e9, "down");
    }
    /* A step that is not a whole ps: S = 1 MiB, n = 128, B = 30 GB/s: S/n =
     * 8192 B in 8192 / 30e9 s = 819200/3 ps = 273066.67 ps, alpha = 1 us.
     * 2(n-1)(alpha + S/(nB)) = 254 (1e6 + 819200/3) = 323358933.33 ps.
     * Rounding each step up would give 254 x 1273067 = 323359018 ps (+85 ps);
     * carrying the remainder, the end is the exact one rounded up (<= 1 ps). */
    build_ring(s, N, up, down, 1024.0 * 1024, 1 * US);
    assert_int_equal(sched_run(s, &e), 0);
    double exact = 254 * (1e6 + 819200.0 / 3);
    double got = (double)sched_makespan(s);
    if (!(got >= exact && got <= exact + 1))
        fail_msg("ring makespan %.0f ps, closed form %.2f ps", got, exact);
    /* The critical path of a 1,024-rank ring: 2046 steps of 1024 B on one
     * 30 GB/s link, one after another, with a 1 ps delay between steps
     * (delays carry the remainder too). 1024 B / 30 GB/s =
     * 102400/3 ps; 2046 x (102400/3 + 1) = 69836800 + 2046 = 69838846 ps
     * exactly (rounding each step up: 2046 x 34135 = 69840210, +1.36 ns). */
    sched_reset(s);
    int prev = -1;
    for (int k = 0; k < 2046; k++) {
        int f = sched_flow(s, &up[0], 1, 1024, 0, 0, 0, 0, "step");
        int d = sched_delay(s, 1, 0, "gap");
        if (prev >= 0)
            sched_dep(s, prev, f);
        sched_dep(s, f, d);
        prev = d;
    }
    assert_int_equal(sched_run(s, &e), 0);
    sim_ps m = sched_makespan(s);
    if (!(m >= 69838846LL && m <= 69838847LL))
        fail_msg("chain makespan %lld ps, closed form 69838846 ps", (long long)m);
    sched_free(s);
}

static void test_ring_pipeline(void **state)
{
    (void)state;
    enum { N = 6 };
    sched *s = sched_new();
    err e = {0};
    /* n ranks on a ring of n uniform links (link i carries i -> i+1), an
     * allgather-style pipeline: n - 1 steps; at step k rank i sends S bytes
     * on link i once its own step k-1 send is done (link free) and once it
     * received rank i-1's step k-1 chunk. Every step is n flows on n
     * disjoint links, each alpha + S/B, so the total is (n-1)(alpha + S/B).
     * S = 3e6 B, B = 1.5 GB/s (2 ms), alpha = 5 us: 5 * 2.005 ms = 10.025 ms. */
    int L[N];
    for (int i = 0; i < N; i++)
        L[i] = sched_link(s, 1.5e9, "ring");
    int t[N - 1][N];
    for (int k = 0; k < N - 1; k++)
        for (int i = 0; i < N; i++) {
            t[k][i] = sched_flow(s, &L[i], 1, 3e6, 0, 5 * US, 0, i, "send");
            if (k > 0) {
                sched_dep(s, t[k - 1][i], t[k][i]);
                sched_dep(s, t[k - 1][(i + N - 1) % N], t[k][i]);
            }
        }
    assert_int_equal(sched_run(s, &e), 0);
    assert_int_equal(sched_makespan(s), 10025 * US);
    /* Step k starts at k (alpha + S/B) on every rank. */
    for (int i = 0; i < N; i++)
        assert_int_equal(sched_start(s, t[3][i]), 3 * 2005 * US);
    sched_free(s);
}

static void test_ring_shared_links(void **state)
{
    (void)state;
    enum { N = 5 };
    sched *s = sched_new();
    err e = {0};
    /* A ring of n flows on n uniform links where flow i crosses links i and
     * i+1 (a 2-hop route): every link carries 2 flows, so each gets B/2.
     * n flows of S bytes, all at once: each ends at alpha + S/(B/2) =
     * 1 us + 1e6 / 0.5e9 s = 1 us + 2 ms = 2001 us. */
    int L[N];
    for (int i = 0; i < N; i++)
        L[i] = sched_link(s, 1e9, "l");
    for (int i = 0; i < N; i++) {
        int ls[2] = {L[i], L[(i + 1) % N]};
        sched_flow(s, ls, 2, 1e6, 0, 1 * US, 0, i, "f");
    }
    assert_int_equal(sched_run(s, &e), 0);
    for (int i = 0; i < N; i++)
        assert_int_equal(sched_end(s, i), 2001 * US);
    sched_free(s);
}

static void test_weighted_flows(void **state)
{
    (void)state;
    sched *s = sched_new();
    err e = {0};
    /* A 12 GB/s link; a (4e6 B) crosses it with weight 2, b (8e6 B) with
     * weight 1. Common level x: 2x + x = 12 GB/s, x = 4 GB/s each: a is done
     * at 4e6 / 4e9 = 1 ms. b has 4e6 B left, alone at 12 GB/s: 1/3 ms =
     * 333333333.33 ps, rounded up: b ends at 1e9 + 333333334 ps. The link
     * carried a's bytes twice and b's once: 16e6 B. */
    int l = sched_link(s, 12e9, "l");
    double w2 = 2;
    sched_trace_links(s, 1);
    int a = sched_flow_w(s, &l, &w2, 1, 4e6, 0, 0, 0, 0, "a");
    int b = sched_flow(s, &l, 1, 8e6, 0, 0, 0, 0, "b");
    char *buf = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&buf, &len);
    assert_int_equal(sched_timeline_begin(s, f, NULL, 0, NULL, &e), 0);
    assert_int_equal(sched_run(s, &e), 0);
    assert_int_equal(sched_timeline_end(s, &e), 0);
    fclose(f);
    assert_int_equal(sched_end(s, a), 1000 * US);
    assert_int_equal(sched_end(s, b), 1333333334LL);
    assert_true(sched_link_bytes(s, l) == 16e6);
    /* It carried a flow from 0 until b ended: busy 1333333334 ps. */
    assert_int_equal(sched_link_busy_ps(s, l), 1333333334LL);
    /* The link's counter counts a twice: 2 * 4 + 4 = 12 GB/s from 0; still
     * 12 (b alone) at 1 ms, so no sample there; 0 when b is done. */
    assert_non_null(strstr(buf, "\"ts\":0.000000,\"name\":\"l\",\"args\":{\"GB/s\":12}"));
    assert_null(strstr(buf, "\"ts\":1000.000000,\"name\":\"l\""));
    assert_non_null(strstr(buf, "\"ts\":1333.333334,\"name\":\"l\",\"args\":{\"GB/s\":0}"));
    free(buf);
    /* All-1 weights are the unweighted case: a alone, 4e6 B at 12 GB/s =
     * 333333333.33 ps -> 333333334 ps. */
    sched_reset(s);
    double w1 = 1;
    a = sched_flow_w(s, &l, &w1, 1, 4e6, 0, 0, 0, 0, "a");
    assert_int_equal(sched_run(s, &e), 0);
    assert_int_equal(sched_end(s, a), 333333334LL);
    sched_free(s);
}

static void test_crowd_leaves(void **state)
{
    (void)state;
    sched *s = sched_new();
    err e = {0};
    /* A 10 GB/s link: a, b, c (2e6 B, weight 1), d (4e6 B, weight 1), then e
     * (3e6 B, weight 2). Level x: 3x + x + 2x = 10 GB/s, x = 10/6 GB/s.
     * a, b, c leave together at 2e6 / (10/6 GB/s) = 1.2 ms; d has 2e6 left,
     * e 1e6. Then x + 2x = 10: x = 10/3 GB/s, e leaves 1e6 / (10/3 GB/s) =
     * 0.3 ms later (1.5 ms); d has 1e6 left, alone at 10 GB/s: 1.6 ms. The
     * link is full throughout: 16e6 weighted bytes / 10 GB/s = 1.6 ms. */
    int l = sched_link(s, 10e9, "l");
    double w2 = 2;
    int t[5];
    for (int i = 0; i < 3; i++)
        t[i] = sched_flow(s, &l, 1, 2e6, 0, 0, 0, 0, "abc");
    t[3] = sched_flow(s, &l, 1, 4e6, 0, 0, 0, 0, "d");
    t[4] = sched_flow_w(s, &l, &w2, 1, 3e6, 0, 0, 0, 0, "e");
    assert_int_equal(sched_run(s, &e), 0);
    for (int i = 0; i < 3; i++)
        assert_int_equal(sched_end(s, t[i]), 1200 * US);
    assert_int_equal(sched_end(s, t[4]), 1500 * US);
    assert_int_equal(sched_end(s, t[3]), 1600 * US);
    assert_true(sched_link_bytes(s, l) == 16e6);
    sched_free(s);
}

struct rule_ctx {
    int calls;
    int last_ntags;
};

/* Capacity collapses to 4 GB/s while two or more flows tagged 7 share it. */
static double collapse_rule(void *ctx, int link, const uint32_t *tags, int ntags,
                            double nominal_Bps)
{
    (void)link;
    struct rule_ctx *c = ctx;
    c->calls++;
    c->last_ntags = ntags;
    int n7 = 0;
    for (int i = 0; i < ntags; i++)
        n7 += tags[i] == 7;
    return n7 >= 2 ? 4e9 : nominal_Bps;
}

static void test_capacity_rule(void **state)
{
    (void)state;
    sched *s = sched_new();
    err e = {0};
    struct rule_ctx rc = {0, -1};
    int l = sched_link(s, 10e9, "sw");
    sched_link_rule(s, l, collapse_rule, &rc);
    /* Two tag-7 flows of 4e3 and 12e3 bytes: the link collapses to 4 GB/s,
     * 2 GB/s each; a is done at 4e3 / 2e9 = 2 us. b has 8e3 left, alone: the
     * rule gives back 10 GB/s, 0.8 us more: 2.8 us. */
    int a = sched_flow(s, &l, 1, 4e3, 0, 0, 7, 0, "a");
    int b = sched_flow(s, &l, 1, 12e3, 0, 0, 7, 0, "b");
    assert_int_equal(sched_run(s, &e), 0);
    assert_int_equal(sched_end(s, a), 2 * US);
    assert_int_equal(sched_end(s, b), 2800000);
    /* Called once per instant the flow set changed: at 0 (a and b arrive
     * together: one call), at 2 us (a leaves), at 2.8 us (b leaves, empty). */
    assert_int_equal(rc.calls, 3);
    assert_int_equal(rc.last_ntags, 0);
    sched_free(s);
}

/* Capacity 0 as soon as two flows share the link (a deadlocking switch). */
static double jam_rule(void *ctx, int link, const uint32_t *tags, int ntags,
                       double nominal_Bps)
{
    (void)ctx, (void)link, (void)tags;
    return ntags >= 2 ? 0 : nominal_Bps;
}

static void test_rule_starves(void **state)
{
    (void)state;
    sched *s = sched_new();
    err e = {0};
    /* a (2e3 B at 1 GB/s) alone would end at 2 us; b arrives at 1 us (after
     * a delay), the rule drops the link to 0: a's completion is cancelled,
     * both stall forever: ERR_CHECK naming a (the lower task id), and
     * neither ends. */
    int l = sched_link(s, 1e9, "jam");
    sched_link_rule(s, l, jam_rule, NULL);
    int a = sched_flow(s, &l, 1, 2e3, 0, 0, 0, 0, "a");
    int d = sched_delay(s, 1 * US, 0, "wait");
    int b = sched_flow(s, &l, 1, 2e3, 0, 0, 0, 0, "b");
    sched_dep(s, d, b);
    assert_int_equal(sched_run(s, &e), ERR_CHECK);
    assert_non_null(strstr(e.msg, "'a' can never finish: 2 flow(s) stuck"));
    assert_int_equal(sched_end(s, a), -1);
    assert_int_equal(sched_start(s, b), 1 * US);
    assert_int_equal(sched_end(s, b), -1);
    sched_free(s);
}

static void test_cycle_detected(void **state)
{
    (void)state;
    sched *s = sched_new();
    err e = {0};
    /* x -> a -> b -> c -> a, and an independent d: d ends at 5 us; x ends;
     * a, b, c never start: ERR_CHECK naming the cycle. */
    int x = sched_delay(s, 1 * US, 0, "x");
    int a = sched_delay(s, 1 * US, 0, "a");
    int b = sched_delay(s, 1 * US, 0, "b");
    int c = sched_delay(s, 1 * US, 0, "c");
    int d = sched_delay(s, 5 * US, 0, "d");
    sched_dep(s, x, a);
    sched_dep(s, a, b);
    sched_dep(s, b, c);
    sched_dep(s, c, a);
    assert_int_equal(sched_run(s, &e), ERR_CHECK);
    assert_non_null(strstr(e.msg, "cycle"));
    assert_non_null(strstr(e.msg, "3 of 5 tasks never started"));
    assert_non_null(strstr(e.msg, "'b'"));
    assert_int_equal(sched_end(s, d), 5 * US);
    assert_int_equal(sched_end(s, x), 1 * US);
    assert_int_equal(sched_start(s, a), -1);
    /* A task depending on itself is a cycle of one. */
    sched_reset(s);
    int y = sched_delay(s, 1, 0, "self");
    sched_dep(s, y, y);
    assert_int_equal(sched_run(s, &e), ERR_CHECK);
    assert_non_null(strstr(e.msg, "cycle of 1 task(s): 0 'self'"));
    sched_free(s);
}

static void test_zero_capacity_detected(void **state)
{
    (void)state;
    sched *s = sched_new();
    err e = {0};
    /* A flow over a 0 B/s link never finishes; its successor never starts;
     * an unrelated delay still ends. ERR_CHECK naming task and link. */
    int ok = sched_link(s, 1e9, "fine");
    int dead = sched_link(s, 0, "dead-link");
    int links[2] = {ok, dead};
    int f = sched_flow(s, links, 2, 1e3, 0, 0, 0, 0, "stuck");
    int g = sched_delay(s, 1, 0, "after");
    int h = sched_delay(s, 9, 0, "other");
    sched_dep(s, f, g);
    assert_int_equal(sched_run(s, &e), ERR_CHECK);
    assert_non_null(strstr(e.msg, "'stuck' can never finish"));
    assert_non_null(strstr(e.msg, "dead-link"));
    assert_int_equal(sched_end(s, h), 9);
    assert_int_equal(sched_start(s, g), -1);
    sched_free(s);
}

static uint64_t lcg(uint64_t *x)
{
    *x = *x * 6364136223846793005ULL + 1442695040888963407ULL;
    return *x >> 33;
}

/* A random DAG with contention: 300 tasks (flows over 1-3 of 6 links with
 * odd sizes and caps, and delays), each depending on up to 2 earlier ones. */
static void build_random(sched *s, uint64_t seed)
{
    static const char *const labels[] = {"x", "y \"q\"", "z\\w"};
    for (int i = 0; i < 6; i++)
        sched_link(s, 1e9 * (double)(i + 1) / 3.0, i == 2 ? "link\"2\"" : "lk");
    for (int i = 0; i < 300; i++) {
        int t;
        if (lcg(&seed) % 4 == 0) {
            t = sched_delay(s, (sim_ps)(lcg(&seed) % 5000000), (int)(lcg(&seed) % 4),
                            labels[i % 3]);
        } else {
            int ls[3], nl = 1 + (int)(lcg(&seed) % 3);
            for (int k = 0; k < nl; k++)
                ls[k] = (int)((uint64_t)i + (uint64_t)k * 2) % 6;
            double cap = lcg(&seed) % 3 == 0 ? 1e8 * (double)(1 + lcg(&seed) % 7) : 0;
            t = sched_flow(s, ls, nl, (double)(lcg(&seed) % 1000000) / 7.0, cap,
                           (sim_ps)(lcg(&seed) % 3000), (uint32_t)(i % 3),
                           (int)(lcg(&seed) % 4), labels[i % 3]);
        }
        for (int k = 0; k < 2 && i > 0; k++)
            if (lcg(&seed) % 2)
                sched_dep(s, (int)(lcg(&seed) % (uint64_t)i), t);
    }
}

/* Run s, writing its timeline; returns the JSON (the caller frees it). */
static char *run_timeline(sched *s, size_t *len)
{
    char *buf = NULL;
    FILE *f = open_memstream(&buf, len);
    assert_non_null(f);
    static const char *const names[] = {"GPU 0", "GPU 1", "GPU 2", "GPU 3"};
    err e = {0};
    assert_int_equal(sched_timeline_begin(s, f, names, 4, NULL, &e), 0);
    assert_int_equal(sched_run(s, &e), 0);
    assert_int_equal(sched_timeline_end(s, &e), 0);
    fclose(f);
    return buf;
}

static void test_determinism_and_timeline(void **state)
{
    (void)state;
    err e = {0};
    sched *s1 = sched_new(), *s2 = sched_new();
    sched_trace_links(s1, 1);
    sched_trace_links(s2, 1);
    build_random(s1, 7);
    build_random(s2, 7);
    /* Same input, two engines: the same start and end of every task, and the
     * same timeline byte for byte. */
    size_t n1, n2;
    char *j1 = run_timeline(s1, &n1), *j2 = run_timeline(s2, &n2);
    assert_int_equal(sched_ntasks(s1), 300);
    for (int t = 0; t < 300; t++) {
        assert_int_equal(sched_start(s1, t), sched_start(s2, t));
        assert_int_equal(sched_end(s1, t), sched_end(s2, t));
        assert_true(sched_end(s1, t) >= sched_start(s1, t));
    }
    assert_int_equal(sched_events(s1), sched_events(s2));
    assert_int_equal(n1, n2);
    assert_memory_equal(j1, j2, n1);
    /* And a third run of s1 after a reset and rebuild: the same again. */
    sched_reset(s1);
    build_random(s1, 7);
    assert_int_equal(sched_run(s1, &e), 0);
    for (int t = 0; t < 300; t++)
        assert_int_equal(sched_end(s1, t), sched_end(s2, t));

    /* The timeline is valid JSON with "traceEvents": 300 complete events (all
     * tasks have tracks 0..3), metadata, and counters for the links. */
    char errbuf[256];
    yajl_val root = yajl_tree_parse(j1, errbuf, sizeof errbuf);
    assert_non_null(root);
    const char *path[] = {"traceEvents", NULL};
    yajl_val ev = yajl_tree_get(root, path, yajl_t_array);
    assert_non_null(ev);
    int nx = 0, nc = 0, nm = 0, nthreads = 0;
    /* (pid, tid) of each complete event with its start and end, to check
     * that slices on one thread never overlap (overlapping tasks of a track
     * go on separate lanes). */
    static double ts[300], te[300];
    static int pid[300], tid[300];
    for (size_t i = 0; i < ev->u.array.len; i++) {
        yajl_val v = ev->u.array.values[i];
        const char *ph_path[] = {"ph", NULL}, *pid_path[] = {"pid", NULL},
                   *tid_path[] = {"tid", NULL}, *ts_path[] = {"ts", NULL},
                   *dur_path[] = {"dur", NULL}, *name_path[] = {"name", NULL};
        yajl_val ph = yajl_tree_get(v, ph_path, yajl_t_string);
        assert_non_null(ph);
        const char *p = YAJL_GET_STRING(ph);
        if (!strcmp(p, "X")) {
            pid[nx] = (int)YAJL_GET_INTEGER(yajl_tree_get(v, pid_path, yajl_t_number));
            tid[nx] = (int)YAJL_GET_INTEGER(yajl_tree_get(v, tid_path, yajl_t_number));
            ts[nx] = YAJL_GET_DOUBLE(yajl_tree_get(v, ts_path, yajl_t_number));
            te[nx] = ts[nx] + YAJL_GET_DOUBLE(yajl_tree_get(v, dur_path, yajl_t_number));
            nx++;
        }
        nc += strcmp(p, "C") == 0;
        nm += strcmp(p, "M") == 0;
        if (!strcmp(p, "M")) {
            yajl_val nm_v = yajl_tree_get(v, name_path, yajl_t_string);
            assert_non_null(nm_v);
            const char *what = YAJL_GET_STRING(nm_v);
            assert_non_null(what);
            nthreads += !strcmp(what, "thread_name");
        }
    }
    assert_int_equal(nx, 300);
    assert_true(nc > 0);
    /* Metadata: name and sort index of 4 GPU processes and the links
     * process, and of every lane thread. */
    assert_int_equal(nm, 2 * (4 + 1) + 2 * nthreads);
    assert_true(nthreads >= 4);
    for (int a = 0; a < nx; a++)
        for (int b = a + 1; b < nx; b++)
            if (pid[a] == pid[b] && tid[a] == tid[b])
                assert_true(te[a] <= ts[b] + 1e-9 || te[b] <= ts[a] + 1e-9);
    yajl_tree_free(root);
    free(j1);
    free(j2);
    sched_free(s1);
    sched_free(s2);
}

static void test_timeline_values(void **state)
{
    (void)state;
    sched *s = sched_new();
    sched_trace_links(s, 1);
    /* One 2 GB/s link, one flow of 3e3 bytes: 1.5 us, on track 0, starting
     * after a 0.25 us delay (track -1: not shown). The link's counter goes
     * to 2 GB/s at 0.25 us and back to 0 at 1.75 us. */
    int l = sched_link(s, 2e9, "up0");
    int d = sched_delay(s, 250000, -1, "hidden");
    int f = sched_flow(s, &l, 1, 3e3, 0, 0, 0, 0, "send");
    sched_dep(s, d, f);
    size_t n;
    char *j = run_timeline(s, &n);
    /* Track 0 is process 1 ("GPU" 0), its only lane thread 0; the flow is a
     * transfer of 3000 bytes over up0 (task id 1). */
    assert_non_null(strstr(j, "{\"ph\":\"X\",\"pid\":1,\"tid\":0,\"ts\":0.250000,"
                              "\"dur\":1.500000,\"name\":\"send\",\"cat\":\"transfer\","
                              "\"args\":{\"task\":1,\"bytes\":3000,\"links\":\"up0\"}}"));
    assert_null(strstr(j, "hidden"));
    assert_non_null(strstr(j, "{\"ph\":\"C\",\"pid\":100000,\"ts\":0.250000,\"name\":\"up0\","
                              "\"args\":{\"GB/s\":2}}"));
    assert_non_null(strstr(j, "{\"ph\":\"C\",\"pid\":100000,\"ts\":1.750000,\"name\":\"up0\","
                              "\"args\":{\"GB/s\":0}}"));
    free(j);
    sched_free(s);
    sched_free(NULL);
}

/* Busy time without records (sched_trace_links 2): a 1 GB/s link carries a
 * (1e3 B: [0, 1 us]) and, after a 2 us delay, b (1e3 B: [2, 3 us]); it was
 * busy 2 us of the 3, and carried 2e3 B. */
static void test_link_busy_only(void **state)
{
    (void)state;
    sched *s = sched_new();
    err e = {0};
    sched_trace_links(s, 2);
    int l = sched_link(s, 1e9, "l");
    sched_flow(s, &l, 1, 1e3, 0, 0, 0, 0, "a");
    int d = sched_delay(s, 2 * US, 0, "gap");
    int b = sched_flow(s, &l, 1, 1e3, 0, 0, 0, 0, "b");
    sched_dep(s, d, b);
    assert_int_equal(sched_run(s, &e), 0);
    assert_int_equal(sched_makespan(s), 3 * US);
    assert_int_equal(sched_link_busy_ps(s, l), 2 * US);
    assert_true(sched_link_bytes(s, l) == 2e3);
    sched_free(s);
}

/* Count occurrences of needle in hay. */
static int count_of(const char *hay, const char *needle)
{
    int n = 0;
    for (const char *p = strstr(hay, needle); p; p = strstr(p + 1, needle))
        n++;
    return n;
}

static void test_timeline_lanes_as_tasks_end(void **state)
{
    (void)state;
    sched *s = sched_new();
    /* Track 0: a [0, 10 us], b [0, 5 us], c after b [5, 8 us]. Written as
     * they end: b (5 us) opens lane 0; c starts at 5 us, when lane 0's last
     * slice ended: lane 0; a (10 us) started before lane 0's last end
     * (8 us): lane 1, declared as it opens. */
    int a = sched_delay(s, 10 * US, 0, "a");
    int b = sched_delay(s, 5 * US, 0, "b");
    int c = sched_delay(s, 3 * US, 0, "c");
    sched_dep(s, b, c);
    (void)a;
    size_t n;
    char *j = run_timeline(s, &n);
    assert_non_null(strstr(j, "\"pid\":1,\"tid\":0,\"ts\":0.000000,\"dur\":5.000000,\"name\":\"b\""));
    assert_non_null(strstr(j, "\"pid\":1,\"tid\":0,\"ts\":5.000000,\"dur\":3.000000,\"name\":\"c\""));
    assert_non_null(strstr(j, "\"pid\":1,\"tid\":1,\"ts\":0.000000,\"dur\":10.000000,\"name\":\"a\""));
    assert_non_null(strstr(j, "\"tid\":1,\"name\":\"thread_name\",\"args\":{\"name\":\"lane 1\"}"));
    /* In the order they ended: b, c, a. */
    char *pb = strstr(j, "\"name\":\"b\""), *pc = strstr(j, "\"name\":\"c\""),
         *pa = strstr(j, "\"name\":\"a\"");
    assert_true(pb && pc && pa && pb < pc && pc < pa);
    free(j);
    sched_free(s);
}

/* Namers for test_timeline_named_lanes: lane key K is "key K", sorted by K;
 * a slice "LABEL/NOTE"; a track's span "span of TRACK". */
static int name_lane(void *ctx, int track, uint32_t lane, char *buf, size_t n)
{
    (void)ctx;
    (void)track;
    snprintf(buf, n, "key %u", lane);
    return (int)lane;
}

static void name_slice(void *ctx, int track, const char *label, uint32_t note, char *buf,
                       size_t n)
{
    (void)ctx;
    (void)track;
    snprintf(buf, n, "%s/%u", label, note);
}

static void name_span(void *ctx, int track, char *buf, size_t n)
{
    (void)ctx;
    snprintf(buf, n, "span of %d", track);
}

static void test_timeline_named_lanes(void **state)
{
    (void)state;
    sched *s = sched_new();
    /* Track 0: a [0, 10 us] key 1; b [0, 5 us] key 2; c after b [5, 8 us]
     * key 2; d [0, 4 us] key 2 note 7. Thread 0 is the span's lane (key 9,
     * sort 9 x 256 + 1 = 2305), declared up front. As they end: d opens key
     * 2's first lane (thread 1 "key 2", sort 2 x 256 + 1 = 513); b started
     * before d's end: thread 2 "key 2 #2" (sort 514); c starts at 5 us,
     * after d's end (4 us): thread 1; a opens thread 3 "key 1" (sort 257).
     * At the end, the span slice of track 0: [0, 10 us] on thread 0. */
    int a = sched_delay(s, 10 * US, 0, "a");
    int b = sched_delay(s, 5 * US, 0, "b");
    int c = sched_delay(s, 3 * US, 0, "c");
    int d = sched_delay(s, 4 * US, 0, "d");
    sched_dep(s, b, c);
    sched_task_lane(s, a, 1, 0);
    sched_task_lane(s, b, 2, 0);
    sched_task_lane(s, c, 2, 0);
    sched_task_lane(s, d, 2, 7);
    char *j = NULL;
    size_t n = 0;
    FILE *f = open_memstream(&j, &n);
    assert_non_null(f);
    static const char *const names[] = {"GPU 0"};
    sched_tl_names nm = {name_lane, name_slice, name_span, 9, NULL};
    err e = {0};
    assert_int_equal(sched_timeline_begin(s, f, names, 1, &nm, &e), 0);
    assert_int_equal(sched_run(s, &e), 0);
    assert_int_equal(sched_timeline_end(s, &e), 0);
    fclose(f);
    assert_non_null(strstr(j, "\"tid\":0,\"name\":\"thread_name\",\"args\":{\"name\":\"key 9\"}"));
    assert_non_null(strstr(j, "\"tid\":0,\"name\":\"thread_sort_index\",\"args\":{\"sort_index\":2305}"));
    assert_non_null(strstr(j, "\"tid\":1,\"name\":\"thread_name\",\"args\":{\"name\":\"key 2\"}"));
    assert_non_null(strstr(j, "\"tid\":1,\"name\":\"thread_sort_index\",\"args\":{\"sort_index\":513}"));
    assert_non_null(strstr(j, "\"tid\":2,\"name\":\"thread_name\",\"args\":{\"name\":\"key 2 #2\"}"));
    assert_non_null(strstr(j, "\"tid\":2,\"name\":\"thread_sort_index\",\"args\":{\"sort_index\":514}"));
    assert_non_null(strstr(j, "\"tid\":3,\"name\":\"thread_name\",\"args\":{\"name\":\"key 1\"}"));
    assert_non_null(strstr(j, "\"tid\":3,\"name\":\"thread_sort_index\",\"args\":{\"sort_index\":257}"));
    assert_non_null(strstr(j, "\"pid\":1,\"tid\":1,\"ts\":0.000000,\"dur\":4.000000,\"name\":\"d/7\""));
    assert_non_null(strstr(j, "\"pid\":1,\"tid\":2,\"ts\":0.000000,\"dur\":5.000000,\"name\":\"b/0\""));
    assert_non_null(strstr(j, "\"pid\":1,\"tid\":1,\"ts\":5.000000,\"dur\":3.000000,\"name\":\"c/0\""));
    assert_non_null(strstr(j, "\"pid\":1,\"tid\":3,\"ts\":0.000000,\"dur\":10.000000,\"name\":\"a/0\""));
    assert_non_null(strstr(j, "\"pid\":1,\"tid\":0,\"ts\":0.000000,\"dur\":10.000000,"
                              "\"name\":\"span of 0\",\"cat\":\"kernel\""));
    assert_int_equal(count_of(j, "\"thread_name\""), 4);
    assert_null(strstr(j, "\"lane "));
    free(j);
    sched_free(s);
}

/* Generator for test_generated_chain: a chain of `left` delays of 1 us,
 * ten per call; each call's first task waits for the previous call's last. */
struct chain_gen {
    int left, last;
};

static int chain_next(void *ctx, sched *s)
{
    struct chain_gen *g = ctx;
    int first = sched_ntasks(s);
    for (int i = 0; i < 10 && g->left > 0; i++, g->left--) {
        int id = sched_delay(s, 1 * US, 0, "c");
        if (g->last >= 0)
            sched_dep(s, g->last, id);
        g->last = id;
    }
    /* Every task before this call's has its dependent now. */
    sched_horizon(s, first);
    return g->left > 0;
}

/* A streamed chain of 100 000 delays of 1 us ends at 100 000 us, as built
 * whole, with one end event per task; dropped tasks are not kept: the
 * engine's memory stays small (checked in bench/, not here). A dependency on a task that has already
 * ended counts as met: a task added after its predecessor ended starts at
 * once (here at the end of the chain, 100 000 us, and ends 1 us later). */
static int late_next(void *ctx, sched *s)
{
    struct chain_gen *g = ctx;
    if (g->left == 100000 + 1) { /* first call: a 5 us delay only */
        g->last = sched_delay(s, 5 * US, 0, "first");
        g->left--;
        sched_horizon(s, 0);
        return 1;
    }
    int rc = chain_next(ctx, s);
    if (!rc) { /* last call: one more task waiting for the long-ended first */
        int id = sched_delay(s, 1 * US, 0, "late");
        sched_dep(s, 0, id);
        sched_dep(s, g->last, id);
    }
    return rc;
}

/* Generator for test_generated_room: `left` phases of 1,000 parallel
 * delays of 1 us, each waiting for the join (a 0 us delay) of the phase
 * before, then this phase's join. */
struct phase_gen {
    int left, join;
};

static int phase_next(void *ctx, sched *s)
{
    struct phase_gen *g = ctx;
    int first = sched_ntasks(s), id[1000];
    for (int i = 0; i < 1000; i++) {
        id[i] = sched_delay(s, 1 * US, 0, "p");
        if (g->join >= 0)
            sched_dep(s, g->join, id[i]);
    }
    g->join = sched_delay(s, 0, 0, "join");
    for (int i = 0; i < 1000; i++)
        sched_dep(s, id[i], g->join);
    sched_horizon(s, first);
    return --g->left > 0;
}

/* 20 streamed phases of 1,001 tasks (1,000 delays of 1 us and a join) end
 * at 20 us. A phase is made when the first task of the one before ends
 * (its dependents must exist first), and by then the phase before that
 * has ended and its chunks are recycled: at most three phases' tasks hold
 * room at once, 3,003 tasks, and their chunks (512 tasks each) may each
 * straddle two phases: room for at most 3,003 + 3 x 512 = 4,539 tasks,
 * whatever the number of phases (one spare chunk kept, the rest freed and
 * allocated again, would make room for every phase: about 20,000). */
static void test_generated_room(void **state)
{
    (void)state;
    err e = {0};
    sched *s = sched_new();
    struct phase_gen g = {20, -1};
    sched_keep(s, 0);
    sched_generate(s, phase_next, &g);
    assert_int_equal(sched_run(s, &e), 0);
    assert_int_equal(sched_makespan(s), 20 * US);
    assert_int_equal(sched_ntasks(s), 20 * 1001);
    assert_true(sched_task_room(s) <= 3003 + 3 * 512);
    sched_free(s);
}

static void test_generated_chain(void **state)
{
    (void)state;
    err e = {0};
    for (int keep = 0; keep <= 1; keep++) {
        sched *s = sched_new();
        struct chain_gen g = {100000, -1};
        sched_keep(s, keep);
        sched_generate(s, chain_next, &g);
        assert_int_equal(sched_run(s, &e), 0);
        assert_int_equal(sched_makespan(s), 100000 * US);
        assert_int_equal(sched_ntasks(s), 100000);
        assert_int_equal(sched_events(s), 100000);
        if (keep) { /* kept: every task can be asked for */
            assert_int_equal(sched_end(s, 99999), 100000 * US);
            assert_int_equal(sched_end(s, 0), 1 * US);
        }
        sched_free(s);
    }
    sched *s = sched_new();
    struct chain_gen g = {100000 + 1, -1};
    sched_keep(s, 0);
    sched_generate(s, late_next, &g);
    assert_int_equal(sched_run(s, &e), 0);
    /* first (5 us) -> 100 000 chained 1 us delays -> late: 100 006 us. */
    assert_int_equal(sched_makespan(s), 100006 * US);
    sched_free(s);
    /* A timeline of a streamed chain whose ended tasks are dropped: it is
     * written as the run goes, so all 10,000 slices are there, on one lane
     * (each starts as the one before ends), the last from 9,999 to 10,000 us. */
    s = sched_new();
    g = (struct chain_gen){10000, -1};
    sched_keep(s, 0);
    sched_generate(s, chain_next, &g);
    size_t n;
    char *j = run_timeline(s, &n);
    assert_int_equal(count_of(j, "\"ph\":\"X\""), 10000);
    assert_int_equal(count_of(j, "\"thread_name\""), 4); /* lane 0 of each of 4 tracks */
    assert_int_equal(count_of(j, "\"tid\":1,"), 0);
    assert_non_null(strstr(j, "\"ts\":9999.000000,\"dur\":1.000000,\"name\":\"c\""));
    free(j);
    sched_free(s);
}


/* Latency edges (sched_dep_lat into a sched_join) against what they stand
 * for, a delay task of the edge's latency labelled "flag" between the two
 * (made where the edge is made): random graphs of delays, flows on shared
 * links (sub-ps rates, so the remainders carried along differ) and joins,
 * with durations and latencies on a coarse grid so that ends tie often;
 * every task's start and end, the order in which they end (ties too), the
 * makespan and the critical path's four sums must be the same to the ps, built whole (and run twice) and
 * streamed layer by layer, tasks kept or dropped as they end; the edges take
 * no task and fewer events. Layers: each task's predecessors are
 * in the layer before (streaming's horizon contract). */
enum { EG_LAYERS = 8, EG_WIDTH = 7, EG_TASKS = EG_LAYERS * EG_WIDTH };

struct eg_task {
    int kind;            /* 0 delay, 1 flow, 2 join */
    sim_ps dur;          /* delay or join: duration; flow: latency */
    double bytes;
    int link, npred, pred[4];
    sim_ps lat[4];       /* join: its edges' latencies */
};

struct eg_graph {
    struct eg_task t[EG_TASKS];
    int flags;           /* 1: delays in place of edges */
    int id[EG_TASKS];    /* engine ids */
    int links[3];
    int layer;           /* streaming: the next layer */
};

static unsigned eg_rand(unsigned *x)
{
    *x = *x * 1103515245u + 12345u;
    return *x >> 16;
}

static void eg_make(struct eg_graph *g, unsigned seed)
{
    memset(g, 0, sizeof *g);
    for (int i = 0; i < EG_TASKS; i++) {
        struct eg_task *k = &g->t[i];
        int layer = i / EG_WIDTH;
        k->kind = layer == 0 ? (int)(eg_rand(&seed) % 2) : (int)(eg_rand(&seed) % 3);
        static const sim_ps durs[] = {0, 334, 1000};
        k->dur = durs[eg_rand(&seed) % 3];
        k->bytes = (double)(eg_rand(&seed) % 3) * 1000;
        k->link = (int)(eg_rand(&seed) % 3);
        k->npred = layer == 0 ? 0 : 1 + (int)(eg_rand(&seed) % 4);
        for (int j = 0; j < k->npred; j++) {
            k->pred[j] = (layer - 1) * EG_WIDTH + (int)(eg_rand(&seed) % EG_WIDTH);
            static const sim_ps lats[] = {0, 666, 1000};
            k->lat[j] = lats[eg_rand(&seed) % 3];
        }
    }
}

static int eg_is_flag(const char *label) { return label && !strcmp(label, "flag"); }

/* Adds the tasks of one layer (ids in g->id). */
static void eg_add_layer(struct eg_graph *g, sched *s, int layer)
{
    for (int i = layer * EG_WIDTH; i < (layer + 1) * EG_WIDTH; i++) {
        const struct eg_task *k = &g->t[i];
        int id;
        /* A delay is a flow of no bytes (its latency, exactly), tagged so
         * that the order of the ends is seen (sched_on_flow_end). */
        if (k->kind == 2)
            id = g->flags ? sched_delay(s, k->dur, i % 4, "j") : sched_join(s, k->dur, i % 4, "j");
        else
            id = sched_flow(s, &g->links[k->link], 1, k->kind ? k->bytes : 0, 0, k->dur,
                            (uint32_t)i + 1, i % 4, "f");
        assert_true(id >= 0);
        g->id[i] = id;
        for (int j = 0; j < k->npred; j++) {
            int before = g->id[k->pred[j]];
            if (k->kind != 2) {
                assert_int_equal(sched_dep(s, before, id), 0);
            } else if (!g->flags) {
                assert_int_equal(sched_dep_lat(s, before, id, k->lat[j], "flag"), 0);
            } else {
                int fl = sched_delay(s, k->lat[j], i % 4, "flag");
                assert_int_equal(sched_dep(s, before, fl), 0);
                assert_int_equal(sched_dep(s, fl, id), 0);
            }
        }
    }
}

static int eg_next(void *ctx, sched *s)
{
    struct eg_graph *g = ctx;
    int first = sched_ntasks(s);
    eg_add_layer(g, s, g->layer++);
    sched_horizon(s, first);
    return g->layer < EG_LAYERS;
}

struct eg_run {
    sim_ps start[EG_TASKS], end[EG_TASKS], makespan, sums[4];
    uint64_t events;
    int ntasks;
    int order[EG_TASKS], nend; /* the tagged tasks as they ended */
};

static void eg_ended(void *ctx, uint32_t tag)
{
    struct eg_run *r = ctx;
    if (r->nend < EG_TASKS)
        r->order[r->nend++] = (int)tag - 1;
}

/* Run g whole (twice: a kept graph runs again the same) or streamed (1: its
 * tasks kept, 2: dropped as they end, so only the makespan and sums are
 * read), into out. */
static void eg_run_graph(struct eg_graph *g, int stream, struct eg_run *out)
{
    err e = {0};
    sched *s = sched_new();
    memset(out, 0, sizeof *out);
    for (int l = 0; l < 3; l++)
        g->links[l] = sched_link(s, l == 2 ? 3e12 : 1e12, "l");
    sched_path_class(s, eg_is_flag);
    sched_on_flow_end(s, eg_ended, out);
    if (stream) {
        g->layer = 0;
        sched_keep(s, stream == 2 ? 0 : 1);
        sched_generate(s, eg_next, g);
        assert_int_equal(sched_run(s, &e), 0);
    } else {
        for (int l = 0; l < EG_LAYERS; l++)
            eg_add_layer(g, s, l);
        assert_int_equal(sched_run(s, &e), 0);
        out->nend = 0;
        assert_int_equal(sched_run(s, &e), 0);
    }
    for (int i = 0; stream != 2 && i < EG_TASKS; i++) {
        out->start[i] = sched_start(s, g->id[i]);
        out->end[i] = sched_end(s, g->id[i]);
    }
    out->makespan = sched_makespan(s);
    sched_path_sums(s, out->sums);
    out->events = sched_events(s);
    out->ntasks = sched_ntasks(s);
    sched_free(s);
}

static void test_latency_edges(void **state)
{
    (void)state;
    static struct eg_graph g;
    int joins_with_ties = 0, fewer = 0;
    for (unsigned seed = 1; seed <= 300; seed++)
        for (int stream = 0; stream <= 2; stream++) {
            struct eg_run a, b;
            eg_make(&g, seed);
            g.flags = 1;
            eg_run_graph(&g, stream, &a);
            g.flags = 0;
            eg_run_graph(&g, stream, &b);
            for (int i = 0; i < EG_TASKS; i++)
                if (a.start[i] != b.start[i] || a.end[i] != b.end[i])
                    fail_msg("seed %u stream %d task %d: %lld-%lld with delays, %lld-%lld "
                             "with edges", seed, stream, i, (long long)a.start[i],
                             (long long)a.end[i], (long long)b.start[i], (long long)b.end[i]);
            assert_int_equal(a.nend, b.nend);
            if (memcmp(a.order, b.order, sizeof(int) * (size_t)a.nend))
                fail_msg("seed %u stream %d: the tasks end in another order", seed, stream);
            if (a.makespan != b.makespan || memcmp(a.sums, b.sums, sizeof a.sums))
                fail_msg("seed %u stream %d: makespan %lld / %lld, sums %lld %lld %lld %lld / "
                         "%lld %lld %lld %lld", seed, stream, (long long)a.makespan,
                         (long long)b.makespan, (long long)a.sums[0], (long long)a.sums[1],
                         (long long)a.sums[2], (long long)a.sums[3], (long long)b.sums[0],
                         (long long)b.sums[1], (long long)b.sums[2], (long long)b.sums[3]);
            int njoin = 0, nedge = 0;
            for (int i = 0; i < EG_TASKS; i++)
                if (g.t[i].kind == 2) {
                    njoin++;
                    nedge += g.t[i].npred;
                }
            assert_int_equal(a.ntasks, b.ntasks + nedge);
            /* A join's event pops where one of its delays would end: at
             * most one pop per edge, and fewer where no release came after
             * the event had popped early. */
            assert_true(b.events <= a.events);
            fewer += b.events < a.events;
            joins_with_ties += stream == 0 && a.sums[1] > 0;
        }
    /* The flags lie on some critical paths (their sum is the barrier's). */
    assert_true(joins_with_ties > 10);
    assert_true(fewer > 100);
}


/* An edge's join starts where the latest-arriving delay would have ended,
 * among other events of that time. P1 (a flow of no bytes, 0 ps) ends at 0
 * and releases edge e1 (1,000 ps) before X (1,000 ps) starts: e1 arrives at
 * 1,000 before X's end; P2 (334 ps) releases e2 (666 ps), arriving at 1,000
 * too but after X's end. All the rest take 0 ps, so at 1,000 the events
 * come in the order they were pushed. With delays in place of the edges: X
 * ends (S2 after it starts), the second delay ends (J starts), S2 ends (S3
 * starts), J ends (S1 starts), S3 ends, S1 ends: the ends P1, P2, X, S2, S3,
 * S1, and the same with edges (J's event was moved behind X's when e2 came).
 * Left at e1's place, J would start before X ends: ..., S2, S1, S3. */
static void test_latency_edge_order(void **state)
{
    (void)state;
    for (int flags = 0; flags <= 1; flags++) {
        err e = {0};
        sched *s = sched_new();
        struct eg_run r;
        memset(&r, 0, sizeof r);
        sched_on_flow_end(s, eg_ended, &r);
        int l = sched_link(s, 1e12, "l");
        int p1 = sched_flow(s, &l, 1, 0, 0, 0, 1, 0, "p1");
        int p2 = sched_flow(s, &l, 1, 0, 0, 334, 2, 0, "p2");
        int x = sched_flow(s, &l, 1, 0, 0, 1000, 3, 0, "x");
        int j = flags ? sched_delay(s, 0, 0, "j") : sched_join(s, 0, 0, "j");
        int s1 = sched_flow(s, &l, 1, 0, 0, 0, 4, 0, "s1");
        int s2 = sched_flow(s, &l, 1, 0, 0, 0, 5, 0, "s2");
        int s3 = sched_flow(s, &l, 1, 0, 0, 0, 6, 0, "s3");
        assert_int_equal(sched_dep(s, p1, x), 0); /* released after e1 (newest first) */
        int pre[2] = {p1, p2};
        sim_ps lat[2] = {1000, 666};
        for (int k = 0; k < 2; k++) {
            if (flags) {
                int fl = sched_delay(s, lat[k], 0, "flag");
                assert_int_equal(sched_dep(s, pre[k], fl), 0);
                assert_int_equal(sched_dep(s, fl, j), 0);
            } else {
                assert_int_equal(sched_dep_lat(s, pre[k], j, lat[k], "flag"), 0);
            }
        }
        assert_int_equal(sched_dep(s, j, s1), 0);
        assert_int_equal(sched_dep(s, x, s2), 0);
        assert_int_equal(sched_dep(s, s2, s3), 0);
        assert_int_equal(sched_run(s, &e), 0);
        assert_int_equal(sched_start(s, j), 1000);
        assert_int_equal(r.nend, 6);
        static const int want[] = {0, 1, 2, 4, 5, 3}; /* p1 p2 x s2 s3 s1 (tags - 1) */
        for (int k = 0; k < 6; k++)
            assert_int_equal(r.order[k], want[k]);
        sched_free(s);
    }
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_delay_chain_and_diamond),
        cmocka_unit_test(test_flow_latency_and_zero_bytes),
        cmocka_unit_test(test_max_min_end_times),
        cmocka_unit_test(test_short_leaves_long_speeds_up),
        cmocka_unit_test(test_capped_leaves_spare),
        cmocka_unit_test(test_ring_allreduce),
        cmocka_unit_test(test_ring_exact_sub_ps),
        cmocka_unit_test(test_ring_pipeline),
        cmocka_unit_test(test_ring_shared_links),
        cmocka_unit_test(test_weighted_flows),
        cmocka_unit_test(test_crowd_leaves),
        cmocka_unit_test(test_capacity_rule),
        cmocka_unit_test(test_rule_starves),
        cmocka_unit_test(test_cycle_detected),
        cmocka_unit_test(test_zero_capacity_detected),
        cmocka_unit_test(test_determinism_and_timeline),
        cmocka_unit_test(test_timeline_values),
        cmocka_unit_test(test_timeline_lanes_as_tasks_end),
        cmocka_unit_test(test_timeline_named_lanes),
        cmocka_unit_test(test_link_busy_only),
        cmocka_unit_test(test_generated_chain),
        cmocka_unit_test(test_generated_room),
        cmocka_unit_test(test_latency_edges),
        cmocka_unit_test(test_latency_edge_order),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
