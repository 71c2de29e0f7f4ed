/* common_text: the edit distance behind every "did you mean" of framed
 * (config fields, expression names, misspelt FRAMED_* variables): one
 * Levenshtein, case-insensitive, bounded in length and stack; and the UTF-8
 * repairs of messages cut at a byte bound. */
#include "common.h"

#include <ctype.h>
#include <stdio.h>
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

/* Length of the valid UTF-8 sequence at s (1-4), or 0 if it is invalid. */
static size_t utf8_seq(const unsigned char *s)
{
    unsigned c = s[0], lo = 0x80, hi = 0xBF;
    size_t len;
    if (c < 0x80)
        return 1;
    if (c >= 0xC2 && c <= 0xDF) {
        len = 2;
    } else if (c >= 0xE0 && c <= 0xEF) {
        len = 3;
        lo = c == 0xE0 ? 0xA0 : 0x80;
        hi = c == 0xED ? 0x9F : 0xBF;
    } else if (c >= 0xF0 && c <= 0xF4) {
        len = 4;
        lo = c == 0xF0 ? 0x90 : 0x80;
        hi = c == 0xF4 ? 0x8F : 0xBF;
    } else {
        return 0;
    }
    if (s[1] < lo || s[1] > hi) /* the NUL ends it too */
        return 0;
    for (size_t i = 2; i < len; i++)
        if (s[i] < 0x80 || s[i] > 0xBF)
            return 0;
    return len;
}

void fr_utf8_cut_tail(char *s)
{
    size_t n = strlen(s), k = n;
    while (k > 0 && n - k < 4 && ((unsigned char)s[k - 1] & 0xC0) == 0x80)
        k--;
    if (k > 0 && (unsigned char)s[k - 1] >= 0xC0 && utf8_seq((unsigned char *)s + k - 1) == 0)
        s[k - 1] = '\0';
}

char *fr_utf8_repaired(const char *s)
{
    struct fr_buf b;
    fr_buf_init(&b);
    const unsigned char *u = (const unsigned char *)s;
    for (size_t i = 0; u[i];) {
        size_t len = utf8_seq(u + i);
        fr_buf_append(&b, len ? s + i : "\xEF\xBF\xBD", len ? len : 3);
        i += len ? len : 1;
    }
    return b.data ? b.data : fr_xstrdup("");
}

bool fr_malloc_tunables(const char *current, bool worker, char *out, size_t outsz)
{
    if (current && strstr(current, "glibc.malloc."))
        return false;
    bool some = current && *current;
    const char *extra = worker ? FR_MALLOC_TUNABLES_WORKER : "";
    size_t need = (some ? strlen(current) + 1 : 0) + sizeof(FR_MALLOC_TUNABLES) + strlen(extra);
    if (need > outsz)
        return false;
    snprintf(out, outsz, "%s%s%s%s", some ? current : "", some ? ":" : "", FR_MALLOC_TUNABLES,
             extra);
    return true;
}
