/* Arena: a list of blocks, each at least 64 KiB; an allocation larger than a
 * block gets a block of its own. Invariant: used <= cap in the head block. */
#include "sim/arena.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

struct block {
    struct block *next;
    size_t cap, used;
    _Alignas(16) unsigned char data[];
};

struct arena {
    struct block *head;
    size_t total;
};

enum { BLOCK_MIN = 64 * 1024 };

arena *arena_new(void) { return calloc(1, sizeof(arena)); }

void arena_free(arena *a)
{
    if (!a)
        return;
    for (struct block *b = a->head, *n; b; b = n) {
        n = b->next;
        free(b);
    }
    free(a);
}

void *arena_alloc(arena *a, size_t n)
{
    size_t need = (n + 15) & ~(size_t)15;
    if (need < n)
        return NULL;
    struct block *b = a->head;
    if (!b || b->cap - b->used < need) {
        size_t cap = need > BLOCK_MIN ? need : BLOCK_MIN;
        if (cap > SIZE_MAX - sizeof *b)
            return NULL;
        b = malloc(sizeof *b + cap);
        if (!b)
            return NULL;
        b->cap = cap;
        b->used = 0;
        b->next = a->head;
        a->head = b;
        a->total += cap;
    }
    void *p = b->data + b->used;
    b->used += need;
    memset(p, 0, n);
    return p;
}

char *arena_strndup(arena *a, const char *s, size_t n)
{
    char *p = arena_alloc(a, n + 1);
    if (p) {
        memcpy(p, s, n);
        p[n] = '\0';
    }
    return p;
}

char *arena_strdup(arena *a, const char *s) { return arena_strndup(a, s, strlen(s)); }

size_t arena_bytes(const arena *a) { return a->total; }
