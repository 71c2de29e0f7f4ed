// result_utf8: strings that are not valid UTF-8 (raw bytes in a CSV, a
// Parquet BLOB read as a string) leave every result format as valid UTF-8,
// each invalid byte as U+FFFD like the JSON result: the Arrow stream is read
// back by nodejs-polars and apache-arrow and the Parquet download by DuckDB
// (all three refuse invalid utf8), with the JSON result's values.
import assert from 'node:assert/strict';
import { createRequire } from 'node:module';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { test } from 'node:test';
import { call, SOURCE_DIR, startServer } from './lib.mjs';

const require = createRequire(path.join(SOURCE_DIR, 'package.json'));
const arrow = require('apache-arrow');
const pl = require('nodejs-polars');
const { DuckDBInstance } = require('@duckdb/node-api');

const BAD = Buffer.concat([
  Buffer.from('a,b\n1,'), Buffer.from([0xff, 0xfe]), Buffer.from('ok\n2,fine é\n3,'), Buffer.from([0xc3]),
  Buffer.from('\n4,'), Buffer.from([0xe2, 0x98]), Buffer.from('x\n5,\n'),
]);
const WANT = ['\ufffd\ufffdok', 'fine é', '\ufffd', '\ufffd\ufffdx', null];

async function bytesOf(base, url) {
  const r = await fetch(base + url);
  assert.equal(r.status, 200, url);
  return Buffer.from(await r.arrayBuffer());
}

test('invalid UTF-8 in strings is U+FFFD in JSON, Arrow and Parquet results alike', async () => {
  const srv = await startServer();
  const dir = mkdtempSync(path.join(os.tmpdir(), 'framed-utf8-'));
  const duck = await (await DuckDBInstance.create(':memory:', { threads: '1' })).connect();
  try {
    let r = await call(srv.base, 'PUT', '/v1/datasets/bad', { body: BAD, headers: { 'content-type': 'text/csv' } });
    assert.ok(r.status === 200 || r.status === 201, r.text);
    r = await call(srv.base, 'POST', '/v1/queries?wait=60', { json: { plan: { source: { dataset: 'bad', options: { schema: { b: 'string' } } }, ops: [{ sort: ['a'] }] } } });
    assert.equal(r.body.state, 'succeeded', r.text);
    const id = r.body.id;
    r = await call(srv.base, 'GET', `/v1/queries/${id}/result`);
    assert.deepEqual(r.body.rows.map((row) => row[1]), WANT);

    const ipc = await bytesOf(srv.base, `/v1/queries/${id}/result?format=arrow`);
    const df = pl.readIPCStream(ipc);
    assert.deepEqual(df.getColumn('b').toArray(), WANT);
    assert.deepEqual(arrow.tableFromIPC(ipc).getChild('b').toArray(), WANT);

    for (const compression of ['snappy', 'zstd']) {
      const file = path.join(dir, `r_${compression}.parquet`);
      writeFileSync(file, await bytesOf(srv.base, `/v1/queries/${id}/result?format=parquet&compression=${compression}`));
      const got = await duck.runAndReadAll(`SELECT b FROM read_parquet('${file}') ORDER BY a`);
      assert.deepEqual(got.getRows().map((row) => row[0]), WANT);
      assert.deepEqual(pl.readParquet(readFileSync(file)).getColumn('b').toArray(), WANT);
    }
  } finally {
    duck.closeSync?.();
    await srv.stop();
    rmSync(dir, { recursive: true, force: true });
  }
});
