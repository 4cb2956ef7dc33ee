/* JSON text with libc alone (sim/jw.h). */
#include "sim/jw.h"

#include <stdlib.h>

#include "sim/err.h"

void jw_init(jw *w, FILE *out)
{
    w->out = out;
    w->depth = 0;
}

/* The separator an item needs in the innermost container: ',' between array
 * items and between map entries, ':' between a key and its value. */
static void item(jw *w)
{
    if (w->depth == 0)
        return;
    int d = w->depth - 1;
    if (w->n[d] > 0)
        fputc(w->map[d] && w->n[d] % 2 ? ':' : ',', w->out);
    w->n[d]++;
}

void jw_open(jw *w, int map)
{
    ASSERTF(w->depth < JW_DEPTH, "json depth %d", w->depth);
    item(w);
    fputc(map ? '{' : '[', w->out);
    w->map[w->depth] = (unsigned char)map;
    w->n[w->depth++] = 0;
}

void jw_close(jw *w)
{
    ASSERTF(w->depth > 0, "json close at depth 0");
    w->depth--;
    fputc(w->map[w->depth] ? '}' : ']', w->out);
}

void jw_raw(jw *w, const char *s)
{
    item(w);
    fputs(s, w->out);
}

void jw_str(jw *w, const char *s)
{
    static const char hex[] = "0123456789ABCDEF";
    item(w);
    fputc('"', w->out);
    for (const unsigned char *p = (const unsigned char *)(s ? s : ""); *p; p++) {
        const char *esc = NULL;
        switch (*p) {
        case '"': esc = "\\\""; break;
        case '\\': esc = "\\\\"; break;
        case '\b': esc = "\\b"; break;
        case '\f': esc = "\\f"; break;
        case '\n': esc = "\\n"; break;
        case '\r': esc = "\\r"; break;
        case '\t': esc = "\\t"; break;
        default: break;
        }
        if (esc)
            fputs(esc, w->out);
        else if (*p < 0x20)
            fprintf(w->out, "\\u00%c%c", hex[*p >> 4], hex[*p & 15]);
        else
            fputc(*p, w->out);
    }
    fputc('"', w->out);
}
