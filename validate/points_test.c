/* Unit tests of the measured points: which rows become points, the routes
 * they mark, and their prediction through models/flows on a preset. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <math.h>
#include <stdio.h>
#include <string.h>
#include <cmocka.h>

#include "validate/points.h"
#include "tests/unit/meas_text.h"
#include "tests/unit/near.h"

static const char text[] =
    "# format: collsim-meas 1\n# kind: p2p\n"
    "case,pattern,op,flow,src,dst,bytes,time_us,bw_GBps\n"
    /* case 0: one timed flow -> one point (a copy engine's MPS-sized writes,
     * as the preset's link rates were measured) */
    "0,pair,copy-write,0,0,1,268435456,4768,56.3\n"
    /* case 1: two flows with totals only -> one aggregate point */
    "1,pair,copy-write,0,0,4,268435456,nan,nan\n"
    "1,pair,copy-write,1,1,5,268435456,nan,nan\n"
    "1,pair,copy-write,-1,*,*,536870912,9519,56.4\n"
    /* case 2: a latency probe */
    "2,latency,write,0,0,4,4,1.071,0.003735\n"
    /* case 3: a bidir pair at 64 KiB, left out by the filter below */
    "3,bidir,write,0,0,1,65536,3,21.85\n"
    "3,bidir,write,1,1,0,65536,3,21.85\n";

static void test_points(void **state)
{
    (void)state;
    topo *t;
    err e = {0};
    assert_int_equal(topo_load("rtxpro6000-8x-pcie5-1s", &t, &e), 0);
    meas_set *m = meas_text("p.csv", text);
    pts *p;
    assert_int_equal(pts_build(&m, 1, t, NULL, &p, &e), 0);
    /* 1 + 1 (aggregate) + 1 + 2 = 5 points. */
    assert_int_equal(pts_count(p), 5);
    assert_int_equal(pts_at(p, 1)->flow, -1);
    assert_true(pts_at(p, 1)->meas_us == 9519);
    assert_string_equal(pts_at(p, 1)->label, "pair copy-write (2 flows)");
    assert_string_equal(pts_at(p, 2)->label, "latency write 0>4");
    assert_int_equal(pts_at(p, 4)->flow, 1);
    assert_true(pts_has_op(p, MEAS_WRITE) && !pts_has_op(p, MEAS_READ));
    assert_false(pts_has_host(p));
    /* Flows 0->4 cross both switch uplinks: every link of the preset except
     * host memory's and the unused GPU links (2, 3, 6, 7) is on a route. */
    int used = 0;
    for (int i = 0; i < topo_nlinks(t); i++)
        used += pts_link_used(p, i);
    assert_int_equal(used, topo_nlinks(t) - 1 - 4);

    double pred[5];
    assert_int_equal(pts_predict(p, t, pred, &e), 0);
    /* Point 0: 256 MiB over the 56.3 GB/s GPU links (the uplinks are 56.4)
     * = 4768.1 us, plus about a microsecond of latency: within 0.1%. */
    double bulk = 268435456 / 56.3e3;
    assert_true(fabs(pred[0] - bulk) < 1e-3 * bulk);
    /* Point 1: flows 0->4 and 1->5 share switch 0's uplink (56.4 GB/s):
     * each gets 28.2 GB/s, the slowest ends after 2 x 256 MiB / 56.4 GB/s
     * = 9519.0 us (0.1%). */
    double agg = 2 * 268435456 / 56.4e3;
    assert_true(fabs(pred[1] - agg) < 1e-3 * agg);
    /* Point 2: one-way latency of the cross-switch route (the preset's hop
     * latencies summed) plus 4 bytes: equal to topo_route_lat_ps within 1 ns. */
    double lat = (double)topo_route_lat_ps(t, topo_gpu_node(t, 0), topo_gpu_node(t, 4)) * 1e-6;
    assert_true(fabs(pred[2] - lat) < 1e-3);
    pts_free(p);

    /* A filter keeps pattern pair only: cases 0 and 1 -> 2 points. */
    pts_filter f;
    assert_int_equal(pts_filter_parse("pair", NULL, &f, &e), 0);
    assert_int_equal(pts_build(&m, 1, t, &f, &p, &e), 0);
    assert_int_equal(pts_count(p), 2);
    pts_free(p);
    /* Sizes select bytes per flow: 64K keeps the bidir case (2 points),
     * 4:4 keeps the latency probe. */
    assert_int_equal(pts_filter_parse(NULL, "64K", &f, &e), 0);
    assert_int_equal(pts_build(&m, 1, t, &f, &p, &e), 0);
    assert_int_equal(pts_count(p), 2);
    pts_free(p);
    assert_int_equal(pts_filter_parse(NULL, "4:4", &f, &e), 0);
    assert_int_equal(pts_build(&m, 1, t, &f, &p, &e), 0);
    assert_int_equal(pts_count(p), 1);
    pts_free(p);
    assert_int_equal(pts_filter_parse(NULL, "8:4", &f, &e), ERR_USAGE);
    meas_free(m);
    topo_free(t);
}

static void test_errors(void **state)
{
    (void)state;
    topo *t;
    err e = {0};
    assert_int_equal(topo_load("h200-1x", &t, &e), 0);
    /* A GPU the topology does not have, and a case mixing sizes. */
    meas_set *m = meas_text("p.csv", "# format: collsim-meas 1\n# kind: p2p\n"
                           "case,pattern,op,flow,src,dst,bytes,time_us,bw_GBps\n"
                           "0,pair,write,0,0,1,1000,1,1\n");
    pts *p;
    assert_int_equal(pts_build(&m, 1, t, NULL, &p, &e), ERR_INPUT);
    assert_non_null(strstr(e.msg, "p.csv:4: GPU 1 is not in topology 'h200-1x'"));
    meas_free(m);
    m = meas_text("p.csv", "# format: collsim-meas 1\n# kind: host\n"
                 "case,pattern,op,flow,src,dst,bytes,time_us,bw_GBps\n"
                 "0,h2d-d2h,copy,0,host0,0,1000,1,1\n"
                 "0,h2d-d2h,copy,1,0,host0,2000,1,2\n");
    assert_int_equal(pts_build(&m, 1, t, NULL, &p, &e), ERR_INPUT);
    assert_non_null(strstr(e.msg, "p.csv:5: flows of case 0 differ in op or bytes"));
    meas_free(m);
    topo_free(t);
}

/* hwcheck's timed loops: per iteration one host thread issues every flow's
 * kernel or copy, so a row costs at least its case's issues; other sources
 * and the latency ping-pong do not. */
#define LOOP_ROWS                                                              \
    "case,pattern,op,flow,src,dst,bytes,time_us,bw_GBps\n"                    \
    "0,pair,copy,0,0,1,4096,2.05,2.0\n"                                       \
    "1,bidir,copy,0,0,1,4096,3.86,1.06\n"                                     \
    "1,bidir,copy,1,1,0,4096,3.93,1.04\n"                                     \
    "2,bidir,write,0,0,1,4096,7.14,0.57\n"                                    \
    "2,bidir,write,1,1,0,4096,7.27,0.56\n"                                    \
    "3,latency,write,0,0,1,4,0.6,0.0067\n"
static const char loops[] =
    "# format: collsim-meas 1\n# kind: p2p\n# command: hwcheck p2p -b 4K -e 4K\n" LOOP_ROWS;
static const char not_loops[] = "# format: collsim-meas 1\n# kind: p2p\n" LOOP_ROWS;

static void test_loop_floor(void **state)
{
    (void)state;
    topo *t;
    err e = {0};
    assert_int_equal(topo_load("h200-2x", &t, &e), 0);
    topo_params *tp = topo_params_mut(t);
    tp->copy_issue_ps = 10000000;   /* 10 us a copy, 20 us a launch: far above */
    tp->launch_ps = 20000000;       /* any 4 KiB transfer on NVLink */
    double pred[6];
    meas_set *m = meas_text("loops.csv", loops);
    pts *p;
    assert_int_equal(pts_build(&m, 1, t, NULL, &p, &e), 0);
    assert_int_equal(pts_count(p), 6);
    assert_int_equal(pts_predict(p, t, pred, &e), 0);
    /* Host-bound (pts_loop_iter_ps, 10 iterations): an iteration's issues
     * plus once per loop what follows the last issue (the last operation's
     * run, under 5 us here, or the end events' records, 0.947 us each), / 10:
     * pair copy: 1 issue = 10 us (+ at most 0.5); bidir copies: 2 = 20 us;
     * bidir kernels: 2 x (launch 20 + the loop's 0.122) = 40.244 us;
     * latency: no loop, the flag's one-way latency (well under 10 us). */
    assert_true(pred[0] > 10.0 && pred[0] < 10.5);
    assert_true(pred[1] > 20.0 && pred[1] < 20.5);
    assert_true(pred[2] > 20.0 && pred[2] < 20.5);
    assert_true(pred[3] > 40.244 && pred[3] < 40.744);
    assert_true(pred[4] > 40.244 && pred[4] < 40.744);
    assert_true(pred[5] < 5.0);
    pts_free(p);
    meas_free(m);
    /* The same rows from another source (no hwcheck command line): the
     * transfers alone, every one under 10 us. */
    m = meas_text("other.csv", not_loops);
    assert_int_equal(pts_build(&m, 1, t, NULL, &p, &e), 0);
    assert_int_equal(pts_predict(p, t, pred, &e), 0);
    for (int i = 0; i < 6; i++)
        assert_true(pred[i] < 10.0);
    pts_free(p);
    meas_free(m);
    topo_free(t);
}

static void test_loop_timeline(void **state)
{
    (void)state;
    /* hwcheck's loop (pts_loop_iter_ps), by hand, with launch 3 us, the
     * loop's extra 0.5 (a kernel's issue I = 3.5), a copy's issue 2,
     * event records r = 1 us, n = 10 iterations:
     * - one kernel flow, t = 2 (host-bound): S = r = 1, F = S + I = 4.5,
     *   L = max(4.5 + 10 x 2, 4.5 + 9 x 3.5 + 2) = 38, E = max(1 + 35 + 1,
     *   38) = 38, per iteration (38 - 1) / 10 = 3.7 (= I + t / n);
     * - the same with t = 10 (device-bound): L = max(4.5 + 100, 46) = 104.5,
     *   E = 104.5, (104.5 - 1) / 10 = 10.35 (= t + F / n - r / n);
     * - two kernel flows, t = 2: P = 7, S = 2; flow 1: F = 2 + 7 = 9,
     *   L = max(29, 9 + 63 + 2) = 74, E = max(2 + 70 + 2, 74) = 74, (74 - 2)
     *   / 10 = 7.2; flow 0: F = 5.5, L = max(25.5, 70.5) = 70.5, E = max(2 +
     *   70 + 1, 70.5) = 73 (its end event waits for flow 1's issues and its
     *   own record), (73 - 1) / 10 = 7.2;
     * - one copy flow, t = 1: I = 2, F = 3, L = max(13, 3 + 18 + 1) = 22,
     *   E = max(1 + 20 + 1, 22) = 22, (22 - 1) / 10 = 2.1.
     * The old floor, max(t, issues), gives 3.5, 10, 7 and 2. */
    topo_params tp;
    memset(&tp, 0, sizeof tp);
    tp.launch_ps = 3000000;
    tp.loop_issue_ps = 500000;
    tp.copy_issue_ps = 2000000;
    tp.event_record_ps = 1000000;
    NEAR(pts_loop_iter_ps(&tp, 1, 1, 0, 10, 2000000) * 1e-6, 3.7, 1e-9);
    NEAR(pts_loop_iter_ps(&tp, 1, 1, 0, 10, 10000000) * 1e-6, 10.35, 1e-9);
    NEAR(pts_loop_iter_ps(&tp, 1, 2, 1, 10, 2000000) * 1e-6, 7.2, 1e-9);
    NEAR(pts_loop_iter_ps(&tp, 1, 2, 0, 10, 2000000) * 1e-6, 7.2, 1e-9);
    NEAR(pts_loop_iter_ps(&tp, 0, 1, 0, 10, 1000000) * 1e-6, 2.1, 1e-9);
}

/* Launch rows of hwcheck launch --nccl-only: NCCL's rows become points less
 * the file's launch-host (3.0 us), so nccl-call-host 4.0 measures 1.0 and
 * nccl-p2p-1/2-host 5.5 and 6.0 measure 2.5 and 3.0 with 2 and 4 calls;
 * nccl-graph-node stays as it is; launch-host and nccl-graph-launch have no
 * parameter. Predicted with nccl_host 0.985, nccl_group 2.5 and nccl_p2p_op
 * 0.25 us: 0.985, 2.5 + 2 x 0.25 = 3.0, 2.5 + 4 x 0.25 = 3.5; the graph row
 * with nccl_graph_call 0 falls back to graph_node_us (0.5). A group over two
 * communicators (nccl-2comm-p2p-1-host 11.5) is taken less two launch-hosts,
 * 5.5, and predicted as each communicator's group in turn: 2 x 3.0 = 6.0.
 * A file without
 * launch-host gives no NCCL host points, and a full `hwcheck launch` file
 * (no --nccl-only) no NCCL points at all. */
static void test_launch_rows(void **state)
{
    (void)state;
    topo *t;
    err e = {0};
    assert_int_equal(topo_load("h200-1x", &t, &e), 0);
    topo_params *tp = topo_params_mut(t);
    tp->graph_node_ps = 500000;
    tp->nccl_host_ps = 985000;
    tp->nccl_group_ps = 2500000;
    tp->nccl_p2p_op_ps = 250000;
#define NCCL_ROWS                                                                  \
    "what,count,time_us\nlaunch-host,10,3.0\nnccl-call-host,10,4.0\n"               \
    "nccl-p2p-1-host,10,5.5\nnccl-p2p-2-host,10,6.0\nnccl-graph-launch,10,1.7\n"    \
    "nccl-graph-node,10,0.8\nnccl-2comm-p2p-1-host,10,11.5\n"
    meas_set *m = meas_text("l.csv", "# format: collsim-meas 1\n# kind: launch\n"
                                     "# command: hwcheck launch --nccl-only -o l.csv\n" NCCL_ROWS);
    pts *p;
    assert_int_equal(pts_build(&m, 1, t, NULL, &p, &e), 0);
    assert_int_equal(pts_count(p), 5);
    static const double meas[5] = {1.0, 2.5, 3.0, 0.8, 5.5},
                        pred[5] = {0.985, 3.0, 3.5, 0.5, 6.0};
    static const int ops[5] = {0, 2, 4, 0, 2}, comms[5] = {1, 1, 1, 1, 2};
    double got[5];
    assert_int_equal(pts_predict(p, t, got, &e), 0);
    for (size_t i = 0; i < 5; i++) {
        assert_true(fabs(pts_at(p, i)->meas_us - meas[i]) < 1e-9);
        assert_int_equal(pts_at(p, i)->ops, ops[i]);
        assert_int_equal(pts_at(p, i)->comms, comms[i]);
        assert_true(fabs(got[i] - pred[i]) < 1e-9);
    }
    assert_string_equal(pts_at(p, 4)->label, "nccl-2comm-p2p-1-host - 2 x launch-host");
    assert_string_equal(pts_at(p, 1)->label, "nccl-p2p-1-host - launch-host");
    assert_true(pts_has_launch(p, "nccl-call-host") && pts_has_launch(p, "nccl-p2p"));
    assert_true(pts_group_ops_vary(p) && pts_has_launch(p, "nccl-graph-node"));
    pts_free(p);
    meas_free(m);
    m = meas_text("l.csv", "# format: collsim-meas 1\n# kind: launch\n"
                           "# command: hwcheck launch --nccl-only\n"
                           "what,count,time_us\nnccl-call-host,10,4.0\nnccl-p2p-1-host,10,5.5\n");
    assert_int_equal(pts_build(&m, 1, t, NULL, &p, &e), 0);
    assert_int_equal(pts_count(p), 0);
    assert_false(pts_group_ops_vary(p));
    pts_free(p);
    meas_free(m);
    m = meas_text("l.csv", "# format: collsim-meas 1\n# kind: launch\n"
                           "# command: hwcheck launch -n 2000\n" NCCL_ROWS);
    assert_int_equal(pts_build(&m, 1, t, NULL, &p, &e), 0);
    assert_int_equal(pts_count(p), 0);
    pts_free(p);
    meas_free(m);
    /* `hwcheck all`'s nccl-host.csv: its command is the suite's, its part the
     * --nccl-only run's, so the same 5 points as the first file; the suite's
     * launch.csv (part: a plain launch) gives none. */
    m = meas_text("l.csv", "# format: collsim-meas 1\n# kind: launch\n# command: hwcheck all -o m\n"
                           "# part: hwcheck launch --nccl-only -n 2000 -w 200\n" NCCL_ROWS);
    assert_int_equal(pts_build(&m, 1, t, NULL, &p, &e), 0);
    assert_int_equal(pts_count(p), 5);
    pts_free(p);
    meas_free(m);
    m = meas_text("l.csv", "# format: collsim-meas 1\n# kind: launch\n# command: hwcheck all -o m\n"
                           "# part: hwcheck launch -n 1000 -w 100\n" NCCL_ROWS);
    assert_int_equal(pts_build(&m, 1, t, NULL, &p, &e), 0);
    assert_int_equal(pts_count(p), 0);
    pts_free(p);
    meas_free(m);
    topo_free(t);
}

/* hwcheck launch --post --peer rows (GPU 0's block against GPU 1's memory)
 * become two points of row differences:
 *   fence-ack = (post-peer-4096-fence 1.100 - post-peer-4096 0.200)
 *             - (post-dev-4096-fence 0.648 - post-dev-4096 0.136)
 *             = 0.900 - 0.512 = 0.388 us,
 *   peer-load = recv-peer-16384-tail 2.400 - recv-peer-16384 1.300 = 1.100 us.
 * On h200-2x (GPU - nvs0 - GPU, 678.6 ns a hop, no completer turnaround)
 * fence-ack is predicted as the route's write latency, 2 x 0.6786 = 1.3572
 * us, while fence_ack_us is 0, and as 0.4 once it is 0.4; peer-load as the
 * read's round trip, 4 x 0.6786 = 2.7144 us. Without its post-dev rows no
 * fence-ack point; on one GPU the peer points fail naming the row's line. */
static void test_peer_rows(void **state)
{
    (void)state;
    topo *t;
    err e = {0};
    assert_int_equal(topo_load("h200-2x", &t, &e), 0);
#define PEER_ROWS                                                                  \
    "what,count,time_us\npost-peer-4096,100,0.200\npost-peer-4096-fence,100,1.100\n" \
    "recv-peer-16384,100,1.300\nrecv-peer-16384-tail,100,2.400\n"
    meas_set *m = meas_text("p.csv", "# format: collsim-meas 1\n# kind: launch\n" PEER_ROWS
                                     "post-dev-4096,100,0.136\npost-dev-4096-fence,100,0.648\n");
    pts *p;
    assert_int_equal(pts_build(&m, 1, t, NULL, &p, &e), 0);
    assert_int_equal(pts_count(p), 2);
    assert_true(pts_has_launch(p, "fence-ack"));
    assert_int_equal(pts_at(p, 0)->flow, PTS_FENCE_ACK);
    assert_int_equal(pts_at(p, 1)->flow, PTS_PEER_LOAD);
    NEAR(pts_at(p, 0)->meas_us, 0.388, 1e-9);
    NEAR(pts_at(p, 1)->meas_us, 1.100, 1e-9);
    assert_int_equal(pts_at(p, 0)->line, 5); /* the post-peer-4096-fence row */
    double got[2];
    assert_int_equal(pts_predict(p, t, got, &e), 0);
    NEAR(got[0], 1.3572, 1e-4);
    NEAR(got[1], 2.7144, 1e-4);
    topo_params_mut(t)->fence_ack_ps = 400000;
    assert_int_equal(pts_predict(p, t, got, &e), 0);
    NEAR(got[0], 0.4, 1e-9);
    NEAR(got[1], 2.7144, 1e-4);
    pts_free(p);
    meas_free(m);
    m = meas_text("p.csv", "# format: collsim-meas 1\n# kind: launch\n" PEER_ROWS);
    assert_int_equal(pts_build(&m, 1, t, NULL, &p, &e), 0);
    assert_int_equal(pts_count(p), 1);
    assert_false(pts_has_launch(p, "fence-ack"));
    topo *one;
    assert_int_equal(topo_load("h200-1x", &one, &e), 0);
    assert_int_equal(pts_predict(p, one, got, &e), ERR_INPUT);
    /* the peer-load point's row: recv-peer-16384-tail, line 7 */
    assert_non_null(strstr(e.msg, "p.csv:7: a peer row needs two GPUs"));
    pts_free(p);
    meas_free(m);
    topo_free(one);
    topo_free(t);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_points),
        cmocka_unit_test(test_errors),
        cmocka_unit_test(test_loop_floor),
        cmocka_unit_test(test_loop_timeline),
        cmocka_unit_test(test_launch_rows),
        cmocka_unit_test(test_peer_rows),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
