/* Tests of the SQL lexer and parser (src/sql/sql_lex.c, sql_parse*.c,
 * sql_ast*.c, sql_error.c): statements and the shape of their trees (as
 * sql_ast_dump's S-expressions), precedence, every error form with its line,
 * column and message, the bounds, and the caret excerpt. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "sql/sql_ast.h"

struct good {
    const char *sql;
    const char *tree;
};

static const struct good goods[] = {
    {"SELECT a, b AS x, c y FROM t WHERE a > 1 GROUP BY a, 2 HAVING count(*) > 1 ORDER BY 1 DESC "
     "NULLS LAST, b LIMIT 10 OFFSET 5",
     "(query (select (items a (as b x) (as c y)) (from t) (where (> a 1)) (group a 2) (having (> "
     "(count *) 1))) (order (1 desc nulls-last) b) (limit 10) (offset 5))"},
    {"select * from t", "(select (items *) (from t))"},
    {"select distinct a from t", "(select distinct (items a) (from t))"},
    {"select all a from t", "(select (items a) (from t))"},
    {"select t.*, \"T\".\"A\", \"we\"\"ird\" from t",
     "(select (items t.* \"T\".\"A\" \"we\"ird\") (from t))"},
    {"select 1 + 2 * 3 - 4 / 5 % 6", "(select (items (- (+ 1 (* 2 3)) (% (/ 4 5) 6))))"},
    {"select -a::int, +b", "(select (items (- (cast a int)) (+ b)))"},
    {"select a || b || c", "(select (items (|| (|| a b) c)))"},
    {"select a || b + c", "(select (items (|| a (+ b c))))"},
    {"select not a = b and c or d", "(select (items (or (and (not (= a b)) c) d)))"},
    {"select a or b and not c", "(select (items (or a (and b (not c)))))"},
    {"select a = b is null", "(select (items (is-null (= a b))))"},
    {"select a is not true, b is false, c is not null",
     "(select (items (is-not-true a) (is-false b) (is-not-null c)))"},
    {"select a between 1 and 2 and b", "(select (items (and (between a 1 2) b)))"},
    {"select a not between 1 + 1 and 3", "(select (items (not-between a (+ 1 1) 3)))"},
    {"select a in (1, 2, 3), b not in (select c from u)",
     "(select (items (in a 1 2 3) (not-in b (select (items c) (from u)))))"},
    {"select exists (select 1), not exists (select 2)",
     "(select (items (exists (select (items 1))) (not-exists (select (items 2)))))"},
    {"select a like 'x%', b not ilike 'y'", "(select (items (like a 'x%') (not-ilike b 'y')))"},
    {"select (select max(x) from u) as m",
     "(select (items (as (subquery (select (items (max x)) (from u))) m)))"},
    {"select count(*), count(distinct y), sum(x) filter (where x > 0) from t",
     "(select (items (count *) (count distinct y) (sum x (filter (> x 0)))) (from t))"},
    {"select row_number() over (partition by a, b order by c desc nulls first) from t",
     "(select (items (row_number (over (partition a b) (order (c desc nulls-first))))) (from t))"},
    {"select sum(x) over (order by y rows between unbounded preceding and current row) from t",
     "(select (items (sum x (over (order y) (frame \"rows between unbounded preceding and current "
     "row\")))) (from t))"},
    {"select rank() over w from t window w as (partition by a)",
     "(select (items (rank (over w))) (from t) (window w (over (partition a))))"},
    {"select a from t qualify row_number() over (order by a) = 1",
     "(select (items a) (from t) (qualify (= (row_number (over (order a))) 1)))"},
    {"select case when a then 1 when b then 2 else 3 end, case a when 1 then 'x' end",
     "(select (items (case (when a 1) (when b 2) (else 3)) (case a (when 1 'x'))))"},
    {"select cast(a as bigint), try_cast(b as double precision), c::decimal(15,2), d::varchar(25)",
     "(select (items (cast a bigint) (try-cast b double precision) (cast c decimal) (cast d "
     "varchar)))"},
    {"select extract(year from d), date '2020-01-01', timestamp '2020-01-01 10:00:00'",
     "(select (items (extract 'year' d) (date '2020-01-01') (timestamp '2020-01-01 10:00:00')))"},
    {"select interval '3 days', interval '3' month, interval 4 hour",
     "(select (items (interval '3' day) (interval '3' month) (interval '4' hour)))"},
    {"select true, false, null, 'it''s', 1.5, 1e3, 99999999999999999999",
     "(select (items true false null 'it's' 1.5 1e3 99999999999999999999))"},
    {"select a from t1 join t2 on t1.k = t2.k",
     "(select (items a) (from (join inner t1 t2 (on (= t1.k t2.k)))))"},
    {"select a from t1 inner join t2 using (k, j)",
     "(select (items a) (from (join inner t1 t2 (using (k j)))))"},
    {"select a from t1 left join t2 on x left outer join t3 on y",
     "(select (items a) (from (join left (join left t1 t2 (on x)) t3 (on y))))"},
    {"select a from t1 right join t2 on x full outer join t3 on y",
     "(select (items a) (from (join full (join right t1 t2 (on x)) t3 (on y))))"},
    {"select a from t1 cross join t2, t3",
     "(select (items a) (from (join comma (join cross t1 t2) t3)))"},
    {"select a from t1 natural join t2", "(select (items a) (from (join natural-inner t1 t2)))"},
    {"select a from (t1 join t2 on x) join t3 on y",
     "(select (items a) (from (join inner (join inner t1 t2 (on x)) t3 (on y))))"},
    {"select a from (select 1 as a) s, (values (1)) as v (b)",
     "(select (items a) (from (join comma (sub (select (items (as 1 a))) as s) (sub (values (row "
     "1)) as v (b)))))"},
    {"select a from t as u (x, y)", "(select (items a) (from (t as u (x y))))"},
    {"with x as (select 1), y (a, b) as (select 1, 2) select * from x, y",
     "(query (with x (select (items 1))) (with y (a b) (select (items 1 2))) (select (items *) "
     "(from (join comma x y))))"},
    {"select 1 union select 2 union all select 3",
     "(union all (union (select (items 1)) (select (items 2))) (select (items 3)))"},
    {"select 1 union select 2 intersect select 3",
     "(union (select (items 1)) (intersect (select (items 2)) (select (items 3))))"},
    {"select 1 except all select 2 except select 3",
     "(except (except all (select (items 1)) (select (items 2))) (select (items 3)))"},
    {"(select 1 order by 1 limit 1) union distinct (select 2)",
     "(union (paren (query (select (items 1)) (order 1) (limit 1))) (paren (select (items 2))))"},
    {"select 1 union select 2 order by 1 limit 1",
     "(query (union (select (items 1)) (select (items 2))) (order 1) (limit 1))"},
    {"values (1, 'a'), (2, 'b')", "(values (row 1 'a') (row 2 'b'))"},
    {"select a from t limit all offset 3 rows", "(query (select (items a) (from t)) (offset 3))"},
    {"select a from t group by all", "(select (items a) (from t) (group all))"},
    {"select distinct on (a) a, b from t", "(select distinct (on a) (items a b) (from t))"},
    {"select left(s, 2), right(s, 1), date, timestamp from t",
     "(select (items (left s 2) (right s 1) date timestamp) (from t))"},
    {"select a from t where a in (select b from u where u.c = t.c)",
     "(select (items a) (from t) (where (in a (select (items b) (from u) (where (= u.c t.c))))))"},
    {"select substring(s from 2 for 3), substring(s from 2) from t",
     "(select (items (substring s 2 3) (substring s 2)) (from t))"},
    {"select a from t1 semi, t2 anti",
     "(select (items a) (from (join comma (t1 as semi) (t2 as anti))))"},
    /* the lexer: nested comments, line comments, number forms, two-character operators */
    {"select /* a /* b */ c */ 1 -- x\n, 2", "(select (items 1 2))"},
    {"select 1., .5e-3, 1e+5, 1e, 007", "(select (items 1. .5e-3 1e+5 (as 1 e) 7))"},
    {"SELECT a FROM T WHERE x <> 1 AND y != 2 AND z <= 3 AND w >= 4",
     "(select (items a) (from T) (where (and (and (and (<> x 1) (<> y 2)) (<= z 3)) (>= w 4))))"},
    {"select a from t order by a asc, b desc, c nulls first",
     "(query (select (items a) (from t)) (order a (b desc) (c nulls-first)))"},
    {"explain select 1", "(explain (select (items 1)))"},
    {"set morsel_size_rows = 100", "(set morsel_size_rows 100)"},
    {"set shuffle_partitions to 8;", "(set shuffle_partitions 8)"},
    {"set x = -1.5", "(set x (- 1.5))"},
    {"set x = 'a b'", "(set x 'a b')"},
    {"set x = on", "(set x 'on')"},
    {"set x = true", "(set x true)"},
    {"set x = null", "(set x null)"},
    {"reset all", "(reset all)"},
    {"reset morsel_size_rows", "(reset morsel_size_rows)"},
    {"show config", "(show all)"},
    {"show all", "(show all)"},
    {"show morsel_size_rows", "(show morsel_size_rows)"},
};

static void test_statements_parse(void **state)
{
    (void)state;
    for (size_t k = 0; k < sizeof goods / sizeof goods[0]; k++) {
        struct sql_stmt *s = NULL;
        struct fr_error err;
        fr_error_init(&err);
        int rc = sql_parse(goods[k].sql, &s, &err);
        if (rc != FR_OK)
            fail_msg("%s: %s", goods[k].sql, err.message);
        char *d = sql_ast_dump(s);
        if (strcmp(d, goods[k].tree) != 0)
            fail_msg("%s\n got  %s\n want %s", goods[k].sql, d, goods[k].tree);
        free(d);
        sql_stmt_free(s);
    }
}

/* Parses text that must fail; returns the error. */
static struct fr_error parse_fails(const char *text, size_t len)
{
    struct sql_stmt *s = (struct sql_stmt *)1;
    struct fr_error err;
    fr_error_init(&err);
    int rc = sql_parse_n(text, len, &s, &err);
    if (rc == FR_OK)
        fail_msg("parsed but must fail: %.200s", text);
    assert_null(s);
    assert_int_equal(rc, err.status);
    return err;
}

struct bad {
    const char *sql;
    int status;
    int line, column;
    const char *message; /* the whole message */
};

static const struct bad bads[] = {
    {"SELECT a\nFROM t WHER x = 1", FR_EINVAL, 2, 8,
     "syntax error at line 2, column 8: expected WHERE, GROUP BY, ORDER BY, LIMIT, JOIN or ',' "
     "but found 'WHER'; did you mean WHERE?"},
    {"SELECT a b c", FR_EINVAL, 1, 12,
     "syntax error at line 1, column 12: expected FROM, WHERE, GROUP BY, ORDER BY, LIMIT or ',' "
     "but found 'c'"},
    {"SELECT a FROM", FR_EINVAL, 1, 14,
     "syntax error at line 1, column 14: expected a table name or '(' but found the end of the "
     "statement"},
    {"SELECT (a + 1", FR_EINVAL, 1, 14,
     "syntax error at line 1, column 14: expected ')' to close the '(' at line 1, column 8 but "
     "found the end of the statement"},
    {"SELECT f(a,\n  b FROM t", FR_EINVAL, 2, 5,
     "syntax error at line 2, column 5: expected ')' to close the '(' at line 1, column 9 but "
     "found 'FROM'"},
    {"SELECT a FROM (SELECT b FROM c WHER x) t", FR_EINVAL, 1, 32,
     "syntax error at line 1, column 32: expected ')' to close the '(' at line 1, column 15 but "
     "found 'WHER'; did you mean WHERE?"},
    {"SELECT a FROM t WHERE a = 1 GROPU BY a", FR_EINVAL, 1, 29,
     "syntax error at line 1, column 29: expected GROUP BY, ORDER BY, LIMIT or an operator but "
     "found 'GROPU'; did you mean GROUP?"},
    {"selct 1", FR_EINVAL, 1, 1,
     "syntax error at line 1, column 1: expected a statement (SELECT, WITH, VALUES, EXPLAIN, SET, "
     "RESET or SHOW) but found 'selct'; did you mean SELECT?"},
    {"SELECT a FROM t; SELECT 1", FR_EINVAL, 1, 18,
     "syntax error at line 1, column 18: one statement per request: found a second statement "
     "after ';'"},
    {"SELECT a FROM t GROUP x", FR_EINVAL, 1, 23,
     "syntax error at line 1, column 23: expected BY after GROUP but found 'x'"},
    {"SELECT a,, b FROM t", FR_EINVAL, 1, 10,
     "syntax error at line 1, column 10: expected an expression but found ','"},
    {"select x from a join b", FR_EINVAL, 1, 23,
     "syntax error at line 1, column 23: expected ON or USING after the joined table but found "
     "the end of the statement"},
    {"SELECT a FROM t ORDER BY a NULLS x", FR_EINVAL, 1, 34,
     "syntax error at line 1, column 34: expected FIRST or LAST after NULLS but found 'x'"},
    {"SELECT a FROM t ORDER BY a LIMIT 1 2", FR_EINVAL, 1, 36,
     "syntax error at line 1, column 36: expected OFFSET or the end of the statement but found "
     "'2'"},
    {"SELECT case when a then 1", FR_EINVAL, 1, 26,
     "syntax error at line 1, column 26: expected WHEN, ELSE or END in CASE but found the end of "
     "the statement"},
    {"SELECT cast(a bigint)", FR_EINVAL, 1, 15,
     "syntax error at line 1, column 15: expected AS and a type in CAST but found 'bigint'"},
    {"SELECT a IS 3", FR_EINVAL, 1, 13,
     "syntax error at line 1, column 13: expected NULL, TRUE, FALSE or NOT after IS but found '3'"},
    {"SELECT a BETWEEN 1 OR 2", FR_EINVAL, 1, 20,
     "syntax error at line 1, column 20: expected AND in BETWEEN but found 'OR'"},
    {"SELECT interval '3'", FR_EINVAL, 1, 20,
     "syntax error at line 1, column 20: expected a unit (YEAR, MONTH, DAY, HOUR, MINUTE or "
     "SECOND) but found the end of the statement"},
    {"VALUES (1, 2), (3)", FR_EINVAL, 1, 16,
     "syntax error at line 1, column 16: a VALUES row has 1 values, the first row has 2"},
    {"SET a b", FR_EINVAL, 1, 7,
     "syntax error at line 1, column 7: expected '=' or TO but found 'b'"},
    {"SET x = -y", FR_EINVAL, 1, 10,
     "syntax error at line 1, column 10: expected a number after '-' but found 'y'"},
    {"SHOW", FR_EINVAL, 1, 5,
     "syntax error at line 1, column 5: expected a config field after SHOW but found the end of "
     "the statement"},
    {"", FR_EINVAL, 1, 1, "syntax error at line 1, column 1: the statement is empty"},
    {"  -- only a comment\n", FR_EINVAL, 2, 1,
     "syntax error at line 2, column 1: the statement is empty"},
    {"select 'abc", FR_EINVAL, 1, 8,
     "syntax error at line 1, column 8: unterminated string: the quote ' is not closed"},
    {"select \"abc", FR_EINVAL, 1, 8,
     "syntax error at line 1, column 8: unterminated identifier: the quote \" is not closed"},
    {"select 1 /* x /* y */", FR_EINVAL, 1, 10,
     "syntax error at line 1, column 10: unterminated comment: '/*' has no '*/'"},
    {"select \"\"", FR_EINVAL, 1, 8,
     "syntax error at line 1, column 8: a quoted identifier may not be empty (\"\")"},
    {"select 1 @ 2", FR_EINVAL, 1, 10,
     "syntax error at line 1, column 10: unexpected character '@'"},
    /* columns count UTF-8 characters: é is one */
    {"select '\xc3\xa9', \xc3\xa9 from t where )", FR_EINVAL, 1, 28,
     "syntax error at line 1, column 28: expected an expression but found ')'"},
    {"EXPLAIN ANALYZE SELECT 1", FR_EVALIDATION, 1, 9,
     "EXPLAIN ANALYZE is not supported at line 1, column 9"},
    {"SELECT a FROM t FETCH FIRST 1 ROWS ONLY", FR_EVALIDATION, 1, 17,
     "FETCH FIRST is not supported: use LIMIT at line 1, column 17"},
    {"SELECT a FROM s.t", FR_EVALIDATION, 1, 16,
     "'.' after a table name is not supported (no schemas or table functions) at line 1, column "
     "16"},
    {"select a is not distinct from b", FR_EVALIDATION, 1, 17,
     "IS NOT DISTINCT FROM is not supported at line 1, column 17"},
    {"select a like 'x' escape '!'", FR_EVALIDATION, 1, 19,
     "LIKE ... ESCAPE is not supported at line 1, column 19"},
    {"select a = any (select 1)", FR_EVALIDATION, 1, 12,
     "a comparison with ANY (...) is not supported: use IN or EXISTS at line 1, column 12"},
    {"select * exclude (a) from t", FR_EVALIDATION, 1, 10,
     "SELECT * EXCLUDE is not supported at line 1, column 10"},
    {"select * as x from t", FR_EINVAL, 1, 10,
     "syntax error at line 1, column 10: expected FROM, WHERE, GROUP BY, ORDER BY, LIMIT or ',' "
     "but found 'as'"},
    /* t1 SEMI JOIN t2 is never read as t1 AS semi JOIN t2 */
    {"select * from t1 semi join t2 using (a)", FR_EVALIDATION, 1, 18,
     "SEMI JOIN is not supported: use WHERE ... IN (subquery) or EXISTS at line 1, column 18"},
    {"select * from t1 left anti join t2 using (a)", FR_EVALIDATION, 1, 23,
     "ANTI JOIN is not supported: use WHERE ... IN (subquery) or EXISTS at line 1, column 23"},
    {"select * from t1, lateral (select 1)", FR_EVALIDATION, 1, 19,
     "LATERAL is not supported at line 1, column 19"},
    {"WITH a AS (SELECT 1 FROM t WHERE) SELECT 1", FR_EINVAL, 1, 33,
     "syntax error at line 1, column 33: expected an expression but found ')'"},
    {"SELECT a 'b'", FR_EINVAL, 1, 10,
     "syntax error at line 1, column 10: expected FROM, WHERE, GROUP BY, ORDER BY, LIMIT or ',' "
     "but found the string 'b'"},
    {"SELECT a FROM t \"u\" \"v\"", FR_EINVAL, 1, 21,
     "syntax error at line 1, column 21: expected WHERE, GROUP BY, ORDER BY, LIMIT, JOIN or ',' "
     "but found \"v\""},
    {"SELECT a FROM t ORDER BY a DSC", FR_EINVAL, 1, 28,
     "syntax error at line 1, column 28: expected ASC, DESC, NULLS, LIMIT, OFFSET or ',' but "
     "found 'DSC'; did you mean DESC?"},
    {"SELECT a FROM t lmit 5", FR_EINVAL, 1, 17,
     "syntax error at line 1, column 17: expected WHERE, GROUP BY, ORDER BY, LIMIT, JOIN or ',' "
     "but found 'lmit'; did you mean LIMIT?"},
    {"WITH RECURSIVE r AS (SELECT 1) SELECT * FROM r", FR_EVALIDATION, 1, 6,
     "WITH RECURSIVE is not supported at line 1, column 6"},
    {"SELECT string_agg(a, ',' ORDER BY b) FROM t", FR_EVALIDATION, 1, 26,
     "ORDER BY inside a function call is not supported at line 1, column 26"},
};

static void test_errors(void **state)
{
    (void)state;
    for (size_t k = 0; k < sizeof bads / sizeof bads[0]; k++) {
        struct fr_error err = parse_fails(bads[k].sql, strlen(bads[k].sql));
        const char *want_kind = bads[k].status == FR_EINVAL ? "invalid-sql" : "unsupported-sql";
        if (err.status != bads[k].status || strcmp(err.kind, want_kind) != 0 ||
            err.line != bads[k].line || err.column != bads[k].column ||
            strcmp(err.message, bads[k].message) != 0)
            fail_msg("%s\n got  %d %s %lld:%lld %s\n want %d %s %d:%d %s", bads[k].sql, err.status,
                     err.kind, (long long)err.line, (long long)err.column, err.message,
                     bads[k].status, want_kind, bads[k].line, bads[k].column, bads[k].message);
    }
}

/* The position is the byte offset of the offending token. */
static void test_error_position(void **state)
{
    (void)state;
    const char *text = "SELECT a\nFROM t WHER x = 1";
    struct fr_error err = parse_fails(text, strlen(text));
    assert_int_equal(err.position, 16);
    char *ex = sql_error_excerpt(text, err.position);
    assert_string_equal(ex, "FROM t WHER x = 1\n       ^");
    free(ex);
    ex = sql_error_excerpt("a\tb", 2); /* tabs are kept so the caret lines up */
    assert_string_equal(ex, "a\tb\n \t^");
    free(ex);
    ex = sql_error_excerpt("x = '\xc3\xa9' )", 9);
    assert_string_equal(ex, "x = '\xc3\xa9' )\n        ^");
    free(ex);
    assert_null(sql_error_excerpt("abc", 4));
    assert_null(sql_error_excerpt("abc", -1));
    ex = sql_error_excerpt("abc", 3); /* the end of the text */
    assert_string_equal(ex, "abc\n   ^");
    free(ex);
}

static void test_excerpt_long_line(void **state)
{
    (void)state;
    char text[1001];
    memset(text, 'x', 1000);
    text[1000] = '\0';
    char *ex = sql_error_excerpt(text, 900);
    const char *nl = strchr(ex, '\n');
    assert_non_null(nl);
    assert_true(nl - ex <= 160);
    const char *caret = strchr(nl, '^');
    assert_int_equal(caret - nl - 1, 120); /* 120 columns of context before the caret */
    free(ex);
}

static char *repeat(const char *head, const char *unit, int n, const char *mid, const char *tail)
{
    size_t len = strlen(head) + strlen(unit) * (size_t)n + strlen(mid) + strlen(tail) * (size_t)n;
    char *s = malloc(len + 1), *p = s;
    p += sprintf(p, "%s", head);
    for (int k = 0; k < n; k++)
        p += sprintf(p, "%s", unit);
    p += sprintf(p, "%s", mid);
    for (int k = 0; k < n; k++)
        p += sprintf(p, "%s", tail);
    return s;
}

static void assert_nesting_bound(const char *head, const char *unit, const char *mid,
                                 const char *tail, int ok_n)
{
    char *s = repeat(head, unit, ok_n, mid, tail);
    struct sql_stmt *st = NULL;
    struct fr_error err;
    fr_error_init(&err);
    if (sql_parse(s, &st, &err) != FR_OK)
        fail_msg("%d levels must parse: %s", ok_n, err.message);
    sql_stmt_free(st);
    free(s);
    s = repeat(head, unit, 5000, mid, tail);
    err = parse_fails(s, strlen(s));
    assert_string_equal(err.kind, "invalid-sql");
    assert_non_null(strstr(err.message, "nests deeper than 64 levels (SQL_MAX_NESTING"));
    free(s);
}

static void test_nesting_bounds(void **state)
{
    (void)state;
    assert_nesting_bound("select ", "(", "1", ")", 60);
    assert_nesting_bound("select ", "- ", "1", "", 60); /* "--" would be a comment */
    assert_nesting_bound("select ", "not ", "true", "", 60);
    assert_nesting_bound("select ", "f(", "1", ")", 60);
    assert_nesting_bound("select ", "case when true then ", "1", " end", 30);
    assert_nesting_bound("select ", "(select ", "1", ")", 30);
    assert_nesting_bound("select * from ", "(select * from ", "t", ")", 30);
    assert_nesting_bound("select * from ", "(", "t", ")", 60);
    assert_nesting_bound("select 1 where ", "exists (select ", "1", ")", 30);
    assert_nesting_bound("select ", "1 = ", "1", "", 60);
    assert_nesting_bound("select ", "1 / ", "1", "", 60); /* not associative: left-deep */
    assert_nesting_bound("select 1", " except select 1", "", "", 60);
    /* long flat chains of associative operators: test_sql_parse_chains.c */
    assert_nesting_bound("select ", "a::int", "", "::int", 20);
}

static void test_size_bounds(void **state)
{
    (void)state;
    /* over SQL_MAX_TEXT_BYTES */
    size_t n = SQL_MAX_TEXT_BYTES + 1;
    char *s = malloc(n + 1);
    memset(s, ' ', n);
    memcpy(s, "select 1", 8);
    s[n] = '\0';
    struct fr_error err = parse_fails(s, n);
    assert_string_equal(err.kind, "invalid-sql");
    assert_non_null(strstr(err.message, "over the bound of 262144 bytes (SQL_MAX_TEXT_BYTES)"));
    free(s);
    /* exactly at it: parses */
    s = malloc(SQL_MAX_TEXT_BYTES + 1);
    memset(s, ' ', SQL_MAX_TEXT_BYTES);
    memcpy(s, "select 1", 8);
    s[SQL_MAX_TEXT_BYTES] = '\0';
    struct sql_stmt *st = NULL;
    fr_error_init(&err);
    assert_int_equal(sql_parse(s, &st, &err), FR_OK);
    sql_stmt_free(st);
    free(s);
    /* more than SQL_MAX_TOKENS tokens: "select 1,1,...," */
    s = repeat("select 1", ",1", SQL_MAX_TOKENS / 2, "", ""); /* 65538 tokens */
    err = parse_fails(s, strlen(s));
    assert_non_null(strstr(err.message, "more tokens than the bound of 65536 (SQL_MAX_TOKENS)"));
    free(s);
    s = repeat("select 1", ",1", SQL_MAX_TOKENS / 2 - 1, "", ""); /* exactly 65536 tokens */
    fr_error_init(&err);
    assert_int_equal(sql_parse(s, &st, &err), FR_OK);
    assert_int_equal(st->query->select->nitems, SQL_MAX_TOKENS / 2);
    sql_stmt_free(st);
    free(s);
}

static void test_nul_byte(void **state)
{
    (void)state;
    const char text[] = "select 1\0 from t";
    struct fr_error err = parse_fails(text, sizeof text - 1);
    assert_string_equal(err.kind, "invalid-sql");
    assert_int_equal(err.position, 8);
    assert_int_equal(err.column, 9);
    assert_non_null(strstr(err.message, "NUL byte"));
}

/* Values the tree keeps: numbers, names as written, positions. */
static void test_tree_values(void **state)
{
    (void)state;
    struct sql_stmt *s = NULL;
    struct fr_error err;
    fr_error_init(&err);
    const char *text = "SELECT MyCol, \"Q\"\"x\", 9223372036854775807, 9223372036854775808, "
                       "2.5e-1, Upper(s) FROM MyTable AS \"T\" WHERE a = -3";
    assert_int_equal(sql_parse(text, &s, &err), FR_OK);
    assert_int_equal(s->kind, SQL_AST_QUERY);
    struct sql_select *sel = s->query->select;
    assert_int_equal(sel->nitems, 6);
    struct sql_expr *e = sel->items[0].expr;
    assert_int_equal(e->kind, SQL_E_COLUMN);
    assert_string_equal(e->name.text, "MyCol"); /* as written: compared case-insensitively */
    assert_false(e->name.quoted);
    assert_int_equal(e->pos, 7);
    assert_int_equal(e->end, 12);
    e = sel->items[1].expr;
    assert_string_equal(e->name.text, "Q\"x");
    assert_true(e->name.quoted);
    e = sel->items[2].expr;
    assert_int_equal(e->kind, SQL_E_INT);
    assert_true(e->ival == INT64_MAX);
    e = sel->items[3].expr; /* over int64: a float, as the expression language does */
    assert_int_equal(e->kind, SQL_E_FLOAT);
    assert_true(e->fval == 9223372036854775808.0);
    assert_string_equal(e->text, "9223372036854775808");
    e = sel->items[4].expr;
    assert_int_equal(e->kind, SQL_E_FLOAT);
    assert_true(e->fval == 0.25);
    e = sel->items[5].expr;
    assert_int_equal(e->kind, SQL_E_FUNC);
    assert_string_equal(e->name.text, "upper"); /* function names are lower-cased */
    assert_int_equal(e->pos, (int64_t)(strstr(text, "Upper") - text));
    assert_int_equal(e->end, (int64_t)(strstr(text, "(s)") + 3 - text));
    assert_string_equal(sel->from->table.text, "MyTable");
    assert_string_equal(sel->from->alias.text, "T");
    assert_true(sel->from->alias.quoted);
    assert_int_equal(sel->where->kind, SQL_E_BINARY);
    assert_int_equal(sel->where->op, SQL_OP_EQ);
    assert_int_equal(sel->where->end, (int64_t)strlen(text));
    sql_stmt_free(s);
}

static void test_window_frame_and_extract(void **state)
{
    (void)state;
    struct sql_stmt *s = NULL;
    struct fr_error err;
    fr_error_init(&err);
    const char *text = "select sum(x) over (order by y ROWS BETWEEN 1 PRECEDING AND CURRENT ROW), "
                       "EXTRACT(Year FROM d) from t";
    assert_int_equal(sql_parse(text, &s, &err), FR_OK);
    struct sql_window *w = s->query->select->items[0].expr->window;
    assert_true(w->has_frame);
    assert_int_equal(w->frame_pos, (int64_t)(strstr(text, "ROWS") - text));
    assert_string_equal(w->frame_text, "ROWS BETWEEN 1 PRECEDING AND CURRENT ROW");
    assert_int_equal(w->norder, 1);
    struct sql_expr *ex = s->query->select->items[1].expr;
    assert_int_equal(ex->kind, SQL_E_FUNC);
    assert_string_equal(ex->name.text, "extract");
    assert_int_equal(ex->nargs, 2);
    assert_int_equal(ex->args[0]->kind, SQL_E_STRING);
    assert_string_equal(ex->args[0]->text, "year");
    sql_stmt_free(s);
}

/* One of every statement kind, with its fields. */
static void test_statement_kinds(void **state)
{
    (void)state;
    static const struct {
        const char *sql;
        enum sql_stmt_ast_kind kind;
        const char *field;
    } kinds[] = {{"SELECT 1", SQL_AST_QUERY, NULL},
                 {"WITH a AS (SELECT 1) SELECT * FROM a;", SQL_AST_QUERY, NULL},
                 {"VALUES (1)", SQL_AST_QUERY, NULL},
                 {"(SELECT 1) UNION (SELECT 2)", SQL_AST_QUERY, NULL},
                 {"EXPLAIN SELECT 1", SQL_AST_EXPLAIN, NULL},
                 {"SET Morsel_Size_Rows = 10", SQL_AST_SET, "Morsel_Size_Rows"},
                 {"RESET ALL", SQL_AST_RESET, NULL},
                 {"RESET shuffle_partitions", SQL_AST_RESET, "shuffle_partitions"},
                 {"SHOW CONFIG", SQL_AST_SHOW, NULL},
                 {"SHOW ALL", SQL_AST_SHOW, NULL},
                 {"show shuffle_partitions ;", SQL_AST_SHOW, "shuffle_partitions"}};
    for (size_t k = 0; k < sizeof kinds / sizeof kinds[0]; k++) {
        struct sql_stmt *s = NULL;
        struct fr_error err;
        fr_error_init(&err);
        if (sql_parse(kinds[k].sql, &s, &err) != FR_OK)
            fail_msg("%s: %s", kinds[k].sql, err.message);
        assert_int_equal(s->kind, kinds[k].kind);
        if (kinds[k].field)
            assert_string_equal(s->field.text, kinds[k].field);
        else
            assert_null(s->field.text);
        assert_true((s->query != NULL) ==
                    (kinds[k].kind == SQL_AST_QUERY || kinds[k].kind == SQL_AST_EXPLAIN));
        assert_true((s->value != NULL) == (kinds[k].kind == SQL_AST_SET));
        sql_stmt_free(s);
    }
}

static void test_set_values(void **state)
{
    (void)state;
    static const struct {
        const char *sql;
        enum sql_ekind kind;
        const char *text;
    } vals[] = {{"SET f = 'it''s'", SQL_E_STRING, "it's"}, {"SET f TO word", SQL_E_STRING, "word"},
                {"SET f = 12", SQL_E_INT, "12"},           {"SET f = 1.5", SQL_E_FLOAT, "1.5"},
                {"SET f = FALSE", SQL_E_BOOL, NULL},       {"SET f = NULL", SQL_E_NULL, NULL},
                {"SET f = -7", SQL_E_UNARY, NULL}};
    for (size_t k = 0; k < sizeof vals / sizeof vals[0]; k++) {
        struct sql_stmt *s = NULL;
        struct fr_error err;
        fr_error_init(&err);
        assert_int_equal(sql_parse(vals[k].sql, &s, &err), FR_OK);
        assert_int_equal(s->value->kind, vals[k].kind);
        if (vals[k].text)
            assert_string_equal(s->value->text, vals[k].text);
        if (vals[k].kind == SQL_E_UNARY) {
            assert_int_equal(s->value->op, '-');
            assert_int_equal(s->value->args[0]->ival, 7);
        }
        sql_stmt_free(s);
    }
}

/* TPC-H queries 1, 3, 5, 6, 10, 12, 14 and 19 (the set) parse, and a few of their
 * parts have the expected shape. */
static const char *const tpch[] = {
    "select l_returnflag, l_linestatus, sum(l_quantity) as sum_qty, sum(l_extendedprice) as "
    "sum_base_price, sum(l_extendedprice * (1 - l_discount)) as sum_disc_price, "
    "sum(l_extendedprice * (1 - l_discount) * (1 + l_tax)) as sum_charge, avg(l_quantity) as "
    "avg_qty, avg(l_extendedprice) as avg_price, avg(l_discount) as avg_disc, count(*) as "
    "count_order from lineitem where l_shipdate <= date '1998-12-01' - interval '90' day group "
    "by l_returnflag, l_linestatus order by l_returnflag, l_linestatus",
    "select l_orderkey, sum(l_extendedprice * (1 - l_discount)) as revenue, o_orderdate, "
    "o_shippriority from customer, orders, lineitem where c_mktsegment = 'BUILDING' and "
    "c_custkey = o_custkey and l_orderkey = o_orderkey and o_orderdate < date '1995-03-15' and "
    "l_shipdate > date '1995-03-15' group by l_orderkey, o_orderdate, o_shippriority order by "
    "revenue desc, o_orderdate limit 10",
    "select n_name, sum(l_extendedprice * (1 - l_discount)) as revenue from customer, orders, "
    "lineitem, supplier, nation, region where c_custkey = o_custkey and l_orderkey = o_orderkey"
    " and l_suppkey = s_suppkey and c_nationkey = s_nationkey and s_nationkey = n_nationkey and"
    " n_regionkey = r_regionkey and r_name = 'ASIA' and o_orderdate >= date '1994-01-01' and "
    "o_orderdate < date '1994-01-01' + interval '1' year group by n_name order by revenue desc",
    "select sum(l_extendedprice * l_discount) as revenue from lineitem where l_shipdate >= date"
    " '1994-01-01' and l_shipdate < date '1994-01-01' + interval '1' year and l_discount "
    "between .06 - 0.01 and .06 + 0.01 and l_quantity < 24",
    "select c_custkey, c_name, sum(l_extendedprice * (1 - l_discount)) as revenue, c_acctbal, "
    "n_name, c_address, c_phone, c_comment from customer, orders, lineitem, nation where "
    "c_custkey = o_custkey and l_orderkey = o_orderkey and o_orderdate >= date '1993-10-01' and"
    " o_orderdate < date '1993-10-01' + interval '3' month and l_returnflag = 'R' and "
    "c_nationkey = n_nationkey group by c_custkey, c_name, c_acctbal, c_phone, n_name, "
    "c_address, c_comment order by revenue desc limit 20",
    "select l_shipmode, sum(case when o_orderpriority = '1-URGENT' or o_orderpriority = "
    "'2-HIGH' then 1 else 0 end) as high_line_count, sum(case when o_orderpriority <> "
    "'1-URGENT' and o_orderpriority <> '2-HIGH' then 1 else 0 end) as low_line_count from "
    "orders, lineitem where o_orderkey = l_orderkey and l_shipmode in ('MAIL', 'SHIP') and "
    "l_commitdate < l_receiptdate and l_shipdate < l_commitdate and l_receiptdate >= date "
    "'1994-01-01' and l_receiptdate < date '1994-01-01' + interval '1' year group by l_shipmode"
    " order by l_shipmode",
    "select 100.00 * sum(case when p_type like 'PROMO%' then l_extendedprice * (1 - l_discount)"
    " else 0 end) / sum(l_extendedprice * (1 - l_discount)) as promo_revenue from lineitem, "
    "part where l_partkey = p_partkey and l_shipdate >= date '1995-09-01' and l_shipdate < date"
    " '1995-09-01' + interval '1' month",
    "select sum(l_extendedprice* (1 - l_discount)) as revenue from lineitem, part where ( "
    "p_partkey = l_partkey and p_brand = 'Brand#12' and p_container in ('SM CASE', 'SM BOX', "
    "'SM PACK', 'SM PKG') and l_quantity >= 1 and l_quantity <= 1 + 10 and p_size between 1 and"
    " 5 and l_shipmode in ('AIR', 'AIR REG') and l_shipinstruct = 'DELIVER IN PERSON') or ( "
    "p_partkey = l_partkey and p_brand = 'Brand#23' and p_container in ('MED BAG', 'MED BOX', "
    "'MED PKG', 'MED PACK') and l_quantity >= 10 and l_quantity <= 10 + 10 and p_size between 1"
    " and 10 and l_shipmode in ('AIR', 'AIR REG') and l_shipinstruct = 'DELIVER IN PERSON') or "
    "( p_partkey = l_partkey and p_brand = 'Brand#34' and p_container in ('LG CASE', 'LG BOX', "
    "'LG PACK', 'LG PKG') and l_quantity >= 20 and l_quantity <= 20 + 10 and p_size between 1 "
    "and 15 and l_shipmode in ('AIR', 'AIR REG') and l_shipinstruct = 'DELIVER IN PERSON')"};

static void test_tpch_queries(void **state)
{
    (void)state;
    static const int nfrom[] = {1, 3, 6, 1, 4, 2, 2, 2};
    for (size_t k = 0; k < sizeof tpch / sizeof tpch[0]; k++) {
        struct sql_stmt *s = NULL;
        struct fr_error err;
        fr_error_init(&err);
        if (sql_parse(tpch[k], &s, &err) != FR_OK)
            fail_msg("TPC-H #%zu: %s", k, err.message);
        int tables = 1;
        for (struct sql_from *f = s->query->select->from; f->kind == SQL_FROM_JOIN; f = f->left)
            tables++;
        assert_int_equal(tables, nfrom[k]);
        sql_stmt_free(s);
    }
}

/* Each select item's [pos, end) is its text, for the names the compiler gives
 * unaliased columns. */
static void test_spans(void **state)
{
    (void)state;
    static const char *const items[] = {"(a + 1) * 2",
                                        "count(*) filter (where x > 0)",
                                        "x between 1 and 2",
                                        "case when a then b end",
                                        "- a::int",
                                        "t.*",
                                        "y not in (1, 2)",
                                        "date '2020-01-01'",
                                        "sum(x) over (partition by y)",
                                        "(select 1)",
                                        "a is not null"};
    char text[512] = "select ";
    for (size_t k = 0; k < sizeof items / sizeof items[0]; k++) {
        strcat(text, items[k]);
        strcat(text, k + 1 < sizeof items / sizeof items[0] ? ", " : " from t");
    }
    struct sql_stmt *s = NULL;
    struct fr_error err;
    fr_error_init(&err);
    assert_int_equal(sql_parse(text, &s, &err), FR_OK);
    struct sql_select *sel = s->query->select;
    assert_int_equal(sel->nitems, (int)(sizeof items / sizeof items[0]));
    for (int k = 0; k < sel->nitems; k++) {
        const struct sql_expr *e = sel->items[k].expr;
        char got[128];
        snprintf(got, sizeof got, "%.*s", (int)(e->end - e->pos), text + e->pos);
        assert_string_equal(got, items[k]);
    }
    sql_stmt_free(s);
}

/* The compiler's error helper appends the location. */
static void test_error_at(void **state)
{
    (void)state;
    struct fr_error err;
    fr_error_init(&err);
    const char *text = "select\n  nope from t";
    int rc = sql_error_at(&err, FR_EINVAL, "invalid-sql", text, 9, "unknown column '%s'", "nope");
    assert_int_equal(rc, FR_EINVAL);
    assert_string_equal(err.message, "unknown column 'nope' at line 2, column 3");
    assert_string_equal(err.kind, "invalid-sql");
    assert_int_equal(err.position, 9);
    assert_int_equal(err.line, 2);
    assert_int_equal(err.column, 3);
    assert_int_equal(sql_error_at(NULL, FR_EINVAL, "invalid-sql", text, 0, "x"), FR_EINVAL);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_statements_parse),
        cmocka_unit_test(test_errors),
        cmocka_unit_test(test_error_position),
        cmocka_unit_test(test_excerpt_long_line),
        cmocka_unit_test(test_nesting_bounds),
        cmocka_unit_test(test_size_bounds),
        cmocka_unit_test(test_nul_byte),
        cmocka_unit_test(test_tree_values),
        cmocka_unit_test(test_window_frame_and_extract),
        cmocka_unit_test(test_statement_kinds),
        cmocka_unit_test(test_set_values),
        cmocka_unit_test(test_error_at),
        cmocka_unit_test(test_tpch_queries),
        cmocka_unit_test(test_spans),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
