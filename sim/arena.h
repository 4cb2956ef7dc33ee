/* Per-run arena: bump allocation of objects that live as long as the run
 * (topology, parsed trace, names), freed all at once. Not thread-safe. */
#ifndef SIM_ARENA_H
#define SIM_ARENA_H

#include <stddef.h>

typedef struct arena arena;

arena *arena_new(void);                 /* NULL on out of memory */
void arena_free(arena *a);              /* frees every allocation; NULL ok */
/* Zeroed, 16-byte aligned block of n bytes; NULL on out of memory. */
void *arena_alloc(arena *a, size_t n);
/* Copy of s (or of its first n bytes, NUL-terminated); NULL on OOM. */
char *arena_strdup(arena *a, const char *s);
char *arena_strndup(arena *a, const char *s, size_t n);
size_t arena_bytes(const arena *a);     /* total bytes reserved so far */

#endif
