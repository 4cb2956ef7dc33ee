/* libFuzzer driver: the target is compiled in (-DFUZZ_TARGET="name"). */
#include <stdlib.h>

#include "fuzz/harness.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t n);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t n)
{
    if (fuzz_run(FUZZ_TARGET, data, n) != 0)
        abort();
    return 0;
}
