/* Bounded line reader: getc_unlocked into a buffer that doubles up to the
 * limit. A final line without '\n' is returned as a line. */
#define _POSIX_C_SOURCE 200809L
#include "sim/line.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

int line_read(FILE *f, char **buf, size_t *cap, size_t max, size_t *len)
{
    size_t n = 0;
    int c, nul = 0;
    while ((c = getc_unlocked(f)) != EOF && c != '\n') {
        if (n >= max)
            return LINE_LONG;
        if (n + 1 >= *cap) {
            size_t ncap = *cap ? *cap * 2 : 256;
            if (ncap > max + 1)
                ncap = max + 1;
            if (ncap < n + 2)
                ncap = n + 2;
            char *q = realloc(*buf, ncap);
            if (!q) {
                errno = ENOMEM;
                return LINE_ERROR;
            }
            *buf = q;
            *cap = ncap;
        }
        nul |= c == '\0';
        (*buf)[n++] = (char)c;
    }
    if (c == EOF && ferror(f))
        return LINE_ERROR;
    if (c == EOF && n == 0)
        return LINE_EOF;
    if (!*buf) {
        if (!(*buf = malloc(1))) {
            errno = ENOMEM;
            return LINE_ERROR;
        }
        *cap = 1;
    }
    (*buf)[n] = '\0';
    *len = n;
    return nul ? LINE_NUL : LINE_OK;
}

int line_get(FILE *f, char *buf, size_t size, size_t *len)
{
    size_t n = 0;
    int c, nul = 0;
    while ((c = getc_unlocked(f)) != EOF && c != '\n') {
        if (n + 1 >= size)
            return LINE_LONG;
        nul |= c == '\0';
        buf[n++] = (char)c;
    }
    if (c == EOF && ferror(f))
        return LINE_ERROR;
    if (c == EOF && n == 0)
        return LINE_EOF;
    buf[n] = '\0';
    *len = n;
    return nul ? LINE_NUL : LINE_OK;
}

int line_fail(int status, const char *file, long line, size_t max, err *e)
{
    if (status == LINE_LONG)
        return err_at(e, file, line, "line longer than %zu bytes", max);
    if (status == LINE_NUL)
        return err_at(e, file, line, "NUL byte in a text file");
    return err_set(e, ERR_SYSTEM, "%s: read error", file);
}
