-- a subquery in FROM
select v, n from (select vendor as v, count(*) as n from trips group by vendor) t where n > 1;

select t.id from (select * from trips where fare > 10) as t where t.tip > 2;

-- column aliases of a derived table
select a, b from (select id, vendor from trips) as t(a, b) where a < 4;

select s.g, s.total from (select g, sum(x) as total from groups group by g) s where s.total > 3;

select count(*) as n from (select distinct vendor from trips) d;

select max(n) as most from (select vendor, count(*) as n from trips group by vendor) c;

-- CTEs
with cmt as (select * from trips where vendor = 'CMT') select id, fare from cmt;

with v as (select vendor, count(*) as n from trips group by vendor) select vendor, n from v where n >= 3;

with a as (select id, fare from trips), b as (select id, fare * 2 as f2 from a) select a.id, a.fare, b.f2 from a join b on a.id = b.id;

-- a CTE used twice
with t as (select vendor, fare from trips where fare is not null) select x.vendor, x.fare from t x where x.fare = (select max(fare) from t);

with totals(v, total) as (select vendor, sum(fare) from trips group by vendor) select v, total from totals;

with q as (select g, x from groups) select g, count(*) as n from q group by g having count(*) >= 2;

-- scalar subqueries
select id, fare, (select avg(fare) from trips) as mean from trips;

select id from trips where fare > (select avg(fare) from trips);

select (select count(*) from trips) as nt, (select count(*) from vendors) as nv;

select id, fare - (select min(fare) from trips) as above_min from trips where fare is not null;

-- a correlated scalar subquery (by equality)
select t.id, (select max(v.rating) from vendors v where v.vendor = t.vendor) as best from trips t;

select g, x from groups o where x = (select max(x) from groups i where i.g = o.g);

select t.id from trips t where t.fare > (select avg(t2.fare) from trips t2 where t2.vendor = t.vendor);

-- IN and NOT IN subqueries
select id from trips where vendor in (select vendor from vendors);

select id from trips where vendor in (select vendor from vendors where rating > 4.2);

select id from trips where vendor not in (select vendor from vendors where vendor is not null);

-- NOT IN over a set holding null: never true
select name from "left" where k not in (select k from "right");

select name from "left" where k not in (select k from "right" where k is not null);

select name from "left" where k in (select k from "right");

-- a correlated IN
select t.id from trips t where t.pickup in (select s.pickup from trips s where s.vendor = t.vendor and s.fare > 20);

-- EXISTS and NOT EXISTS, correlated by equality
select vendor, name from vendors v where exists (select 1 from trips t where t.vendor = v.vendor);

select vendor, name from vendors v where not exists (select * from trips t where t.vendor = v.vendor);

select id from trips t where exists (select 1 from vendors v where v.vendor = t.vendor and v.rating > 4.2);

select id from trips t where not exists (select 1 from vendors v where v.vendor = t.vendor);

-- uncorrelated EXISTS
select count(*) as n from trips where exists (select 1 from vendors where rating > 4);

select count(*) as n from trips where not exists (select 1 from vendors where rating > 5);

select g, (select count(*) from sortme s where s.grp = groups.g) as in_sortme from groups where x > 3;

-- a scalar subquery of a bare NULL compares as NULL with a date column (was an engine type error)
select id from events where day = (select null);

-- and as NULL inside an expression, with the subquery's one-row check kept
select count(*) as n from events where coalesce(day = (select null), true);
