/* The transaction-level engine's mechanisms, each on a small hand-built
 * topology whose numbers make the expected rates easy to derive by hand
 * (docs/model.md, "The transaction-level engine"):
 *
 *   cpu0 - rp0 - sw0 - {g0, g1}
 *        - rp1 - sw1 - g2
 *        - rp2 - sw2 - g3
 *
 * Every link 10 GB/s (stated, as in the topology format, for writes of MPS =
 * 256 bytes: a 256-byte write takes 25.6 ns on the wire), latencies 0 and
 * credits unlimited unless a test says otherwise; the credit return delay
 * (tlp_fc) 100 ns. */
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <cmocka.h>

#include "models/tlp/tlp.h"
#include "models/tlp/tlp_flows.h"

#define GB 1e9
#define NEAR_REL(got, want, tol)                                                 \
    do {                                                                         \
        double g_ = (got), w_ = (want);                                          \
        if (!(fabs(g_ - w_) <= (tol) * fabs(w_)))                                \
            fail_msg("%s = %.9g, expected %.9g (relative tolerance %g)", #got,  \
                     g_, w_, (double)(tol));                                     \
    } while (0)

static void add(topo *t, const char *a, const char *b, topo_link_kind k, double bw, double ns)
{
    err e = {0};
    topo_link l = {.a = topo_find(t, a), .b = topo_find(t, b), .kind = k,
                   .pcie_gen = k == LINK_PCIE ? 5 : 0, .pcie_width = k == LINK_PCIE ? 16 : 0,
                   .bw_Bps = bw, .lat_ps = (int64_t)(ns * 1e3)};
    if (topo_add_link(t, &l, &e) < 0)
        fail_msg("link %s-%s: %s", a, b, e.msg);
}

static void node(topo *t, const char *name, topo_kind k, const char *parent)
{
    err e = {0};
    int id = topo_add_node(t, name, k, 0, &e);
    if (id < 0)
        fail_msg("node %s: %s", name, e.msg);
    if (parent && topo_set_parent(t, id, topo_find(t, parent), &e))
        fail_msg("parent of %s: %s", name, e.msg);
}

/* lat_ns[i]: latency of the GPU link of g_i (g0..g3). */
static topo *build(const double *lat_ns)
{
    topo *t = topo_new("tlp-test");
    node(t, "cpu0", TOPO_CPU, NULL);
    static const char *const rp[] = {"rp0", "rp1", "rp2"}, *const sw[] = {"sw0", "sw1", "sw2"};
    for (int i = 0; i < 3; i++) {
        node(t, rp[i], TOPO_ROOT, "cpu0");
        add(t, rp[i], "cpu0", LINK_FABRIC, 10 * GB, 0);
        node(t, sw[i], TOPO_SWITCH, rp[i]);
        add(t, sw[i], rp[i], LINK_PCIE, 10 * GB, 0);
    }
    static const char *const g[][2] = {{"g0", "sw0"}, {"g1", "sw0"}, {"g2", "sw1"}, {"g3", "sw2"}};
    for (int i = 0; i < 4; i++) {
        node(t, g[i][0], TOPO_GPU, g[i][1]);
        add(t, g[i][0], g[i][1], LINK_PCIE, 10 * GB, lat_ns ? lat_ns[i] : 0);
    }
    topo_params *p = topo_params_mut(t);
    p->pcie_mps_bytes = 256;
    p->pcie_mrrs_bytes = 512;
    p->pcie_tlp_overhead_bytes = 24;
    p->read_tags = 16384;
    p->read_extra_lat_ps = 0;
    p->tlp_sw_hdr = p->tlp_rc_hdr = p->tlp_ep_hdr = 0;
    p->tlp_sw_data_bytes = p->tlp_rc_data_bytes = p->tlp_ep_data_bytes = 0;
    p->tlp_rc_cpl_hdr = p->tlp_rc_cpl_data_bytes = 0;
    p->tlp_fc_ps = 100000;
    p->tlp_turn_ps = p->tlp_turn_cpl_ps = 0;
    return t;
}

static void finish(topo *t)
{
    err e = {0};
    if (topo_finish(t, "tlp-test", &e))
        fail_msg("topo_finish: %s", e.msg);
}

static int gpu(const topo *t, int i) { return topo_gpu_node(t, i); }

/* Run the flows (op, src, dst) of bytes each; end[i] in seconds. */
static void run(topo *t, int nf, const tlp_op *op, const int *src, const int *dst, double bytes,
                double *end)
{
    err e = {0};
    tlp_net *n = tlp_new(t, &e);
    assert_non_null(n);
    int id[8];
    for (int i = 0; i < nf; i++) {
        id[i] = tlp_flow(n, op[i], gpu(t, src[i]), gpu(t, dst[i]), bytes, &e);
        if (id[i] < 0)
            fail_msg("tlp_flow: %s", e.msg);
    }
    if (tlp_run(n, 0, &e))
        fail_msg("tlp_run: %s", e.msg);
    for (int i = 0; i < nf; i++)
        end[i] = (double)tlp_end_ps(n, id[i]) / 1e12;
    tlp_free(n);
}

static void test_split_cpl(void **state)
{
    (void)state;
    int s[8];
    /* An aligned 512-byte read with completions of at most 256: two of 256. */
    assert_int_equal(tlp_split_cpl(0, 512, 64, 256, s, 8), 2);
    assert_int_equal(s[0], 256);
    assert_int_equal(s[1], 256);
    /* Starting 32 bytes into an RCB: the first completion ends at the first
     * boundary the 256 bytes allow (256 - 32 = 224), then 256, then 32. */
    assert_int_equal(tlp_split_cpl(32, 512, 64, 256, s, 8), 3);
    assert_int_equal(s[0], 224);
    assert_int_equal(s[1], 256);
    assert_int_equal(s[2], 32);
    /* With completions of one RCB (64): eight of them. */
    assert_int_equal(tlp_split_cpl(0, 512, 64, 64, s, 8), 8);
}

/* A link bound by its receiver's credits: sw0 grants g0 4 posted headers; a
 * credit comes back wire + latency + fc after it was used (the TLP leaves
 * sw0's ingress the moment it arrives), so g0 writes at most
 * 4 x 256 B / (25.6 ns + 1000 ns + 100 ns) = 0.9097 GB/s instead of 10. 4 MiB
 * then take 4.61 ms (plus the first TLP's latency, 1 us: well within 1%). */
static void test_credit_bound_link(void **state)
{
    (void)state;
    double lat[4] = {1000, 0, 0, 0};
    topo *t = build(lat);
    topo_params_mut(t)->tlp_sw_hdr = 4;
    finish(t);
    tlp_op op[1] = {TLP_CE_WRITE};
    int src[1] = {0}, dst[1] = {2};
    double end[1], bytes = 4 * 1048576.0;
    run(t, 1, op, src, dst, bytes, end);
    double rate = 4 * 256 / (25.6e-9 + 1000e-9 + 100e-9);
    NEAR_REL(end[0], bytes / rate, 0.01);
    /* With 16 headers the loop allows 3.64 GB/s: still credit-bound, 4x. */
    topo_params_mut(t)->tlp_sw_hdr = 16;
    run(t, 1, op, src, dst, bytes, end);
    NEAR_REL(end[0], bytes / (4 * rate), 0.01);
    topo_free(t);
}

/* A reader bound by its tags: g0 reads g3 with 4 tags and 512-byte requests;
 * g3's link has 2 us of latency, so a request's round trip is 2 x 2 us plus
 * the store-and-forward of the request (24 wire bytes, 2.2 ns a hop, 6 hops)
 * and of its two 256-byte completions (276 wire bytes, 25.2 ns a hop, 6 hops
 * for the first and one more for the second): RTT = 4.189 us, and the
 * reader moves 4 x 512 B / RTT = 0.489 GB/s. 1 MiB: 2.145 ms (2%). */
static void test_tag_bound_reader(void **state)
{
    (void)state;
    double lat[4] = {0, 0, 0, 2000};
    topo *t = build(lat);
    topo_params_mut(t)->read_tags = 4;
    finish(t);
    tlp_op op[1] = {TLP_CE_READ};
    int src[1] = {3}, dst[1] = {0};
    double end[1], bytes = 1048576.0;
    run(t, 1, op, src, dst, bytes, end);
    double w = 1 / (10 * GB * 280.0 / 256); /* seconds per wire byte */
    double rtt = 4e-6 + 6 * 24 * w + 7 * 276 * w;
    NEAR_REL(end[0], bytes / (4 * 512 / rtt), 0.02);
    /* 16 tags: four times the rate (0.0201 s of 1 MiB -> a quarter). */
    topo_params_mut(t)->read_tags = 16;
    run(t, 1, op, src, dst, bytes, end);
    NEAR_REL(end[0], bytes / (16 * 512 / rtt), 0.02);
    /* A GPU's own limit (topo_set_read_tags, a node's tags=) wins over the
     * topology's: the reader back at 4 tags, the 4-tag time again. */
    err e = {0};
    assert_int_equal(topo_set_read_tags(t, topo_gpu_node(t, 0), 4, &e), 0);
    run(t, 1, op, src, dst, bytes, end);
    NEAR_REL(end[0], bytes / (4 * 512 / rtt), 0.02);
    /* The copy engine's own cap (ce_read_tags): the GPU back at 16 tags, its
     * engine at 4, the 4-tag time; a cap above the GPU's tags (64) leaves
     * the GPU's 16. */
    assert_int_equal(topo_set_read_tags(t, topo_gpu_node(t, 0), 16, &e), 0);
    topo_params_mut(t)->ce_read_tags = 4;
    run(t, 1, op, src, dst, bytes, end);
    NEAR_REL(end[0], bytes / (4 * 512 / rtt), 0.02);
    topo_params_mut(t)->ce_read_tags = 64;
    run(t, 1, op, src, dst, bytes, end);
    NEAR_REL(end[0], bytes / (16 * 512 / rtt), 0.02);
    topo_free(t);
}

/* Arbitration is per ingress port, not per flow: g0 sends three flows and
 * g1 one, all to g2 over sw0's uplink (10 GB/s). Round robin between the two
 * ports gives g1's flow half the uplink: S / 5 GB/s; g0's three share the
 * other half until then (S in all), then the whole uplink for the 2S left:
 * they end at 2S/10 + 2S/10 = 4S / 10 GB/s. Max-min fairness per flow would
 * end all four at 4S / 10 GB/s, g1's too. g0 draws among its flows at random,
 * so one of them ends up to about sqrt(N 2/9) TLPs early (N = 3 x 4S / 256 B
 * picks): S = 4 MiB keeps that near 0.65%, 1%. */
static void test_port_arbitration(void **state)
{
    (void)state;
    topo *t = build(NULL);
    finish(t);
    tlp_op op[4] = {TLP_CE_WRITE, TLP_CE_WRITE, TLP_CE_WRITE, TLP_CE_WRITE};
    int src[4] = {0, 0, 0, 1}, dst[4] = {2, 2, 2, 2};
    double end[4], S = 4 * 1048576.0;
    run(t, 4, op, src, dst, S, end);
    NEAR_REL(end[3], S / (5 * GB), 0.01);
    for (int i = 0; i < 3; i++)
        NEAR_REL(end[i], 4 * S / (10 * GB), 0.01);
    topo_free(t);
}

/* A posted write blocked behind a stalled one: g0 writes to g3, whose path
 * ends on a 1 GB/s link, and to g1 (its neighbour on sw0, 10 GB/s). sw0
 * grants g0 4 posted headers and the root complex 4 per port, so the writes
 * to g3 back up to g0's own port and hold its credits: each time one of them
 * moves on (every 256 ns) g0 gets a credit back and sends its next write,
 * towards g1 or g3 with equal odds; those to g1 leave at once, so g0 sends on
 * average one to g1 per one to g3 and the write to g1 moves at the stalled
 * one's 1 GB/s: S = 1 MiB takes about 1.05 ms (10%, the draws). Alone it is
 * bound by sw0's 4 credits only: 4 x 256 B / (25.6 + 100 ns) = 8.15 GB/s,
 * 0.1286 ms (1%). */
static void test_posted_blocked_behind_stalled(void **state)
{
    (void)state;
    topo *t = build(NULL);
    topo_params_mut(t)->tlp_sw_hdr = 4;
    topo_params_mut(t)->tlp_rc_hdr = 4;
    /* The last link of g3's path (sw2 - g3) at 1 GB/s. */
    for (int i = 0; i < topo_nlinks(t); i++) {
        topo_link *l = (topo_link *)topo_link_at(t, i);
        if (l->a == topo_find(t, "g3"))
            l->bw_Bps = 1 * GB;
    }
    finish(t);
    tlp_op op[2] = {TLP_CE_WRITE, TLP_CE_WRITE};
    int src[2] = {0, 0}, dst[2] = {3, 1};
    double end[2], S = 1048576.0;
    run(t, 2, op, src, dst, S, end);
    NEAR_REL(end[1], S / (1 * GB), 0.10);
    NEAR_REL(end[0], S / (1 * GB), 0.10);
    run(t, 1, op + 1, src + 1, dst + 1, S, end);
    NEAR_REL(end[0], S / (4 * 256 / (25.6e-9 + 100e-9)), 0.01);
    topo_free(t);
}

/* The root ports' ordering turnaround: g0 -> g2 and g1 -> g3 share sw0's
 * uplink, the requester and the destination root port (rp1, rp2) alternate
 * TLP by TLP, so every write at rp0 waits tlp_turn = 200 ns after the one
 * before: 256 B / 200 ns = 1.28 GB/s for both, S = 1 MiB each in 1.638 ms
 * (1%). Towards one root port (g0 -> g2, g1 -> g2) nothing waits: the uplink's
 * 10 GB/s, 0.2097 ms. */
static void test_turnaround(void **state)
{
    (void)state;
    topo *t = build(NULL);
    topo_params_mut(t)->tlp_turn_ps = 200000;
    finish(t);
    tlp_op op[2] = {TLP_CE_WRITE, TLP_CE_WRITE};
    int src[2] = {0, 1}, dst[2] = {2, 3};
    double end[2], S = 1048576.0;
    run(t, 2, op, src, dst, S, end);
    NEAR_REL(end[0], 2 * S / (256 / 200e-9), 0.01);
    NEAR_REL(end[1], 2 * S / (256 / 200e-9), 0.01);
    int dst1[2] = {2, 2};
    run(t, 2, op, src, dst1, S, end);
    NEAR_REL(end[1], 2 * S / (10 * GB), 0.01);
    topo_free(t);
}

/* The windowed approximation against every TLP: the turnaround case of 8 MiB
 * per flow, simulated whole and with a 20 us window, agree within 1%, the
 * window with a fiftieth of the events or fewer. */
static void test_window(void **state)
{
    (void)state;
    topo *t = build(NULL);
    topo_params_mut(t)->tlp_turn_ps = 200000;
    finish(t);
    err e = {0};
    double end[2][2];
    uint64_t ev[2];
    for (int w = 0; w < 2; w++) {
        tlp_net *n = tlp_new(t, &e);
        assert_non_null(n);
        int a = tlp_flow(n, TLP_CE_WRITE, gpu(t, 0), gpu(t, 2), 8 * 1048576.0, &e);
        int b = tlp_flow(n, TLP_CE_WRITE, gpu(t, 1), gpu(t, 3), 8 * 1048576.0, &e);
        assert_true(a >= 0 && b >= 0);
        if (tlp_run(n, w ? 20000000 : 0, &e))
            fail_msg("tlp_run: %s", e.msg);
        end[w][0] = (double)tlp_end_ps(n, a);
        end[w][1] = (double)tlp_end_ps(n, b);
        ev[w] = tlp_last_stats(n).events;
        tlp_free(n);
    }
    assert_true(ev[1] * 50 <= ev[0]);
    NEAR_REL(end[1][0], end[0][0], 0.01);
    NEAR_REL(end[1][1], end[0][1], 0.01);
    topo_free(t);
}

/* Readers g2 (behind rp1) and g3 (rp2) each read S bytes from g0 and g1
 * (both on sw0), 256 tags per reader, completion turnaround 200 ns, root
 * ports' and CPUs' completion buffers of cpl_hdr headers and cpl_data bytes
 * (0: infinite). The four flows' rate in B/s over every TLP (window 0) and
 * with a 20 us window. */
static void four_reads(int cpl_hdr, int cpl_data, double S, double *exact_Bps, double *win_Bps)
{
    topo *t = build(NULL);
    topo_params *p = topo_params_mut(t);
    p->tlp_turn_cpl_ps = 200000;
    p->read_tags = 256;
    p->tlp_rc_cpl_hdr = cpl_hdr;
    p->tlp_rc_cpl_data_bytes = cpl_data;
    finish(t);
    err e = {0};
    static const int src[4] = {0, 1, 0, 1}, dst[4] = {2, 2, 3, 3};
    for (int w = 0; w < 2; w++) {
        tlp_net *n = tlp_new(t, &e);
        assert_non_null(n);
        int id[4];
        for (int i = 0; i < 4; i++) {
            id[i] = tlp_flow(n, TLP_CE_READ, gpu(t, src[i]), gpu(t, dst[i]), S, &e);
            assert_true(id[i] >= 0);
        }
        if (tlp_run(n, w ? 20000000 : 0, &e))
            fail_msg("tlp_run: %s", e.msg);
        double end = 0;
        for (int i = 0; i < 4; i++)
            if ((double)tlp_end_ps(n, id[i]) > end)
                end = (double)tlp_end_ps(n, id[i]);
        *(w ? win_Bps : exact_Bps) = 4 * S / (end * 1e-12);
        tlp_free(n);
    }
    topo_free(t);
}

/* A start that does not look like the steady state (four_reads, every
 * credit unlimited). At the start both readers' 512 requests reach g0 and g1
 * at once, sw0's uplink carries both completers' backlogs in strict
 * alternation, and half the completions turn: a 256-byte completion (276
 * wire bytes at 10 GB/s x 280/256: 25.2 ns) takes 0.5 x 25.2 + 0.5 x 200 =
 * 112.6 ns, so the uplink moves 256 B / 112.6 ns = 2.27 GB/s of the four
 * flows, for as long as that first backlog lasts (256 KiB: about 115 us).
 * Afterwards, with rp0 taking every completion sw0 sends, the order at rp0
 * follows the requests' arrival, which the readers' draws mix, and fewer
 * turn. A window (20 us) that took its rates during that start would give
 * about 2.27 GB/s; the window must wait until the network has turned over
 * and agree with every TLP simulated (2%), and every TLP gives a rate well
 * above the start's (at least 1.2 x 2.27). */
static void test_window_steady(void **state)
{
    (void)state;
    double exact, win, start_Bps = 256 / 112.6e-9;
    four_reads(0, 0, 4 * 1048576.0, &exact, &win);
    assert_true(exact > 1.2 * start_Bps);
    NEAR_REL(win, exact, 0.02);
}

/* A root complex's finite buffer for the completions it forwards (docs/model.md
 * "A root complex's buffer for forwarded completions"): four_reads with 256
 * headers and 32 KiB at rp0 and the CPU. The completions waiting for rp0's
 * turnaround fill it, sw0's uplink stalls with both completers' completions
 * queued at its egress, and its round robin keeps alternating them: the start's
 * strict alternation is the steady state, 256 B / 112.6 ns = 2.27 GB/s by hand
 * (above), every TLP within 3% (2.26 today) and the window within 3% of it
 * (2.20 today: its four flows' rates, drawn at random, differ more within
 * a window than over the whole run). */
static void test_rc_cpl_buffer(void **state)
{
    (void)state;
    double exact, win, hand_Bps = 256 / 112.6e-9;
    four_reads(256, 32768, 2 * 1048576.0, &exact, &win);
    NEAR_REL(exact, hand_Bps, 0.03);
    NEAR_REL(win, exact, 0.03);
}

/* A flow that waits for another: g0 -> g1 stays inside sw0 and g2 -> g3
 * crosses rp1, the CPU and rp2, so the two share no link and together end at
 * S / 10 GB/s. With g2 -> g3 after g0 -> g1 it starts when that one ends and
 * ends at 2S / 10 GB/s. Every TLP (no window) and with a 20 us window, where
 * the first ends inside an extrapolated phase (S = 4 MiB: 0.42 ms), 1%. */
static void test_flow_after(void **state)
{
    (void)state;
    topo *t = build(NULL);
    finish(t);
    err e = {0};
    double S = 4 * 1048576.0;
    for (int w = 0; w < 2; w++) {
        for (int chained = 0; chained < 2; chained++) {
            tlp_net *n = tlp_new(t, &e);
            assert_non_null(n);
            int a = tlp_flow(n, TLP_CE_WRITE, gpu(t, 0), gpu(t, 1), S, &e);
            int b = tlp_flow(n, TLP_CE_WRITE, gpu(t, 2), gpu(t, 3), S, &e);
            assert_true(a >= 0 && b >= 0);
            if (chained && tlp_flow_after(n, b, a, &e))
                fail_msg("tlp_flow_after: %s", e.msg);
            if (tlp_run(n, w ? 20000000 : 0, &e))
                fail_msg("tlp_run: %s", e.msg);
            NEAR_REL((double)tlp_end_ps(n, a) / 1e12, S / (10 * GB), 0.01);
            NEAR_REL((double)tlp_end_ps(n, b) / 1e12, (chained ? 2 : 1) * S / (10 * GB), 0.01);
            tlp_free(n);
        }
    }
    /* A flow can only wait for one added before it. */
    tlp_net *n = tlp_new(t, &e);
    int a = tlp_flow(n, TLP_CE_WRITE, gpu(t, 0), gpu(t, 1), S, &e);
    assert_int_equal(tlp_flow_after(n, a, a, &e), ERR_USAGE);
    tlp_free(n);
    topo_free(t);
}

/* A device's concurrent transfers share its issue evenly, whatever else it
 * has waiting or done: g0 copies S to g1 (through sw0) and S to g2 (through
 * rp0, the CPU and rp1), and a third copy g0 -> g3 waits for the first. Only
 * g0's 10 GB/s link is shared, so the first two move at 5 GB/s each and both
 * end at 2S / 10 GB/s; the third then runs alone and ends at 3S / 10. A draw
 * that counted the waiting copy among g0's transfers would hand its turns to
 * the next one in the list (the first copy: 2/3 of the link, ending at
 * 1.5 S / 10, 25% early). Every TLP, S = 4 MiB (16,384 TLPs each: the draw's
 * spread is about 0.5%), 2%. */
static void test_even_draw(void **state)
{
    (void)state;
    topo *t = build(NULL);
    finish(t);
    err e = {0};
    double S = 4 * 1048576.0;
    tlp_net *n = tlp_new(t, &e);
    assert_non_null(n);
    int a = tlp_flow(n, TLP_CE_WRITE, gpu(t, 0), gpu(t, 1), S, &e);
    int b = tlp_flow(n, TLP_CE_WRITE, gpu(t, 0), gpu(t, 2), S, &e);
    int c = tlp_flow(n, TLP_CE_WRITE, gpu(t, 0), gpu(t, 3), S, &e);
    assert_true(a >= 0 && b >= 0 && c >= 0);
    if (tlp_flow_after(n, c, a, &e) || tlp_run(n, 0, &e))
        fail_msg("tlp: %s", e.msg);
    NEAR_REL((double)tlp_end_ps(n, a) / 1e12, 2 * S / (10 * GB), 0.02);
    NEAR_REL((double)tlp_end_ps(n, b) / 1e12, 2 * S / (10 * GB), 0.02);
    NEAR_REL((double)tlp_end_ps(n, c) / 1e12, 3 * S / (10 * GB), 0.02);
    tlp_free(n);
    topo_free(t);
}

/* PyTorch's copy_ issued in order (flows.h FLOWS_ISSUE_TORCH), g0 -> g1 then
 * g0 -> g2: one copy engine runs them one after the other, so the first ends
 * at S / 10 GB/s and the second at 2S / 10 GB/s; streams that interleave
 * (the CE order off) share g0's link and both end near 2S / 10. Copies into
 * one GPU from two (g0 -> g2, g1 -> g2; copy-write): the second waits for the
 * first on the destination's stream (S/10, then 2S/10); as copy-read (g2
 * reading both, issued under g2's stream) nothing waits: two pushes, by g0's
 * and g1's engines (PyTorch runs a copy on the data's device), share g2's
 * link and both end at 2S / 10. S = 4 MiB, 1% (shared links 2%). */
static void test_torch_issue(void **state)
{
    (void)state;
    topo *t = build(NULL);
    topo_params_mut(t)->copy_setup_ps = 0;
    finish(t);
    err e = {0};
    double S = 4 * 1048576.0, one = S / (10 * GB);
    int64_t tp[2];
    tlp_net *n = tlp_new(t, &e);
    assert_non_null(n);
    flows_case c;
    memset(&c, 0, sizeof c);
    c.op = FLOWS_COPY_WRITE;
    c.bytes = S;
    c.issue = FLOWS_ISSUE_TORCH;
    assert_int_equal(flows_case_add(&c, 0, 1), 0);
    assert_int_equal(flows_case_add(&c, 0, 2), 0);
    if (tlp_flows_run(n, &c, 0, tp, &e))
        fail_msg("tlp_flows_run: %s", e.msg);
    NEAR_REL((double)tp[0] / 1e12, one, 0.01);
    NEAR_REL((double)tp[1] / 1e12, 2 * one, 0.01);
    c.orders = FLOWS_ORDER_DST;
    if (tlp_flows_run(n, &c, 0, tp, &e))
        fail_msg("tlp_flows_run: %s", e.msg);
    NEAR_REL((double)tp[0] / 1e12, 2 * one, 0.02);
    NEAR_REL((double)tp[1] / 1e12, 2 * one, 0.02);
    c.orders = 0;
    c.src[0] = 0, c.dst[0] = 2, c.src[1] = 1, c.dst[1] = 2;
    if (tlp_flows_run(n, &c, 0, tp, &e))
        fail_msg("tlp_flows_run: %s", e.msg);
    NEAR_REL((double)tp[0] / 1e12, one, 0.01);
    NEAR_REL((double)tp[1] / 1e12, 2 * one, 0.01);
    c.op = FLOWS_COPY_READ;
    if (tlp_flows_run(n, &c, 0, tp, &e))
        fail_msg("tlp_flows_run: %s", e.msg);
    NEAR_REL((double)tp[0] / 1e12, 2 * one, 0.02);
    NEAR_REL((double)tp[1] / 1e12, 2 * one, 0.02);
    flows_case_free(&c);
    tlp_free(n);
    topo_free(t);
}

/* DLLPs on the reverse direction (tlp_dllp_bytes): g0 and g1 on sw0 write 4
 * MiB to each other at once, copy-engine TLPs of 256 bytes (280 on the wire,
 * 25.6 ns at 10 GB/s). Each receiver returns 16 bytes of DLLPs per TLP on
 * the other direction of its link, which carries the other GPU's TLPs: every
 * direction of g0's and g1's links moves 280 + 16 = 296 wire bytes per TLP,
 * so each flow runs at 10 x 280 / 296 = 9.459 GB/s and ends at 4 MiB /
 * 9.459 GB/s = 443.4 us (443.4 - 419.4 = 24 us later than without DLLPs).
 * One flow alone sends its DLLPs on idle wires: 4 MiB / 10 GB/s = 419.4 us.
 * Switched off (TLP_NO_DLLP), the pair is back at 419.4 us. */
static void test_dllp_reverse(void **state)
{
    (void)state;
    topo *t = build(NULL);
    topo_params_mut(t)->tlp_dllp_bytes = 16;
    finish(t);
    tlp_op op[2] = {TLP_CE_WRITE, TLP_CE_WRITE};
    int src[2] = {0, 1}, dst[2] = {1, 0};
    double end[2], bytes = 4 * 1048576.0;
    run(t, 2, op, src, dst, bytes, end);
    double both = bytes / (10 * GB * 280.0 / 296), alone = bytes / (10 * GB);
    NEAR_REL(end[0], both, 0.005);
    NEAR_REL(end[1], both, 0.005);
    run(t, 1, op, src, dst, bytes, end);
    NEAR_REL(end[0], alone, 0.005);
    err e = {0};
    tlp_net *n = tlp_new(t, &e);
    assert_non_null(n);
    tlp_disable(n, TLP_NO_DLLP);
    int a = tlp_flow(n, TLP_CE_WRITE, gpu(t, 0), gpu(t, 1), bytes, &e);
    int b = tlp_flow(n, TLP_CE_WRITE, gpu(t, 1), gpu(t, 0), bytes, &e);
    assert_true(a >= 0 && b >= 0);
    assert_int_equal(tlp_run(n, 0, &e), 0);
    NEAR_REL((double)tlp_end_ps(n, a) / 1e12, alone, 0.005);
    NEAR_REL((double)tlp_end_ps(n, b) / 1e12, alone, 0.005);
    tlp_free(n);
    topo_free(t);
}

static void test_mech_parse(void **state)
{
    (void)state;
    err e = {0};
    int off = 0;
    assert_int_equal(tlp_mech_parse("turn,tags", &off, &e), 0);
    assert_int_equal(off, TLP_NO_TURN | TLP_NO_TAGS);
    assert_int_equal(tlp_mech_parse("dllp", &off, &e), 0);
    assert_int_equal(off, TLP_NO_DLLP);
    assert_int_equal(tlp_mech_parse("hol", &off, &e), ERR_USAGE);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_split_cpl),          cmocka_unit_test(test_credit_bound_link),
        cmocka_unit_test(test_tag_bound_reader),   cmocka_unit_test(test_port_arbitration),
        cmocka_unit_test(test_posted_blocked_behind_stalled),
        cmocka_unit_test(test_turnaround),         cmocka_unit_test(test_window),
        cmocka_unit_test(test_window_steady),      cmocka_unit_test(test_rc_cpl_buffer),
        cmocka_unit_test(test_mech_parse),         cmocka_unit_test(test_flow_after),
        cmocka_unit_test(test_torch_issue),        cmocka_unit_test(test_even_draw),
        cmocka_unit_test(test_dllp_reverse),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
