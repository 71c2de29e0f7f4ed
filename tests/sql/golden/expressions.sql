select id, case when fare > 20 then 'high' when fare > 10 then 'mid' else 'low' end as band from trips;

-- no ELSE gives null; a null condition falls through
select id, case when tip > 2 then 'big' end as t from trips;

-- the simple CASE
select id, case vendor when 'CMT' then 1 when 'VTS' then 2 else 0 end as code from trips;

select id, case when a > 0 then a * 1.5 else 0 end as scaled from nums where id <= 7;

select g, sum(case when x > 2 then 1 else 0 end) as big, sum(case when s = 'p' then y end) as py from groups group by g;

select id, cast(id as double) as d, cast(id as varchar) as s from trips;

select id, id::double as d, id::varchar as s, '12'::bigint + 1 as n from trips;

select id, cast(pickup as varchar) as ps, cast('2024-01-01' as date) as d from trips;

select id, day::timestamp as t, ts::date as d from events;

select cast('42' as integer) as i, cast('2.5' as double) as f, cast(1 as boolean) as b;

select id, cast(fare as double) / 2 as half from trips;

select g, x::varchar as xs from groups where x is not null;

-- cast to int of an integral float
select id, cast(x as bigint) as xi from nums where id in (3, 5);

select id, coalesce(tip, 0) as tip0, coalesce(vendor, 'none') as v from trips;

select id, coalesce(x, y, 0) as c from nums;

select id, abs(a) as aa, abs(x) as ax from nums where id <= 7;

select id, round(x) as r0, round(y, 1) as r1, floor(x) as fl, ceil(x) as ce, ceiling(y) as cy from nums where id <= 7;

select id, round(b) as rb, abs(b) as ab from nums where id <= 7;

select id, lower(s) as lo, upper(s) as up, length(s) as n from nums;

select id, substr(s, 2, 3) as sub, substring(s, 2) as rest from nums;

select id, length(name) as n, substr(name, 1, 2) as head from unicode;

select id, contains(s, 'an') as c, starts_with(s, 'a') as st, ends_with(s, 'e') as en from nums;

select id, year(day) as y, month(day) as m, day(day) as d from events;

select id, year(pickup) as y, month(pickup) as m, day(pickup) as d from trips;

select id, year(ts) as y from events;

-- comparisons with null, and boolean expressions as values
select id, fare > 10 as big, tip is null as no_tip, fare > 10 and tip > 2 as both, fare > 10 or tip > 2 as either from trips;

select id, not ok as nok from sales;

select id, x between 0 and 5 as inr, s in ('apple', 'fig') as fruit, s like 'a%' as a_word from nums;

select id, length(text) as n from quoted;

select id, case when tip = 0 then null else fare / tip end as ratio from trips;

select id, -fare as neg, fare * -1 as neg2 from trips;

select id, a * 2 + b as v, (a - b) * 3 as w from nums where id <= 7;

select date '2024-03-01' as d, timestamp '2024-03-01 12:30:00' as t;

select id, x * 1.0e2 as big, y / 4 as q from nums where id <= 7;
