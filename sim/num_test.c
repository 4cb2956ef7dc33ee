/* Unit tests of the strict number cells: the whole string, decimal, in
 * range, or refused with *out untouched. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include "sim/num.h"

static void test_long(void **state)
{
    (void)state;
    long v = 7;
    assert_int_equal(num_long("-12", &v), 0);
    assert_int_equal(v, -12);
    /* refused, and v keeps -12: empty, trailing text, exponent, hex
     * (base 10 stops at 'x'), and one past LONG_MAX on LP64 */
    const char *bad[] = {"", "1x", "1e3", "0x10", " ", "9223372036854775808"};
    for (size_t i = 0; i < sizeof bad / sizeof *bad; i++) {
        assert_int_equal(num_long(bad[i], &v), -1);
        assert_int_equal(v, -12);
    }
}

static void test_u64(void **state)
{
    (void)state;
    uint64_t v = 1;
    assert_int_equal(num_u64("18446744073709551615", &v), 0);
    assert_true(v == UINT64_MAX);
    /* strtoull reads "-1" as UINT64_MAX: refused here, as is one past the max */
    const char *bad[] = {"", "-1", " -1", "18446744073709551616", "12k"};
    for (size_t i = 0; i < sizeof bad / sizeof *bad; i++) {
        assert_int_equal(num_u64(bad[i], &v), -1);
        assert_true(v == UINT64_MAX);
    }
}

static void test_decimal(void **state)
{
    (void)state;
    double v = 0;
    assert_int_equal(num_decimal("1.5e3", &v), 0);
    assert_true(v == 1500.0);
    /* hex, inf and nan, which strtod takes; overflow; underflow (ERANGE) */
    const char *bad[] = {"", "0x1p3", "inf", "nan", "1e999", "1e-999", "1.5 "};
    for (size_t i = 0; i < sizeof bad / sizeof *bad; i++) {
        assert_int_equal(num_decimal(bad[i], &v), -1);
        assert_true(v == 1500.0);
    }
}

int main(void)
{
    const struct CMUnitTest tests[] = {cmocka_unit_test(test_long), cmocka_unit_test(test_u64),
                                       cmocka_unit_test(test_decimal)};
    return cmocka_run_group_tests(tests, NULL, NULL);
}
