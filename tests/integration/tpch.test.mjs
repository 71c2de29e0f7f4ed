// tpch: TPC-H queries 1, 3, 5, 6, 10, 12, 14 and 19 as TPC-H writes them
// (tests/tpch/q<n>.sql), on TPC-H-shaped data that our own generator writes
// (tests/tpch/tpch_gen.mjs) at scale factor 0.1 (FRAMED_TPCH_SF to change).
// framed runs each through its SQL over HTTP; DuckDB computes the expected
// answer from the same CSV files, read with the types framed infers (checked
// first). Answers must be equal: columns, rows in order (every query's ORDER
// BY is total on this data, or it has one row), floats within 1e-6
// relative. Then all again on a server whose config cuts the scans into many
// tasks and shuffles every join. A query that runs longer than
// FRAMED_TPCH_QUERY_S (default 300) seconds is cancelled and fails.
import assert from 'node:assert/strict';
import { copyFileSync, linkSync, mkdirSync, readFileSync, rmSync } from 'node:fs';
import path from 'node:path';
import { after, before, test } from 'node:test';
import { fileURLToPath } from 'node:url';
import { generateTpch, TPCH_COLUMNS, TPCH_QUERIES } from '../tpch/tpch_gen.mjs';
import { call, startServer } from './lib.mjs';
import { assertSameAnswer, duckAnswer, duckConnect, framedAnswer, hasTopLevelOrderBy } from './sql_lib.mjs';

const HERE = path.dirname(fileURLToPath(import.meta.url));
const SF = Number(process.env.FRAMED_TPCH_SF ?? 0.1);
const QUERY_MS = Number(process.env.FRAMED_TPCH_QUERY_S ?? 300) * 1000;
const TOL = 1e-6;
const FRAMED_TYPE = { BIGINT: 'int64', DOUBLE: 'float64', VARCHAR: 'string', DATE: 'date' };

const queryText = (q) => readFileSync(path.join(HERE, '..', 'tpch', `${q}.sql`), 'utf8').trim().replace(/;$/, '');

let srv;
let duck;
let counts;
const expected = new Map();

before(async () => {
  const t0 = Date.now();
  srv = await startServer();
  counts = generateTpch(srv.dataDir, SF);
  const tGen = Date.now() - t0;
  duck = await duckConnect();
  for (const [t, cols] of Object.entries(TPCH_COLUMNS)) {
    const spec = `{${Object.entries(cols).map(([c, ty]) => `'${c}': '${ty}'`).join(', ')}}`;
    await duck.con.run(`create table ${t} as select * from read_csv('${path.join(srv.dataDir, `${t}.csv`)}', ` +
      `header=true, nullstr='', auto_detect=false, columns=${spec})`);
  }
  for (const q of TPCH_QUERIES) expected.set(q, await duckAnswer(duck.con, queryText(q)));
  console.log(`# tpch: SF ${SF}, ${JSON.stringify(counts)}; generated in ${tGen} ms, DuckDB loaded and answered in ${Date.now() - t0 - tGen} ms`);
});

after(async () => {
  await srv?.stop();
  duck?.con?.closeSync?.();
  if (srv) rmSync(srv.dataDir, { recursive: true, force: true });
});

test('the generated data has the TPC-H shape', async () => {
  const one = async (sql) => (await duck.con.runAndReadAll(sql)).getRows()[0].map((v) => (typeof v === 'bigint' ? Number(v) : v));
  const want = { region: 5, nation: 25, supplier: 10000 * SF, customer: 150000 * SF, part: 200000 * SF, partsupp: 800000 * SF, orders: 1500000 * SF };
  for (const [t, n] of Object.entries(want)) assert.equal(counts[t], Math.max(1, Math.round(n)), t);
  assert.ok(Math.abs(counts.lineitem - 6000000 * SF) < 0.02 * 6000000 * SF, `lineitem ${counts.lineitem}`);
  // Keys: every line's order, part and (part, supplier) exist; every order's customer exists and
  // is not a multiple of 3; every nation has a region.
  const [orphans] = await one(`select (select count(*) from lineitem where l_orderkey not in (select o_orderkey from orders))
    + (select count(*) from lineitem l where not exists (select 1 from partsupp where ps_partkey = l.l_partkey and ps_suppkey = l.l_suppkey))
    + (select count(*) from orders where o_custkey not in (select c_custkey from customer) or o_custkey % 3 = 0)
    + (select count(*) from nation where n_regionkey not in (select r_regionkey from region))
    + (select count(*) from supplier where s_nationkey not in (select n_nationkey from nation))`);
  assert.equal(orphans, 0);
  const [dmin, dmax, smax, flags, statuses, modes, prios, segs] = await one(`select min(o_orderdate)::varchar, max(o_orderdate)::varchar,
    (select max(l_receiptdate)::varchar from lineitem),
    (select string_agg(distinct l_returnflag || l_linestatus, ',' order by l_returnflag || l_linestatus) from lineitem),
    (select string_agg(distinct o_orderstatus, ',' order by o_orderstatus) from orders),
    (select count(distinct l_shipmode) from lineitem), count(distinct o_orderpriority),
    (select count(distinct c_mktsegment) from customer) from orders`);
  assert.ok(dmin >= '1992-01-01' && dmax <= '1998-08-02' && smax <= '1998-12-31', `${dmin} ${dmax} ${smax}`);
  assert.equal(flags, 'AF,NF,NO,RF');
  assert.equal(statuses, 'F,O,P');
  assert.deepEqual([modes, prios, segs], [7, 5, 5]);
  const [promo, b12, smCase, dip] = await one(`select (select count(*) from part where p_type like 'PROMO%'),
    (select count(*) from part where p_brand = 'Brand#12'), (select count(*) from part where p_container = 'SM CASE'),
    (select count(*) from lineitem where l_shipinstruct = 'DELIVER IN PERSON')`);
  assert.ok(promo > 0 && b12 > 0 && smCase > 0 && dip > 0);
});

test('DuckDB reads the tables with the types framed infers', async () => {
  for (const [t, cols] of Object.entries(TPCH_COLUMNS)) {
    const r = await call(srv.base, 'GET', `/v1/datasets/${t}`);
    assert.equal(r.status, 200, r.text);
    assert.deepEqual(r.body.schema.map((c) => [c.name, c.type]), Object.entries(cols).map(([c, ty]) => [c, FRAMED_TYPE[ty]]), t);
  }
});

async function checkQuery(t, base, q) {
  const want = expected.get(q);
  assert.ok(want.rows.length > 0, `${q}: DuckDB's answer is not empty`);
  const t0 = Date.now();
  const got = await framedAnswer(base, queryText(q), { timeoutMs: QUERY_MS });
  t.diagnostic(`${q}: ${got.rows.length} rows in ${Date.now() - t0} ms`);
  assertSameAnswer(got, want, { ordered: hasTopLevelOrderBy(queryText(q)), tol: TOL, what: `TPC-H ${q}` });
}

for (const q of TPCH_QUERIES) {
  test(`TPC-H ${q}: framed's SQL answer is DuckDB's`, (t) => checkQuery(t, srv.base, q));
}

// The same on a server whose config cuts the scans into 1 MiB tasks and shuffles every join
// into 7 partitions (no broadcast): the plans change, the answers must not.
test('TPC-H with many scan tasks and shuffled joins', async (t) => {
  const forced = await startServer();
  try {
    mkdirSync(forced.dataDir, { recursive: true });
    for (const tbl of Object.keys(TPCH_COLUMNS)) {
      const from = path.join(srv.dataDir, `${tbl}.csv`);
      const to = path.join(forced.dataDir, `${tbl}.csv`);
      try { linkSync(from, to); } catch { copyFileSync(from, to); }
    }
    const r = await call(forced.base, 'POST', '/v1/config', { json: {
      scan_tasks_min_size_bytes: 1, scan_tasks_max_size_bytes: 1 << 20, shuffle_partitions: 7,
      broadcast_join_size_bytes_threshold: 0, maintain_order: false } });
    assert.equal(r.status, 200, r.text);
    for (const q of TPCH_QUERIES) await t.test(q, (st) => checkQuery(st, forced.base, q));
  } finally {
    await forced.stop();
  }
});
