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

/* A path that is a symbolic link is written through: the file it leads to
 * is replaced, the link stays. ERR_SYSTEM on failure. */
int ofile_open(ofile *o, const char *path, err *e);
int ofile_commit(ofile *o, err *e);   /* flush, close, rename; ERR_SYSTEM */
/* The file a chain of symbolic links from path ends at (path itself if it is
 * no link), into out: for a writer that renames its own temporaries into
 * place (sweep's OUT.part) to write through a link too. ERR_SYSTEM. */
int ofile_target(const char *path, char *out, size_t n, err *e);
/* The outputs of one run: all are flushed and closed, and only if every one
 * succeeded are they renamed into place; else no file is replaced. */
int ofile_commit_all(ofile *const *o, int n, err *e);
void ofile_abort(ofile *o);           /* close and remove the temporary */
/* What writes one output into f, with the writer's own arg; 0 or an error. */
typedef int ofile_write_fn(FILE *f, void *arg, err *e);
/* Open path, let fn write it, commit it if fn returned 0 (else nothing is
 * replaced and fn's error is returned): the whole life of one output. */
int ofile_write(const char *path, ofile_write_fn *fn, void *arg, err *e);

#endif
