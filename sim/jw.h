/* A JSON text writer with libc alone: compact, its bytes those of yajl_gen
 * (strings escaped as yajl escapes them: '"', '\\', \b \f \n \r \t, other
 * control characters \u00XX; '/' and bytes >= 0x80 as they are), so that the
 * report writer, which hwcheck shares and which must build with CUDA, NCCL
 * and libc only, and the timelines write JSON the same way (sim/report_test.c
 * compares the bytes with yajl_gen's). The writer keeps per level only
 * whether it is a map (keys and values alternate) and how many items it
 * holds; it checks nothing else. */
#ifndef SIM_JW_H
#define SIM_JW_H

#include <stdio.h>

enum { JW_DEPTH = 16 };

typedef struct jw {
    FILE *out;                     /* borrowed */
    int depth;                     /* open maps and arrays */
    unsigned char map[JW_DEPTH];   /* level is a map */
    unsigned n[JW_DEPTH];          /* items at that level (a map counts keys and values) */
} jw;

void jw_init(jw *w, FILE *out);
void jw_open(jw *w, int map);           /* '{' (map 1) or '['; asserts depth */
void jw_close(jw *w);                   /* the innermost '}' or ']' */
void jw_str(jw *w, const char *s);      /* a string (or a key); NULL writes "" */
void jw_raw(jw *w, const char *s);      /* text as it is: a number, null */

#endif
