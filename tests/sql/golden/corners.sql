-- the COUNT of a correlated subquery without a match is 0, not null
select v.vendor, (select count(*) from trips t where t.vendor = v.vendor) as n from vendors v;

select v.vendor, (select count(t.tip) from trips t where t.vendor = v.vendor) as n from vendors v;

-- NOT IN over an empty set is true, also for a null on the left
select name from "left" where k not in (select k from "right" where k > 100);

-- NOT IN with a null on the left and a non-empty set without nulls: null, the row goes
select name from "left" where k not in (select k from "right" where k is not null and k < 3);

-- IN and EXISTS as values in the select list (null when unknown)
select id, vendor in (select vendor from vendors) as known from trips;

select vendor, exists (select 1 from trips t where t.vendor = v.vendor) as used from vendors v;

select id, vendor not in (select vendor from vendors where vendor is not null) as unknown from trips;

-- correlated by two equalities
select l.name from "left" l where exists (select 1 from "right" r where r.k = l.k and r.kf = l.kf);

select t.id, (select sum(u.fare) from trips u where u.vendor = t.vendor and u.pickup = t.pickup) as same_day from trips t;

-- a subquery two levels deep
select id from trips where vendor in (select vendor from vendors where rating > (select avg(rating) from vendors));

-- a subquery in FROM without an alias
select count(*) as n from (select distinct vendor from trips where vendor is not null);

select n, s from (values (1, 'a'), (2, 'b'), (3, null)) as t(n, s);

-- UNION of int64 and float64 widens to float64
select id from trips union all select fare from trips;

select id as v from trips where id < 3 union select rating from vendors;

-- INTERSECT binds tighter than UNION
select vendor from trips union select vendor from vendors intersect select vendor from vendors where rating > 4.2;

select vendor from trips except select vendor from vendors union select 'ZZZ';

-- names of a set operation come from its left side
select id as a, vendor as b from trips where id < 3 union all select id, name from sortme where id < 3;

-- ORDER BY an aggregate that is not selected
select g from groups group by g order by sum(x) desc nulls last, g nulls first;

-- a window over an aggregate in the same select
select g, sum(x) as s, rank() over (order by sum(x) desc nulls last) as r from groups group by g;

select g, count(*) as n, sum(count(*)) over () as total from groups group by g;

-- a window over expressions
select id, row_number() over (partition by fare > 12 order by coalesce(tip, 0) desc, id) as rn from trips;

select id, sum(fare) over (partition by year(pickup), month(pickup)) as month_total from trips;

-- a window ordered with nulls first
select id, fare, rank() over (order by fare nulls first) as r, lag(id) over (order by fare nulls first, id) as prev from trips;

-- names: an alias referenced in another case, a quoted alias by its exact name
select TOTAL from (select fare as total from trips) t where Total > 12;

select "Total" from (select fare as "Total" from trips) t where "Total" > 12;

select T.id, T.Vendor from Trips t where T.ID < 3;

-- a CTE may shadow a table
with trips as (select * from trips where id < 4) select count(*) as n from trips;

-- a CTE referenced by a later CTE and by the query
with a as (select vendor, fare from trips where fare is not null), b as (select vendor, max(fare) as top from a group by vendor) select a.vendor, a.fare from a join b on a.vendor = b.vendor and a.fare = b.top;

-- joins on expressions and non-equality conditions
select a.id as a_id, b.id as b_id from trips a join trips b on a.id = b.id + 1;

select a.id as a_id, b.id as b_id from trips a, trips b where a.fare > b.fare * 3;

select t.id, v.name from trips t join vendors v on lower(t.vendor) = lower(v.vendor) and v.rating >= 4;

-- a left join then a filter on the right side: the anti-join pattern
select t.id from trips t left join vendors v on t.vendor = v.vendor where v.vendor is null;

select t.id, v.name from trips t full join vendors v on t.vendor = v.vendor where t.id is null or v.name is null;

-- a right join of three tables
select t.id, v.name, s.region from trips t join vendors v on t.vendor = v.vendor right join sales s on s.id = t.id;

-- constants and aggregates without grouping
select 1 as one from trips;

select count(1) as n, max(id) + 1 as next, min(pickup) as first_day from trips;

select * from trips where id = (select max(id) from trips);

-- GROUP BY every column and no aggregate is DISTINCT
select vendor, pickup from trips group by vendor, pickup;

select distinct vendor, fare > 10 as big from trips order by vendor nulls first, big;

-- a date compares with a timestamp; dates group
select id from events where ts > date '2024-01-01';

select cast(ts as date) as d, count(*) as n from events group by cast(ts as date);

select count(distinct s) as ds from groups group by g having count(distinct s) > 1;

select sum(x * y) as sxy, sum(x) * sum(y) as prod from groups;

-- an ORDER BY on a derived table's columns, and LIMIT inside a subquery
select vendor, n from (select vendor, count(*) as n from trips group by vendor order by n desc, vendor nulls last limit 2) t;

select id, fare from trips order by -id limit 2;

-- a window in the select list and an ORDER BY on its result
select id, rank() over (order by fare desc nulls last) as r from trips order by r, id;

select x % 2 as p, count(*) as n from groups group by 1;

select *, fare * 2 as f2 from trips;

select t.*, v.rating from trips t join vendors v using (vendor);

select vendor, count(*) as n from trips join vendors using (vendor) group by vendor;

select id, extract(year from pickup) as y, extract(month from pickup) as m, extract(day from pickup) as d from trips;

select id, substring(s from 2 for 3) as sub from nums;

select '5'::int + 1 as six, coalesce(null, 1) as one;

select id, case when fare > 10 then null else fare end as small_fare from trips;

select id from sales where ok is not true;

select id from sales where ok is false;

select id from trips where id + 1 in (2, 4);

-- FULL JOIN USING with null keys on both sides: they never match, each comes once
select k, l.name as ln, r.name as rn from "left" l full join "right" r using (k);

-- a correlated subquery in HAVING, over the group key
select vendor from trips t group by vendor having count(*) >= (select count(*) from vendors v where v.vendor = t.vendor);

-- a scalar subquery without rows is null
select id, (select rating from vendors where vendor = 'NOPE') as r, (select max(rating) from vendors where rating > 10) as m from trips;

-- two correlated subqueries in one select
select t.id, (select max(v.rating) from vendors v where v.vendor = t.vendor) as best, (select min(v.rating) from vendors v where v.vendor = t.vendor) as worst from trips t;

-- ORDER BY names an output alias before an input column
select id, fare as tip, tip as fare from trips order by tip nulls last, id;

select case when fare > 10 then 'hi' else 'lo' end as band, count(*) as n from trips group by case when fare > 10 then 'hi' else 'lo' end;

select count(distinct case when fare > 10 then vendor end) as big_vendors from trips;

select sum(y) / count(y) as mean_y, avg(x) as mean_x from groups;

select id from trips order by id limit 5 offset 100;

select count(*) as n from trips, vendors;

select t.id, v.name from trips t, vendors v where t.vendor = v.vendor and t.fare > v.rating * 3;

select id, vendor, name, region from trips join vendors using (vendor) join sales using (id);
