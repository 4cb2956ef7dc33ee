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

/* Read one line of at most max bytes (without its '\n') into *buf (grown
 * with realloc up to max + 1 bytes; caller frees). *len gets its length.
 * Returns a line_status. */
int line_read(FILE *f, char **buf, size_t *cap, size_t max, size_t *len);

/* line_read into a caller's buffer of size bytes: lines of at most size - 1
 * bytes; nothing is allocated. */
int line_get(FILE *f, char *buf, size_t size, size_t *len);

/* The error for a status other than LINE_OK and LINE_EOF, worded the same
 * in every reader: "file:line: line longer than MAX bytes", "file:line: NUL
 * byte in a text file", "file: read error" (ERR_SYSTEM; a reader of an input
 * stream lets input_close name what stopped it). Returns the code. */
int line_fail(int status, const char *file, long line, size_t max, err *e);

#endif
