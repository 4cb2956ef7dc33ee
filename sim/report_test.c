/* The report writer's JSON, written with libc alone (hwcheck builds without
 * yajl), must be the bytes yajl_gen writes for the same document: the test
 * builds every document twice, once through report_* and once by hand through
 * yajl_gen, and compares. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>

#include <yajl/yajl_gen.h>

#include "sim/report.h"

static void print_cb(void *ctx, const char *s, size_t len) { fwrite(s, 1, len, (FILE *)ctx); }

static void ystr(yajl_gen g, const char *s)
{
    yajl_gen_string(g, (const unsigned char *)s, strlen(s));
}

static void ynum(yajl_gen g, const char *s) { yajl_gen_number(g, s, strlen(s)); }

/* Every byte 1..127 and a few UTF-8 bytes. */
static void awkward(char *buf)
{
    int n = 0;
    for (int c = 1; c < 128; c++)
        buf[n++] = (char)c;
    memcpy(buf + n, "\xc2\xb5s \xe2\x80\x94 /", 10);
    buf[n + 10] = 0;
}

/* The same for a cell: the control characters, the
 * characters JSON escapes or might, and UTF-8. */
static const char cell_odd[] = "\x01\x02\x07\b\t\n\x0b\f\r\x0e\x1a\x1f \"\\/ a,b \xc2\xb5s";

static char *with_report(const char *odd)
{
    char *buf = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&buf, &len);
    report *r = report_new(f, REPORT_JSON);
    report_meta(r, "format", "collsim-meas 1");
    report_meta(r, "gpus", "8");
    report_meta(r, "ratio", "-2.5e3");
    report_meta(r, "odd", "%s", odd);
    static const report_col cols[] = {
        {"name", NULL, 6, -1}, {"n", NULL, 4, -1}, {"t_us", NULL, 8, 3}, {"x", NULL, 4, -1}};
    report_table(r, "first", cols, 4);
    report_str(r, cell_odd);
    report_int(r, -7);
    report_num(r, 12.5);
    report_num(r, 0.0 / 0.0); /* NaN: null */
    report_end_row(r);
    report_str(r, "");
    report_int(r, 0);
    report_num(r, 1e300 * 1e300); /* inf: null */
    report_num(r, 3);
    report_end_row(r);
    report_note(r, "a note is not part of the JSON");
    static const report_col one[] = {{"k", NULL, 4, -1}};
    report_table(r, NULL, one, 1); /* a second table, unnamed, without rows */
    err e = {0};
    assert_int_equal(report_finish(r, &e), 0);
    report_free(r);
    fclose(f);
    return buf;
}

static char *with_yajl(const char *odd)
{
    char *buf = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&buf, &len);
    yajl_gen g = yajl_gen_alloc(NULL);
    yajl_gen_config(g, yajl_gen_print_callback, print_cb, (void *)f);
    yajl_gen_map_open(g);
    ystr(g, "meta");
    yajl_gen_map_open(g);
    ystr(g, "format"), ystr(g, "collsim-meas 1");
    ystr(g, "gpus"), ynum(g, "8");
    ystr(g, "ratio"), ynum(g, "-2.5e3");
    ystr(g, "odd"), ystr(g, odd);
    yajl_gen_map_close(g);
    ystr(g, "tables");
    yajl_gen_array_open(g);
    yajl_gen_map_open(g);
    ystr(g, "name"), ystr(g, "first");
    ystr(g, "rows");
    yajl_gen_array_open(g);
    yajl_gen_map_open(g);
    ystr(g, "name"), ystr(g, cell_odd);
    ystr(g, "n"), ynum(g, "-7");
    ystr(g, "t_us"), ynum(g, "12.500");
    ystr(g, "x"), yajl_gen_null(g);
    yajl_gen_map_close(g);
    yajl_gen_map_open(g);
    ystr(g, "name"), ystr(g, "");
    ystr(g, "n"), ynum(g, "0");
    ystr(g, "t_us"), yajl_gen_null(g);
    ystr(g, "x"), ynum(g, "3");
    yajl_gen_map_close(g);
    yajl_gen_array_close(g);
    yajl_gen_map_close(g);
    yajl_gen_map_open(g);
    ystr(g, "name"), ystr(g, "");
    ystr(g, "rows");
    yajl_gen_array_open(g);
    yajl_gen_array_close(g);
    yajl_gen_map_close(g);
    yajl_gen_array_close(g);
    yajl_gen_map_close(g);
    yajl_gen_free(g);
    fputc('\n', f);
    fclose(f);
    return buf;
}

static void test_json_as_yajl(void **state)
{
    (void)state;
    char odd[160];
    awkward(odd);
    char *mine = with_report(odd), *ref = with_yajl(odd);
    /* Same bytes, including every control character's escape (\b \f \n \r \t
     * and \u00XX for the others), '"' and '\\'. */
    assert_string_equal(mine, ref);
    /* And the escapes are there at all (a writer that dropped them would also
     * have to drop them in yajl to pass the line above). */
    assert_non_null(strstr(mine, "\\u0001"));
    assert_non_null(strstr(mine, "\\u001F"));
    assert_non_null(strstr(mine, "\\t\\n"));
    free(mine);
    free(ref);
}

static void test_json_plain(void **state)
{
    (void)state;
    char *mine = with_report("plain");
    char *ref = with_yajl("plain");
    assert_string_equal(mine, ref);
    free(mine);
    free(ref);
}

/* A whole command line as hwcheck records it (up to 1023 bytes) and a long
 * cell (validate's crossover text, up to 511) come out whole: validate reads
 * --topo back from the end of that line. A 900-byte value of 'a's ending in
 * " --topo T" and a 400-byte cell of 'b's must each appear in full in the
 * csv, so a writer that cuts them (it kept 255 and 95 bytes) fails. */
static void test_long_values(void **state)
{
    (void)state;
    char cmd[901], cell[401];
    memset(cmd, 'a', 891);
    memcpy(cmd + 891, " --topo T", 10);
    memset(cell, 'b', 400);
    cell[400] = 0;
    char *buf = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&buf, &len);
    report *r = report_new(f, REPORT_CSV);
    report_meta(r, "command", "%s", cmd);
    static const report_col cols[] = {{"c", NULL, 4, -1}};
    report_table(r, NULL, cols, 1);
    report_str(r, cell);
    report_end_row(r);
    err e = {0};
    assert_int_equal(report_finish(r, &e), 0);
    report_free(r);
    fclose(f);
    char want_meta[1000], want_row[410];
    snprintf(want_meta, sizeof want_meta, "# command: %s\n", cmd);
    snprintf(want_row, sizeof want_row, "\n%s\n", cell);
    assert_non_null(strstr(buf, want_meta));
    assert_non_null(strstr(buf, want_row));
    free(buf);
}

static void test_many_meta(void **state)
{
    (void)state;
    /* Metadata has no count limit (it was 64, past which lines went without
     * a word; topo show lists about 70 keys): 200 lines in, 200 "# kI: I"
     * lines out in order, the last one included, and no meta_lost line. */
    char *buf = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&buf, &len);
    report *r = report_new(f, REPORT_CSV);
    char key[16];
    for (int i = 0; i < 200; i++) {
        snprintf(key, sizeof key, "k%d", i);
        report_meta(r, key, "%d", i);
    }
    static const report_col cols[] = {{"c", NULL, 4, -1}};
    report_table(r, NULL, cols, 1);
    report_int(r, 1);
    report_end_row(r);
    err e = {0};
    assert_int_equal(report_finish(r, &e), 0);
    report_free(r);
    fclose(f);
    int lines = 0;
    for (const char *p = buf; (p = strstr(p, "# k")); p++)
        lines++;
    assert_int_equal(lines, 200);
    assert_non_null(strstr(buf, "# k0: 0\n# k1: 1\n"));
    assert_non_null(strstr(buf, "# k198: 198\n# k199: 199\n"));
    assert_null(strstr(buf, "meta_lost"));
    free(buf);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_json_as_yajl),
        cmocka_unit_test(test_json_plain),
        cmocka_unit_test(test_long_values),
        cmocka_unit_test(test_many_meta),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
