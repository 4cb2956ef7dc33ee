/* Bounded line reading for every text parser: a line longer than the
 * caller's limit, a NUL byte or endless input (/dev/zero) stops the read at
 * the limit instead of growing memory, so bad input fails fast. */
#ifndef SIM_LINE_H
#define SIM_LINE_H

#include <stdio.h>

#include "sim/err.h"

enum line_status {
    LINE_EOF = 0,      /* no more input (check ferror) */
    LINE_OK = 1,       /* *buf holds a line, '\n' dropped, NUL-terminated */
    LINE_LONG = -1,    /* more than max bytes before '\n' (rest unread) */
    LINE_NUL = -2,     /* a NUL byte inside the line */
    LINE_ERROR = -3    /* read error (errno set) */
};

/* Read one line into *buf (grown with realloc up to max + 1 bytes; caller
 * frees). *len gets its length. Returns a line_status. */
int line_read(FILE *f, char **buf, size_t *cap, size_t max, size_t *len);

/* Open path for reading: ERR_INPUT "path: cannot open: why" or "path: is a
 * directory" (so every reader answers a directory the same way). */
int line_open(const char *path, FILE **f, err *e);

#endif
