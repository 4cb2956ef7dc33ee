/* One measurement output: an atomic file (or stdout) and a report on it.
 * Nothing is left behind on failure: out_abort removes the temporary. It holds
 * sim/ofile's open/commit/abort rather than ofile_write's one callback: rows
 * are written as they are measured, and the watchdog is handed the
 * temporary's name (gpu_step_file) to remove it if it must end the process. */
#ifndef HWCHECK_OUT_H
#define HWCHECK_OUT_H

#include "hwcheck/meas.h"
#include "sim/ofile.h"
#include "sim/report.h"

typedef struct out_file {
    ofile file;
    report *rep;
    int next_case; /* transfer case numbers are unique within one file */
} out_file;

/* Open path ("-" or NULL: stdout), write kind's metadata from m and start its
 * table. ERR_SYSTEM if the file cannot be created. */
int out_open(out_file *o, const char *path, report_format fmt, meas_kind kind,
             const meas_meta *m, err *e);
int out_commit(out_file *o, err *e); /* finish the report, rename into place */
void out_abort(out_file *o);         /* drop everything written; safe after commit */

#endif
