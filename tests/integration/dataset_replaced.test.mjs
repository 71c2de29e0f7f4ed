// dataset_replaced: a dataset replaced under a dataframe, over real HTTP. A
// dataframe's run reads its datasets as they are now, but only while they
// keep the format and the schema the dataframe was created with: a Parquet
// dataset replaced by a CSV (other columns), or a CSV with source options
// replaced by a Parquet file, answers 409 dataset-changed naming the dataset
// instead of rows of another schema or a 400 blaming the accepted plan; a
// replacement of the same schema runs on the new rows.
import assert from 'node:assert/strict';
import { createRequire } from 'node:module';
import { readFileSync, rmSync } from 'node:fs';
import path from 'node:path';
import { test } from 'node:test';
import { assertProblem, call, SOURCE_DIR, startServer, tempRoot } from './lib.mjs';

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

async function parquetBytes(root, name, sql) {
  const file = path.join(root, `${name}.parquet`);
  await duck.run(`COPY (${sql}) TO '${file}' (FORMAT parquet)`);
  return readFileSync(file);
}

const put = (base, name, body, type) => call(base, 'PUT', `/v1/datasets/${name}`, { body, headers: { 'content-type': type } });

async function createFrame(base, plan) {
  const r = await call(base, 'POST', '/v1/dataframes', { json: plan });
  assert.equal(r.status, 201, r.text);
  return r.body;
}

const run = (base, id) => call(base, 'POST', '/v1/queries?wait=60', { json: { dataframe: id } });

test('a dataframe whose dataset changed format or schema answers 409 dataset-changed', async () => {
  const srv = await startServer();
  const root = tempRoot();
  try {
    // Parquet (3 columns) replaced by a CSV of other columns
    let r = await put(srv.base, 'sw3', await parquetBytes(root, 'sw3', 'select i as id, i * 1.5 as f, i::VARCHAR as s from range(5) t(i)'), 'application/vnd.apache.parquet');
    assert.ok(r.status === 200 || r.status === 201, r.text);
    const f3 = await createFrame(srv.base, { source: { dataset: 'sw3' } });
    assert.deepEqual(f3.schema.map((c) => c.name), ['id', 'f', 's']);
    r = await run(srv.base, f3.id);
    assert.equal(r.body.state, 'succeeded', r.text);
    r = await put(srv.base, 'sw3', 'a,b\n1,x\n', 'text/csv');
    assert.ok(r.status === 200 || r.status === 201, r.text);
    r = await run(srv.base, f3.id);
    assertProblem(r, 409, 'dataset-changed');
    assert.match(r.body.detail, /sw3/);
    assert.match(r.body.detail, /parquet/);
    // the dataframe itself is unchanged
    r = await call(srv.base, 'GET', `/v1/dataframes/${f3.id}`);
    assert.equal(r.body.schema.length, 3);

    // a CSV with source options replaced by Parquet: 409, not 400 invalid-plan
    r = await put(srv.base, 'sw2', 'a,b\n1,2\n', 'text/csv');
    assert.ok(r.status === 200 || r.status === 201, r.text);
    const f2 = await createFrame(srv.base, { source: { dataset: 'sw2', options: { schema: { b: 'string' } } } });
    r = await put(srv.base, 'sw2', await parquetBytes(root, 'sw2', "select 1::BIGINT as a, '2' as b"), 'application/vnd.apache.parquet');
    assert.ok(r.status === 200 || r.status === 201, r.text);
    r = await run(srv.base, f2.id);
    assertProblem(r, 409, 'dataset-changed');
    assert.match(r.body.detail, /sw2/);

    // a CSV replaced by a CSV of other columns: the schema differs
    r = await put(srv.base, 'cols', 'a,b\n1,x\n', 'text/csv');
    const fc = await createFrame(srv.base, { source: { dataset: 'cols' } });
    r = await put(srv.base, 'cols', 'x,y,z\n1,2,3\n', 'text/csv');
    r = await run(srv.base, fc.id);
    assertProblem(r, 409, 'dataset-changed');
    assert.match(r.body.detail, /has 2 columns.*'cols'.*gives 3/);

    // the same schema with other rows: the run reads the new rows
    r = await put(srv.base, 'same', 'a,b\n1,x\n', 'text/csv');
    const fs = await createFrame(srv.base, { source: { dataset: 'same' }, ops: [{ agg: ['sum(a) as n'] }] });
    r = await put(srv.base, 'same', 'a,b\n1,x\n2,y\n', 'text/csv');
    r = await run(srv.base, fs.id);
    assert.equal(r.body.state, 'succeeded', r.text);
    r = await call(srv.base, 'GET', `/v1/queries/${r.body.id}/result`);
    assert.deepEqual(r.body.rows, [[3]]);
  } finally {
    await srv.stop();
    rmSync(root, { recursive: true, force: true });
  }
});
