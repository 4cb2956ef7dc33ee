/* Pool storage management; the O(1) get/put paths are inline in pool.h.
 * Invariant: free slots form a singly linked list threaded through their
 * first four bytes; top <= cap; live + (free list length) == top. */
#include "sim/pool.h"

#include <stdlib.h>

void pool_init(pool *p, size_t elem_bytes)
{
    memset(p, 0, sizeof(*p));
    p->elem_bytes = elem_bytes < sizeof(int32_t) ? sizeof(int32_t) : elem_bytes;
    p->free_head = -1;
}

void pool_fini(pool *p)
{
    free(p->base);
    pool_init(p, p->elem_bytes);
}

void pool_clear(pool *p)
{
    p->top = 0;
    p->live = 0;
    p->free_head = -1;
}

int pool_grow(pool *p)
{
    int32_t ncap = p->cap ? p->cap : 64;
    if (p->cap) {
        if (p->cap > INT32_MAX / 2)
            return -1;
        ncap = p->cap * 2;
    }
    if ((size_t)ncap > SIZE_MAX / p->elem_bytes)
        return -1;
    unsigned char *nb = realloc(p->base, (size_t)ncap * p->elem_bytes);
    if (!nb)
        return -1;
    p->base = nb;
    p->cap = ncap;
    return 0;
}
