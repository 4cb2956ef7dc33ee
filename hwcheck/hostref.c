/* The host references of hwcheck/hostref.h. The load chain: line i is followed by (A i + C) mod n
 * with n a power of two, C odd and A - 1 a multiple of 4: by the Hull-Dobell
 * theorem one cycle through every line, so a chain of any length never
 * settles into a few lines (which would sit in L1 whatever the size). */
#include "hwcheck/hostref.h"

#include <stdlib.h>

/* The multiply-add's factor (odd; Knuth's MMIX LCG multiplier). */
#define HOSTREF_MUL_K ((uint64_t)6364136223846793005u)

enum { PER_LINE = HOSTREF_LINE_BYTES / sizeof(size_t) };
#define CHASE_A ((size_t)0x5DEECE66Du) /* A - 1 = 0x5DEECE66C, a multiple of 4 */
#define CHASE_C ((size_t)0x9E3779B97F4A7C15u) /* odd */

size_t hostref_next(size_t i, size_t n)
{
    return (i * CHASE_A + CHASE_C) & (n - 1);
}

int hostref_chain_init(hostref_chain *c, size_t bytes, err *e)
{
    c->mem = NULL;
    c->n = bytes / HOSTREF_LINE_BYTES;
    c->at = 0;
    if (c->n == 0 || (c->n & (c->n - 1)) || bytes % HOSTREF_LINE_BYTES)
        return err_set(e, ERR_USAGE, "load chain: %zu bytes is not a power of two of lines",
                       bytes);
    c->mem = aligned_alloc(4096, bytes < 4096 ? 4096 : bytes);
    if (!c->mem)
        return err_set(e, ERR_SYSTEM, "load chain: %zu bytes of host memory", bytes);
    for (size_t i = 0; i < c->n; i++)
        c->mem[i * PER_LINE] = hostref_next(i, c->n);
    return 0;
}

size_t hostref_chain_run(hostref_chain *c, long loads)
{
    volatile size_t *m = c->mem;
    size_t at = c->at;
    for (long i = 0; i < loads; i++)
        at = m[at * PER_LINE];
    c->at = at;
    return at;
}

void hostref_chain_free(hostref_chain *c)
{
    free(c->mem);
    c->mem = NULL;
}

uint64_t hostref_mul(long steps)
{
    uint64_t x[HOSTREF_MUL_CHAINS];
    for (int j = 0; j < HOSTREF_MUL_CHAINS; j++)
        x[j] = (uint64_t)j;
    for (long i = 0; i < steps; i++)
        for (int j = 0; j < HOSTREF_MUL_CHAINS; j++)
            x[j] = x[j] * HOSTREF_MUL_K + 1;
    uint64_t r = 0;
    for (int j = 0; j < HOSTREF_MUL_CHAINS; j++)
        r ^= x[j];
    return r;
}
