/* NCCL's NVLS on one node, each expectation derived by hand from NCCL's
 * source (NVIDIA/nccl v2.30.7-1 unless a test names another version): file,
 * function and arithmetic in the comment before the check. GB/s and us as
 * NCCL computes them (floats: tolerance 0.01). */
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <cmocka.h>

#include "models/coll/coll.h"
#include "models/nccl/nccl_nvls.h"
#include "models/nccl/nccl_tune.h"
#include "tests/unit/fixture.h"
#include "tests/unit/near.h"

static const char *const on1[] = {"NCCL_NVLS_ENABLE=1", NULL};
static const char *const on2[] = {"NCCL_NVLS_ENABLE=2", NULL};

/* h200-8x-nvswitch: 8 GPUs of SM 90, each with 18 lanes to the NVSwitch:
 * NCCL rates a link 18 x 20.6 = 370.8 GB/s (topo.cc SM90_NVLINK_BW).
 * search.cc ncclTopoCompute, pattern NVLS: min = max channels = 8 heads;
 * totalBw 370.8 x 8/7 = 423.8, so sm90SpeedArrayIntra starts at 50 (60 x 8
 * = 480 > 423.8); ncclTopoSearchTryNvls takes bw from every GPU's link each
 * way per head, 2 bw from the head's: 9 bw per link for 8 heads: 50 x 9 =
 * 450 > 370.8 fails, 40 x 9 = 360 fits: bwIntra 40. Pass 2 raises bwInter
 * while below 2 x 40: 50, then 60 (the top): bwInter 60.
 * tuning.cc: intraBw = 40 x 0.85 (Hopper) x 7/8 = 29.75, x 2 for allreduce
 * = 59.5, min with bwInter 60 -> 59.5; busBw 8 x 59.5 = 476, algBw x 8/14 =
 * 272.0. All-gather and reduce-scatter: 29.75 x 7/8 = 26.03, busBw 8 x
 * 26.03 = 208.25, no algBw conversion. Latency hwLat[NVLINK][NVLS][Simple]
 * = 25. nvls.cc: 16 channels on SM 90; chunk 128 KiB. */
static void test_h200_8(void **state)
{
    (void)state;
    err e = {0};
    topo *t;
    nccl_tune *nt;
    assert_int_equal(fixture_comm("h200-8x-nvswitch", 8, "2.30", on1, &t, &nt, &e), 0);
    assert_true(nt->nvls.support);
    assert_int_equal(nt->nvls.heads, 8);
    NEAR(nt->nvls.link_GBps, 370.8, 0.01);
    NEAR(nt->nvls.bw_intra_GBps, 40.0, 1e-6);
    NEAR(nt->nvls.bw_inter_GBps, 60.0, 1e-6);
    NEAR(nt->nvls.bw_GBps[COLL_ALLREDUCE], 272.0, 0.01);
    NEAR(nt->nvls.bw_GBps[COLL_ALLGATHER], 208.25, 0.01);
    NEAR(nt->nvls.bw_GBps[COLL_REDUCESCATTER], 208.25, 0.01);
    NEAR(nt->nvls.lat_us[COLL_ALLREDUCE], 25.0, 1e-6);
    assert_int_equal(nt->nvls.nchannels, 16);
    assert_int_equal(nt->nvls.chunk_bytes, 128 << 10);
    /* Broadcast has no NVLS kernel. */
    assert_true(nt->nvls.bw_GBps[COLL_BROADCAST] == 0);
    nccl_tune_free(nt);
    topo_free(t);
}

/* The choice (enqueue.cc topoGetAlgoInfo, lowest lat + bytes / (1000 bw)):
 * at 1 MiB Ring/LL 15.0 + 1048576 / 80570 = 28.01 beats NVLS 25 + 1048576 /
 * 272000 = 28.86; at 2 MiB NVLS 25 + 7.71 = 32.71 beats Ring/LL 41.03 and
 * Ring/LL128 51.68 (8x H100 nccl-tests runs report the same switch:
 * nccl-tests issue #309, Ring/LL to 1 MB, NVLS from 2 MB). NVLS runs on
 * nvlsChannels = 16 with 640 threads. int8 has no NVLS reduction kernel
 * (device.h ncclNvlsSupported), so 2 MiB of int8 stays on the ring. */
static void test_choice(void **state)
{
    (void)state;
    err e = {0};
    topo *t;
    nccl_tune *nt;
    nccl_tune_op o;
    assert_int_equal(fixture_comm("h200-8x-nvswitch", 8, "2.30", on2, &t, &nt, &e), 0);
    assert_int_equal(nccl_tune_op_choose(nt, COLL_ALLREDUCE, 1 << 20, DTYPE_BF16, ALGO_AUTO,
                                         PROTO_AUTO, &o, &e), 0);
    assert_int_equal(o.algo, ALGO_RING);
    assert_int_equal(o.proto, PROTO_LL);
    NEAR(o.nvls_time_us, 25.0 + 1048576.0 / 272000.0, 0.01);
    assert_int_equal(nccl_tune_op_choose(nt, COLL_ALLREDUCE, 2 << 20, DTYPE_BF16, ALGO_AUTO,
                                         PROTO_AUTO, &o, &e), 0);
    assert_int_equal(o.algo, ALGO_NVLS);
    assert_int_equal(o.proto, PROTO_SIMPLE);
    assert_int_equal(o.nchannels, 16);
    assert_int_equal(o.nthreads, 640);
    NEAR(o.nvls_time_us, 32.71, 0.01);
    assert_int_equal(nccl_tune_op_choose(nt, COLL_ALLREDUCE, 2 << 20, DTYPE_INT8, ALGO_AUTO,
                                         PROTO_AUTO, &o, &e), 0);
    assert_int_equal(o.algo, ALGO_RING);
    assert_true(o.nvls_time_us < 0);
    /* NCCL_ALGO=NVLS leaves NVLS alone, even at 1 MiB; NCCL_PROTO=LL turns it off. */
    assert_int_equal(nccl_tune_op_choose(nt, COLL_ALLREDUCE, 1 << 20, DTYPE_BF16, ALGO_NVLS,
                                         PROTO_AUTO, &o, &e), 0);
    assert_int_equal(o.algo, ALGO_NVLS);
    nccl_tune_free(nt);
    topo_free(t);
    static const char *const ll[] = {"NCCL_NVLS_ENABLE=1", "NCCL_PROTO=LL", NULL};
    assert_int_equal(fixture_comm("h200-8x-nvswitch", 8, "2.30", ll, &t, &nt, &e), 0);
    assert_true(nt->nvls.bw_GBps[COLL_ALLREDUCE] == 0);
    nccl_tune_free(nt);
    topo_free(t);
}

/* Version differences (tuning.cc of each tag), same graph (40 / 60, 8 heads):
 * 2.28 on: as 2.30 (272.0). 2.27: allreduce min(40, 60) = 40, busBw 320,
 * algBw x 5/6 = 266.67; all-gather min(40 x 7/8, 60 x 0.9) = 35, busBw 280.
 * 2.26: all-gather min(40, 60) = 40, busBw 320. */
static void test_versions(void **state)
{
    (void)state;
    static const struct { const char *v; double ar, ag; } want[] = {
        {"2.29", 272.0, 208.25}, {"2.28", 272.0, 208.25},
        {"2.27", 266.67, 280.0}, {"2.26", 266.67, 320.0},
    };
    for (size_t i = 0; i < sizeof want / sizeof want[0]; i++) {
        err e = {0};
        topo *t;
        nccl_tune *nt;
        assert_int_equal(fixture_comm("h200-8x-nvswitch", 8, want[i].v, on1, &t, &nt, &e), 0);
        NEAR(nt->nvls.bw_GBps[COLL_ALLREDUCE], want[i].ar, 0.01);
        NEAR(nt->nvls.bw_GBps[COLL_ALLGATHER], want[i].ag, 0.01);
        nccl_tune_free(nt);
        topo_free(t);
    }
}

/* Four of the eight GPUs: 4 heads, totalBw 370.8 x 4/3 = 494.4 lets 60
 * start (60 x 4 = 240); 60 x 5 = 300 <= 370.8 fits: bwIntra 60, bwInter 60
 * (the top). tuning: 60 x 0.85 x 3/4 x 2 = 76.5, min with 60 = 60; busBw 4 x
 * 60 = 240, algBw x 4/6 = 160. */
static void test_four(void **state)
{
    (void)state;
    err e = {0};
    topo *t;
    nccl_tune *nt;
    assert_int_equal(fixture_comm("h200-8x-nvswitch", 4, "2.30", on1, &t, &nt, &e), 0);
    assert_int_equal(nt->nvls.heads, 4);
    NEAR(nt->nvls.bw_intra_GBps, 60.0, 1e-6);
    NEAR(nt->nvls.bw_inter_GBps, 60.0, 1e-6);
    NEAR(nt->nvls.bw_GBps[COLL_ALLREDUCE], 160.0, 0.01);
    nccl_tune_free(nt);
    topo_free(t);
}

/* Where NVLS cannot run: NCCL_NVLS_ENABLE=1 is refused (ERR_USAGE naming the
 * reason), 2 (NCCL's auto) leaves it off, 0 (collsim's default) is off. A
 * PCIe box has no NVSwitch (search.cc: nodes[NVS].count == 0 -> no graph). */
static void test_unsupported(void **state)
{
    (void)state;
    err e = {0};
    topo *t;
    nccl_tune *nt;
    assert_int_equal(fixture_comm("rtxpro6000-8x-pcie5-1s", 8, "2.30", on1, &t, &nt, &e), ERR_USAGE);
    assert_non_null(strstr(e.msg, "NVSwitch"));
    topo_free(t);
    memset(&e, 0, sizeof e);
    assert_int_equal(fixture_comm("rtxpro6000-8x-pcie5-1s", 8, "2.30", on2, &t, &nt, &e), 0);
    assert_false(nt->nvls.support);
    nccl_tune_free(nt);
    topo_free(t);
    assert_int_equal(fixture_comm("h200-8x-nvswitch", 8, "2.30", NULL, &t, &nt, &e), 0);
    assert_false(nt->nvls.support);
    nccl_tune_op o;
    assert_int_equal(nccl_tune_op_choose(nt, COLL_ALLREDUCE, 1 << 30, DTYPE_BF16, ALGO_AUTO,
                                         PROTO_AUTO, &o, &e), 0);
    assert_int_equal(o.algo, ALGO_RING);
    nccl_tune_free(nt);
    topo_free(t);
}

/* enqueue.cc calcCollChunking for NVLS, 16 channels x 8 heads = 128
 * concurrent ops: 128 KiB from 1 GiB (64 x 128 x 128 KiB), 64 KiB below,
 * 32 KiB below 64 MiB (8 x 128 x 64 KiB), 16 KiB below 8 MiB (2 x 128 x
 * 32 KiB). */
static void test_chunk(void **state)
{
    (void)state;
    err e = {0};
    topo *t;
    nccl_tune *nt;
    assert_int_equal(fixture_comm("h200-8x-nvswitch", 8, "2.30", on1, &t, &nt, &e), 0);
    assert_int_equal(nccl_nvls_chunk_bytes(nt, 1ULL << 30), 131072);
    assert_int_equal(nccl_nvls_chunk_bytes(nt, (1ULL << 30) - 1), 65536);
    assert_int_equal(nccl_nvls_chunk_bytes(nt, 64ULL << 20), 65536);
    assert_int_equal(nccl_nvls_chunk_bytes(nt, (64ULL << 20) - 1), 32768);
    assert_int_equal(nccl_nvls_chunk_bytes(nt, (8ULL << 20) - 1), 16384);
    nccl_tune_free(nt);
    topo_free(t);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_h200_8),   cmocka_unit_test(test_choice),
        cmocka_unit_test(test_versions), cmocka_unit_test(test_four),
        cmocka_unit_test(test_unsupported), cmocka_unit_test(test_chunk),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
