/* fuzz_json_text: fr_json_dumps (src/common/common_json.c), which re-lexes
 * jansson's text to print reals shortest, on any JSON a client may send
 * (strings holding quotes, escapes and digits, numbers of every shape).
 * Findings: a crash (ASan/UBSan), text that does not parse back, or parses
 * back to a different value (reals compared exactly: the shortest form
 * round-trips), or an answer where jansson has none (or the reverse). */
#include "fuzz_util.h"

#include "common/common.h"

#include <jansson.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    json_t *v = json_loadb((const char *)data, size, JSON_DECODE_ANY | JSON_ALLOW_NUL, NULL);
    if (!v)
        return 0;
    static const size_t flags[] = {JSON_COMPACT | JSON_ENCODE_ANY,
                                   JSON_INDENT(2) | JSON_SORT_KEYS | JSON_ENCODE_ANY,
                                   JSON_ENCODE_ANY | JSON_REAL_PRECISION(6)};
    for (int i = 0; i < 3; i++) {
        char *ours = fr_json_dumps(v, flags[i]);
        char *theirs = json_dumps(v, flags[i]);
        FUZZ_CHECK((ours == NULL) == (theirs == NULL));
        if (ours) {
            json_t *back = json_loads(ours, JSON_DECODE_ANY | JSON_ALLOW_NUL, NULL);
            FUZZ_CHECK(back != NULL);
            if (i < 2) /* precision 6 rounds the reals on purpose */
                FUZZ_CHECK(json_equal(v, back));
            json_decref(back);
        }
        free(ours);
        free(theirs);
    }
    json_decref(v);
    return 0;
}
