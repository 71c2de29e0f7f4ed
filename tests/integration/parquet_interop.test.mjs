// parquet_interop: framed reads Parquet written by others, and its answers
// equal DuckDB's on the same files. DuckDB (@duckdb/node-api) writes one
// table of every type the reader maps (INT8..INT64, FLOAT, DOUBLE, BOOLEAN,
// UTF8, DATE, TIMESTAMP milli/micro/nano, UTC-adjusted or not, DECIMAL on
// INT32, INT64 and FIXED_LEN_BYTE_ARRAY), with nulls and several row groups,
// under every codec framed reads and both format versions (V2 brings data
// pages v2, DELTA_BINARY_PACKED, DELTA_LENGTH_BYTE_ARRAY and
// BYTE_STREAM_SPLIT; a string column changes from dictionary to plain
// between row groups: its dictionary fallback). nodejs-polars writes the same
// rows with zstd, and a frame of its own. DuckDB computes
// every expected answer from the file itself. Everything runs under the
// default config and under one that makes a scan task of every row group.
// The packages come from the repository's node_modules (`npm ci`): if one
// cannot be loaded the test FAILS, it never skips.
import assert from 'node:assert/strict';
import { copyFileSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { after, before, test } from 'node:test';
import { assertProblem, call, SOURCE_DIR, startServer } from './lib.mjs';

const require = createRequire(path.join(SOURCE_DIR ?? process.cwd(), 'package.json'));
const duckdb = await import(require.resolve('@duckdb/node-api'));
const pl = require('nodejs-polars');

const ROWS = 10000;
const FORCED = { scan_tasks_max_size_bytes: 1, scan_tasks_min_size_bytes: 1, shuffle_partitions: 3 };

// The table: every mapped type, nulls in most columns.
const TABLE = `SELECT i::BIGINT AS id,
  CASE WHEN i % 7 = 0 THEN NULL ELSE (i % 100 - 50)::TINYINT END AS i8,
  (i * 3 % 30000 - 15000)::SMALLINT AS i16,
  CASE WHEN i % 9 = 0 THEN NULL ELSE (i * 7919 - 40000000)::INTEGER END AS i32,
  (i * 1000003 - 5000000000)::BIGINT AS i64,
  CASE WHEN i % 5 = 0 THEN NULL ELSE (i / 3.0)::FLOAT END AS f32,
  CASE WHEN i % 17 = 0 THEN NULL ELSE (i / 7.0 - 300)::DOUBLE END AS f64,
  CASE WHEN i % 11 = 0 THEN NULL ELSE i % 2 = 0 END AS b,
  CASE WHEN i % 13 = 0 THEN NULL WHEN i < 3000 THEN 'k' || (i % 10) WHEN i % 3 = 0 THEN ''
       ELSE md5(i::VARCHAR) || 'é' END AS s,
  CASE WHEN i % 19 = 0 THEN NULL ELSE DATE '1969-06-01' + (i % 1000)::INTEGER END AS d,
  CASE WHEN i % 23 = 0 THEN NULL ELSE TIMESTAMP '2021-03-04 05:06:07.123456' + INTERVAL (i) SECOND END AS ts,
  (TIMESTAMP '2021-03-04 05:06:07' + INTERVAL (i * 7) MILLISECOND)::TIMESTAMP_MS AS ts_ms,
  (TIMESTAMP '2021-03-04 05:06:07' + INTERVAL (i * 3) MICROSECOND)::TIMESTAMP_NS AS ts_ns,
  CASE WHEN i % 29 = 0 THEN NULL ELSE TIMESTAMPTZ '2021-03-04 05:06:07+00' + INTERVAL (i) MINUTE END AS tstz,
  CASE WHEN i % 31 = 0 THEN NULL ELSE (i / 100.0 - 20)::DECIMAL(9,2) END AS dec9,
  (i / 10000.0)::DECIMAL(18,4) AS dec18,
  (i * 1.5)::DECIMAL(30,3) AS dec30
  FROM range(${ROWS}) r(i)`;

// What DuckDB answers, in the shapes framed's JSON results take: ints and
// decimals as numbers, dates as text, timestamps as microseconds.
const EXPECT_COLS = `id, i8::BIGINT AS i8, i16::BIGINT AS i16, i32::BIGINT AS i32, i64, f32::DOUBLE AS f32,
  f64, b, s, strftime(d, '%Y-%m-%d') AS d, epoch_us(ts) AS ts, epoch_us(ts_ms) AS ts_ms,
  epoch_us(ts_ns) AS ts_ns, epoch_us(tstz) AS tstz, dec9::DOUBLE AS dec9, dec18::DOUBLE AS dec18,
  dec30::DOUBLE AS dec30`;
const TS_COLS = new Set(['ts', 'ts_ms', 'ts_ns', 'tstz']);
const TYPES = {
  id: 'int64', i8: 'int64', i16: 'int64', i32: 'int64', i64: 'int64', f32: 'float64', f64: 'float64',
  b: 'bool', s: 'string', d: 'date', ts: 'timestamp', ts_ms: 'timestamp', ts_ns: 'timestamp',
  tstz: 'timestamp', dec9: 'float64', dec18: 'float64', dec30: 'float64',
};

let db, conn, work;
const files = []; // { name, file, what }

async function rows(sql) {
  const r = await conn.runAndReadAll(sql);
  return r.getRowObjectsJson();
}

// framed's timestamp text ("2021-03-04T05:06:07.123456Z") as microseconds.
function micros(text) {
  const m = /^(\d{4})-(\d\d)-(\d\d)T(\d\d):(\d\d):(\d\d)(?:\.(\d{1,6}))?Z$/.exec(text);
  assert.ok(m, `timestamp text ${text}`);
  const secs = Date.UTC(+m[1], +m[2] - 1, +m[3], +m[4], +m[5], +m[6]) / 1000;
  return BigInt(secs) * 1000000n + BigInt((m[7] ?? '').padEnd(6, '0') || '0');
}

function norm(col, v) {
  if (v === null || v === undefined) return null;
  if (TS_COLS.has(col)) return typeof v === 'string' && v.includes('T') ? micros(v) : BigInt(v);
  if (TYPES[col] === 'int64' || TYPES[col] === 'float64') return Number(v);
  return v;
}

function assertCell(col, got, want, where) {
  const g = norm(col, got), w = norm(col, want);
  if (typeof g === 'number' && typeof w === 'number' && col.startsWith('dec30')) {
    assert.ok(Math.abs(g - w) <= Math.abs(w) * 1e-15, `${where} ${col}: ${g} vs ${w}`);
    return;
  }
  assert.deepEqual(g, w, `${where} ${col}: framed ${got} vs DuckDB ${want}`);
}

before(async () => {
  work = mkdtempSync(path.join(tmpdir(), 'framed-pq-'));
  db = await duckdb.DuckDBInstance.create(':memory:', { threads: '2' });
  conn = await db.connect();
  await conn.run(`SET TimeZone = 'UTC'`);
  await conn.run(`CREATE TABLE t AS ${TABLE}`);
  const variants = [
    ['uncompressed', 'V1', 100000], ['snappy', 'V1', 2048], ['gzip', 'V1', 4096],
    ['zstd', 'V1', 3000], ['lz4', 'V1', 2048], ['snappy', 'V2', 2048], ['zstd', 'V2', 5000],
    ['gzip', 'V2', 100000], ['uncompressed', 'V2', 2048], ['lz4_raw', 'V2', 4096],
  ];
  for (const [codec, version, rg] of variants) {
    const name = `t_${codec}_${version.toLowerCase()}_${rg}`;
    const file = path.join(work, `${name}.parquet`);
    await conn.run(`COPY t TO '${file}' (FORMAT parquet, COMPRESSION ${codec}, ` +
      `ROW_GROUP_SIZE ${rg}, PARQUET_VERSION ${version})`);
    files.push({ name, file, what: `DuckDB ${codec} ${version} row groups of ${rg}` });
  }
  // DuckDB falls back from the dictionary: s is dictionary-encoded in the
  // first row group (few distinct values) and plain in the others.
  const enc = await rows(`SELECT encodings FROM parquet_metadata('${files[1].file}') WHERE path_in_schema = 's'`);
  assert.ok(enc.some((e) => /DICTIONARY/.test(e.encodings)) && enc.some((e) => !/DICTIONARY/.test(e.encodings)),
    JSON.stringify(enc));
  // Polars: the same rows, zstd, from DuckDB's own file.
  const polarsFile = path.join(work, 't_polars_zstd.parquet');
  pl.readParquet(files[1].file).writeParquet(polarsFile, { compression: 'zstd' });
  files.push({ name: 't_polars_zstd', file: polarsFile, what: 'Polars zstd' });
});

after(async () => {
  conn?.closeSync?.();
  rmSync(work, { recursive: true, force: true });
});

async function frame(srv, plan) {
  const r = await call(srv.base, 'POST', '/v1/queries?wait=120', { json: { plan } });
  assert.equal(r.status, 200, r.text);
  assert.equal(r.body.state, 'succeeded', r.text);
  const res = await call(srv.base, 'GET', `/v1/queries/${r.body.id}/result`);
  assert.equal(res.status, 200, res.text);
  return res.body;
}

async function checkFile(srv, f) {
  copyFileSync(f.file, path.join(srv.dataDir, `${f.name}.parquet`));
  const ds = await call(srv.base, 'GET', `/v1/datasets/${f.name}`);
  assert.equal(ds.status, 200, ds.text);
  assert.equal(ds.body.format, 'parquet');
  const schema = Object.fromEntries(ds.body.schema.map((c) => [c.name, c.type]));
  // Polars keeps DuckDB's types except that it may write decimals and
  // nanosecond timestamps its own way; the values below still must agree.
  assert.deepEqual(Object.keys(schema), Object.keys(TYPES), f.what);
  for (const [c, t] of Object.entries(TYPES)) assert.equal(schema[c], t, `${f.what}: ${c}`);

  // Every row, every cell.
  const got = await frame(srv, { source: { dataset: f.name }, ops: [{ sort: ['id'] }] });
  const want = await rows(`SELECT ${EXPECT_COLS} FROM read_parquet('${f.file}') ORDER BY id`);
  assert.equal(got.rows.length, ROWS, f.what);
  assert.equal(want.length, ROWS);
  const names = got.columns.map((c) => c.name);
  for (let i = 0; i < ROWS; i++) {
    for (let j = 0; j < names.length; j++) assertCell(names[j], got.rows[i][j], want[i][names[j]], `${f.what} row ${i}`);
  }

  // Filters (pushed to the scan, pruning row groups), groupby, aggregates.
  const agg = await frame(srv, { source: { dataset: f.name }, ops: [
    { where: "i32 > 1000000 and s is not null and d >= date '1970-01-01'" },
    { groupby: ['b'], agg: ['count(*) as n', 'sum(i64) as si', 'min(s) as mn', 'max(d) as mx',
      'count(f32) as nf', 'max(ts) as mt', 'sum(i8) as s8'] },
    { sort: ['b nulls first'] }] });
  const wantAgg = await rows(`SELECT b, count(*) AS n, sum(i64)::BIGINT AS si, min(s) AS mn,
    strftime(max(d), '%Y-%m-%d') AS mx, count(f32) AS nf, epoch_us(max(ts)) AS mt, sum(i8)::BIGINT AS s8
    FROM read_parquet('${f.file}') WHERE i32 > 1000000 AND s IS NOT NULL AND d >= DATE '1970-01-01'
    GROUP BY b ORDER BY b NULLS FIRST`);
  assert.equal(agg.rows.length, wantAgg.length, f.what);
  const an = agg.columns.map((c) => c.name);
  const typesAgg = { n: 'int64', si: 'int64', nf: 'int64', s8: 'int64', mt: 'timestamp' };
  agg.rows.forEach((row, i) => an.forEach((c, j) => {
    const w = wantAgg[i][c];
    if (c === 'mt') assert.equal(row[j] === null ? null : micros(row[j]), w === null ? null : BigInt(w), `${f.what} agg ${c}`);
    else if (typesAgg[c]) assert.equal(row[j], Number(w), `${f.what} agg ${c}`);
    else assert.deepEqual(row[j], w, `${f.what} agg ${c}`);
  }));

  // A range filter on the sorted id skips row groups by their statistics.
  const lo = Math.floor(ROWS * 0.9);
  const tail = await frame(srv, { source: { dataset: f.name }, ops: [{ where: `id >= ${lo}` }, { agg: ['count(*) as n', 'sum(f64) as s'] }] });
  const wantTail = await rows(`SELECT count(*) AS n, sum(f64) AS s FROM read_parquet('${f.file}') WHERE id >= ${lo}`);
  assert.equal(tail.rows[0][0], Number(wantTail[0].n), f.what);
  assert.ok(Math.abs(tail.rows[0][1] - wantTail[0].s) <= Math.abs(wantTail[0].s) * 1e-12, f.what);
}

for (const [label, cfg] of [['default config', null], ['a scan task per row group', FORCED]]) {
  test(`Parquet by DuckDB and Polars read as DuckDB reads them (${label})`, async () => {
    const srv = await startServer();
    try {
      if (cfg) {
        const r = await call(srv.base, 'POST', '/v1/config', { json: cfg });
        assert.equal(r.status, 200, r.text);
      }
      for (const f of files) await checkFile(srv, f);
    } finally {
      await srv.stop();
    }
  });
}

test('a frame written by Polars itself (dictionary and plain strings, nulls), uploaded by PUT', async () => {
  const n = 60000;
  const cat = Array.from({ length: n }, (_, i) => (i % 97 === 0 ? null : `cat${i % 5}`));
  const keys = Array.from({ length: n }, (_, i) => `distinct-value-${i}-${'x'.repeat(i % 24)}`);
  const vals = Array.from({ length: n }, (_, i) => (i % 10 === 0 ? null : i * 0.5));
  const file = path.join(work, 'polars_native.parquet');
  pl.DataFrame({ cat, k: keys, v: vals }).writeParquet(file, { compression: 'zstd' });
  const meta = await rows(`SELECT path_in_schema AS c, encodings FROM parquet_metadata('${file}')`);
  assert.ok(meta.some((m) => m.c === 'cat' && /DICTIONARY/.test(m.encodings)), JSON.stringify(meta));
  assert.ok(meta.some((m) => m.c === 'k' && !/DICTIONARY/.test(m.encodings)), JSON.stringify(meta));
  const srv = await startServer();
  try {
    const up = await call(srv.base, 'PUT', '/v1/datasets/polars_native', {
      body: readFileSync(file), headers: { 'content-type': 'application/vnd.apache.parquet' } });
    assert.ok(up.status === 200 || up.status === 201, up.text);
    const got = await frame(srv, { source: { dataset: 'polars_native' }, ops: [
      { groupby: ['cat'], agg: ['count(*) as n', 'sum(v) as s', 'max(k) as mk'] }, { sort: ['cat nulls first'] }] });
    const want = await rows(`SELECT cat, count(*) AS n, sum(v) AS s, max(k) AS mk FROM read_parquet('${file}')
      GROUP BY cat ORDER BY cat NULLS FIRST`);
    assert.deepEqual(got.rows, want.map((w) => [w.cat, Number(w.n), w.s, w.mk]));
    const all = await frame(srv, { source: { dataset: 'polars_native' }, ops: [{ where: "k like '%-5999%'" }, { sort: ['k'] }] });
    const wantAll = await rows(`SELECT cat, k, v FROM read_parquet('${file}') WHERE k LIKE '%-5999%' ORDER BY k`);
    assert.deepEqual(all.rows, wantAll.map((w) => [w.cat, w.k, w.v]));
  } finally {
    await srv.stop();
  }
});

test('what the reader cannot represent is refused by name: nested columns, brotli', async () => {
  const nested = path.join(work, 'nested.parquet');
  await conn.run(`COPY (SELECT i AS id, {'a': i, 'b': 'x'} AS st, [i, i + 1] AS li FROM range(10) r(i))
    TO '${nested}' (FORMAT parquet)`);
  const brotli = path.join(work, 'brotli.parquet');
  await conn.run(`COPY (SELECT i AS id FROM range(10) r(i)) TO '${brotli}' (FORMAT parquet, COMPRESSION brotli)`);
  const srv = await startServer();
  try {
    let r = await call(srv.base, 'PUT', '/v1/datasets/nested', {
      body: readFileSync(nested), headers: { 'content-type': 'application/vnd.apache.parquet' } });
    assertProblem(r, 422, 'unsupported-parquet');
    assert.match(r.body.detail, /st/);
    r = await call(srv.base, 'PUT', '/v1/datasets/brotli', {
      body: readFileSync(brotli), headers: { 'content-type': 'application/vnd.apache.parquet' } });
    assertProblem(r, 422, 'unsupported-parquet');
    assert.match(r.body.detail, /BROTLI/i);
    r = await call(srv.base, 'GET', '/v1/datasets');
    assert.deepEqual(r.body.datasets.map((d) => d.name), [], 'nothing stored');
    // Dropped into the data dir instead, it fails the query, by name.
    writeFileSync(path.join(srv.dataDir, 'nested.parquet'), readFileSync(nested));
    r = await call(srv.base, 'POST', '/v1/queries?wait=60', { json: { plan: { source: { path: 'nested.parquet' } } } });
    assert.ok(r.status === 422 || (r.status === 200 && r.body.state === 'failed'), r.text);
    assert.match(r.text, /unsupported-parquet/);
  } finally {
    await srv.stop();
  }
});
