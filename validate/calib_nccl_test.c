/* Unit tests of the NCCL runtime-cost points: which coll files and rows
 * isolate a cost, and what the model predicts for them. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <math.h>
#include <stdio.h>
#include <string.h>
#include <cmocka.h>

#include "validate/calib.h"
#include "validate/calib_nccl.h"
#include "tests/unit/meas_text.h"

#define HEAD                                                                              \
    "# format: collsim-meas 1\n# kind: coll\n# collective: allreduce\n# ranks: %s\n"     \
    "# command: hwcheck coll allreduce --env NCCL_ALGO=Ring --env NCCL_PROTO=LL\n"        \
    "size_bytes,count,dtype,algo,proto,channels,time_us,algbw_GBps,busbw_GBps,impl,graph," \
    "wrong\n"

static void test_points_and_predictions(void **state)
{
    (void)state;
    char text[2048];
    snprintf(text, sizeof text,
             HEAD "8,4,bf16,ring,LL,0,12.6,0,0,nccl,0,0\n"
                  "8,4,bf16,ring,LL,0,7.3,0,0,nccl,1,0\n"
                  "1048576,524288,bf16,ring,LL,0,40,0,0,nccl,0,0\n"
                  "16384,8192,bf16,ring,LL,0,14,0,0,nccl,0,0\n",
             "2");
    meas_set *m = meas_text("ar.csv", text);
    topo *t;
    err e = {0};
    assert_int_equal(topo_load("h200-2x", &t, &e), 0);
    calib_nccl *c;
    assert_int_equal(calib_nccl_build(&m, 1, t, &c, &e), 0);
    /* 8 B eager and graph are points; 1 MiB is above 64 KiB, and 16 KiB runs
     * on 2 channels (NCCL drops channels while bytes < nc x 512 threads x
     * 8 B x 2 ranks: 16384 keeps nc = 2): both left out. */
    assert_int_equal((int)calib_nccl_count(c), 2);
    assert_int_equal((int)calib_nccl_left_out(c), 2);
    assert_true(calib_nccl_has(c, PROTO_LL, 0) && calib_nccl_has(c, PROTO_LL, 1));
    assert_false(calib_nccl_has(c, PROTO_SIMPLE, 0));
    assert_string_equal(calib_nccl_at(c, 1)->label, "allreduce ring(LL) 8 B graph");
    /* The device time of 8 B with h200-2x's fitted LL start 4.615 us and
     * 578.3 ns a hop was 7.332 us (the start, 2 steps and the last receive,
     * calib_test, four hop latencies on the way); with the preset's 4.253 us
     * and 678.6 ns: 7.332 - 0.362 + 4 x 0.1003 = 7.371 us, above the
     * graph node (0.501): the graph point predicts it. The preset's eager
     * call, hwcheck's one thread driving both ranks, 2 x (launch 3.16 +
     * nccl_group 2.515 + its one call 0.261) = 11.872 us of host work, is
     * above it: the eager point is host-bound, exactly 11.872. With nccl_call_us 12
     * the eager point is exactly 12 us; the graph point stays at the device
     * time. */
    double pred[2];
    assert_int_equal(calib_nccl_predict(c, t, pred, &e), 0);
    assert_true(fabs(pred[0] - 11.872) < 1e-9);
    assert_true(pred[1] > 7.36 && pred[1] < 7.38);
    double device = pred[1];
    calib *k;
    const char *prof = "collsim-calib 1\nnccl_call_us 12\n";
    FILE *f = fmemopen((void *)prof, strlen(prof), "r");
    assert_int_equal(calib_parse(f, "k.calib", &k, &e), 0);
    fclose(f);
    topo *u;
    assert_int_equal(calib_apply(k, t, &u, &e), 0);
    assert_int_equal(calib_nccl_predict(c, u, pred, &e), 0);
    assert_true(pred[0] == 12.0);
    assert_true(pred[1] == device);
    calib_free(k);
    topo_free(u);
    calib_nccl_free(c);
    meas_free(m);
    topo_free(t);
}

static void test_refusals(void **state)
{
    (void)state;
    topo *t;
    err e = {0};
    assert_int_equal(topo_load("h200-2x", &t, &e), 0);
    calib_nccl *c;
    char text[1024];
    /* NCCL's own choice (auto): an outcome, not a microbenchmark. */
    snprintf(text, sizeof text, HEAD "8,4,bf16,auto,auto,0,19.5,0,0,nccl,0,0\n", "2");
    meas_set *m = meas_text("ar.csv", text);
    assert_int_equal(calib_nccl_build(&m, 1, t, &c, &e), ERR_USAGE);
    assert_non_null(strstr(e.msg, "ar.csv:7: the algorithm is not forced to ring"));
    assert_non_null(strstr(e.msg, "point-to-point data only"));
    meas_free(m);
    /* Four ranks: other step counts than the 2-rank microbenchmark. */
    snprintf(text, sizeof text, HEAD "8,4,bf16,ring,LL,0,12,0,0,nccl,0,0\n", "4");
    m = meas_text("ar.csv", text);
    assert_int_equal(calib_nccl_build(&m, 1, t, &c, &e), ERR_USAGE);
    assert_non_null(strstr(e.msg, "not 2 real GPUs"));
    meas_free(m);
    /* A custom kernel is not NCCL. */
    snprintf(text, sizeof text, HEAD "8,4,bf16,oneshot,-,0,5,0,0,oneshot,0,0\n", "2");
    m = meas_text("ar.csv", text);
    assert_int_equal(calib_nccl_build(&m, 1, t, &c, &e), ERR_USAGE);
    assert_non_null(strstr(e.msg, "not NCCL"));
    meas_free(m);
    /* Only large rows: nothing isolates the fixed costs. */
    snprintf(text, sizeof text, HEAD "1048576,524288,bf16,ring,LL,0,40,0,0,nccl,0,0\n", "2");
    m = meas_text("ar.csv", text);
    assert_int_equal(calib_nccl_build(&m, 1, t, &c, &e), ERR_USAGE);
    assert_non_null(strstr(e.msg, "no row of at most that size runs on one channel"));
    meas_free(m);
    topo_free(t);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_points_and_predictions),
        cmocka_unit_test(test_refusals),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
