/* A host-only reference for hwcheck launch's host rows: a chain of dependent
 * loads through lines of 64 bytes of host memory, each line holding the index
 * of the next, in an order the prefetchers do not follow. No CUDA. */
#ifndef HWCHECK_CHASE_H
#define HWCHECK_CHASE_H

#include <stddef.h>

#include "sim/err.h"

enum { CHASE_LINE_BYTES = 64 };

typedef struct chase {
    size_t *mem; /* n lines of CHASE_LINE_BYTES, owned */
    size_t n;    /* lines, a power of two */
    size_t at;   /* the line the chain stands on */
} chase;

/* The line after line i of n (n a power of two): one cycle through all n. */
size_t chase_next(size_t i, size_t n);
/* Fills c with bytes / CHASE_LINE_BYTES lines (bytes a power of two of at
 * least one line, else ERR_USAGE; ERR_SYSTEM when out of memory). */
int chase_init(chase *c, size_t bytes, err *e);
/* Follows the chain for `loads` dependent loads; returns the line it ends on. */
size_t chase_run(chase *c, long loads);
void chase_free(chase *c); /* frees c's memory; a zeroed chase is a no-op */

#endif
