/* Unit tests of the argument parsers and the report writer. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>

#include "sim/cli.h"
#include "sim/report.h"

static void test_sizes(void **state)
{
    (void)state;
    err e = {0};
    uint64_t v = 0;
    /* Suffixes are powers of two: 4K = 4096, 16M = 16*2^20, 1G = 2^30. */
    assert_int_equal(cli_parse_size("-b", "4K", &v, &e), 0);
    assert_int_equal(v, 4096);
    assert_int_equal(cli_parse_size("-b", "16M", &v, &e), 0);
    assert_int_equal(v, 16u << 20);
    assert_int_equal(cli_parse_size("-b", "1G", &v, &e), 0);
    assert_int_equal(v, 1u << 30);
    assert_int_equal(cli_parse_size("-b", "43008", &v, &e), 0);
    assert_int_equal(v, 43008);
    /* Junk, negatives and overflow are usage errors, never wrapped values. */
    assert_int_equal(cli_parse_size("-b", "12Q", &v, &e), ERR_USAGE);
    assert_int_equal(cli_parse_size("-b", "-4", &v, &e), ERR_USAGE);
    assert_int_equal(cli_parse_size("-b", "99999999999G", &v, &e), ERR_USAGE);
    assert_non_null(strstr(e.msg, "too large"));
    assert_int_equal(cli_parse_size("-b", "", &v, &e), ERR_USAGE);
}

static void test_report_csv(void **state)
{
    (void)state;
    char *buf = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&buf, &len);
    report *r = report_new(f, REPORT_CSV);
    static const report_col cols[] = {{"a", NULL, 4, -1}, {"b", NULL, 6, 2}};
    report_table(r, NULL, cols, 2);
    report_str(r, "x,y");
    report_num(r, 1.5);
    report_end_row(r);
    err e = {0};
    assert_int_equal(report_finish(r, &e), 0);
    report_free(r);
    fclose(f);
    /* A comma inside a cell is quoted; numbers use the column precision. */
    assert_string_equal(buf, "a,b\n\"x,y\",1.50\n");
    free(buf);
}

static void test_report_json(void **state)
{
    (void)state;
    char *buf = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&buf, &len);
    report *r = report_new(f, REPORT_JSON);
    report_meta(r, "gpu", "H200 \"SXM\"");
    static const report_col cols[] = {{"n", NULL, 4, -1}};
    report_table(r, "t", cols, 1);
    report_int(r, 3);
    report_end_row(r);
    err e = {0};
    assert_int_equal(report_finish(r, &e), 0);
    report_free(r);
    fclose(f);
    assert_string_equal(buf, "{\"meta\":{\"gpu\":\"H200 \\\"SXM\\\"\"},\"tables\":"
                             "[{\"name\":\"t\",\"rows\":[{\"n\":3}]}]}\n");
    free(buf);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_sizes),
        cmocka_unit_test(test_report_csv),
        cmocka_unit_test(test_report_json),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
