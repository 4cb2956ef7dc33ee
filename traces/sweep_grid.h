/* A sweep grid (`collsim-grid 1`, docs/formats.md "Sweep grid"): inputs
 * (built-in or file scenarios, trace files or directories of them), knobs
 * fixed for every run (set), knobs varied (vary: cross product) and listed
 * combinations (combo). Runs are numbered 0.. in grid order: inputs
 * outermost, then combos, then the vary lines in file order, the last one
 * changing fastest. The grid is immutable after parsing; points are
 * computed from the run number, never materialised. */
#ifndef TRACES_SWEEP_GRID_H
#define TRACES_SWEEP_GRID_H

#include <stdio.h>

#include "sim/err.h"

enum { SWEEP_MAX_KEYS = 32 };   /* varied/combo keys = csv knob columns */

typedef enum sweep_kind { SWEEP_SCENARIO, SWEEP_TRACE } sweep_kind;

/* One run of the grid. Strings are borrowed from the grid. */
typedef struct sweep_point {
    long run;
    sweep_kind kind;
    const char *input;   /* as the grid names it (and the csv shows it) */
    const char *path;    /* where to open it: relative to the grid's folder */
    const char *val[SWEEP_MAX_KEYS];   /* per knob column; NULL = not set */
} sweep_point;

/* One knob assignment of the file (set, one vary value, or a combo's). */
typedef struct sweep_entry {
    const char *key, *value;
    long line;
    int fixed;           /* 1 = a set line (not a column) */
} sweep_entry;

typedef struct sweep_grid sweep_grid;

/* Parse a grid file; relative paths are taken from its folder. ERR_SYSTEM
 * if it cannot be read, ERR_INPUT "file:line: what" if it is wrong. */
int sweep_grid_load(const char *path, sweep_grid **out, err *e);
/* Parse from f; name is for messages, dir ("" = cwd) prefixes relative paths. */
int sweep_grid_parse(FILE *f, const char *name, const char *dir, sweep_grid **out,
                     err *e);
void sweep_grid_free(sweep_grid *g);                     /* NULL ok */

const char *sweep_grid_name(const sweep_grid *g);        /* the file, for messages */
long sweep_grid_runs(const sweep_grid *g);
int sweep_grid_ncols(const sweep_grid *g);               /* knob columns */
const char *sweep_grid_col(const sweep_grid *g, int i);  /* key of column i */
/* Fixed knobs (set lines), applied before a point's own values. */
int sweep_grid_nfixed(const sweep_grid *g);
void sweep_grid_fixed(const sweep_grid *g, int i, const char **key, const char **value);
/* Every knob assignment and every input, with its line, for checking. */
int sweep_grid_nentries(const sweep_grid *g);
sweep_entry sweep_grid_entry(const sweep_grid *g, int i);
int sweep_grid_ninputs(const sweep_grid *g);
/* Input i: kind, name and path; its line in the grid file as the result. */
long sweep_grid_input(const sweep_grid *g, int i, sweep_kind *kind, const char **input,
                      const char **path);
/* The point of run (0 <= run < sweep_grid_runs). */
void sweep_grid_point(const sweep_grid *g, long run, sweep_point *pt);
const char *sweep_kind_name(sweep_kind k);               /* "scenario", "trace" */

#endif
