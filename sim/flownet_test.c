/* Unit tests of max-min sharing: textbook cases solved by hand with
 * progressive filling, checked on the rates right after a solve, plus the
 * time rounding rule. Rates are compared with a relative tolerance of 1e-12:
 * the solver only adds and divides a handful of numbers (~1e-16 each). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <math.h>
#include <cmocka.h>

#include "sim/flownet.h"

#define assert_rate(got, want) \
    assert_true(fabs((got) - (want)) <= 1e-12 * (want) + 1e-300)

static void test_two_flows_halve(void **state)
{
    (void)state;
    flownet *n = flownet_new();
    evq *q = evq_new();
    int32_t l = flownet_add_link(n, 10e9);
    /* Two uncapped flows on one 10 GB/s link: 5 GB/s each. */
    int a = flownet_start(n, &l, 1, 1e6, 0, 0, 0);
    int b = flownet_start(n, &l, 1, 1e6, 0, 0, 1);
    assert_true(flownet_dirty(n));
    assert_int_equal(flownet_solve(n, 0, q, 1), 0);
    assert_false(flownet_dirty(n));
    assert_rate(flownet_flow_rate(n, a), 5e9);
    assert_rate(flownet_flow_rate(n, b), 5e9);
    /* Each has an event at 1e6 B / 5e9 B/s = 200 us = 2e8 ps. */
    assert_int_equal(evq_len(q), 2);
    assert_int_equal(evq_top_ps(q), 200000000);
    evq_free(q);
    flownet_free(n);
}

static void test_three_links_four_flows(void **state)
{
    (void)state;
    flownet *n = flownet_new();
    evq *q = evq_new();
    /* L1 = 10, L2 = 4, L3 = 8 (GB/s). f0 crosses all three; f1, f2, f3 cross
     * L1, L2, L3 alone. Progressive filling: levels L1 10/2 = 5, L2 4/2 = 2,
     * L3 8/2 = 4; L2 saturates first: f0 = f2 = 2. Then L3 has 8 - 2 = 6 for
     * f3, L1 has 10 - 2 = 8 for f1: L3 saturates at 6, then L1 at 8.
     * Max-min rates: f0 = 2, f1 = 8, f2 = 2, f3 = 6; every link is full. */
    int32_t L[3];
    L[0] = flownet_add_link(n, 10e9);
    L[1] = flownet_add_link(n, 4e9);
    L[2] = flownet_add_link(n, 8e9);
    int f0 = flownet_start(n, L, 3, 1e6, 0, 0, 0);
    int f1 = flownet_start(n, &L[0], 1, 1e6, 0, 0, 1);
    int f2 = flownet_start(n, &L[1], 1, 1e6, 0, 0, 2);
    int f3 = flownet_start(n, &L[2], 1, 1e6, 0, 0, 3);
    assert_int_equal(flownet_solve(n, 0, q, 1), 0);
    assert_rate(flownet_flow_rate(n, f0), 2e9);
    assert_rate(flownet_flow_rate(n, f1), 8e9);
    assert_rate(flownet_flow_rate(n, f2), 2e9);
    assert_rate(flownet_flow_rate(n, f3), 6e9);
    evq_free(q);
    flownet_free(n);
}

static void test_caps(void **state)
{
    (void)state;
    flownet *n = flownet_new();
    evq *q = evq_new();
    /* One 10 GB/s link; f0 capped at 2: the other two share the spare 8:
     * f0 = 2, f1 = f2 = 4. */
    int32_t l = flownet_add_link(n, 10e9);
    int f0 = flownet_start(n, &l, 1, 1e6, 2e9, 0, 0);
    int f1 = flownet_start(n, &l, 1, 1e6, 0, 0, 1);
    int f2 = flownet_start(n, &l, 1, 1e6, 0, 0, 2);
    assert_int_equal(flownet_solve(n, 0, q, 1), 0);
    assert_rate(flownet_flow_rate(n, f0), 2e9);
    assert_rate(flownet_flow_rate(n, f1), 4e9);
    assert_rate(flownet_flow_rate(n, f2), 4e9);
    /* A second component, solved independently: A = 9 GB/s carries g0, g1
     * (capped at 1) and g2, which also crosses B = 2 GB/s. Levels: A 9/3 = 3,
     * B 2/1 = 2, cap 1: g1 = 1 first; A then has 8 for two flows (4), B still
     * 2: g2 = 2; A's last 6 go to g0. Rates g0 = 6, g1 = 1, g2 = 2. */
    int32_t AB[2];
    AB[0] = flownet_add_link(n, 9e9);
    AB[1] = flownet_add_link(n, 2e9);
    int g0 = flownet_start(n, &AB[0], 1, 1e6, 0, 0, 3);
    int g1 = flownet_start(n, &AB[0], 1, 1e6, 1e9, 0, 4);
    int g2 = flownet_start(n, AB, 2, 1e6, 0, 0, 5);
    assert_int_equal(flownet_solve(n, 0, q, 1), 0);
    assert_rate(flownet_flow_rate(n, g0), 6e9);
    assert_rate(flownet_flow_rate(n, g1), 1e9);
    assert_rate(flownet_flow_rate(n, g2), 2e9);
    /* The first component was not touched: its rates are as before. */
    assert_rate(flownet_flow_rate(n, f1), 4e9);
    evq_free(q);
    flownet_free(n);
}

static void test_departure_reshares(void **state)
{
    (void)state;
    flownet *n = flownet_new();
    evq *q = evq_new();
    /* 1 GB/s link, flows of 1e6 and 3e6 bytes: 0.5 GB/s each, the short one
     * is done at 1e6 / 0.5e9 = 2 ms = 2e9 ps; the long one then has 2e6 left
     * at 1 GB/s: done at 2e9 + 2e9 = 4e9 ps. */
    int32_t l = flownet_add_link(n, 1e9);
    int a = flownet_start(n, &l, 1, 1e6, 0, 0, 0);
    int b = flownet_start(n, &l, 1, 3e6, 0, 0, 1);
    assert_int_equal(flownet_solve(n, 0, q, 1), 0);
    int64_t t;
    int32_t arg;
    assert_int_equal(evq_pop(q, &t, NULL, &arg), 1);
    assert_int_equal(arg, a);
    assert_int_equal(t, 2000000000LL);
    assert_int_equal(flownet_finish(n, a, t), 0);
    assert_int_equal(flownet_solve(n, t, q, 1), 0);
    assert_rate(flownet_flow_rate(n, b), 1e9);
    assert_int_equal(evq_pop(q, &t, NULL, &arg), 1);
    assert_int_equal(arg, b);
    assert_int_equal(t, 4000000000LL);
    assert_int_equal(flownet_finish(n, b, t), 1);
    /* The link carried both flows: 4e6 bytes. */
    assert_rate(flownet_link_bytes(n, l), 4e6);
    assert_int_equal(flownet_nactive(n), 0);
    evq_free(q);
    flownet_free(n);
}

static void test_weights(void **state)
{
    (void)state;
    flownet *n = flownet_new();
    evq *q = evq_new();
    /* A flow of weight 4 alone on an 8 GB/s link uses 4x its rate there:
     * 2 GB/s. */
    int32_t l = flownet_add_link(n, 8e9);
    double w4 = 4;
    int a = flownet_start_w(n, &l, &w4, 1, 1e6, 0, 0, 0);
    assert_int_equal(flownet_solve(n, 0, q, 1), 0);
    assert_rate(flownet_flow_rate(n, a), 2e9);
    /* Two links of 12 GB/s: b has weight 2 on the first and 1 on the second,
     * c weight 1 on the first. Common level x: first link 2x + x = 12 ->
     * x = 4; second link alone x = 12: the first saturates, b = c = 4 GB/s. */
    int32_t L[2] = {flownet_add_link(n, 12e9), flownet_add_link(n, 12e9)};
    double wb[2] = {2, 1};
    int b = flownet_start_w(n, L, wb, 2, 1e6, 0, 0, 1);
    int c = flownet_start_w(n, L, NULL, 1, 1e6, 0, 0, 2);
    assert_int_equal(flownet_solve(n, 0, q, 1), 0);
    assert_rate(flownet_flow_rate(n, b), 4e9);
    assert_rate(flownet_flow_rate(n, c), 4e9);
    evq_free(q);
    flownet_free(n);
}

static uint64_t lcg(uint64_t *x)
{
    *x = *x * 6364136223846793005ULL + 1442695040888963407ULL;
    return *x >> 33;
}

/* Check the definition of max-min fairness on the current rates: feasible
 * (no link over capacity, counting each flow's rate times its weight there;
 * no flow over its cap; within 1e-9 relative), and every flow has a
 * bottleneck: its cap, or a full link (>= 1 - 1e-9 of its capacity) on which
 * no flow is faster than it (within 1e-9). */
static void check_max_min(const flownet *n, const int *flows, int nf,
                          const double *caps, double (*w)[4])
{
    int nl = flownet_nlinks(n);
    double load[64] = {0};
    for (int i = 0; i < nf; i++) {
        int k;
        const int32_t *ls = flownet_flow_links(n, flows[i], &k);
        for (int j = 0; j < k; j++)
            load[ls[j]] += flownet_flow_rate(n, flows[i]) * w[i][j];
    }
    for (int l = 0; l < nl; l++)
        assert_true(load[l] <= flownet_link_cap(n, l) * (1 + 1e-9));
    for (int i = 0; i < nf; i++) {
        double x = flownet_flow_rate(n, flows[i]);
        if (caps[i] > 0) {
            assert_true(x <= caps[i] * (1 + 1e-9));
            if (x >= caps[i] * (1 - 1e-9))
                continue; /* bottlenecked by its own cap */
        }
        int k, ok = 0;
        const int32_t *ls = flownet_flow_links(n, flows[i], &k);
        for (int j = 0; j < k && !ok; j++) {
            int l = ls[j];
            if (load[l] < flownet_link_cap(n, l) * (1 - 1e-9))
                continue;
            int fastest = 1;
            for (int m = 0; m < nf; m++) {
                int km;
                const int32_t *lm = flownet_flow_links(n, flows[m], &km);
                for (int q = 0; q < km; q++)
                    if (lm[q] == l && flownet_flow_rate(n, flows[m]) > x * (1 + 1e-9))
                        fastest = 0;
            }
            ok = fastest;
        }
        assert_true(ok);
    }
}

static void test_random_max_min(void **state)
{
    (void)state;
    /* 200 random networks (up to 40 links, 60 flows of 1-4 links, a third
     * capped, half of them with weights 0.5, 1 or 2 per link): both ways of
     * finding the next bottleneck (heap, scan) give rates that satisfy the
     * max-min definition, and the same rates (within 1e-12 relative: same
     * operations in a possibly different order). */
    uint64_t seed = 1;
    for (int trial = 0; trial < 200; trial++) {
        flownet *nh = flownet_new(), *ns = flownet_new();
        evq *q = evq_new();
        flownet_method(nh, 1);
        flownet_method(ns, 2);
        int nl = 1 + (int)(lcg(&seed) % 40), nf = 1 + (int)(lcg(&seed) % 60);
        for (int l = 0; l < nl; l++) {
            double c = 1e9 * (double)(1 + lcg(&seed) % 100);
            flownet_add_link(nh, c);
            flownet_add_link(ns, c);
        }
        static int32_t routes[60][4];
        static double w[60][4];
        int fh[60], fs[60];
        double caps[60];
        int weighted = trial % 2;
        for (int i = 0; i < nf; i++) {
            int k = 1 + (int)(lcg(&seed) % 4);
            for (int j = 0; j < k; j++) {
                routes[i][j] = (int32_t)(lcg(&seed) % (uint64_t)nl);
                w[i][j] = weighted ? 0.5 * (double)(1u << (lcg(&seed) % 3)) : 1.0;
            }
            caps[i] = lcg(&seed) % 3 == 0 ? 1e8 * (double)(1 + lcg(&seed) % 300) : 0;
            fh[i] = flownet_start_w(nh, routes[i], weighted ? w[i] : NULL, k, 1e6, caps[i],
                                    0, i);
            fs[i] = flownet_start_w(ns, routes[i], weighted ? w[i] : NULL, k, 1e6, caps[i],
                                    0, i);
        }
        assert_int_equal(flownet_solve(nh, 0, q, 1), 0);
        evq_clear(q);
        assert_int_equal(flownet_solve(ns, 0, q, 1), 0);
        check_max_min(nh, fh, nf, caps, w);
        check_max_min(ns, fs, nf, caps, w);
        for (int i = 0; i < nf; i++)
            assert_rate(flownet_flow_rate(nh, fh[i]), flownet_flow_rate(ns, fs[i]));
        evq_free(q);
        flownet_free(nh);
        flownet_free(ns);
    }
}

static void test_ticks(void **state)
{
    (void)state;
    /* 1 MiB at 25 GB/s: exactly 1048576 / 25e9 s = 41943040 ps; the float
     * quotient may be off by an ulp, which must not turn into 41943041. */
    assert_int_equal(flownet_ticks(1048576, 25e9), 41943040);
    /* 1 byte at 1 GB/s is 1 ns = 1000 ps exactly, but 1 / 1e9 * 1e12 is
     * 1000.0000000000001 in doubles (1.1e-16 relative, inside FLOWNET_EPS
     * = 1e-14): the tie rule rounds it to 1000, a plain ceil would give 1001.
     * Likewise 3 B at 12 GB/s = 250 ps (float 250.00000000000003). */
    assert_int_equal(flownet_ticks(1, 1e9), 1000);
    assert_int_equal(flownet_ticks(3, 12e9), 250);
    /* 1 byte at 3 B/s = 333333333333.33 ps: rounded up to ...334. */
    assert_int_equal(flownet_ticks(1, 3), 333333333334LL);
    /* 10 bytes at 1e12 B/s = 10 ps exactly; 0 rate or absurd time: -1. */
    assert_int_equal(flownet_ticks(10, 1e12), 10);
    assert_int_equal(flownet_ticks(10, 0), -1);
    assert_int_equal(flownet_ticks(1e300, 1), -1);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_two_flows_halve),
        cmocka_unit_test(test_three_links_four_flows),
        cmocka_unit_test(test_caps),
        cmocka_unit_test(test_departure_reshares),
        cmocka_unit_test(test_weights),
        cmocka_unit_test(test_random_max_min),
        cmocka_unit_test(test_ticks),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
