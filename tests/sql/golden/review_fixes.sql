-- LIMIT + OFFSET past the largest 64-bit integer: no rows, no overflow
select id from trips order by id limit 1 offset 9223372036854775807;

-- LIMIT at the largest 64-bit integer with an OFFSET: all but the first row
select id from trips order by id limit 9223372036854775807 offset 1;

-- SELECT * of a FULL JOIN USING: the merged key first, then the left's, then the right's
select * from trips full join vendors using (vendor) order by 1, 2, 7;

-- SELECT * of a RIGHT JOIN USING: the right side's key first
select * from trips right join vendors using (vendor) order by 1, 2, 7;

-- SELECT * of a LEFT JOIN USING: the key first
select * from trips left join vendors using (vendor) order by 2, 7;

-- GROUP BY 1 and ORDER BY 1 of a FULL JOIN USING read the merged key
select vendor, count(*) as n from (select * from trips full join vendors using (vendor)) t group by 1 order by 1 nulls first;

-- UNION of SELECT * from two USING joins lines up by position
select * from trips right join vendors using (vendor) union all select * from trips full join vendors using (vendor) order by 1, 2, 7;

-- CAST of a double to an integer rounds to even as DuckDB (1.5 -> 2, -2.5 -> -2, 2.5 -> 2, -0.5 -> 0)
select id, cast(x as bigint) as xb, x::bigint as xc, cast(y as bigint) as yb from nums order by id;

-- CAST to INTEGER of small doubles
select id, cast(x as integer) as xi, cast(x * 3 as int) as x3 from nums where abs(x) < 1000 order by id;

-- CAST of a decimal literal to an integer rounds half away from zero as DuckDB
select cast(2.7 as int) as a, 2.7::int as b, cast(1.5 as int) as c, cast(-1.7 as bigint) as d, cast(-2.5 as int) as e, cast(0.5 as int) as f;

-- CAST of a double literal to an integer rounds to even
select cast(2.5::double as int) as a, cast(-2.5::double as bigint) as b, cast(3.5::double as int) as c;

-- CAST of text and integers to an integer is unchanged by the rounding
select id, cast(a as bigint) as ab, cast(cast(b as varchar) as int) as bs from nums order by id;
