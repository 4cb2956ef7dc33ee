/* Error values: formatting of messages; no printing, no exiting. */
#include "sim/err.h"

#include <stdarg.h>
#include <string.h>

int err_set(err *e, int code, const char *fmt, ...)
{
    if (!e)
        return code;
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(e->msg, sizeof e->msg, fmt, ap);
    va_end(ap);
    e->code = code;
    return code;
}

int err_at(err *e, const char *file, long line, const char *fmt, ...)
{
    if (!e)
        return ERR_INPUT;
    int n = line > 0 ? snprintf(e->msg, sizeof e->msg, "%s:%ld: ", file, line)
                     : snprintf(e->msg, sizeof e->msg, "%s: ", file);
    if (n < 0 || (size_t)n >= sizeof e->msg)
        n = 0;
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(e->msg + n, sizeof e->msg - (size_t)n, fmt, ap);
    va_end(ap);
    e->code = ERR_INPUT;
    return ERR_INPUT;
}

int err_wrap(err *e, const char *fmt, ...)
{
    if (!e)
        return ERR_SYSTEM;
    char prefix[256], old[sizeof e->msg];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(prefix, sizeof prefix, fmt, ap);
    va_end(ap);
    memcpy(old, e->msg, sizeof old);
    snprintf(e->msg, sizeof e->msg, "%.255s: %.760s", prefix, old);
    return e->code;
}
