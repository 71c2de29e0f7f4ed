// parquet_datasets: Parquet files as datasets and scans, over real HTTP.
// Files are written by DuckDB (@duckdb/node-api) in the test, into the data
// dir or uploaded by PUT: the listing shows their footer's schema, rows and
// row groups; queries (filter, groupby, sort, a join with a CSV dataset)
// equal DuckDB's answers on the same file; scan tasks are row groups merged
// by the scan size settings; explain names the row groups that statistics
// skip (and the answer stays right, also when every group is skipped);
// projection reads fewer bytes; truncated and corrupt files fail the query
// with 422 naming file, row group and column and the server lives on; a bad
// upload is refused and stores nothing, a good one replaces; and a cluster
// whose workers read the file locally or by range from the coordinator
// gives the same answers.
import assert from 'node:assert/strict';
import { createRequire } from 'node:module';
import { copyFileSync, mkdirSync, readFileSync, readdirSync, rmSync, statSync, utimesSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { test } from 'node:test';
import { assertProblem, call, SOURCE_DIR, startServer, startWorker, tempRoot } from './lib.mjs';

async function loadDuckDb() {
  try {
    return await import('@duckdb/node-api');
  } catch {
    const require = createRequire(path.join(SOURCE_DIR, 'package.json'));
    return await import(require.resolve('@duckdb/node-api'));
  }
}

const { DuckDBInstance } = await loadDuckDb();
const duck = await (await DuckDBInstance.create(':memory:', { threads: '1' })).connect();

// 16000 trips in id order, so fare (id / 10, null every 11th) rises with the
// row groups: 8 groups of 2048 rows (DuckDB's smallest), the last of 1664.
const ROWS = 16000;
const TRIPS_SQL = `select i as id, ['CMT','VTS','DDS'][i % 3 + 1] as vendor,
  case when i % 11 = 0 then null else i / 10.0 end::DOUBLE as fare,
  DATE '2024-01-01' + (i // 100)::INTEGER as d,
  TIMESTAMP '2024-01-01 00:00:00' + to_seconds(i * 60) as ts
  from range(${ROWS}) t(i)`;

async function writeParquet(file, sql = TRIPS_SQL, opts = 'ROW_GROUP_SIZE 2048, COMPRESSION snappy') {
  await duck.run(`COPY (${sql}) TO '${file}' (FORMAT parquet, ${opts})`);
}

// DuckDB's rows of a query over the file, as framed prints them (dates
// YYYY-MM-DD, timestamps ISO with Z, ints as numbers).
async function duckRows(sql) {
  const r = await duck.runAndReadAll(sql);
  return r.getRows().map((row) => row.map((v) => (typeof v === 'bigint' ? Number(v) : v)));
}

const VENDORS_CSV = 'vendor,name\nCMT,Creative\nVTS,VeriFone\n';

async function runPlan(base, plan) {
  const r = await call(base, 'POST', '/v1/queries?wait=120', { json: { plan } });
  assert.ok(r.status === 200 || r.status === 202, r.text);
  assert.equal(r.body.state, 'succeeded', JSON.stringify(r.body.error));
  const res = await call(base, 'GET', `/v1/queries/${r.body.id}/result`);
  assert.equal(res.status, 200, res.text);
  return { id: r.body.id, rows: res.body.rows, columns: res.body.columns };
}

async function failedPlan(base, plan) {
  const r = await call(base, 'POST', '/v1/queries?wait=120', { json: { plan } });
  assert.ok(r.status === 200 || r.status === 202, r.text);
  assert.equal(r.body.state, 'failed', r.text);
  return r.body.error;
}

// Floats to 9 significant digits (sums may add in another order).
const norm = (rows) => rows.map((r) => JSON.stringify(r.map((v) => (typeof v === 'number' && !Number.isInteger(v) ? Number(v.toPrecision(9)) : v))));
const canon = (rows) => norm(rows).sort();

async function explain(base, plan) {
  let r = await call(base, 'POST', '/v1/dataframes', { json: plan });
  assert.equal(r.status, 201, r.text);
  r = await call(base, 'GET', `/v1/dataframes/${r.body.id}/explain`);
  assert.equal(r.status, 200, r.text);
  return r.body;
}

async function scanBytes(base, id) {
  const r = await call(base, 'GET', `/v1/queries/${id}/stages`);
  assert.equal(r.status, 200, r.text);
  const scans = r.body.stages.filter((s) => s.label.startsWith('scan'));
  assert.ok(scans.length > 0, JSON.stringify(r.body.stages.map((s) => s.label)));
  return scans.reduce((a, s) => a + s.bytes_in, 0);
}

test('a parquet file in the data dir is listed with its footer schema, rows and row groups', async () => {
  const srv = await startServer();
  try {
    await writeParquet(path.join(srv.dataDir, 'trips.parquet'));
    let r = await call(srv.base, 'GET', '/v1/datasets');
    assert.equal(r.status, 200, r.text);
    const d = r.body.datasets.find((x) => x.name === 'trips');
    assert.ok(d, r.text);
    assert.equal(d.format, 'parquet');
    assert.equal(d.rows, ROWS);
    assert.equal(d.row_groups, 8);
    assert.deepEqual(d.schema, [
      { name: 'id', type: 'int64' }, { name: 'vendor', type: 'string' }, { name: 'fare', type: 'float64' },
      { name: 'd', type: 'date' }, { name: 'ts', type: 'timestamp' }]);
    r = await call(srv.base, 'GET', '/v1/datasets/trips');
    assert.equal(r.status, 200, r.text);
    assert.equal(r.body.bytes, statSync(path.join(srv.dataDir, 'trips.parquet')).size);
    assert.equal(r.body.row_groups, 8);
    // a preview reads it like any dataset
    r = await call(srv.base, 'POST', '/v1/dataframes', { json: { source: { dataset: 'trips' }, ops: [{ sort: ['id'] }] } });
    assert.equal(r.status, 201, r.text);
    assert.deepEqual(r.body.preview[0], [0, 'CMT', null, '2024-01-01', '2024-01-01T00:00:00Z']);
    // a path source with the extension, and type hints refused
    const q = await runPlan(srv.base, { source: { path: 'trips.parquet' }, ops: [{ agg: ['count(*) as n'] }] });
    assert.deepEqual(q.rows, [[ROWS]]);
    r = await call(srv.base, 'POST', '/v1/dataframes', { json: { source: { dataset: 'trips', schema: { id: 'string' } } } });
    assertProblem(r, 400, 'invalid-plan');
    assert.match(r.body.detail, /footer/);
  } finally {
    await srv.stop();
  }
});

test('queries on a parquet dataset equal DuckDB on the same file', async () => {
  const srv = await startServer();
  try {
    const file = path.join(srv.dataDir, 'trips.parquet');
    await writeParquet(file);
    writeFileSync(path.join(srv.dataDir, 'vendors.csv'), VENDORS_CSV);
    await call(srv.base, 'POST', '/v1/config', { json: { scan_tasks_max_size_bytes: 20000, scan_tasks_min_size_bytes: 1, shuffle_partitions: 3, maintain_order: false } });
    const src = `read_parquet('${file}')`;
    const cases = [
      [{ ops: [{ where: 'fare > 700 and vendor = \'VTS\'' }, { select: ['id', 'fare'] }] },
        `select id, fare from ${src} where fare > 700 and vendor = 'VTS'`],
      [{ ops: [{ groupby: ['vendor'], agg: ['count(*) as n', 'sum(fare) as total', 'count(fare) as nf', 'max(d) as last'] }] },
        `select vendor, count(*), sum(fare), count(fare), strftime(max(d), '%Y-%m-%d') from ${src} group by vendor`],
      [{ ops: [{ where: 'fare is null' }, { sort: ['id desc'] }, { limit: 5 }, { select: ['id'] }] },
        `select id from ${src} where fare is null order by id desc limit 5`, true],
      [{ ops: [{ join: { right: { source: { dataset: 'vendors' } }, on: ['vendor'] } }, { groupby: ['name'], agg: ['count(*) as n'] }] },
        `select name, count(*) from ${src} join read_csv('${path.join(srv.dataDir, 'vendors.csv')}') using (vendor) group by name`],
      [{ ops: [{ where: 'd between date \'2024-03-01\' and date \'2024-03-02\'' }, { agg: ['count(*) as n', 'min(ts) as first'] }] },
        `select count(*), strftime(min(ts), '%Y-%m-%dT%H:%M:%SZ') from ${src} where d between DATE '2024-03-01' and DATE '2024-03-02'`],
    ];
    for (const [ops, sql, ordered] of cases) {
      const got = await runPlan(srv.base, { source: { dataset: 'trips' }, ...ops });
      const want = await duckRows(sql);
      if (ordered) assert.deepEqual(norm(got.rows), norm(want), sql);
      else assert.deepEqual(canon(got.rows), canon(want), sql);
    }
  } finally {
    await srv.stop();
  }
});

test('scan tasks are row groups, merged up to the max and never split', async () => {
  const srv = await startServer();
  try {
    await writeParquet(path.join(srv.dataDir, 'trips.parquet'));
    await call(srv.base, 'POST', '/v1/config', { json: { scan_tasks_max_size_bytes: 1, scan_tasks_min_size_bytes: 1 } });
    const plan = { source: { dataset: 'trips' }, ops: [{ agg: ['count(*) as n', 'sum(id) as s'] }] };
    const ex = await explain(srv.base, plan);
    assert.equal(ex.physical.stages[0].tasks, 8, 'one task per row group under a 1-byte max');
    const decisions = ex.decisions.map((d) => d.decision).join('\n');
    assert.match(decisions, /row group 0 \(.*\) is larger than scan_tasks_max_size_bytes 1 B: a row group is never split/);
    const q = await runPlan(srv.base, plan);
    assert.deepEqual(q.rows, [[ROWS, (ROWS * (ROWS - 1)) / 2]]);
  } finally {
    await srv.stop();
  }
  const big = await startServer();
  try {
    await writeParquet(path.join(big.dataDir, 'trips.parquet'));
    const ex = await explain(big.base, { source: { dataset: 'trips' } });
    assert.equal(ex.physical.stages[0].tasks, 1, 'the default max merges every row group into one task');
    assert.match(ex.decisions.map((d) => d.decision).join('\n'), /8 of 8 row groups .* in 1 task/);
  } finally {
    await big.stop();
  }
});

test('statistics skip row groups; explain names them and the answer stays right', async () => {
  const srv = await startServer();
  try {
    const file = path.join(srv.dataDir, 'trips.parquet');
    await writeParquet(file);
    await call(srv.base, 'POST', '/v1/config', { json: { scan_tasks_max_size_bytes: 1, scan_tasks_min_size_bytes: 1 } });
    // fare of group k lies in [204.8 k, 204.8 (k + 1)): fare > 1300 leaves groups 6 and 7
    const plan = { source: { dataset: 'trips' }, ops: [{ where: 'fare > 1300' }, { agg: ['count(*) as n', 'sum(fare) as total'] }] };
    const ex = await explain(srv.base, plan);
    const decisions = ex.decisions.map((d) => d.decision);
    assert.ok(decisions.includes('scan of trips: 6 of 8 row groups skipped by statistics (fare > 1300): 0, 1, 2, 3, 4, 5'), decisions.join('\n'));
    assert.equal(ex.physical.stages[0].tasks, 2);
    const q = await runPlan(srv.base, plan);
    assert.deepEqual(norm(q.rows), norm(await duckRows(`select count(*), sum(fare) from read_parquet('${file}') where fare > 1300`)));
    // the query's stages say it too
    const st = await call(srv.base, 'GET', `/v1/queries/${q.id}/stages`);
    assert.equal(st.status, 200, st.text);
    assert.ok(st.body.stages[0].decisions.some((d) => /6 of 8 row groups skipped by statistics \(fare > 1300\): 0, 1, 2, 3, 4, 5/.test(d.decision)), JSON.stringify(st.body.stages[0].decisions));
    // a filter the statistics cannot judge skips nothing, and still filters
    const ex2 = await explain(srv.base, { source: { dataset: 'trips' }, ops: [{ where: 'fare + 1 > 1300' }] });
    assert.ok(ex2.decisions.some((d) => d.decision.startsWith('scan of trips: 0 of 8 row groups skipped')), JSON.stringify(ex2.decisions));
    // in, between on dates, is null
    const ex3 = await explain(srv.base, { source: { dataset: 'trips' }, ops: [{ where: 'id in (5, 15999)' }, { where: 'd >= date \'2024-01-01\'' }] });
    assert.ok(ex3.decisions.some((d) => /6 of 8 row groups skipped .*: 1, 2, 3, 4, 5, 6$/.test(d.decision)), JSON.stringify(ex3.decisions));
    const inq = await runPlan(srv.base, { source: { dataset: 'trips' }, ops: [{ where: 'id in (5, 15999)' }, { select: ['id'] }, { sort: ['id'] }] });
    assert.deepEqual(inq.rows, [[5], [15999]]);
    // every group skipped: an empty result with the schema
    const none = await runPlan(srv.base, { source: { dataset: 'trips' }, ops: [{ where: 'fare > 100000' }] });
    assert.deepEqual(none.rows, []);
    assert.deepEqual(none.columns.map((c) => c.name), ['id', 'vendor', 'fare', 'd', 'ts']);
    const cnt = await runPlan(srv.base, { source: { dataset: 'trips' }, ops: [{ where: 'ts < timestamp \'2023-01-01 00:00:00\'' }, { agg: ['count(*) as n'] }] });
    assert.deepEqual(cnt.rows, [[0]]);
  } finally {
    await srv.stop();
  }
});

test('projection push-down reads only the column chunks needed', async () => {
  const srv = await startServer();
  try {
    await writeParquet(path.join(srv.dataDir, 'trips.parquet'));
    const all = await runPlan(srv.base, { source: { dataset: 'trips' }, ops: [{ agg: ['count(*) as n', 'max(vendor) as v', 'max(fare) as f', 'max(d) as d', 'max(ts) as t', 'max(id) as i'] }] });
    const one = await runPlan(srv.base, { source: { dataset: 'trips' }, ops: [{ agg: ['max(id) as i'] }] });
    assert.deepEqual(one.rows, [[ROWS - 1]]);
    const bAll = await scanBytes(srv.base, all.id), bOne = await scanBytes(srv.base, one.id);
    assert.ok(bOne > 0 && bOne * 2 < bAll, `one column read ${bOne} bytes, all read ${bAll}`);
  } finally {
    await srv.stop();
  }
});

// DuckDB's layout of a column chunk: where its first page starts.
async function chunkOffset(file, rg, column) {
  const rows = await duckRows(`select data_page_offset, coalesce(dictionary_page_offset, data_page_offset) from parquet_metadata('${file}') where row_group_id = ${rg} and path_in_schema = '${column}'`);
  return Math.min(...rows[0]);
}

test('truncated and corrupt files fail the query with 422 naming file, row group and column', async () => {
  const srv = await startServer();
  try {
    const good = path.join(srv.dataDir, 'trips.parquet');
    await writeParquet(good);
    const bytes = readFileSync(good);
    writeFileSync(path.join(srv.dataDir, 'cut.parquet'), bytes.subarray(0, Math.floor(bytes.length / 2)));
    const broken = Buffer.from(bytes);
    const at = await chunkOffset(good, 2, 'fare');
    broken.fill(0xff, at, at + 24); // the page header of row group 2's fare chunk
    writeFileSync(path.join(srv.dataDir, 'corrupt.parquet'), broken);

    let r = await call(srv.base, 'POST', '/v1/queries?wait=60', { json: { plan: { source: { dataset: 'cut' } } } });
    assert.ok(r.status === 422 || r.body?.state === 'failed', r.text);
    const cutErr = r.status === 422 ? r.body : r.body.error;
    assert.match(JSON.stringify(cutErr), /cut\.parquet/);
    assert.match(JSON.stringify(cutErr), /malformed-data/);

    // a nested column: 422 unsupported-parquet naming it, at planning
    copyFileSync(path.join(SOURCE_DIR, 'tests', 'data', 'parquet', 'nested_list.parquet'), path.join(srv.dataDir, 'nested.parquet'));
    r = await call(srv.base, 'POST', '/v1/dataframes', { json: { source: { dataset: 'nested' } } });
    assertProblem(r, 422, 'unsupported-parquet');
    assert.match(r.body.detail, /nested/);
    r = await call(srv.base, 'GET', '/v1/datasets/nested');
    assert.equal(r.status, 200, r.text);
    assert.equal(typeof r.body.schema_error, 'string');

    const err = await failedPlan(srv.base, { source: { dataset: 'corrupt' }, ops: [{ agg: ['sum(fare) as f'] }] });
    const text = JSON.stringify(err);
    assert.match(text, /malformed-data/);
    assert.match(text, /corrupt\.parquet/);
    assert.match(text, /row group 2/);
    assert.match(text, /fare/);
    // the other columns and groups still read
    const ok = await runPlan(srv.base, { source: { dataset: 'corrupt' }, ops: [{ agg: ['count(id) as n'] }] });
    assert.deepEqual(ok.rows, [[ROWS]]);
    r = await call(srv.base, 'GET', '/livez');
    assert.equal(r.status, 200);
  } finally {
    await srv.stop();
  }
});

test('PUT of a parquet file: a bad one is refused and stores nothing, a good one replaces', async () => {
  const srv = await startServer();
  const root = tempRoot();
  try {
    const file = path.join(root, 'trips.parquet');
    await writeParquet(file);
    const put = (body, type = 'application/vnd.apache.parquet') => call(srv.base, 'PUT', '/v1/datasets/trips', { body, headers: { 'content-type': type } });
    writeFileSync(path.join(srv.dataDir, 'trips.csv'), 'id,fare\n1,2.5\n');
    // a truncated file: 422, the CSV dataset intact
    let r = await put(readFileSync(file).subarray(0, 5000));
    assertProblem(r, 422, 'malformed-data');
    assert.match(r.body.detail, /trips\.parquet/);
    assert.deepEqual(readdirSync(srv.dataDir).filter((f) => !f.startsWith('.')).sort(), ['trips.csv']);
    // a nested column: 422 unsupported-parquet naming it
    r = await put(readFileSync(path.join(SOURCE_DIR, 'tests', 'data', 'parquet', 'nested_list.parquet')));
    assertProblem(r, 422, 'unsupported-parquet');
    assert.deepEqual(readdirSync(srv.dataDir).filter((f) => !f.startsWith('.')).sort(), ['trips.csv']);
    // a good one replaces the CSV
    r = await put(readFileSync(file));
    assert.equal(r.status, 200, r.text);
    assert.equal(r.body.format, 'parquet');
    assert.equal(r.body.rows, ROWS);
    assert.deepEqual(readdirSync(srv.dataDir).filter((f) => !f.startsWith('.')).sort(), ['trips.parquet']);
    const q = await runPlan(srv.base, { source: { dataset: 'trips' }, ops: [{ agg: ['count(*) as n'] }] });
    assert.deepEqual(q.rows, [[ROWS]]);
    // and a second, smaller one replaces it
    const small = path.join(root, 'small.parquet');
    await writeParquet(small, 'select 1 as id, 2.5 as fare');
    r = await put(readFileSync(small));
    assert.equal(r.status, 200, r.text);
    assert.equal(r.body.rows, 1);
    // DELETE removes it
    r = await call(srv.base, 'DELETE', '/v1/datasets/trips');
    assert.equal(r.status, 204, r.text);
    assert.deepEqual(readdirSync(srv.dataDir).filter((f) => !f.startsWith('.')), []);
    r = await put('id\n1\n', 'application/octet-stream');
    assertProblem(r, 415, 'unsupported-media-type');
    assert.match(r.body.detail, /application\/vnd\.apache\.parquet/);
  } finally {
    await srv.stop();
    rmSync(root, { recursive: true, force: true });
  }
});

async function rangeBytes(workers) {
  let n = 0;
  for (const w of workers) {
    const r = await call(w.base, 'GET', '/metrics');
    const m = /^framed_worker_range_read_bytes_total (\d+)$/m.exec(r.text);
    n += m ? Number(m[1]) : 0;
  }
  return n;
}

const MTIME = 1700000000; // whole seconds: the same mtime_ns everywhere

async function startCluster(workerData) {
  const coord = await startServer({ args: ['--runner', 'remote'] });
  const roots = [], workers = [];
  for (let i = 0; i < 2; i++) {
    const root = tempRoot();
    const dataDir = path.join(root, 'data');
    mkdirSync(dataDir, { recursive: true });
    roots.push(root);
    if (workerData) workerData(dataDir);
    workers.push(await startWorker(coord.base, { args: ['--threads', '2', '--data-dir', dataDir] }));
  }
  for (let i = 0; i < 100; i++) {
    const r = await call(coord.base, 'GET', '/v1/workers');
    if (r.status === 200 && r.body.workers.filter((w) => w.state === 'active').length === 2) break;
    await new Promise((res) => setTimeout(res, 100));
  }
  return {
    coord, workers,
    async stop() {
      for (const w of workers) await w.stop();
      await coord.stop();
      for (const r of roots) rmSync(r, { recursive: true, force: true });
    },
  };
}

test('workers read a parquet dataset locally or by range from the coordinator, with equal answers', async () => {
  const root = tempRoot();
  const file = path.join(root, 'trips.parquet');
  await writeParquet(file);
  writeFileSync(path.join(root, 'vendors.csv'), VENDORS_CSV);
  const plans = [
    { source: { dataset: 'trips' }, ops: [{ where: 'fare > 900' }, { groupby: ['vendor'], agg: ['count(*) as n', 'sum(fare) as total', 'min(ts) as first'] }] },
    { source: { dataset: 'trips' }, ops: [{ join: { right: { source: { dataset: 'vendors' } }, on: ['vendor'] } }, { groupby: ['name'], agg: ['count(*) as n', 'max(d) as d'] }] },
    { source: { dataset: 'trips' }, ops: [{ where: 'id % 1000 = 7' }, { select: ['id', 'vendor', 'ts'] }] },
  ];
  // tasks are sized by decoded bytes: 100 KB keeps several tasks on each scan
  const config = { scan_tasks_max_size_bytes: 100000, scan_tasks_min_size_bytes: 1, shuffle_partitions: 2, maintain_order: false };
  const answers = [];
  for (const withCopy of [false, true]) {
    // a worker's copy is the coordinator's file when it has its size and mtime
    const place = (dir) => {
      copyFileSync(file, path.join(dir, 'trips.parquet'));
      utimesSync(path.join(dir, 'trips.parquet'), MTIME, MTIME);
    };
    const cl = await startCluster(withCopy ? place : null);
    try {
      place(cl.coord.dataDir);
      writeFileSync(path.join(cl.coord.dataDir, 'vendors.csv'), VENDORS_CSV);
      let r = await call(cl.coord.base, 'POST', '/v1/config', { json: config });
      assert.equal(r.status, 200, r.text);
      const got = [];
      for (const plan of plans) got.push(canon((await runPlan(cl.coord.base, plan)).rows));
      answers.push(got);
      const tasks = { local: 0, remote: 0 };
      for (const w of cl.workers) {
        r = await call(w.base, 'GET', '/metrics');
        for (const src of ['local', 'remote']) {
          const m = new RegExp(`^framed_worker_scan_tasks_total\\{source="${src}"\\} (\\d+)$`, 'm').exec(r.text);
          tasks[src] += m ? Number(m[1]) : 0;
        }
      }
      if (!withCopy) { // by range: the footer and the one column's chunks, not the file
        const before = await rangeBytes(cl.workers);
        const one = await runPlan(cl.coord.base, { source: { dataset: 'trips' }, ops: [{ agg: ['max(id) as i'] }] });
        assert.deepEqual(one.rows, [[ROWS - 1]]);
        const middle = await rangeBytes(cl.workers);
        await runPlan(cl.coord.base, { source: { dataset: 'trips' }, ops: [{ agg: ['max(id) as i', 'max(vendor) as v', 'max(fare) as f', 'max(d) as d', 'max(ts) as t'] }] });
        const readOne = middle - before, readAll = (await rangeBytes(cl.workers)) - middle;
        console.log(`# by range: one column ${readOne} bytes, all five ${readAll}`);
        assert.ok(readOne > 0 && readOne * 2 < readAll, `one column took ${readOne} bytes by range, all five ${readAll}`);
      }
      // vendors.csv is only on the coordinator: always by range
      if (withCopy) assert.ok(tasks.local > 0, `workers with a copy read it: ${JSON.stringify(tasks)}`);
      else assert.ok(tasks.remote > 0 && tasks.local === 0, `workers without the file read it by range: ${JSON.stringify(tasks)}`);
    } finally {
      await cl.stop();
    }
  }
  assert.deepEqual(answers[0], answers[1]);
  // and the local runner agrees
  const srv = await startServer();
  try {
    copyFileSync(file, path.join(srv.dataDir, 'trips.parquet'));
    writeFileSync(path.join(srv.dataDir, 'vendors.csv'), VENDORS_CSV);
    const got = [];
    for (const plan of plans) got.push(canon((await runPlan(srv.base, plan)).rows));
    assert.deepEqual(got, answers[0]);
  } finally {
    await srv.stop();
    rmSync(root, { recursive: true, force: true });
  }
});
