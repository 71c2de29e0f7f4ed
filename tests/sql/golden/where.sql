select id from trips where fare > 10;

select id from trips where fare >= 12.5 and tip < 3;

select id from trips where fare < 10 or tip > 5;

select id from trips where not (fare > 10);

select id from trips where vendor = 'CMT' and not tip = 0;

select id from trips where vendor != 'CMT';

select id from trips where vendor <> 'VTS';

select id from trips where tip is null;

select id from trips where fare is not null and tip is not null;

select id from trips where vendor is null or fare is null;

select id from trips where fare between 8 and 15;

select id from trips where fare not between 8 and 15;

select id from trips where vendor in ('CMT', 'DDS');

select id from trips where vendor not in ('CMT', 'DDS');

select id from trips where id in (1, 3, 5, 7, 9);

-- three-valued logic: x in (..., null) is null when nothing matches
select g, x from groups where x not in (1, 2, null);

select id from trips where note like '%i%';

select id from trips where note like 's_id%';

select id from trips where note not like '%i%';

select name from sortme where name like '_i%';

select id from trips where pickup = date '2024-02-01';

select id from trips where pickup > '2024-02-01';

select id from trips where pickup between date '2024-02-01' and date '2024-03-31';

-- a literal interval folds into the date
select id from trips where pickup >= date '2024-04-02' - interval '1' day;

select id from trips where pickup < date '2024-01-01' + interval '2' month;

select id from events where ts >= timestamp '2024-01-01 00:00:00';

select id from events where day < date '2000-01-01';

select id from sales where ok;

select id from sales where not ok;

select id from sales where ok is not null and (region = 'north' or qty > 3);

select g, x from groups where x > 2 and y is not null and s <> 'x';

select id from trips where true;

select id from trips where false;

select id from trips where fare > tip * 5;
