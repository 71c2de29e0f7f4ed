-- a window function in ORDER BY
select id from trips order by row_number() over (order by fare desc nulls last, id);

-- QUALIFY and GROUP BY ALL (DuckDB's)
select id, vendor from trips qualify row_number() over (partition by vendor order by id) = 1;

select vendor, count(*) as n from trips group by all;

-- a set operation with ORDER BY and LIMIT over the whole
select vendor from trips union select vendor from vendors order by vendor nulls first limit 3;

with v(code, label) as (select vendor, name from vendors) select t.id, v.label from trips t join v on t.vendor = v.code;

with a as (select vendor, count(*) as n from trips group by vendor) select vendor, n, rating from a join (select vendor, max(rating) as rating from vendors group by vendor) b using (vendor);

select id from nums where a > 6.5;

select vendor, count(*) as n from trips group by vendor order by count(*) * 2 desc, vendor nulls last;

select distinct fare * 2 as f2 from trips order by 1 nulls first;

-- grouping an empty input gives no groups
select vendor, count(*) as n from trips where false group by vendor;

select v.name, count(t.id) as trips from vendors v left join trips t on t.vendor = v.vendor group by v.name;

select l.name as ln, r.name as rn from "left" l join "right" r on l.kf = cast(r.kf as double);

select a from (with x as (select id as a from trips where id < 3) select a from x) t;

select ok, count(*) as n from sales group by ok order by ok nulls first;

select id from unicode where name = 'Zoë' or city = 'São Paulo';

select "my t".id from trips as "my t" where "my t".fare > 20;

select trips from (select id as trips from trips) t where trips < 3;

select id, lag(fare, 1, 0) over (partition by vendor order by id) as prev, lead(tip, 1, -1) over (partition by vendor order by id) as nxt from trips;

select vendor, sum(fare) as s, row_number() over (order by sum(fare) desc nulls last, vendor nulls last) as rn from trips group by vendor having count(*) > 1;

select g, x, dense_rank() over (partition by g order by x desc nulls first) as dr from groups;

select id, count(*) over (partition by vendor) as per_vendor, count(*) over () as all_trips from trips where fare is not null;
