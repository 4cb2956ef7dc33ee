/* The NVLS builder (coll_nvls.c) on a hand-built NVSwitch box, checked
 * against closed forms derived by hand. The box: n GPUs of SM 90, each with
 * one link of 18 lanes to one NVSwitch, B bytes/s per direction and latency
 * h, and a PCIe link to the host that no NVLS transfer uses. NCCL rates every link 18 x 20.6 = 370.8 GB/s, as on
 * h200-8x-nvswitch, so its NVLS graph is the one nccl_nvls_test derives. */
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <cmocka.h>

#include "models/coll/coll.h"
#include "tests/unit/fixture.h"
#include "tests/unit/near.h"

#define B_BPS 100e9     /* 100 GB/s per direction */
#define HOP_PS 500000   /* 0.5 us GPU <-> NVSwitch */
#define EFF 0.85        /* tuning.cc nvlsEfficiency, Hopper */

static topo *box(int n)
{
    err e = {0};
    topo *t = topo_new("nvs-box");
    int sw = topo_add_node(t, "nvs0", TOPO_NVSWITCH, -1, &e);
    int cpu = topo_add_node(t, "cpu0", TOPO_CPU, 0, &e);
    for (int i = 0; i < n; i++) {
        char name[16];
        snprintf(name, sizeof name, "gpu%d", i);
        int g = topo_add_node(t, name, TOPO_GPU, 0, &e);
        assert_int_equal(topo_set_parent(t, g, cpu, &e), 0);
        topo_link l = {.a = g, .b = sw, .kind = LINK_NVLINK, .nvlinks = 18, .bw_Bps = B_BPS,
                       .lat_ps = HOP_PS};
        assert_true(topo_add_link(t, &l, &e) >= 0);
        topo_link pl = {.a = g, .b = cpu, .kind = LINK_PCIE, .pcie_gen = 5, .pcie_width = 16,
                        .lat_ps = HOP_PS};
        assert_true(topo_add_link(t, &pl, &e) >= 0);
    }
    topo_params_mut(t)->gpu_sm = 90;
    if (topo_finish(t, "box", &e))
        fail_msg("topo_finish: %s", e.msg);
    return t;
}

static double run_us(topo *t, coll_kind k, uint64_t bytes, coll_algo a)
{
    err e = {0};
    coll_req r;
    coll_req_init(&r, t);
    r.kind = k;
    r.bytes = bytes;
    r.algo = a;
    assert_int_equal(coll_env_set(&r.env, "NCCL_NVLS_ENABLE=1", &e), 0);
    coll_result res = fixture_predict(t, &r, 0);
    if (a == ALGO_NVLS)
        assert_int_equal(res.algo, ALGO_NVLS);
    assert_int_equal(res.channels, 16);
    return (double)res.time_ps / 1e6;
}

/* Allreduce of 64 MiB on 4 GPUs: 16 channels x 4 heads = 64 ops, so the
 * chunk is 64 KiB (64 MiB < 64 x 64 x 128 KiB; not < 8 x 64 x 64 KiB);
 * 4 MiB per channel in loops of 4 x 64 KiB: 16 loops. Per loop and channel
 * each link carries (4 + 1) x 64 KiB = 327680 bytes each way at B x EFF / 16
 * = 5.3125 GB/s: 61.68 us, plus the hop's latency and one Simple step.
 * Total: start + 16 x (61.68 + 0.5 + step). */
static void test_allreduce(void **state)
{
    (void)state;
    topo *t = box(4);
    const topo_params *p = topo_params_get(t);
    double start = (double)p->nccl_start_ps[TOPO_NCCL_SIMPLE] / 1e6;
    double step = (double)p->nccl_step_ps[TOPO_NCCL_SIMPLE] / 1e6;
    double x = 5.0 * 65536 / (B_BPS * EFF / 16) * 1e6;
    NEAR(run_us(t, COLL_ALLREDUCE, 64ULL << 20, ALGO_NVLS), start + 16 * (x + 0.5 + step), 0.05);
    topo_free(t);
}

/* All-gather of 64 MiB (the output) on 4 GPUs: the same 16 loops of 4
 * chunks per channel; each GPU stores its chunk (1 x 64 KiB up) and receives
 * every head's (4 x 64 KiB down): the down leg sets the pace, 4 x 65536 /
 * 5.3125 GB/s = 49.34 us. Reduce-scatter is the mirror (4 up, 1 down). */
static void test_gather_scatter(void **state)
{
    (void)state;
    topo *t = box(4);
    const topo_params *p = topo_params_get(t);
    double start = (double)p->nccl_start_ps[TOPO_NCCL_SIMPLE] / 1e6;
    double step = (double)p->nccl_step_ps[TOPO_NCCL_SIMPLE] / 1e6;
    double x = 4.0 * 65536 / (B_BPS * EFF / 16) * 1e6;
    double want = start + 16 * (x + 0.5 + step);
    NEAR(run_us(t, COLL_ALLGATHER, 64ULL << 20, ALGO_NVLS), want, 0.05);
    NEAR(run_us(t, COLL_REDUCESCATTER, 64ULL << 20, ALGO_NVLS), want, 0.05);
    topo_free(t);
}

/* Large allreduces tend to busbw = 2(n-1)/n x B x EFF x n/(n+1): 8 GPUs
 * at 100 GB/s: 1.75 x 85 x 8/9 = 132.2 GB/s; 1 GiB (64 loops per channel of
 * 8 x 128 KiB, 1.18 MB per link each way: 222 us each, 1.3 us of latency
 * and step) is within 1% of it. The ring over the same links moves
 * 2(n-1)/n S per link: busbw at most B = 100. */
static void test_beats_ring(void **state)
{
    (void)state;
    topo *t = box(8);
    double s = (double)(1ULL << 30);
    double bus = 1.75 * s / (run_us(t, COLL_ALLREDUCE, 1ULL << 30, ALGO_NVLS) * 1e3);
    NEAR(bus, 1.75 * 85.0 * 8.0 / 9.0, 0.01 * 132.2);
    err e = {0};
    coll_ctx *c = coll_ctx_new(t);
    coll_req r;
    coll_req_init(&r, t);
    r.bytes = 1ULL << 30;
    r.algo = ALGO_RING;
    coll_result res;
    assert_int_equal(coll_predict(c, &r, &res, &e), 0);
    assert_true(1.75 * s / ((double)res.time_ps / 1e3) <= 100.0);
    coll_ctx_free(c);
    topo_free(t);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_allreduce),
        cmocka_unit_test(test_gather_scatter),
        cmocka_unit_test(test_beats_ring),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
