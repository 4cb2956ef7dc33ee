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

typedef struct pctx {
    const char *name;
    long n;
    int flag;
    int nenv;
} pctx;

static int p_name(void *c, const char *a, err *e) { (void)e; ((pctx *)c)->name = a; return 0; }
static int p_n(void *c, const char *a, err *e) { return cli_parse_long("-n", a, 0, 99, &((pctx *)c)->n, e); }
static int p_flag(void *c, const char *a, err *e) { (void)a, (void)e; ((pctx *)c)->flag = 1; return 0; }
static int p_env(void *c, const char *a, err *e) { (void)a, (void)e; ((pctx *)c)->nenv++; return 0; }

static const cli_opt popts[] = {
    {"name", 0, "S", "a name", p_name},
    {"count", 'n', "N", "a count", p_n},
    {"flag", 0, NULL, "a flag", p_flag},
    {"env", 0, "X=Y", "repeatable", p_env},
    {NULL, 0, NULL, NULL, NULL},
};

static int parse(pctx *c, const char **pos, int *npos, err *e, int argc, char **argv)
{
    memset(c, 0, sizeof *c);
    return cli_parse("t", "t [options]", "", popts, c, argc, argv, pos, 2, npos, e);
}

static void test_parse_table(void **state)
{
    (void)state;
    err e = {0};
    pctx c;
    const char *pos[2];
    int npos;
    /* Every spelling of a value: "--opt V", "--opt=V", "-x V", "-xV"; flags take
     * none; a repeatable option sees each use; other words are positional. */
    char *a1[] = {"t", "--name", "x", "-n", "7", "--flag", "p1", "--env=A=1", "--env", "B=2", "p2"};
    assert_int_equal(parse(&c, pos, &npos, &e, 11, a1), 0);
    assert_string_equal(c.name, "x");
    assert_int_equal(c.n, 7);
    assert_int_equal(c.flag, 1);
    assert_int_equal(c.nenv, 2);
    assert_int_equal(npos, 2);
    assert_string_equal(pos[1], "p2");
    char *a2[] = {"t", "--name=y", "-n12"};
    assert_int_equal(parse(&c, pos, &npos, &e, 3, a2), 0);
    assert_string_equal(c.name, "y");
    assert_int_equal(c.n, 12);
    /* Errors are usage errors that name the option. */
    char *a3[] = {"t", "--nmae", "x"};
    assert_int_equal(parse(&c, pos, &npos, &e, 3, a3), ERR_USAGE);
    assert_non_null(strstr(e.msg, "unknown option '--nmae'"));
    char *a4[] = {"t", "--name"};
    assert_int_equal(parse(&c, pos, &npos, &e, 2, a4), ERR_USAGE);
    assert_non_null(strstr(e.msg, "needs a value"));
    char *a5[] = {"t", "--flag=1"};
    assert_int_equal(parse(&c, pos, &npos, &e, 2, a5), ERR_USAGE);
    char *a6[] = {"t", "a", "b", "c"};
    assert_int_equal(parse(&c, pos, &npos, &e, 4, a6), ERR_USAGE);
    assert_non_null(strstr(e.msg, "unexpected argument 'c'"));
    char *a7[] = {"t", "-n", "100"};
    assert_int_equal(parse(&c, pos, &npos, &e, 3, a7), ERR_USAGE);
}

static void test_suggest(void **state)
{
    (void)state;
    static const char *const algos[] = {"auto", "ring", "tree", "oneshot", "twoshot"};
    /* "onesht": one deletion from "oneshot" (distance 1), 2+ from the rest. */
    assert_string_equal(cli_suggest("onesht", algos, 5), "oneshot");
    /* "rign": an adjacent swap of "ring" counts as one edit. */
    assert_string_equal(cli_suggest("rign", algos, 5), "ring");
    /* Case is ignored: "TwoShot" is "twoshot". */
    assert_string_equal(cli_suggest("TwoShot", algos, 5), "twoshot");
    /* "fastest" is >= 4 edits from every name: no suggestion (limit max(2, 7/3) = 2). */
    assert_null(cli_suggest("fastest", algos, 5));
    static const char *const topos[] = {"rtxpro6000-8x-pcie5-2s", "h200-8x-nvswitch", "h200-1x"};
    /* "h100-8x-nvswitch" differs from "h200-8x-nvswitch" by one substitution. */
    assert_string_equal(cli_suggest("h100-8x-nvswitch", topos, 3), "h200-8x-nvswitch");
    err e = {0};
    assert_int_equal(cli_unknown(&e, ERR_USAGE, "--algo", "onesht", algos, 5), ERR_USAGE);
    assert_non_null(strstr(e.msg, "--algo: unknown 'onesht' (did you mean 'oneshot'?); valid: auto, ring"));
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_sizes),
        cmocka_unit_test(test_report_csv),
        cmocka_unit_test(test_report_json),
        cmocka_unit_test(test_parse_table),
        cmocka_unit_test(test_suggest),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
