// window: the window plan op over real HTTP. The same plans over a file cut
// into many scan tasks give the same rows on the local runner and on the
// remote runner with two workers (rows of one partition meet in one task
// after the hash exchange), agree with DuckDB, explain shows the stages and
// the optimizer's choices, and bad windows get problem replies.
import assert from 'node:assert/strict';
import { writeFileSync } from 'node:fs';
import path from 'node:path';
import { test } from 'node:test';
import { assertProblem, call, startServer, startWorker } from './lib.mjs';
import { loadDuckDb } from './sql_lib.mjs';

const SPREAD = { scan_tasks_max_size_bytes: 2048, scan_tasks_min_size_bytes: 1, shuffle_partitions: 4, maintain_order: false };

// 2000 rows: k (20 partitions, some null), t (order key with ties and nulls),
// id (unique), v (int with nulls), f (float), s (string).
function makeCsv() {
  let seed = 7;
  const rnd = (n) => { seed = (Math.imul(seed, 1664525) + 1013904223) >>> 0; return Math.floor((seed / 4294967296) * n); };
  const lines = ['k,t,id,v,f,s'];
  for (let i = 0; i < 2000; i++) {
    const k = rnd(25) === 0 ? '' : `k${rnd(20)}`;
    const t = rnd(11) === 0 ? '' : String(rnd(30));
    const v = rnd(9) === 0 ? '' : String(rnd(1000) - 500);
    lines.push(`${k},${t},${i},${v},${(rnd(4000) / 8).toFixed(3)},s${rnd(50)}`);
  }
  return lines.join('\n') + '\n';
}

const src = { dataset: 'w' };
const win = (spec, ops = []) => ({ source: src, ops: [{ window: spec }, ...ops] });
const PLANS = {
  ranks: win({ partition_by: ['k'], order_by: ['t', 'id'], functions: ['row_number() as rn', 'rank() as r0', 'dense_rank() as dr'] }),
  ties: win({ partition_by: ['k'], order_by: ['t desc'], functions: ['rank() as r', 'dense_rank() as dr', 'count(*) as c', 'sum(v) as sv', 'min(s) as mn', 'max(v) as mx'] }),
  shift: win({ partition_by: ['k'], order_by: ['id'], functions: ['lag(v) as p', 'lag(v, 3, 0) as p3', 'lead(s, 2) as n2', 'lead(id, 0) as same'] }),
  whole: win({ partition_by: ['k'], functions: ['sum(v) as total', 'count(v) as nv', 'count(*) as n', 'max(s) as ms'] }),
  one: win({ order_by: ['t nulls first', 'id'], functions: ['row_number() as rn', 'sum(v) as rs', 'count(*) as c'] }),
  expr: win({ partition_by: ['id % 7'], order_by: ['length(s) desc', 'id'], functions: ['sum(v * 2) as s2', 'rank() as r', 'lag(upper(s)) as pu'] }),
  filtered: win({ partition_by: ['k'], order_by: ['id'], functions: ['row_number() as rn'] }, [{ where: "k = 'k3'" }, { where: 'rn <= 5' }]),
};
// The same in SQL for DuckDB (integer-valued functions: compared exactly).
const SQL = {
  ranks: 'select *, row_number() over w as rn, rank() over w as r0, dense_rank() over w as dr from w window w as (partition by k order by t, id)',
  ties: 'select *, rank() over w as r, dense_rank() over w as dr, count(*) over w as c, sum(v) over w as sv, min(s) over w as mn, max(v) over w as mx from w window w as (partition by k order by t desc)',
  shift: 'select *, lag(v) over w as p, lag(v, 3, 0) over w as p3, lead(s, 2) over w as n2, lead(id, 0) over w as same from w window w as (partition by k order by id)',
  whole: 'select *, sum(v) over w as total, count(v) over w as nv, count(*) over w as n, max(s) over w as ms from w window w as (partition by k)',
  one: 'select *, row_number() over w as rn, sum(v) over w as rs, count(*) over w as c from w window w as (order by t nulls first, id)',
  filtered: "select * from (select *, row_number() over (partition by k order by id) as rn from w) where k = 'k3' and rn <= 5",
};

async function rowsOf(base, plan) {
  const r = await call(base, 'POST', '/v1/queries?wait=120', { json: { plan } });
  assert.equal(r.status, 200, r.text);
  assert.equal(r.body.state, 'succeeded', JSON.stringify(r.body.error));
  const res = await call(base, 'GET', `/v1/queries/${r.body.id}/result`);
  assert.equal(res.status, 200, res.text);
  return { rows: res.body.rows, columns: res.body.columns };
}

const canon = (rows) => rows.map((r) => JSON.stringify(r)).sort();

async function startCluster(nworkers) {
  const coord = await startServer({ args: ['--runner', 'remote'] });
  const workers = [];
  for (let i = 0; i < nworkers; i++) workers.push(await startWorker(coord.base, { args: ['--threads', '2', '--data-dir', coord.dataDir] }));
  for (let i = 0; i < 100; i++) {
    const r = await call(coord.base, 'GET', '/v1/workers');
    if (r.status === 200 && r.body.workers.filter((w) => w.state === 'active').length === nworkers) break;
    await new Promise((res) => setTimeout(res, 100));
  }
  return { coord, async stop() { for (const w of workers) await w.stop(); await coord.stop(); } };
}

test('window plans: local == remote with two workers == DuckDB', async () => {
  const csv = makeCsv();
  const local = await startServer();
  const cluster = await startCluster(2);
  try {
    for (const srv of [local, cluster.coord]) {
      writeFileSync(path.join(srv.dataDir, 'w.csv'), csv);
      const r = await call(srv.base, 'POST', '/v1/config', { json: SPREAD });
      assert.equal(r.status, 200, r.text);
    }
    const { DuckDBInstance } = await loadDuckDb();
    const duck = await (await DuckDBInstance.create(':memory:', { threads: '1' })).connect();
    await duck.run(`create view w as select * from read_csv('${path.join(local.dataDir, 'w.csv')}', header = true, ` +
      "columns = {'k': 'VARCHAR', 't': 'BIGINT', 'id': 'BIGINT', 'v': 'BIGINT', 'f': 'DOUBLE', 's': 'VARCHAR'})");
    for (const [name, plan] of Object.entries(PLANS)) {
      const mine = await rowsOf(local.base, plan);
      const remote = await rowsOf(cluster.coord.base, plan);
      assert.deepEqual(remote.columns, mine.columns, name);
      assert.ok(mine.rows.length > 0, `${name}: no rows`);
      assert.deepEqual(canon(remote.rows), canon(mine.rows), `${name}: remote differs from local`);
      if (!SQL[name]) continue;
      const d = await duck.runAndReadAll(SQL[name]);
      assert.deepEqual(mine.columns.map((c) => c.name), d.columnNames(), name);
      const want = d.getRows().map((row) => row.map((v) => (typeof v === 'bigint' ? Number(v) : v)));
      assert.deepEqual(canon(mine.rows), canon(want), `${name}: differs from DuckDB`);
    }
  } finally {
    await cluster.stop();
    await local.stop();
  }
});

test('explain: a window hash-partitions by its keys; a filter passes it only on partition keys', async () => {
  const srv = await startServer();
  try {
    writeFileSync(path.join(srv.dataDir, 'w.csv'), makeCsv());
    await call(srv.base, 'POST', '/v1/config', { json: SPREAD });
    let r = await call(srv.base, 'POST', '/v1/dataframes', { json: PLANS.filtered });
    assert.equal(r.status, 201, r.text);
    r = await call(srv.base, 'GET', `/v1/dataframes/${r.body.id}/explain`);
    assert.equal(r.status, 200, r.text);
    const stages = r.body.physical.stages;
    assert.ok(stages[0].tasks > 1, 'the scan is cut into several tasks');
    assert.deepEqual(stages[0].sink, { op: 'hash_partition', keys: ['k'], buckets: 4 });
    assert.equal(stages[0].pipeline[0].filter, "k = 'k3'", 'the partition-key filter runs before the exchange');
    const w = stages.find((s) => s.kind === 'window');
    assert.equal(w.tasks, 4);
    assert.deepEqual(w.pipeline.map((op) => Object.keys(op)[0]), ['window', 'filter']);
    assert.equal(w.pipeline[1].filter, 'rn <= 5', 'a filter on a function value stays after the window');
    const decisions = r.body.decisions.map((d) => d.decision).join('\n');
    assert.match(decisions, /predicate 'k = 'k3'' moved below the window/);
    assert.doesNotMatch(decisions, /predicate 'rn <= 5' moved/);
    assert.match(decisions, /window: .* hash-repartitioned by the partition keys into 4 partitions/);
    // projection push-down through the window: the select after it needs k
    // and sv, so the scan reads k (key) and v (argument): 2 of 6 columns
    r = await call(srv.base, 'POST', '/v1/dataframes', { json: win({ partition_by: ['k'], functions: ['sum(v) as sv'] }, [{ select: ['k', 'sv'] }]) });
    assert.equal(r.status, 201, r.text);
    r = await call(srv.base, 'GET', `/v1/dataframes/${r.body.id}/explain`);
    assert.deepEqual(r.body.physical.stages[0].inputs.find((i) => i.kind === 'file').columns, ['k', 'v']);
    r = await call(srv.base, 'POST', '/v1/dataframes', { json: PLANS.one });
    r = await call(srv.base, 'GET', `/v1/dataframes/${r.body.id}/explain`);
    const g = r.body.physical.stages.find((s) => s.kind === 'window');
    assert.equal(g.tasks, 1, 'without partition_by one task sees every row');
    assert.deepEqual(g.core, { op: 'concat' });
  } finally {
    await srv.stop();
  }
});

test('bad windows get problem replies and run nothing', async () => {
  const srv = await startServer();
  try {
    writeFileSync(path.join(srv.dataDir, 'w.csv'), makeCsv());
    const q = (spec) => call(srv.base, 'POST', '/v1/queries?wait=10', { json: { plan: win(spec) } });
    let r = await q({ partition_by: ['k'], functions: ['rnak() as r'] });
    assertProblem(r, 400, 'invalid-expression');
    assert.match(r.body.detail, /did you mean 'rank'/);
    r = await q({ order_by: ['id'], functions: ["lag(v, 1, 'x') as p"] });
    assertProblem(r, 400, 'invalid-plan');
    assert.match(r.body.detail, /lag default ''x'' is string, but its argument is int64/);
    r = await q({ order_by: ['id'], functions: ['lead(v, 2000000)'] });
    assertProblem(r, 400, 'invalid-plan');
    r = await q({ partition_by: ['kk'], functions: ['count(*) as n'] });
    assertProblem(r, 400, 'invalid-expression');
    assert.match(r.body.detail, /did you mean 'k'/);
    r = await q({ functions: [] });
    assertProblem(r, 400, 'invalid-plan');
    r = await q({ functions: Array.from({ length: 257 }, (_, i) => `count(*) as c${i}`) });
    assertProblem(r, 400, 'invalid-plan');
    r = await q({ functions: ['count(*) as n'], frame: 'rows' });
    assertProblem(r, 400, 'invalid-plan');
    assert.match(r.body.detail, /unknown member 'frame'/);
    r = await q({ functions: ['count(*) as id'] });
    assertProblem(r, 400, 'invalid-plan');
    r = await call(srv.base, 'GET', '/v1/queries');
    assert.equal(r.status, 200);
    assert.equal((r.body.queries ?? []).length, 0, 'no query was run');
  } finally {
    await srv.stop();
  }
});
