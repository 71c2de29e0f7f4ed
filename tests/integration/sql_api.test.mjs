// sql_api: SQL through the HTTP API. {"sql"} on POST /v1/queries and POST
// /v1/dataframes runs as its compiled plan would (records keep the text and
// the plan); datasets are tables by name, dataframes by their name or quoted
// ID; EXPLAIN answers what GET /v1/dataframes/{id}/explain does, freezing
// nothing; bad SQL is a problem with line, column and a caret excerpt that
// creates no runner; current_config_id() is the frozen ID, on the workers too.
import assert from 'node:assert/strict';
import { copyFileSync, readFileSync, writeFileSync } from 'node:fs';
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

// ---------------------------------------------------------------- the review's defects

test('SET field = DEFAULT and SET field TO DEFAULT reset it, as RESET; a quoted DEFAULT is a string', async () => {
  const srv = await startServer();
  try {
    copyExamples(srv.dataDir);
    const schema = (await call(srv.base, 'GET', '/v1/config/schema')).body;
    const def = (name) => (schema.fields ?? schema).find((f) => f.name === name).default;
    let r = await sql(srv.base, "SET csv_null_values = 'NA,null'", '');
    assert.deepEqual(r.body.values.csv_null_values, ['NA', 'null']);
    r = await sql(srv.base, 'SET csv_null_values = DEFAULT', '');
    assert.equal(r.status, 200, r.text);
    assert.deepEqual(r.body.values.csv_null_values, def('csv_null_values'));
    await sql(srv.base, 'SET shuffle_partitions = 5', '');
    r = await sql(srv.base, 'SET shuffle_partitions TO default', '');
    assert.equal(r.status, 200, r.text);
    assert.equal(r.body.values.shuffle_partitions, def('shuffle_partitions'));
    r = await sql(srv.base, "SET csv_null_values = 'DEFAULT'", '');
    assert.equal(r.status, 200, r.text);
    assert.deepEqual(r.body.values.csv_null_values, ['DEFAULT']);
    await assertUnfrozen(srv.base);
  } finally {
    await srv.stop();
  }
});

test('SHOW of an unknown field points at the field: line, column, position, excerpt', async () => {
  const srv = await startServer();
  try {
    const r = await sql(srv.base, 'SHOW shufle_partitions', '');
    assertProblem(r, 400, 'invalid-sql');
    assert.equal(r.body.field, 'shufle_partitions');
    assert.equal(r.body.line, 1, r.text);
    assert.equal(r.body.column, 6, r.text);
    assert.equal(r.body.position, 5, r.text);
    assert.equal(r.body.excerpt, 'SHOW shufle_partitions\n     ^');
    assert.match(r.body.detail, /did you mean shuffle_partitions/);
    const two = await sql(srv.base, 'SHOW\n  nope', '');
    assert.equal(two.body.line, 2, two.text);
    assert.equal(two.body.column, 3, two.text);
  } finally {
    await srv.stop();
  }
});

test('a message cut inside a multi-byte character keeps its detail (valid UTF-8, never the bare title)', async () => {
  const srv = await startServer();
  try {
    copyExamples(srv.dataDir);
    const cases = [
      [`${'a'.repeat(39)}é 1`, 400, 'invalid-sql'],
      [`SELECT ${'é'.repeat(199)} FROM trips`, 400, 'invalid-sql'],
      [`SELECT a FROM ${'é'.repeat(199)}`, 404, 'dataset-not-found'],
      [`SELECT ${'é'.repeat(300)}`, 400, 'invalid-sql'],
      [`SHOW ${'é'.repeat(200)}`, 400, 'invalid-sql'],
    ];
    for (const [text, status, kind] of cases) {
      const r = await sql(srv.base, text, '');
      assertProblem(r, status, kind);
      assert.notEqual(r.body.detail, r.body.title, `${text.slice(0, 50)}: ${r.text.slice(0, 300)}`);
      assert.ok(!r.body.detail.includes('\uFFFD'), `cut at a character bound: ${r.body.detail.slice(0, 200)}`);
      assert.match(r.body.detail, /line 1, column \d+/, r.body.detail.slice(0, 300));
    }
    // The column counts characters (the schema says so), not bytes.
    const r = await sql(srv.base, "SELECT 'éé', nope FROM trips", '');
    assertProblem(r, 400, 'invalid-sql');
    assert.equal(r.body.column, 14, r.text);
    assert.equal(r.body.position, 15, r.text);
    const problem = JSON.parse(readFileSync(path.join(SOURCE_DIR, 'api', 'schemas', 'problem.json'), 'utf8'));
    const col = problem.$defs.InvalidSql.allOf[1].properties.column.description;
    assert.match(col, /character/);
    assert.doesNotMatch(col, /byte/);
  } finally {
    await srv.stop();
  }
});

test('flat chains of thousands of AND, OR, +, ||, UNION ALL links compile and run; real nesting stays bounded', async () => {
  const srv = await startServer();
  try {
    copyExamples(srv.dataDir);
    const and = Array.from({ length: 1000 }, (_, i) => `trip_id <> ${-i}`).join(' AND ');
    let res = await rowsOf(srv.base, `SELECT count(*) AS n FROM trips WHERE ${and}`);
    assert.equal(res.rows[0][0], 8);
    const or = Array.from({ length: 1000 }, (_, i) => `trip_id = ${i + 2}`).join(' OR ');
    res = await rowsOf(srv.base, `SELECT count(*) AS n FROM trips WHERE ${or}`);
    assert.equal(res.rows[0][0], 7);
    const plus = Array.from({ length: 2000 }, () => 'trip_id').join(' + ');
    res = await rowsOf(srv.base, `SELECT ${plus} AS s FROM trips WHERE trip_id = 3`);
    assert.equal(res.rows[0][0], 6000);
    const cat = Array.from({ length: 300 }, () => "'ab'").join(' || ');
    res = await rowsOf(srv.base, `SELECT ${cat} AS s FROM trips WHERE trip_id = 1`);
    assert.equal(res.rows[0][0], 'ab'.repeat(300));
    const union = Array.from({ length: 100 }, (_, i) => `SELECT ${i} AS k`).join(' UNION ALL ');
    res = await rowsOf(srv.base, `SELECT count(*) AS n, sum(k) AS s FROM (${union}) t`);
    assert.deepEqual(res.rows[0], [100, 4950]);
    const mixed = Array.from({ length: 70 }, () => 'trip_id').join(' - ');
    res = await rowsOf(srv.base, `SELECT ${mixed} AS d FROM trips WHERE trip_id = 1`);
    assert.equal(res.rows[0][0], -68);
    // Real nesting is still bounded: parentheses and subqueries.
    const deep = `SELECT ${'('.repeat(100)}1${')'.repeat(100)} AS x`;
    const r = await sql(srv.base, deep, '');
    assertProblem(r, 400, 'invalid-sql');
    assert.match(r.body.detail, /nests deeper than 64/);
  } finally {
    await srv.stop();
  }
});

test('VALUES is one inline rows source (one task), with its types; past 10000 rows it is 400', async () => {
  const srv = await startServer();
  try {
    copyExamples(srv.dataDir);
    const rows = Array.from({ length: 10000 }, (_, i) => `(${i}, ${i}.5)`).join(',');
    const r = await sql(srv.base, `SELECT count(*) AS n, sum(col0) AS s, sum(col1) AS f FROM (VALUES ${rows}) t`, '?wait=60');
    assert.equal(r.status, 200, r.text.slice(0, 300));
    assert.equal(r.body.state, 'succeeded', JSON.stringify(r.body.error));
    assert.ok(r.body.progress.tasks_total <= 2, `tasks: ${JSON.stringify(r.body.progress)}`);
    const res = await call(srv.base, 'GET', `/v1/queries/${r.body.id}/result`);
    assert.deepEqual(res.body.rows[0], [10000, 49995000, 49995000 + 5000]);
    // Literals and expressions mixed, NULLs, a date column.
    const m = await rowsOf(srv.base, "SELECT * FROM (VALUES (1 + 1, DATE '2024-01-02', 'x'), (3, NULL, NULL), (-4, DATE '2024-01-03', 'z')) t(a, d, s) ORDER BY a");
    assert.deepEqual(m.columns, ['a', 'd', 's']);
    assert.deepEqual(m.rows, [[-4, '2024-01-03', 'z'], [2, '2024-01-02', 'x'], [3, null, null]]);
    const over = Array.from({ length: 10001 }, (_, i) => `(${i})`).join(',');
    const big = await sql(srv.base, `VALUES ${over}`, '');
    assertProblem(big, 400, 'invalid-sql');
    assert.match(big.body.detail, /10000/);
    assert.equal(big.body.line, 1);
  } finally {
    await srv.stop();
  }
});

test('a scalar subquery of several rows fails the query (cardinality-violation, located); one or none is a value', async () => {
  const srv = await startServer();
  try {
    copyExamples(srv.dataDir);
    const r = await sql(srv.base, 'SELECT trip_id, (SELECT vendor FROM vendors) AS v FROM trips');
    assert.equal(r.status, 200, r.text);
    assert.equal(r.body.state, 'failed', r.text);
    assert.equal(r.body.error.kind, 'cardinality-violation', r.text);
    assert.match(r.body.error.message, /scalar subquery returned more than one row at line 1, column 17/);
    const one = await rowsOf(srv.base, "SELECT trip_id, (SELECT name FROM vendors WHERE vendor = 'zoom') AS v FROM trips WHERE trip_id = 1");
    assert.deepEqual(one.rows, [[1, 'Zoom Rides']]);
    const none = await rowsOf(srv.base, "SELECT trip_id, (SELECT name FROM vendors WHERE vendor = 'nope') AS v FROM trips WHERE trip_id = 1");
    assert.deepEqual(none.rows, [[1, null]]);
  } finally {
    await srv.stop();
  }
});

test('SQL the planner refuses is 400 invalid-sql at the statement, never a string column', async () => {
  const srv = await startServer();
  try {
    copyExamples(srv.dataDir);
    const text = '  SELECT trip_id, lag(fare, 9223372036854775807) OVER (ORDER BY trip_id) AS p FROM trips';
    for (const [method, p, body] of [['POST', '/v1/queries', { sql: text }], ['POST', '/v1/dataframes', { sql: text, name: 'lagged' }]]) {
      const r = await call(srv.base, method, p, { json: body });
      assertProblem(r, 400, 'invalid-sql');
      assert.equal(r.body.line, 1, r.text);
      assert.equal(r.body.column, 3, r.text);
      assert.equal(r.body.position, 2, r.text);
      assert.equal(typeof r.body.column, 'number');
      assert.ok(r.body.excerpt.includes('\n  ^'), r.text);
    }
    // The name of the refused dataframe is free.
    const ok = await call(srv.base, 'POST', '/v1/dataframes', { json: { sql: 'SELECT trip_id FROM trips', name: 'lagged' } });
    assert.equal(ok.status, 201, ok.text);
  } finally {
    await srv.stop();
  }
});

test('racing creates of one dataframe name: one wins, the others are 409 before any preview runs', async () => {
  const srv = await startServer();
  try {
    copyExamples(srv.dataDir);
    const body = { sql: 'SELECT trip_id, fare FROM trips', name: 'racy' };
    const all = await Promise.all(Array.from({ length: 8 }, () => call(srv.base, 'POST', '/v1/dataframes', { json: body })));
    const won = all.filter((r) => r.status === 201);
    assert.equal(won.length, 1, all.map((r) => r.status).join(','));
    for (const r of all.filter((x) => x.status !== 201)) assertProblem(r, 409, 'conflict');
    const qs = (await call(srv.base, 'GET', '/v1/queries')).body.queries;
    const frames = new Set((await call(srv.base, 'GET', '/v1/dataframes')).body.dataframes.map((f) => f.id));
    const previews = qs.filter((q) => q.dataframe); // a create's preview query names its dataframe
    assert.equal(previews.length, 1, JSON.stringify(previews));
    assert.ok(frames.has(previews[0].dataframe), JSON.stringify(previews[0]));
  } finally {
    await srv.stop();
  }
});

test('a FROM of many joins is not refused as nesting: 100 LEFT JOINs run; past 256 joins it is 400 naming the bound', async () => {
  const srv = await startServer();
  try {
    copyExamples(srv.dataDir);
    const joins = Array.from({ length: 100 }, (_, i) => `LEFT JOIN vendors v${i} ON v${i}.vendor = t.vendor`).join(' ');
    const res = await rowsOf(srv.base, `SELECT t.trip_id, v99.name FROM trips t ${joins} WHERE t.trip_id = 2`);
    assert.deepEqual(res.rows, [[2, 'Zoom Rides']]);
    const inner = Array.from({ length: 40 }, (_, i) => `JOIN vendors v${i} USING (vendor)`).join(' ');
    const res2 = await rowsOf(srv.base, `SELECT count(*) AS n FROM trips ${inner}`);
    assert.ok(res2.rows[0][0] > 0, JSON.stringify(res2.rows));
    const many = Array.from({ length: 300 }, (_, i) => `CROSS JOIN vendors v${i}`).join(' ');
    const r = await sql(srv.base, `SELECT 1 AS x FROM trips ${many}`, '');
    assertProblem(r, 400, 'invalid-sql');
    assert.match(r.body.detail, /more than 256 tables/);
  } finally {
    await srv.stop();
  }
});
