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

/* p written as SVG into a string (the caller frees it); p is freed. */
static char *svg_of(plot *p)
{
    err e = {0};
    char *buf = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&buf, &len);
    assert_int_equal(plot_write_svg(p, f, &e), 0);
    fclose(f);
    plot_free(p);
    return buf;
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
    return svg_of(p);
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
     * one legend marker per panel for "measured" = 7; one predicted polyline
     * (legend lines are <line>). */
    assert_int_equal(count(svg, "<circle"), 7);
    assert_int_equal(count(svg, "<polyline"), 1);
    /* Each panel has its legend, 2 legend boxes; panel 1's is outside its
     * data: the plot area ends at ML + (PW - ML - MR) = 64 + 340 = 404, the
     * legend column starts MR/2 + 4 = 12 past it, at 416. */
    assert_int_equal(count(svg, "fill-opacity=\"0.85\""), 2);
    assert_non_null(strstr(svg, "<rect x=\"416.0\" y=\"68.0\""));
    /* Decade labels: x spans 1k..1M, so "1k", "10k", "100k", "1M" appear. */
    assert_non_null(strstr(svg, ">1k</text>"));
    assert_non_null(strstr(svg, ">1M</text>"));
    /* Panel 1: plot area x0 = ML = 64, width PW-ML-MR = 420-64-16 = 340; x
     * decades 3..6, so x = 1e4 lands at 64 + 340/3 = 177.3. y0 = TOP + MT =
     * 40 + 28 = 68, height PH-MT-MB = 320-28-64 = 228; y values 10..400 give
     * decades 1..3, so the predicted line's second point (1e4, 19) has
     * y = 68 + 228 - 228*(log10(19)-1)/2. */
    char want[64];
    snprintf(want, sizeof want, "177.3,%.1f", 68 + 228 - 228 * (log10(19) - 1) / 2);
    assert_non_null(strstr(svg, want));
    int w, h;
    plot *p = plot_new("allreduce <8 GPUs>", "x", "y");
    err e = {0};
    plot_panel(p, "a", &e);
    plot_panel(p, "b", &e);
    plot_size(p, &w, &h);
    plot_free(p);
    /* Two panels side by side, each 420 plus its legend column: the longest
     * text is the 22-character fixed legend text, 48 + 6 x 22 = 180, so
     * 2 x 600 wide; the title band plus one row of 320. */
    assert_int_equal(w, 1200);
    assert_int_equal(h, 360);
    snprintf(want, sizeof want, "width=\"%d\" height=\"%d\"", w, h);
    assert_non_null(strstr(svg, want));
    /* Deterministic: the same input renders to the same bytes. */
    char *again = render();
    assert_string_equal(svg, again);
    free(again);
    free(svg);
}

static void test_kinds(void **state)
{
    (void)state;
    plot *p = plot_new("kinds", "x", "y");
    err e = {0};
    int par = plot_panel_kind(p, "parity", PLOT_LOGLOG, "measured", "predicted", &e);
    plot_panel_diagonal(p, par);
    const double m[] = {1, 10, 100}, q[] = {1.2, 9, 110};
    assert_int_equal(plot_series(p, par, "set", PLOT_POINTS, m, q, 3, &e), 0);
    int err_pan = plot_panel_kind(p, "error", PLOT_LOGLIN, NULL, NULL, &e);
    /* A negative y is kept on a linear axis, a zero x is dropped on the log one. */
    const double sx[] = {0, 1e3, 1e6}, sy[] = {5, -20, 10};
    assert_int_equal(plot_series(p, err_pan, "set", PLOT_POINTS, sx, sy, 3, &e), 0);
    int bars = plot_panel_kind(p, "bars", PLOT_BARS, "", "time (us)", &e);
    assert_int_equal(plot_bar(p, bars, "set", "0>4", 50, 100, &e), 0);
    int heat = plot_panel_kind(p, "heat", PLOT_HEAT, "dst", "src", &e);
    assert_int_equal(plot_cell(p, heat, 0, 1, 25, &e), 0);
    assert_int_equal(plot_cell(p, heat, 1, 0, 0, &e), 0);
    char *svg = svg_of(p);
    /* Parity: the dashed y = x line and the two dotted +-10% lines. */
    assert_int_equal(count(svg, "stroke-dasharray=\"6 3\""), 1);
    assert_int_equal(count(svg, "stroke-dasharray=\"2 3\""), 2);
    /* Error panel: y from -20 to 10, ticks every 5 (nice step of 30/5 = 6 -> 5): "-20" and "10". */
    assert_non_null(strstr(svg, ">-20</text>"));
    assert_non_null(strstr(svg, ">10</text>"));
    /* Heat: +25 at the clamp is the scale's red end #B2182B, 0 is white. */
    assert_non_null(strstr(svg, "fill=\"#B2182B\" stroke=\"white\""));
    assert_non_null(strstr(svg, "fill=\"#FFFFFF\" stroke=\"white\""));
    /* Bars: y axis 0..150 (1.45 x 100 headroom, step 50). Panel 3 is the third
     * of the first row: its plot area is y0 = 68, height 228, so the predicted
     * bar (100) starts at 68 + 228 - 228*100/150 = 144.0 and is 152.0 high,
     * the measured one (50) at 220.0, 76.0 high. */
    assert_non_null(strstr(svg, "y=\"144.0\" width="));
    assert_non_null(strstr(svg, "height=\"152.0\" fill=\"white\""));
    assert_non_null(strstr(svg, "y=\"220.0\" width="));
    assert_non_null(strstr(svg, ">0&gt;4</text>"));
    free(svg);
}

/* Past the 8 colours a label gets a marker shape and a dash pattern too. */
static void test_styles(void **state)
{
    (void)state;
    plot *p = plot_new("styles", "x", "y");
    err e = {0};
    int pts = plot_panel(p, "points", &e), lin = plot_panel(p, "lines", &e);
    const double x[] = {1, 10}, y[] = {1, 10};
    for (int i = 0; i < 9; i++) {
        char lab[8];
        snprintf(lab, sizeof lab, "s%d", i);
        assert_int_equal(plot_series(p, pts, lab, PLOT_POINTS, x, y, 2, &e), 0);
        assert_int_equal(plot_series(p, lin, lab, PLOT_LINE, x, y, 2, &e), 0);
    }
    assert_int_equal(plot_mark_x(p, lin, 3, "a -> b", &e), 0);
    char *svg = svg_of(p);
    /* s0..s7 are circles (2 points + 1 legend marker each = 24); s8 takes the
     * first colour again as a 7x7 square: 2 points + its legend marker = 3. */
    assert_int_equal(count(svg, "<circle"), 24);
    assert_int_equal(count(svg, "width=\"7\" height=\"7\" fill=\"none\" stroke-width=\"1.5\" "
                                "stroke=\"#0072B2\""), 3);
    /* s8's line and its legend line are dashed 7 3 (the mark is dashed 3 3). */
    assert_int_equal(count(svg, "stroke-dasharray=\"7 3\""), 2);
    assert_int_equal(count(svg, "stroke-dasharray=\"3 3\""), 1);
    assert_non_null(strstr(svg, ">a -&gt; b</text>"));
    free(svg);
}

/* Stacked bars: parts of one category on top of each other. */
static void test_stack(void **state)
{
    (void)state;
    plot *p = plot_new("stack", "variant", "us");
    err e = {0};
    int st = plot_panel_kind(p, "cycle", PLOT_STACK, NULL, NULL, &e);
    assert_int_equal(plot_value(p, st, "a", "compute", 30, &e), 0);
    assert_int_equal(plot_value(p, st, "a", "comm", 10, &e), 0);
    assert_int_equal(plot_value(p, st, "b", "compute", 20, &e), 0);
    assert_int_equal(plot_value(p, st, "b", "comm", NAN, &e), 0);  /* left out */
    char *svg = svg_of(p);
    /* y axis 0..50 (the tallest stack 40 x 1.05 = 42, step 10); plot area
     * y0 = 68, h = 228, x0 = 64, w = 340: two slots of 170, bars 0.7 x 170 =
     * 119 wide from 64 + 0.15 x 170 = 89.5. compute (0..30) is 228 x 30/50 =
     * 136.8 high from y = 296 - 136.8 = 159.2; comm (30..40) 45.6 high from
     * 296 - 228 x 40/50 = 113.6. */
    assert_non_null(strstr(svg, "x=\"89.5\" y=\"159.2\" width=\"119.0\" height=\"136.8\""));
    assert_non_null(strstr(svg, "x=\"89.5\" y=\"113.6\" width=\"119.0\" height=\"45.6\""));
    assert_non_null(strstr(svg, ">50</text>"));
    free(svg);
}

/* A category name wider than its slot wraps at spaces, onto three lines at
 * most: 6 slots of 340 / 6 = 56.7 units take 56.7 x 0.95 / 5.5 = 9 characters
 * a line, so "eagle3 ring (60% unexplained)" is "eagle3", "ring (60%"
 * (9) and the rest, centred at 64 + 56.7 x 0.5 = 92.3; a short one stays one
 * line. */
static void test_wrap(void **state)
{
    (void)state;
    plot *p = plot_new("wrap", "variant", "us");
    err e = {0};
    int st = plot_panel_kind(p, "cycle", PLOT_STACK, NULL, NULL, &e);
    assert_int_equal(plot_value(p, st, "eagle3 ring (60% unexplained)", "compute", 30, &e), 0);
    for (int k = 1; k < 6; k++) {
        char cat[8];
        snprintf(cat, sizeof cat, "v%d", k);
        assert_int_equal(plot_value(p, st, cat, "compute", 10, &e), 0);
    }
    char *svg = svg_of(p);
    assert_non_null(strstr(svg, "<tspan x=\"92.3\" dy=\"0\">eagle3</tspan><tspan x=\"92.3\" "
                                "dy=\"11\">ring (60%</tspan><tspan x=\"92.3\" "
                                "dy=\"11\">unexplained)</tspan>"));
    assert_non_null(strstr(svg, ">v1</text>"));
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
        cmocka_unit_test(test_kinds),
        cmocka_unit_test(test_styles),
        cmocka_unit_test(test_stack),
        cmocka_unit_test(test_wrap),
        cmocka_unit_test(test_empty),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
