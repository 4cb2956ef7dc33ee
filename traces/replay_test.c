/* Replay against hand-derived expectations on small traces: without
 * contention the cycle is the sum of compute, launch and collective times;
 * with two streams it is the critical path. Collective times are forced
 * (coll_us) or taken from measured_us so the tests do not depend on the
 * collective model; launch costs are set through the options. */
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <cmocka.h>

#include "models/topo/topo.h"
#include "traces/replay.h"

static void feed(replay *r, const trace_op *ops, int n)
{
    err e = {0};
    for (int i = 0; i < n; i++)
        if (replay_op(r, &ops[i], &e) != 0)
            fail_msg("op %d: %s", i, e.msg);
}

/* Replay ops on topology t (NULL: none) with options o and return the
 * result; a failing op or finish fails the test. */
static replay_result run_on(const topo *t, const replay_opts *o, const trace_op *ops, int n)
{
    replay *r = replay_new(t, NULL, o);
    assert_non_null(r);
    feed(r, ops, n);
    replay_result res;
    err e = {0};
    if (replay_finish(r, &res, &e) != 0)
        fail_msg("finish: %s", e.msg);
    replay_free(r);
    return res;
}

static replay_result run(const replay_opts *o, const trace_op *ops, int n)
{
    return run_on(NULL, o, ops, n);
}

static trace_op mk(trace_op_kind k, int stream, double dur)
{
    trace_op op;
    trace_op_init(&op, k);
    op.stream = stream;
    op.dur_us = dur;
    return op;
}

#define NEAR(a, b) assert_true(fabs((a) - (b)) < 1e-6)

static void test_serial_sum(void **state)
{
    (void)state;
    replay_opts o;
    replay_opts_init(&o);
    o.coll_us = 5;        /* every allreduce: 5 us */
    o.launch_us = 1;      /* eager: 1 us per kernel */
    trace_op ops[5] = {mk(OP_CYCLE, 0, 0), mk(OP_COMPUTE, 0, 10), mk(OP_COLL, 0, 0),
                       mk(OP_COMPUTE, 0, 3), mk(OP_COLL, 0, 0)};
    ops[0].tokens = 1;
    ops[2].bytes = ops[4].bytes = 14336;
    replay_result res = run(&o, ops, 5);
    /* Eager launches run ahead of the GPU: the host issues kernel k at
     * k x 1 us. The first op waits for its launch (1 us exposed), then the
     * GPU is busy: compute 10 + 5 + 3 + 5 while the host finished issuing
     * at 4 us. Cycle = 1 + 10 + 3 + 2 x 5 = 24 us; 1 token per 24 us =
     * 41,666.67 tok/s (tolerance 1e-6 relative). */
    NEAR(res.cycle_us, 24);
    NEAR(res.compute_us, 13);
    NEAR(res.comm_us, 10);
    NEAR(res.launch_us, 1);
    NEAR(res.idle_us, 0);
    assert_true(fabs(res.tok_per_s - 1e6 / 24) < 1e-6 * 1e6 / 24);
    assert_int_equal(res.colls, 2);
}

static void test_launch_bound(void **state)
{
    (void)state;
    replay_opts o;
    replay_opts_init(&o);
    o.launch_us = 1;      /* eager: 1 us per kernel */
    trace_op ops[5] = {mk(OP_CYCLE, 0, 0), mk(OP_COMPUTE, 0, 0.5), mk(OP_COMPUTE, 0, 0.5),
                       mk(OP_COMPUTE, 0, 0.5), mk(OP_COMPUTE, 0, 0.5)};
    ops[0].tokens = 1;
    replay_result res = run(&o, ops, 5);
    /* Kernels of 0.5 us launched 1 us apart: the GPU waits for each launch.
     * Kernel k (1..4) starts at k us and ends at k + 0.5: cycle 4.5 us. The
     * critical path runs through the CPU's four launches (4 us) and then
     * the last kernel (0.5 us): the earlier kernels ran under the launches. */
    NEAR(res.cycle_us, 4.5);
    NEAR(res.compute_us, 0.5);
    NEAR(res.launch_us, 4);
}

static void test_kernel_turnaround(void **state)
{
    (void)state;
    replay_opts o;
    replay_opts_init(&o);
    o.launch_us = 1;        /* the launch call */
    o.graph_node_us = 0.5;  /* the GPU's turnaround per kernel */
    o.coll_us = 4;
    trace_op ops[4] = {mk(OP_CYCLE, 0, 0), mk(OP_COMPUTE, 0, 10), mk(OP_COMPUTE, 0, 3),
                       mk(OP_COLL, 0, 0)};
    ops[0].tokens = 1;
    ops[1].kernels = 2;
    ops[3].bytes = 14336;
    replay_result res = run(&o, ops, 4);
    /* Eager, device-bound: the CPU issues at 1, 2 (the op's second kernel),
     * 3 and 4 us. The first kernel waits for its launch (stream 0 + 0.5 <
     * 1): 1..6; the second starts a turnaround after it, 6.5..11.5; the
     * 3 us kernel 12..15, the allreduce 15.5..19.5. Cycle 19.5 = compute
     * 13 + comm 4 + launch 1 + 3 x 0.5 (18 without the turnarounds). */
    NEAR(res.cycle_us, 19.5);
    NEAR(res.compute_us, 13);
    NEAR(res.comm_us, 4);
    NEAR(res.launch_us, 2.5);
    /* Host-bound: kernels of 0.2 us issued 1 us apart; kernel k's stream is
     * free at k - 1 + 0.2 + 0.5 < k, so no turnaround shows: the last
     * starts at 4 and the cycle is 4.2, as without it. */
    trace_op short_ops[5] = {mk(OP_CYCLE, 0, 0), mk(OP_COMPUTE, 0, 0.2), mk(OP_COMPUTE, 0, 0.2),
                             mk(OP_COMPUTE, 0, 0.2), mk(OP_COMPUTE, 0, 0.2)};
    short_ops[0].tokens = 1;
    res = run(&o, short_ops, 5);
    NEAR(res.cycle_us, 4.2);
    NEAR(res.launch_us, 4);
}

static void test_kernel_turn_topo(void **state)
{
    (void)state;
    /* The topology's kernel_turn, not its graph node, is an eager queued
     * kernel's turnaround: h200-1x launches in 5.1 us and turns a queued
     * kernel around in 1.288 us (micro/spin/), a graph node 0.499. Three
     * eager 10 us kernels, issued at 5.1, 10.2, 15.3 us: the first runs
     * 5.1..15.1, the second waits its turnaround, 16.388..26.388, the third
     * 27.676..37.676: cycle 5.1 + 30 + 2 x 1.288 = 37.676 us (36.098 with
     * the graph node's 0.499). In a graph each kernel costs a node: the
     * same kernels take 3 x 0.499 + 30 after the graph's launch. */
    topo *t = NULL;
    err e = {0};
    assert_int_equal(topo_load("h200-1x", &t, &e), 0);
    assert_int_equal(topo_params_get(t)->kernel_turn_ps, 1288000);
    replay_opts o;
    replay_opts_init(&o);
    trace_op ops[4] = {mk(OP_CYCLE, 0, 0), mk(OP_COMPUTE, 0, 10), mk(OP_COMPUTE, 0, 10),
                       mk(OP_COMPUTE, 0, 10)};
    ops[0].tokens = 1;
    replay_result res = run_on(t, &o, ops, 4);
    NEAR(res.cycle_us, 37.676);
    NEAR(res.compute_us, 30);
    /* a given graph_node_us stands for both, as before the key */
    o.graph_node_us = 0.499;
    res = run_on(t, &o, ops, 4);
    NEAR(res.cycle_us, 36.098);
    topo_free(t);
}

static void test_eager_launch_wait(void **state)
{
    (void)state;
    replay_opts o;
    replay_opts_init(&o);
    o.launch_us = 1;      /* the launch call */
    o.op_host_us = 4;     /* the framework's work around each eager kernel */
    trace_op ops[4] = {mk(OP_CYCLE, 0, 0), mk(OP_COMPUTE, 0, 2), mk(OP_COMPUTE, 0, 2),
                       mk(OP_COMPUTE, 0, 2)};
    ops[0].tokens = 1;
    replay_result res = run(&o, ops, 4);
    /* The CPU spends 1 + 4 = 5 us per kernel: kernel k is issued at 5k and
     * runs 5k..5k+2 (the GPU waits for the CPU each time). The cycle ends
     * at 17; its critical path runs through the CPU up to the last kernel
     * (launch 3 x 1, host 3 x 4) and then that kernel's 2 us of compute. */
    NEAR(res.cycle_us, 17);
    NEAR(res.compute_us, 2);
    NEAR(res.launch_us, 3);
    NEAR(res.host_us, 12);
    NEAR(res.wait_us, 0);
}

static void test_rendezvous_skew(void **state)
{
    (void)state;
    replay_opts o;
    replay_opts_init(&o);
    o.launch_us = 0;
    o.ranks = 2;
    o.host_jitter = 0.5;  /* each rank's extra: Exp, mean 50% of the item */
    trace_op ops[3] = {mk(OP_CYCLE, 0, 0), mk(OP_HOST, 0, 100), mk(OP_COLL, 0, 0)};
    ops[0].tokens = 1;
    ops[2].measured_us = 10;   /* bytes 0: the measured time is used */
    replay_result res = run(&o, ops, 3);
    /* Two ranks draw the two strata of Exp(1), at probabilities 1/4 and 3/4:
     * -ln(3/4) = 0.287682 and -ln(1/4) = 1.386294. Their 100 us of host work
     * takes 100 + 50 x 0.287682 = 114.384 and 100 + 50 x 1.386294 = 169.315
     * us. The collective is issued as each CPU is done and starts when the
     * last rank's is (169.315): the first rank waits 54.931. Both run 10:
     * cycle 179.315; per rank on average host (114.384 + 169.315) / 2 =
     * 141.849, wait 54.931 / 2 = 27.466, comm 10 (tolerance 1e-3 us: the
     * times are integer picoseconds). */
    assert_int_equal(res.ranks, 2);
    assert_true(fabs(res.cycle_us - 179.315) < 1e-3);
    assert_true(fabs(res.host_us - 141.849) < 1e-3);
    assert_true(fabs(res.wait_us - 27.466) < 1e-3);
    NEAR(res.comm_us, 10);
    NEAR(res.host_us + res.wait_us + res.comm_us, res.cycle_us);
    /* Without jitter one rank stands for both: no waiting. */
    o.host_jitter = 0;
    res = run(&o, ops, 3);
    assert_int_equal(res.ranks, 1);
    NEAR(res.cycle_us, 110);
    NEAR(res.wait_us, 0);
}

static void test_sync_points(void **state)
{
    (void)state;
    replay_opts o;
    replay_opts_init(&o);
    o.launch_us = 4;      /* a graph launch */
    o.graph_node_us = 0;
    o.sync_us = 10;       /* the copy back once the GPU is done */
    trace_op ph = mk(OP_PHASE, 0, 0);
    ph.phase = PHASE_VERIFY;
    ph.graph = 1;
    trace_op cyc = mk(OP_CYCLE, 0, 0);
    cyc.tokens = 1;
    trace_op ops[7] = {cyc, ph, mk(OP_COMPUTE, 0, 50), mk(OP_SYNC, 0, 0), mk(OP_HOST, 0, 20),
                       ph, mk(OP_COMPUTE, 0, 30)};
    replay_result res = run(&o, ops, 7);
    /* Graph 1 launched at 0..4, runs 4..54. The sync makes the CPU wait for
     * it (54), the copy takes 10 (64), host work 20 (84), graph 2 is
     * launched 84..88 and runs 88..118. The path: launch 4, compute 50,
     * host 10 + 20, launch 4, compute 30 = 118. */
    NEAR(res.cycle_us, 118);
    NEAR(res.compute_us, 80);
    NEAR(res.launch_us, 8);
    NEAR(res.host_us, 30);
    /* Without the sync the CPU runs ahead: graph 2 is launched at 28 and
     * queues behind graph 1 (54..84); the host work is hidden: 84 us. */
    trace_op nosync[6] = {cyc, ph, mk(OP_COMPUTE, 0, 50), mk(OP_HOST, 0, 20), ph,
                          mk(OP_COMPUTE, 0, 30)};
    res = run(&o, nosync, 6);
    NEAR(res.cycle_us, 84);
    NEAR(res.host_us, 0);
    NEAR(res.launch_us, 4);
}

static void test_overlap_critical_path(void **state)
{
    (void)state;
    replay_opts o;
    replay_opts_init(&o);
    o.launch_us = 0;
    /* stream 0: compute 10, compute 5 (ends at 15); stream 1: a collective
     * measured at 30 us (bytes 0: measured time used). Stream 0 then waits
     * for stream 1 (at 30) and computes 2: cycle = 32, its path is the
     * collective (30, comm) then the compute (2). Idle on stream 1 before
     * the collective is 0. */
    trace_op ops[6];
    ops[0] = mk(OP_CYCLE, 0, 0);
    ops[0].tokens = 2;
    ops[1] = mk(OP_COMPUTE, 0, 10);
    ops[2] = mk(OP_COLL, 1, 0);
    ops[2].bytes = 0;
    ops[2].measured_us = 30;
    ops[3] = mk(OP_COMPUTE, 0, 5);
    ops[4] = mk(OP_WAIT, 0, 0);
    ops[4].on = 1;
    ops[5] = mk(OP_COMPUTE, 0, 2);
    replay_result res = run(&o, ops, 6);
    NEAR(res.cycle_us, 32);
    NEAR(res.comm_us, 30);
    NEAR(res.compute_us, 2);
    /* 2 tokens / 32 us = 62,500 tok/s */
    assert_true(fabs(res.tok_per_s - 62500) < 1e-6);
}

static void test_overlap_hidden(void **state)
{
    (void)state;
    replay_opts o;
    replay_opts_init(&o);
    o.launch_us = 0;
    /* stream 1 collective 4 us hidden under stream 0 compute 10 us; the
     * phase join makes the cycle 10 us, all compute: exposed comm = 0. */
    trace_op ops[4];
    ops[0] = mk(OP_COMPUTE, 0, 10);
    ops[1] = mk(OP_COLL, 1, 0);
    ops[1].measured_us = 4;
    ops[2] = mk(OP_PHASE, 0, 0);
    ops[2].phase = PHASE_VERIFY;
    ops[2].graph = 0;
    ops[3] = mk(OP_COMPUTE, 1, 1);
    replay_result res = run(&o, ops, 4);
    /* implicit cycle of 1 token: 10 (join) + 1 on stream 1 = 11 us */
    NEAR(res.cycle_us, 11);
    NEAR(res.comm_us, 0);
    NEAR(res.compute_us, 11);
    NEAR(res.phase_us[PHASE_OTHER], 10);
    NEAR(res.phase_us[PHASE_VERIFY], 1);
}

static void test_graph_and_cycles(void **state)
{
    (void)state;
    replay_opts o;
    replay_opts_init(&o);
    o.launch_us = 4;
    o.graph_node_us = 0.5;
    /* cycle 1 (3 tokens): graph phase: one launch 4 + 3 nodes x 0.5 + 3 x 10
     * = 35.5 us. cycle 2 (1 token): eager phase: 1 kernel: 4 + 20 = 24 us.
     * total 59.5 us for 4 tokens: 67,226.89 tok/s; mean cycle 29.75 us. */
    trace_op ops[9];
    ops[0] = mk(OP_CYCLE, 0, 0);
    ops[0].tokens = 3;
    ops[1] = mk(OP_PHASE, 0, 0);
    ops[1].phase = PHASE_VERIFY;
    ops[1].graph = 1;
    ops[2] = mk(OP_COMPUTE, 0, 10);
    ops[3] = mk(OP_COMPUTE, 0, 10);
    ops[4] = mk(OP_COMPUTE, 0, 10);
    ops[5] = mk(OP_CYCLE, 0, 0);
    ops[5].tokens = 1;
    ops[6] = mk(OP_PHASE, 0, 0);
    ops[6].phase = PHASE_DECODE;
    ops[6].graph = 0;
    ops[7] = mk(OP_COMPUTE, 0, 20);
    ops[8] = mk(OP_IDLE, 0, 0);
    replay_result res = run(&o, ops, 9);
    assert_int_equal(res.cycles, 2);
    NEAR(res.tokens, 4);
    NEAR(res.total_us, 59.5);
    NEAR(res.cycle_us, 29.75);
    NEAR(res.launch_us, (4 + 1.5 + 4) / 2.0);
    assert_true(fabs(res.tok_per_s - 4 / 59.5e-6) < 1e-6);
}

/* Three pairs of a 1 us kernel and an 8-rank NCCL allreduce (forced to 5 us)
 * on a topology whose NCCL host keys are set: launch 4 us (the option), NCCL's
 * group end and plan 2.5 us beyond the launch (nccl_group_us: a collective on
 * 8 ranks, docs/model.md "NCCL's host cost per call"), one rank's call 1 us
 * beyond it (nccl_host_us), a graph node 0.5, an NCCL node 0.8. */
static replay_result nccl_pairs(replay_opts *o, int graph, coll_algo algo, int group)
{
    topo *t;
    err e = {0};
    assert_int_equal(topo_load("h200-8x-nvswitch", &t, &e), 0);
    topo_params *tp = topo_params_mut(t);
    tp->nccl_group_ps = 2500000;
    tp->nccl_host_ps = 1000000;
    tp->nccl_graph_call_ps = 800000;
    o->coll_us = 5;
    o->launch_us = 4;
    o->graph_node_us = 0.5;
    trace_op ops[8];
    ops[0] = mk(OP_CYCLE, 0, 0);
    ops[0].tokens = 1;
    ops[1] = mk(OP_PHASE, 0, 0);
    ops[1].phase = PHASE_VERIFY;
    ops[1].graph = graph;
    for (int i = 0; i < 3; i++) {
        ops[2 + 2 * i] = mk(OP_COMPUTE, 0, 1);
        ops[3 + 2 * i] = mk(OP_COLL, 0, 0);
        ops[3 + 2 * i].algo = algo;
        ops[3 + 2 * i].group = group;
    }
    replay *r = replay_new(t, NULL, o);
    assert_non_null(r);
    feed(r, ops, 8);
    replay_result res;
    if (replay_finish(r, &res, &e) != 0)
        fail_msg("finish: %s", e.msg);
    replay_free(r);
    topo_free(t);
    return res;
}

static void test_nccl_host_per_call(void **state)
{
    (void)state;
    replay_opts o;
    replay_opts_init(&o);
    o.op_host_us = 2;     /* the framework per kernel */
    o.coll_host_us = 10;  /* the framework's collective layer per NCCL call (c10d) */
    /* Eager: the CPU issues a kernel in 4 + 2 = 6 us and an NCCL call in
     * launch 4 + NCCL's 2.5 + c10d 10 = 16.5 us; the GPU's 1 us kernel and 5 us
     * allreduce finish before the next issue, so the path is the CPU's: the
     * last allreduce starts at 3 x (6 + 16.5) = 67.5 us, the cycle ends at
     * 72.5. Launch 3 x (4 + 4 + 2.5) = 31.5, host 3 x (2 + 10) = 36, comm 5. */
    replay_result res = nccl_pairs(&o, 0, ALGO_AUTO, 0);
    NEAR(res.cycle_us, 72.5);
    NEAR(res.launch_us, 31.5);
    NEAR(res.host_us, 36);
    NEAR(res.comm_us, 5);
    NEAR(res.compute_us, 0);
    /* One rank: NCCL's call ends in its one-rank copy, 1 us beyond the
     * launch instead of the group's 2.5: 3 x 1.5 = 4.5 us less, 68. */
    res = nccl_pairs(&o, 0, ALGO_AUTO, 1);
    NEAR(res.cycle_us, 68);
    /* Without a collective layer of its own the framework costs what it
     * costs a kernel (2 us): 3 x (6 + 4 + 2.5 + 2) = 43.5 + 5 = 48.5. */
    o.coll_host_us = -1;
    res = nccl_pairs(&o, 0, ALGO_AUTO, 0);
    NEAR(res.cycle_us, 48.5);
    /* A custom kernel (the one-shot) is a kernel: 3 x (6 + 6) + 5 = 41. */
    o.coll_host_us = 10;
    res = nccl_pairs(&o, 0, ALGO_ONESHOT, 0);
    NEAR(res.cycle_us, 41);
    /* In a CUDA graph nothing of the eager call is paid: one graph launch
     * (4 us) on the CPU, then on the GPU each kernel a node (0.5 + 1) and
     * each NCCL allreduce its node (0.8 + 5): 4 + 3 x 7.3 = 25.9 us, launch
     * 4 + 3 x 1.3 = 7.9. */
    res = nccl_pairs(&o, 1, ALGO_AUTO, 0);
    NEAR(res.cycle_us, 25.9);
    NEAR(res.launch_us, 7.9);
    NEAR(res.host_us, 0);
    /* The one-shot's node is a kernel's: 3 x 0.3 = 0.9 us less, 25.0. */
    res = nccl_pairs(&o, 1, ALGO_ONESHOT, 0);
    NEAR(res.cycle_us, 25.0);
}

static void test_bad_stream_refused(void **state)
{
    (void)state;
    replay_opts o;
    replay_opts_init(&o);
    replay *r = replay_new(NULL, NULL, &o);
    assert_non_null(r);
    err e = {0};
    /* A stream, or a wait's other stream, past the last one is bad input
     * (ERR_INPUT), not an index off the end of the lanes. */
    trace_op op = mk(OP_COMPUTE, TRACE_MAX_STREAMS, 1);
    assert_int_equal(replay_op(r, &op, &e), ERR_INPUT);
    op = mk(OP_WAIT, 0, 0);
    op.on = TRACE_MAX_STREAMS;
    assert_int_equal(replay_op(r, &op, &e), ERR_INPUT);
    op.on = -1;
    assert_int_equal(replay_op(r, &op, &e), ERR_INPUT);
    replay_free(r);
}

static void test_file_roundtrip(void **state)
{
    (void)state;
    char path[] = "/tmp/collsim_replay_testXXXXXX";
    int fd = mkstemp(path);
    assert_true(fd >= 0);
    close(fd);
    char gz[64];
    snprintf(gz, sizeof gz, "%s.gz", path);
    err e = {0};
    trace_writer *w = trace_writer_new(gz, &e);
    assert_non_null(w);
    assert_int_equal(trace_write_meta(w, "ranks", "8", &e), 0);
    /* 100 cycles of: compute 7.25, allreduce (forced 2.75 us) = 10 us each */
    for (int c = 0; c < 100; c++) {
        trace_op op;
        trace_op_init(&op, OP_CYCLE);
        op.tokens = 2;
        assert_int_equal(trace_write_op(w, &op, &e), 0);
        trace_op_init(&op, OP_COMPUTE);
        op.dur_us = 7.25;
        assert_int_equal(trace_write_op(w, &op, &e), 0);
        trace_op_init(&op, OP_COLL);
        op.bytes = 43008;
        assert_int_equal(trace_write_op(w, &op, &e), 0);
    }
    assert_int_equal(trace_writer_commit(w, &e), 0);
    replay_opts o;
    replay_opts_init(&o);
    o.coll_us = 2.75;
    o.launch_us = 0;
    replay_result res;
    if (replay_file(gz, NULL, NULL, &o, NULL, &res, &e) != 0)
        fail_msg("%s", e.msg);
    /* 200 tokens in 100 x 10 us = 1 ms: 200,000 tok/s */
    assert_int_equal(res.cycles, 100);
    NEAR(res.cycle_us, 10);
    assert_true(fabs(res.tok_per_s - 200000) < 1e-6);
    unlink(gz);
    unlink(path);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_serial_sum),
        cmocka_unit_test(test_launch_bound),
        cmocka_unit_test(test_kernel_turnaround),
        cmocka_unit_test(test_kernel_turn_topo),
        cmocka_unit_test(test_eager_launch_wait),
        cmocka_unit_test(test_rendezvous_skew),
        cmocka_unit_test(test_sync_points),
        cmocka_unit_test(test_overlap_critical_path),
        cmocka_unit_test(test_overlap_hidden),
        cmocka_unit_test(test_graph_and_cycles),
        cmocka_unit_test(test_nccl_host_per_call),
        cmocka_unit_test(test_bad_stream_refused),
        cmocka_unit_test(test_file_roundtrip),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
