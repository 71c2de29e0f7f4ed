// parquet_bombs: hostile Parquet files, crafted in the test
// (parquet_craft_lib.mjs), against a real server: tiny files that decode to
// gigabytes are refused by an upload's check (413 payload-too-large) or by a
// query's task memory limit without the server's peak memory (VmHWM of
// /proc/<pid>/status) growing by more than a generous bound; a footer whose
// row count the pages do not back is malformed (not "no memory"); a page of
// zeros claiming 64 MiB for one value is refused before it is inflated; and
// the problems and query errors name the row group (`row_group`).
import assert from 'node:assert/strict';
import { readFileSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { test } from 'node:test';
import { gzipSync } from 'node:zlib';
import { assertProblem, call, startServer } from './lib.mjs';
import { CODEC, ENC, deltaBinaryPacked, oneRun, page, parquetFile, T } from './parquet_craft_lib.mjs';

const MiB = 1024 * 1024;
const BOUND = 400 * MiB; // the peak may grow by this much over the whole test, no more

function peakBytes(pid) {
  const m = /VmHWM:\s+(\d+) kB/.exec(readFileSync(`/proc/${pid}/status`, 'utf8'));
  return Number(m[1]) * 1024;
}

const int64Dict = (v) => { const b = Buffer.alloc(8); b.writeBigInt64LE(BigInt(v)); return b; };

// n rows of int64 columns, each one dictionary entry and one RLE run of index 0.
function dictRunInt64(ncols, n) {
  const pages = Buffer.concat([page(2, 1, ENC.PLAIN, int64Dict(7)), page(0, n, ENC.RLE_DICTIONARY, oneRun(n))]);
  const cols = Array.from({ length: ncols }, (_, i) => ({ name: `c${i}`, type: T.INT64 }));
  return parquetFile(cols, [{ rows: n, chunks: cols.map(() => pages) }]);
}

// n rows of one string column: a `len`-byte dictionary string repeated.
function dictRunString(n, len) {
  const entry = Buffer.alloc(4 + len, 'x');
  entry.writeUInt32LE(len);
  const pages = Buffer.concat([page(2, 1, ENC.PLAIN, entry), page(0, n, ENC.RLE_DICTIONARY, oneRun(n))]);
  return parquetFile([{ name: 's', type: T.BYTE_ARRAY }], [{ rows: n, chunks: [pages] }]);
}

// One DELTA_BYTE_ARRAY page of n values of len bytes: the first value's
// suffix, then n - 1 values that are all prefix.
function dbaBomb(n, len) {
  const prefix = new Array(n).fill(len);
  prefix[0] = 0;
  const suffix = new Array(n).fill(0);
  suffix[0] = len;
  const body = Buffer.concat([deltaBinaryPacked(prefix), deltaBinaryPacked(suffix), Buffer.alloc(len, 'y')]);
  return parquetFile([{ name: 's', type: T.BYTE_ARRAY }], [{ rows: n, chunks: [page(0, n, ENC.DELTA_BYTE_ARRAY, body)] }]);
}

const put = (srv, name, body) =>
  call(srv.base, 'PUT', `/v1/datasets/${name}`, { body, headers: { 'content-type': 'application/vnd.apache.parquet' } });

async function failedQuery(base, plan) {
  const r = await call(base, 'POST', '/v1/queries?wait=120', { json: { plan } });
  if (r.status >= 400) return r.body;
  assert.equal(r.body.state, 'failed', r.text);
  return r.body.error;
}

test('tiny files that decode to gigabytes: refused, the server stays small', async () => {
  const srv = await startServer();
  try {
    const base = peakBytes(srv.pid);
    // 310 bytes -> three int64 columns of 2^27 rows (3 GiB decoded)
    let r = await put(srv, 'bomb27', dictRunInt64(3, 2 ** 27));
    assertProblem(r, 413, 'payload-too-large');
    assert.match(r.body.detail, /bomb27\.parquet/);
    // 3 KB -> 2^20 strings of 3000 bytes (3 GB)
    r = await put(srv, 'dictbomb', dictRunString(2 ** 20, 3000));
    assertProblem(r, 413, 'payload-too-large');
    // DELTA_BYTE_ARRAY: 1e6 values of 1000 bytes (1 GB) from prefixes
    const dba = dbaBomb(1000000, 1000);
    assert.ok(dba.length < 100000);
    r = await put(srv, 'dba', dba);
    assertProblem(r, 413, 'payload-too-large');
    assert.ok(peakBytes(srv.pid) - base < BOUND, `peak grew by ${(peakBytes(srv.pid) - base) / MiB} MiB`);

    // the same DELTA_BYTE_ARRAY page in a query: the decoder's buffers are
    // charged to the task before they are allocated
    writeFileSync(path.join(srv.dataDir, 'dba.parquet'), dba);
    r = await call(srv.base, 'POST', '/v1/config', { json: { task_memory_limit_bytes: 64 * MiB } });
    assert.equal(r.status, 200, r.text);
    const err = await failedQuery(srv.base, { source: { dataset: 'dba' }, ops: [{ limit: 1 }] });
    assert.match(JSON.stringify(err), /task-memory-limit/);
    assert.ok(peakBytes(srv.pid) - base < BOUND, `peak grew by ${(peakBytes(srv.pid) - base) / MiB} MiB`);
    // and the 2^27-row file in a query: the columns grow page by page, charged
    writeFileSync(path.join(srv.dataDir, 'bomb27.parquet'), dictRunInt64(3, 2 ** 27));
    const err2 = await failedQuery(srv.base, { source: { dataset: 'bomb27' }, ops: [{ limit: 1 }] });
    assert.match(JSON.stringify(err2), /task-memory-limit/);
    assert.ok(peakBytes(srv.pid) - base < BOUND, `peak grew by ${(peakBytes(srv.pid) - base) / MiB} MiB`);
    assert.equal((await call(srv.base, 'GET', '/livez')).status, 200);
  } finally {
    await srv.stop();
  }
});

test('a file of honest pages that decodes to more than 1 GiB: 413 by the work budget, in bounded memory', async () => {
  const srv = await startServer();
  try {
    const base = peakBytes(srv.pid);
    // 17 pages of 2^23 int64 rows: 64 MiB each (under the check's memory bound), 1.06 GiB in all
    const n = 2 ** 23;
    const pages = [page(2, 1, ENC.PLAIN, int64Dict(7))];
    for (let i = 0; i < 17; i++) pages.push(page(0, n, ENC.RLE_DICTIONARY, oneRun(n)));
    const file = parquetFile([{ name: 'v', type: T.INT64 }], [{ rows: 17 * n, chunks: [Buffer.concat(pages)] }]);
    const r = await put(srv, 'wide', file);
    assertProblem(r, 413, 'payload-too-large');
    assert.match(r.body.detail, /decodes to more than 1073741824 bytes/);
    assert.ok(peakBytes(srv.pid) - base < BOUND, `peak grew by ${(peakBytes(srv.pid) - base) / MiB} MiB`);
    // 8 such pages (512 MiB decoded) pass the check
    const ok = parquetFile([{ name: 'v', type: T.INT64 }], [{ rows: 8 * n, chunks: [Buffer.concat(pages.slice(0, 9))] }]);
    const r2 = await put(srv, 'wide', ok);
    assert.equal(r2.status, 201, r2.text);
    assert.equal(r2.body.rows, 8 * n);
    assert.ok(peakBytes(srv.pid) - base < BOUND, `peak grew by ${(peakBytes(srv.pid) - base) / MiB} MiB`);
  } finally {
    await srv.stop();
  }
});

test('a footer of 2^33 rows the pages do not hold is malformed, naming the row group', async () => {
  const srv = await startServer();
  try {
    const base = peakBytes(srv.pid);
    const pages = Buffer.concat([page(2, 1, ENC.PLAIN, int64Dict(7)), page(0, 1000, ENC.RLE_DICTIONARY, oneRun(1000))]);
    const file = parquetFile([{ name: 'v', type: T.INT64 }], [{ rows: 2n ** 33n, chunks: [pages] }]);
    let r = await put(srv, 'big', file);
    assertProblem(r, 422, 'malformed-data');
    assert.doesNotMatch(r.body.detail, /no memory/);
    assert.match(r.body.detail, /ends before its values/);
    assert.equal(r.body.row_group, 0);
    assert.equal(r.body.column, 'v');
    // in a query: the same words, and row_group in the query's error
    writeFileSync(path.join(srv.dataDir, 'big.parquet'), file);
    const err = await failedQuery(srv.base, { source: { dataset: 'big' }, ops: [{ agg: ['sum(v) as s'] }] });
    assert.match(JSON.stringify(err), /malformed-data/);
    assert.doesNotMatch(JSON.stringify(err), /no memory/);
    assert.equal(err.row_group, 0, JSON.stringify(err));
    assert.ok(peakBytes(srv.pid) - base < BOUND);
  } finally {
    await srv.stop();
  }
});

test('a page claiming 64 MiB for one value is refused before it is inflated', async () => {
  const srv = await startServer();
  try {
    const zeros = gzipSync(Buffer.alloc(64 * MiB));
    const chunk = page(0, 1, ENC.PLAIN, zeros, 64 * MiB);
    const file = parquetFile([{ name: 'v', type: T.INT64 }], [{ rows: 1, chunks: [chunk], codec: CODEC.GZIP }]);
    const r = await put(srv, 'zeros', file);
    assertProblem(r, 422, 'malformed-data');
    assert.match(r.body.detail, /a page of 1 values claims 67108864 bytes uncompressed/);
    assert.equal(r.body.row_group, 0);
  } finally {
    await srv.stop();
  }
});

test('a dictionary index past the dictionary in row group 1: row_group 1, the value named by position', async () => {
  const srv = await startServer();
  try {
    const good = Buffer.concat([page(2, 1, ENC.PLAIN, int64Dict(7)), page(0, 4, ENC.RLE_DICTIONARY, oneRun(4))]);
    // bit width 2, an RLE run of 3 zeros then one of index 3 (the dictionary has 1 entry)
    const idx = Buffer.from([2, 3 << 1, 0, 1 << 1, 3]);
    const bad = Buffer.concat([page(2, 1, ENC.PLAIN, int64Dict(7)), page(0, 4, ENC.RLE_DICTIONARY, idx)]);
    const file = parquetFile([{ name: 'v', type: T.INT64 }], [{ rows: 4, chunks: [good] }, { rows: 4, chunks: [bad] }]);
    const r = await put(srv, 'idx', file);
    assertProblem(r, 422, 'malformed-data');
    assert.equal(r.body.row_group, 1);
    assert.match(r.body.detail, /row group 1, column 'v'/);
    assert.match(r.body.detail, /dictionary index 3 of the page's non-null value 3 \(counted from 0\)/);
    writeFileSync(path.join(srv.dataDir, 'idx.parquet'), file);
    const err = await failedQuery(srv.base, { source: { dataset: 'idx' }, ops: [{ agg: ['sum(v) as s'] }] });
    assert.equal(err.row_group, 1, JSON.stringify(err));
  } finally {
    await srv.stop();
  }
});
