/* Unit tests of the shared command option glue. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>

#include "cmd/cmd_ctx.h"

/* A command's option struct: cmd_ctx first, then its own fields. */
typedef struct args {
    cmd_ctx cc;
    int own;
} args;

static void test_setters(void **state)
{
    (void)state;
    args a;
    cmd_ctx_init(&a.cc);
    err e = {0};
    /* Defaults: the reference preset, stdout, table, NCCL's own choices. */
    assert_string_equal(a.cc.topo, CMD_DEFAULT_TOPO);
    assert_string_equal(a.cc.out, "-");
    assert_int_equal(a.cc.fmt, REPORT_TABLE);
    assert_int_equal(a.cc.env.p2p_level, -1);
    assert_int_equal(cmd_set_topo(&a, "h200-1x", &e), 0);
    assert_true(a.cc.topo_given);
    assert_int_equal(cmd_set_format(&a, "csv", &e), 0);
    assert_int_equal(a.cc.fmt, REPORT_CSV);
    assert_int_equal(cmd_set_format(&a, "xml", &e), ERR_USAGE);
    /* --env accumulates in order, as given, for the metadata. */
    assert_int_equal(cmd_set_env(&a, "NCCL_PROTO=LL", &e), 0);
    assert_int_equal(cmd_set_env(&a, "NCCL_ALGO=Ring", &e), 0);
    assert_string_equal(a.cc.envs, "NCCL_PROTO=LL NCCL_ALGO=Ring");
    assert_int_equal(a.cc.env.proto, PROTO_LL);
    assert_true(a.cc.env_given);
    assert_int_equal(cmd_set_env(&a, "NCCL_FOO=1", &e), ERR_USAGE);
    /* --timeline - with the report on stdout sends the report to stderr;
     * with --output FILE it does not. */
    assert_false(cmd_report_to_stderr(&a.cc));
    assert_int_equal(cmd_set_timeline(&a, "-", &e), 0);
    assert_true(cmd_report_to_stderr(&a.cc));
    assert_int_equal(cmd_set_output(&a, "r.csv", &e), 0);
    assert_false(cmd_report_to_stderr(&a.cc));
    /* --engine: tlp is the transaction level, flow the default; any other
     * word is refused, naming both. */
    int tlp = -1;
    assert_int_equal(cmd_parse_engine("tlp", &tlp, &e), 0);
    assert_int_equal(tlp, 1);
    assert_int_equal(cmd_parse_engine("flow", &tlp, &e), 0);
    assert_int_equal(tlp, 0);
    assert_int_equal(cmd_parse_engine("TLP", &tlp, &e), ERR_USAGE);
    assert_non_null(strstr(e.msg, "'TLP' (flow or tlp)"));
}

static void test_load_and_meta(void **state)
{
    (void)state;
    cmd_ctx c;
    cmd_ctx_init(&c);
    err e = {0};
    topo *t = NULL;
    /* The default preset has 8 GPUs. */
    assert_int_equal(cmd_load_topo(&c, &t, &e), 0);
    assert_int_equal(topo_ngpus(t), 8);
    topo_free(t);
    c.calib = "no-such.calib";
    assert_int_equal(cmd_load_topo(&c, &t, &e), ERR_INPUT);
    c.calib = NULL;
    char *buf = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&buf, &len);
    report *r = report_new(f, REPORT_TABLE);
    cmd_meta(&c, r);
    assert_int_equal(report_finish(r, &e), 0);
    report_free(r);
    fclose(f);
    assert_non_null(strstr(buf, "# calibration: none (preset parameters)\n"));
    assert_non_null(strstr(buf, "# env: none (NCCL defaults)\n"));
    free(buf);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_setters),
        cmocka_unit_test(test_load_and_meta),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
