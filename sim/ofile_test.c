/* Unit tests of the atomic output files' one-call writer: the target is
 * replaced only when the writer succeeds, and no temporary is left. */
#define _POSIX_C_SOURCE 200809L
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <cmocka.h>

#include "sim/ofile.h"

static int put(FILE *f, void *arg, err *e)
{
    (void)e;
    return fputs(arg, f) < 0 ? -1 : 0;
}

static int fail_after(FILE *f, void *arg, err *e)
{
    fputs(arg, f);
    return err_set(e, ERR_INPUT, "x.txt:3: bad");
}

static void slurp(const char *path, char *buf, size_t n)
{
    FILE *f = fopen(path, "r");
    assert_non_null(f);
    size_t k = fread(buf, 1, n - 1, f);
    buf[k] = 0;
    fclose(f);
}

static int entries(const char *dir)
{
    DIR *d = opendir(dir);
    assert_non_null(d);
    int n = 0;
    for (struct dirent *x; (x = readdir(d));)
        n += x->d_name[0] != '.';
    closedir(d);
    return n;
}

static void test_write(void **state)
{
    (void)state;
    char dir[] = "/tmp/ofile_test.XXXXXX", path[64], buf[64];
    assert_non_null(mkdtemp(dir));
    snprintf(path, sizeof path, "%s/out.txt", dir);
    err e = {0};
    /* A writer that succeeds: the file holds what it wrote, nothing else is
     * in the directory. */
    assert_int_equal(ofile_write(path, put, "first\n", &e), 0);
    slurp(path, buf, sizeof buf);
    assert_string_equal(buf, "first\n");
    assert_int_equal(entries(dir), 1);
    /* A writer that fails half way: its error comes back, the old file
     * stays as it was and its temporary is gone. */
    assert_int_equal(ofile_write(path, fail_after, "second\n", &e), ERR_INPUT);
    assert_string_equal(e.msg, "x.txt:3: bad");
    slurp(path, buf, sizeof buf);
    assert_string_equal(buf, "first\n");
    assert_int_equal(entries(dir), 1);
    unlink(path);
    rmdir(dir);
}

int main(void)
{
    const struct CMUnitTest tests[] = {cmocka_unit_test(test_write)};
    return cmocka_run_group_tests(tests, NULL, NULL);
}
