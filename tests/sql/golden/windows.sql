select id, vendor, row_number() over (partition by vendor order by id) as rn from trips;

select id, row_number() over (order by id desc) as rn from trips;

select id, grp, val, rank() over (partition by grp order by val) as r from sortme;

select id, grp, val, dense_rank() over (partition by grp order by val) as dr from sortme;

-- ties: rank skips, dense_rank does not
select id, val, rank() over (order by val) as r, dense_rank() over (order by val) as dr from sortme;

select id, val, rank() over (order by val desc nulls last) as r from sortme;

select id, grp, val, lag(val) over (partition by grp order by id) as prev from sortme;

select id, grp, val, lead(val) over (partition by grp order by id) as nxt from sortme;

select id, lag(fare, 2) over (order by id) as p2, lead(fare, 1) over (order by id) as n1 from trips;

select id, lag(fare, 1, 0) over (order by id) as p, lead(vendor, 2, 'none') over (order by id) as n from trips;

select id, lag(val, 0) over (order by id) as same from sortme;

-- running aggregates: with ORDER BY the frame ends at the current row's peers
select id, grp, val, sum(val) over (partition by grp order by id) as rs from sortme;

select id, val, sum(val) over (order by val) as rs, count(*) over (order by val) as rc from sortme;

select id, grp, avg(val) over (partition by grp order by id) as ra from sortme;

select id, grp, min(val) over (partition by grp order by id) as mn, max(val) over (partition by grp order by id) as mx from sortme;

select id, grp, count(val) over (partition by grp order by id) as c, count(*) over (partition by grp order by id) as cs from sortme;

-- without ORDER BY: the whole partition
select id, grp, sum(val) over (partition by grp) as total, count(*) over (partition by grp) as n from sortme;

select id, sum(fare) over () as total, avg(fare) over () as mean, max(tip) over () as mt from trips;

select id, fare, sum(fare) over (partition by vendor order by fare nulls first, id) as rs from trips;

select g, x, y, sum(y) over (partition by g order by x) as ry from groups where g is not null;

select id, pickup, count(*) over (order by pickup) as by_day from trips;

-- a window over an expression, several windows in one select
select id, row_number() over (partition by vendor order by fare desc nulls last, id) as rn, rank() over (order by pickup) as r from trips;

select id, val, row_number() over (partition by val % 2 order by id) as rn from sortme where val is not null;

-- a window result filtered in an outer query (top two per group)
select id, grp from (select id, grp, row_number() over (partition by grp order by val desc nulls last, id) as rn from sortme) t where rn <= 2;

select grp, id, rn from (select grp, id, row_number() over (partition by grp order by id) as rn from sortme) t order by grp nulls first, rn;

-- a window over an aggregate's output
select vendor, n, rank() over (order by n desc) as r from (select vendor, count(*) as n from trips group by vendor) c;

select id, x, y, lag(y) over (order by id) as py, y - lag(y) over (order by id) as dy from nums;

select id, s, min(s) over (order by id) as first_s, max(s) over (order by id) as last_s from nums;

select id, day, row_number() over (order by day nulls first, id) as rn from events;

-- named windows merge with the OVER clause's own parts (PostgreSQL's rule):
-- PARTITION BY from the base, ORDER BY added locally
select id, grp, val, rank() over (w order by id) as r, sum(val) over (w order by id) as s from sortme window w as (partition by grp) order by id;

-- a named window defined in terms of another
select id, grp, rank() over w2 as r, count(*) over w as n from sortme window w as (partition by grp), w2 as (w order by id) order by id;

-- int64 sums and means are exact (no double accumulator): 1e18 + 2 - 1e18 + 4 ...
select id, avg(case when id = 1 then 1000000000000000000 when id = 3 then -1000000000000000000 else id end) over (order by id) as ra, sum(case when id = 1 then 1000000000000000000 when id = 3 then -1000000000000000000 else id end) over (order by id) as rs from sortme order by id;
