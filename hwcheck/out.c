/* Measurement output files: sim/ofile for atomicity, sim/report for layout. */
#include "hwcheck/out.h"

#include <string.h>

#include "hwcheck/gpu.h"

int out_open(out_file *o, const char *path, report_format fmt, meas_kind kind,
             const meas_meta *m, err *e)
{
    memset(o, 0, sizeof *o);
    TRY(ofile_open(&o->file, path ? path : "-", e));
    gpu_step_file(o->file.tmp); /* the watchdog removes it if it must end the process */
    o->rep = report_new(o->file.f, fmt);
    if (!o->rep) {
        ofile_abort(&o->file);
        return err_set(e, ERR_SYSTEM, "out of memory");
    }
    meas_write_meta(o->rep, kind, m);
    int ncols;
    const report_col *cols = meas_cols(kind, &ncols);
    report_table(o->rep, meas_kind_name(kind), cols, ncols);
    return 0;
}

int out_commit(out_file *o, err *e)
{
    int rc = report_finish(o->rep, e);
    report_free(o->rep);
    o->rep = NULL;
    gpu_step_file(NULL);
    if (rc != 0) {
        ofile_abort(&o->file);
        return rc;
    }
    return ofile_commit(&o->file, e);
}

void out_abort(out_file *o)
{
    gpu_step_file(NULL);
    report_free(o->rep);
    o->rep = NULL;
    ofile_abort(&o->file);
}
