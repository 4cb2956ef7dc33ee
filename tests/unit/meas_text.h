/* A measurement set from a string, for the unit tests of what reads one
 * (include after <cmocka.h>). */
#ifndef TESTS_UNIT_MEAS_TEXT_H
#define TESTS_UNIT_MEAS_TEXT_H

#include <stdio.h>
#include <string.h>

#include "validate/meas.h"

/* text parsed as the file name; a parse error fails the test with its
 * message. The caller frees the set (meas_free). */
static inline meas_set *meas_text(const char *name, const char *text)
{
    FILE *f = fmemopen((void *)text, strlen(text), "r");
    assert_non_null(f);
    meas_set *m = NULL;
    err e = {0};
    int rc = meas_read(f, name, &m, &e);
    fclose(f);
    if (rc)
        print_error("%s\n", e.msg);
    assert_int_equal(rc, 0);
    return m;
}

#endif
