/* Host-only references for hwcheck launch's host rows, touching no GPU,
 * driver or system call: a chain of dependent loads through lines of 64
 * bytes (each holding the index of the next, in an order the prefetchers do
 * not follow), and a loop of independent multiply-adds. No CUDA. */
#ifndef HWCHECK_HOSTREF_H
#define HWCHECK_HOSTREF_H

#include <stddef.h>
#include <stdint.h>

#include "sim/err.h"

enum { HOSTREF_LINE_BYTES = 64, HOSTREF_MUL_CHAINS = 8 };

typedef struct hostref_chain {
    size_t *mem; /* n lines of HOSTREF_LINE_BYTES, owned */
    size_t n;    /* lines, a power of two */
    size_t at;   /* the line the chain stands on */
} hostref_chain;

/* The line after line i of n (n a power of two): one cycle through all n. */
size_t hostref_next(size_t i, size_t n);
/* Fills c with bytes / HOSTREF_LINE_BYTES lines (bytes a power of two of at
 * least one line, else ERR_USAGE; ERR_SYSTEM when out of memory). */
int hostref_chain_init(hostref_chain *c, size_t bytes, err *e);
/* Follows the chain for `loads` dependent loads; returns the line it ends on. */
size_t hostref_chain_run(hostref_chain *c, long loads);
void hostref_chain_free(hostref_chain *c); /* frees c's memory; a zeroed chain is a no-op */
/* `steps` steps of HOSTREF_MUL_CHAINS independent chains x <- x * K + 1 (mod
 * 2^64), chain j starting at j; returns the chains' xor. Throughput-bound:
 * another thread on the core slows it, where it barely slows the load chain. */
uint64_t hostref_mul(long steps);

#endif
