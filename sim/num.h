/* Strict number cells for the text parsers: the whole string is the
 * number, in decimal, within its type's range, or the call fails (-1) and
 * leaves *out alone. The caller names the place and the bounds. */
#ifndef SIM_NUM_H
#define SIM_NUM_H

#include <stdint.h>

int num_long(const char *s, long *out);       /* "-12", "+3"; not "", "1x", "1e3" */
int num_u64(const char *s, uint64_t *out);    /* "0".."18446744073709551615"; not "-1" */
int num_decimal(const char *s, double *out);  /* "1.5e3"; not hex, "inf", "nan" or beyond double */

#endif
