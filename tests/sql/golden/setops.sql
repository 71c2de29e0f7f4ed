select vendor from trips union select vendor from vendors;

select vendor from trips union all select vendor from vendors;

select vendor from trips intersect select vendor from vendors;

select vendor from vendors except select vendor from trips;

select vendor from trips except select vendor from vendors;

select id, vendor from trips where fare > 20 union all select id, vendor from trips where tip > 4;

select id from trips where fare > 20 union select id from trips where tip > 4;

select g from groups union select grp from sortme;

select g from groups intersect select grp from sortme;

select g from groups except select grp from sortme;

select id from trips union all select id from sales union all select id from events;

select id, name from sortme where grp = 'a' union all select id, name from sortme where grp = 'b' order by id;

select vendor, count(*) as n from (select vendor from trips union all select vendor from vendors) u group by vendor;

select k from "left" union select k from "right" order by k nulls first;

(select id from trips order by id limit 2) union all (select id from sales order by id desc limit 2);
