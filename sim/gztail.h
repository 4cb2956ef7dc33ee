/* zlib's gzread ignores bytes after the last gzip member; a file with such
 * trailing data is damaged (a cut download, two files glued), so readers
 * refuse it. */
#ifndef SIM_GZTAIL_H
#define SIM_GZTAIL_H

#include <stdint.h>
#include <zlib.h>

#include "sim/err.h"

/* Call at EOF of gz (opened on path): ERR_INPUT "path: N bytes after the end
 * of the gzip data" if there are any; 0 for plain (gzdirect) files. */
int gztail_check(gzFile gz, const char *path, err *e);

#endif
