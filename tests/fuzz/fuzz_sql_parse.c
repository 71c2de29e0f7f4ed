/* fuzz_sql_parse: the SQL lexer and parser (src/sql/sql_lex.c, sql_parse*.c)
 * over arbitrary bytes, NULs included: a statement parses into a tree that
 * dumps and frees, or fails with an invalid-sql / unsupported-sql error whose
 * position lies in the text and whose caret excerpt can be made. */
#include "sql/sql_ast.h"
#include "fuzz_util.h"

#include <string.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    char *text = malloc(size + 1);
    FUZZ_CHECK(text != NULL);
    memcpy(text, data, size);
    text[size] = '\0';
    struct sql_stmt *s = NULL;
    struct fr_error err;
    fr_error_init(&err);
    int rc = sql_parse_n(text, size, &s, &err);
    if (rc == FR_OK) {
        FUZZ_CHECK(s != NULL);
        char *dump = sql_ast_dump(s);
        FUZZ_CHECK(dump != NULL && dump[0] != '\0');
        free(dump);
        sql_stmt_free(s);
    } else {
        FUZZ_CHECK(s == NULL);
        FUZZ_CHECK(rc == FR_EINVAL || rc == FR_EVALIDATION);
        FUZZ_CHECK(strcmp(err.kind, "invalid-sql") == 0 ||
                   strcmp(err.kind, "unsupported-sql") == 0);
        FUZZ_CHECK(err.message[0] != '\0');
        if (err.position >= 0) {
            FUZZ_CHECK(err.position <= (int64_t)size);
            FUZZ_CHECK(err.line >= 1 && err.column >= 1);
            if (!memchr(text, '\0', size)) {
                char *ex = sql_error_excerpt(text, err.position);
                FUZZ_CHECK(ex != NULL && strchr(ex, '^') != NULL);
                free(ex);
            }
        }
    }
    free(text);
    return 0;
}
