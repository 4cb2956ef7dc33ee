/* Report writer. Cells are buffered per row so table, csv and json can each
 * lay a row out in one pass; a row must have exactly the table's columns.
 * JSON goes through sim/jw.h, libc alone (hwcheck shares this writer and
 * must build where only CUDA, NCCL and a C compiler are); its bytes are
 * yajl_gen's (sim/report_test.c compares the two). */
#include "sim/report.h"

#include "sim/jw.h"

#include <errno.h>
#include <math.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>

/* A cell holds what commands put in one (validate's crossover text: 512
 * bytes), a metadata value a whole command line (1024, as cli_command_line
 * and hwcheck record it): shorter buffers cut them without a word. */
enum { MAX_COLS = 48, CELL = 512, META_KEY = 48, META_VAL = 1024, META_FIRST = 16 };

/* One metadata line: its key and value. */
typedef struct meta_item {
    char key[META_KEY];
    char val[META_VAL];
} meta_item;

struct report {
    FILE *out;
    report_format fmt;
    int nmeta, meta_cap;
    meta_item *meta;  /* grown as lines come: no limit but memory */
    int meta_lost;    /* lines that found no memory: said at the flush */
    int started;  /* first table printed (meta flushed) */
    int ntables;
    const report_col *cols;
    int ncols;
    int ncell;
    int nrows;
    char cell[MAX_COLS][CELL];
    int is_str[MAX_COLS];
    jw j;                        /* json: the document's writer */
};

report *report_new(FILE *out, report_format fmt)
{
    report *r = calloc(1, sizeof *r);
    if (r) {
        r->out = out;
        r->fmt = fmt;
        jw_init(&r->j, out);
    }
    return r;
}

void report_free(report *r)
{
    if (r)
        free(r->meta);
    free(r);
}

report_format report_fmt(const report *r) { return r->fmt; }

void report_meta(report *r, const char *key, const char *fmt, ...)
{
    if (r->started)
        return;
    if (r->nmeta == r->meta_cap) {
        int cap = r->meta_cap ? 2 * r->meta_cap : META_FIRST;
        meta_item *m = realloc(r->meta, sizeof *m * (size_t)cap);
        if (!m) {
            r->meta_lost++;
            return;
        }
        r->meta = m;
        r->meta_cap = cap;
    }
    meta_item *m = &r->meta[r->nmeta];
    snprintf(m->key, sizeof m->key, "%s", key);
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(m->val, sizeof m->val, fmt, ap);
    va_end(ap);
    r->nmeta++;
}

/* A value that is a JSON number as written ("8", "-1", "2.5e3"; not "08",
 * "1.", "nan"), so metadata numbers are json numbers too. */
static int is_json_number(const char *s)
{
    if (*s == '-')
        s++;
    if (*s == '0')
        s++;
    else if (*s >= '1' && *s <= '9')
        while (*s >= '0' && *s <= '9')
            s++;
    else
        return 0;
    if (*s == '.') {
        if (!(*++s >= '0' && *s <= '9'))
            return 0;
        while (*s >= '0' && *s <= '9')
            s++;
    }
    if (*s == 'e' || *s == 'E') {
        s++;
        if (*s == '+' || *s == '-')
            s++;
        if (!(*s >= '0' && *s <= '9'))
            return 0;
        while (*s >= '0' && *s <= '9')
            s++;
    }
    return *s == 0;
}

static void flush_meta(report *r)
{
    if (r->started)
        return;
    r->started = 1;
    if (r->fmt == REPORT_JSON) {
        jw_open(&r->j, 1);
        jw_str(&r->j, "meta");
        jw_open(&r->j, 1);
        for (int i = 0; i < r->nmeta; i++) {
            jw_str(&r->j, r->meta[i].key);
            if (is_json_number(r->meta[i].val))
                jw_raw(&r->j, r->meta[i].val);
            else
                jw_str(&r->j, r->meta[i].val);
        }
        if (r->meta_lost) {
            char n[16];
            snprintf(n, sizeof n, "%d", r->meta_lost);
            jw_str(&r->j, "meta_lost");
            jw_raw(&r->j, n);
        }
        jw_close(&r->j);
        jw_str(&r->j, "tables");
        jw_open(&r->j, 0);
        return;
    }
    for (int i = 0; i < r->nmeta; i++)
        fprintf(r->out, "# %s: %s\n", r->meta[i].key, r->meta[i].val);
    if (r->meta_lost)
        fprintf(r->out, "# meta_lost: %d (no memory for them)\n", r->meta_lost);
}

static void close_table(report *r)
{
    if (r->ntables > 0 && r->fmt == REPORT_JSON) {
        jw_close(&r->j); /* rows */
        jw_close(&r->j); /* the table */
    }
}

void report_table(report *r, const char *name, const report_col *cols, int ncols)
{
    ASSERTF(ncols > 0 && ncols <= MAX_COLS, "ncols=%d", ncols);
    flush_meta(r);
    close_table(r);
    r->cols = cols;
    r->ncols = ncols;
    r->ncell = 0;
    r->nrows = 0;
    if (r->fmt == REPORT_JSON) {
        jw_open(&r->j, 1);
        jw_str(&r->j, "name");
        jw_str(&r->j, name ? name : "");
        jw_str(&r->j, "rows");
        jw_open(&r->j, 0);
    } else if (r->fmt == REPORT_CSV) {
        if (r->ntables)
            fputc('\n', r->out);
        for (int i = 0; i < ncols; i++)
            fprintf(r->out, "%s%s", i ? "," : "", cols[i].name);
        fputc('\n', r->out);
    } else {
        if (r->ntables)
            fputc('\n', r->out);
        if (name)
            fprintf(r->out, "# %s\n", name);
        fputc('#', r->out);
        for (int i = 0; i < ncols; i++) {
            const char *t = cols[i].title ? cols[i].title : cols[i].name;
            int w = cols[i].width - (i == 0 ? 1 : 0);
            fprintf(r->out, "%s%*s", i ? " " : "", w > 0 ? w : 0, t);
        }
        fputc('\n', r->out);
    }
    r->ntables++;
}

static char *next_cell(report *r, int is_str)
{
    ASSERTF(r->ncols > 0 && r->ncell < r->ncols, "cell %d of %d", r->ncell, r->ncols);
    r->is_str[r->ncell] = is_str;
    return r->cell[r->ncell++];
}

void report_str(report *r, const char *s)
{
    snprintf(next_cell(r, 1), CELL, "%s", s ? s : "");
}

void report_int(report *r, long long v) { snprintf(next_cell(r, 0), CELL, "%lld", v); }

void report_num(report *r, double v)
{
    int prec = r->cols[r->ncell].prec;
    char *c = next_cell(r, 0);
    if (isnan(v))  /* no value: empty in csv, null in json, "-" in a table */
        snprintf(c, CELL, "%s", r->fmt == REPORT_JSON ? "null" : r->fmt == REPORT_CSV ? "" : "-");
    else if (isinf(v))
        snprintf(c, CELL, "%s", r->fmt == REPORT_JSON ? "null" : (v > 0 ? "inf" : "-inf"));
    else if (prec < 0)
        snprintf(c, CELL, "%.6g", v);
    else
        snprintf(c, CELL, "%.*f", prec, v);
}

void report_end_row(report *r)
{
    ASSERTF(r->ncell == r->ncols, "row has %d cells, table %d columns", r->ncell,
            r->ncols);
    if (r->fmt == REPORT_JSON) {
        jw_open(&r->j, 1);
        for (int i = 0; i < r->ncols; i++) {
            jw_str(&r->j, r->cols[i].name);
            if (r->is_str[i])
                jw_str(&r->j, r->cell[i]);
            else
                jw_raw(&r->j, r->cell[i]); /* a number, or "null" */
        }
        jw_close(&r->j);
    } else if (r->fmt == REPORT_CSV) {
        for (int i = 0; i < r->ncols; i++) {
            const char *c = r->cell[i];
            int quote = strpbrk(c, ",\"\n") != NULL;
            if (i)
                fputc(',', r->out);
            if (quote) {
                fputc('"', r->out);
                for (; *c; c++) {
                    if (*c == '"')
                        fputc('"', r->out);
                    fputc(*c, r->out);
                }
                fputc('"', r->out);
            } else {
                fputs(c, r->out);
            }
        }
        fputc('\n', r->out);
    } else {
        for (int i = 0; i < r->ncols; i++)
            fprintf(r->out, "%s%*s", i ? " " : "", r->cols[i].width, r->cell[i]);
        fputc('\n', r->out);
    }
    r->ncell = 0;
    r->nrows++;
}

void report_note(report *r, const char *fmt, ...)
{
    if (r->fmt == REPORT_JSON)
        return;
    flush_meta(r);
    fputs("# ", r->out);
    va_list ap;
    va_start(ap, fmt);
    vfprintf(r->out, fmt, ap);
    va_end(ap);
    fputc('\n', r->out);
}

int report_finish(report *r, err *e)
{
    flush_meta(r);
    if (r->fmt == REPORT_JSON) {
        close_table(r);
        jw_close(&r->j); /* tables */
        jw_close(&r->j); /* the document */
        fputc('\n', r->out);
    }
    errno = 0;
    if (fflush(r->out) != 0 || ferror(r->out))
        return err_set(e, ERR_SYSTEM, "writing report failed%s%s", errno ? ": " : "",
                       errno ? strerror(errno) : "");
    return 0;
}
