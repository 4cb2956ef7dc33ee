/* SVG plotter. Each panel computes its own ranges from its data (log axes:
 * decade-aligned, at least one decade wide; linear axes: 1-2-5 steps), so
 * every panel is readable on its own, and carries its own legend in a column
 * to the right of its plot area, so no entry covers data. Coordinates are
 * printed with one decimal so output is byte-for-byte deterministic. A
 * label's style (colour, then marker and dash) is indexed by the order in
 * which labels first appear in the plot. */
#include "validate/plot.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

typedef struct series {
    char *label;
    plot_style style;
    double *x, *y;
    size_t n;
} series;

typedef struct bar {
    char *label, *category;
    double meas, pred;
} bar;

typedef struct cell {
    int row, col;
    double v;
} cell;

typedef struct mark {
    double x;
    char *text;
} mark;

typedef struct panel {
    char *name, *xlabel, *ylabel;
    plot_kind kind;
    int diagonal;
    double range;
    series *s;
    int ns;
    bar *b;
    int nb;
    cell *c;
    int nc;
    mark *m;
    int nm;
} panel;

struct plot {
    char *title, *xlabel, *ylabel;
    panel *pan;
    int np;
    char **labels;  /* distinct series labels, in order of first appearance */
    int nlabels;
};

/* Colour-blind safe palette (Okabe-Ito). */
static const char *const palette[] = {"#0072B2", "#D55E00", "#009E73", "#CC79A7",
                                      "#E69F00", "#56B4E9", "#000000", "#F0E442"};
enum { NPAL = sizeof palette / sizeof palette[0] };

/* Past the palette: marker shapes and dash patterns, so 32 labels differ. */
enum { NSHAPE = 4 };
static const char *const dashes[NSHAPE] = {"", " stroke-dasharray=\"7 3\"",
                                            " stroke-dasharray=\"2 2\"",
                                            " stroke-dasharray=\"9 3 2 3\""};

/* Layout, in SVG user units: panel size, margins inside a panel, columns,
 * the title band, legend rows, the legend column's width bounds. */
enum { PW = 420, PH = 320, ML = 64, MR = 16, MT = 28, MB = 64, COLS_MAX = 3, TOP = 40,
       LEG_ROW = 15, LEGW_MIN = 120, LEGW_MAX = 300 };

static char *sdup(const char *s) { return strdup(s ? s : ""); }

plot *plot_new(const char *title, const char *xlabel, const char *ylabel)
{
    plot *p = calloc(1, sizeof *p);
    if (!p)
        return NULL;
    p->title = sdup(title);
    p->xlabel = sdup(xlabel);
    p->ylabel = sdup(ylabel);
    if (!p->title || !p->xlabel || !p->ylabel) {
        plot_free(p);
        return NULL;
    }
    return p;
}

void plot_free(plot *p)
{
    if (!p)
        return;
    for (int i = 0; i < p->np; i++) {
        panel *q = &p->pan[i];
        for (int j = 0; j < q->ns; j++) {
            free(q->s[j].label);
            free(q->s[j].x);
            free(q->s[j].y);
        }
        for (int j = 0; j < q->nb; j++) {
            free(q->b[j].label);
            free(q->b[j].category);
        }
        for (int j = 0; j < q->nm; j++)
            free(q->m[j].text);
        free(q->s);
        free(q->b);
        free(q->c);
        free(q->m);
        free(q->name);
        free(q->xlabel);
        free(q->ylabel);
    }
    for (int i = 0; i < p->nlabels; i++)
        free(p->labels[i]);
    free(p->labels);
    free(p->pan);
    free(p->title);
    free(p->xlabel);
    free(p->ylabel);
    free(p);
}

int plot_panel_kind(plot *p, const char *name, plot_kind kind, const char *xlabel,
                    const char *ylabel, err *e)
{
    panel *np = realloc(p->pan, (size_t)(p->np + 1) * sizeof *np);
    if (!np)
        return err_set(e, ERR_SYSTEM, "out of memory"), -1;
    p->pan = np;
    panel *q = &p->pan[p->np];
    memset(q, 0, sizeof *q);
    q->kind = kind;
    q->range = 25;
    q->name = sdup(name);
    q->xlabel = sdup(xlabel ? xlabel : p->xlabel);
    q->ylabel = sdup(ylabel ? ylabel : p->ylabel);
    if (!q->name || !q->xlabel || !q->ylabel) {
        free(q->name);
        free(q->xlabel);
        free(q->ylabel);
        return err_set(e, ERR_SYSTEM, "out of memory"), -1;
    }
    return p->np++;
}

int plot_panel(plot *p, const char *name, err *e)
{
    return plot_panel_kind(p, name, PLOT_LOGLOG, NULL, NULL, e);
}

void plot_panel_diagonal(plot *p, int pi)
{
    ASSERTF(pi >= 0 && pi < p->np, "panel %d of %d", pi, p->np);
    p->pan[pi].diagonal = 1;
}

void plot_panel_range(plot *p, int pi, double range)
{
    ASSERTF(pi >= 0 && pi < p->np && range > 0, "panel %d of %d, range %g", pi, p->np, range);
    p->pan[pi].range = range;
}

/* Index of a label (its colour), added on first use; -1 on OOM. */
static int label_index(plot *p, const char *label, err *e)
{
    for (int i = 0; i < p->nlabels; i++)
        if (!strcmp(p->labels[i], label))
            return i;
    char **l = realloc(p->labels, (size_t)(p->nlabels + 1) * sizeof *l);
    if (!l || !(l[p->nlabels] = sdup(label))) {
        if (l)
            p->labels = l;
        return err_set(e, ERR_SYSTEM, "out of memory"), -1;
    }
    p->labels = l;
    return p->nlabels++;
}

static int index_of(const plot *p, const char *label)
{
    for (int i = 0; i < p->nlabels; i++)
        if (!strcmp(p->labels[i], label))
            return i;
    return 0;
}

static const char *colour_of(const plot *p, const char *label)
{
    return palette[index_of(p, label) % NPAL];
}

/* Marker shape and dash pattern of a label: the palette's first round plain. */
static int shape_of(const plot *p, const char *label)
{
    return (index_of(p, label) / NPAL) % NSHAPE;
}

/* A marker of shape (circle, square, triangle, diamond) at (x, y). */
static void marker(FILE *f, int shape, double x, double y, const char *c)
{
    const char *st = "fill=\"none\" stroke-width=\"1.5\"";
    switch (shape) {
    case 1:
        fprintf(f, "<rect x=\"%.1f\" y=\"%.1f\" width=\"7\" height=\"7\" %s stroke=\"%s\"/>\n",
                x - 3.5, y - 3.5, st, c);
        break;
    case 2:
        fprintf(f, "<path d=\"M%.1f %.1fL%.1f %.1fL%.1f %.1fZ\" %s stroke=\"%s\"/>\n", x, y - 4.5,
                x + 4, y + 3, x - 4, y + 3, st, c);
        break;
    case 3:
        fprintf(f, "<path d=\"M%.1f %.1fL%.1f %.1fL%.1f %.1fL%.1f %.1fZ\" %s stroke=\"%s\"/>\n", x,
                y - 4.5, x + 4.5, y, x, y + 4.5, x - 4.5, y, st, c);
        break;
    default:
        fprintf(f, "<circle cx=\"%.1f\" cy=\"%.1f\" r=\"3.5\" %s stroke=\"%s\"/>\n", x, y, st, c);
    }
}

int plot_series(plot *p, int pi, const char *label, plot_style style, const double *x,
                const double *y, size_t n, err *e)
{
    ASSERTF(pi >= 0 && pi < p->np, "panel %d of %d", pi, p->np);
    panel *pan = &p->pan[pi];
    ASSERTF(pan->kind == PLOT_LOGLOG || pan->kind == PLOT_LOGLIN, "series on panel kind %d",
            (int)pan->kind);
    if (label_index(p, label, e) < 0)
        return ERR_SYSTEM;
    series *s = realloc(pan->s, (size_t)(pan->ns + 1) * sizeof *s);
    if (!s)
        return err_set(e, ERR_SYSTEM, "out of memory");
    pan->s = s;
    series *z = &pan->s[pan->ns];
    *z = (series){sdup(label), style, malloc((n ? n : 1) * sizeof(double)),
                  malloc((n ? n : 1) * sizeof(double)), 0};
    if (!z->label || !z->x || !z->y) {
        free(z->label);
        free(z->x);
        free(z->y);
        return err_set(e, ERR_SYSTEM, "out of memory");
    }
    int ylog = pan->kind == PLOT_LOGLOG;
    for (size_t i = 0; i < n; i++)
        if (x[i] > 0 && isfinite(x[i]) && isfinite(y[i]) && (!ylog || y[i] > 0)) {
            z->x[z->n] = x[i];
            z->y[z->n] = y[i];
            z->n++;
        }
    pan->ns++;
    return 0;
}

int plot_bar(plot *p, int pi, const char *label, const char *category, double measured,
             double predicted, err *e)
{
    ASSERTF(pi >= 0 && pi < p->np && p->pan[pi].kind >= PLOT_BARS && p->pan[pi].kind != PLOT_HEAT,
            "bar on panel %d", pi);
    panel *pan = &p->pan[pi];
    if (label_index(p, label, e) < 0)
        return ERR_SYSTEM;
    bar *b = realloc(pan->b, (size_t)(pan->nb + 1) * sizeof *b);
    if (!b)
        return err_set(e, ERR_SYSTEM, "out of memory");
    pan->b = b;
    bar *z = &pan->b[pan->nb];
    *z = (bar){sdup(label), sdup(category), measured, predicted};
    if (!z->label || !z->category) {
        free(z->label);
        free(z->category);
        return err_set(e, ERR_SYSTEM, "out of memory");
    }
    pan->nb++;
    return 0;
}

int plot_value(plot *p, int pi, const char *category, const char *label, double value, err *e)
{
    ASSERTF(pi >= 0 && pi < p->np &&
                (p->pan[pi].kind == PLOT_CATS || p->pan[pi].kind == PLOT_STACK),
            "value on panel %d", pi);
    if (!isfinite(value) || value < 0)
        return 0;
    return plot_bar(p, pi, label, category, value, NAN, e);
}

int plot_mark_x(plot *p, int pi, double x, const char *text, err *e)
{
    ASSERTF(pi >= 0 && pi < p->np &&
                (p->pan[pi].kind == PLOT_LOGLOG || p->pan[pi].kind == PLOT_LOGLIN),
            "mark on panel %d", pi);
    panel *pan = &p->pan[pi];
    mark *m = realloc(pan->m, (size_t)(pan->nm + 1) * sizeof *m);
    if (!m)
        return err_set(e, ERR_SYSTEM, "out of memory");
    pan->m = m;
    if (!(m[pan->nm].text = sdup(text)))
        return err_set(e, ERR_SYSTEM, "out of memory");
    m[pan->nm++].x = x;
    return 0;
}

int plot_cell(plot *p, int pi, int row, int col, double value, err *e)
{
    ASSERTF(pi >= 0 && pi < p->np && p->pan[pi].kind == PLOT_HEAT, "cell on panel %d", pi);
    ASSERTF(row >= 0 && row < 256 && col >= 0 && col < 256, "cell %d,%d", row, col);
    panel *pan = &p->pan[pi];
    cell *c = realloc(pan->c, (size_t)(pan->nc + 1) * sizeof *c);
    if (!c)
        return err_set(e, ERR_SYSTEM, "out of memory");
    pan->c = c;
    pan->c[pan->nc++] = (cell){row, col, value};
    return 0;
}

/* "1", "10", "100", "1k", ..., "0.1": the label of 10^k. */
static void decade_label(int k, char *buf, size_t len)
{
    static const char *const suffix[] = {"", "k", "M", "G", "T", "P"};
    if (k < 0) {
        snprintf(buf, len, "%.*f", -k, pow(10, k));
        return;
    }
    int g = k / 3 < 5 ? k / 3 : 5;
    snprintf(buf, len, "%.0f%s", pow(10, k - 3 * g), suffix[g]);
}

static void xml_text(FILE *f, const char *s)
{
    for (; *s; s++) {
        switch (*s) {
        case '<': fputs("&lt;", f); break;
        case '>': fputs("&gt;", f); break;
        case '&': fputs("&amp;", f); break;
        case '"': fputs("&quot;", f); break;
        default: fputc(*s, f);
        }
    }
}

/* A plot area and its two axes: log axes in decades k0..k1, linear in lo..hi. */
typedef struct axis {
    int log;
    double lo, hi;  /* log: decades */
    double step;    /* linear: the tick step */
} axis;

typedef struct axes {
    double x0, y0, w, h;
    axis x, y;
} axes;

static double pos(const axis *a, double v)
{
    double t = a->log ? log10(v) : v;
    return (t - a->lo) / (a->hi - a->lo);
}
static double ax_x(const axes *a, double x) { return a->x0 + a->w * pos(&a->x, x); }
static double ax_y(const axes *a, double y) { return a->y0 + a->h - a->h * pos(&a->y, y); }

/* Range of a panel's x (xaxis) or y values. */
static void data_range(const panel *pan, int xaxis, double *lo, double *hi)
{
    *lo = INFINITY;
    *hi = -INFINITY;
    for (int i = 0; i < pan->ns; i++)
        for (size_t j = 0; j < pan->s[i].n; j++) {
            double v = xaxis ? pan->s[i].x[j] : pan->s[i].y[j];
            *lo = v < *lo ? v : *lo;
            *hi = v > *hi ? v : *hi;
        }
}

static void log_axis(double lo, double hi, axis *a)
{
    a->log = 1;
    if (!(lo <= hi)) {
        a->lo = 0, a->hi = 1;
        return;
    }
    a->lo = floor(log10(lo) + 1e-9);
    a->hi = ceil(log10(hi) - 1e-9);
    if (a->hi <= a->lo)
        a->hi = a->lo + 1;
}

/* A 1-2-5 step giving about 5 intervals over span. */
static double nice_step(double span)
{
    double raw = span / 5, mag = pow(10, floor(log10(raw)));
    double m = raw / mag;
    return (m <= 1 ? 1 : m <= 2 ? 2 : m <= 5 ? 5 : 10) * mag;
}

static void lin_axis(double lo, double hi, axis *a)
{
    a->log = 0;
    if (!(lo <= hi))
        lo = 0, hi = 1;
    if (hi - lo < 1e-12)
        lo -= 1, hi += 1;
    double st = nice_step(hi - lo);
    a->lo = floor(lo / st) * st;
    a->hi = ceil(hi / st) * st;
    a->step = st;
}

static void line(FILE *f, double x1, double y1, double x2, double y2, const char *style)
{
    fprintf(f, "<line x1=\"%.1f\" y1=\"%.1f\" x2=\"%.1f\" y2=\"%.1f\" %s/>\n", x1, y1, x2, y2,
            style);
}

/* A tick label: "-20", "0.5", "800k", "1.5M" (k/M from 10000 on, so labels stay short). */
static void num_label(double v, double step, char *buf, size_t n)
{
    if (fabs(v) < step / 1e6)
        v = 0;
    double div = 1;
    const char *suf = "";
    if (step >= 1e5 || fabs(v) >= 1e6)
        div = 1e6, suf = "M";
    else if (step >= 1e3 || fabs(v) >= 1e4)
        div = 1e3, suf = "k";
    double st = step / div;
    int dec = st >= 1 ? 0 : (int)ceil(-log10(st) - 1e-9);
    snprintf(buf, n, "%.*f%s", dec, v / div, v == 0 ? "" : suf);
}

/* Grid, ticks and labels of one axis (xaxis: vertical lines). */
static void draw_axis(FILE *f, const axes *a, int xaxis)
{
    const axis *ax = xaxis ? &a->x : &a->y;
    char lab[32];
    if (ax->log) {
        for (int k = (int)ax->lo; k <= (int)ax->hi; k++) {
            for (int m = 2; m <= 9 && k < (int)ax->hi; m++) {
                double v = m * pow(10, k);
                if (xaxis)
                    line(f, ax_x(a, v), a->y0, ax_x(a, v), a->y0 + a->h, "stroke=\"#eee\"");
                else
                    line(f, a->x0, ax_y(a, v), a->x0 + a->w, ax_y(a, v), "stroke=\"#eee\"");
            }
            decade_label(k, lab, sizeof lab);
            double v = pow(10, k);
            if (xaxis) {
                line(f, ax_x(a, v), a->y0, ax_x(a, v), a->y0 + a->h + 4, "stroke=\"#ccc\"");
                fprintf(f, "<text x=\"%.1f\" y=\"%.1f\" text-anchor=\"middle\">%s</text>\n",
                        ax_x(a, v), a->y0 + a->h + 18, lab);
            } else {
                line(f, a->x0 - 4, ax_y(a, v), a->x0 + a->w, ax_y(a, v), "stroke=\"#ccc\"");
                fprintf(f, "<text x=\"%.1f\" y=\"%.1f\" text-anchor=\"end\">%s</text>\n",
                        a->x0 - 6, ax_y(a, v) + 4, lab);
            }
        }
        return;
    }
    double st = ax->step > 0 ? ax->step : nice_step(ax->hi - ax->lo);
    for (int i = 0;; i++) {
        double v = ax->lo + st * i;
        if (v > ax->hi + st / 2)
            break;
        num_label(v, st, lab, sizeof lab);
        if (xaxis) {
            line(f, ax_x(a, v), a->y0, ax_x(a, v), a->y0 + a->h + 4, "stroke=\"#ccc\"");
            fprintf(f, "<text x=\"%.1f\" y=\"%.1f\" text-anchor=\"middle\">%s</text>\n",
                    ax_x(a, v), a->y0 + a->h + 18, lab);
        } else {
            line(f, a->x0 - 4, ax_y(a, v), a->x0 + a->w, ax_y(a, v), "stroke=\"#ccc\"");
            fprintf(f, "<text x=\"%.1f\" y=\"%.1f\" text-anchor=\"end\">%s</text>\n", a->x0 - 6,
                    ax_y(a, v) + 4, lab);
        }
    }
}

/* Frame, title and axis labels of a panel. */
static void draw_frame(FILE *f, const panel *pan, const axes *a, double ox)
{
    fprintf(f, "<rect x=\"%.1f\" y=\"%.1f\" width=\"%.1f\" height=\"%.1f\" fill=\"none\" "
               "stroke=\"#333\"/>\n", a->x0, a->y0, a->w, a->h);
    fprintf(f, "<text x=\"%.1f\" y=\"%.1f\" text-anchor=\"middle\" font-weight=\"bold\">",
            a->x0 + a->w / 2, a->y0 - 10);
    xml_text(f, pan->name);
    /* under category names, which wrap onto three lines: lower */
    int cats = pan->kind == PLOT_CATS || pan->kind == PLOT_STACK;
    fprintf(f, "</text>\n<text x=\"%.1f\" y=\"%.1f\" text-anchor=\"middle\">", a->x0 + a->w / 2,
            a->y0 + a->h + (cats ? 54 : 36));
    xml_text(f, pan->xlabel);
    fprintf(f, "</text>\n<text text-anchor=\"middle\" transform=\"translate(%.1f %.1f) "
               "rotate(-90)\">", ox + 16, a->y0 + a->h / 2);
    xml_text(f, pan->ylabel);
    fputs("</text>\n", f);
}

/* A legend column to the right of the plot area: one row per entry (colour,
 * mark 'p' point / 'l' line / 'b' filled box / 'o' outlined box, shape and
 * dash of the label); entries past the column's height are counted. */
typedef struct legend_entry {
    const char *text, *colour;
    char mark;
    int shape;
} legend_entry;

static void draw_legend(FILE *f, const axes *a, double legw, const legend_entry *le, int n)
{
    if (!n)
        return;
    int fit = (int)((PH - MT - 12) / LEG_ROW), shown = n <= fit ? n : fit - 1;
    double w = legw - 12, h = 6 + LEG_ROW * (shown < n ? shown + 1 : shown);
    double x = a->x0 + a->w + MR / 2.0 + 4, y = a->y0;
    fprintf(f, "<g font-size=\"10\"><rect x=\"%.1f\" y=\"%.1f\" width=\"%.1f\" height=\"%.1f\" "
               "fill=\"white\" fill-opacity=\"0.85\" stroke=\"#999\"/>\n", x, y, w, h);
    for (int i = 0; i < shown; i++) {
        double yy = y + 3 + LEG_ROW * i + LEG_ROW / 2.0;
        switch (le[i].mark) {
        case 'l':
            fprintf(f, "<line x1=\"%.1f\" y1=\"%.1f\" x2=\"%.1f\" y2=\"%.1f\" stroke=\"%s\" "
                       "stroke-width=\"2\"%s/>\n", x + 5, yy, x + 25, yy, le[i].colour,
                    dashes[le[i].shape]);
            break;
        case 'b':
        case 'o':
            fprintf(f, "<rect x=\"%.1f\" y=\"%.1f\" width=\"12\" height=\"9\" fill=\"%s\" "
                       "stroke=\"%s\"/>\n", x + 9, yy - 4.5, le[i].mark == 'b' ? le[i].colour : "white",
                    le[i].colour);
            break;
        default:
            marker(f, le[i].shape, x + 15, yy, le[i].colour);
        }
        fprintf(f, "<text x=\"%.1f\" y=\"%.1f\">", x + 30, yy + 3.5);
        xml_text(f, le[i].text);
        fputs("</text>\n", f);
    }
    if (shown < n)
        fprintf(f, "<text x=\"%.1f\" y=\"%.1f\">... and %d more</text>\n", x + 30,
                y + 3 + LEG_ROW * shown + LEG_ROW / 2.0 + 3.5, n - shown);
    fputs("</g>\n", f);
}

enum { LEG_MAX = 40 };

static void draw_xy(const plot *p, const panel *pan, const axes *a0, double legw, FILE *f)
{
    axes a = *a0;
    double xlo, xhi, ylo, yhi;
    data_range(pan, 1, &xlo, &xhi);
    data_range(pan, 0, &ylo, &yhi);
    if (pan->kind == PLOT_LOGLOG) {
        if (pan->diagonal) {  /* one range for both: y = x is the diagonal */
            xlo = ylo = xlo < ylo ? xlo : ylo;
            xhi = yhi = xhi > yhi ? xhi : yhi;
        }
        log_axis(xlo, xhi, &a.x);
        log_axis(ylo, yhi, &a.y);
    } else {
        log_axis(xlo, xhi, &a.x);
        lin_axis(ylo < 0 ? ylo : 0, yhi > 0 ? yhi : 0, &a.y);
    }
    draw_axis(f, &a, 1);
    draw_axis(f, &a, 0);
    fprintf(f, "<clipPath id=\"c%.0f_%.0f\"><rect x=\"%.1f\" y=\"%.1f\" width=\"%.1f\" "
               "height=\"%.1f\"/></clipPath>\n<g clip-path=\"url(#c%.0f_%.0f)\">\n",
            a.x0, a.y0, a.x0, a.y0, a.w, a.h, a.x0, a.y0);
    if (pan->diagonal) {
        double lo = pow(10, a.x.lo), hi = pow(10, a.x.hi);
        line(f, ax_x(&a, lo), ax_y(&a, lo), ax_x(&a, hi), ax_y(&a, hi),
             "stroke=\"#555\" stroke-dasharray=\"6 3\"");
        line(f, ax_x(&a, lo), ax_y(&a, lo * 1.1), ax_x(&a, hi / 1.1), ax_y(&a, hi),
             "stroke=\"#bbb\" stroke-dasharray=\"2 3\"");
        line(f, ax_x(&a, lo / 0.9), ax_y(&a, lo), ax_x(&a, hi), ax_y(&a, hi * 0.9),
             "stroke=\"#bbb\" stroke-dasharray=\"2 3\"");
    }
    if (!a.y.log && a.y.lo < 0 && a.y.hi > 0)
        line(f, a.x0, ax_y(&a, 0), a.x0 + a.w, ax_y(&a, 0), "stroke=\"#555\"");
    /* Marks (crossovers) under the data: a dotted line, its text at the top. */
    for (int i = 0; i < pan->nm; i++) {
        double x = ax_x(&a, pan->m[i].x);
        line(f, x, a.y0, x, a.y0 + a.h, "stroke=\"#888\" stroke-dasharray=\"3 3\"");
        fprintf(f, "<text font-size=\"9\" fill=\"#444\" transform=\"translate(%.1f %.1f) "
                   "rotate(90)\">", x + 3, a.y0 + 4);
        xml_text(f, pan->m[i].text);
        fputs("</text>\n", f);
    }
    /* Lines first, points on top. */
    for (int pass = 0; pass < 2; pass++)
        for (int i = 0; i < pan->ns; i++) {
            const series *s = &pan->s[i];
            const char *c = colour_of(p, s->label);
            int sh = shape_of(p, s->label);
            if (pass == 0 && s->style == PLOT_LINE && s->n) {
                fprintf(f, "<polyline fill=\"none\" stroke=\"%s\" stroke-width=\"2\"%s points=\"",
                        c, dashes[sh]);
                for (size_t j = 0; j < s->n; j++)
                    fprintf(f, "%s%.1f,%.1f", j ? " " : "", ax_x(&a, s->x[j]), ax_y(&a, s->y[j]));
                fputs("\"/>\n", f);
            }
            if (pass == 1 && s->style == PLOT_POINTS)
                for (size_t j = 0; j < s->n; j++)
                    marker(f, sh, ax_x(&a, s->x[j]), ax_y(&a, s->y[j]), c);
        }
    fputs("</g>\n", f);
    /* Legend: one entry per label and style in this panel. */
    legend_entry le[LEG_MAX];
    char text[LEG_MAX][80];
    int n = 0, styles = 0;
    for (int i = 0; i < pan->ns; i++)
        styles |= 1 << pan->s[i].style;
    for (int i = 0; i < pan->ns && n < LEG_MAX; i++) {
        int dup = 0;
        for (int j = 0; j < i; j++)
            dup |= !strcmp(pan->s[j].label, pan->s[i].label) && pan->s[j].style == pan->s[i].style;
        if (dup)
            continue;
        snprintf(text[n], sizeof text[0], "%s%s", pan->s[i].label,
                 styles == 3 ? (pan->s[i].style == PLOT_LINE ? " (predicted)" : " (measured)") : "");
        le[n] = (legend_entry){text[n], colour_of(p, pan->s[i].label),
                               pan->s[i].style == PLOT_LINE ? 'l' : 'p', shape_of(p, pan->s[i].label)};
        n++;
    }
    if (pan->diagonal && n < LEG_MAX)
        le[n++] = (legend_entry){"y = x (dotted: +-10%)", "#555", 'l', 1};
    draw_legend(f, &a, legw, le, n);
}

static void draw_bars(const plot *p, const panel *pan, const axes *a0, double legw, FILE *f)
{
    axes a = *a0;
    /* Categories in order of first appearance; sets within a category likewise. */
    const char *cats[256];
    int ncat = 0;
    double hi = 0;
    for (int i = 0; i < pan->nb; i++) {
        int k = 0;
        while (k < ncat && strcmp(cats[k], pan->b[i].category))
            k++;
        if (k == ncat && ncat < 256)
            cats[ncat++] = pan->b[i].category;
        if (isfinite(pan->b[i].meas) && pan->b[i].meas > hi)
            hi = pan->b[i].meas;
        if (isfinite(pan->b[i].pred) && pan->b[i].pred > hi)
            hi = pan->b[i].pred;
    }
    a.x = (axis){0, 0, ncat ? ncat : 1, 1};
    /* Values over more than two decades: a log axis, bars from its bottom. */
    double lo = INFINITY;
    for (int i = 0; i < pan->nb; i++) {
        if (pan->b[i].meas > 0 && pan->b[i].meas < lo)
            lo = pan->b[i].meas;
        if (pan->b[i].pred > 0 && pan->b[i].pred < lo)
            lo = pan->b[i].pred;
    }
    if (hi > 0 && lo < hi / 100)
        log_axis(lo, hi * 8, &a.y);    /* headroom for the legend */
    else
        lin_axis(0, hi * 1.45, &a.y);
    double base = a.y.log ? pow(10, a.y.lo) : 0;
    draw_axis(f, &a, 0);
    double slot = a.w / (ncat ? ncat : 1);
    int rotate = ncat > 6;
    for (int k = 0; k < ncat; k++) {
        int nset = 0, idx = 0;
        for (int i = 0; i < pan->nb; i++)
            nset += !strcmp(pan->b[i].category, cats[k]);
        double bw = slot * 0.8 / (2 * (nset ? nset : 1)), x = a.x0 + slot * k + slot * 0.1;
        for (int i = 0; i < pan->nb; i++) {
            const bar *b = &pan->b[i];
            if (strcmp(b->category, cats[k]))
                continue;
            const char *c = colour_of(p, b->label);
            double vals[2] = {b->meas, b->pred};
            for (int m = 0; m < 2; m++, idx++) {
                if (!isfinite(vals[m]) || vals[m] <= base)
                    continue;
                double y = ax_y(&a, vals[m]);
                fprintf(f, "<rect x=\"%.1f\" y=\"%.1f\" width=\"%.1f\" height=\"%.1f\" "
                           "fill=\"%s\" stroke=\"%s\"/>\n", x + bw * idx, y, bw,
                        a.y0 + a.h - y, m ? "white" : c, c);
            }
        }
        double cx = a.x0 + slot * (k + 0.5), cy = a.y0 + a.h + 14;
        if (rotate)
            fprintf(f, "<text font-size=\"9\" text-anchor=\"end\" transform=\"translate(%.1f %.1f) "
                       "rotate(-35)\">", cx + 3, cy - 4);
        else
            fprintf(f, "<text font-size=\"10\" text-anchor=\"middle\" x=\"%.1f\" y=\"%.1f\">", cx,
                    cy);
        xml_text(f, cats[k]);
        fputs("</text>\n", f);
    }
    legend_entry le[LEG_MAX];
    int n = 0;
    for (int i = 0; i < pan->nb && n + 2 < LEG_MAX; i++) {
        int dup = 0;
        for (int j = 0; j < i; j++)
            dup |= !strcmp(pan->b[j].label, pan->b[i].label);
        if (!dup)
            le[n++] = (legend_entry){pan->b[i].label, colour_of(p, pan->b[i].label), 'b', 0};
    }
    le[n++] = (legend_entry){"filled: measured", "#555", 'b', 0};
    le[n++] = (legend_entry){"outlined: predicted", "#555", 'o', 0};
    draw_legend(f, &a, legw, le, n);
}

/* A category's name under its slot at (cx, cy): turned 35 degrees when
 * rotate, else centred, its words wrapped onto at most three lines when it is
 * wider than the slot (about 5.5 units per character at size 10). */
static void cat_label(FILE *f, double cx, double cy, double slot, int rotate, const char *text)
{
    if (rotate) {
        fprintf(f, "<text font-size=\"9\" text-anchor=\"end\" transform=\"translate(%.1f %.1f) "
                   "rotate(-35)\">", cx + 3, cy - 4);
        xml_text(f, text);
        fputs("</text>\n", f);
        return;
    }
    size_t fit = (size_t)(slot * 0.95 / 5.5), len = strlen(text);
    fprintf(f, "<text font-size=\"10\" text-anchor=\"middle\" x=\"%.1f\" y=\"%.1f\">", cx, cy);
    if (len <= fit || fit < 4) {
        xml_text(f, text);
        fputs("</text>\n", f);
        return;
    }
    char buf[512];
    snprintf(buf, sizeof buf, "%s", text);
    char *at = buf;
    for (int lines = 0; *at && lines < 3; lines++) {
        /* the longest run of whole words that fits (one word at least);
         * the third line takes the rest */
        size_t n = strlen(at);
        if (n > fit && lines < 2) {
            size_t cut = fit;
            while (cut > 0 && at[cut] != ' ')
                cut--;
            if (cut == 0)
                while (at[cut] && at[cut] != ' ')
                    cut++;
            n = cut;
        }
        char keep = at[n];
        at[n] = 0;
        fprintf(f, "<tspan x=\"%.1f\" dy=\"%d\">", cx, lines ? 11 : 0);
        xml_text(f, at);
        fputs("</tspan>", f);
        at[n] = keep;
        at += n;
        while (*at == ' ')
            at++;
    }
    fputs("</text>\n", f);
}

/* PLOT_CATS (bars side by side) and PLOT_STACK (stacked): categories in
 * first-appearance order along x, labels in first-appearance order, coloured
 * by that order in the panel (filled areas need distinct colours; panels fed
 * the same labels in the same order match). */
static void draw_cats(const panel *pan, const axes *a0, double legw, FILE *f)
{
    axes a = *a0;
    enum { NMAX = 256 };
    const char *cats[NMAX], *labs[LEG_MAX];
    int ncat = 0, nlab = 0, stack = pan->kind == PLOT_STACK;
    double tot[NMAX] = {0}, hi = 0;
    for (int i = 0; i < pan->nb; i++) {
        int k = 0, l = 0;
        while (k < ncat && strcmp(cats[k], pan->b[i].category))
            k++;
        if (k == ncat && ncat < NMAX)
            cats[ncat++] = pan->b[i].category;
        while (l < nlab && strcmp(labs[l], pan->b[i].label))
            l++;
        if (l == nlab && nlab < LEG_MAX)
            labs[nlab++] = pan->b[i].label;
        if (k < NMAX)
            tot[k] = stack ? tot[k] + pan->b[i].meas : fmax(tot[k], pan->b[i].meas);
        hi = k < NMAX && tot[k] > hi ? tot[k] : hi;
    }
    a.x = (axis){0, 0, ncat ? ncat : 1, 1};
    lin_axis(0, hi * 1.05, &a.y);
    draw_axis(f, &a, 0);
    double slot = a.w / (ncat ? ncat : 1);
    int rotate = ncat > 6;
    for (int k = 0; k < ncat; k++) {
        double x = a.x0 + slot * k + slot * 0.15, w = slot * 0.7, base = 0;
        for (int l = 0; l < nlab; l++)
            for (int i = 0; i < pan->nb; i++) {
                const bar *b = &pan->b[i];
                if (strcmp(b->category, cats[k]) || strcmp(b->label, labs[l]))
                    continue;
                double y0 = ax_y(&a, base), y1 = ax_y(&a, base + b->meas);
                double bx = stack ? x : x + w / nlab * l, bw = stack ? w : w / nlab;
                fprintf(f, "<rect x=\"%.1f\" y=\"%.1f\" width=\"%.1f\" height=\"%.1f\" "
                           "fill=\"%s\" stroke=\"white\" stroke-width=\"0.5\"/>\n", bx, y1, bw,
                        y0 - y1, palette[l % NPAL]);
                if (stack)
                    base += b->meas;
            }
        cat_label(f, a.x0 + slot * (k + 0.5), a.y0 + a.h + 14, slot, rotate, cats[k]);
    }
    legend_entry le[LEG_MAX];
    for (int l = 0; l < nlab; l++)
        le[l] = (legend_entry){labs[l], palette[l % NPAL], 'b', 0};
    draw_legend(f, &a, legw, le, nlab);
}

/* Blue (negative) - white - red (positive), t in [-1, 1]. */
static void diverging(double t, char *buf, size_t n)
{
    t = t < -1 ? -1 : t > 1 ? 1 : t;
    int r, g, b;
    if (t < 0) {
        r = (int)lround(255 + (33 - 255) * -t);
        g = (int)lround(255 + (102 - 255) * -t);
        b = (int)lround(255 + (172 - 255) * -t);
    } else {
        r = (int)lround(255 + (178 - 255) * t);
        g = (int)lround(255 + (24 - 255) * t);
        b = (int)lround(255 + (43 - 255) * t);
    }
    snprintf(buf, n, "#%02X%02X%02X", r, g, b);
}

static void draw_heat(const panel *pan, const axes *a0, FILE *f)
{
    axes a = *a0;
    int nr = 0, nc = 0;
    for (int i = 0; i < pan->nc; i++) {
        nr = pan->c[i].row + 1 > nr ? pan->c[i].row + 1 : nr;
        nc = pan->c[i].col + 1 > nc ? pan->c[i].col + 1 : nc;
    }
    int n = nr > nc ? nr : nc;
    if (!n)
        return;
    /* Square cells, leaving room on the right for the colour scale. */
    double side = (a.w - 40) < a.h ? (a.w - 40) : a.h, cs = side / n;
    fprintf(f, "<rect x=\"%.1f\" y=\"%.1f\" width=\"%.1f\" height=\"%.1f\" fill=\"#ddd\"/>\n",
            a.x0, a.y0, cs * n, cs * n);
    for (int i = 0; i < pan->nc; i++) {
        char col[8];
        diverging(pan->c[i].v / pan->range, col, sizeof col);
        double x = a.x0 + cs * pan->c[i].col, y = a.y0 + cs * pan->c[i].row;
        fprintf(f, "<rect x=\"%.1f\" y=\"%.1f\" width=\"%.1f\" height=\"%.1f\" fill=\"%s\" "
                   "stroke=\"white\"/>\n", x, y, cs, cs, col);
        if (n <= 12)
            fprintf(f, "<text x=\"%.1f\" y=\"%.1f\" font-size=\"%d\" text-anchor=\"middle\">%.0f"
                       "</text>\n", x + cs / 2, y + cs / 2 + 3, n <= 8 ? 10 : 8, pan->c[i].v);
    }
    for (int k = 0; k < n && n <= 32; k++) {
        fprintf(f, "<text x=\"%.1f\" y=\"%.1f\" font-size=\"10\" text-anchor=\"middle\">%d</text>\n",
                a.x0 + cs * (k + 0.5), a.y0 + cs * n + 14, k);
        fprintf(f, "<text x=\"%.1f\" y=\"%.1f\" font-size=\"10\" text-anchor=\"end\">%d</text>\n",
                a.x0 - 4, a.y0 + cs * (k + 0.5) + 3, k);
    }
    /* Colour scale: +range at the top, -range at the bottom. */
    double sx = a.x0 + cs * n + 14, sh = cs * n;
    for (int k = 0; k < 20; k++) {
        char col[8];
        diverging(1 - (k + 0.5) / 10.0, col, sizeof col);
        fprintf(f, "<rect x=\"%.1f\" y=\"%.1f\" width=\"10\" height=\"%.1f\" fill=\"%s\"/>\n", sx,
                a.y0 + sh * k / 20, sh / 20 + 0.5, col);
    }
    fprintf(f, "<text x=\"%.1f\" y=\"%.1f\" font-size=\"9\">+%g</text>\n"
               "<text x=\"%.1f\" y=\"%.1f\" font-size=\"9\">0</text>\n"
               "<text x=\"%.1f\" y=\"%.1f\" font-size=\"9\">-%g</text>\n",
            sx + 12, a.y0 + 8, pan->range, sx + 12, a.y0 + sh / 2 + 3, sx + 12, a.y0 + sh,
            pan->range);
}

/* The legend column's width: the longest label (with a "(predicted)"
 * suffix) or fixed text, within LEGW_MIN..LEGW_MAX; 0 when every panel is a
 * heat map (their colour scale is their legend). */
static int legend_width(const plot *p)
{
    int any = 0;
    size_t len = 22;  /* "y = x (dotted: +-10%)", "outlined: predicted" */
    for (int i = 0; i < p->np; i++)
        any |= p->pan[i].kind != PLOT_HEAT;
    for (int i = 0; i < p->nlabels; i++)
        len = strlen(p->labels[i]) + 12 > len ? strlen(p->labels[i]) + 12 : len;
    int w = 48 + (int)(6.0 * (double)len);
    return !any ? 0 : w < LEGW_MIN ? LEGW_MIN : w > LEGW_MAX ? LEGW_MAX : w;
}

void plot_size(const plot *p, int *width, int *height)
{
    int cols = p->np < COLS_MAX ? (p->np ? p->np : 1) : COLS_MAX;
    int rows = p->np ? (p->np + cols - 1) / cols : 1;
    int w = cols * (PW + legend_width(p)), title_w = 40 + 9 * (int)strlen(p->title);
    *width = w < title_w ? title_w : w;  /* a single panel still shows the whole title */
    *height = TOP + rows * PH;
}

int plot_write_svg(const plot *p, FILE *f, err *e)
{
    int any = 0;
    for (int i = 0; i < p->np; i++) {
        any |= p->pan[i].nb > 0 || p->pan[i].nc > 0;
        for (int j = 0; j < p->pan[i].ns; j++)
            any |= p->pan[i].s[j].n > 0;
    }
    if (!any)
        return err_set(e, ERR_CHECK, "nothing to plot: no positive points");
    int width, height, cols = p->np < COLS_MAX ? p->np : COLS_MAX, legw = legend_width(p);
    plot_size(p, &width, &height);
    fprintf(f, "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n"
               "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"%d\" height=\"%d\" "
               "viewBox=\"0 0 %d %d\" font-family=\"sans-serif\" font-size=\"12\">\n"
               "<rect width=\"100%%\" height=\"100%%\" fill=\"white\"/>\n"
               "<text x=\"%d\" y=\"24\" text-anchor=\"middle\" font-size=\"16\" "
               "font-weight=\"bold\">", width, height, width, height, width / 2);
    xml_text(f, p->title);
    fputs("</text>\n", f);
    for (int i = 0; i < p->np; i++) {
        const panel *pan = &p->pan[i];
        double ox = (i % cols) * (PW + legw), oy = TOP + (i / cols) * PH;
        axes a = {ox + ML, oy + MT, PW - ML - MR, PH - MT - MB, {1, 0, 1, 0}, {1, 0, 1, 0}};
        fputs("<g>\n", f);
        if (pan->kind == PLOT_BARS)
            draw_bars(p, pan, &a, legw, f);
        else if (pan->kind == PLOT_CATS || pan->kind == PLOT_STACK)
            draw_cats(pan, &a, legw, f);
        else if (pan->kind == PLOT_HEAT)
            draw_heat(pan, &a, f);
        else
            draw_xy(p, pan, &a, legw, f);
        if (pan->kind == PLOT_HEAT) {
            /* no frame around the matrix: its cells are the frame */
            fprintf(f, "<text x=\"%.1f\" y=\"%.1f\" text-anchor=\"middle\" font-weight=\"bold\">",
                    a.x0 + a.w / 2, a.y0 - 10);
            xml_text(f, pan->name);
            fprintf(f, "</text>\n<text x=\"%.1f\" y=\"%.1f\" text-anchor=\"middle\">", a.x0 + a.w / 2,
                    a.y0 + a.h + 36);
            xml_text(f, pan->xlabel);
            fprintf(f, "</text>\n<text text-anchor=\"middle\" transform=\"translate(%.1f %.1f) "
                       "rotate(-90)\">", ox + 16, a.y0 + a.h / 2);
            xml_text(f, pan->ylabel);
            fputs("</text>\n", f);
        } else {
            draw_frame(f, pan, &a, ox);
        }
        fputs("</g>\n", f);
    }
    fputs("</svg>\n", f);
    if (ferror(f))
        return err_set(e, ERR_SYSTEM, "writing the plot failed");
    return 0;
}

int plot_svg_writer(FILE *f, void *p, err *e) { return plot_write_svg(p, f, e); }
