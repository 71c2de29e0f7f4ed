// result_parquet: a query's result as a Parquet file over real HTTP (our
// writer), saved to a temp file and read back by DuckDB (@duckdb/node-api):
// equal to the JSON result value for value, every type with nulls, a row
// group per morsel_size_rows rows, snappy, zstd and none, an empty result,
// offset/limit.
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { after, before, test } from 'node:test';
import { call, SOURCE_DIR, startServer } from './lib.mjs';

const require = createRequire(path.join(SOURCE_DIR, 'package.json'));
const { DuckDBInstance } = require('@duckdb/node-api');

const MORSEL = 1000;
const NROWS = 2537;
const PARQUET = 'application/vnd.apache.parquet';

function rows() {
  const out = [];
  for (let r = 0; r < NROWS; r++) {
    const day = String(1 + (r % 28)).padStart(2, '0');
    out.push({
      id: r,
      b: r % 5 === 4 ? null : r % 2 === 0,
      i: r % 3 === 0 ? null : (r - 1000) * 1000003,
      f: r % 7 === 0 ? null : r / 8 - 0.1,
      g: r % 4, // few distinct values: dictionary-encoded
      s: r % 11 === 0 ? null : r % 13 === 0 ? '' : `v${r}-${'é☃'.repeat(r % 4)}`,
      d: r % 17 === 0 ? null : `${1990 + (r % 40)}-0${1 + (r % 9)}-${day}`,
      ts: r % 19 === 0 ? null : `2024-0${1 + (r % 9)}-${day}T${String(r % 24).padStart(2, '0')}:07:09.${String(r * 37 % 1000000).padStart(6, '0')}`,
    });
  }
  return out;
}

let srv;
let qid;
let emptyId;
let dir;
let con;
let inst;

async function submit(plan) {
  const r = await call(srv.base, 'POST', '/v1/queries?wait=60', { json: { plan } });
  assert.equal(r.status, 200, r.text);
  assert.equal(r.body.state, 'succeeded', r.text);
  return r.body.id;
}

before(async () => {
  dir = mkdtempSync(path.join(tmpdir(), 'framed-pq-'));
  srv = await startServer();
  const cfg = await call(srv.base, 'POST', '/v1/config', { json: { morsel_size_rows: MORSEL } });
  assert.equal(cfg.status, 200, cfg.text);
  const source = { rows: rows(), schema: { d: 'date', ts: 'timestamp' } };
  qid = await submit({ source, ops: [{ sort: ['id'] }] });
  emptyId = await submit({ source, ops: [{ where: 'id < 0' }] });
  inst = await DuckDBInstance.create(':memory:', { threads: '1' });
  con = await inst.connect();
});

after(async () => {
  con?.closeSync?.();
  inst?.closeSync?.();
  await srv?.stop();
  if (dir) rmSync(dir, { recursive: true, force: true });
});

let nfile = 0;
async function download(id, query) {
  const r = await fetch(`${srv.base}/v1/queries/${id}/result?${query}`);
  assert.equal(r.status, 200, query);
  assert.equal(r.headers.get('content-type'), PARQUET);
  const file = path.join(dir, `r${nfile++}.parquet`);
  writeFileSync(file, Buffer.from(await r.arrayBuffer()));
  return file;
}

async function sql(q) {
  return (await con.runAndReadAll(q)).getRows();
}

// The JSON rows with dates as days and timestamps as microseconds (exact).
function expected(json) {
  const types = json.columns.map((c) => c.type);
  return json.rows.map((row) => row.map((v, k) => {
    if (v === null) return null;
    if (types[k] === 'int64') return BigInt(v);
    if (types[k] === 'date') return BigInt(Date.parse(`${v}T00:00:00Z`) / 86400000);
    if (types[k] === 'timestamp') {
      const m = /^(.{19})(?:\.(\d{1,6}))?Z?$/.exec(v);
      return BigInt(Date.parse(`${m[1]}Z`)) * 1000n + BigInt((m[2] ?? '').padEnd(6, '0') || '0');
    }
    return v;
  }));
}

// DuckDB's reading of the file, in the same terms.
async function duckRows(file) {
  return sql(`SELECT id, b, i, f, g, s, date_diff('day', DATE '1970-01-01', d)::BIGINT,
    epoch_us(ts) FROM read_parquet('${file}')`);
}

async function checkFile(file, json) {
  const types = await sql(`SELECT column_name, column_type FROM (DESCRIBE SELECT * FROM read_parquet('${file}'))`);
  assert.deepEqual(types, [['id', 'BIGINT'], ['b', 'BOOLEAN'], ['i', 'BIGINT'], ['f', 'DOUBLE'], ['g', 'BIGINT'],
    ['s', 'VARCHAR'], ['d', 'DATE'], ['ts', 'TIMESTAMP WITH TIME ZONE']]);
  const want = expected(json);
  const got = await duckRows(file);
  assert.equal(got.length, want.length);
  assert.deepEqual(got, want);
}

for (const compression of ['snappy', 'zstd', 'none']) {
  test(`a Parquet result (${compression}) read by DuckDB equals the JSON result`, async () => {
    const json = (await call(srv.base, 'GET', `/v1/queries/${qid}/result`)).body;
    const file = await download(qid, compression === 'snappy' ? 'format=parquet' : `format=parquet&compression=${compression}`);
    await checkFile(file, json);
    const groups = await sql(`SELECT row_group_id, max(row_group_num_rows)::BIGINT, list(DISTINCT compression)
      FROM parquet_metadata('${file}') GROUP BY ALL ORDER BY 1`);
    assert.deepEqual(groups.map((g) => g[1]), [1000n, 1000n, 537n], 'a row group per morsel_size_rows rows');
    const codecs = new Set(groups.flatMap((g) => [...g[2].items]));
    assert.deepEqual([...codecs], [compression === 'none' ? 'UNCOMPRESSED' : compression.toUpperCase()]);
  });
}

test('offset/limit and an empty result as Parquet', async () => {
  for (const q of ['offset=7&limit=1500', 'limit=3', 'offset=5000']) {
    const json = (await call(srv.base, 'GET', `/v1/queries/${qid}/result?${q}`)).body;
    await checkFile(await download(qid, `format=parquet&${q}`), json);
  }
  const json = (await call(srv.base, 'GET', `/v1/queries/${emptyId}/result`)).body;
  assert.equal(json.rows.length, 0);
  const file = await download(emptyId, 'format=parquet&compression=zstd');
  await checkFile(file, json);
  const head = await fetch(`${srv.base}/v1/queries/${emptyId}/result?format=parquet`, { method: 'HEAD' });
  assert.equal(head.status, 200);
  const body = await fetch(`${srv.base}/v1/queries/${emptyId}/result?format=parquet`);
  assert.equal(Number(head.headers.get('content-length')), (await body.arrayBuffer()).byteLength);
});

test('Accept: application/vnd.apache.parquet and ?download=1', async () => {
  const r = await fetch(`${srv.base}/v1/queries/${qid}/result?download=1&limit=5`, { headers: { accept: PARQUET } });
  assert.equal(r.status, 200);
  assert.equal(r.headers.get('content-type'), PARQUET);
  assert.equal(r.headers.get('content-disposition'), `attachment; filename="${qid}.parquet"`);
  const bytes = Buffer.from(await r.arrayBuffer());
  assert.equal(bytes.subarray(0, 4).toString(), 'PAR1');
  assert.equal(bytes.subarray(-4).toString(), 'PAR1');
});
