/* Unit tests of the pattern table: names, case counts and flows on 1, 4 and
 * 8 GPUs, derived by hand from the pattern definitions. No GPU needed. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>
#include <cmocka.h>

#include "hwcheck/patterns.h"

static void test_names(void **state)
{
    (void)state;
    /* The names collsim flows shares, in this order; unknown names are NULL. */
    static const char *const want[] = {"pair", "bidir", "latency", "same-source", "same-uplink",
                                       "all-to-all", "ring", "fan-in", "h2d", "d2h", "h2d-d2h", "local"};
    assert_int_equal(patterns_count(), 12);
    for (int i = 0; i < 12; i++) {
        assert_string_equal(patterns_at(i)->name, want[i]);
        assert_ptr_equal(patterns_find(want[i]), patterns_at(i));
    }
    assert_null(patterns_find("pairs"));
    assert_null(patterns_at(12));
}

static void test_counts(void **state)
{
    (void)state;
    /* 8 GPUs: 56 ordered pairs, 28 unordered, 8 sources, 4 uplink pairs,
     * one all-to-all of 56 flows, one ring of 8; host: 8 alone + 1 together. */
    assert_int_equal(patterns_find("pair")->ncases(8), 56);
    assert_int_equal(patterns_find("bidir")->ncases(8), 28);
    assert_int_equal(patterns_find("same-source")->ncases(8), 8);
    assert_int_equal(patterns_find("same-uplink")->ncases(8), 4);
    assert_int_equal(patterns_find("all-to-all")->ncases(8), 1);
    assert_int_equal(patterns_find("h2d")->ncases(8), 9);
    patterns_flow f[64];
    assert_int_equal(patterns_case(patterns_find("all-to-all"), 8, 0, f, 64), 56);
    assert_int_equal(patterns_case(patterns_find("ring"), 8, 0, f, 64), 8);
    assert_int_equal(f[7].src, 7);
    assert_int_equal(f[7].dst, 0);
    /* One GPU: every GPU<->GPU pattern has no case; host patterns and local,
     * a copy inside the GPU, have one. */
    for (int i = 0; i < patterns_count(); i++) {
        const patterns_entry *p = patterns_at(i);
        assert_int_equal(p->ncases(1), p->host || !strcmp(p->name, "local") ? 1 : 0);
    }
    /* local on 8 GPUs: 8 cases, case 5 = 5->5. */
    assert_int_equal(patterns_find("local")->ncases(8), 8);
    assert_int_equal(patterns_case(patterns_find("local"), 8, 5, f, 64), 1);
    assert_true(f[0].src == 5 && f[0].dst == 5);
    assert_int_equal(patterns_case(patterns_find("pair"), 1, 0, f, 64), 0);
}

static void test_flows(void **state)
{
    (void)state;
    patterns_flow f[64];
    /* pair, 4 GPUs: case 0 = 0->1, case 3 = 1->0 (by source, then destination, skipping i). */
    patterns_case(patterns_find("pair"), 4, 3, f, 64);
    assert_int_equal(f[0].src, 1);
    assert_int_equal(f[0].dst, 0);
    /* bidir case 0 on 4 GPUs: 0->1 and 1->0 together. */
    assert_int_equal(patterns_case(patterns_find("bidir"), 4, 0, f, 64), 2);
    assert_true(f[0].src == 0 && f[0].dst == 1 && f[1].src == 1 && f[1].dst == 0);
    /* same-uplink on 8: case 0 = 0->4 and 1->6 (the broadcom collapse case);
     * case 2 = 4->0 and 5->2; on 4 GPUs case 0 = 0->2 and 1->3. */
    assert_int_equal(patterns_case(patterns_find("same-uplink"), 8, 0, f, 64), 2);
    assert_true(f[0].src == 0 && f[0].dst == 4 && f[1].src == 1 && f[1].dst == 6);
    patterns_case(patterns_find("same-uplink"), 8, 2, f, 64);
    assert_true(f[0].src == 4 && f[0].dst == 0 && f[1].src == 5 && f[1].dst == 2);
    patterns_case(patterns_find("same-uplink"), 4, 0, f, 64);
    assert_true(f[0].dst == 2 && f[1].dst == 3);
    /* fan-in case 2 on 4: 0->2, 1->2, 3->2. */
    assert_int_equal(patterns_case(patterns_find("fan-in"), 4, 2, f, 64), 3);
    assert_true(f[2].src == 3 && f[2].dst == 2);
    /* h2d-d2h: case 1 on 2 GPUs = host->1 and 1->host; last case = all GPUs (4 flows). */
    assert_int_equal(patterns_case(patterns_find("h2d-d2h"), 2, 1, f, 64), 2);
    assert_true(f[0].src == PATTERNS_HOST && f[0].dst == 1 && f[1].dst == PATTERNS_HOST);
    assert_int_equal(patterns_case(patterns_find("h2d-d2h"), 2, 2, f, 64), 4);
    /* Out-of-range case: no flows. */
    assert_int_equal(patterns_case(patterns_find("ring"), 8, 1, f, 64), 0);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_names),
        cmocka_unit_test(test_counts),
        cmocka_unit_test(test_flows),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
