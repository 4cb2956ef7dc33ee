/* The load chain of hwcheck/chase.h. Line i is followed by (A i + C) mod n
 * with n a power of two, C odd and A - 1 a multiple of 4: by the Hull-Dobell
 * theorem one cycle through every line, so a chain of any length never
 * settles into a few lines (which would sit in L1 whatever the size). */
#include "hwcheck/chase.h"

#include <stdlib.h>

enum { PER_LINE = CHASE_LINE_BYTES / sizeof(size_t) };
#define CHASE_A ((size_t)0x5DEECE66Du) /* A - 1 = 0x5DEECE66C, a multiple of 4 */
#define CHASE_C ((size_t)0x9E3779B97F4A7C15u) /* odd */

size_t chase_next(size_t i, size_t n)
{
    return (i * CHASE_A + CHASE_C) & (n - 1);
}

int chase_init(chase *c, size_t bytes, err *e)
{
    c->mem = NULL;
    c->n = bytes / CHASE_LINE_BYTES;
    c->at = 0;
    if (c->n == 0 || (c->n & (c->n - 1)) || bytes % CHASE_LINE_BYTES)
        return err_set(e, ERR_USAGE, "load chain: %zu bytes is not a power of two of lines",
                       bytes);
    c->mem = aligned_alloc(4096, bytes < 4096 ? 4096 : bytes);
    if (!c->mem)
        return err_set(e, ERR_SYSTEM, "load chain: %zu bytes of host memory", bytes);
    for (size_t i = 0; i < c->n; i++)
        c->mem[i * PER_LINE] = chase_next(i, c->n);
    return 0;
}

size_t chase_run(chase *c, long loads)
{
    volatile size_t *m = c->mem;
    size_t at = c->at;
    for (long i = 0; i < loads; i++)
        at = m[at * PER_LINE];
    c->at = at;
    return at;
}

void chase_free(chase *c)
{
    free(c->mem);
    c->mem = NULL;
}
