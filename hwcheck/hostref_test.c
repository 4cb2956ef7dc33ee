/* Unit tests of the host references: the load chain's one cycle through
 * every line, a run that follows it, the multiply-add loop's value. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <cmocka.h>

#include "hwcheck/hostref.h"

/* Steps from line 0 back to line 0. */
static size_t cycle_length(size_t n)
{
    size_t i = 0, len = 0;
    do {
        i = hostref_next(i, n);
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
    for (int k = 0; k < 256; k++, i = hostref_next(i, 256))
        seen[i]++;
    for (int k = 0; k < 256; k++)
        assert_int_equal(seen[k], 1);
    free(seen);
}

static void test_run_follows_the_chain(void **state)
{
    (void)state;
    hostref_chain c;
    err e = {0};
    assert_int_equal(hostref_chain_init(&c, 16384, &e), 0);
    assert_int_equal(c.n, 256);
    /* 5 loads from line 0 end where 5 steps of hostref_next do; 251 more make
     * 256, a whole cycle, back at line 0. */
    size_t want = 0;
    for (int k = 0; k < 5; k++)
        want = hostref_next(want, 256);
    assert_int_equal(hostref_chain_run(&c, 5), want);
    assert_int_equal(hostref_chain_run(&c, 251), 0);
    hostref_chain_free(&c);
    hostref_chain_free(&c); /* freed twice: a no-op */
    /* 100 bytes is not a power of two of 64-byte lines. */
    assert_int_equal(hostref_chain_init(&c, 100, &e), ERR_USAGE);
    assert_int_equal(hostref_chain_init(&c, 3 * 64, &e), ERR_USAGE);
}

static void test_mul(void **state)
{
    (void)state;
    /* Chain j starts at j; one step makes j K + 1, two steps (j K + 1) K + 1,
     * mod 2^64; the result is the xor over j = 0..7. Zero steps: 0^1^..^7 = 0. */
    const uint64_t k = 6364136223846793005u;
    uint64_t one = 0, two = 0;
    for (uint64_t j = 0; j < 8; j++) {
        one ^= j * k + 1;
        two ^= (j * k + 1) * k + 1;
    }
    assert_true(hostref_mul(0) == 0);
    assert_true(hostref_mul(1) == one);
    assert_true(hostref_mul(2) == two);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_one_cycle),
        cmocka_unit_test(test_run_follows_the_chain),
        cmocka_unit_test(test_mul),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
