/* One open stream per input. Bytes flow fd -> raw buffer -> (inflate) ->
 * look-ahead buffer (what input_peek saw) -> the parser's FILE. The limit
 * counts decoded bytes: a read that would cross it delivers up to it, and
 * the next read fails if anything is left, so a failure always lies beyond
 * what the parser consumed and its file:line is where the data stopped.
 * Once failed, every read fails (EIO) and the error is kept for the parser's
 * caller (input_error, input_close). */
#define _GNU_SOURCE   /* fopencookie */
#include "sim/input.h"

#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include <zlib.h>

enum { RAW_BYTES = 1 << 16, PEEK_MAX = 1 << 16 };
#define BOMB_MIN_BYTES (64ull << 20)   /* a gzip ratio counts only past this */

enum { M_UNKNOWN, M_PLAIN, M_GZIP };

struct input {
    FILE *f;
    int fd, own_fd;
    input_limits lim;
    char name[4096];
    unsigned long long made, raw, lines;   /* decoded bytes, raw bytes, '\n' decoded */
    unsigned char *head;                   /* look-ahead: decoded, not yet delivered */
    size_t head_len, head_pos;
    z_stream z;   /* next_in/avail_in: the unread raw bytes, in both modes */
    int mode, z_live, member_done, eof, failed;
    err why;
    unsigned char rawbuf[RAW_BYTES];
};

__attribute__((format(printf, 4, 5)))
static ssize_t fail(input *in, int code, long line, const char *fmt, ...)
{
    char msg[768];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    err_at(&in->why, in->name, line, "%s", msg);
    in->why.code = code;
    in->failed = 1;
    return -1;
}

static long here(const input *in) { return (long)in->lines + 1; }

static ssize_t raw_read(input *in, void *dst, size_t n)
{
    ssize_t r;
    do
        r = read(in->fd, dst, n);
    while (r < 0 && errno == EINTR);
    if (r < 0)
        return fail(in, ERR_SYSTEM, 0, "read error: %s", strerror(errno));
    if (r == 0)
        in->eof = 1;
    in->raw += (unsigned long long)r;
    return r;
}

/* At least k unread raw bytes, fewer only at the end of the data. */
static int ensure(input *in, size_t k)
{
    while (in->z.avail_in < k && !in->eof) {
        if (in->z.avail_in && in->z.next_in != in->rawbuf)
            memmove(in->rawbuf, in->z.next_in, in->z.avail_in);
        in->z.next_in = in->rawbuf;
        ssize_t r = raw_read(in, in->rawbuf + in->z.avail_in, RAW_BYTES - in->z.avail_in);
        if (r < 0)
            return -1;
        in->z.avail_in += (uInt)r;
    }
    return 0;
}

static int at_magic(const input *in)
{
    return in->z.avail_in >= 2 && in->z.next_in[0] == 0x1f && in->z.next_in[1] == 0x8b;
}

/* Whatever follows the last gzip member: count it (up to the limit) and fail. */
static ssize_t trailing(input *in)
{
    unsigned long long n = in->z.avail_in;
    in->z.avail_in = 0;
    unsigned long long cap = in->lim.max_bytes < BOMB_MIN_BYTES ? in->lim.max_bytes
                                                                 : BOMB_MIN_BYTES;
    while (!in->eof && n <= cap) {
        ssize_t r = raw_read(in, in->rawbuf, RAW_BYTES);
        if (r < 0)
            return -1;
        n += (unsigned long long)r;
    }
    return fail(in, ERR_INPUT, 0, "%s%llu bytes after the end of the gzip data (a damaged or "
                "concatenated file)", n > cap ? "more than " : "", n > cap ? cap : n);
}

/* Up to n decoded bytes into dst (n > 0): > 0 got, 0 end of data, -1 failed. */
static ssize_t decode(input *in, unsigned char *dst, size_t n)
{
    if (in->mode == M_UNKNOWN) {
        if (ensure(in, 2) < 0)
            return -1;
        in->mode = M_PLAIN;
        if (in->lim.gzip && at_magic(in)) {
            if (inflateInit2(&in->z, 15 + 16) != Z_OK)
                return fail(in, ERR_SYSTEM, 0, "out of memory");
            in->z_live = 1;
            in->mode = M_GZIP;
        }
    }
    if (in->mode == M_PLAIN) {
        if (in->z.avail_in) {
            size_t k = in->z.avail_in < n ? in->z.avail_in : n;
            memcpy(dst, in->z.next_in, k);
            in->z.next_in += k;
            in->z.avail_in -= (uInt)k;
            return (ssize_t)k;
        }
        return in->eof ? 0 : raw_read(in, dst, n);
    }
    for (;;) {
        if (in->member_done) {
            /* End of the data, another member, or bytes that are neither. */
            if (ensure(in, 2) < 0)
                return -1;
            if (in->z.avail_in == 0)
                return 0;
            if (!at_magic(in))
                return trailing(in);
            inflateReset(&in->z);
            in->member_done = 0;
        }
        if (ensure(in, 1) < 0)
            return -1;
        if (in->z.avail_in == 0)
            return fail(in, ERR_INPUT, here(in), "truncated gzip data (the file ends inside "
                        "it)");
        in->z.next_out = dst;
        in->z.avail_out = (uInt)(n > RAW_BYTES ? RAW_BYTES : n);
        uInt before = in->z.avail_out;
        int rc = inflate(&in->z, Z_NO_FLUSH);
        size_t got = before - in->z.avail_out;
        if (rc == Z_STREAM_END)
            in->member_done = 1;
        else if ((rc != Z_OK && rc != Z_BUF_ERROR) || (rc == Z_BUF_ERROR && in->z.avail_in))
            return fail(in, ERR_INPUT, here(in), "corrupted gzip data (%s)",
                        in->z.msg ? in->z.msg : "zlib error");
        if (got)
            return (ssize_t)got;
    }
}

static void size_text(unsigned long long b, char *out, size_t n)
{
    if (b >= (1ull << 30) && b % (1ull << 30) == 0)
        snprintf(out, n, "%llu GiB", b >> 30);
    else if (b >= (1ull << 20) && b % (1ull << 20) == 0)
        snprintf(out, n, "%llu MiB", b >> 20);
    else
        snprintf(out, n, "%llu bytes", b);
}

/* decode() under the byte limit and the gzip ratio. */
static ssize_t produce(input *in, unsigned char *dst, size_t n)
{
    if (in->failed)
        return -1;
    if (in->made >= in->lim.max_bytes) {
        unsigned char c;
        ssize_t r = decode(in, &c, 1);
        if (r <= 0)
            return r;
        char lim[32];
        size_text(in->lim.max_bytes, lim, sizeof lim);
        return fail(in, ERR_INPUT, here(in), "more than %s: too long for %s", lim,
                    in->lim.what);
    }
    if (n > in->lim.max_bytes - in->made)
        n = (size_t)(in->lim.max_bytes - in->made);
    ssize_t r = decode(in, dst, n);
    if (r <= 0)
        return r;
    in->made += (unsigned long long)r;
    for (const unsigned char *p = dst, *end = dst + r; (p = memchr(p, '\n', (size_t)(end - p)));
         p++)
        in->lines++;
    if (in->mode == M_GZIP && in->lim.max_ratio > 0 && in->made > BOMB_MIN_BYTES &&
        in->raw > 0 && in->made / in->raw > (unsigned long long)in->lim.max_ratio)
        return fail(in, ERR_INPUT, 0, "inflates more than %dx (%llu MiB from %llu KiB): a "
                    "compression bomb, not %s", in->lim.max_ratio, in->made >> 20,
                    in->raw >> 10, in->lim.what);
    return r;
}

static ssize_t cookie_read(void *cookie, char *buf, size_t size)
{
    input *in = cookie;
    if (in->head_pos < in->head_len) {
        size_t k = in->head_len - in->head_pos;
        if (k > size)
            k = size;
        memcpy(buf, in->head + in->head_pos, k);
        in->head_pos += k;
        return (ssize_t)k;
    }
    ssize_t r = size ? produce(in, (unsigned char *)buf, size) : 0;
    if (r < 0)
        errno = EIO;
    return r;
}

int input_open(const char *path, const input_limits *lim, input **out, err *e)
{
    *out = NULL;
    input *in = calloc(1, sizeof *in);
    if (!in)
        return err_set(e, ERR_SYSTEM, "out of memory");
    snprintf(in->name, sizeof in->name, "%s", path);
    in->lim = *lim;
    if (!in->lim.what)
        in->lim.what = "this input";
    in->z.next_in = in->rawbuf;
    if (strcmp(path, "-") != 0) {
        in->fd = open(path, O_RDONLY | O_CLOEXEC);
        if (in->fd < 0) {
            int saved = errno;
            free(in);
            err_set(e, ERR_INPUT, "%s: cannot open: %s", path, strerror(saved));
            errno = saved;
            return ERR_INPUT;
        }
        in->own_fd = 1;
        struct stat st;
        if (fstat(in->fd, &st) == 0 && S_ISDIR(st.st_mode)) {
            close(in->fd);
            free(in);
            err_set(e, ERR_INPUT, "%s: is a directory", path);
            errno = EISDIR;
            return ERR_INPUT;
        }
    }
    cookie_io_functions_t io = {.read = cookie_read};
    if (!(in->f = fopencookie(in, "r", io))) {
        if (in->own_fd)
            close(in->fd);
        free(in);
        return err_set(e, ERR_SYSTEM, "out of memory");
    }
    *out = in;
    return 0;
}

FILE *input_file(input *in) { return in->f; }
const char *input_name(const input *in) { return in->name; }

const char *input_peek(input *in, size_t n, size_t *len)
{
    if (n > PEEK_MAX)
        n = PEEK_MAX;
    if (!in->head) {
        if (!(in->head = malloc(PEEK_MAX + 1))) {
            fail(in, ERR_SYSTEM, 0, "out of memory");
            *len = 0;
            return "";
        }
    }
    while (in->head_pos == 0 && in->head_len < n) {
        ssize_t r = produce(in, in->head + in->head_len, n - in->head_len);
        if (r <= 0)
            break;
        in->head_len += (size_t)r;
    }
    in->head[in->head_len] = 0;
    *len = in->head_len - in->head_pos;
    return (const char *)in->head + in->head_pos;
}

int input_error(const input *in, err *e)
{
    if (!in->failed)
        return 0;
    if (e)
        *e = in->why;
    return in->why.code;
}

int input_close(input *in, int rc, err *e)
{
    if (!in)
        return rc;
    if (in->failed)
        rc = input_error(in, e);
    fclose(in->f);
    if (in->z_live)
        inflateEnd(&in->z);
    if (in->own_fd)
        close(in->fd);
    free(in->head);
    free(in);
    return rc;
}
