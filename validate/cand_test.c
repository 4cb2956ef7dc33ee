/* Unit tests of the calibration candidates: what a point's case looks like,
 * which keys the data touch, the starts read from the data, and the value
 * a refused candidate keeps. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <math.h>
#include <stdio.h>
#include <string.h>
#include <cmocka.h>

#include "validate/calib.h"
#include "validate/cand.h"
#include "tests/unit/meas_text.h"

/* On rtxpro6000-8x-pcie5-1s (GPUs 0-3 behind sw0, 4-7 behind sw1, both
 * switches on root ports of cpu0). */
static const char text[] =
    "# format: collsim-meas 1\n# kind: p2p\n"
    "case,pattern,op,flow,src,dst,bytes,time_us,bw_GBps\n"
    /* case 0: one flow 0 -> 1 inside sw0 */
    "0,pair,copy-write,0,0,1,268435456,4768,56.3\n"
    /* case 1: 0 -> 4 and 1 -> 5 at once, totals only: one aggregate point */
    "1,pair,copy-write,0,0,4,268435456,nan,nan\n"
    "1,pair,copy-write,1,1,5,268435456,nan,nan\n"
    "1,pair,copy-write,-1,*,*,536870912,9519,56.4\n"
    /* case 2: a latency probe across the switches */
    "2,latency,write,0,0,4,4,1.071,0.003735\n";

static int find(const cand *c, int n, const char *key)
{
    for (int j = 0; j < n; j++)
        if (!strcmp(c[j].key, key))
            return j;
    return -1;
}

static void test_point_info_and_candidates(void **state)
{
    (void)state;
    topo *t;
    err e = {0};
    assert_int_equal(topo_load("rtxpro6000-8x-pcie5-1s", &t, &e), 0);
    meas_set *m = meas_text("p.csv", text);
    pts *p;
    assert_int_equal(pts_build(&m, 1, t, NULL, &p, &e), 0);
    assert_int_equal(pts_count(p), 3);
    cand c[CAND_MAX];
    cand_point info[3];
    int n = 0;
    cand_point_info(p, t, c, 0, info);
    /* Case 0: 1 flow, 1 source, 1 destination, 256 MiB in 4768 us =
     * 268435456 / 4768e3 = 56.300 GB/s. */
    assert_int_equal(info[0].nflows, 1);
    assert_int_equal(info[0].nsrc, 1);
    assert_int_equal(info[0].ndst, 1);
    assert_true(fabs(info[0].bw_GBps - 268435456 / 4768e3) < 1e-9);
    assert_false(info[0].latency);
    /* Case 1 (the aggregate point): 2 flows from 2 GPUs to 2, the case's
     * total 2 x 256 MiB in 9519 us = 56.40 GB/s. */
    assert_int_equal(info[1].nflows, 2);
    assert_int_equal(info[1].nsrc, 2);
    assert_int_equal(info[1].ndst, 2);
    assert_true(fabs(info[1].bw_GBps - 2 * 268435456 / 9519e3) < 1e-9);
    assert_true(info[2].latency);
    /* No candidate named yet: no class bits. */
    assert_true(info[0].cls == 0 && info[1].cls == 0);

    calib_nccl *nc;   /* no coll set: no NCCL points */
    assert_int_equal(calib_nccl_build(&m, 1, t, &nc, &e), 0);
    assert_int_equal(calib_nccl_count(nc), 0);
    assert_int_equal(cand_build(t, p, nc, info, c, &n, &e), 0);
    /* The routes cross three link classes (GPU-switch, switch-root port,
     * root port-CPU): their 3 bandwidths come first, then their 3
     * latencies. */
    char cls[48], key[80];
    calib_link_class(LINK_PCIE, TOPO_GPU, TOPO_SWITCH, cls);
    snprintf(key, sizeof key, "link.%s.bw_GBps", cls);
    int gsw = find(c, n, key);
    assert_true(gsw >= 0 && gsw < 3);
    assert_true(c[gsw].link);
    /* Its 8 links are all 56.3 GB/s: one topology value, the start. */
    assert_true(fabs(c[gsw].topo_value - 56.3) < 1e-9 && fabs(c[gsw].start - 56.3) < 1e-9);
    for (int j = 0; j < 6; j++)
        assert_true(c[j].link && strstr(c[j].key, j < 3 ? ".bw_GBps" : ".lat_ns"));
    /* Copy-engine writes: copy_setup_us; kernel writes (the latency row):
     * kernel_base_us and cta_store_GBps; no read, host or launch data: none
     * of their keys. */
    assert_true(find(c, n, "copy_setup_us") >= 0);
    assert_true(find(c, n, "kernel_base_us") >= 0);
    assert_true(find(c, n, "cta_store_GBps") >= 0);
    assert_int_equal(find(c, n, "read_tags"), -1);
    assert_int_equal(find(c, n, "cta_load_GBps"), -1);
    assert_int_equal(find(c, n, "hostmem_GBps"), -1);
    assert_int_equal(find(c, n, "launch_us"), -1);
    assert_int_equal(find(c, n, "arb_collapse_read_GBps"), -1);
    /* The preset has write collapse off (0), but case 1 has 2 GPUs behind
     * one switch writing at once: a candidate that reverts to 0 (off),
     * starting from the lowest such total rate, 56.40 GB/s. */
    int arb = find(c, n, "arb_collapse_GBps");
    assert_true(arb >= 0);
    assert_true(c[arb].off);
    assert_true(fabs(c[arb].start - 2 * 268435456 / 9519e3) < 1e-9);
    assert_int_equal(n, 6 + 4);

    /* With the candidates named, case 0 (0 -> 1 inside sw0) has only the
     * GPU-switch class: bits gsw and gsw + 3 (its latency). */
    cand_point_info(p, t, c, n, info);
    assert_true(info[0].cls == ((1ull << gsw) | (1ull << (gsw + 3))));
    /* Case 2 (0 -> 4) crosses all three classes: the 6 link bits. */
    assert_true(info[2].cls == 0x3f);

    /* Starts from the data. Predicted at the start: the latency point at
     * 2 x its measured 1.071 us -> link latencies x 0.5 (outside 0.8-1.25);
     * the bandwidths: case 0 is a single 256 MiB flow at 56.30 GB/s through
     * GPU-switch links: a class start below that is raised to it. */
    c[gsw].start = 40;
    double pred_start[3] = {4768, 9519, 2 * 1.071}, data[CAND_MAX];
    char why[240];
    assert_int_equal(cand_data_starts(p, info, pred_start, c, n, data, why, sizeof why), 1);
    assert_true(fabs(data[gsw] - 268435456 / 4768e3) < 1e-9);
    for (int j = 3; j < 6; j++)
        assert_true(fabs(data[j] - c[j].start * 0.5) < 1e-9);
    assert_true(data[arb] == c[arb].start);   /* not a link class: untouched */
    assert_string_equal(why, "link latencies x 0.5, to the smallest measured latency; "
                             "1 link bandwidth raised to the plateau measured through it");
    /* Predicted within 25% and no class below its plateau: nothing read. */
    c[gsw].start = 56.3;
    pred_start[2] = 1.071 * 1.2;
    assert_int_equal(cand_data_starts(p, info, pred_start, c, n, data, why, sizeof why), 0);
    assert_string_equal(why, "");

    /* The fit's parameters: the active candidates in order, map -1 ended. */
    fit_param fp[CAND_MAX];
    int map[CAND_MAX + 1];
    c[1].active = 0;
    assert_int_equal(cand_load_params(c, n, map, fp), n - 1);
    assert_int_equal(map[0], 0);
    assert_int_equal(map[1], 2);
    assert_int_equal(map[n - 1], -1);
    assert_string_equal(fp[1].name, c[2].key);

    calib_nccl_free(nc);
    pts_free(p);
    meas_free(m);
    topo_free(t);
}

static void test_refused(void **state)
{
    (void)state;
    cand q = {.topo_value = 7, .lo = 0, .hi = 100};
    /* Ran to zero: 0 (or the domain's floor when that is positive). */
    assert_true(cand_refused_value(&q, FIT_TO_ZERO, 3) == 0);
    q.lo = 1e-3;
    assert_true(cand_refused_value(&q, FIT_TO_ZERO, 3) == 1e-3);
    /* No influence at the solution: where the fit left it. */
    assert_true(cand_refused_value(&q, FIT_NO_INFLUENCE, 3) == 3);
    assert_true(cand_refused_value(&q, FIT_NO_INFLUENCE, NAN) == 7);
    /* Otherwise the topology's; a rule the topology has off stays 0. */
    assert_true(cand_refused_value(&q, FIT_DEPENDENT, 3) == 7);
    q.off = 1;
    assert_true(cand_refused_value(&q, FIT_NO_INFLUENCE, 3) == 0);
    assert_true(cand_refused_value(&q, FIT_TO_ZERO, 3) == 0);
    /* Leaving the fit at another value than the topology's moves it. */
    q.off = 0;
    q.active = 1;
    cand_leave_out(&q, 3, "kept: trades off with %s", "x");
    assert_false(q.active);
    assert_true(q.moved && q.kept == 3);
    assert_string_equal(q.why, "kept: trades off with x");
    cand_leave_out(&q, 7, "kept: %s", "y");
    assert_false(q.moved);
    q.probe_felt = 0;
    assert_string_equal(cand_no_influence_text(&q), "no influence on the data");
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_point_info_and_candidates),
        cmocka_unit_test(test_refused),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
