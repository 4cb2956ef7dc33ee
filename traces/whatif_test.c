/* What-if against hand-derived expectations: the calibration point
 * reproduces itself, the break-even solutions are break-even points, the
 * compute model follows its formula, and knobs round-trip. Uses the real
 * collective model on the 2-socket preset. */
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

#include "traces/whatif.h"

#define REL(a, b, tol)                                                         \
    do {                                                                       \
        double a_ = (a), b_ = (b);                                             \
        if (!(fabs(a_ - b_) <= (tol) * fabs(b_)))                              \
            fail_msg("%s = %.9g, expected %s = %.9g", #a, a_, #b, b_);         \
    } while (0)

static whatif_ctx *ctx;

static void run(const whatif_scenario *s, whatif_result *r)
{
    err e = {0};
    if (whatif_run_ctx(ctx, s, r, &e) != 0)
        fail_msg("%s", e.msg);
}

static void base(whatif_scenario *s)
{
    err e = {0};
    assert_int_equal(whatif_scenario_load("kimi-k2-eagle3-8x-pcie5", s, &e), 0);
}

static void test_calibration_point(void **state)
{
    (void)state;
    whatif_scenario s;
    base(&s);
    err e = {0};
    assert_int_equal(whatif_set(&s, "mode", "decode", &e), 0);
    whatif_result r;
    run(&s, &r);
    /* the compute terms were derived so that plain decode, batch 1, ring/LL
     * on this preset gives the measured 82 tok/s: 1e6/82 = 12,195.12 us
     * per step (relative tolerance 1e-7: each op's time is rounded to whole
     * picoseconds, a few hundred ops per cycle) */
    REL(r.tok_per_s, 82.0, 1e-7);
    REL(r.cycle_us, 1e6 / 82.0, 1e-7);
    /* breakdown adds up to the cycle */
    REL(r.compute_us + r.comm_us + r.launch_us + r.idle_us, r.cycle_us, 1e-9);
    /* w : p = 74.5 : 21.6 (docs/scenario.md) */
    REL(r.weight_us_per_layer / r.token_us_per_layer, 74.5 / 21.6, 1e-9);
    /* 122 allreduces of 14,336 B, each r.allreduce_us; with CUDA graphs the
     * communication on the path is exactly 122 x that (one stream) */
    REL(r.comm_us, 122 * r.allreduce_us, 1e-6);
}

static void test_compute_model(void **state)
{
    (void)state;
    whatif_scenario s;
    base(&s);
    err e = {0};
    assert_int_equal(whatif_set(&s, "weight_us_per_layer", "100", &e), 0);
    assert_int_equal(whatif_set(&s, "token_us_per_layer", "30", &e), 0);
    assert_int_equal(whatif_set(&s, "draft_step_us", "0", &e), 0);
    assert_int_equal(whatif_set(&s, "draft_steps", "0", &e), 0);
    whatif_result r;
    run(&s, &r);
    /* verify of 3 tokens: n_eff(3) = 1 + q + q^2, q = 1 - 8/384 = 0.979167:
     * 2.937934; per layer 100 + 30 x 2.937934 = 188.138 us; 61 layers:
     * 11,476.42 us of compute (relative 1e-6) */
    double q = 1 - 8.0 / 384;
    REL(r.compute_us, 61 * (100 + 30 * (1 + q + q * q)), 1e-6);
    /* tp 4: compute scales by 8/4 (1e-7: picosecond rounding per op) */
    assert_int_equal(whatif_set(&s, "tp", "4", &e), 0);
    whatif_result r4;
    run(&s, &r4);
    REL(r4.compute_us, 2 * r.compute_us, 1e-7);
    /* linear per-token term without the expert saturation: 100 + 3 x 30 */
    assert_int_equal(whatif_set(&s, "tp", "8", &e), 0);
    assert_int_equal(whatif_set(&s, "moe_experts", "0", &e), 0);
    run(&s, &r);
    REL(r.compute_us, 61 * 190.0, 1e-9);
}

static void test_solve_accept(void **state)
{
    (void)state;
    whatif_scenario s;
    base(&s);
    err e = {0};
    const char *algos[] = {"ring", "oneshot", "twoshot"};
    for (int i = 0; i < 3; i++) {
        assert_int_equal(whatif_set(&s, "allreduce", algos[i], &e), 0);
        double a;
        if (whatif_solve(ctx, &s, "accept_len", &a, &e) != 0)
            fail_msg("%s", e.msg);
        /* at the solution EAGLE-3 and plain decode give the same tok/s */
        whatif_scenario eg = s, dec = s;
        eg.accept_len = a;
        dec.mode = WHATIF_DECODE;
        whatif_result re, rd;
        run(&eg, &re);
        run(&dec, &rd);
        REL(re.tok_per_s, rd.tok_per_s, 1e-7);
        assert_true(a > 1 && a < 3);
    }
}

static void test_solve_allreduce(void **state)
{
    (void)state;
    whatif_scenario s;
    base(&s);
    err e = {0};
    double a;
    if (whatif_solve(ctx, &s, "allreduce_us", &a, &e) != 0)
        fail_msg("%s", e.msg);
    /* EAGLE-3 with every allreduce forced to a matches predicted decode */
    whatif_scenario eg = s, dec = s;
    eg.allreduce_us = a;
    dec.mode = WHATIF_DECODE;
    whatif_result re, rd;
    run(&eg, &re);
    run(&dec, &rd);
    REL(re.tok_per_s, rd.tok_per_s, 1e-7);
    /* accept 1: EAGLE-3 cannot win (it does more work per token) */
    assert_int_equal(whatif_set(&s, "accept_len", "1", &e), 0);
    assert_int_equal(whatif_solve(ctx, &s, "allreduce_us", &a, &e), ERR_CHECK);
}

static void test_batch_bytes(void **state)
{
    (void)state;
    whatif_scenario s;
    base(&s);
    err e = {0};
    assert_int_equal(whatif_set(&s, "mode", "decode", &e), 0);
    assert_int_equal(whatif_set(&s, "batch", "8", &e), 0);
    whatif_result r8, r1;
    run(&s, &r8);
    assert_int_equal(whatif_set(&s, "batch", "1", &e), 0);
    run(&s, &r1);
    /* 8 requests: 8 tokens per step, allreduce of 8 x 14,336 B: slower per
     * allreduce, and 8 tokens per cycle */
    assert_true(r8.allreduce_us > r1.allreduce_us);
    REL(r8.tokens_per_cycle, 8, 1e-12);
    /* forcing the allreduce time: comm on the path = 122 x forced */
    assert_int_equal(whatif_set(&s, "allreduce_us", "50", &e), 0);
    run(&s, &r1);
    REL(r1.comm_us, 122 * 50.0, 1e-9);
}

static void test_knobs(void **state)
{
    (void)state;
    whatif_scenario s;
    base(&s);
    err e = {0};
    char buf[128];
    assert_int_equal(whatif_set(&s, "accept_hist", "1,1,2", &e), 0);
    /* normalised 0.25, 0.25, 0.5: mean 0.25 + 0.5 + 1.5 = 2.25 */
    REL(s.accept_len, 2.25, 1e-12);
    assert_int_equal(whatif_set(&s, "nccl_proto", "Simple", &e), 0);
    assert_int_equal(whatif_get(&s, "nccl_proto", buf, sizeof buf, &e), 0);
    assert_string_equal(buf, "Simple");
    assert_int_equal(whatif_set(&s, "nccl_p2p_level", "PHB", &e), 0);
    assert_int_equal(whatif_get(&s, "nccl_p2p_level", buf, sizeof buf, &e), 0);
    assert_string_equal(buf, "PHB");
    assert_int_equal(whatif_set(&s, "frob", "1", &e), ERR_USAGE);
    assert_int_equal(whatif_set(&s, "tp", "0", &e), ERR_USAGE);
    assert_int_equal(whatif_set(&s, "allreduce", "fastest", &e), ERR_USAGE);
    /* a scenario file: base + settings, errors with file:line */
    char path[] = "/tmp/collsim_scenXXXXXX";
    int fd = mkstemp(path);
    FILE *f = fdopen(fd, "w");
    fputs("collsim-scenario 1\nbase kimi-k2-eagle3-8x-pcie5\n# c\nallreduce = oneshot\n"
          "batch=4\n", f);
    fclose(f);
    whatif_scenario fs;
    assert_int_equal(whatif_scenario_load(path, &fs, &e), 0);
    assert_int_equal(fs.allreduce, ALGO_ONESHOT);
    assert_int_equal(fs.batch, 4);
    assert_int_equal(fs.mode, WHATIF_EAGLE3);
    f = fopen(path, "w");
    fputs("collsim-scenario 1\nbatch = 4\nbathc = 2\n", f);
    fclose(f);
    assert_int_equal(whatif_scenario_load(path, &fs, &e), ERR_INPUT);
    assert_non_null(strstr(e.msg, ":3: unknown knob 'bathc'"));
    unlink(path);
}

int main(void)
{
    ctx = whatif_ctx_new();
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_calibration_point), cmocka_unit_test(test_compute_model),
        cmocka_unit_test(test_solve_accept),      cmocka_unit_test(test_solve_allreduce),
        cmocka_unit_test(test_batch_bytes),       cmocka_unit_test(test_knobs),
    };
    int rc = cmocka_run_group_tests(tests, NULL, NULL);
    whatif_ctx_free(ctx);
    return rc;
}
