/* pngstat FILE [MIN_INK_PCT [MIN_COLOURS]]: is a rendered plot blank? Reads
 * the PNG with libpng's simplified API as 8-bit RGB over white and prints
 * "WxH, N colours, P% ink" (ink: pixels that are not white), then "nonblank"
 * and exit 0 when P >= MIN_INK_PCT (default 2) and N >= MIN_COLOURS (default
 * 3), else "blank" and exit 1; exit 3 for a file libpng cannot read. The
 * colours are counted up to 256 ("256+" beyond). */
#include <png.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

enum { MAXC = 256 };

int main(int argc, char **argv)
{
    if (argc < 2) {
        fprintf(stderr, "usage: pngstat FILE [MIN_INK_PCT [MIN_COLOURS]]\n");
        return 2;
    }
    double min_ink = argc > 2 ? atof(argv[2]) : 2;
    long min_col = argc > 3 ? atol(argv[3]) : 3;
    png_image im;
    memset(&im, 0, sizeof im);
    im.version = PNG_IMAGE_VERSION;
    if (!png_image_begin_read_from_file(&im, argv[1])) {
        fprintf(stderr, "pngstat: %s: %s\n", argv[1], im.message);
        return 3;
    }
    im.format = PNG_FORMAT_RGB;
    png_color white = {255, 255, 255};
    size_t n = PNG_IMAGE_SIZE(im);
    unsigned char *px = malloc(n);
    if (!px || !png_image_finish_read(&im, &white, px, 0, NULL)) {
        fprintf(stderr, "pngstat: %s: %s\n", argv[1], px ? im.message : "out of memory");
        free(px);
        return 3;
    }
    static unsigned colours[MAXC];
    long ncol = 0, ink = 0, total = (long)im.width * (long)im.height;
    for (long i = 0; i < total; i++) {
        const unsigned char *p = px + 3 * i;
        unsigned c = (unsigned)p[0] << 16 | (unsigned)p[1] << 8 | p[2];
        ink += c != 0xFFFFFF;
        int seen = 0;
        for (long k = 0; k < ncol && !seen; k++)
            seen = colours[k] == c;
        if (!seen && ncol < MAXC)
            colours[ncol++] = c;
    }
    free(px);
    double pct = total ? 100.0 * (double)ink / (double)total : 0;
    int ok = pct >= min_ink && ncol >= min_col;
    printf("%ux%u, %ld%s colours, %.1f%% ink\n%s\n", im.width, im.height, ncol,
           ncol == MAXC ? "+" : "", pct, ok ? "nonblank" : "blank");
    return ok ? 0 : 1;
}
