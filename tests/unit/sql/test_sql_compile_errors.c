/* Unit tests of sql_compile's errors: every kind (400 invalid-sql, 404
 * dataset-not-found, 422 unsupported-sql) with its line and column and the
 * "did you mean" of an unknown name. */
#include "sql_compile_test_util.h"

static void expect_error(const char *sql, int status, const char *kind, int line, int column,
                         const char *contains)
{
    struct fr_error err = compile_err(sql);
    if (err.status != status || strcmp(err.kind, kind) != 0 || err.line != line ||
        err.column != column || !strstr(err.message, contains))
        fail_msg("%s:\n  got %d %s at %lld:%lld: %s\n  expected %d %s at %d:%d containing '%s'",
                 sql, err.status, err.kind, (long long)err.line, (long long)err.column, err.message,
                 status, kind, line, column, contains);
}

static void test_unknown_names(void **state)
{
    (void)state;
    expect_error("select nme from \"left\"", FR_EINVAL, "invalid-sql", 1, 8, "did you mean 'name'");
    expect_error("select g\nfrom groups\nwhere groups.xx > 1", FR_EINVAL, "invalid-sql", 3, 7,
                 "unknown column 'groups.xx'; did you mean 'x'");
    expect_error("select * from grops", FR_ENOTFOUND, "dataset-not-found", 1, 15,
                 "did you mean 'groups'");
    expect_error("select t.g from groups", FR_EINVAL, "invalid-sql", 1, 8, "no table 't'");
    expect_error("select k from \"left\", \"right\"", FR_EINVAL, "invalid-sql", 1, 8,
                 "column reference 'k' is ambiguous (left.k, right.k)");
    expect_error("select lower(g, s) from groups", FR_EINVAL, "invalid-sql", 1, 8,
                 "lower takes 1 to 1 arguments");
    expect_error("select lowr(g) from groups", FR_EINVAL, "invalid-sql", 1, 8,
                 "did you mean 'lower'");
}

static void test_invalid(void **state)
{
    (void)state;
    expect_error("select g, x from groups group by g", FR_EINVAL, "invalid-sql", 1, 11,
                 "must appear in the GROUP BY clause");
    expect_error("select g from groups where sum(x) > 1", FR_EINVAL, "invalid-sql", 1, 28,
                 "aggregate functions are not allowed in WHERE");
    expect_error("select g from groups order by 3", FR_EINVAL, "invalid-sql", 1, 31,
                 "ORDER BY position 3");
    expect_error("select g + 1 from groups", FR_EINVAL, "invalid-sql", 1, 8, "cannot combine");
    expect_error("select distinct g from groups order by x", FR_EINVAL, "invalid-sql", 1, 40,
                 "for SELECT DISTINCT");
    expect_error("select g from groups union select g, x from groups", FR_EINVAL, "invalid-sql", 1,
                 28, "same number of columns");
    expect_error("select (select g, x from groups) from groups", FR_EINVAL, "invalid-sql", 1, 9,
                 "one column");
    expect_error("select g from groups limit -1", FR_EINVAL, "invalid-sql", 1, 28, "LIMIT");
}

static void test_unsupported(void **state)
{
    (void)state;
    expect_error("select sum(x) over (order by x rows between 1 preceding and current row) "
                 "from groups",
                 FR_EVALIDATION, "unsupported-sql", 1, 32, "window frame ROWS BETWEEN");
    expect_error("select * from \"left\" l where exists (select 1 from \"right\" r where r.k > "
                 "l.k)",
                 FR_EVALIDATION, "unsupported-sql", 1, 68, "correlated subquery condition");
    expect_error("select (select l.k + r.rv from \"right\" r limit 1) from \"left\" l",
                 FR_EVALIDATION, "unsupported-sql", 1, 16, "correlated reference to 'l.k'");
    expect_error("select * from \"left\" l left join \"right\" r on l.k = r.k and l.lv > 3",
                 FR_EVALIDATION, "unsupported-sql", 1, 61, "LEFT JOIN");
    expect_error("select g from groups group by g, x in (select k from \"left\")", FR_EVALIDATION,
                 "unsupported-sql", 1, 34, "IN (subquery)");
    expect_error("select sum(distinct x) from groups", FR_EVALIDATION, "unsupported-sql", 1, 8,
                 "sum(DISTINCT ...)");
    expect_error("select g from groups intersect all select g from groups", FR_EVALIDATION,
                 "unsupported-sql", 1, 1, "INTERSECT ALL");
    expect_error("select extract(dow from day) from events", FR_EVALIDATION, "unsupported-sql", 1,
                 16, "dow");
    expect_error("select day + interval '1' day from events", FR_EVALIDATION, "unsupported-sql", 1,
                 8, "INTERVAL");
    expect_error("select g, trim(s) from groups", FR_EVALIDATION, "unsupported-sql", 1, 11,
                 "the function trim is not supported");
    expect_error("select distinct on (g) g from groups", FR_EVALIDATION, "unsupported-sql", 1, 21,
                 "DISTINCT ON");
}

/* Named windows: a duplicate name, an override of the base's PARTITION BY
 * or ORDER BY, a cycle; lag/lead's offset past the limit and a default of
 * another type than the argument: invalid-sql at the part written. */
static void test_windows(void **state)
{
    (void)state;
    expect_error("select rank() over w from groups window w as (order by x), w as (order by g)",
                 FR_EINVAL, "invalid-sql", 1, 60, "window \"w\" is already defined");
    expect_error("select rank() over (w partition by g) from groups window w as (order by x)",
                 FR_EINVAL, "invalid-sql", 1, 36, "cannot override PARTITION BY");
    expect_error("select rank() over (w order by g) from groups window w as (order by x)",
                 FR_EINVAL, "invalid-sql", 1, 32, "Cannot override ORDER BY clause of window");
    expect_error("select rank() over w2 from groups window w as (partition by g order by x), "
                 "w2 as (w order by g)",
                 FR_EINVAL, "invalid-sql", 1, 94, "Cannot override ORDER BY");
    expect_error("select rank() over a from groups window a as (b), b as (a order by x)", FR_EINVAL,
                 "invalid-sql", 1, 47, "in terms of itself");
    expect_error("select rank() over (c) from groups window a as (partition by g)", FR_EINVAL,
                 "invalid-sql", 1, 21, "no window named 'c'");
    expect_error("select lead(x, 2000000) over (order by x) from groups", FR_EINVAL, "invalid-sql",
                 1, 16, "offset 2000000");
    expect_error("select lag(x, 1, 1.5) over (order by x) from groups", FR_EINVAL, "invalid-sql", 1,
                 18, "lag's default is float64, but its argument is int64");
    expect_error("select lag(day, 1, 3) over (order by id) from events", FR_EINVAL, "invalid-sql",
                 1, 20, "but its argument is date");
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_unknown_names),
        cmocka_unit_test(test_invalid),
        cmocka_unit_test(test_unsupported),
        cmocka_unit_test(test_windows),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
