// The JSON plans bench/sql.mjs runs beside the SQL: TPC-H queries 1, 3, 5, 6, 10, 12, 14 and 19
// (tests/tpch/q<n>.sql) and a few db-benchmark questions, written by hand the way a plan user
// would write them (filters first, small sides joined to large ones by key), with the same
// expressions as the SQL.
import { GROUPBY_OPS } from './engines/common.mjs';

const ds = (name, ops = []) => ({ source: { dataset: name }, ops });
const join = (right, leftOn, rightOn, how = 'inner') => ({ join: { right, left_on: leftOn, right_on: rightOn, how } });
const REVENUE = 'sum(l_extendedprice * (1 - l_discount)) as revenue';

export const TPCH_PLANS = {
  q1: ds('lineitem', [
    { where: "l_shipdate <= date '1998-09-02'" },
    { groupby: ['l_returnflag', 'l_linestatus'], agg: ['sum(l_quantity) as sum_qty', 'sum(l_extendedprice) as sum_base_price',
      'sum(l_extendedprice * (1 - l_discount)) as sum_disc_price', 'sum(l_extendedprice * (1 - l_discount) * (1 + l_tax)) as sum_charge',
      'avg(l_quantity) as avg_qty', 'avg(l_extendedprice) as avg_price', 'avg(l_discount) as avg_disc', 'count(*) as count_order'] },
    { sort: ['l_returnflag', 'l_linestatus'] }]),
  q3: ds('lineitem', [
    { where: "l_shipdate > date '1995-03-15'" },
    join(ds('orders', [{ where: "o_orderdate < date '1995-03-15'" }]), ['l_orderkey'], ['o_orderkey']),
    join(ds('customer', [{ where: "c_mktsegment = 'BUILDING'" }, { select: ['c_custkey'] }]), ['o_custkey'], ['c_custkey']),
    { groupby: ['l_orderkey', 'o_orderdate', 'o_shippriority'], agg: [REVENUE] },
    { select: ['l_orderkey', 'revenue', 'o_orderdate', 'o_shippriority'] },
    { sort: ['revenue desc', 'o_orderdate'] }, { limit: 10 }]),
  q5: ds('lineitem', [
    join(ds('orders', [{ where: "o_orderdate >= date '1994-01-01' and o_orderdate < date '1995-01-01'" }]), ['l_orderkey'], ['o_orderkey']),
    join(ds('customer', [{ select: ['c_custkey', 'c_nationkey'] }]), ['o_custkey'], ['c_custkey']),
    join(ds('supplier', [{ select: ['s_suppkey', 's_nationkey'] },
      join(ds('nation'), ['s_nationkey'], ['n_nationkey']),
      join(ds('region', [{ where: "r_name = 'ASIA'" }]), ['n_regionkey'], ['r_regionkey'])]),
    ['l_suppkey', 'c_nationkey'], ['s_suppkey', 's_nationkey']),
    { groupby: ['n_name'], agg: [REVENUE] },
    { sort: ['revenue desc'] }]),
  q6: ds('lineitem', [
    { where: "l_shipdate >= date '1994-01-01' and l_shipdate < date '1995-01-01' and l_discount between 0.06 - 0.01 and 0.06 + 0.01 and l_quantity < 24" },
    { agg: ['sum(l_extendedprice * l_discount) as revenue'] }]),
  q10: ds('lineitem', [
    { where: "l_returnflag = 'R'" },
    join(ds('orders', [{ where: "o_orderdate >= date '1993-10-01' and o_orderdate < date '1994-01-01'" }, { select: ['o_orderkey', 'o_custkey'] }]),
      ['l_orderkey'], ['o_orderkey']),
    join(ds('customer'), ['o_custkey'], ['c_custkey']),
    join(ds('nation', [{ select: ['n_nationkey', 'n_name'] }]), ['c_nationkey'], ['n_nationkey']),
    { groupby: ['c_custkey', 'c_name', 'c_acctbal', 'c_phone', 'n_name', 'c_address', 'c_comment'], agg: [REVENUE] },
    { select: ['c_custkey', 'c_name', 'revenue', 'c_acctbal', 'n_name', 'c_address', 'c_phone', 'c_comment'] },
    { sort: ['revenue desc'] }, { limit: 20 }]),
  q12: ds('lineitem', [
    { where: "l_shipmode in ('MAIL', 'SHIP') and l_commitdate < l_receiptdate and l_shipdate < l_commitdate and l_receiptdate >= date '1994-01-01' and l_receiptdate < date '1995-01-01'" },
    join(ds('orders', [{ select: ['o_orderkey', 'o_orderpriority'] }]), ['l_orderkey'], ['o_orderkey']),
    { groupby: ['l_shipmode'], agg: [
      "sum(case when o_orderpriority = '1-URGENT' or o_orderpriority = '2-HIGH' then 1 else 0 end) as high_line_count",
      "sum(case when o_orderpriority <> '1-URGENT' and o_orderpriority <> '2-HIGH' then 1 else 0 end) as low_line_count"] },
    { sort: ['l_shipmode'] }]),
  q14: ds('lineitem', [
    { where: "l_shipdate >= date '1995-09-01' and l_shipdate < date '1995-10-01'" },
    join(ds('part', [{ select: ['p_partkey', 'p_type'] }]), ['l_partkey'], ['p_partkey']),
    { agg: ["100.00 * sum(case when p_type like 'PROMO%' then l_extendedprice * (1 - l_discount) else 0 end) / sum(l_extendedprice * (1 - l_discount)) as promo_revenue"] }]),
  q19: ds('lineitem', [
    { where: "l_shipmode in ('AIR', 'AIR REG') and l_shipinstruct = 'DELIVER IN PERSON' and l_quantity >= 1 and l_quantity <= 30" },
    join(ds('part', [{ where: "p_brand in ('Brand#12', 'Brand#23', 'Brand#34') and p_size between 1 and 15" }]), ['l_partkey'], ['p_partkey']),
    { where: "(p_brand = 'Brand#12' and p_container in ('SM CASE', 'SM BOX', 'SM PACK', 'SM PKG') and l_quantity >= 1 and l_quantity <= 1 + 10 and p_size between 1 and 5)" +
      " or (p_brand = 'Brand#23' and p_container in ('MED BAG', 'MED BOX', 'MED PKG', 'MED PACK') and l_quantity >= 10 and l_quantity <= 10 + 10 and p_size between 1 and 10)" +
      " or (p_brand = 'Brand#34' and p_container in ('LG CASE', 'LG BOX', 'LG PACK', 'LG PKG') and l_quantity >= 20 and l_quantity <= 20 + 10 and p_size between 1 and 15)" },
    { agg: [REVENUE] }]),
};

// db-benchmark: the groupby questions as bench/engines/framed.mjs runs them, the joins as
// tests/integration/differential.test.mjs writes them.
export const DBBENCH_PLANS = {
  q1: ds('g1', GROUPBY_OPS.q1),
  q3: ds('g1', GROUPBY_OPS.q3),
  q5: ds('g1', GROUPBY_OPS.q5),
  q8: ds('g1', GROUPBY_OPS.q8),
  q10: ds('g1', GROUPBY_OPS.q10),
  j1: ds('x', [{ join: { right: ds('small'), on: ['id1'], how: 'inner' } }]),
  j2: ds('x', [{ join: { right: ds('medium'), on: ['id2'], how: 'inner' } }]),
  j5: ds('x', [{ join: { right: ds('big'), on: ['id3'], how: 'inner' } }]),
};
export const DBBENCH_SQL_BENCH = {
  q1: 'SELECT id1, sum(v1) AS v1 FROM g1 GROUP BY id1',
  q3: 'SELECT id3, sum(v1) AS v1, avg(v3) AS v3 FROM g1 GROUP BY id3',
  q5: 'SELECT id6, sum(v1) AS v1, sum(v2) AS v2, sum(v3) AS v3 FROM g1 GROUP BY id6',
  q8: 'SELECT id6, v3 AS largest2_v3 FROM (SELECT id6, v3, row_number() OVER (PARTITION BY id6 ORDER BY v3 DESC) AS order_v3 FROM g1 WHERE v3 IS NOT NULL) sub_query WHERE order_v3 <= 2',
  q10: 'SELECT id1, id2, id3, id4, id5, id6, sum(v3) AS v3, count(*) AS count FROM g1 GROUP BY id1, id2, id3, id4, id5, id6',
  j1: 'SELECT x.*, small.id4 AS small_id4, v2 FROM x JOIN small USING (id1)',
  j2: 'SELECT x.*, medium.id1 AS medium_id1, medium.id4 AS medium_id4, medium.id5 AS medium_id5, v2 FROM x JOIN medium USING (id2)',
  j5: 'SELECT x.*, big.id1 AS big_id1, big.id2 AS big_id2, big.id4 AS big_id4, big.id5 AS big_id5, big.id6 AS big_id6, v2 FROM x JOIN big USING (id3)',
};
