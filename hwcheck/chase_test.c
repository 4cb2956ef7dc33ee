/* Unit tests of the host load chain: one cycle through every line, and a
 * run that follows it. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <cmocka.h>

#include "hwcheck/chase.h"

/* Steps from line 0 back to line 0. */
static size_t cycle_length(size_t n)
{
    size_t i = 0, len = 0;
    do {
        i = chase_next(i, n);
        len++;
    } while (i != 0 && len <= n);
    return len;
}

static void test_one_cycle(void **state)
{
    (void)state;
    /* Hull-Dobell: for n = 2^k, C odd and A - 1 divisible by 4 the map has
     * period n, so from line 0 the chain comes back after exactly n steps
     * (16 KiB = 256 lines, 64 MiB = 2^20 lines), visiting each line once. */
    assert_int_equal(cycle_length(256), 256);
    assert_int_equal(cycle_length((size_t)1 << 20), (size_t)1 << 20);
    unsigned char *seen = calloc(256, 1);
    size_t i = 0;
    for (int k = 0; k < 256; k++, i = chase_next(i, 256))
        seen[i]++;
    for (int k = 0; k < 256; k++)
        assert_int_equal(seen[k], 1);
    free(seen);
}

static void test_run_follows_the_chain(void **state)
{
    (void)state;
    chase c;
    err e = {0};
    assert_int_equal(chase_init(&c, 16384, &e), 0);
    assert_int_equal(c.n, 256);
    /* 5 loads from line 0 end where 5 steps of chase_next do; 251 more make
     * 256, a whole cycle, back at line 0. */
    size_t want = 0;
    for (int k = 0; k < 5; k++)
        want = chase_next(want, 256);
    assert_int_equal(chase_run(&c, 5), want);
    assert_int_equal(chase_run(&c, 251), 0);
    chase_free(&c);
    chase_free(&c); /* freed twice: a no-op */
    /* 100 bytes is not a power of two of 64-byte lines. */
    assert_int_equal(chase_init(&c, 100, &e), ERR_USAGE);
    assert_int_equal(chase_init(&c, 3 * 64, &e), ERR_USAGE);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_one_cycle),
        cmocka_unit_test(test_run_follows_the_chain),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
