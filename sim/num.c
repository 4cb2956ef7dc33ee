#include "sim/num.h"

#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

int num_long(const char *s, long *out)
{
    if (!*s)
        return -1;
    errno = 0;
    char *end;
    long v = strtol(s, &end, 10);
    if (*end || errno)
        return -1;
    *out = v;
    return 0;
}

int num_u64(const char *s, uint64_t *out)
{
    /* strtoull takes "-1" as its maximum: refuse any sign of minus */
    if (!*s || strchr(s, '-'))
        return -1;
    errno = 0;
    char *end;
    unsigned long long v = strtoull(s, &end, 10);
    if (*end || errno)
        return -1;
    *out = (uint64_t)v;
    return 0;
}

int num_decimal(const char *s, double *out)
{
    /* strtod alone also takes hex, "inf" and "nan" */
    if (!*s || s[strspn(s, "0123456789+-.eE")])
        return -1;
    errno = 0;
    char *end;
    double v = strtod(s, &end);
    if (*end || errno || !isfinite(v))
        return -1;
    *out = v;
    return 0;
}
