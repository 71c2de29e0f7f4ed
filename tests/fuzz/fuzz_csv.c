/* fuzz_csv: the CSV reader (engine_csv*: inference, splitting, range reads)
 * on arbitrary bytes, as uploads and scans use it; see fuzz_reader.h. */
#include "fuzz_reader.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    const struct fuzz_reader r = {.csv = true, .file = "input.csv"};
    fuzz_reader_run(&r, data, size);
    return 0;
}
