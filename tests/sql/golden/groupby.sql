select vendor, count(*) as n from trips group by vendor;

select vendor, count(*) as n, count(tip) as ntip, sum(fare) as total, avg(fare) as mean, min(fare) as lo, max(fare) as hi from trips group by vendor;

-- GROUP BY a position
select g, count(*) as n, sum(x) as sx from groups group by 1;

select g, s, count(*) as n from groups group by 1, 2;

-- GROUP BY an expression
select x % 2 as parity, count(*) as n from groups group by x % 2;

select upper(g) as ug, sum(y) as sy from groups group by upper(g);

-- GROUP BY an alias of the select list
select x % 2 as parity, count(*) as n from groups group by parity;

select year(pickup) as yr, month(pickup) as mo, count(*) as n, sum(fare) as f from trips group by year(pickup), month(pickup);

-- an aggregate inside an expression, and an expression over group keys
select vendor, sum(fare) + sum(tip) as total, max(fare) - min(fare) as spread from trips group by vendor;

select g, sum(x) * 2 as s2, count(*) - count(x) as nulls from groups group by g;

select vendor, round(avg(fare), 2) as mean from trips group by vendor;

select count(distinct vendor) as vendors, count(*) as n, count(vendor) as nv from trips;

select g, count(distinct s) as ds, count(s) as ns from groups group by g;

select count(distinct g) as dg, count(distinct x) as dx from groups;

-- global aggregates of an empty input: one row
select count(*) as n, sum(fare) as s, max(fare) as m from trips where fare > 1000;

select sum(x) as sx, avg(y) as ay, min(s) as ms, max(s) as xs from groups;

select g, median(y) as med from groups group by g;

select g, stddev(y) as sd from groups group by g;

-- HAVING on an aggregate in the select list
select g, count(*) as n from groups group by g having count(*) > 1;

-- HAVING on an aggregate not in the select list
select g, sum(x) as sx from groups group by g having max(y) >= 4;

select vendor, count(*) as n from trips group by vendor having vendor is not null and sum(fare) > 20;

select g from groups group by g having count(*) = 2;

-- HAVING without GROUP BY
select count(*) as n from trips having count(*) > 3;

select vendor, pickup, count(*) as n from trips group by vendor, pickup;

select ok, count(*) as n, sum(qty) as q from sales group by ok;

select day, count(*) as n from events group by day;

select region, sum(amount) as total, avg(qty) as mean_qty from sales group by region;

-- a grouping key that is not selected
select count(*) as n from trips group by vendor;

select g, min(x) as mn, max(x) as mx, sum(y) as sy, avg(x) as ax from groups group by g having g <> 'e' or g is null;

-- int64 sums and means are exact through both phases of the aggregation
select grp, avg(case when id = 2 then 1000000000000000000 when id = 7 then -1000000000000000000 else id end) as a, sum(case when id = 2 then 1000000000000000000 when id = 7 then -1000000000000000000 else id end) as s from sortme group by grp;
