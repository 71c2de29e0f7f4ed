/* common_text: the edit distance behind every "did you mean" of framed
 * (config fields, expression names, misspelt FRAMED_* variables): one
 * Levenshtein, case-insensitive, bounded in length and stack. */
#include "common.h"

#include <ctype.h>
#include <string.h>

int fr_edit_distance(const char *a, const char *b)
{
    enum { MAXLEN = 127 };
    size_t la = strlen(a), lb = strlen(b);
    if (la > MAXLEN || lb > MAXLEN)
        return -1;
    int row[MAXLEN + 1];
    for (size_t j = 0; j <= lb; j++)
        row[j] = (int)j;
    for (size_t i = 1; i <= la; i++) {
        int diag = row[0];
        row[0] = (int)i;
        for (size_t j = 1; j <= lb; j++) {
            int up = row[j];
            int best =
                diag + (tolower((unsigned char)a[i - 1]) != tolower((unsigned char)b[j - 1]));
            if (up + 1 < best)
                best = up + 1;
            if (row[j - 1] + 1 < best)
                best = row[j - 1] + 1;
            row[j] = best;
            diag = up;
        }
    }
    return row[lb];
}
