/* Fuzz harnesses: one function per parser, fed arbitrary bytes. Each runs
 * the parser the way the CLI does (path-based readers get a temporary file)
 * and frees everything, so a crash, a leak, undefined behaviour or a hang is
 * the parser's. Used by the libFuzzer drivers (make fuzz) and by the
 * regression replay of tests/fuzz/ in make check. */
#ifndef FUZZ_HARNESS_H
#define FUZZ_HARNESS_H

#include <stddef.h>
#include <stdint.h>

/* Name i of the target table (NULL past the end). */
const char *fuzz_target_name(int i);
/* Run target `name` on data; -1 if there is no such target, else 0 (the
 * parser's own verdict on the bytes does not matter). */
int fuzz_run(const char *name, const uint8_t *data, size_t n);

#endif
