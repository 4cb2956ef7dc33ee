/* NCCL_GRAPH_FILE (nccl_graphfile.c) and what it does to NCCL's decisions,
 * derived by hand from NVIDIA/nccl v2.30.7-1 (search.cc, tuning.cc,
 * enqueue.cc). Runs from the repository root (tests/data/nccl/). */
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <cmocka.h>

#include "models/coll/coll.h"
#include "models/nccl/nccl_graphfile.h"
#include "models/nccl/nccl_tune.h"
#include "tests/unit/near.h"

#define FILE_2S "tests/data/nccl/graph-2s-2ch.xml"
#define FILE_PUBLIC "validate/data/public/rtxpro6000-2s-nccl-graph.xml"

/* The file: graph 0 (ring, pattern 4) and 1 (balanced tree, pattern 1), 2
 * channels each at 12 / 12 GB/s, type SYS / PIX, ranks 0..7 in order. */
static void test_read(void **state)
{
    (void)state;
    err e = {0};
    nccl_graphfile f;
    assert_int_equal(nccl_graphfile_read(FILE_2S, 8, &f, &e), 0);
    assert_int_equal(f.ngraphs, 2);
    const nccl_graphfile_graph *r = nccl_graphfile_find(&f, 0), *t = nccl_graphfile_find(&f, 1);
    assert_non_null(r);
    assert_non_null(t);
    assert_null(nccl_graphfile_find(&f, 3));
    assert_int_equal(r->pattern, 4);
    assert_int_equal(t->pattern, 1);
    assert_int_equal(r->nchannels, 2);
    NEAR(r->speed_intra_GBps, 12.0, 1e-6);
    assert_int_equal(r->type_intra, 9);   /* SYS */
    assert_int_equal(r->type_inter, 4);   /* PIX */
    for (int i = 0; i < 8; i++)
        assert_int_equal(r->order[i], i);
    /* A communicator of 4 ranks cannot take channels of 8 GPUs: "dev 4 not found". */
    assert_int_equal(nccl_graphfile_read(FILE_2S, 4, &f, &e), ERR_INPUT);
    assert_non_null(strstr(e.msg, FILE_2S ":"));
}

/* rtxpro6000-8x-pcie5-2s, 8 ranks. Without a file the search falls back to 1
 * channel at 0.1 GB/s (nccl_tune_test), so at 32 KiB NCCL's own estimate is
 * Ring/Simple 8.4 + 14 x 5.7 + 32768 / (1000 x 0.1 x 8/14) = 661.6 us against
 * Ring/LL 20.6 + 32768 / (1000 x 0.05 x 8/14) = 1167.5. With the file the
 * ring and tree have 2 channels at 12 GB/s (no search, no DupChannels), 4
 * after connect; type SYS: the PCI latency row. Ring/LL busBw min(282, 2 x 12
 * x 0.5) = 12, algBw x 8/14 = 6.857: 20.6 + 32768 / 6857.1 = 25.38 us;
 * Ring/Simple 24 x 8/14 = 13.71: 88.2 + 2.39 = 90.59; Tree/LL min(24 x 0.92,
 * 2 x 70) / 3.8 x 0.5 = 2.905, x treeCorrectionFactor[LL][9] 0.7: 6.8 + 2 x 7
 * x 1.0 + 32768 / 2033.5 = 36.91. Ring/LL wins, on 1 channel (32768 < nc x
 * 512 x 64 until nc = 1). */
static void test_choice(void **state)
{
    (void)state;
    err e = {0};
    topo *t;
    assert_int_equal(topo_load("rtxpro6000-8x-pcie5-2s", &t, &e), 0);
    coll_req r;
    coll_req_init(&r, t);
    nccl_tune *nt;
    nccl_tune_op o;
    assert_int_equal(nccl_tune_new(t, 8, &r.env, &nt, &e), 0);
    assert_int_equal(nccl_tune_op_choose(nt, COLL_ALLREDUCE, 32768, DTYPE_BF16, ALGO_AUTO,
                                         PROTO_AUTO, &o, &e), 0);
    assert_int_equal(o.proto, PROTO_SIMPLE);
    NEAR(o.time_us[1][2], 8.4 + 14 * 5.7 + 32768 / (1000 * 0.1 * 8 / 14.0), 0.05);
    nccl_tune_free(nt);
    assert_int_equal(coll_env_set(&r.env, "NCCL_GRAPH_FILE=" FILE_2S, &e), 0);
    assert_int_equal(nccl_tune_new(t, 8, &r.env, &nt, &e), 0);
    assert_true(nt->ring.from_file);
    assert_int_equal(nt->ring.nchannels, 2);
    assert_int_equal(nt->nchannels, 4);
    assert_int_equal(nccl_tune_op_choose(nt, COLL_ALLREDUCE, 32768, DTYPE_BF16, ALGO_AUTO,
                                         PROTO_AUTO, &o, &e), 0);
    assert_int_equal(o.algo, ALGO_RING);
    assert_int_equal(o.proto, PROTO_LL);
    assert_int_equal(o.nchannels, 1);
    NEAR(o.time_us[1][0], 20.6 + 32768 / (1000 * 2 * 12 * 0.5 * 8 / 14.0), 0.01);
    NEAR(o.time_us[1][2], 88.2 + 32768 / (1000 * 24 * 8 / 14.0), 0.01);
    NEAR(o.time_us[0][0], 20.8 + 32768 / (1000 * 24 * 0.92 / 3.8 * 0.5 * 0.7), 0.01);
    nccl_tune_free(nt);
    topo_free(t);
}

/* The graph file written from the header optimization/nccl-tuning.md of the
 * public wiki publishes for this box (validate/data/public/, ring and tree of
 * 2 channels at 24 GB/s, typeIntra PHB), under NCCL_P2P_LEVEL=SYS: what the
 * page reports with it, "24 GB/s, PHB/PIX, 4 channels, LL". init.cc: min(2,
 * 2) = 2 channels, connect.cc x2 = 4. PHB > NVB keeps LL128 off and takes
 * the PCI latency row, as SYS did. 64 KiB: Ring/LL busBw min(282, 2 x 24 x
 * 0.5) = 24, algBw x 8/14 = 13.714: 20.6 + 65536 / 13714.3 = 25.379 us;
 * Ring/Simple 48 x 8/14 = 27.43: 88.2 + 2.389 = 90.589 -> Ring/LL; 65536 <
 * nc x 512 x 64 drops nc from 4 to 2 (65536 is not < 2 x 32768). Without
 * the file (nccl_tune_test test_2s_seeds): 2 channels at 0.1 GB/s, and at 64
 * KiB Ring/Simple 88.2 + 65536 / (1000 x 0.2 x 8/14) wins, as the page's
 * "Without XML" table (Simple, 2 channels) says. */
static void test_public_file(void **state)
{
    (void)state;
    err e = {0};
    topo *t;
    assert_int_equal(topo_load("rtxpro6000-8x-pcie5-2s", &t, &e), 0);
    coll_req r;
    coll_req_init(&r, t);
    assert_int_equal(coll_env_set(&r.env, "NCCL_P2P_LEVEL=SYS", &e), 0);
    assert_int_equal(coll_env_set(&r.env, "NCCL_VERSION=2.28", &e), 0);
    nccl_tune *nt;
    nccl_tune_op o;
    assert_int_equal(nccl_tune_new(t, 8, &r.env, &nt, &e), 0);
    assert_int_equal(nt->ring.found, 0);
    assert_int_equal(nt->nchannels, 2);
    assert_int_equal(nccl_tune_op_choose(nt, COLL_ALLREDUCE, 65536, DTYPE_FP32, ALGO_AUTO,
                                         PROTO_AUTO, &o, &e), 0);
    assert_int_equal(o.proto, PROTO_SIMPLE);
    nccl_tune_free(nt);
    assert_int_equal(coll_env_set(&r.env, "NCCL_GRAPH_FILE=" FILE_PUBLIC, &e), 0);
    assert_int_equal(nccl_tune_new(t, 8, &r.env, &nt, &e), 0);
    assert_true(nt->ring.from_file);
    assert_true(nt->tree.from_file);
    NEAR(nt->ring.bw_intra_GBps, 24, 1e-6);
    assert_int_equal(nt->nchannels, 4);
    NEAR(nt->bw_GBps[COLL_ALLREDUCE][1][1], 0, 1e-9);   /* Ring/LL128 off */
    assert_int_equal(nccl_tune_op_choose(nt, COLL_ALLREDUCE, 65536, DTYPE_FP32, ALGO_AUTO,
                                         PROTO_AUTO, &o, &e), 0);
    assert_int_equal(o.algo, ALGO_RING);
    assert_int_equal(o.proto, PROTO_LL);
    assert_int_equal(o.nchannels, 2);
    NEAR(o.time_us[1][0], 25.379, 0.01);
    NEAR(o.time_us[1][2], 90.589, 0.01);
    nccl_tune_free(nt);
    topo_free(t);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_read),
        cmocka_unit_test(test_choice),
        cmocka_unit_test(test_public_file),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
