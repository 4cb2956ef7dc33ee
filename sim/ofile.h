/* Output files that are never left half-written: data goes to a temporary
 * file beside the target and is renamed over it only on ofile_commit(). A
 * path of "-" means stdout (commit just flushes). */
#ifndef SIM_OFILE_H
#define SIM_OFILE_H

#include <stdio.h>

#include "sim/err.h"

typedef struct ofile {
    FILE *f;          /* write here */
    char path[4096];  /* final name */
    char tmp[4200];   /* temporary name ("" for stdout) */
} ofile;

int ofile_open(ofile *o, const char *path, err *e);   /* ERR_SYSTEM on failure */
int ofile_commit(ofile *o, err *e);   /* flush, close, rename; ERR_SYSTEM */
void ofile_abort(ofile *o);           /* close and remove the temporary */

#endif
