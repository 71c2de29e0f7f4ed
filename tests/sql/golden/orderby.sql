select id, fare from trips order by id;

select id, fare from trips order by id desc;

-- nulls last by default for ascending keys
select id, fare from trips order by fare, id;

select id, fare from trips order by fare nulls first, id;

select id, fare from trips order by fare desc nulls last, id;

select id, fare from trips order by fare desc nulls first, id desc;

select id, tip from trips order by tip asc nulls last, id;

-- ORDER BY a position
select vendor, id from trips order by 1 nulls first, 2 desc;

select id, fare + coalesce(tip, 0) as total from trips order by 2 desc nulls last, 1;

-- ORDER BY an alias
select id, fare * 2 as f2 from trips order by f2 nulls first, id;

-- ORDER BY an expression and a column that is not selected
select id from trips order by coalesce(tip, 0) desc, fare nulls last, id;

select vendor from trips order by id;

select id, name from sortme order by grp nulls first, val desc nulls last, id;

select id, name from sortme order by name, id;

select id, fare from trips order by fare desc nulls last, id limit 3;

select id from trips order by id limit 3 offset 2;

select id from trips order by id offset 6;

select id from trips order by id limit 0;

select id from trips order by id limit 100;

-- LIMIT without ORDER BY: how many rows
select count(*) as n from (select id from trips limit 5) t;

select vendor, count(*) as n from trips group by vendor order by n desc, vendor nulls first;

select vendor, sum(fare) as s from trips group by 1 order by 2 desc nulls last, 1 nulls last;

select g, count(*) as n from groups group by g order by count(*) desc, g nulls last limit 3;

select id, day from events order by day desc nulls last, id;

select id, ts from events order by ts nulls first, id;

select id, name from unicode order by name, id;

select s from nums order by s nulls first;

select distinct vendor from trips order by vendor nulls last;
