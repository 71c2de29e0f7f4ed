// sql_api: SQL through the HTTP API. {"sql"} on POST /v1/queries and POST
// /v1/dataframes runs as its compiled plan would (records keep the text and
// the plan); datasets are tables by name, dataframes by their name or quoted
// ID; EXPLAIN answers what GET /v1/dataframes/{id}/explain does, freezing
// nothing; bad SQL is a problem with line, column and a caret excerpt that
// creates no runner; current_config_id() is the frozen ID, on the workers too.
import assert from 'node:assert/strict';
import { copyFileSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { test } from 'node:test';
import { assertProblem, call, SOURCE_DIR, startServer, startWorker } from './lib.mjs';

const EXAMPLES = path.join(SOURCE_DIR, 'api', 'examples');

function copyExamples(dataDir) {
  for (const f of ['trips.csv', 'vendors.ndjson']) copyFileSync(path.join(EXAMPLES, f), path.join(dataDir, f));
}

const sql = (base, text, q = '?wait=60', headers = {}) => call(base, 'POST', `/v1/queries${q}`, { json: { sql: text }, headers });

// Runs a SQL query to its end: its status and its result's rows.
async function rowsOf(base, text) {
  const r = await sql(base, text);
  assert.equal(r.status, 200, r.text);
  assert.equal(r.body.state, 'succeeded', JSON.stringify(r.body.error));
  const res = await call(base, 'GET', `/v1/queries/${r.body.id}/result`);
  assert.equal(res.status, 200, res.text);
  return { query: r.body, rows: res.body.rows, columns: res.body.columns.map((c) => c.name) };
}

async function assertUnfrozen(base) {
  const conf = await call(base, 'GET', '/v1/config');
  assert.equal(conf.body.locked, false, 'the config was frozen');
  const runner = await call(base, 'GET', '/v1/runner');
  assert.equal(runner.body.state, 'none', runner.text);
}

test('a SQL query runs as its plan would, and its record keeps the SQL and the compiled plan', async () => {
  const srv = await startServer();
  try {
    copyExamples(srv.dataDir);
    const text = 'SELECT vendor, count(*) AS n FROM trips WHERE vendor IS NOT NULL GROUP BY vendor ORDER BY vendor';
    const { query, rows, columns } = await rowsOf(srv.base, text);
    assert.deepEqual(columns, ['vendor', 'n']);
    assert.ok(rows.length >= 2, JSON.stringify(rows));
    assert.deepEqual(rows.map((r) => r[0]), [...rows.map((r) => r[0])].sort());
    assert.equal(query.sql, text);
    assert.equal(typeof query.plan, 'object');
    assert.deepEqual(query.plan.source, { dataset: 'trips' });
    const got = await call(srv.base, 'GET', `/v1/queries/${query.id}`);
    assert.equal(got.body.sql, text);
    assert.deepEqual(got.body.plan, query.plan);
    // Unquoted table names are case-insensitive; quoted ones exact, and only names of the data dir.
    const upper = await rowsOf(srv.base, 'SELECT count(*) AS n FROM TRIPS');
    assert.deepEqual(upper.query.plan.source, { dataset: 'trips' });
    for (const name of ['"TRIPS"', '"../data/trips"', '"trips.csv"']) {
      const r = await sql(srv.base, `SELECT * FROM ${name}`);
      assertProblem(r, 404, 'dataset-not-found');
      assert.equal(r.body.column, 15);
    }
    // The same plan as a plan body gives the same rows.
    const byPlan = await call(srv.base, 'POST', '/v1/queries?wait=60', { json: { plan: query.plan } });
    const planRows = await call(srv.base, 'GET', `/v1/queries/${byPlan.body.id}/result`);
    assert.deepEqual(planRows.body.rows, rows);
    // The history keeps the SQL past the runner's reset.
    assert.equal((await call(srv.base, 'DELETE', '/v1/runner')).status, 200);
    const past = await call(srv.base, 'GET', `/v1/queries/${query.id}`);
    assert.equal(past.status, 200, past.text);
    assert.equal(past.body.archived, true);
    assert.equal(past.body.sql, text);
    assert.deepEqual(past.body.plan, query.plan);
  } finally {
    await srv.stop();
  }
});

test('a join and a window in SQL', async () => {
  const srv = await startServer();
  try {
    copyExamples(srv.dataDir);
    const join = await rowsOf(srv.base, 'SELECT t.trip_id, v.name FROM trips t JOIN vendors v ON t.vendor = v.vendor ORDER BY t.trip_id');
    assert.deepEqual(join.columns, ['trip_id', 'name']);
    assert.ok(join.rows.length > 0);
    assert.ok(join.rows.every((r) => typeof r[1] === 'string'));
    const win = await rowsOf(srv.base, 'SELECT trip_id, row_number() OVER (ORDER BY trip_id) AS rn FROM trips ORDER BY trip_id');
    assert.deepEqual(win.rows.map((r) => r[1]), win.rows.map((_, i) => i + 1));
  } finally {
    await srv.stop();
  }
});

test('dataframes from SQL: by name and by quoted ID; names are unique ignoring case and checked', async () => {
  const srv = await startServer();
  try {
    copyExamples(srv.dataDir);
    const text = 'SELECT trip_id, fare FROM trips WHERE fare > 10';
    let r = await call(srv.base, 'POST', '/v1/dataframes', { json: { sql: text, name: 'Dear_Trips' } });
    assert.equal(r.status, 201, r.text);
    const id = r.body.id;
    assert.equal(r.body.name, 'Dear_Trips');
    assert.equal(r.body.sql, text);
    assert.deepEqual(r.body.schema.map((c) => c.name), ['trip_id', 'fare']);
    const got = await call(srv.base, 'GET', `/v1/dataframes/${id}`);
    assert.equal(got.body.sql, text);
    assert.equal(got.body.name, 'Dear_Trips');
    assert.deepEqual(got.body.plan.source, { dataset: 'trips' });
    const explain = await call(srv.base, 'GET', `/v1/dataframes/${id}/explain`);
    assert.equal(explain.status, 200, explain.text);
    assert.ok(explain.body.physical.stages.length >= 1);

    // The same name in another case is taken: 409, and no second dataframe.
    r = await call(srv.base, 'POST', '/v1/dataframes', { json: { sql: text, name: 'dear_trips' } });
    assertProblem(r, 409, 'conflict');
    assert.equal(r.body.name, 'dear_trips');
    for (const name of ['', 'a-b', 'x'.repeat(65), 'é']) {
      r = await call(srv.base, 'POST', '/v1/dataframes', { json: { sql: text, name } });
      assertProblem(r, 400, 'invalid-parameter');
      assert.equal(r.body.parameter, 'name');
    }
    const list = await call(srv.base, 'GET', '/v1/dataframes');
    assert.equal(list.body.dataframes.length, 1);

    // Materialized, it is a table by its name (any case, unquoted) and by its quoted ID.
    r = await call(srv.base, 'POST', '/v1/queries?wait=60', { json: { dataframe: id } });
    assert.equal(r.body.state, 'succeeded', r.text);
    const byName = await rowsOf(srv.base, 'SELECT count(*) AS n FROM dear_trips');
    const byId = await rowsOf(srv.base, `SELECT count(*) AS n FROM "${id}"`);
    assert.deepEqual(byName.rows, byId.rows);
    assert.ok(byName.rows[0][0] > 0);
    assert.deepEqual(byName.query.plan.source, { dataframe: id });

    // A dataframe's name wins over a dataset's.
    r = await call(srv.base, 'POST', '/v1/dataframes', { json: { sql: 'SELECT trip_id FROM trips WHERE trip_id = 1', name: 'vendors' } });
    assert.equal(r.status, 201, r.text);
    const shadow = r.body.id;
    await call(srv.base, 'POST', '/v1/queries?wait=60', { json: { dataframe: shadow } });
    const v = await rowsOf(srv.base, 'SELECT * FROM vendors');
    assert.deepEqual(v.columns, ['trip_id']);
    // Deleted, the name is free again and the dataset is back.
    assert.equal((await call(srv.base, 'DELETE', `/v1/dataframes/${shadow}`)).status, 204);
    const back = await rowsOf(srv.base, 'SELECT vendor FROM vendors ORDER BY vendor');
    assert.deepEqual(back.columns, ['vendor']);
  } finally {
    await srv.stop();
  }
});

test('the body holds exactly one of plan, dataframe and sql', async () => {
  const srv = await startServer();
  try {
    copyExamples(srv.dataDir);
    let r = await call(srv.base, 'POST', '/v1/queries', { json: { sql: 'SELECT 1 AS x', plan: { source: { dataset: 'trips' } } } });
    assertProblem(r, 400, 'invalid-plan');
    assert.deepEqual(r.body.members.sort(), ['plan', 'sql']);
    r = await call(srv.base, 'POST', '/v1/queries', { json: { sql: 'SELECT 1 AS x', dataframe: 'df-0000000000000000' } });
    assertProblem(r, 400, 'invalid-plan');
    r = await call(srv.base, 'POST', '/v1/queries', { json: { sql: 42 } });
    assertProblem(r, 400, 'invalid-plan');
    r = await call(srv.base, 'POST', '/v1/queries', { json: { sql: 'SELECT 1', sequel: true } });
    assertProblem(r, 400, 'invalid-plan');
    r = await call(srv.base, 'POST', '/v1/dataframes', { json: { sql: 'SELECT trip_id FROM trips', source: { dataset: 'trips' } } });
    assertProblem(r, 400, 'invalid-plan');
    assert.deepEqual(r.body.members.sort(), ['source', 'sql']);
    r = await call(srv.base, 'POST', '/v1/dataframes', { json: { sql: 'SELECT trip_id FROM trips', name: 7 } });
    assertProblem(r, 400, 'invalid-parameter');
    r = await call(srv.base, 'POST', '/v1/dataframes', { json: { sql: 'SHOW CONFIG' } });
    assertProblem(r, 400, 'invalid-sql');
    await assertUnfrozen(srv.base);
  } finally {
    await srv.stop();
  }
});

test('bad SQL: line, column and a caret excerpt; nothing is created or frozen', async () => {
  const srv = await startServer();
  try {
    copyExamples(srv.dataDir);
    let r = await sql(srv.base, 'SELECT fare\nFROM trips\nWHER fare > 3');
    assertProblem(r, 400, 'invalid-sql');
    assert.equal(r.body.line, 3);
    assert.equal(r.body.column, 1);
    assert.equal(typeof r.body.position, 'number');
    assert.equal(r.body.excerpt, 'WHER fare > 3\n^');

    r = await sql(srv.base, 'SELECT fare FROM tripz');
    assertProblem(r, 404, 'dataset-not-found');
    assert.equal(r.body.line, 1);
    assert.equal(r.body.column, 18);
    assert.match(r.body.excerpt, /\n {17}\^$/);
    assert.match(r.body.detail, /trips/, 'the nearest table is suggested');

    r = await sql(srv.base, 'SELECT fare FROM trips WHERE faer > 3');
    assertProblem(r, 400, 'invalid-sql');
    assert.match(r.body.detail, /fare/);
    assert.equal(r.body.column, 30);

    r = await sql(srv.base, 'SELECT sum(fare) OVER (ORDER BY trip_id ROWS BETWEEN 1 PRECEDING AND CURRENT ROW) AS s FROM trips');
    assertProblem(r, 422, 'unsupported-sql');
    assert.equal(r.body.line, 1);
    assert.ok(r.body.column > 1);
    assert.match(r.body.excerpt, /\^/);

    r = await sql(srv.base, `SELECT ${'1 + '.repeat(70000)}1 AS x`);
    assertProblem(r, 400, 'invalid-sql');
    assert.equal(r.body.max_bytes, 262144);
    assert.match(r.body.detail, /262144/);

    r = await call(srv.base, 'POST', '/v1/dataframes', { json: { sql: 'SELEC 1' } });
    assertProblem(r, 400, 'invalid-sql');
    assert.equal(r.body.line, 1);
    await assertUnfrozen(srv.base);
    assert.equal((await call(srv.base, 'GET', '/v1/dataframes')).body.dataframes.length, 0);
  } finally {
    await srv.stop();
  }
});

test('EXPLAIN answers what the dataframe explain does, and freezes nothing', async () => {
  const srv = await startServer();
  try {
    copyExamples(srv.dataDir);
    const q = 'SELECT vendor, sum(fare) AS fares FROM trips GROUP BY vendor';
    const r = await sql(srv.base, `EXPLAIN ${q}`, '');
    assert.equal(r.status, 200, r.text);
    for (const k of ['logical', 'optimized', 'physical', 'decisions', 'config_id', 'plan']) assert.ok(k in r.body, k);
    await assertUnfrozen(srv.base);
    assert.equal((await call(srv.base, 'GET', '/v1/queries')).body.queries.length, 0, 'EXPLAIN ran a query');
    const df = await call(srv.base, 'POST', '/v1/dataframes', { json: { sql: q } });
    assert.equal(df.status, 201, df.text);
    const ex = await call(srv.base, 'GET', `/v1/dataframes/${df.body.id}/explain`);
    for (const k of ['logical', 'optimized', 'physical', 'decisions']) assert.deepEqual(r.body[k], ex.body[k], k);
    assert.equal(r.body.config_id, df.body.config_id, 'the ID the freeze gave is the one EXPLAIN named');
    assert.deepEqual(r.body.plan, df.body.plan);
  } finally {
    await srv.stop();
  }
});

test('SET, RESET and SHOW obey the config lock and validate as POST /v1/config', async () => {
  const srv = await startServer();
  try {
    copyExamples(srv.dataDir);
    let r = await sql(srv.base, 'SET shuffle_partitions = 7', '');
    assert.equal(r.status, 200, r.text);
    assert.equal(r.body.locked, false);
    assert.equal(r.body.values.shuffle_partitions, 7);
    assert.equal((await call(srv.base, 'GET', '/v1/config')).body.values.shuffle_partitions, 7);
    r = await sql(srv.base, "SET csv_null_values = 'NA,null'", '');
    assert.equal(r.status, 200, r.text);
    assert.deepEqual(r.body.values.csv_null_values, ['NA', 'null']);

    // Validated as POST /v1/config: the same problem, nothing changed.
    const viaSql = await sql(srv.base, 'SET shuffle_partitions = 0', '');
    const viaPost = await call(srv.base, 'POST', '/v1/config', { json: { shuffle_partitions: 0 } });
    assertProblem(viaSql, 422, 'validation-failed');
    assert.deepEqual(viaSql.body.errors, viaPost.body.errors);
    r = await sql(srv.base, 'SET no_such_field = 1', '');
    assertProblem(r, 422, 'validation-failed');
    assert.equal(r.body.errors[0].field, 'no_such_field');
    assert.equal((await call(srv.base, 'GET', '/v1/config')).body.values.shuffle_partitions, 7);

    r = await sql(srv.base, 'SHOW shuffle_partitions', '');
    assert.equal(r.status, 200, r.text);
    assert.deepEqual(r.body, { statement: 'show', locked: false, config_id: null, field: 'shuffle_partitions', value: 7 });
    r = await sql(srv.base, 'SHOW no_such_field', '');
    assertProblem(r, 400, 'invalid-sql');
    r = await sql(srv.base, 'RESET shuffle_partitions', '');
    assert.equal(r.status, 200, r.text);
    assert.equal(r.body.values.shuffle_partitions, 8);
    await sql(srv.base, 'SET sample_size_for_sort = 50', '');
    r = await sql(srv.base, 'RESET ALL', '');
    assert.equal(r.status, 200, r.text);
    const defaults = (await call(srv.base, 'GET', '/v1/config/schema')).body;
    for (const f of defaults.fields ?? defaults) assert.deepEqual(r.body.values[f.name], f.default, f.name);
    await sql(srv.base, 'SET shuffle_partitions = 5', '');
    await assertUnfrozen(srv.base);

    // The freeze: then SET and RESET get 409 with POST /v1/config's members, and nothing changes.
    const frozen = await rowsOf(srv.base, 'SELECT current_config_id() AS id FROM trips LIMIT 1');
    const conf = (await call(srv.base, 'GET', '/v1/config')).body;
    assert.equal(conf.locked, true);
    assert.equal(frozen.rows[0][0], conf.config_id, 'current_config_id() is the frozen ID');
    assert.equal(frozen.query.config_id, conf.config_id);
    for (const stmt of ['SET shuffle_partitions = 9', 'RESET shuffle_partitions', 'RESET ALL']) {
      r = await sql(srv.base, stmt, '');
      const post = await call(srv.base, 'POST', '/v1/config', { json: { shuffle_partitions: 9 } });
      assertProblem(r, 409, 'config-locked');
      for (const k of ['config_id', 'frozen_at', 'frozen_by', 'unlock']) assert.equal(r.body[k], post.body[k], k);
    }
    assert.deepEqual((await call(srv.base, 'GET', '/v1/config')).body, conf);
    r = await sql(srv.base, 'SHOW CONFIG', '');
    assert.equal(r.status, 200, r.text);
    assert.deepEqual(r.body, { statement: 'show', locked: true, config_id: conf.config_id, values: conf.values });
    r = await sql(srv.base, 'SHOW ALL', '');
    assert.deepEqual(r.body.values, conf.values);

    // A reset of the runner unlocks SET again.
    assert.equal((await call(srv.base, 'DELETE', '/v1/runner')).status, 200);
    r = await sql(srv.base, 'SET shuffle_partitions = 9', '');
    assert.equal(r.status, 200, r.text);
    assert.equal(r.body.values.shuffle_partitions, 9);
    const again = await rowsOf(srv.base, 'SELECT current_config_id() AS id FROM trips LIMIT 1');
    assert.notEqual(again.rows[0][0], conf.config_id, 'the new config has a new ID');
    assert.equal(again.rows[0][0], (await call(srv.base, 'GET', '/v1/config')).body.config_id);
  } finally {
    await srv.stop();
  }
});

test('SET and RESET need the admin token as POST /v1/config does; SHOW and queries do not', async () => {
  const token = 'sqltoken0123456789abcdef';
  const srv = await startServer({ env: { FRAMED_ADMIN_TOKEN: token } });
  try {
    copyExamples(srv.dataDir);
    const auth = { authorization: `Bearer ${token}` };
    for (const stmt of ['SET shuffle_partitions = 3', 'RESET ALL', 'RESET shuffle_partitions']) {
      const r = await sql(srv.base, stmt, '');
      assertProblem(r, 401, 'unauthorized');
      const wrong = await sql(srv.base, stmt, '', { authorization: 'Bearer nope' });
      assertProblem(wrong, 401, 'unauthorized');
    }
    assert.equal((await call(srv.base, 'GET', '/v1/config')).body.values.shuffle_partitions, 8);
    let r = await sql(srv.base, 'SET shuffle_partitions = 3', '', auth);
    assert.equal(r.status, 200, r.text);
    r = await sql(srv.base, 'SHOW shuffle_partitions', '');
    assert.equal(r.body.value, 3);
    r = await sql(srv.base, 'EXPLAIN SELECT trip_id FROM trips', '');
    assert.equal(r.status, 200, r.text);
  } finally {
    await srv.stop();
  }
});

test('current_config_id() on the remote runner: every task on every worker answers the frozen ID', async () => {
  const coord = await startServer({ args: ['--runner', 'remote'] });
  const workers = [];
  try {
    const lines = ['k,v'];
    for (let i = 0; i < 400; i++) lines.push(`${i},${i % 7}`);
    writeFileSync(path.join(coord.dataDir, 'many.csv'), `${lines.join('\n')}\n`);
    for (let i = 0; i < 2; i++) workers.push(await startWorker(coord.base, { args: ['--threads', '2', '--data-dir', coord.dataDir] }));
    for (let i = 0; i < 100; i++) {
      const w = await call(coord.base, 'GET', '/v1/workers');
      if (w.body.workers.filter((x) => x.state === 'active').length === 2) break;
      await new Promise((res) => setTimeout(res, 100));
    }
    let r = await sql(coord.base, 'SET scan_tasks_min_size_bytes = 1', '');
    assert.equal(r.status, 200, r.text);
    r = await sql(coord.base, 'SET scan_tasks_max_size_bytes = 400', '');
    assert.equal(r.status, 200, r.text);
    const { query, rows } = await rowsOf(coord.base, 'SELECT k, current_config_id() AS id FROM many');
    const conf = (await call(coord.base, 'GET', '/v1/config')).body;
    assert.ok(query.progress.tasks_total > 2, `the scan ran in ${query.progress.tasks_total} tasks`);
    assert.equal(rows.length, 400);
    assert.deepEqual([...new Set(rows.map((x) => x[1]))], [conf.config_id]);
    assert.deepEqual(query.task_config_ids, [conf.config_id]);
  } finally {
    for (const w of workers) await w.stop();
    await coord.stop();
  }
});
