/* Predicted-against-measured plots as SVG, written directly: a grid of
 * panels, each with its own axes and its own legend inside the panel.
 * Panel kinds:
 *   PLOT_LOGLOG  x and y on log axes (decade ticks and labels, minor grid);
 *                series drawn as points or lines; plot_panel_diagonal adds
 *                the y = x line and a +-10% band (a parity plot)
 *   PLOT_LOGLIN  log x, linear y (error against size), a zero line
 *   PLOT_BARS    one category per x slot, measured (filled) and predicted
 *                (outlined) bars side by side, linear y from 0
 *   PLOT_HEAT    a matrix (e.g. source GPU x destination GPU) coloured by a
 *                signed value on a blue-white-red scale clamped at +-range
 *   PLOT_CATS    one slot per category, a bar per label side by side (grouped)
 *   PLOT_STACK   one bar per category, the labels' values stacked (a breakdown)
 * A series label (a data set, an algorithm) has one style in every panel: a
 * colour, and past the eight colours a marker shape and a dash pattern too,
 * so up to 32 labels stay distinct; bars of CATS and STACK panels take their
 * colours from the order of the labels in the panel. Legends sit to the right of
 * their panel's data, never over it. The plot copies what it is given. */
#ifndef VALIDATE_PLOT_H
#define VALIDATE_PLOT_H

#include <stddef.h>
#include <stdio.h>

#include "sim/err.h"

typedef enum plot_style { PLOT_POINTS, PLOT_LINE } plot_style;
typedef enum plot_kind {
    PLOT_LOGLOG, PLOT_LOGLIN, PLOT_BARS, PLOT_HEAT, PLOT_CATS, PLOT_STACK
} plot_kind;

typedef struct plot plot;

/* xlabel/ylabel are the default axis labels of panels. NULL on OOM. */
plot *plot_new(const char *title, const char *xlabel, const char *ylabel);
void plot_free(plot *p);                /* NULL ok */
/* Add a log-log panel with the default labels; returns its index, or -1 (ERR_SYSTEM in e). */
int plot_panel(plot *p, const char *name, err *e);
/* Add a panel of a kind; NULL labels take the plot's defaults. */
int plot_panel_kind(plot *p, const char *name, plot_kind kind, const char *xlabel,
                    const char *ylabel, err *e);
/* Parity panels: draw y = x and the +-10% lines (PLOT_LOGLOG; the axes then
 * share one range). */
void plot_panel_diagonal(plot *p, int panel);
/* PLOT_HEAT: the colour scale is clamped at +-range (default 25). */
void plot_panel_range(plot *p, int panel, double range);
/* Add a series to a LOGLOG or LOGLIN panel. Points whose coordinate on a log
 * axis is not positive, or that are not finite, are left out; a series of
 * the same label shares its colour. */
int plot_series(plot *p, int panel, const char *label, plot_style style, const double *x,
                const double *y, size_t n, err *e);
/* PLOT_BARS: a measured and a predicted value of category (shown under the
 * bars) for the data set label. */
int plot_bar(plot *p, int panel, const char *label, const char *category, double measured,
             double predicted, err *e);
/* PLOT_CATS, PLOT_STACK: the value of label in category (both shown in
 * first-appearance order); non-finite or negative values are left out. */
int plot_value(plot *p, int panel, const char *category, const char *label, double value,
               err *e);
/* LOGLOG, LOGLIN: a vertical marker at x with a short text (a crossover). */
int plot_mark_x(plot *p, int panel, double x, const char *text, err *e);
/* PLOT_HEAT: value at (row, col), both 0..255; the matrix is as large as the
 * largest index. */
int plot_cell(plot *p, int panel, int row, int col, double value, err *e);
/* Write the figure; ERR_CHECK if no panel has anything to draw, ERR_SYSTEM on I/O. */
int plot_write_svg(const plot *p, FILE *f, err *e);
/* plot_write_svg as an ofile_write_fn (arg: the plot), for ofile_write. */
int plot_svg_writer(FILE *f, void *plot, err *e);
/* The size the figure will have (SVG user units = pixels at 96 dpi). */
void plot_size(const plot *p, int *width, int *height);

#endif
