// differential: framed against DuckDB on the db-benchmark's tables and
// questions. dbgen.mjs writes the groupby table G1 (N rows, K = 100, ~5%
// nulls) and the join tables x/small/medium/big; both engines read the same
// CSV files (empty field = null), framed over HTTP (POST /v1/queries, then the
// result as JSON or NDJSON), DuckDB in process (@duckdb/node-api, 2 threads).
// Every question is compared by row count and by rows ignoring order (floats
// within 1e-9 relative, 1e-6 for stddev and corr). Everything runs twice: on
// a server with the default config and on one whose config forces many scan
// tasks, 7 shuffle partitions, no broadcast joins and maintain_order off.
//
// N defaults to 100000 (FRAMED_DIFF_ROWS to change). @duckdb/node-api comes
// from the repository's node_modules (`npm ci`): if it cannot be loaded the
// test FAILS, it never skips.
import assert from 'node:assert/strict';
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { after, before, test } from 'node:test';
import { groupbyCsv, joinCsvs } from './dbgen.mjs';
import { call, startServer } from './lib.mjs';
import { loadDuckDb } from './sql_lib.mjs';

const N = Number(process.env.FRAMED_DIFF_ROWS ?? 100000);
const TIGHT = 1e-9;
const LOOSE = 1e-6;

const FORCED_CONFIG = {
  scan_tasks_max_size_bytes: 65536,
  scan_tasks_min_size_bytes: 1,
  shuffle_partitions: 7,
  maintain_order: false,
  broadcast_join_size_bytes_threshold: 0,
};

// ---------------------------------------------------------------- the questions
const G1 = { path: 'G1.csv' };
const X = { path: 'x.csv' };
const p = (source, ops) => ({ source, ops });
// Column types DuckDB reads, the same framed infers.
const G1_COLS = `{'id1':'VARCHAR','id2':'VARCHAR','id3':'VARCHAR','id4':'BIGINT','id5':'BIGINT','id6':'BIGINT','v1':'BIGINT','v2':'BIGINT','v3':'DOUBLE'}`;
const J_COLS = {
  x: `{'id1':'BIGINT','id2':'BIGINT','id3':'BIGINT','id4':'VARCHAR','id5':'VARCHAR','id6':'VARCHAR','v1':'DOUBLE'}`,
  small: `{'id1':'BIGINT','id4':'VARCHAR','v2':'DOUBLE'}`,
  medium: `{'id1':'BIGINT','id2':'BIGINT','id4':'VARCHAR','id5':'VARCHAR','v2':'DOUBLE'}`,
  big: `{'id1':'BIGINT','id2':'BIGINT','id3':'BIGINT','id4':'VARCHAR','id5':'VARCHAR','id6':'VARCHAR','v2':'DOUBLE'}`,
};

const QUESTIONS = [
  { name: 'q1 sum v1 by id1',
    plan: p(G1, [{ groupby: ['id1'], agg: ['sum(v1) as v1'] }]),
    sql: 'select id1, sum(v1)::bigint as v1 from g1 group by id1' },
  { name: 'q2 sum v1 by id1:id2',
    plan: p(G1, [{ groupby: ['id1', 'id2'], agg: ['sum(v1) as v1'] }]),
    sql: 'select id1, id2, sum(v1)::bigint as v1 from g1 group by id1, id2' },
  { name: 'q3 sum v1 mean v3 by id3',
    plan: p(G1, [{ groupby: ['id3'], agg: ['sum(v1) as v1', 'avg(v3) as v3'] }]),
    sql: 'select id3, sum(v1)::bigint as v1, avg(v3) as v3 from g1 group by id3' },
  { name: 'q4 mean v1:v3 by id4',
    plan: p(G1, [{ groupby: ['id4'], agg: ['avg(v1) as v1', 'avg(v2) as v2', 'avg(v3) as v3'] }]),
    sql: 'select id4, avg(v1) as v1, avg(v2) as v2, avg(v3) as v3 from g1 group by id4' },
  { name: 'q5 sum v1:v3 by id6',
    plan: p(G1, [{ groupby: ['id6'], agg: ['sum(v1) as v1', 'sum(v2) as v2', 'sum(v3) as v3'] }]),
    sql: 'select id6, sum(v1)::bigint as v1, sum(v2)::bigint as v2, sum(v3) as v3 from g1 group by id6' },
  { name: 'q6 median sd v3 by id4 id5',
    plan: p(G1, [{ groupby: ['id4', 'id5'], agg: ['median(v3) as median_v3', 'stddev(v3) as sd_v3'] }]),
    sql: 'select id4, id5, median(v3) as median_v3, stddev_samp(v3) as sd_v3 from g1 group by id4, id5',
    loose: ['sd_v3'] },
  { name: 'q7 max v1 - min v2 by id3',
    plan: p(G1, [{ groupby: ['id3'], agg: ['max(v1) - min(v2) as range_v1_v2'] }]),
    sql: 'select id3, max(v1) - min(v2) as range_v1_v2 from g1 group by id3' },
  { name: 'q8 largest two v3 by id6',
    plan: p(G1, [{ where: 'v3 is not null' }, { top_k: { by: ['id6'], sort: ['v3 desc'], k: 2 } },
      { select: ['id6', 'v3 as largest2_v3'] }]),
    sql: 'select id6, v3 as largest2_v3 from (select id6, v3, row_number() over (partition by id6 order by v3 desc) as order_v3 from g1 where v3 is not null) where order_v3 <= 2' },
  { name: 'q8 ordered: top_k groups in by order, then sort order', ordered: true,
    plan: p(G1, [{ where: 'v3 is not null' }, { top_k: { by: ['id6'], sort: ['v3 desc'], k: 2 } },
      { select: ['id6', 'v3 as largest2_v3'] }]),
    sql: 'select id6, v3 as largest2_v3 from (select id6, v3, row_number() over (partition by id6 order by v3 desc) as order_v3 from g1 where v3 is not null) where order_v3 <= 2 order by id6, largest2_v3 desc' },
  { name: 'q9 regression v1 v2 by id2 id4',
    plan: p(G1, [{ groupby: ['id2', 'id4'], agg: ['corr(v1, v2) * corr(v1, v2) as r2'] }]),
    sql: 'select id2, id4, power(corr(v1, v2), 2) as r2 from g1 group by id2, id4',
    loose: ['r2'] },
  { name: 'q10 sum v3 count by id1:id6',
    plan: p(G1, [{ groupby: ['id1', 'id2', 'id3', 'id4', 'id5', 'id6'], agg: ['sum(v3) as v3', 'count(*) as count'] }]),
    sql: 'select id1, id2, id3, id4, id5, id6, sum(v3) as v3, count(*) as count from g1 group by id1, id2, id3, id4, id5, id6' },
  // Joins with "on": the key is kept once; right columns whose names clash get _right.
  { name: 'j1 small inner on int', ndjson: true,
    plan: p(X, [{ join: { right: { source: { path: 'small.csv' } }, on: ['id1'], how: 'inner' } }]),
    sql: 'select x.*, small.id4 as id4_right, small.v2 from x join small on x.id1 = small.id1' },
  { name: 'j2 medium inner on int', ndjson: true,
    plan: p(X, [{ join: { right: { source: { path: 'medium.csv' } }, on: ['id2'], how: 'inner' } }]),
    sql: 'select x.*, medium.id1 as id1_right, medium.id4 as id4_right, medium.id5 as id5_right, medium.v2 from x join medium on x.id2 = medium.id2' },
  { name: 'j3 medium outer (left) on int', ndjson: true,
    plan: p(X, [{ join: { right: { source: { path: 'medium.csv' } }, on: ['id2'], how: 'left' } }]),
    sql: 'select x.*, medium.id1 as id1_right, medium.id4 as id4_right, medium.id5 as id5_right, medium.v2 from x left join medium on x.id2 = medium.id2' },
  { name: 'j4 medium inner on factor (string)', ndjson: true,
    plan: p(X, [{ join: { right: { source: { path: 'medium.csv' } }, on: ['id5'], how: 'inner' } }]),
    sql: 'select x.*, medium.id1 as id1_right, medium.id2 as id2_right, medium.id4 as id4_right, medium.v2 from x join medium on x.id5 = medium.id5' },
  { name: 'j5 big inner on int', ndjson: true,
    plan: p(X, [{ join: { right: { source: { path: 'big.csv' } }, on: ['id3'], how: 'inner' } }]),
    sql: 'select x.*, big.id1 as id1_right, big.id2 as id2_right, big.id4 as id4_right, big.id5 as id5_right, big.id6 as id6_right, big.v2 from x join big on x.id3 = big.id3' },
  // A few more.
  { name: 'filter and project',
    plan: p(G1, [{ where: "v3 > 50 and (id1 = 'id042' or id4 between 10 and 12) and v2 is not null" },
      { select: ['id3', 'v1 * 2 as v1x2', 'v3 + v2 as s', 'v1 / v2 as ratio', "coalesce(id2, 'none') as id2"] }]),
    sql: "select id3, v1 * 2 as v1x2, v3 + v2 as s, v1 / v2 as ratio, coalesce(id2, 'none') as id2 from g1 where v3 > 50 and (id1 = 'id042' or id4 between 10 and 12) and v2 is not null" },
  { name: 'sort with limit', ordered: true,
    plan: p(G1, [{ sort: ['v3 desc', 'id3', 'id4', 'id5', 'id6', 'v1', 'v2', 'id1', 'id2'] }, { limit: 25 }]),
    sql: 'select * from g1 order by v3 desc nulls last, id3 nulls last, id4 nulls last, id5 nulls last, id6 nulls last, v1 nulls last, v2 nulls last, id1 nulls last, id2 nulls last limit 25' },
  { name: 'sort with offset and limit, nulls first', ordered: true,
    plan: p(X, [{ sort: ['v1 nulls first', 'id3'] }, { offset: 100 }, { limit: 50 }]),
    sql: 'select * from x order by v1 nulls first, id3 limit 50 offset 100' },
  { name: 'distinct',
    plan: p(G1, [{ select: ['id1', 'id4'] }, { distinct: [] }]),
    sql: 'select distinct id1, id4 from g1' },
  { name: 'global aggregates',
    plan: p(G1, [{ agg: ['count(*) as n', 'count(v3) as nv3', 'count_distinct(id3) as d3', 'sum(v2) as s2', 'min(v3) as mn', 'max(id3) as mx', 'stddev(v3) as sd'] }]),
    sql: 'select count(*) as n, count(v3) as nv3, count(distinct id3) as d3, sum(v2)::bigint as s2, min(v3) as mn, max(id3) as mx, stddev_samp(v3) as sd from g1',
    loose: ['sd'] },
];

// ---------------------------------------------------------------- comparing
function norm(v) {
  if (typeof v === 'bigint') return Number(v);
  if (typeof v === 'number' && Number.isNaN(v)) return null; // framed writes non-finite as null
  return v ?? null;
}
function sortKey(row) {
  return JSON.stringify(row.map((v) => (typeof v === 'number' && !Number.isInteger(v) ? v.toPrecision(9) : v)));
}
function sortRows(rows) {
  return rows.map((r) => [sortKey(r), r]).sort((a, b) => (a[0] < b[0] ? -1 : a[0] > b[0] ? 1 : 0)).map((x) => x[1]);
}
function close(a, b, tol) {
  if (a === b) return true;
  if (typeof a !== 'number' || typeof b !== 'number') return false;
  return Math.abs(a - b) <= tol * Math.max(Math.abs(a), Math.abs(b), tol === LOOSE ? 1 : 1e-3);
}
function compareResults(q, got, want) {
  assert.deepEqual(got.columns, want.columns, `${q.name}: column names`);
  assert.equal(got.rows.length, want.rows.length, `${q.name}: row count`);
  const a = q.ordered ? got.rows : sortRows(got.rows);
  const b = q.ordered ? want.rows : sortRows(want.rows);
  const tols = want.columns.map((c) => ((q.loose ?? []).includes(c) ? LOOSE : TIGHT));
  let bad = 0;
  const shown = [];
  for (let i = 0; i < a.length; i++) {
    if (a[i].some((v, j) => !close(v, b[i][j], tols[j]))) {
      bad++;
      if (shown.length < 5) shown.push(`row ${i}: framed ${JSON.stringify(a[i])} duckdb ${JSON.stringify(b[i])}`);
    }
  }
  assert.equal(bad, 0, `${q.name}: ${bad} of ${a.length} rows differ:\n${shown.join('\n')}`);
}

// ---------------------------------------------------------------- running
async function framedRun(srv, q) {
  let r = await call(srv.base, 'POST', '/v1/queries?wait=120', { json: { plan: q.plan } });
  assert.ok(r.status === 200 || r.status === 201 || r.status === 202, `${q.name}: POST /v1/queries ${r.status} ${r.text}`);
  const id = r.body.id;
  const deadline = Date.now() + 120000;
  while (!['succeeded', 'failed', 'cancelled'].includes(r.body.state)) {
    assert.ok(Date.now() < deadline, `${q.name}: query ${id} still ${r.body.state}`);
    await new Promise((res) => setTimeout(res, 100));
    r = await call(srv.base, 'GET', `/v1/queries/${id}`);
  }
  assert.equal(r.body.state, 'succeeded', `${q.name}: ${JSON.stringify(r.body.error)}`);
  if (q.ndjson) {
    const res = await call(srv.base, 'GET', `/v1/queries/${id}/result`, { headers: { accept: 'application/x-ndjson' } });
    assert.equal(res.status, 200, res.text);
    assert.match(res.headers.get('content-type') ?? '', /ndjson/);
    const objs = res.text.split('\n').filter((l) => l.length).map((l) => JSON.parse(l));
    // Column names and order from a zero-row JSON page.
    const head = await call(srv.base, 'GET', `/v1/queries/${id}/result?limit=0`);
    assert.equal(head.status, 200, head.text);
    const columns = head.body.columns.map((c) => c.name);
    assert.equal(head.body.total_rows, objs.length, `${q.name}: NDJSON lines vs total_rows`);
    return { columns, rows: objs.map((o) => columns.map((c) => norm(o[c]))) };
  }
  const res = await call(srv.base, 'GET', `/v1/queries/${id}/result`);
  assert.equal(res.status, 200, res.text);
  assert.equal(res.body.total_rows, res.body.rows.length);
  return { columns: res.body.columns.map((c) => c.name), rows: res.body.rows.map((r) => r.map(norm)) };
}

let duck; // {con}
let dataRoot;
const files = {};
const expected = new Map();

before(async () => {
  const t0 = Date.now();
  files['G1.csv'] = groupbyCsv(N, 100, 1);
  const j = joinCsvs(N, 2);
  for (const k of ['x', 'small', 'medium', 'big']) files[`${k}.csv`] = j[k];
  dataRoot = mkdtempSync(path.join(tmpdir(), 'framed-diff-'));
  for (const [name, text] of Object.entries(files)) writeFileSync(path.join(dataRoot, name), text);
  const { DuckDBInstance } = await loadDuckDb();
  const inst = await DuckDBInstance.create(':memory:', { threads: '2' });
  const con = await inst.connect();
  const read = (f, cols) => `read_csv('${path.join(dataRoot, f)}', header=true, nullstr='', auto_detect=false, columns=${cols})`;
  await con.run(`create table g1 as select * from ${read('G1.csv', G1_COLS)}`);
  for (const k of ['x', 'small', 'medium', 'big']) await con.run(`create table ${k} as select * from ${read(`${k}.csv`, J_COLS[k])}`);
  duck = { inst, con };
  for (const q of QUESTIONS) {
    const r = await con.runAndReadAll(q.sql);
    expected.set(q.name, { columns: r.columnNames(), rows: r.getRows().map((row) => row.map(norm)) });
  }
  console.log(`# differential: N=${N}, data and DuckDB answers in ${Date.now() - t0} ms`);
});

after(() => {
  duck?.con?.closeSync?.();
  if (dataRoot) rmSync(dataRoot, { recursive: true, force: true });
});

test('the generated tables have the benchmark shape', async () => {
  const { con } = duck;
  const one = async (sql) => (await con.runAndReadAll(sql)).getRows()[0].map(norm);
  const [n, d1, d3, d6, nulls, mn3, mx3, mnv1, mxv1, mxv2] = await one(
    'select count(*), count(distinct id1), count(distinct id3), max(id6), count(*) - count(v3), min(v3), max(v3), min(v1), max(v1), max(v2) from g1');
  assert.equal(n, N);
  assert.equal(d1, 100);
  assert.ok(d3 > 0.9 * (N / 100) && d3 <= N / 100, `id3 has ${d3} values`);
  assert.equal(d6, N / 100);
  assert.ok(nulls > 0.03 * N && nulls < 0.07 * N, `v3 has ${nulls} nulls`);
  assert.ok(mn3 >= 0 && mx3 <= 100 && mnv1 === 1 && mxv1 === 5 && mxv2 === 15);
  const [xn, matched5] = await one('select count(*), count(big.id3) from x left join big on x.id3 = big.id3');
  assert.equal(xn, N);
  assert.ok(matched5 > 0.85 * N && matched5 < 0.95 * N, `j5 matches ${matched5} of ${N}`);
  const [sn, mn] = await one('select (select count(*) from small), (select count(*) from medium)');
  assert.equal(sn, Math.max(10, Math.round(N / 1e6)));
  assert.equal(mn, Math.max(10, Math.round(N / 1e3)));
});

for (const [label, config] of [['default config', null], ['many tasks and shuffles', FORCED_CONFIG]]) {
  test(`framed agrees with DuckDB: ${label}`, async (t) => {
    const srv = await startServer();
    try {
      mkdirSync(srv.dataDir, { recursive: true });
      for (const [name, text] of Object.entries(files)) writeFileSync(path.join(srv.dataDir, name), text);
      if (config) {
        const r = await call(srv.base, 'POST', '/v1/config', { json: config });
        assert.equal(r.status, 200, r.text);
      }
      for (const q of QUESTIONS) {
        await t.test(q.name, async () => {
          const t0 = Date.now();
          const got = await framedRun(srv, q);
          compareResults(q, got, expected.get(q.name));
          t.diagnostic(`${q.name}: ${got.rows.length} rows in ${Date.now() - t0} ms`);
        });
      }
      // Every question ran under the config set above: the runner froze it.
      const runner = await call(srv.base, 'GET', '/v1/runner');
      assert.equal(runner.status, 200, runner.text);
      const frozen = await call(srv.base, 'GET', `/v1/configs/${encodeURIComponent(runner.body.config_id)}`);
      assert.equal(frozen.status, 200, frozen.text);
      const values = frozen.body.values ?? frozen.body;
      for (const [k, v] of Object.entries(config ?? {})) assert.equal(values[k], v, `frozen ${k}: ${frozen.text}`);
    } finally {
      await srv.stop();
    }
  });
}
