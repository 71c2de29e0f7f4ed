-- Fixes from a review of the compiler. A column whose name has a space,
-- read from a CSV with column pruning (only some columns are read).
select "my col" from spaced;

-- The same name as a sort key and in a filter.
select id from spaced where "my col" > 5 order by "my col" desc;

-- A correlated aggregate subquery where no inner row matches gives the item
-- over the empty group (count 0, other aggregates NULL, then the expression).
select name, (select count(rv) + 1 from "right" r where r.k = l.k) as c from "left" l;

select name, (select coalesce(max(rv), -5) from "right" r where r.k = l.k) as m from "left" l;

select name, (select count(*) * 2 from "right" r where r.k = l.k) as c from "left" l;

select name from "left" l where (select count(*) + 0 from "right" r where r.k = l.k) = 0;

select name from "left" l where (select coalesce(sum(rv), 0) from "right" r where r.k = l.k) < 250;

select name, (select case when count(*) = 0 then 'none' else 'some' end from "right" r where r.k = l.k) as s from "left" l;

-- HAVING removes a matched group (NULL) and decides on the empty group.
select name, (select count(*) from "right" r where r.k = l.k having count(*) > 1) as c from "left" l;

select name, (select count(*) from "right" r where r.k = l.k having count(*) = 0) as c from "left" l;

select name, (select max(rv) from "right" r where r.k = l.k having count(*) < 2) as c from "left" l;

-- Uncorrelated: HAVING still removes the one row.
select name, (select count(*) from "right" having count(*) > 100) as c from "left";

select name, (select sum(rv) * 2 from "right") as c from "left";

-- A NULL literal in a set operation against a date or timestamp column.
select day from events union all select null;

select null as d union select day from events;

select ts from events union select null;

select null as a, null as b union all select day, ts from events;

select day from events except select null;

-- SELECT * over a FULL JOIN ... ON keeps both sides' columns, no more (the
-- column aliases name duplicates, which framed suffixes and DuckDB keeps).
select * from (select * from "left" full join "left" t on "left".k = t.k) s(a, b, c, d, e, f, g, h);

select * from (select * from "left" l full join "right" r on l.k = r.k) s(a, b, c, d, e, f, g, h);

-- A qualified star lists its table's USING/NATURAL key in place.
select r.* from "left" l join "right" r using (k);

select r.* from "left" l left join "right" r using (k);

select l.* from "left" l right join "right" r using (k);

select r.* from "left" l right join "right" r using (k);

select * from (select l.*, r.* from "left" l full join "right" r using (k)) s(a, b, c, d, e, f, g, h);

select * from (select l.name, r.* from "left" l join "right" r using (k, name)) s(a, b, c, d, e);

select v.* from trips t natural join vendors v;

select t.* from trips t natural join vendors v;

select * from (select *, l.* from "left" l join "right" r using (k)) s(a, b, c, d, e, f, g, h, i, j, m);
