/* fuzz_range: the Range header parser (common_range.c) that the internal
 * dataset endpoint runs on every worker request. The first 8 bytes pick the
 * file size (small sizes are common: mod 2^20 half the time); the rest is
 * the header value. Invariants: an accepted range is non-empty and lies
 * inside the file; a value the parser refused leaves start and end alone. */
#include "common/common.h"
#include "fuzz_util.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (size < 8)
        return 0;
    uint64_t raw = 0;
    memcpy(&raw, data, 8);
    int64_t fsize = (int64_t)(raw >> 1);
    if (raw & 1)
        fsize %= 1 << 20;
    char *value = malloc(size - 8 + 1);
    memcpy(value, data + 8, size - 8);
    value[size - 8] = '\0';
    int64_t start = -3, end = -3;
    enum fr_range_kind k = fr_range_parse(value, fsize, &start, &end);
    FUZZ_CHECK(k >= FR_RANGE_NONE && k <= FR_RANGE_MULTIPLE);
    if (k == FR_RANGE_ONE) {
        FUZZ_CHECK(0 <= start && start < end && end <= fsize);
    } else {
        FUZZ_CHECK(start == -3 && end == -3);
    }
    free(value);
    return 0;
}
