/* The one report writer, shared by collsim and hwcheck so that a prediction
 * and a measurement print the same way. A report has metadata (key: value)
 * and one or more tables; each table has columns and rows of cells.
 *   table: "# key: value" lines, then aligned columns with a "#" header line
 *   csv:   "# key: value" lines (only if any meta), header line, rows
 *   json:  {"meta":{...},"tables":[{"name":..,"rows":[{col:val,...}]}]}, written
 *          with libc alone, the bytes yajl_gen would write; numbers (cells and metadata
 *          values that read as JSON numbers) are json numbers, a missing number null
 * The writer does not own the FILE. Errors surface in report_finish(). */
#ifndef SIM_REPORT_H
#define SIM_REPORT_H

#include <stdio.h>

#include "sim/err.h"

typedef enum report_format { REPORT_TABLE, REPORT_CSV, REPORT_JSON } report_format;

typedef struct report_col {
    const char *name;  /* csv/json key */
    const char *title; /* table heading; NULL = name */
    int width;         /* table column width (right-aligned) */
    int prec;          /* digits after the point for numbers; -1 = %g */
} report_col;

typedef struct report report;

report *report_new(FILE *out, report_format fmt); /* NULL on OOM */
void report_free(report *r);                      /* NULL ok */
report_format report_fmt(const report *r);
/* Metadata before the first table (ignored after). Values are strings, up
 * to 1023 bytes (a command line); cells up to 511. */
void report_meta(report *r, const char *key, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
/* Start a table; cols must outlive it. name may be NULL. */
void report_table(report *r, const char *name, const report_col *cols, int ncols);
void report_str(report *r, const char *s);
void report_int(report *r, long long v);
void report_num(report *r, double v); /* NaN: "" in csv, null in json, "-" in a table */
void report_end_row(report *r);
/* A free-form comment line (table/csv: "# text"; json: ignored). */
void report_note(report *r, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
/* Close open structures and flush; ERR_SYSTEM if the stream failed. */
int report_finish(report *r, err *e);

#endif
