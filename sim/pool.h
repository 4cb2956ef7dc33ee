/* Pool: fixed-size objects addressed by int32 indices. Freed objects go on a
 * free list and are handed out again first, so a loop that frees as much as
 * it takes never calls malloc in steady state; the storage doubles when full
 * (pointers from pool_at move then, indices never do). A plain struct that
 * its owner embeds; not thread-safe. */
#ifndef SIM_POOL_H
#define SIM_POOL_H

#include <stddef.h>
#include <stdint.h>
#include <string.h>

typedef struct pool {
    unsigned char *base; /* cap * elem_bytes bytes */
    size_t elem_bytes;   /* >= 4: a free slot holds the next free index */
    int32_t cap;         /* slots allocated */
    int32_t top;         /* slots ever handed out since the last clear */
    int32_t free_head;   /* a free slot below top, -1 if none */
    int32_t live;        /* slots in use */
} pool;

/* Empty pool of objects of elem_bytes bytes; allocates nothing yet. */
void pool_init(pool *p, size_t elem_bytes);
void pool_fini(pool *p);   /* frees the storage; the pool is empty again */
void pool_clear(pool *p);  /* every slot free, storage kept */
/* Doubles the storage; 0, or -1 on out of memory (for pool_get). */
int pool_grow(pool *p);

/* Object i (valid until the next pool_get, which may move the storage). */
static inline void *pool_at(const pool *p, int32_t i)
{
    return p->base + (size_t)i * p->elem_bytes;
}

/* Typed access for a pool made with pool_init(p, sizeof(type)): lets the
 * compiler index with a constant size instead of a multiplication. */
#define POOL_AT(p, type, i) (((type *)(void *)(p)->base)[i])

/* A free slot's index (contents undefined); -1 on out of memory. O(1). */
static inline int32_t pool_get(pool *p)
{
    int32_t i = p->free_head;
    if (i >= 0) {
        memcpy(&p->free_head, pool_at(p, i), sizeof(int32_t));
    } else {
        if (p->top == p->cap && pool_grow(p) != 0)
            return -1;
        i = p->top++;
    }
    p->live++;
    return i;
}

/* Slot i back on the free list. O(1). */
static inline void pool_put(pool *p, int32_t i)
{
    memcpy(pool_at(p, i), &p->free_head, sizeof(int32_t));
    p->free_head = i;
    p->live--;
}

#endif
