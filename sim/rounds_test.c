/* Unit tests of a timed loop's rounds (sim/rounds.c), derived by hand. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include "sim/rounds.h"
#include "tests/unit/near.h"

static void test_stall(void **state)
{
    (void)state;
    /* Ten rounds of 50 calls at 23.5 us, one of which holds a stall of
     * 1.29 ms: that round's mean is 23.5 + 1290 / 50 = 49.3 us. The mean of
     * all 500 calls is 23.5 + 25.8 / 10 = 26.08; the median and the fastest
     * round stay at 23.5 (the LL128 eager row at 2 MiB, docs/model.md). */
    double t[10] = {23.5, 23.5, 23.5, 49.3, 23.5, 23.5, 23.5, 23.5, 23.5, 23.5};
    rounds_stat s = rounds_of(t, 10);
    NEAR(s.mean, 26.08, 1e-9);
    NEAR(s.med, 23.5, 1e-12);
    NEAR(s.min, 23.5, 1e-12);
    NEAR(t[3], 49.3, 1e-12); /* left as it is */
}

static void test_even_odd(void **state)
{
    (void)state;
    /* {5, 1, 3, 100}: mean 27.25, fastest 1, median (3 + 5) / 2 = 4;
     * {5, 1, 3}: median 3; one round: all three are that round. */
    double a[4] = {5, 1, 3, 100};
    rounds_stat s = rounds_of(a, 4);
    NEAR(s.mean, 27.25, 1e-12);
    NEAR(s.min, 1, 1e-12);
    NEAR(s.med, 4, 1e-12);
    s = rounds_of(a, 3);
    NEAR(s.med, 3, 1e-12);
    NEAR(s.mean, 3, 1e-12);
    s = rounds_of(a, 1);
    NEAR(s.mean, 5, 1e-12);
    NEAR(s.min, 5, 1e-12);
    NEAR(s.med, 5, 1e-12);
    s = rounds_of(a, 0);
    NEAR(s.mean + s.min + s.med, 0, 1e-12);
}

static void test_many(void **state)
{
    (void)state;
    /* 101 rounds (past the 64 kept on the stack): i = 0..100, median 50. */
    double t[101];
    for (int i = 0; i < 101; i++)
        t[i] = 100 - i;
    rounds_stat s = rounds_of(t, 101);
    NEAR(s.med, 50, 1e-12);
    NEAR(s.min, 0, 1e-12);
    NEAR(s.mean, 50, 1e-12);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_stall),
        cmocka_unit_test(test_even_odd),
        cmocka_unit_test(test_many),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
