-- every column
select * from trips;

select id, vendor, fare from trips;

-- aliases with and without AS
select id as trip_id, vendor v, fare * 2 as double_fare from trips;

select distinct vendor from trips;

select distinct g, s from groups;

-- DISTINCT over an expression
select distinct x % 2 as parity from groups;

select all vendor from trips;

-- keywords and names are case-insensitive
SeLeCt ID, Vendor, FARE from TRIPS where Vendor = 'CMT';

select t.id, t.vendor from trips t;

select trips.id, trips.fare from trips;

select t.* from trips as t;

-- a quoted name is a name: the table "left" is a keyword otherwise
select "left".k, "left"."name" from "left";

select "k", "rv" from "right";

-- a quoted alias keeps its case and its space
select fare as "Total Fare", tip as "tip!" from trips;

-- '' escapes a quote
select 'it''s' as s;

select id, note from trips where note = 'said "hi"';

select id, text from quoted where text <> 'it''s here';

select id, text from quoted where text = 'she said "hi"';

-- SELECT without FROM
select 1 + 2 as three, 'x' as s, true as b;

select 7 / 2 as half, 7 % 3 as rem, -5 as neg;

select id, fare, tip, fare + tip as total, fare - tip as diff, fare * tip as prod from trips;

-- integer arithmetic stays integral; / is real division
select id, a + b as s, a - b as d, a * b as p, a / b as q from nums where id <= 7 and b <> 0;

select id, -a as neg, +b as pos, a % b as m from nums where id <= 7 and b <> 0;

select 2 + 3 * 4 as p1, (2 + 3) * 4 as p2, 10 - 4 - 3 as p3, 2 * 3 % 4 as p4;

select id, name, city from unicode;

select id, score, grade from na;

select id, region, amount, qty, ok, day from sales;

select id, day, ts, label from events;

select id, text, n from quoted;

select name, rating from vendors;
