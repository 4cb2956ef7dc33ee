/* Trailing-data check for gzip input. Fast path: the last four bytes of a
 * gzip member are its inflated size mod 2^32, which for a one-member file
 * equals what gzread returned. Otherwise (several members, or damage) the
 * file is walked member by member with inflate to find where the gzip data
 * really ends. */
#define _POSIX_C_SOURCE 200809L
#include "sim/gztail.h"

#include <stdio.h>
#include <string.h>

enum { BUF = 1 << 16 };

/* Bytes after the last complete member, or -1 if the walk fails. */
static long long walk(FILE *f)
{
    static const size_t cap = BUF;
    unsigned char in[BUF], out[BUF];
    z_stream z;
    memset(&z, 0, sizeof z);
    if (inflateInit2(&z, 15 + 16) != Z_OK)
        return -1;
    long long trailing = -1;
    int ended = 0;
    for (;;) {
        if (z.avail_in == 0) {
            size_t n = fread(in, 1, cap, f);
            if (n == 0)
                break;
            z.next_in = in;
            z.avail_in = (uInt)n;
        }
        if (ended) {
            /* Another member must start here, or the rest is trailing. */
            if (z.next_in[0] != 0x1f) {
                long long rest = z.avail_in;
                size_t n;
                while ((n = fread(in, 1, cap, f)) > 0)
                    rest += (long long)n;
                trailing = rest;
                goto out;
            }
            inflateReset(&z);
            ended = 0;
        }
        z.next_out = out;
        z.avail_out = (uInt)cap;
        int rc = inflate(&z, Z_NO_FLUSH);
        if (rc == Z_STREAM_END)
            ended = 1;
        else if (rc != Z_OK && rc != Z_BUF_ERROR)
            goto out;
    }
    trailing = ended ? 0 : -1;
out:
    inflateEnd(&z);
    return trailing;
}

int gztail_check(gzFile gz, const char *path, err *e)
{
    if (gzdirect(gz))
        return 0;
    FILE *f = fopen(path, "rb");
    if (!f)
        return 0;   /* stdin or gone: gzread's verdict stands */
    unsigned char tail[4];
    z_off_t total = gztell(gz);
    int one_member = fseek(f, -4, SEEK_END) == 0 && fread(tail, 1, 4, f) == 4 &&
                     ((uint32_t)tail[0] | (uint32_t)tail[1] << 8 | (uint32_t)tail[2] << 16 |
                      (uint32_t)tail[3] << 24) == (uint32_t)total;
    long long trailing = 0;
    if (!one_member) {
        rewind(f);
        trailing = walk(f);
    }
    fclose(f);
    if (trailing > 0)
        return err_at(e, path, 0, "%lld bytes after the end of the gzip data (a damaged or "
                      "concatenated file)", trailing);
    if (trailing < 0)
        return err_at(e, path, 0, "corrupted gzip data");
    return 0;
}
