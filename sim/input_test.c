/* Unit tests of the input stream: the byte limit (where it stops and the
 * line it names), look-ahead that consumes nothing, a pipe read through one
 * open, gzip members one after another, and the gzip damage it refuses
 * (trailing bytes, a cut member, a compression bomb). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <zlib.h>
#include <cmocka.h>

#include "sim/input.h"

static char path[4200];

static void tmp_name(const char *tag)
{
    const char *dir = getenv("TMPDIR");
    snprintf(path, sizeof path, "%s/input_test.%ld.%s", dir && *dir ? dir : "/tmp",
             (long)getpid(), tag);
}

static void put(const char *tag, const void *d, size_t n)
{
    tmp_name(tag);
    FILE *f = fopen(path, "wb");
    assert_non_null(f);
    assert_int_equal(fwrite(d, 1, n, f), n);
    assert_int_equal(fclose(f), 0);
}

/* gzip of d (one member), into buf; returns its size. */
static size_t gz(const void *d, size_t n, unsigned char *buf, size_t cap)
{
    z_stream z;
    memset(&z, 0, sizeof z);
    assert_int_equal(deflateInit2(&z, 1, Z_DEFLATED, 15 + 16, 8, Z_DEFAULT_STRATEGY), Z_OK);
    z.next_in = (unsigned char *)d;
    z.avail_in = (uInt)n;
    z.next_out = buf;
    z.avail_out = (uInt)cap;
    assert_int_equal(deflate(&z, Z_FINISH), Z_STREAM_END);
    size_t out = cap - z.avail_out;
    deflateEnd(&z);
    return out;
}

/* Everything the parser would read: into buf, returns the count. */
static size_t slurp(input *in, char *buf, size_t cap)
{
    return fread(buf, 1, cap, input_file(in));
}

static void test_limit(void **state)
{
    (void)state;
    /* 50 lines "a\n" (100 bytes), limit 64: the parser gets exactly 64 bytes,
     * then a read error; the failure lies in line 33 (32 newlines read). */
    char d[100], buf[200];
    for (int i = 0; i < 50; i++)
        memcpy(d + 2 * i, "a\n", 2);
    put("limit", d, sizeof d);
    input_limits lim = {.max_bytes = 64, .what = "a test"};
    input *in;
    err e = {0};
    assert_int_equal(input_open(path, &lim, &in, &e), 0);
    assert_int_equal(slurp(in, buf, sizeof buf), 64);
    assert_true(ferror(input_file(in)));
    assert_int_equal(input_error(in, &e), ERR_INPUT);
    assert_non_null(strstr(e.msg, ":33: more than 64 bytes: too long for a test"));
    assert_int_equal(input_close(in, 0, &e), ERR_INPUT);

    /* Exactly at the limit is fine: 64 bytes, limit 64, then EOF. */
    put("exact", d, 64);
    assert_int_equal(input_open(path, &lim, &in, &e), 0);
    assert_int_equal(slurp(in, buf, sizeof buf), 64);
    assert_false(ferror(input_file(in)));
    assert_int_equal(input_close(in, 0, &e), 0);
    unlink(path);
}

static void test_peek_and_pipe(void **state)
{
    (void)state;
    /* A pipe, named /dev/fd/N: peeking 5 bytes consumes nothing, so the
     * reader still gets all 11, from the one open. */
    int fd[2];
    assert_int_equal(pipe(fd), 0);
    assert_int_equal(write(fd[1], "hello world", 11), 11);
    close(fd[1]);
    char name[64], buf[64] = "";
    snprintf(name, sizeof name, "/dev/fd/%d", fd[0]);
    input_limits lim = {.max_bytes = 1 << 20, .what = "a test"};
    input *in;
    err e = {0};
    assert_int_equal(input_open(name, &lim, &in, &e), 0);
    size_t n;
    const char *p = input_peek(in, 5, &n);
    assert_int_equal(n, 5);
    assert_memory_equal(p, "hello", 5);
    assert_int_equal(slurp(in, buf, sizeof buf), 11);
    assert_memory_equal(buf, "hello world", 11);
    assert_int_equal(input_close(in, 0, &e), 0);
    close(fd[0]);
}

static void test_gzip(void **state)
{
    (void)state;
    unsigned char z[256], two[512];
    char buf[512];
    size_t a = gz("ab\n", 3, z, sizeof z);
    memcpy(two, z, a);
    size_t b = gz("cd\n", 3, two + a, sizeof two - a);
    put("two.gz", two, a + b);
    input *in;
    err e = {0};
    /* Two members read one after the other: "ab\ncd\n". */
    input_limits lim = {.max_bytes = 1 << 20, .what = "a test", .gzip = 1};
    assert_int_equal(input_open(path, &lim, &in, &e), 0);
    assert_int_equal(slurp(in, buf, sizeof buf), 6);
    assert_memory_equal(buf, "ab\ncd\n", 6);
    assert_int_equal(input_close(in, 0, &e), 0);
    /* Without .gzip the bytes come as they are (the magic 1f 8b first). */
    input_limits raw = {.max_bytes = 1 << 20, .what = "a test"};
    assert_int_equal(input_open(path, &raw, &in, &e), 0);
    assert_int_equal(slurp(in, buf, sizeof buf), a + b);
    assert_int_equal((unsigned char)buf[0], 0x1f);
    assert_int_equal(input_close(in, 0, &e), 0);

    /* A member and then 5 other bytes: refused, the count named. */
    memcpy(two + a, "junk!", 5);
    put("tail.gz", two, a + 5);
    assert_int_equal(input_open(path, &lim, &in, &e), 0);
    slurp(in, buf, sizeof buf);
    assert_int_equal(input_close(in, 0, &e), ERR_INPUT);
    assert_non_null(strstr(e.msg, ": 5 bytes after the end of the gzip data"));

    /* A member cut short: truncated. */
    put("cut.gz", z, a - 6);
    assert_int_equal(input_open(path, &lim, &in, &e), 0);
    slurp(in, buf, sizeof buf);
    assert_int_equal(input_close(in, 0, &e), ERR_INPUT);
    assert_non_null(strstr(e.msg, "truncated gzip data"));
    unlink(path);
}

static void test_bomb(void **state)
{
    (void)state;
    /* 72 MiB of zeros deflate about 1000x: past 64 MiB inflated the ratio
     * is far above 100, so the read stops there. */
    size_t n = 72u << 20, cap = 1u << 20;
    unsigned char *d = calloc(n, 1), *z = malloc(cap);
    assert_non_null(d);
    assert_non_null(z);
    size_t zn = gz(d, n, z, cap);
    free(d);
    put("bomb.gz", z, zn);
    free(z);
    input_limits lim = {.max_bytes = 1ull << 32, .what = "a test", .gzip = 1, .max_ratio = 100};
    input *in;
    err e = {0};
    char *buf = malloc(1 << 16);
    assert_non_null(buf);
    assert_int_equal(input_open(path, &lim, &in, &e), 0);
    size_t total = 0, got;
    while ((got = slurp(in, buf, 1 << 16)) > 0)
        total += got;
    free(buf);
    assert_true(total <= (65u << 20));
    assert_int_equal(input_close(in, 0, &e), ERR_INPUT);
    assert_non_null(strstr(e.msg, "inflates more than 100x"));
    unlink(path);
}

static void test_open_errors(void **state)
{
    (void)state;
    input_limits lim = {.max_bytes = 1 << 20, .what = "a test"};
    input *in = NULL;
    err e = {0};
    assert_int_equal(input_open("/nonexistent/x", &lim, &in, &e), ERR_INPUT);
    assert_null(in);
    assert_non_null(strstr(e.msg, "/nonexistent/x: cannot open"));
    assert_int_equal(input_open("/", &lim, &in, &e), ERR_INPUT);
    assert_non_null(strstr(e.msg, "/: is a directory"));
    /* input_close(NULL) passes the status through. */
    assert_int_equal(input_close(NULL, ERR_CHECK, &e), ERR_CHECK);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_limit),      cmocka_unit_test(test_peek_and_pipe),
        cmocka_unit_test(test_gzip),       cmocka_unit_test(test_bomb),
        cmocka_unit_test(test_open_errors),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
