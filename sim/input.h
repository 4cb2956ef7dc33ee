/* Every input file is read through one open stream. The path is opened once
 * (so pipes, FIFOs, <(...) and /dev/fd/N read as files do), its first bytes
 * can be looked at without being consumed (a format is sniffed from a
 * buffer, never by reopening or rewinding), and reading stops at a byte
 * limit whatever the source (a path, a FIFO, stdin), so endless input fails
 * fast. Optionally gzip data is inflated on the way: members one after
 * another, bytes after the last member and compression bombs refused.
 * Parsers keep reading a FILE * (a fopencookie stream: glibc or musl). */
#ifndef SIM_INPUT_H
#define SIM_INPUT_H

#include <stddef.h>
#include <stdio.h>

#include "sim/err.h"

typedef struct input input;

/* The limit of every text format (topologies, smi matrices, NCCL XML,
 * calibration profiles, measurements, scenarios, sweep grids). */
#define INPUT_TEXT_MAX_BYTES (64ull << 20)

typedef struct input_limits {
    unsigned long long max_bytes;  /* bytes a parser may read (inflated); more: ERR_INPUT */
    const char *what;              /* the format, for messages ("a topology") */
    int gzip;                      /* inflate data that starts with gzip's magic bytes */
    int max_ratio;                 /* gzip: refuse inflating more than this x past 64 MiB; 0 off */
} input_limits;

/* Open path ("-": stdin, left open on close) once for reading. ERR_INPUT
 * "path: cannot open: why" (errno is open's) or "path: is a directory" (errno
 * EISDIR). */
int input_open(const char *path, const input_limits *lim, input **out, err *e);
FILE *input_file(input *in);   /* the stream a parser reads; owned by in */
const char *input_name(const input *in);
/* The first bytes of the (inflated) data, up to n and fewer at its end, not
 * consumed: the stream still starts with them. *len gets how many. */
const char *input_peek(input *in, size_t n, size_t *len);
/* If the stream stopped (a limit, bad gzip data, a read error): that error,
 * with file:line, into e and its code returned; else 0. A parser that saw a
 * read error calls it, as what it saw is only the consequence. */
int input_error(const input *in, err *e);
/* Close (input_close(NULL, rc, e) returns rc): input_error's error replaces
 * rc and e when there is one, else rc is returned as it is. */
int input_close(input *in, int rc, err *e);

#endif
