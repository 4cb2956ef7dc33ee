/* Unit tests of the measurement format: metadata order and keys, the exact
 * csv headers of docs/formats.md, transfer rows, command quoting. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>

#include "hwcheck/meas.h"
#include "hwcheck/patterns.h"

static char *render(meas_kind k, void (*rows)(report *))
{
    char *buf = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&buf, &len);
    report *r = report_new(f, REPORT_CSV);
    meas_meta m;
    memset(&m, 0, sizeof m);
    snprintf(m.machine, sizeof m.machine, "box");
    snprintf(m.gpus, sizeof m.gpus, "0: NVIDIA H200");
    snprintf(m.command, sizeof m.command, "hwcheck host");
    m.ntopo = 1;
    snprintf(m.topo[0], sizeof m.topo[0], "GPU0 X");
    meas_extra(&m, "part", "x");
    meas_write_meta(r, k, &m);
    int n;
    const report_col *cols = meas_cols(k, &n);
    report_table(r, meas_kind_name(k), cols, n);
    if (rows)
        rows(r);
    err e = {0};
    assert_int_equal(report_finish(r, &e), 0);
    report_free(r);
    fclose(f);
    return buf;
}

static void one_transfer(report *r)
{
    meas_transfer_row(r, 3, "h2d", "copy", 0, "host0", "0", 1000000, 20.0);
    report_end_row(r);
}

static void test_host_file(void **state)
{
    (void)state;
    char *s = render(MEAS_HOST, one_transfer);
    /* First key is the format, then the kind; every documented key is present. */
    assert_true(!strncmp(s, "# format: collsim-meas 1\n# kind: host\n# machine: box\n", 53));
    assert_non_null(strstr(s, "# driver: "));
    assert_non_null(strstr(s, "# nccl: "));
    assert_non_null(strstr(s, "# date: "));
    assert_non_null(strstr(s, "# command: hwcheck host\n"));
    assert_non_null(strstr(s, "# topo: GPU0 X\n# part: x\n"));
    /* Columns exactly as docs/formats.md; 1e6 bytes in 20 us = 50 GB/s. */
    assert_non_null(strstr(s, "\ncase,pattern,op,flow,src,dst,bytes,time_us,bw_GBps\n"
                              "3,h2d,copy,0,host0,0,1000000,20.00,50.00\n"));
    free(s);
}

static void test_headers(void **state)
{
    (void)state;
    char *s = render(MEAS_COLL, NULL);
    assert_non_null(strstr(s, "\nsize_bytes,count,dtype,algo,proto,channels,time_us,algbw_GBps,"
                              "busbw_GBps,impl,graph,wrong,probe_us,round_min_us,round_med_us\n"));
    free(s);
    s = render(MEAS_LAUNCH, NULL);
    assert_non_null(strstr(s, "\nwhat,count,time_us\n"));
    free(s);
    s = render(MEAS_REPLAY, NULL);
    assert_non_null(strstr(s, "\ntrace,allreduce,cycles,tokens,cycle_us,tok_per_s,compute_us,"
                              "comm_us,launch_us,idle_us\n"));
    free(s);
}

static void test_command_and_endpoints(void **state)
{
    (void)state;
    char buf[256];
    /* Words with spaces or quotes-worthy characters are single-quoted. */
    char *argv[] = {"coll", "-b", "1K", "--env", "NCCL_PROTO=LL", "a b"};
    meas_command(6, argv, buf, sizeof buf);
    assert_string_equal(buf, "coll -b 1K --env NCCL_PROTO=LL 'a b'");
    meas_endpoint(PATTERNS_HOST, 1, buf, sizeof buf);
    assert_string_equal(buf, "host1");
    meas_endpoint(PATTERNS_HOST, -1, buf, sizeof buf);
    assert_string_equal(buf, "host0");
    meas_endpoint(5, 0, buf, sizeof buf);
    assert_string_equal(buf, "5");
    /* ISO 8601 UTC: 20 characters ending in Z. */
    meas_now(buf, sizeof buf);
    assert_int_equal(strlen(buf), 20);
    assert_int_equal(buf[19], 'Z');
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_host_file),
        cmocka_unit_test(test_headers),
        cmocka_unit_test(test_command_and_endpoints),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
