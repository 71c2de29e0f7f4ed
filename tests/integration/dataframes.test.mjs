// dataframes: the dataframe API end to end: dataset uploads (atomic, listed
// with their schema), plans over datasets, explain with the config values
// behind each decision, materialized dataframes reused as sources, result
// formats and paging, on_error null counting, memory budgets and limits.
import assert from 'node:assert/strict';
import { existsSync, readdirSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { test } from 'node:test';
import { assertProblem, call, startServer } from './lib.mjs';

const TRIPS = 'id,vendor,fare,tip,day\n' +
  '1,CMT,12.5,2,2024-01-31\n2,VTS,8,,2024-02-01\n3,CMT,25.25,5.5,2024-02-01\n' +
  '4,DDS,,1,2024-03-15\n5,VTS,40,10,2024-03-15\n6,CMT,7.75,0,2024-04-01\n';

async function upload(srv, name, body, type = 'text/csv') {
  return call(srv.base, 'PUT', `/v1/datasets/${name}`, { body, headers: { 'content-type': type } });
}

async function run(srv, plan) {
  const r = await call(srv.base, 'POST', '/v1/queries?wait=60', { json: { plan } });
  assert.equal(r.status, 200, r.text);
  return r.body;
}

test('datasets: upload, list with schema, get, delete; bad names and types', async () => {
  const srv = await startServer();
  try {
    let r = await upload(srv, 'trips', TRIPS);
    assert.ok(r.status === 201 || r.status === 200, r.text);
    r = await call(srv.base, 'GET', '/v1/datasets');
    assert.equal(r.status, 200);
    const ds = r.body.datasets.find((d) => d.name === 'trips');
    assert.equal(ds.format, 'csv');
    assert.equal(ds.bytes, Buffer.byteLength(TRIPS));
    assert.deepEqual(ds.schema.map((f) => `${f.name}:${f.type}`),
      ['id:int64', 'vendor:string', 'fare:float64', 'tip:float64', 'day:date']);
    r = await upload(srv, 'events', '{"a": 1, "b": "x"}\n{"a": 2}\n', 'application/x-ndjson');
    assert.ok(r.status === 201 || r.status === 200, r.text);
    r = await call(srv.base, 'GET', '/v1/datasets/events');
    assert.equal(r.body.format, 'ndjson');

    assertProblem(await upload(srv, '..evil', 'a\n1\n'), 400, 'invalid-parameter');
    r = await upload(srv, 'x', 'a\n1\n', 'application/pdf');
    assert.equal(r.status, 415, r.text);
    // A file that cannot be read as CSV is refused and leaves nothing behind.
    r = await upload(srv, 'broken', 'a,b\n"unterminated,2\n');
    assert.ok(r.status >= 400 && r.status < 500, r.text);
    assert.deepEqual(readdirSync(srv.dataDir).filter((f) => f.startsWith('broken') || f.startsWith('.')), []);

    r = await call(srv.base, 'DELETE', '/v1/datasets/events');
    assert.ok(r.status === 204 || r.status === 200, r.text);
    assertProblem(await call(srv.base, 'GET', '/v1/datasets/events'), 404, 'dataset-not-found');
    // A plan may not leave the data dir.
    r = await call(srv.base, 'POST', '/v1/dataframes', { json: { source: { path: '../state/config.json' } } });
    assertProblem(r, 400, 'invalid-plan');
    r = await call(srv.base, 'GET', '/v1/runner');
    assert.equal(r.body.state, 'none', 'a refused plan must not create the runner');
  } finally {
    await srv.stop();
  }
});

test('a dropped dataset file is a dataset; expression errors suggest and freeze nothing', async () => {
  const srv = await startServer();
  try {
    writeFileSync(path.join(srv.dataDir, 'trips.csv'), TRIPS);
    let r = await call(srv.base, 'POST', '/v1/dataframes', {
      json: { source: { dataset: 'trips' }, ops: [{ where: 'fair > 10' }] } });
    assertProblem(r, 400, 'invalid-expression');
    assert.match(r.body.detail, /did you mean 'fare'/);
    assert.equal(r.body.position, 0);
    assert.equal((await call(srv.base, 'GET', '/v1/config')).body.locked, false);

    r = await call(srv.base, 'POST', '/v1/dataframes', {
      json: { source: { dataset: 'trips' }, ops: [{ groupby: ['vendor'], agg: ['sum(fare) as total', 'count(*) as n'] }, { sort: ['total desc'] }] } });
    assert.equal(r.status, 201, r.text);
    assert.deepEqual(r.body.schema, [{ name: 'vendor', type: 'string' }, { name: 'total', type: 'float64' }, { name: 'n', type: 'int64' }]);
    assert.deepEqual(r.body.preview, [['VTS', 48, 2], ['CMT', 45.5, 3], ['DDS', null, 1]]);
  } finally {
    await srv.stop();
  }
});

test('explain names the config values behind its decisions', async () => {
  const srv = await startServer();
  try {
    writeFileSync(path.join(srv.dataDir, 'trips.csv'), TRIPS);
    writeFileSync(path.join(srv.dataDir, 'vendors.csv'), 'vendor,name\nCMT,Creative\nVTS,VeriFone\n');
    await call(srv.base, 'POST', '/v1/config', { json: { scan_tasks_max_size_bytes: 64, scan_tasks_min_size_bytes: 1, maintain_order: false } });
    const plan = { source: { dataset: 'trips' }, ops: [
      { join: { right: { source: { dataset: 'vendors' } }, on: ['vendor'] } },
      { groupby: ['name'], agg: ['sum(fare) as total'] }] };
    let r = await call(srv.base, 'POST', '/v1/dataframes', { json: plan });
    assert.equal(r.status, 201, r.text);
    r = await call(srv.base, 'GET', `/v1/dataframes/${r.body.id}/explain`);
    assert.equal(r.status, 200, r.text);
    const decisions = r.body.decisions.map((d) => d.decision).join('\n');
    assert.match(decisions, /broadcast join: right side .* < broadcast_join_size_bytes_threshold 10\.0 MiB/);
    assert.match(decisions, /split into \d+ tasks/);
    const split = r.body.decisions.find((d) => d.config_field === 'scan_tasks_max_size_bytes');
    assert.equal(split.config_value, 64);
    assert.ok(r.body.physical.stages.length >= 3);
    assert.ok(r.body.physical.stages[0].tasks > 1, 'a 64-byte scan limit cuts the file into several tasks');
    assert.ok(r.body.optimized && r.body.logical);
  } finally {
    await srv.stop();
  }
});

// A preview reads the head of each source: over a kept dataframe in several
// parts, each part's task cuts its head and a gather keeps only the leading
// parts that hold the rows. Its joins' rows must still be the join's (the heads
// hold every row here, so the preview is the whole answer), for inner, left and
// right joins, shuffled (a 1-byte broadcast threshold).
test('join previews over kept dataframes in several parts match the run', async () => {
  const srv = await startServer();
  try {
    writeFileSync(path.join(srv.dataDir, 'trips.csv'), TRIPS);
    writeFileSync(path.join(srv.dataDir, 'vendors.csv'), 'vendor,name\nCMT,Creative\nVTS,VeriFone\nXYZ,Nobody\n');
    await call(srv.base, 'POST', '/v1/config', { json: {
      scan_tasks_max_size_bytes: 40, scan_tasks_min_size_bytes: 1, broadcast_join_size_bytes_threshold: 1,
      maintain_order: false } });
    const kept = {};
    for (const ds of ['trips', 'vendors']) {
      const r = await call(srv.base, 'POST', '/v1/dataframes', { json: { source: { dataset: ds } } });
      assert.equal(r.status, 201, r.text);
      const q = await call(srv.base, 'POST', '/v1/queries?wait=30', { json: { dataframe: r.body.id } });
      assert.equal(q.body.state, 'succeeded', q.text);
      kept[ds] = r.body.id;
    }
    const sorted = (rows) => rows.map((x) => JSON.stringify(x)).sort();
    for (const how of ['inner', 'left', 'right']) {
      const plan = { source: { dataframe: kept.trips }, ops: [
        { join: { right: { source: { dataframe: kept.vendors } }, on: ['vendor'], how } },
        { select: ['id', 'vendor', 'name'] }] };
      const r = await call(srv.base, 'POST', '/v1/dataframes', { json: plan });
      assert.equal(r.status, 201, r.text);
      const q = await run(srv, plan);
      assert.equal(q.state, 'succeeded', JSON.stringify(q));
      const res = await call(srv.base, 'GET', `/v1/queries/${q.id}/result`);
      assert.equal(res.status, 200, res.text);
      assert.equal(res.body.rows.length, { inner: 5, left: 6, right: 6 }[how]);
      assert.deepEqual(sorted(r.body.preview), sorted(res.body.rows), how);
    }
  } finally {
    await srv.stop();
  }
});

test('a run dataframe is kept and reused as a source; results page and stream', async () => {
  const srv = await startServer();
  try {
    writeFileSync(path.join(srv.dataDir, 'trips.csv'), TRIPS);
    let r = await call(srv.base, 'POST', '/v1/dataframes', { json: { source: { dataset: 'trips' }, ops: [{ where: 'fare is not null' }] } });
    const df = r.body.id;
    r = await call(srv.base, 'POST', '/v1/queries', { json: { plan: { source: { dataframe: df } } } });
    assertProblem(r, 409, 'dataframe-not-materialized');
    r = await call(srv.base, 'POST', '/v1/queries?wait=30', { json: { dataframe: df } });
    assert.equal(r.body.state, 'succeeded', r.text);
    assert.equal(r.body.rows, 5);
    r = await call(srv.base, 'GET', `/v1/dataframes/${df}`);
    assert.equal(r.body.materialized, true);
    // The reuse reads no file: remove it and query the dataframe again.
    const q = await run(srv, { source: { dataframe: df }, ops: [{ sort: ['fare'] }, { select: ['id', 'fare'] }] });
    assert.equal(q.state, 'succeeded', JSON.stringify(q));
    r = await call(srv.base, 'GET', `/v1/queries/${q.id}/result?offset=1&limit=2`);
    assert.equal(r.status, 200, r.text);
    assert.deepEqual(r.body.rows, [[2, 8], [1, 12.5]]);
    assert.equal(r.body.total_rows, 5);
    r = await call(srv.base, 'GET', `/v1/queries/${q.id}/result`, { headers: { accept: 'text/csv' } });
    assert.equal(r.text.split(/\r?\n/)[0], 'id,fare');
    assert.equal(r.text.trim().split(/\r?\n/).length, 6);
    r = await call(srv.base, 'GET', `/v1/queries/${q.id}/result`, { headers: { accept: 'application/x-ndjson' } });
    const lines = r.text.trim().split('\n').map((l) => JSON.parse(l));
    assert.deepEqual(lines[0], { id: 6, fare: 7.75 });
    // A dataframe on the right side of a join (not only as the first source).
    writeFileSync(path.join(srv.dataDir, 'vendors.csv'), 'vendor,name\nCMT,Creative\nVTS,VeriFone\n');
    r = await call(srv.base, 'POST', '/v1/dataframes', { json: { source: { dataset: 'vendors' } } });
    const vdf = r.body.id;
    r = await call(srv.base, 'POST', '/v1/queries?wait=30', { json: { dataframe: vdf } });
    assert.equal(r.body.state, 'succeeded', r.text);
    const j = await run(srv, { source: { dataset: 'trips' }, ops: [
      { join: { right: { source: { dataframe: vdf } }, on: ['vendor'] } },
      { groupby: ['name'], agg: ['count(*) as n'] }, { sort: ['name'] }] });
    r = await call(srv.base, 'GET', `/v1/queries/${j.id}/result`);
    assert.deepEqual(r.body.rows, [['Creative', 3], ['VeriFone', 2]]);
    const both = await run(srv, { source: { dataframe: df }, ops: [
      { join: { right: { source: { dataframe: vdf } }, on: ['vendor'], how: 'semi' } }, { agg: ['count(*) as n'] }] });
    r = await call(srv.base, 'GET', `/v1/queries/${both.id}/result`);
    assert.deepEqual(r.body.rows, [[5]]);
    // Over a kept dataframe only the columns the plan uses go on past the scan
    // (projection push-down through top_k); the answer is the same.
    let f = await call(srv.base, 'POST', '/v1/dataframes', { json: { source: { dataframe: df }, ops: [
      { top_k: { by: ['vendor'], sort: ['fare desc'], k: 1 } }, { select: ['vendor', 'fare'] }] } });
    assert.equal(f.status, 201, f.text);
    r = await call(srv.base, 'GET', `/v1/dataframes/${f.body.id}/explain`);
    assert.match(r.body.decisions.map((d) => d.decision).join('\n'), /2 of its 5 columns go on past the scan/);
    let t = await run(srv, { source: { dataframe: df }, ops: [
      { top_k: { by: ['vendor'], sort: ['fare desc'], k: 1 } }, { select: ['vendor', 'fare'] }] });
    r = await call(srv.base, 'GET', `/v1/queries/${t.id}/result`);
    assert.deepEqual(r.body.rows, [['CMT', 25.25], ['VTS', 40]]);
    t = await run(srv, { source: { dataframe: df }, ops: [
      { top_k: { by: ['vendor'], sort: ['fare desc'], k: 2 } }, { where: 'tip > 1' }, { select: ['id'] }] });
    r = await call(srv.base, 'GET', `/v1/queries/${t.id}/result`);
    assert.deepEqual(r.body.rows, [[3], [1], [5]]);
    // Deleting the dataframe drops its partitions.
    r = await call(srv.base, 'DELETE', `/v1/dataframes/${df}`);
    assert.ok(r.status === 204 || r.status === 200);
    r = await call(srv.base, 'POST', '/v1/queries', { json: { plan: { source: { dataframe: df } } } });
    assertProblem(r, 404, 'dataframe-not-found');
  } finally {
    await srv.stop();
  }
});

test('malformed data fails with file, line and column unless on_error is null', async () => {
  const srv = await startServer();
  try {
    writeFileSync(path.join(srv.dataDir, 'bad.csv'), 'a,b\n1,2\n3,x\n4,5,6\n');
    let q = await run(srv, { source: { path: 'bad.csv', options: { schema: { b: 'int64' } } } });
    assert.equal(q.state, 'failed');
    assert.equal(q.error.kind, 'malformed-data');
    assert.equal(q.error.line, 3);
    assert.match(q.error.message, /bad\.csv/);
    q = await run(srv, { source: { path: 'bad.csv', options: { schema: { b: 'int64' }, on_error: 'null' } } });
    assert.equal(q.state, 'succeeded', JSON.stringify(q));
    assert.equal(q.null_errors, 2);
    const r = await call(srv.base, 'GET', `/v1/queries/${q.id}/result`);
    assert.deepEqual(r.body.rows, [[1, 2], [3, null], [4, 5]]);
  } finally {
    await srv.stop();
  }
});

test('task memory limit fails the query, the memory budget gives 507, cancel works', async () => {
  const srv = await startServer({ args: ['--memory-limit', '2000'] });
  try {
    const rows = Array.from({ length: 3000 }, (_, i) => ({ k: i % 7, v: i }));
    writeFileSync(path.join(srv.dataDir, 'big.csv'), 'k,v\n' + rows.map((r) => `${r.k},${r.v}`).join('\n') + '\n');
    // under the budget: a task's working memory counts against both, the task's own limit first
    await call(srv.base, 'POST', '/v1/config', { json: { task_memory_limit_bytes: 1024 } });
    let q = await run(srv, { source: { dataset: 'big' } });
    assert.equal(q.state, 'failed');
    assert.equal(q.error.kind, 'task-memory-limit');
    assert.match(q.error.message, /task_memory_limit_bytes/);
    await call(srv.base, 'DELETE', '/v1/runner');
    await call(srv.base, 'POST', '/v1/config', { json: { task_memory_limit_bytes: 0 } });
    q = await run(srv, { source: { dataset: 'big' } });
    assert.equal(q.state, 'failed', 'a result over --memory-limit is not kept');
    assert.equal(q.error.kind, 'memory-budget-exceeded');
    let r = await call(srv.base, 'GET', `/v1/queries/${q.id}/result`);
    assert.equal(r.status, 409);
    r = await call(srv.base, 'POST', '/v1/queries', { json: { plan: { source: { dataset: 'big' } } } });
    assert.equal(r.status, 202, r.text);
    r = await call(srv.base, 'DELETE', `/v1/queries/${r.body.id}`);
    assert.ok(['cancelled', 'succeeded', 'failed'].includes(r.body.state), r.text);
  } finally {
    await srv.stop();
  }
});
