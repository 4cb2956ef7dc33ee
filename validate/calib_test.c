/* Unit tests of the calibration profile: parse, write, round trip, errors,
 * and the mapping onto topo_params. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>

#include "models/coll/coll.h"
#include "models/topo/topo.h"
#include "validate/calib.h"

static int parse_str(const char *text, calib **c, err *e)
{
    FILE *f = fmemopen((void *)text, strlen(text), "r");
    assert_non_null(f);
    int rc = calib_parse(f, "c.calib", c, e);
    fclose(f);
    return rc;
}

static const char good[] =
    "collsim-calib 1\n"
    "# fitted from p2p.csv\n"
    "link.pcie.gpu-switch.bw_GBps   53.9 +- 0.2   # GPU to its switch\n"
    "link.pcie.gpu-switch.lat_ns    110\n"
    "launch_us                      4.5 +- 0.1\n"
    "read_tags                      256\n"
    "arb_collapse_GBps              2.7\n";

static void test_parse_apply(void **state)
{
    (void)state;
    calib *c;
    err e = {0};
    assert_int_equal(parse_str(good, &c, &e), 0);
    assert_int_equal(calib_count(c), 5);
    const calib_entry *x = calib_at(c, 0);
    assert_string_equal(x->key, "link.pcie.gpu-switch.bw_GBps");
    assert_true(x->value == 53.9 && x->sd == 0.2 && x->line == 3);
    assert_true(isnan(calib_at(c, 1)->sd));
    double v;
    assert_int_equal(calib_get(c, "read_tags", &v), 0);
    assert_true(v == 256);
    assert_int_equal(calib_get(c, "graph_node_us", &v), -1);
    /* Units convert: 4.5 us = 4,500,000 ps; 2.7 GB/s = 2.7e9 B/s; fields
     * the profile does not name keep their values. */
    topo_params p = {.pcie_mps_bytes = 256, .graph_node_ps = 7};
    calib_apply_params(c, &p);
    assert_true(p.launch_ps == 4500000);
    assert_true(p.arb_collapse_Bps == 2.7e9);
    assert_int_equal(p.read_tags, 256);
    assert_int_equal(p.pcie_mps_bytes, 256);
    assert_true(p.graph_node_ps == 7);
    calib_free(c);
}

static void test_round_trip(void **state)
{
    (void)state;
    calib *c = calib_new(), *d;
    err e = {0};
    assert_int_equal(calib_set(c, "hostmem_GBps", 123.456789, NAN, &e), 0);
    assert_int_equal(calib_set(c, "link.socket.cpu-cpu.lat_ns", 250, 12, &e), 0);
    assert_int_equal(calib_set(c, "hostmem_GBps", 100, 1.5, &e), 0);  /* replaces */
    assert_int_equal(calib_comment(c, "fitted by a test", &e), 0);
    assert_int_equal(calib_set(c, "frobs_per_s", 1, NAN, &e), ERR_USAGE);
    assert_int_equal(calib_set(c, "launch_us", -1, NAN, &e), ERR_USAGE);
    char *buf = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&buf, &len);
    assert_int_equal(calib_write(c, f, &e), 0);
    fclose(f);
    /* The file starts with the header, then the comment. */
    assert_int_equal(strncmp(buf, "collsim-calib 1\n# fitted by a test\n", 35), 0);
    assert_int_equal(parse_str(buf, &d, &e), 0);
    assert_int_equal(calib_count(d), 2);
    double v;
    assert_int_equal(calib_get(d, "hostmem_GBps", &v), 0);
    assert_true(v == 100 && calib_at(d, 0)->sd == 1.5);
    assert_int_equal(calib_get(d, "link.socket.cpu-cpu.lat_ns", &v), 0);
    assert_true(v == 250);
    calib_free(c);
    calib_free(d);
    free(buf);
}

static void expect_error(const char *text, const char *what)
{
    calib *c = NULL;
    err e = {0};
    assert_int_equal(parse_str(text, &c, &e), ERR_INPUT);
    assert_null(c);
    if (!strstr(e.msg, what))
        print_error("message '%s' lacks '%s'\n", e.msg, what);
    assert_non_null(strstr(e.msg, what));
}

static void test_errors(void **state)
{
    (void)state;
    expect_error("collsim-calib 2\n", "c.calib:1: expected 'collsim-calib 1'");
    expect_error("", "c.calib: empty");
    expect_error("collsim-calib 1\nlaunch_ms 3\n", "c.calib:2: unknown key 'launch_ms'");
    /* Link classes spell node kinds in enum order: gpu-switch, not switch-gpu. */
    expect_error("collsim-calib 1\nlink.pcie.switch-gpu.bw_GBps 3\n", "c.calib:2: unknown key");
    expect_error("collsim-calib 1\nlink.warp.gpu-gpu.bw_GBps 3\n", "unknown key");
    expect_error("collsim-calib 1\nlink.pcie.gpu-switch.bw_Gbps 3\n", "unknown key");
    expect_error("collsim-calib 1\nlaunch_us abc\n", "c.calib:2: bad number 'abc'");
    expect_error("collsim-calib 1\nlaunch_us 1 2\n", "c.calib:2: expected 'KEY VALUE'");
    expect_error("collsim-calib 1\nlaunch_us 1 += 2\n", "+- SD");
    expect_error("collsim-calib 1\nread_tags 0\n", "c.calib:2: read_tags = 0 is outside");
    expect_error("collsim-calib 1\nlaunch_us 1\n\nlaunch_us 2\n",
                 "c.calib:4: launch_us given twice (first on line 2)");
}

static void test_link_class(void **state)
{
    (void)state;
    char buf[48];
    /* Endpoint kinds are ordered, so both directions name one class. */
    assert_string_equal(calib_link_class(LINK_PCIE, TOPO_SWITCH, TOPO_GPU, buf),
                        "pcie.gpu-switch");
    assert_string_equal(calib_link_class(LINK_SOCKET, TOPO_CPU, TOPO_CPU, buf),
                        "socket.cpu-cpu");
    assert_true(calib_key_valid("link.fabric.switch-switch.bw_GBps"));
    assert_true(calib_key_valid("link.nvlink.gpu-nvswitch.lat_ns"));
    assert_false(calib_key_valid("link.nvlink.gpu-nvswitch"));
    assert_true(calib_key_valid("graph_node_us"));
}

static void test_apply_topology(void **state)
{
    (void)state;
    topo *t, *u;
    err e = {0};
    assert_int_equal(topo_load("rtxpro6000-8x-pcie5-2s", &t, &e), 0);
    calib *c;
    const char text[] = "collsim-calib 1\n"
                        "link.pcie.gpu-switch.bw_GBps 50\n"
                        "link.pcie.gpu-switch.lat_ns 300\n"
                        "launch_us 3\n";
    assert_int_equal(parse_str(text, &c, &e), 0);
    assert_int_equal(calib_apply(c, t, &u, &e), 0);
    assert_int_equal(topo_ngpus(u), topo_ngpus(t));
    assert_int_equal(topo_nlinks(u), topo_nlinks(t));
    /* Every GPU-switch link now has 50 GB/s and 300 ns; other links keep
     * their bandwidth and latency. */
    int changed = 0;
    for (int i = 0; i < topo_nlinks(u); i++) {
        const topo_link *a = topo_link_at(t, i), *b = topo_link_at(u, i);
        char cls[48];
        calib_link_class(b->kind, topo_node_at(u, b->a)->kind, topo_node_at(u, b->b)->kind, cls);
        if (!strcmp(cls, "pcie.gpu-switch")) {
            assert_true(b->bw_Bps == 50e9 && b->lat_ps == 300000);
            changed++;
        } else {
            assert_true(b->bw_Bps == a->bw_Bps && b->lat_ps == a->lat_ps);
        }
    }
    assert_int_equal(changed, 8);
    /* GPU0 -> GPU1 (same virtual switch) crosses two GPU-switch hops:
     * 2 x 300 ns = 600 ns. */
    assert_true(topo_route_lat_ps(u, topo_gpu_node(u, 0), topo_gpu_node(u, 1)) == 600000);
    assert_true(topo_params_get(u)->launch_ps == 3000000);
    assert_true(topo_params_get(u)->read_tags == topo_params_get(t)->read_tags);
    topo_free(u);
    calib_free(c);
    /* A class the topology does not have is an error at its line. */
    assert_int_equal(parse_str("collsim-calib 1\n\nlink.nvlink.gpu-nvswitch.bw_GBps 400\n",
                               &c, &e), 0);
    assert_int_equal(calib_apply(c, t, &u, &e), ERR_INPUT);
    assert_non_null(strstr(e.msg, "c.calib:3:"));
    assert_non_null(strstr(e.msg, "nvlink.gpu-nvswitch"));
    calib_free(c);
    topo_free(t);
}

/* Ring LL allreduce of 8 B on h200-2x's two GPUs, one channel: time in ps. */
static long long ring_ll_8b_ps(const char *profile)
{
    topo *t, *u;
    err e = {0};
    assert_int_equal(topo_load("h200-2x", &t, &e), 0);
    calib *c;
    assert_int_equal(parse_str(profile, &c, &e), 0);
    assert_int_equal(calib_apply(c, t, &u, &e), 0);
    coll_ctx *cc = coll_ctx_new(u);
    assert_non_null(cc);
    coll_req q;
    coll_req_init(&q, u);
    q.bytes = 8;
    q.algo = ALGO_RING;
    q.proto = PROTO_LL;
    coll_result res;
    assert_int_equal(coll_predict(cc, &q, &res, &e), 0);
    assert_int_equal(res.channels, 1);
    coll_ctx_free(cc);
    calib_free(c);
    topo_free(u);
    topo_free(t);
    return (long long)res.time_ps;
}

static void test_nccl_keys_reach_the_model(void **state)
{
    (void)state;
    /* A ring allreduce on 2 ranks starts with one kernel start per rank in
     * series with everything else (8 B is one LL unit). So nccl_start_ll_us
     * from h200-2x's fitted 4.253 to 10 adds exactly 5.747 us. Then 2(n-1) = 2 sends and the last
     * receive, each a step; an LL send follows the rank's previous one or
     * the upstream step's first line (1.357 us after it started), whichever
     * is later: with steps of 2 us and more, the former, so all three are in
     * series and nccl_step_ll_us 2 -> 3 adds 3 x 1.0 = 3.0 us (integer
     * picoseconds: exact). */
    long long base = ring_ll_8b_ps("collsim-calib 1\n");
    assert_int_equal(ring_ll_8b_ps("collsim-calib 1\nnccl_start_ll_us 10\n") - base, 5747000);
    assert_int_equal(ring_ll_8b_ps("collsim-calib 1\nnccl_step_ll_us 3\n") -
                         ring_ll_8b_ps("collsim-calib 1\nnccl_step_ll_us 2\n"),
                     3000000);
    /* The Simple keys do not touch an LL run. */
    assert_int_equal(ring_ll_8b_ps("collsim-calib 1\nnccl_start_simple_us 20\n"
                                   "nccl_step_simple_us 5\n") - base, 0);
    /* The host cost of a call: the key when set, else the plain kernel's. */
    calib *c;
    err e = {0};
    assert_int_equal(parse_str("collsim-calib 1\nnccl_call_us 12.5\n", &c, &e), 0);
    topo_params p = {.launch_ps = 4000000, .graph_node_ps = 1500000};
    assert_int_equal(topo_nccl_issue_ps(&p, 0, 2, 0), 4000000);
    assert_int_equal(topo_nccl_issue_ps(&p, 1, 2, 0), 1500000);
    calib_apply_params(c, &p);
    assert_int_equal(topo_nccl_issue_ps(&p, 0, 2, 0), 12500000);
    assert_int_equal(topo_nccl_issue_ps(&p, 1, 2, 0), 1500000);
    calib_free(c);
    /* NCCL's own work (docs/model.md "NCCL's host cost per call"), launch 5.1
     * us, nccl_host 0.985, nccl_group 2.515, nccl_p2p_op 0.261: a one-rank
     * collective 5.1 + 0.985 = 6.085; a one-rank all-to-all (2 calls) 5.1 +
     * 2.515 + 2 x 0.261 = 8.137; on 8 ranks (16 calls) 5.1 + 2.515 + 4.176 =
     * 11.791; a collective on 2 ranks takes the group path with its one call
     * (taskAppend, costed as a send's): 5.1 + 2.515 + 0.261 = 7.876. With
     * nccl_call_us 12.76 set (fitted on 2-rank runs) collectives cost that;
     * a group keeps its own; in a graph nccl_graph_call_us 0.817. */
    assert_int_equal(parse_str("collsim-calib 1\nnccl_host_us 0.985\nnccl_group_us 2.515\n"
                               "nccl_p2p_op_us 0.261\nnccl_graph_call_us 0.817\n", &c, &e), 0);
    topo_params q = {.launch_ps = 5100000, .graph_node_ps = 499000};
    calib_apply_params(c, &q);
    calib_free(c);
    assert_int_equal(topo_nccl_issue_ps(&q, 0, 1, 0), 6085000);
    assert_int_equal(topo_nccl_issue_ps(&q, 0, 1, 2), 8137000);
    assert_int_equal(topo_nccl_issue_ps(&q, 0, 8, 16), 11791000);
    assert_int_equal(topo_nccl_issue_ps(&q, 0, 2, 0), 7876000);
    assert_int_equal(topo_nccl_issue_ps(&q, 1, 8, 16), 817000);
    /* One thread driving g of the ranks (nccl-tests -g g) issues g calls
     * per iteration in one group, each with its plan and launch: a
     * collective on 8 ranks from one thread 8 x 7.876 = 63.008 us, from 2
     * threads of 4 GPUs 4 x 7.876 = 31.504; an 8-rank all-to-all 8 x 11.791 =
     * 94.328; g is at most the ranks (2 ranks: 2 x 7.876); one rank, g 1 or a
     * graph: one call's. */
    assert_int_equal(topo_nccl_thread_issue_ps(&q, 0, 8, 0, 8), 63008000);
    assert_int_equal(topo_nccl_thread_issue_ps(&q, 0, 8, 0, 4), 31504000);
    assert_int_equal(topo_nccl_thread_issue_ps(&q, 0, 8, 16, 8), 94328000);
    assert_int_equal(topo_nccl_thread_issue_ps(&q, 0, 2, 0, 8), 15752000);
    assert_int_equal(topo_nccl_thread_issue_ps(&q, 0, 1, 0, 8), 6085000);
    assert_int_equal(topo_nccl_thread_issue_ps(&q, 0, 8, 0, 1), 7876000);
    assert_int_equal(topo_nccl_thread_issue_ps(&q, 1, 8, 16, 8), 817000);
    q.nccl_call_ps = 12760000;
    assert_int_equal(topo_nccl_issue_ps(&q, 0, 1, 0), 12760000);
    assert_int_equal(topo_nccl_issue_ps(&q, 0, 8, 16), 11791000);
    /* nccl_call_us was fitted per iteration of its own layout: kept. */
    assert_int_equal(topo_nccl_thread_issue_ps(&q, 0, 2, 0, 2), 12760000);
    assert_int_equal(topo_nccl_probe_issue_ps(&q, 0, 2, 0, 2, 7190000), 12760000);
    /* A file's host probe (its process's one-rank group of one send and one
     * receive, 7.19 us) stands for launch + group + 2 calls on each rank the
     * thread drives: a 2-rank collective (one call) 2 x (7.19 - 0.261) =
     * 13.858, a 2-rank all-to-all (4 calls a rank) 2 x (7.19 + 2 x 0.261) =
     * 15.424; without a probe the thread's issue (2 x 7.876); one rank keeps
     * NCCL's one-rank path, a graph its node. */
    q.nccl_call_ps = 0;
    assert_int_equal(topo_nccl_probe_issue_ps(&q, 0, 2, 0, 2, 7190000), 13858000);
    assert_int_equal(topo_nccl_probe_issue_ps(&q, 0, 2, 4, 2, 7190000), 15424000);
    assert_int_equal(topo_nccl_probe_issue_ps(&q, 0, 2, 0, 2, 0), 15752000);
    assert_int_equal(topo_nccl_probe_issue_ps(&q, 0, 1, 0, 1, 7190000), 6085000);
    assert_int_equal(topo_nccl_probe_issue_ps(&q, 1, 2, 0, 2, 7190000), 817000);
}

static void test_nccl_channel_issue(void **state)
{
    (void)state;
    /* A plan's host work per channel beyond the first (docs/model.md "Per
     * channel": nccl_chan_us 0.0143, one H200's one-pair groups over 2-64
     * channels), once per rank the thread drives. The calibration key reaches
     * the topology: */
    calib *c;
    err e = {0};
    assert_int_equal(parse_str("collsim-calib 1\nnccl_chan_us 0.0143\n", &c, &e), 0);
    topo_params q = {.launch_ps = 3160000, .nccl_group_ps = 2515000,
                     .nccl_p2p_op_ps = 261000};
    calib_apply_params(c, &q);
    calib_free(c);
    assert_int_equal(q.nccl_chan_ps, 14300);
    /* A 2-rank allreduce on 24 channels from one thread: 2 x 23 x 0.0143 =
     * 0.6578 us on top of 2 x (3.16 + 2.515 + 0.261) = 11.872, 12.5298 in
     * all; on 1 channel nothing; 22 channels 2 x 21 x 0.0143 = 0.6006. */
    assert_int_equal(topo_nccl_chan_issue_ps(&q, 0, 2, 0, 24, 2), 657800);
    assert_int_equal(topo_nccl_thread_issue_ps(&q, 0, 2, 0, 2) +
                         topo_nccl_chan_issue_ps(&q, 0, 2, 0, 24, 2),
                     12529800);
    assert_int_equal(topo_nccl_chan_issue_ps(&q, 0, 2, 0, 1, 2), 0);
    assert_int_equal(topo_nccl_chan_issue_ps(&q, 0, 2, 0, 22, 2), 600600);
    /* One thread per rank (g 1): 23 x 0.0143 = 0.3289; 8 ranks from one
     * thread, 4 channels: 8 x 3 x 0.0143 = 0.3432. */
    assert_int_equal(topo_nccl_chan_issue_ps(&q, 0, 2, 0, 24, 1), 328900);
    assert_int_equal(topo_nccl_chan_issue_ps(&q, 0, 8, 0, 4, 8), 343200);
    /* None in a graph, on one rank (no plan), for a group of sends and
     * receives, or under a fitted per-call nccl_call_us. */
    assert_int_equal(topo_nccl_chan_issue_ps(&q, 1, 2, 0, 24, 2), 0);
    assert_int_equal(topo_nccl_chan_issue_ps(&q, 0, 1, 0, 24, 1), 0);
    assert_int_equal(topo_nccl_chan_issue_ps(&q, 0, 2, 4, 24, 2), 0);
    q.nccl_call_ps = 12760000;
    assert_int_equal(topo_nccl_chan_issue_ps(&q, 0, 2, 0, 24, 2), 0);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_parse_apply),
        cmocka_unit_test(test_round_trip),
        cmocka_unit_test(test_errors),
        cmocka_unit_test(test_link_class),
        cmocka_unit_test(test_apply_topology),
        cmocka_unit_test(test_nccl_keys_reach_the_model),
        cmocka_unit_test(test_nccl_channel_issue),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
