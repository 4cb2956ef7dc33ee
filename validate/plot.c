/* SVG plotter. Each panel computes its own decade-aligned ranges from its
 * positive points (at least one decade wide), so every panel is readable on
 * its own; coordinates are printed with one decimal so output is byte-for-
 * byte deterministic. Colours come from a fixed palette indexed by the
 * order in which series labels first appear. */
#include "validate/plot.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

typedef struct series {
    char *label;
    plot_style style;
    int colour;
    double *x, *y;
    size_t n;
} series;

typedef struct panel {
    char *name;
    series *s;
    int ns;
} panel;

struct plot {
    char *title, *xlabel, *ylabel;
    panel *pan;
    int np;
    char **labels;          /* distinct series labels, in order */
    plot_style *label_style;
    int nlabels;
};

/* Colour-blind safe palette (Okabe-Ito). */
static const char *const palette[] = {"#0072B2", "#D55E00", "#009E73", "#CC79A7",
                                      "#E69F00", "#56B4E9", "#000000", "#F0E442"};
enum { NPAL = sizeof palette / sizeof palette[0] };

/* Layout, in SVG user units. */
enum { PW = 380, PH = 280, ML = 64, MR = 16, MT = 28, MB = 48, COLS_MAX = 3,
       TOP = 56, LEG_ROW = 18 };

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
        for (int j = 0; j < p->pan[i].ns; j++) {
            free(p->pan[i].s[j].label);
            free(p->pan[i].s[j].x);
            free(p->pan[i].s[j].y);
        }
        free(p->pan[i].s);
        free(p->pan[i].name);
    }
    for (int i = 0; i < p->nlabels; i++)
        free(p->labels[i]);
    free(p->labels);
    free(p->label_style);
    free(p->pan);
    free(p->title);
    free(p->xlabel);
    free(p->ylabel);
    free(p);
}

int plot_panel(plot *p, const char *name, err *e)
{
    panel *np = realloc(p->pan, (size_t)(p->np + 1) * sizeof *np);
    if (!np)
        return err_set(e, ERR_SYSTEM, "out of memory"), -1;
    p->pan = np;
    p->pan[p->np] = (panel){sdup(name), NULL, 0};
    if (!p->pan[p->np].name)
        return err_set(e, ERR_SYSTEM, "out of memory"), -1;
    return p->np++;
}

static int label_index(plot *p, const char *label, plot_style style, err *e)
{
    for (int i = 0; i < p->nlabels; i++)
        if (!strcmp(p->labels[i], label) && p->label_style[i] == style)
            return i;
    char **l = realloc(p->labels, (size_t)(p->nlabels + 1) * sizeof *l);
    if (l)
        p->labels = l;
    plot_style *s = realloc(p->label_style, (size_t)(p->nlabels + 1) * sizeof *s);
    if (s)
        p->label_style = s;
    if (!l || !s || !(p->labels[p->nlabels] = sdup(label)))
        return err_set(e, ERR_SYSTEM, "out of memory"), -1;
    p->label_style[p->nlabels] = style;
    return p->nlabels++;
}

/* Colour: by label, the same for points and line of one label. */
static int colour_of(const plot *p, const char *label)
{
    int c = 0;
    for (int i = 0; i < p->nlabels; i++) {
        if (!strcmp(p->labels[i], label))
            return c;
        int seen = 0;
        for (int j = 0; j < i; j++)
            seen |= !strcmp(p->labels[j], p->labels[i]);
        c += !seen;
    }
    return c;
}

int plot_series(plot *p, int pi, const char *label, plot_style style, const double *x,
                const double *y, size_t n, err *e)
{
    ASSERTF(pi >= 0 && pi < p->np, "panel %d of %d", pi, p->np);
    panel *pan = &p->pan[pi];
    if (label_index(p, label, style, e) < 0)
        return e ? e->code : ERR_SYSTEM;
    series *s = realloc(pan->s, (size_t)(pan->ns + 1) * sizeof *s);
    if (!s)
        return err_set(e, ERR_SYSTEM, "out of memory");
    pan->s = s;
    series *z = &pan->s[pan->ns];
    *z = (series){sdup(label), style, colour_of(p, label) % NPAL,
                  malloc((n ? n : 1) * sizeof(double)), malloc((n ? n : 1) * sizeof(double)), 0};
    if (!z->label || !z->x || !z->y) {
        free(z->label);
        free(z->x);
        free(z->y);
        return err_set(e, ERR_SYSTEM, "out of memory");
    }
    for (size_t i = 0; i < n; i++)
        if (x[i] > 0 && y[i] > 0 && isfinite(x[i]) && isfinite(y[i])) {
            z->x[z->n] = x[i];
            z->y[z->n] = y[i];
            z->n++;
        }
    pan->ns++;
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

typedef struct axes {
    double x0, y0, w, h;       /* plot area */
    int kx0, kx1, ky0, ky1;    /* decade range */
} axes;

static double ax_x(const axes *a, double x)
{
    return a->x0 + a->w * (log10(x) - a->kx0) / (a->kx1 - a->kx0);
}
static double ax_y(const axes *a, double y)
{
    return a->y0 + a->h - a->h * (log10(y) - a->ky0) / (a->ky1 - a->ky0);
}

static void range(const panel *pan, int xaxis, int *k0, int *k1)
{
    double lo = INFINITY, hi = -INFINITY;
    for (int i = 0; i < pan->ns; i++)
        for (size_t j = 0; j < pan->s[i].n; j++) {
            double v = xaxis ? pan->s[i].x[j] : pan->s[i].y[j];
            lo = v < lo ? v : lo;
            hi = v > hi ? v : hi;
        }
    if (!(lo <= hi)) {
        *k0 = 0;
        *k1 = 1;
        return;
    }
    *k0 = (int)floor(log10(lo) + 1e-9);
    *k1 = (int)ceil(log10(hi) - 1e-9);
    if (*k1 <= *k0)
        *k1 = *k0 + 1;
}

static void draw_panel(const plot *p, const panel *pan, double ox, double oy, FILE *f)
{
    axes a = {ox + ML, oy + MT, PW - ML - MR, PH - MT - MB, 0, 0, 0, 0};
    range(pan, 1, &a.kx0, &a.kx1);
    range(pan, 0, &a.ky0, &a.ky1);
    fprintf(f, "<g>\n<text x=\"%.1f\" y=\"%.1f\" text-anchor=\"middle\" font-weight=\"bold\">",
            a.x0 + a.w / 2, oy + MT - 10);
    xml_text(f, pan->name);
    fputs("</text>\n", f);
    /* Grid: minor lines at 2..9 x 10^k, major at decades with labels. */
    char lab[32];
    for (int k = a.kx0; k <= a.kx1; k++) {
        for (int m = 2; m <= 9 && k < a.kx1; m++) {
            double x = ax_x(&a, m * pow(10, k));
            fprintf(f, "<line x1=\"%.1f\" y1=\"%.1f\" x2=\"%.1f\" y2=\"%.1f\" stroke=\"#eee\"/>\n",
                    x, a.y0, x, a.y0 + a.h);
        }
        double x = ax_x(&a, pow(10, k));
        decade_label(k, lab, sizeof lab);
        fprintf(f, "<line x1=\"%.1f\" y1=\"%.1f\" x2=\"%.1f\" y2=\"%.1f\" stroke=\"#ccc\"/>\n"
                   "<text x=\"%.1f\" y=\"%.1f\" text-anchor=\"middle\">%s</text>\n",
                x, a.y0, x, a.y0 + a.h + 4, x, a.y0 + a.h + 18, lab);
    }
    for (int k = a.ky0; k <= a.ky1; k++) {
        for (int m = 2; m <= 9 && k < a.ky1; m++) {
            double y = ax_y(&a, m * pow(10, k));
            fprintf(f, "<line x1=\"%.1f\" y1=\"%.1f\" x2=\"%.1f\" y2=\"%.1f\" stroke=\"#eee\"/>\n",
                    a.x0, y, a.x0 + a.w, y);
        }
        double y = ax_y(&a, pow(10, k));
        decade_label(k, lab, sizeof lab);
        fprintf(f, "<line x1=\"%.1f\" y1=\"%.1f\" x2=\"%.1f\" y2=\"%.1f\" stroke=\"#ccc\"/>\n"
                   "<text x=\"%.1f\" y=\"%.1f\" text-anchor=\"end\">%s</text>\n",
                a.x0 - 4, y, a.x0 + a.w, y, a.x0 - 6, y + 4, lab);
    }
    fprintf(f, "<rect x=\"%.1f\" y=\"%.1f\" width=\"%.1f\" height=\"%.1f\" fill=\"none\" "
               "stroke=\"#333\"/>\n", a.x0, a.y0, a.w, a.h);
    fprintf(f, "<text x=\"%.1f\" y=\"%.1f\" text-anchor=\"middle\">", a.x0 + a.w / 2,
            a.y0 + a.h + 36);
    xml_text(f, p->xlabel);
    fprintf(f, "</text>\n<text text-anchor=\"middle\" transform=\"translate(%.1f %.1f) "
               "rotate(-90)\">", ox + 16, a.y0 + a.h / 2);
    xml_text(f, p->ylabel);
    fputs("</text>\n", f);
    /* Lines first, points on top. */
    for (int pass = 0; pass < 2; pass++)
        for (int i = 0; i < pan->ns; i++) {
            const series *s = &pan->s[i];
            const char *c = palette[s->colour];
            if (pass == 0 && s->style == PLOT_LINE && s->n) {
                fprintf(f, "<polyline fill=\"none\" stroke=\"%s\" stroke-width=\"2\" points=\"", c);
                for (size_t j = 0; j < s->n; j++)
                    fprintf(f, "%s%.1f,%.1f", j ? " " : "", ax_x(&a, s->x[j]), ax_y(&a, s->y[j]));
                fputs("\"/>\n", f);
            }
            if (pass == 1 && s->style == PLOT_POINTS)
                for (size_t j = 0; j < s->n; j++)
                    fprintf(f, "<circle cx=\"%.1f\" cy=\"%.1f\" r=\"3.5\" fill=\"none\" "
                               "stroke=\"%s\" stroke-width=\"1.5\"/>\n",
                            ax_x(&a, s->x[j]), ax_y(&a, s->y[j]), c);
        }
    fputs("</g>\n", f);
}

int plot_write_svg(const plot *p, FILE *f, err *e)
{
    int points = 0;
    for (int i = 0; i < p->np; i++)
        for (int j = 0; j < p->pan[i].ns; j++)
            points += p->pan[i].s[j].n > 0;
    if (!points)
        return err_set(e, ERR_CHECK, "nothing to plot: no positive points");
    int cols = p->np < COLS_MAX ? p->np : COLS_MAX;
    int rows = (p->np + cols - 1) / cols;
    int distinct = 0;
    for (int i = 0; i < p->nlabels; i++) {
        int seen = 0;
        for (int j = 0; j < i; j++)
            seen |= !strcmp(p->labels[j], p->labels[i]);
        distinct += !seen;
    }
    int legend_rows = (distinct + 2) / 3;
    int width = cols * PW, title_w = 40 + 9 * (int)strlen(p->title);
    if (width < title_w)
        width = title_w;   /* a single panel still shows the whole title */
    int height = TOP + legend_rows * LEG_ROW + rows * PH;
    fprintf(f, "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n"
               "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"%d\" height=\"%d\" "
               "viewBox=\"0 0 %d %d\" font-family=\"sans-serif\" font-size=\"12\">\n"
               "<rect width=\"100%%\" height=\"100%%\" fill=\"white\"/>\n"
               "<text x=\"%d\" y=\"24\" text-anchor=\"middle\" font-size=\"16\" "
               "font-weight=\"bold\">", width, height, width, height, width / 2);
    xml_text(f, p->title);
    fputs("</text>\n", f);
    /* Legend: one entry per distinct label, with a marker if it has points
     * and a line if it has lines. */
    int entry = 0;
    for (int i = 0; i < p->nlabels; i++) {
        int first = 1, pts = 0, line = 0;
        for (int j = 0; j < p->nlabels; j++)
            if (!strcmp(p->labels[j], p->labels[i])) {
                first &= j >= i;
                pts |= p->label_style[j] == PLOT_POINTS;
                line |= p->label_style[j] == PLOT_LINE;
            }
        if (!first)
            continue;
        double x = 20 + (entry % 3) * (width - 40) / 3.0, y = TOP - 14 + (entry / 3) * LEG_ROW;
        entry++;
        const char *c = palette[colour_of(p, p->labels[i]) % NPAL];
        if (line)
            fprintf(f, "<line x1=\"%.1f\" y1=\"%.1f\" x2=\"%.1f\" y2=\"%.1f\" stroke=\"%s\" "
                       "stroke-width=\"2\"/>\n", x, y, x + 24, y, c);
        if (pts)
            fprintf(f, "<circle cx=\"%.1f\" cy=\"%.1f\" r=\"3.5\" fill=\"white\" stroke=\"%s\" "
                       "stroke-width=\"1.5\"/>\n", x + 12, y, c);
        fprintf(f, "<text x=\"%.1f\" y=\"%.1f\">", x + 30, y + 4);
        xml_text(f, p->labels[i]);
        fputs("</text>\n", f);
    }
    for (int i = 0; i < p->np; i++)
        draw_panel(p, &p->pan[i], (i % cols) * PW, TOP + legend_rows * LEG_ROW + (i / cols) * PH,
                   f);
    fputs("</svg>\n", f);
    if (ferror(f))
        return err_set(e, ERR_SYSTEM, "writing the plot failed");
    return 0;
}
