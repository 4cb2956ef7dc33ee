/* NCCL's decisions on the presets, each expectation derived by hand from
 * NCCL's source (NVIDIA/nccl v2.28.9-1 unless a test says otherwise): file,
 * function and numbers in the comment before the check. Bandwidths are GB/s,
 * times us, as NCCL computes them (floats: tolerance 0.01 us / 0.01 GB/s). */
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>

#include "models/coll/coll.h"
#include "models/nccl/nccl_tune.h"
#include "tests/unit/fixture.h"
#include "tests/unit/near.h"

enum { TREE = 0, RING = 1, LL = 0, LL128 = 1, SIMPLE = 2 };

/* The communicator for NCCL 2.28; an error fails the test. */
static nccl_tune *make(const char *preset, int nranks, const char *const *env, topo **tp)
{
    err e = {0};
    nccl_tune *nt;
    if (fixture_comm(preset, nranks, "2.28", env, tp, &nt, &e))
        fail_msg("nccl_tune_new: %s", e.msg);
    return nt;
}

static void op(const nccl_tune *nt, uint64_t bytes, coll_algo a, coll_proto p, int ch, int th)
{
    err e = {0};
    nccl_tune_op o;
    assert_int_equal(nccl_tune_op_choose(nt, COLL_ALLREDUCE, bytes, DTYPE_BF16, ALGO_AUTO, PROTO_AUTO, &o, &e),
                     0);
    if (o.algo != a || o.proto != p || o.nchannels != ch || o.nthreads != th)
        fail_msg("%llu B: %s/%s %d ch x %d thr, expected %s/%s %d x %d",
                 (unsigned long long)bytes, coll_algo_name(o.algo), coll_proto_name(o.proto),
                 o.nchannels, o.nthreads, coll_algo_name(a), coll_proto_name(p), ch, th);
}

static void test_versions(void **state)
{
    (void)state;
    /* Five tables, newest first (index 0, the default): 2.30, 2.29, 2.28,
     * 2.27, 2.26. */
    char buf[64];
    assert_int_equal(nccl_tune_version_parse("2.30"), 0);
    assert_int_equal(nccl_tune_version_parse("2.29.7"), 1);
    assert_int_equal(nccl_tune_version_parse("2.28.9"), 2);
    assert_int_equal(nccl_tune_version_parse("2.26"), 4);
    assert_int_equal(nccl_tune_version_parse("2.25"), -1);
    assert_int_equal(nccl_tune_version_parse("2.2"), -1);
    assert_string_equal(nccl_tune_version_list(buf, sizeof buf), "2.30, 2.29, 2.28, 2.27, 2.26");
}

/* rtxpro6000-8x-pcie5-2s, default env. NCCL's system (topo.cc): every PCIe
 * link Gen5 x16 = 16 x 240 / 80 = 48 GB/s (GPU-vs, vs-CPU; the vs0-vs1 chip
 * fabric is not in NCCL's PCI tree); cpu0-cpu1 AMD_BW = 16. Paths
 * (paths.cc ncclTopoSetPaths): GPU0->GPU1 PIX 48; GPU1->GPU2 through cpu0
 * PHB 48; GPU3->GPU4 through cpu0-cpu1 SYS min(48,16) = 16. ncclTopoCheckP2p:
 * AMD but 8 GPUs > 2, so p2pLevel = PATH_PXB: PIX hops P2P, PHB/SYS hops
 * SHM (the path goes through the receiver's CPU: same types, same bw).
 * Search (search.cc ncclTopoCompute): SM 120 -> sm100SpeedArrayIntra, from
 * 40 (first <= maxBw 48) down to 18; every ring and chain of 8 GPUs crosses
 * cpu0->cpu1 (16 < 18) at every typeIntra PIX..SYS, so nothing fits: the
 * fallback is PCI order 0..7, 1 channel at 0.1 GB/s, typeIntra SYS, for the
 * ring and the tree. init.cc: min(1,1) = 1; connect.cc: x2 = 2 channels.
 * Tuning (tuning.cc ncclTopoTuneModel, 8 ranks, nsteps 14, PCI latencies,
 * LL128 off as typeIntra SYS > NVB): Ring LL busBw min(282, 0.1 x .5) = .05,
 * algBw .05 x 8/14 = 0.028571, lat 6.6 + 14 x 1.0 = 20.6; Ring Simple
 * 0.057143, lat 8.4 + 14 x 5.7 = 88.2; Tree busBw min(.1 x .92, 70) = .092:
 * LL /3.8 x .5 = 0.012105, lat 6.8 + 2 x 7 x 1.0 = 20.8; Simple .046, lat
 * 8.4 + 2 x 7 x 4 = 64.4. Ring Simple threads: bwIntra x nCh = 0.1 <= PCI_BW
 * 12 -> 256. */
static void test_2s_default(void **state)
{
    (void)state;
    topo *t;
    nccl_tune *nt = make("rtxpro6000-8x-pcie5-2s", 8, NULL, &t);
    assert_int_equal(nt->searched, 8);
    NEAR(nt->path_bw_GBps[0][1], 48, 1e-3);
    NEAR(nt->path_bw_GBps[3][4], 16, 1e-3);
    /* Transport of the ring's hops 0->1 ... 7->0: P2P inside a virtual
     * switch (PIX), SHM for 1->2, 5->6 (PHB) and 3->4, 7->0 (SYS). */
    static const int p2p[8] = {1, 0, 1, 0, 1, 0, 1, 0};
    static const int type[8] = {4, 8, 4, 9, 4, 8, 4, 9};
    for (int i = 0; i < 8; i++) {
        assert_int_equal(nt->p2p[i][(i + 1) % 8], p2p[i]);
        assert_int_equal(nt->path_type[i][(i + 1) % 8], type[i]);
        assert_int_equal(nt->ring.order[i], i);
    }
    assert_int_equal(nt->ring.found, 0);
    assert_int_equal(nt->tree.found, 0);
    NEAR(nt->ring.bw_intra_GBps, 0.1, 1e-6);
    NEAR(nt->speed_first_GBps, 40, 1e-6);
    NEAR(nt->speed_last_GBps, 18, 1e-6);
    assert_int_equal(nt->nchannels, 2);
    NEAR(nt->lat_us[COLL_ALLREDUCE][RING][LL], 20.6, 1e-4);
    NEAR(nt->bw_GBps[COLL_ALLREDUCE][RING][LL], 0.028571, 1e-5);
    NEAR(nt->bw_GBps[COLL_ALLREDUCE][RING][LL128], 0, 1e-9);
    NEAR(nt->lat_us[COLL_ALLREDUCE][RING][SIMPLE], 88.2, 1e-4);
    NEAR(nt->bw_GBps[COLL_ALLREDUCE][TREE][LL], 0.012105, 1e-5);
    NEAR(nt->lat_us[COLL_ALLREDUCE][TREE][SIMPLE], 64.4, 1e-4);
    assert_int_equal(nt->max_threads[RING][SIMPLE], 256);
    /* enqueue.cc: time = lat + bytes / (1000 bw), tree bw x
     * treeCorrectionFactor[proto][log2(bytes/64)].
     * 256 B (index 2: LL 1.0, Simple .9): Ring LL 20.6 + 256/28.571 = 29.56,
     * Tree LL 20.8 + 256/12.105 = 41.95, Tree Simple 64.4 + 256/41.4 =
     * 70.58, Ring Simple 88.2 + 4.48 = 92.68 -> Ring/LL. topoGetAlgoInfo:
     * threshold LL 8 x 8 ranks = 64 B/thread: 256 < nc x 512 x 64 drops nc
     * to 1, then nt 512 -> 64 (stops: 64 % 128 != 0), raised to 3 warps =
     * 96 threads; one 2 KiB cell -> 1 channel. */
    op(nt, 256, ALGO_RING, PROTO_LL, 1, 96);
    /* 4 KiB (index 6: LL .7, Simple .9): Ring Simple 88.2 + 4096/57.143 =
     * 159.88 < Tree Simple 64.4 + 4096/41.4 = 163.34 < Ring LL 20.6 +
     * 4096/28.571 = 163.96 -> Ring/Simple; 4096 < nc x 256 x 64 -> nc 1,
     * nt 256 -> 64, + 1 sync warp = 96. */
    op(nt, 4096, ALGO_RING, PROTO_SIMPLE, 1, 96);
    /* 64 KiB (index 10: .6): Ring Simple 88.2 + 65536/57.143 = 1235.1 <
     * Ring LL 2314.4 < Tree Simple 64.4 + 65536/27.6 = 2438.9; 65536 >= 2 x
     * 256 x 64 keeps nc 2, nt 256 + 32 = 288; 128 KiB of traffic in 8 KiB
     * cells, 64 KiB per channel -> 2 channels. */
    op(nt, 65536, ALGO_RING, PROTO_SIMPLE, 2, 288);
    /* 1 MiB: Ring Simple 88.2 + 18350 = 18438 < Ring LL 36721 -> Simple,
     * 2 channels x 288. */
    op(nt, 1 << 20, ALGO_RING, PROTO_SIMPLE, 2, 288);
    nccl_tune_free(nt);
    topo_free(t);
}

/* The reference seeds' env. NCCL_P2P_LEVEL=SYS: every path type <= SYS, so
 * every hop is P2P, on the direct path (bw still 48 / 16). The search is the
 * same (cpu0->cpu1 16 < 18): fallback, 1 channel, x2 = 2;
 * NCCL_MAX_NCHANNELS=16 only caps (min(16, 2) = 2). NCCL_ALGO=Ring and
 * NCCL_PROTO=LL leave Ring/LL alone (bw 0 elsewhere). Threads: LL max 512.
 * 256 B and 4 KiB: nc 1 (bytes < 1 x 512 x 64), nt halves to 64 -> 96.
 * 64 KiB: 65536 < 2 x 512 x 64 = 65536 is false: nc 2, nt 512; LL traffic
 * 4 x 2 x 64 KiB in 2 KiB cells over 2 channels -> 2. 1 MiB: 2 x 512. */
static void test_2s_seeds(void **state)
{
    (void)state;
    static const char *const env[] = {"NCCL_PROTO=LL", "NCCL_ALGO=Ring", "NCCL_P2P_LEVEL=SYS",
                                      "NCCL_MAX_NCHANNELS=16", NULL};
    topo *t;
    nccl_tune *nt = make("rtxpro6000-8x-pcie5-2s", 8, env, &t);
    for (int i = 0; i < 8; i++)
        assert_int_equal(nt->p2p[i][(i + 1) % 8], 1);
    NEAR(nt->path_bw_GBps[3][4], 16, 1e-3);
    assert_int_equal(nt->ring.found, 0);
    assert_int_equal(nt->nchannels, 2);
    NEAR(nt->bw_GBps[COLL_ALLREDUCE][RING][SIMPLE], 0, 1e-9);
    NEAR(nt->bw_GBps[COLL_ALLREDUCE][TREE][LL], 0, 1e-9);
    op(nt, 256, ALGO_RING, PROTO_LL, 1, 96);
    op(nt, 4096, ALGO_RING, PROTO_LL, 1, 96);
    op(nt, 65536, ALGO_RING, PROTO_LL, 2, 512);
    op(nt, 1 << 20, ALGO_RING, PROTO_LL, 2, 512);
    nccl_tune_free(nt);
    topo_free(t);
}

/* NCCL_PROTO=LL128 on the same box: LL128's default rule (typeIntra <=
 * NVB) would keep it off here (SYS), but a protocol the variable names is
 * enabled as given (tuning.cc ncclTopoTuneModel: pEnable is 1, not the
 * default 2, so the rule is skipped). Ring LL128 busBw min(0.1 x .92,
 * 1 x 73.4 (Blackwell's per-channel cap in 2.28)) = .092, algBw x 8/14 =
 * 0.052571; LL is off (not named). */
static void test_2s_ll128_named(void **state)
{
    (void)state;
    static const char *const env[] = {"NCCL_PROTO=LL128", NULL};
    topo *t;
    nccl_tune *nt = make("rtxpro6000-8x-pcie5-2s", 8, env, &t);
    NEAR(nt->bw_GBps[COLL_ALLREDUCE][RING][LL128], 0.052571, 1e-5);
    NEAR(nt->bw_GBps[COLL_ALLREDUCE][RING][LL], 0, 1e-9);
    nccl_tune_free(nt);
    topo_free(t);
}

/* Version differences on the same box: 2.30's sm100SpeedArrayIntra has a
 * 45 step, so its search starts at 45 (2.28: 40); the outcome is the same
 * fallback. 2 channels with NCCL_MIN_NCHANNELS=4: connect.cc copies
 * channels up to the minimum -> 4. */
static void test_2s_version_and_min(void **state)
{
    (void)state;
    static const char *const env[] = {"NCCL_VERSION=2.30", "NCCL_MIN_NCHANNELS=4", NULL};
    topo *t;
    nccl_tune *nt = make("rtxpro6000-8x-pcie5-2s", 8, env, &t);
    NEAR(nt->speed_first_GBps, 45, 1e-6);
    assert_int_equal(nt->ring.found, 0);
    assert_int_equal(nt->nchannels, 4);
    nccl_tune_free(nt);
    topo_free(t);
}

/* The search's last rung on the SM120 box (sm100SpeedArrayIntra in each
 * tag's search.cc): 2.26 ends at 19, 2.27 and 2.28 add 18, 2.29 and 2.30
 * also 45 (so they start at 45, the others at 40). Every version falls back
 * there (cpu0-cpu1 is AMD_BW 16, below every rung). */
static void test_ladders(void **state)
{
    (void)state;
    static const struct { const char *v; float first, last; } want[] = {
        {"NCCL_VERSION=2.26", 40, 19}, {"NCCL_VERSION=2.27", 40, 18},
        {"NCCL_VERSION=2.28", 40, 18}, {"NCCL_VERSION=2.29", 45, 18},
    };
    for (size_t i = 0; i < sizeof want / sizeof *want; i++) {
        const char *env[] = {want[i].v, NULL};
        topo *t;
        nccl_tune *nt = make("rtxpro6000-8x-pcie5-2s", 8, env, &t);
        NEAR(nt->speed_first_GBps, want[i].first, 1e-6);
        NEAR(nt->speed_last_GBps, want[i].last, 1e-6);
        assert_int_equal(nt->ring.found, 0);
        nccl_tune_free(nt);
        topo_free(t);
    }
}

/* scheduleCollTasksToPlan per version, h200-2x (24 channels), Ring LL
 * allreduce of 512 KiB: nc = 24 (512 KiB >= 24 x 512 x 16); traffic =
 * 512 KiB x 2 x 4 (LL) = 4 MiB, 8 bytes of traffic per byte.
 * 2.28: MinTrafficPerChannel 16 KiB, trafficPerChannel = max(16 KiB, 4 MiB /
 *   24 = 174762); cells of 2048 B (256 cells, 16384 B of traffic each);
 *   11 cells per channel: lo 11, mid 22, hi 3 -> 24 channels (NCCL 2.28.3 on
 *   the machine: 24, nccl-tuning.txt).
 * 2.29: 32 KiB, trafficPerChannel = divUp(174762, 16) x 16 = 174768; cells
 *   of 4096 B (128, 32768 each); 6 per channel: lo 6, mid 20, hi 2 -> 22. */
static void test_spread_versions(void **state)
{
    (void)state;
    static const struct { const char *v; int ch; } want[] = {
        {"NCCL_VERSION=2.28", 24}, {"NCCL_VERSION=2.29", 22}, {"NCCL_VERSION=2.30", 22},
        {"NCCL_VERSION=2.27", 24}, {"NCCL_VERSION=2.26", 24},
    };
    for (size_t i = 0; i < sizeof want / sizeof *want; i++) {
        const char *env[] = {want[i].v, "NCCL_PROTO=LL", NULL};
        topo *t;
        nccl_tune *nt = make("h200-2x", 2, env, &t);
        err e = {0};
        nccl_tune_op o;
        assert_int_equal(nccl_tune_op_choose(nt, COLL_ALLREDUCE, 524288, DTYPE_BF16, ALGO_AUTO, PROTO_AUTO,
                                             &o, &e), 0);
        assert_int_equal(o.max_channels, 24);
        if (o.nchannels != want[i].ch)
            fail_msg("%s: %d channels, expected %d", want[i].v, o.nchannels, want[i].ch);
        nccl_tune_free(nt);
        topo_free(t);
    }
}

/* Two GPUs of the 2-socket box: ncclTopoCheckP2p's AMD rule (x86 AMD and
 * <= 2 GPUs) sets p2pLevel = SYS, so GPU0<->GPU1 (PIX anyway) is P2P. Ring
 * at 40: 0->1->0 takes 40 from each direction of both 48 GB/s links, a
 * second channel does not fit; 2 x 24 = 48 beats 1 x 40, so the ring is 2
 * channels at 24 (24 < 25: no DupChannels), 4 after connect. */
static void test_2s_two_gpus(void **state)
{
    (void)state;
    topo *t;
    nccl_tune *nt = make("rtxpro6000-8x-pcie5-2s", 2, NULL, &t);
    assert_int_equal(nt->p2p_level, PATH_SYS);
    assert_int_equal(nt->p2p[0][1], 1);
    assert_int_equal(nt->ring.found, 1);
    assert_int_equal(nt->ring.nchannels, 2);
    NEAR(nt->ring.bw_intra_GBps, 24, 1e-6);
    assert_int_equal(nt->nchannels, 4);
    nccl_tune_free(nt);
    topo_free(t);
}

/* h200-8x-nvswitch: 18 NVLink lanes x SM90_NVLINK_BW 20.6 = 370.8 GB/s each
 * way between every GPU and the (single) NVS node; maxBw = totalBw = 370.8.
 * Ring search (sm90SpeedArrayIntra from 60, NVS: only index neighbours):
 * each channel takes 60 from every GPU<->NVS link -> 6 channels (360 <
 * 370.8, so the search goes on: 50 x 7 = 350 worse, 40 x 9 and 30 x 12 = 360
 * equal, 24/60 < .49 stops). DupChannels: 60 >= 50 -> 12 channels at 30;
 * pass 2 cannot raise the speed with 12 channels (370.8/40 < 12). Tree:
 * 12 channels (min = max = ring) at 30. init.cc 12, connect.cc x2 = 24.
 * Tuning (NVLink latencies, Hopper caps, LL128 on: typeIntra NVL <= NVB and
 * SM 90): Ring LL busBw min(141, 12 x 30 x .5) = 141 -> algBw 141 x 8/14 =
 * 80.571, lat 6.6 + 14 x .6 = 15.0; Ring LL128 min(360 x .92, 12 x 36.7) =
 * 331.2 -> 189.26, lat 14 + 14 x 1.9 = 40.6; Ring Simple 205.71, lat 8.4 +
 * 14 x 3.4 = 56.0; Tree LL min(331.2/3.8, 141) x .5 = 43.58, lat 6.8 + 14 x
 * .6 = 15.2. 256 B: Ring LL 15.003 < Tree LL 15.206 -> Ring/LL, 1 channel x
 * 96. 1 MiB: Ring LL 15.0 + 1048576/80571 = 28.01 < Tree LL128 31.5 +
 * 1048576/(128.8 x .6) = 45.07 < Ring LL128 46.14 -> Ring/LL; 1 MiB >=
 * 24 x 512 x 64 keeps 24 channels x 512; LL traffic 8 MiB / 24 = 341 KiB per
 * channel in 16 KiB cells: 22 + 22 x 22 + 6 cells -> 24 channels. */
static void test_h200_8(void **state)
{
    (void)state;
    topo *t;
    nccl_tune *nt = make("h200-8x-nvswitch", 8, NULL, &t);
    NEAR(nt->max_bw_GBps, 370.8, 1e-3);
    assert_int_equal(nt->p2p[0][1], 1);
    assert_int_equal(nt->path_type[0][5], PATH_NVL);
    assert_int_equal(nt->ring.found, 1);
    assert_int_equal(nt->ring.search_channels, 6);
    NEAR(nt->ring.search_bw_GBps, 60, 1e-6);
    assert_int_equal(nt->ring.nchannels, 12);
    NEAR(nt->ring.bw_intra_GBps, 30, 1e-6);
    assert_int_equal(nt->tree.nchannels, 12);
    assert_int_equal(nt->nchannels, 24);
    assert_int_equal(nt->hw_nvlink[RING], 1);
    NEAR(nt->bw_GBps[COLL_ALLREDUCE][RING][LL], 80.571, 1e-2);
    NEAR(nt->bw_GBps[COLL_ALLREDUCE][RING][LL128], 189.26, 1e-2);
    NEAR(nt->lat_us[COLL_ALLREDUCE][RING][SIMPLE], 56.0, 1e-4);
    NEAR(nt->bw_GBps[COLL_ALLREDUCE][TREE][LL], 43.58, 1e-2);
    op(nt, 256, ALGO_RING, PROTO_LL, 1, 96);
    op(nt, 1 << 20, ALGO_RING, PROTO_LL, 24, 512);
    nccl_tune_free(nt);
    topo_free(t);
}

/* Two H200s over NVLink (Intel host: no AMD rule; NVL <= PXB is P2P). Ring
 * 0->1->0: 6 channels at 60, DupChannels -> 12 at 30. Tree (chains 0->1 and
 * 1->0 alternate once channels may differ): 12 at 60 fit (6 x 60 each way);
 * 24 channels after connect. Tuning, nsteps 2: Ring LL min(141, 180) = 141,
 * x 2/2, lat 6.6 + 2 x .6 = 7.8; Ring Simple 360, lat 8.4 + 2 x 3.4 = 15.2;
 * Ring LL128 331.2, lat 14 + 2 x 1.9 = 17.8. 1 MiB: Ring LL 7.8 + 7.44 =
 * 15.24 < Ring Simple 15.2 + 2.91 = 18.11 -> Ring/LL, 24 channels x 512.
 * 4 MiB: Ring Simple 15.2 + 11.65 = 26.85 < LL128 17.8 + 12.66 = 30.46 <
 * LL 37.55 -> Ring/Simple: 4 MiB >= 24 x 512 x 64 -> 24 x (512 + 32). */
static void test_h200_two(void **state)
{
    (void)state;
    topo *t;
    nccl_tune *nt = make("h200-8x-nvswitch", 2, NULL, &t);
    assert_int_equal(nt->p2p_level, PATH_PXB);
    assert_int_equal(nt->p2p[1][0], 1);
    assert_int_equal(nt->ring.nchannels, 12);
    NEAR(nt->tree.bw_intra_GBps, 60, 1e-6);
    assert_int_equal(nt->nchannels, 24);
    NEAR(nt->lat_us[COLL_ALLREDUCE][RING][LL], 7.8, 1e-4);
    NEAR(nt->bw_GBps[COLL_ALLREDUCE][RING][SIMPLE], 360, 1e-3);
    op(nt, 1 << 20, ALGO_RING, PROTO_LL, 24, 512);
    op(nt, 4 << 20, ALGO_RING, PROTO_SIMPLE, 24, 544);
    nccl_tune_free(nt);
    topo_free(t);
}

/* Two SM 90 GPUs on a direct NVLink bridge of `lanes` lanes (each on its own
 * root port), NCCL 2.28: the channel count follows the lane count NCCL sees,
 * not the link's real rate (238.1 GB/s on both: NCCL rates lanes x 20.6).
 * 18 lanes: maxBw = totalBw = 370.8; Ring 0->1->0 at 60 fits 6 channels
 * (360 < 370.8: the search goes on, 50 x 7 = 350, 40 x 9 = 30 x 12 = 360
 * are not better, 24/60 < .49 stops); DupChannels (60 >= 50) -> 12 at 30;
 * Tree from min 12 channels at 60 (totalBw x 2/1 = 741.6 >= 720) -> 12;
 * connect.cc x2 -> 24 (the 24 channels of NVIDIA/nccl issue #1161's log).
 * 12 lanes: 247.2; Ring 4 x 60 = 240 (5 x 50 = 250 > 247.2 does not fit,
 * 6 x 40 = 8 x 30 = 240 equal) -> Dup 8 at 30; Tree 8 at 60; x2 -> 16. */
static const char bridge_fmt[] =
    "collsim-topo 1\nname bridge\nparam gpu_sm 90\n"
    "node cpu0 cpu numa=0\nnode mem0 hostmem numa=0\n"
    "node rp0 root numa=0 parent=cpu0\nnode rp1 root numa=0 parent=cpu0\n"
    "node gpu0 gpu numa=0 parent=rp0\nnode gpu1 gpu numa=0 parent=rp1\n"
    "link cpu0 mem0 mem bw_GBps=200 lat_ns=100\nlink rp0 cpu0 fabric bw_GBps=100 lat_ns=200\n"
    "link rp1 cpu0 fabric bw_GBps=100 lat_ns=200\nlink gpu0 rp0 pcie gen=5 width=16 lat_ns=300\n"
    "link gpu1 rp1 pcie gen=5 width=16 lat_ns=300\n"
    "link gpu0 gpu1 nvlink lanes=%d bw_GBps=238.1 lat_ns=250\n";

static void bridge_channels(int lanes, double max_bw, int search_ch, int ring_ch, int tree_ch,
                            int nch)
{
    char text[1024];
    snprintf(text, sizeof text, bridge_fmt, lanes);
    err e = {0};
    FILE *f = fmemopen(text, strlen(text), "r");
    assert_non_null(f);
    topo *t;
    if (topo_parse(f, "bridge", &t, &e))
        fail_msg("topo_parse: %s", e.msg);
    fclose(f);
    coll_req r;
    coll_req_init(&r, t);
    r.env.version = nccl_tune_version_parse("2.28");
    nccl_tune *nt = NULL;
    if (nccl_tune_new(t, 2, &r.env, &nt, &e))
        fail_msg("nccl_tune_new: %s", e.msg);
    NEAR(nt->max_bw_GBps, max_bw, 1e-3);
    assert_int_equal(nt->ring.search_channels, search_ch);
    NEAR(nt->ring.search_bw_GBps, 60, 1e-6);
    assert_int_equal(nt->ring.nchannels, ring_ch);
    NEAR(nt->ring.bw_intra_GBps, 30, 1e-6);
    assert_int_equal(nt->tree.nchannels, tree_ch);
    assert_int_equal(nt->nchannels, nch);
    nccl_tune_free(nt);
    topo_free(t);
}

static void test_bridge_lanes(void **state)
{
    (void)state;
    bridge_channels(18, 370.8, 6, 12, 12, 24);
    bridge_channels(12, 247.2, 4, 8, 8, 16);
}

/* rtxpro6000-8x-pcie5-1s: GPUs 0-3 and 4-7 on two switches under one CPU;
 * 3->4 and 7->0 go through the CPU (PHB, SHM). Ring at 40 takes 40 from
 * each direction of the two switch uplinks (48): one channel; 2 x 24 = 48
 * beats it; no DupChannels (24 < 25) -> 2 channels, 4 after connect (the
 * "4 channels on a single-socket ring" of issue 10). */
static void test_1s(void **state)
{
    (void)state;
    topo *t;
    nccl_tune *nt = make("rtxpro6000-8x-pcie5-1s", 8, NULL, &t);
    assert_int_equal(nt->p2p[3][4], 0);
    assert_int_equal(nt->path_type[3][4], PATH_PHB);
    assert_int_equal(nt->ring.nchannels, 2);
    NEAR(nt->ring.bw_intra_GBps, 24, 1e-6);
    assert_int_equal(nt->nchannels, 4);
    nccl_tune_free(nt);
    topo_free(t);
}

/* The wiring: collsim's auto on the default box follows the emulation
 * (4 KiB -> Ring/Simple, 1 channel, 96 threads) and NCCL_SHM_DISABLE=1 with
 * the default P2P level leaves PHB/SYS pairs without a transport. */
static void test_coll_auto(void **state)
{
    (void)state;
    err e = {0};
    topo *t;
    assert_int_equal(topo_load("rtxpro6000-8x-pcie5-2s", &t, &e), 0);
    coll_ctx *c = coll_ctx_new(t);
    coll_req r;
    coll_req_init(&r, t);
    r.bytes = 4096;
    coll_result res;
    assert_int_equal(coll_predict(c, &r, &res, &e), 0);
    assert_int_equal(res.algo, ALGO_RING);
    assert_int_equal(res.proto, PROTO_SIMPLE);
    assert_int_equal(res.channels, 1);
    assert_int_equal(res.threads, 96);
    assert_int_equal(coll_env_set(&r.env, "NCCL_SHM_DISABLE=1", &e), 0);
    assert_int_equal(coll_predict(c, &r, &res, &e), ERR_USAGE);
    assert_non_null(strstr(e.msg, "NCCL_SHM_DISABLE"));
    assert_int_equal(coll_env_set(&r.env, "NCCL_VERSION=2.25", &e), ERR_USAGE);
    assert_non_null(strstr(e.msg, "2.30, 2.29, 2.28, 2.27, 2.26"));
    coll_ctx_free(c);
    topo_free(t);
}

/* NVML's P2P status (paths.cc ncclTopoCheckP2p): a pair within the P2P
 * level still needs NVML's read and write status OK. GPUs 0 and 1 of the
 * 2-socket box share a switch (PIX); on 2 ranks of an AMD host the level is
 * SYS, so P2P. With `p2p gpu0 gpu1 NS` (GeForce without P2P) NVML says no:
 * the pair goes through the receiver's CPU (SHM), and NCCL_IGNORE_DISABLED_P2P
 * =2 (no NVML check) gives P2P back. On an NVLink pair (h200-2x) NCCL refuses
 * ("P2P is disabled between NVLINK connected GPUs"): ERR_USAGE, unless
 * NCCL_IGNORE_DISABLED_P2P=1, which leaves the pair to SHM. */
static void test_p2p_status(void **state)
{
    (void)state;
    err e = {0};
    topo *t;
    assert_int_equal(topo_load("rtxpro6000-8x-pcie5-2s", &t, &e), 0);
    assert_int_equal(topo_set_p2p(t, 0, 1, P2P_NS, &e), 0);
    assert_int_equal(topo_set_p2p(t, 1, 0, P2P_NS, &e), 0);
    coll_req r;
    coll_req_init(&r, t);
    nccl_tune *nt = NULL;
    assert_int_equal(nccl_tune_new(t, 2, &r.env, &nt, &e), 0);
    assert_int_equal(nt->p2p_level, PATH_SYS);
    assert_int_equal(nt->path_type[0][1], PATH_PIX);
    assert_int_equal(nt->p2p[0][1], 0);
    assert_int_equal(nt->p2p_nvml[0][1], P2P_NS);
    nccl_tune_free(nt);
    assert_int_equal(coll_env_set(&r.env, "NCCL_IGNORE_DISABLED_P2P=2", &e), 0);
    assert_int_equal(nccl_tune_new(t, 2, &r.env, &nt, &e), 0);
    assert_int_equal(nt->p2p[0][1], 1);
    nccl_tune_free(nt);
    topo_free(t);
    assert_int_equal(topo_load("h200-2x", &t, &e), 0);
    assert_int_equal(topo_set_p2p(t, 0, 1, P2P_GNS, &e), 0);
    coll_req_init(&r, t);
    assert_int_equal(nccl_tune_new(t, 2, &r.env, &nt, &e), ERR_USAGE);
    assert_non_null(strstr(e.msg, "NCCL_IGNORE_DISABLED_P2P=1"));
    assert_int_equal(coll_env_set(&r.env, "NCCL_IGNORE_DISABLED_P2P=1", &e), 0);
    assert_int_equal(nccl_tune_new(t, 2, &r.env, &nt, &e), 0);
    assert_int_equal(nt->p2p[0][1], 0);
    assert_int_equal(nt->p2p[1][0], 1);
    nccl_tune_free(nt);
    topo_free(t);
}

static void p2p(const nccl_tune *nt, uint64_t bytes, coll_proto proto, int ch)
{
    nccl_tune_p2p o;
    nccl_tune_p2p_op(nt, bytes / (uint64_t)nt->nranks, &o);
    if (o.proto != proto || o.nchannels != ch)
        fail_msg("all-to-all of %llu B: %s on %d channels, expected %s on %d",
                 (unsigned long long)bytes, coll_proto_name(o.proto), o.nchannels,
                 coll_proto_name(proto), ch);
}

/* All-to-all as NCCL enqueues it (v2.28.9-1 and v2.30.7-1 enqueue.cc
 * addP2pToPlan, scheduleP2pTasksToPlan; paths.cc ncclTopoComputeP2pChannels*;
 * init.cc computeBuffSizes). h200-8x-nvswitch, 8 ranks: 24 channels ->
 * p2pnChannels pow2Up(24) = 32; every peer NVL at 18 x 20.6 = 370.8 GB/s,
 * 370.8 / 20.6 = 18 lanes -> 2 x 18 = 36 channels, pow2Up 64, at most 32 ->
 * 32 per peer; nChannelsMin 32 halves while x 8 ranks > 32: 4. All NVLink:
 * Simple's p2p step 512 KiB. 2.28: LL when the 1 MiB / 8 = 128 KiB per peer
 * is <= 32 x 16 KiB = 512 KiB: LL, its channels from LL's 64 KiB step
 * (parts >= 8 KiB): min(4, 128K / 8K = 16) = 4, part 32 KiB <= 2 MiB -> 4.
 * 2.30: channels first from the 512 KiB step (parts >= 64 KiB): min(4, 2) =
 * 2; LL only if 128 KiB <= 2 x 16 KiB: no -> Simple on 2. 64 MiB: 8 MiB per
 * peer, 4 channels (part 2 MiB <= 16 MiB). 1 GiB: 128 MiB per peer, part
 * 32 MiB > 16 MiB -> 8 channels (16 MiB). */
static void test_alltoall_nvswitch(void **state)
{
    (void)state;
    topo *t;
    nccl_tune *nt = make("h200-8x-nvswitch", 8, NULL, &t);
    assert_int_equal(nt->p2p_nchannels, 32);
    assert_int_equal(nt->p2p_per_peer, 32);
    assert_int_equal(nt->all_nvlink, 1);
    assert_int_equal(nt->p2p_chunk_bytes, 512 << 10);
    p2p(nt, 1 << 20, PROTO_LL, 4);
    nccl_tune_free(nt);
    topo_free(t);
    const char *const v230[] = {"NCCL_VERSION=2.30", NULL};
    nt = make("h200-8x-nvswitch", 8, v230, &t);
    p2p(nt, 1 << 20, PROTO_SIMPLE, 2);
    p2p(nt, 64 << 20, PROTO_SIMPLE, 4);
    p2p(nt, 1ull << 30, PROTO_SIMPLE, 8);
    /* 64 KiB: 8 KiB per peer, 1 channel (8 K / 64 K rounds up to 1 part),
     * 8 KiB <= 1 x 16 KiB -> LL. */
    p2p(nt, 64 << 10, PROTO_LL, 1);
    nccl_tune_free(nt);
    topo_free(t);
}

/* The all-to-all's protocol rule per version (enqueue.cc addP2pToPlan in
 * each tag): 2.26, 2.27 and 2.28 count LL's threshold per
 * p2pnChannelsPerPeer (1 MiB on h200-8x-nvswitch: LL on 4 channels, as
 * test_alltoall_nvswitch derives for 2.28), 2.29 and 2.30 per channel of
 * the send (Simple on 2). */
static void test_alltoall_versions(void **state)
{
    (void)state;
    static const struct { const char *v; coll_proto p; int ch; } want[] = {
        {"NCCL_VERSION=2.26", PROTO_LL, 4},     {"NCCL_VERSION=2.27", PROTO_LL, 4},
        {"NCCL_VERSION=2.28", PROTO_LL, 4},     {"NCCL_VERSION=2.29", PROTO_SIMPLE, 2},
        {"NCCL_VERSION=2.30", PROTO_SIMPLE, 2},
    };
    for (size_t i = 0; i < sizeof want / sizeof *want; i++) {
        const char *env[] = {want[i].v, NULL};
        topo *t;
        nccl_tune *nt = make("h200-8x-nvswitch", 8, env, &t);
        p2p(nt, 1 << 20, want[i].p, want[i].ch);
        nccl_tune_free(nt);
        topo_free(t);
    }
}

/* Blackwell's per-channel Ring LL128 cap per version (tuning.cc
 * perChMaxRingLL128Bws[Blackwell][1 node]: 2 x 36.7 up to 2.28, 40.0 from
 * 2.29). h200-8x-nvswitch with SM 100 GPUs: NCCL's NVLink is 18 x
 * SM100_NVLINK_BW 40.1 = 721.8 GB/s; the ring search starts at 90 (the
 * sm100 ladder's first rung <= 721.8) and fits 8 channels (8 x 90 = 720),
 * DupChannels -> 16 at 45, in every version. Ring LL128 busBw min(.92 x 16
 * x 45 = 662.4, 16 x cap): up to 2.28 662.4 (cap 73.4), algBw x 8/14 =
 * 378.514; from 2.29 640 (cap 40), 365.714. */
static void test_blackwell_ll128_cap(void **state)
{
    (void)state;
    static const struct { const char *v; double bw; } want[] = {
        {"2.26", 378.514}, {"2.27", 378.514}, {"2.28", 378.514}, {"2.29", 365.714}, {"2.30", 365.714},
    };
    for (size_t i = 0; i < sizeof want / sizeof *want; i++) {
        err e = {0};
        topo *t;
        assert_int_equal(topo_load("h200-8x-nvswitch", &t, &e), 0);
        topo_params_mut(t)->gpu_sm = 100;
        coll_req r;
        coll_req_init(&r, t);
        r.env.version = nccl_tune_version_parse(want[i].v);
        nccl_tune *nt = NULL;
        assert_int_equal(nccl_tune_new(t, 8, &r.env, &nt, &e), 0);
        NEAR(nt->max_bw_GBps, 721.8, 1e-3);
        assert_int_equal(nt->ring.nchannels, 16);
        NEAR(nt->ring.bw_intra_GBps, 45, 1e-6);
        NEAR(nt->bw_GBps[COLL_ALLREDUCE][RING][LL128], want[i].bw, 1e-2);
        nccl_tune_free(nt);
        topo_free(t);
    }
}

/* rtxpro6000-8x-pcie5-2s, 8 ranks: 2 channels (test_2s_default) ->
 * p2pnChannels 2; PCI peers 2 channels each -> 2 per peer; nChannelsMin 1
 * (2 x 8 > 2); not all NVLink: 128 KiB step. 2.28: 1 MiB -> 128 KiB per
 * peer > 2 x 16 KiB: Simple, min(1, 128K / 16K) = 1 channel; 64 KiB -> 8 KiB
 * per peer <= 32 KiB: LL on 1. 2.30: the same two (8 KiB <= 1 x 16 KiB). */
static void test_alltoall_pcie(void **state)
{
    (void)state;
    topo *t;
    nccl_tune *nt = make("rtxpro6000-8x-pcie5-2s", 8, NULL, &t);
    assert_int_equal(nt->p2p_nchannels, 2);
    assert_int_equal(nt->p2p_per_peer, 2);
    assert_int_equal(nt->p2p_chunk_bytes, 128 << 10);
    p2p(nt, 1 << 20, PROTO_SIMPLE, 1);
    p2p(nt, 64 << 10, PROTO_LL, 1);
    /* 256 KiB: 32 KiB per peer <= 2 x 16 KiB under 2.28's rule: LL. */
    p2p(nt, 256 << 10, PROTO_LL, 1);
    nccl_tune_free(nt);
    topo_free(t);
    const char *const v230[] = {"NCCL_VERSION=2.30", NULL};
    nt = make("rtxpro6000-8x-pcie5-2s", 8, v230, &t);
    /* 2.30: 32 KiB per peer > 1 channel x 16 KiB: Simple. */
    p2p(nt, 256 << 10, PROTO_SIMPLE, 1);
    p2p(nt, 64 << 10, PROTO_LL, 1);
    nccl_tune_free(nt);
    topo_free(t);
}

/* More ranks than NCCL's 72 local ranks: nvswitch-128 takes the graph of the
 * search on GPUs 0-71, the same as nvswitch-72's, and tunes it for 128
 * ranks: ring allreduce nsteps 2 x 127 = 254, Simple latency 8.4 + 254 x 3.4
 * (NVLink row) = 872.0 us; bandwidth x 128 / 254 of nvswitch-72's x 142 / 72. */
static void test_beyond_local_ranks(void **state)
{
    (void)state;
    topo *t72, *t;
    nccl_tune *a = make("nvswitch-72", 72, NULL, &t72);
    nccl_tune *b = make("nvswitch-128", 128, NULL, &t);
    assert_int_equal(a->searched, 72);
    assert_int_equal(b->searched, 72);
    assert_int_equal(b->nranks, 128);
    assert_int_equal(b->ring.nchannels, a->ring.nchannels);
    NEAR(b->ring.bw_intra_GBps, a->ring.bw_intra_GBps, 1e-6);
    assert_int_equal(b->nchannels, a->nchannels);
    assert_int_equal(b->hw_nvlink[RING], 1);
    NEAR(b->lat_us[COLL_ALLREDUCE][RING][SIMPLE], 8.4 + 254 * 3.4, 1e-3);
    NEAR(b->bw_GBps[COLL_ALLREDUCE][RING][SIMPLE],
         a->bw_GBps[COLL_ALLREDUCE][RING][SIMPLE] * (128.0 / 254) / (72.0 / 142), 1e-2);
    nccl_tune_free(a);
    nccl_tune_free(b);
    topo_free(t72);
    topo_free(t);
}

/* The search's shortcuts (candidates refused whatever happens, tries that
 * complete nothing answered from an identical earlier one, NVSwitch tries
 * replayed chain by chain) are exact by construction, so every field of
 * the result must equal the step-by-step search's (search_every_step), its
 * search_digest included (each try's steps, the time left at each completed
 * channel, the links' figures at the end), on NVSwitch and PCIe presets, at
 * several P2P levels and versions. */
static void test_search_shortcuts(void **state)
{
    (void)state;
    static const struct { const char *preset; int nranks; } cases[] = {
        {"nvswitch-3", 3},   {"nvswitch-8", 8},      {"nvswitch-16", 16},
        {"nvswitch-64", 64}, {"h200-8x-nvswitch", 8}, {"h200-2x", 2},
        {"pcie-8", 8},       {"pcie-16", 16},         {"pcie-16-star", 16},
        {"pcie-64", 64},     {"rtxpro6000-8x-pcie5-2s", 8}, {"rtxpro6000-8x-pcie5-1s", 8},
    };
    static const char *const envs[][2] = {{NULL}, {"NCCL_P2P_LEVEL=SYS", NULL},
                                          {"NCCL_P2P_LEVEL=PIX", NULL}};
    for (size_t c = 0; c < sizeof cases / sizeof cases[0]; c++)
        for (size_t v = 0; v < 3; v++)
            for (int ver = 0; ver < nccl_tune_nversions(); ver += 4) {
                /* The step-by-step search is slow there; pcie-64 at SYS
                 * (every pair one type both ways: its tree's tries answered
                 * from the ring's) is collsim coll's bench case. */
                if (cases[c].nranks > 16 && (ver > 0 || (v > 0 && !(v == 1 &&
                                                                   !strcmp(cases[c].preset,
                                                                           "pcie-64")))))
                    continue;
                err e = {0};
                topo *t;
                assert_int_equal(topo_load(cases[c].preset, &t, &e), 0);
                coll_req r;
                coll_req_init(&r, t);
                r.env.version = ver;
                for (const char *const *x = envs[v]; *x; x++)
                    assert_int_equal(coll_env_set(&r.env, *x, &e), 0);
                nccl_tune *fast = NULL, *slow = NULL;
                assert_int_equal(nccl_tune_new(t, cases[c].nranks, &r.env, &fast, &e), 0);
                r.env.search_every_step = 1;
                assert_int_equal(nccl_tune_new(t, cases[c].nranks, &r.env, &slow, &e), 0);
                if (memcmp(fast, slow, sizeof *fast))
                    fail_msg("%s, env %zu, version %s: the shortcuts changed the result "
                             "(ring %d ch at %.2f, step by step %d ch at %.2f)",
                             cases[c].preset, v, nccl_tune_version_name(ver),
                             fast->ring.nchannels, (double)fast->ring.bw_intra_GBps,
                             slow->ring.nchannels, (double)slow->ring.bw_intra_GBps);
                nccl_tune_free(fast);
                nccl_tune_free(slow);
                topo_free(t);
            }
}

/* The NVSwitch replays (use counts per link, bit masks of the links at
 * their cap, whole loops of chains that complete nothing counted in one
 * sum) are exact by construction too: on GPUs whose NVLinks have different
 * lane counts (so that links reach their cap at different channels) every
 * field must equal the step-by-step search's, for each count and ladder. */
static void test_search_shortcuts_mixed_nvlinks(void **state)
{
    (void)state;
    static const int sizes[] = {3, 5, 8, 13, 31, 64, 72};
    static const int sms[] = {80, 90, 100};
    /* GPU i's lanes: every lane count from 1 to 18 in turn, all 18, or two groups. */
    for (int pat = 0; pat < 3; pat++)
        for (size_t k = 0; k < sizeof sizes / sizeof sizes[0]; k++)
            for (size_t m = 0; m < sizeof sms / sizeof sms[0]; m++) {
                int n = sizes[k];
                char *text = NULL;
                size_t len = 0;
                FILE *f = open_memstream(&text, &len);
                assert_non_null(f);
                fprintf(f, "collsim-topo 1\nparam gpu_sm %d\nnode c cpu numa=0\n"
                        "node m hostmem numa=0\nnode nv nvswitch\n"
                        "link c m mem bw_GBps=100 lat_ns=10\n", sms[m]);
                for (int i = 0; i < n; i++) {
                    int lanes = pat == 0 ? 1 + (i * 7) % 18 : pat == 1 ? 18 : i % 3 ? 18 : 12;
                    fprintf(f, "node r%d root parent=c\nnode g%d gpu parent=r%d\n"
                            "link r%d c fabric bw_GBps=50 lat_ns=10\n"
                            "link g%d r%d pcie gen=5 width=16 lat_ns=100\n"
                            "link g%d nv nvlink lanes=%d bw_GBps=%d lat_ns=250\n",
                            i, i, i, i, i, i, i, lanes, 20 * lanes);
                }
                fclose(f);
                FILE *in = fmemopen(text, len, "r");
                assert_non_null(in);
                err e = {0};
                topo *t = NULL;
                int rc = topo_parse(in, "mixed", &t, &e);
                fclose(in);
                free(text);
                if (rc)
                    fail_msg("topo_parse: %s", e.msg);
                for (int ver = 0; ver < nccl_tune_nversions(); ver += 2) {
                    coll_req r;
                    coll_req_init(&r, t);
                    r.env.version = ver;
                    nccl_tune *fast = NULL, *slow = NULL;
                    assert_int_equal(nccl_tune_new(t, n, &r.env, &fast, &e), 0);
                    r.env.search_every_step = 1;
                    assert_int_equal(nccl_tune_new(t, n, &r.env, &slow, &e), 0);
                    if (memcmp(fast, slow, sizeof *fast))
                        fail_msg("%d GPUs, lanes %d, SM %d, version %s: the shortcuts changed "
                                 "the result (ring %d ch at %.2f, tree %d, step by step %d ch "
                                 "at %.2f, tree %d)", n, pat, sms[m],
                                 nccl_tune_version_name(ver), fast->ring.nchannels,
                                 (double)fast->ring.bw_intra_GBps, fast->tree.nchannels,
                                 slow->ring.nchannels, (double)slow->ring.bw_intra_GBps,
                                 slow->tree.nchannels);
                    nccl_tune_free(fast);
                    nccl_tune_free(slow);
                }
                topo_free(t);
            }
}


/* A tree's try answered from a ring's (no NVSwitch, every pair's reverse
 * type at most its own) only where the ring's completed nothing and never
 * reached the chains' last GPU. Two AMD sockets (NCCL's 16 GB/s between
 * them), g GPUs each under their own root port, at SYS: from speed 12 down
 * (SM 80's ladder) a ring's chain crosses the sockets once, reaches its last
 * GPU and cannot close (a second crossing: 24 > 16), where a tree completes
 * with its one crossing, so those tries must run; every field (the
 * search_digest too) equals the step-by-step search's, for 2, 4 and 8 GPUs a
 * socket, both P2P levels and every second version. (test_search_shortcuts
 * compares pcie-64 at SYS, where the tree's tries are answered so, too.) */
static void test_search_tree_from_ring(void **state)
{
    (void)state;
    /* Where it applies, the tree's tries are answered from the ring's:
     * pcie-64 at SYS (collsim coll's bench case: nothing fits at any speed,
     * so 7 speeds x 22 of the tree's tries), none with NVSwitches. */
    static const struct { const char *preset, *env; unsigned long least, most; } uses[] = {
        {"pcie-64", "NCCL_P2P_LEVEL=SYS", 150, 1000}, {"nvswitch-64", NULL, 0, 0}};
    for (size_t u = 0; u < sizeof uses / sizeof uses[0]; u++) {
        err e = {0};
        topo *t;
        assert_int_equal(topo_load(uses[u].preset, &t, &e), 0);
        coll_req r;
        coll_req_init(&r, t);
        if (uses[u].env)
            assert_int_equal(coll_env_set(&r.env, uses[u].env, &e), 0);
        nccl_tune *nt = NULL;
        unsigned long before = nccl_tune_tree_tries_from_ring();
        assert_int_equal(nccl_tune_new(t, topo_ngpus(t), &r.env, &nt, &e), 0);
        unsigned long did = nccl_tune_tree_tries_from_ring() - before;
        if (did < uses[u].least || did > uses[u].most)
            fail_msg("%s: %lu tree tries from the ring's", uses[u].preset, did);
        nccl_tune_free(nt);
        topo_free(t);
    }
    static const int per[] = {2, 4, 8};
    for (size_t k = 0; k < sizeof per / sizeof per[0]; k++)
        for (int sys = 0; sys < 2; sys++)
            for (int ver = 0; ver < nccl_tune_nversions(); ver += 2) {
                char *text = NULL;
                size_t len = 0;
                FILE *f = open_memstream(&text, &len);
                assert_non_null(f);
                fprintf(f, "collsim-topo 1\nparam gpu_sm 80\nparam cpu amd\n");
                for (int c = 0; c < 2; c++) {
                    fprintf(f, "node cpu%d cpu numa=%d\nnode mem%d hostmem numa=%d\n"
                            "link cpu%d mem%d mem bw_GBps=200 lat_ns=100\n", c, c, c, c, c, c);
                    for (int i = 0; i < per[k]; i++) {
                        int g = c * per[k] + i;
                        fprintf(f, "node rp%d root numa=%d parent=cpu%d\n"
                                "node gpu%d gpu numa=%d parent=rp%d\n"
                                "link rp%d cpu%d fabric bw_GBps=100 lat_ns=200\n"
                                "link gpu%d rp%d pcie gen=5 width=16 lat_ns=300\n",
                                g, c, c, g, c, g, g, c, g, g);
                    }
                }
                fprintf(f, "link cpu0 cpu1 socket bw_GBps=83.2 lat_ns=80\n");
                fclose(f);
                FILE *in = fmemopen(text, len, "r");
                assert_non_null(in);
                err e = {0};
                topo *t = NULL;
                int rc = topo_parse(in, "sockets", &t, &e);
                fclose(in);
                free(text);
                if (rc)
                    fail_msg("topo_parse: %s", e.msg);
                coll_req r;
                coll_req_init(&r, t);
                r.env.version = ver;
                if (sys)
                    assert_int_equal(coll_env_set(&r.env, "NCCL_P2P_LEVEL=SYS", &e), 0);
                nccl_tune *fast = NULL, *slow = NULL;
                int n = 2 * per[k];
                assert_int_equal(nccl_tune_new(t, n, &r.env, &fast, &e), 0);
                r.env.search_every_step = 1;
                assert_int_equal(nccl_tune_new(t, n, &r.env, &slow, &e), 0);
                if (memcmp(fast, slow, sizeof *fast))
                    fail_msg("%d GPUs, sys %d, version %s: ring %d ch at %.2f, tree %d ch at "
                             "%.2f; step by step %d ch at %.2f, %d at %.2f", n, sys,
                             nccl_tune_version_name(ver), fast->ring.nchannels,
                             (double)fast->ring.bw_intra_GBps, fast->tree.nchannels,
                             (double)fast->tree.bw_intra_GBps, slow->ring.nchannels,
                             (double)slow->ring.bw_intra_GBps, slow->tree.nchannels,
                             (double)slow->tree.bw_intra_GBps);
                nccl_tune_free(fast);
                nccl_tune_free(slow);
                topo_free(t);
            }
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_versions),     cmocka_unit_test(test_2s_default),
        cmocka_unit_test(test_2s_seeds),     cmocka_unit_test(test_2s_version_and_min),
        cmocka_unit_test(test_2s_ll128_named),
        cmocka_unit_test(test_2s_two_gpus),  cmocka_unit_test(test_h200_8),
        cmocka_unit_test(test_h200_two),     cmocka_unit_test(test_bridge_lanes),
        cmocka_unit_test(test_1s),
        cmocka_unit_test(test_coll_auto),    cmocka_unit_test(test_p2p_status),
        cmocka_unit_test(test_ladders),      cmocka_unit_test(test_spread_versions),
        cmocka_unit_test(test_alltoall_nvswitch), cmocka_unit_test(test_alltoall_pcie),
        cmocka_unit_test(test_alltoall_versions), cmocka_unit_test(test_blackwell_ll128_cap),
        cmocka_unit_test(test_beyond_local_ranks), cmocka_unit_test(test_search_shortcuts),
        cmocka_unit_test(test_search_shortcuts_mixed_nvlinks),
        cmocka_unit_test(test_search_tree_from_ring),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
