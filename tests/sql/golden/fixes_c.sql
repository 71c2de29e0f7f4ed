-- Fixes from a review of the compiler. A column whose name has a space,
-- read from a CSV with column pruning (only some columns are read).
select "my col" from spaced;

-- The same name as a sort key and in a filter.
select id from spaced where "my col" > 5 order by "my col" desc;
