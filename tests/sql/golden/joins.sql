select t.id, t.vendor, v.name, v.rating from trips t join vendors v on t.vendor = v.vendor;

select t.id, v.name from trips t inner join vendors v on t.vendor = v.vendor;

select t.id, t.vendor, v.name from trips t left join vendors v on t.vendor = v.vendor;

select t.id, t.vendor, v.name from trips t left outer join vendors v on t.vendor = v.vendor;

select t.id, v.vendor, v.name from trips t right join vendors v on t.vendor = v.vendor;

select t.id, t.vendor as tv, v.vendor as vv, v.name from trips t full join vendors v on t.vendor = v.vendor;

select t.id, t.vendor as tv, v.vendor as vv from trips t full outer join vendors v on t.vendor = v.vendor;

-- USING keeps the key once
select * from trips join vendors using (vendor);

select id, vendor, name from trips left join vendors using (vendor);

select vendor, id, rating from trips right join vendors using (vendor);

-- FULL JOIN USING: the key is the non-null side's
select vendor, id, rating from trips full join vendors using (vendor);

select l.k, l.name as ln, r.name as rn, l.lv, r.rv from "left" l join "right" r on l.k = r.k;

select l.k, l.name as ln, r.name as rn from "left" l left join "right" r on l.k = r.k;

select r.k, l.name as ln, r.name as rn from "left" l right join "right" r on l.k = r.k;

select l.k as lk, r.k as rk, l.name as ln, r.name as rn from "left" l full join "right" r on l.k = r.k;

-- an int64 key against a float64 key
select l.name as ln, r.name as rn from "left" l join "right" r on l.kf = r.kf;

-- two keys
select l.name as ln, r.name as rn from "left" l join "right" r on l.k = r.k and l.kf = r.kf;

select k, l.name as ln, r.name as rn from "left" l join "right" r using (k);

select k, kf, lv, rv from "left" join "right" using (k, kf);

select v.vendor, g.g from vendors v cross join (select distinct g from groups where g is not null) g;

select count(*) as n from trips cross join vendors;

-- several tables, comma style with the conditions in WHERE
select t.id, v.name from trips t, vendors v where t.vendor = v.vendor and t.fare > 10;

select l.name as ln, r.name as rn, s.name as sn from "left" l join "right" r on l.k = r.k join sortme s on s.id = r.rv / 100;

select l.name as ln, r.name as rn, s.name as sn from "left" l, "right" r, sortme s where l.k = r.k and s.id = l.k;

select t.id, v.name, s.region from trips t join vendors v on t.vendor = v.vendor left join sales s on s.id = t.id;

-- a filter on the join's output and an aggregate over it
select v.name, count(*) as n, sum(t.fare) as fares from trips t join vendors v on t.vendor = v.vendor group by v.name;

select t.vendor, count(v.vendor) as matched from trips t left join vendors v on t.vendor = v.vendor group by t.vendor;

-- a left join's condition on the right side keeps every left row
select t.id, v.name from trips t left join vendors v on t.vendor = v.vendor and v.rating > 4.2;

select t.id, v.name from trips t join vendors v on t.vendor = v.vendor where v.rating > 4.2;

-- a self join
select a.id as a_id, b.id as b_id from trips a join trips b on a.pickup = b.pickup and a.id < b.id;

select t.id, v.name from trips t join (select vendor, name from vendors where rating is not null) v on t.vendor = v.vendor;

-- the right table's t.* of a RIGHT JOIN USING keeps its own column order (its key was listed at the left key's place)
select r.* from "left" l right join "right" r using (name);

select l.*, r.rv from "left" l right join "right" r using (name);

select * from "left" l natural right join "right" r;
