/* Unit tests of the SVG plotter: structure of the output, log placement,
 * points dropped on log axes, and determinism. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>

#include "validate/plot.h"

static size_t count(const char *hay, const char *needle)
{
    size_t n = 0;
    for (const char *p = hay; (p = strstr(p, needle)); p += strlen(needle))
        n++;
    return n;
}

static char *render(void)
{
    plot *p = plot_new("allreduce <8 GPUs>", "size (bytes)", "time (us)");
    err e = {0};
    assert_int_equal(plot_panel(p, "ring", &e), 0);
    assert_int_equal(plot_panel(p, "oneshot", &e), 1);
    /* 4 measured points, one with y = 0 (dropped on a log axis). */
    const double x[] = {1e3, 1e4, 1e5, 1e6}, ym[] = {10, 20, 0, 400}, yp[] = {11, 19, 60, 380};
    assert_int_equal(plot_series(p, 0, "measured", PLOT_POINTS, x, ym, 4, &e), 0);
    assert_int_equal(plot_series(p, 0, "predicted", PLOT_LINE, x, yp, 4, &e), 0);
    assert_int_equal(plot_series(p, 1, "measured", PLOT_POINTS, x, yp, 2, &e), 0);
    char *buf = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&buf, &len);
    assert_int_equal(plot_write_svg(p, f, &e), 0);
    fclose(f);
    plot_free(p);
    return buf;
}

static void test_svg(void **state)
{
    (void)state;
    char *svg = render();
    assert_non_null(strstr(svg, "<svg xmlns=\"http://www.w3.org/2000/svg\""));
    assert_non_null(strstr(svg, "</svg>\n"));
    /* The title is escaped for XML. */
    assert_non_null(strstr(svg, "allreduce &lt;8 GPUs&gt;"));
    assert_non_null(strstr(svg, ">ring</text>"));
    assert_non_null(strstr(svg, ">oneshot</text>"));
    /* Circles: 3 positive measured points in panel 1 + 2 in panel 2, plus
     * one legend marker ("measured") = 6; one predicted polyline. */
    assert_int_equal(count(svg, "<circle"), 6);
    assert_int_equal(count(svg, "<polyline"), 1);
    /* Decade labels: x spans 1k..1M, so "1k", "10k", "100k", "1M" appear. */
    assert_non_null(strstr(svg, ">1k</text>"));
    assert_non_null(strstr(svg, ">1M</text>"));
    /* Panel 1: x decades 3..6 over the plot width 380-64-16 = 300 starting
     * at 64: x = 1e4 lands at 64 + 300/3 = 164.0. y decades 1..3 over
     * 280-28-48 = 204 from y0 = 56 + 18 (one legend row) + 28 = 102:
     * y = 100 lands at 102 + 102 = 204.0. The predicted line's second
     * point is (1e4, 19): y = 102 + 204 - 204*(log10(19)-1)/2. */
    char want[64];
    snprintf(want, sizeof want, "164.0,%.1f", 102 + 204 - 204 * (log10(19) - 1) / 2);
    assert_non_null(strstr(svg, want));
    /* Deterministic: the same input renders to the same bytes. */
    char *again = render();
    assert_string_equal(svg, again);
    free(again);
    free(svg);
}

static void test_empty(void **state)
{
    (void)state;
    plot *p = plot_new("t", "x", "y");
    err e = {0};
    int pi = plot_panel(p, "a", &e);
    const double x[] = {-1, 0}, y[] = {1, 1};
    assert_int_equal(plot_series(p, pi, "m", PLOT_POINTS, x, y, 2, &e), 0);
    FILE *f = fopen("/dev/null", "w");
    assert_int_equal(plot_write_svg(p, f, &e), ERR_CHECK);
    fclose(f);
    plot_free(p);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_svg),
        cmocka_unit_test(test_empty),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
