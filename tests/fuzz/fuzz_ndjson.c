/* fuzz_ndjson: the NDJSON reader (engine_ndjson.c: inference, splitting,
 * range reads) on arbitrary bytes, as uploads and scans use it; see
 * fuzz_reader.h. */
#include "fuzz_reader.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    const struct fuzz_reader r = {.csv = false, .file = "input.ndjson"};
    fuzz_reader_run(&r, data, size);
    return 0;
}
