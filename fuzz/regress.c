/* Replays saved fuzz findings through the harnesses: `fuzz-regress DIR`
 * runs every file DIR/TARGET/FILE through TARGET. Under make check-asan a
 * finding that crashes, leaks or trips UBSan again fails the build. */
#define _POSIX_C_SOURCE 200809L
#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "fuzz/harness.h"

static int run_file(const char *target, const char *path)
{
    FILE *f = fopen(path, "rb");
    if (!f) {
        fprintf(stderr, "%s: cannot open\n", path);
        return 1;
    }
    size_t cap = 1 << 16, n = 0;
    unsigned char *buf = malloc(cap);
    size_t got;
    while (buf && (got = fread(buf + n, 1, cap - n, f)) > 0) {
        n += got;
        if (n == cap) {
            unsigned char *nb = realloc(buf, cap *= 2);
            if (!nb) {
                free(buf);
                buf = NULL;
            }
            buf = nb;
        }
    }
    fclose(f);
    if (!buf) {
        fprintf(stderr, "%s: out of memory\n", path);
        return 1;
    }
    int rc = fuzz_run(target, buf, n);
    free(buf);
    if (rc)
        fprintf(stderr, "%s: no fuzz target '%s'\n", path, target);
    return rc != 0;
}

int main(int argc, char **argv)
{
    if (argc != 2) {
        fprintf(stderr, "usage: fuzz-regress DIR (DIR/TARGET/FILE...)\n");
        return 2;
    }
    int bad = 0, files = 0;
    for (int i = 0; fuzz_target_name(i); i++) {
        char dir[4096];
        snprintf(dir, sizeof dir, "%s/%s", argv[1], fuzz_target_name(i));
        DIR *d = opendir(dir);
        if (!d)
            continue;
        struct dirent *de;
        while ((de = readdir(d))) {
            if (de->d_name[0] == '.')
                continue;
            char path[8192];
            snprintf(path, sizeof path, "%s/%s", dir, de->d_name);
            bad += run_file(fuzz_target_name(i), path);
            files++;
        }
        closedir(d);
    }
    printf("fuzz regressions: %d file(s) replayed, %d failed\n", files, bad);
    return bad ? 1 : 0;
}
