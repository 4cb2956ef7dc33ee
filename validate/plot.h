/* Predicted-against-measured plots as SVG, written directly: a grid of
 * panels (one per algorithm), each with log-log axes, decade ticks with
 * labels and minor grid lines; series drawn as points (measured) or lines
 * (predicted), colours by series label, one legend for the figure (one
 * entry per label: its marker and/or line). The plot copies what it is given. */
#ifndef VALIDATE_PLOT_H
#define VALIDATE_PLOT_H

#include <stddef.h>
#include <stdio.h>

#include "sim/err.h"

typedef enum plot_style { PLOT_POINTS, PLOT_LINE } plot_style;

typedef struct plot plot;

/* Axis labels apply to every panel. NULL on OOM. */
plot *plot_new(const char *title, const char *xlabel, const char *ylabel);
void plot_free(plot *p);                /* NULL ok */
/* Add a panel; returns its index, or -1 (ERR_SYSTEM in e). */
int plot_panel(plot *p, const char *name, err *e);
/* Add a series to a panel. Points with x or y not positive and finite are
 * left out (log axes); a series of the same label shares its colour. */
int plot_series(plot *p, int panel, const char *label, plot_style style, const double *x,
                const double *y, size_t n, err *e);
/* Write the figure; ERR_CHECK if no panel has a point, ERR_SYSTEM on I/O. */
int plot_write_svg(const plot *p, FILE *f, err *e);

#endif
