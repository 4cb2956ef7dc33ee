/* Unit tests of the error statistics on hand-computed cases. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <math.h>
#include <cmocka.h>

#include "validate/stats.h"

/* cmocka's assert_float_equal works in float; this one in double and says
 * what it got. */
#define assert_near(a, b, tol)                                                 \
    do {                                                                       \
        double a_ = (a), b_ = (b), t_ = (tol);                                 \
        if (!(fabs(a_ - b_) <= t_)) {                                          \
            print_error("%s = %.17g, expected %.17g +- %g\n", #a, a_, b_, t_); \
            fail();                                                            \
        }                                                                      \
    } while (0)

static void test_errors(void **state)
{
    (void)state;
    /* pred/meas: 110/100 (+10%), 45/50 (-10%), 8/10 (-20%), 31/30 (+3.33%).
     * |errors| sorted: 0.0333, 0.1, 0.1, 0.2 -> median (0.1+0.1)/2 = 0.1;
     * mean = 0.43333/4 = 0.108333; worst = -0.2 at index 2. */
    const double pred[] = {110, 45, 8, 31}, meas[] = {100, 50, 10, 30};
    stats_err s;
    err e = {0};
    assert_int_equal(stats_errors(pred, meas, 4, &s, &e), 0);
    assert_int_equal(s.n, 4);
    assert_near(s.median_abs, 0.1, 1e-12);
    assert_near(s.mean_abs, (0.1 + 0.1 + 0.2 + 1.0 / 30) / 4, 1e-12);
    assert_near(s.worst, -0.2, 1e-12);
    assert_int_equal(s.worst_index, 2);
    /* Odd count: the median is the middle value: |errors| 0.5, 0, 0.25 -> 0.25. */
    const double p3[] = {3, 1, 5}, m3[] = {2, 1, 4};
    assert_int_equal(stats_errors(p3, m3, 3, &s, &e), 0);
    assert_near(s.median_abs, 0.25, 1e-12);
    assert_near(s.worst, 0.5, 1e-12);
    /* A zero measurement cannot give a relative error: refused, not inf. */
    const double m0[] = {2, 0, 4};
    assert_int_equal(stats_errors(p3, m0, 3, &s, &e), ERR_CHECK);
    assert_int_equal(stats_errors(p3, m3, 0, &s, &e), ERR_CHECK);
}

static void test_choices(void **state)
{
    (void)state;
    /* Algorithms 0 (ring) and 1 (oneshot) at sizes 1K, 4K, 16K, 64K; plus
     * 256K measured for ring only (no choice there). Measured winner:
     * 1,1,0,0 ; predicted: 1,0,0,0 -> 3 of 4 sizes agree, accuracy 0.75.
     * At 1K the measured margin is 20/10 - 1 = 1.0. Input order is
     * shuffled to check the grouping by size. */
    const stats_point p[] = {
        {16384, 0, 30, 40}, {1024, 0, 25, 20}, {1024, 1, 9, 10},
        {4096, 1, 14, 12},  {4096, 0, 13, 22}, {16384, 1, 35, 50},
        {65536, 0, 60, 70}, {65536, 1, 90, 95}, {262144, 0, 100, 120},
    };
    stats_choice c[9];
    size_t n = stats_choices(p, 9, c);
    assert_int_equal(n, 4);
    assert_near(c[0].size, 1024, 0);
    assert_int_equal(c[0].meas_best, 1);
    assert_int_equal(c[0].pred_best, 1);
    assert_near(c[0].meas_margin, 1.0, 1e-12);
    assert_int_equal(c[1].meas_best, 1);
    assert_int_equal(c[1].pred_best, 0);
    assert_int_equal(c[2].meas_best, 0);
    assert_int_equal(c[3].nalgos, 2);
    assert_near(stats_accuracy(c, n), 0.75, 1e-12);
    assert_true(isnan(stats_accuracy(c, 0)));
}

static void test_crossovers(void **state)
{
    (void)state;
    /* ta/tb = 0.5 at 1K and 2.0 at 4K: ln ratio -ln2 -> +ln2, zero halfway
     * in ln(size): sqrt(1024 * 4096) = 2048. */
    const double size[] = {1024, 4096, 16384};
    const double ta[] = {5, 20, 40}, tb[] = {10, 10, 10};
    double x[4];
    assert_int_equal(stats_crossovers(size, ta, tb, 3, x, 4), 1);
    assert_near(x[0], 2048, 1e-9);
    /* Ratio 1/4 at 1K, 2 at 4K: zero at 2/3 of the way: 1024 * 4^(2/3). */
    const double ta2[] = {2.5, 20, 5};
    assert_int_equal(stats_crossovers(size, ta2, tb, 3, x, 4), 2);
    assert_near(x[0], 1024 * pow(4, 2.0 / 3), 1e-9);
    /* ... and back below between 4K and 16K: ln2 -> ln(1/2), at 8K. */
    assert_near(x[1], 8192, 1e-9);
    /* Equal at the middle size with a sign change around it: that size. */
    const double ta3[] = {5, 10, 20};
    assert_int_equal(stats_crossovers(size, ta3, tb, 3, x, 4), 1);
    assert_near(x[0], 4096, 0);
    /* Touching without crossing, or always below: none. */
    const double ta4[] = {5, 10, 5}, ta5[] = {1, 2, 3};
    assert_int_equal(stats_crossovers(size, ta4, tb, 3, x, 4), 0);
    assert_int_equal(stats_crossovers(size, ta5, tb, 3, x, 4), 0);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_errors),
        cmocka_unit_test(test_choices),
        cmocka_unit_test(test_crossovers),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
