// result_arrow: a query's result as an Arrow IPC stream over real HTTP, read
// back by apache-arrow and by nodejs-polars and compared value for value with
// the JSON result of the same query: every type with nulls, several record
// batches (a small morsel_size_rows), an empty result, offset/limit, Accept
// negotiation, 406 and the parameter errors.
import assert from 'node:assert/strict';
import { createRequire } from 'node:module';
import path from 'node:path';
import { after, before, test } from 'node:test';
import { assertProblem, call, SOURCE_DIR, startServer } from './lib.mjs';

const require = createRequire(path.join(SOURCE_DIR, 'package.json'));
const arrow = require('apache-arrow');
const pl = require('nodejs-polars');

const MORSEL = 1000;
const NROWS = 2537; // three batches: 1000, 1000, 537
const ARROW = 'application/vnd.apache.arrow.stream';

// Every engine type, each with nulls at a pattern of its own, and strings
// that are empty, long and not ASCII.
function rows() {
  const out = [];
  for (let r = 0; r < NROWS; r++) {
    const day = String(1 + (r % 28)).padStart(2, '0');
    out.push({
      id: r,
      b: r % 5 === 4 ? null : r % 2 === 0,
      i: r % 3 === 0 ? null : (r - 1000) * 1000003,
      f: r % 7 === 0 ? null : r / 8 - 0.1,
      s: r % 11 === 0 ? null : r % 13 === 0 ? '' : `v${r}-${'é☃'.repeat(r % 4)}${r % 50 === 1 ? 'x'.repeat(300) : ''}`,
      d: r % 17 === 0 ? null : `${1990 + (r % 40)}-0${1 + (r % 9)}-${day}`,
      ts: r % 19 === 0 ? null : `2024-0${1 + (r % 9)}-${day}T${String(r % 24).padStart(2, '0')}:07:09.${String(r * 37 % 1000000).padStart(6, '0')}`,
    });
  }
  return out;
}
const SCHEMA = { d: 'date', ts: 'timestamp' };
const TYPES = { id: 'Int64', b: 'Bool', i: 'Int64', f: 'Float64', s: 'LargeUtf8', d: 'Date32<DAY>', ts: 'Timestamp<MICROSECOND, UTC>' };

let srv;
let qid; // every row, in id order
let emptyId; // no rows

async function submit(plan) {
  const r = await call(srv.base, 'POST', '/v1/queries?wait=60', { json: { plan } });
  assert.equal(r.status, 200, r.text);
  assert.equal(r.body.state, 'succeeded', r.text);
  return r.body.id;
}

before(async () => {
  srv = await startServer();
  const cfg = await call(srv.base, 'POST', '/v1/config', { json: { morsel_size_rows: MORSEL } });
  assert.equal(cfg.status, 200, cfg.text);
  const source = { rows: rows(), schema: SCHEMA };
  qid = await submit({ source, ops: [{ sort: ['id'] }] });
  emptyId = await submit({ source, ops: [{ where: 'id < 0' }] });
});

after(async () => {
  await srv?.stop();
});

async function fetchBytes(url, headers = {}) {
  const r = await fetch(srv.base + url, { headers });
  const bytes = Buffer.from(await r.arrayBuffer());
  return { status: r.status, headers: r.headers, bytes };
}

async function jsonResult(id, query = '') {
  const r = await call(srv.base, 'GET', `/v1/queries/${id}/result${query}`);
  assert.equal(r.status, 200, r.text);
  return r.body;
}

// Microseconds since the epoch of the JSON's ISO text (exactly, as BigInt).
function isoMicros(text) {
  const m = /^(\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2})(?:\.(\d{1,6}))?(Z|[+-]00:00)?$/.exec(text);
  assert.ok(m, `a timestamp: ${text}`);
  return BigInt(Date.parse(`${m[1]}Z`)) * 1000n + BigInt((m[2] ?? '').padEnd(6, '0') || '0');
}

function isoDays(text) {
  assert.match(text, /^\d{4}-\d{2}-\d{2}$/);
  return Date.parse(`${text}T00:00:00Z`) / 86400000;
}

// The JSON rows as the values an Arrow reader gives (BigInt ints, date days,
// timestamp microseconds).
function expected(json) {
  const types = json.columns.map((c) => c.type);
  return json.rows.map((row) => row.map((v, k) => {
    if (v === null) return null;
    if (types[k] === 'int64') return BigInt(v);
    if (types[k] === 'date') return isoDays(v);
    if (types[k] === 'timestamp') return isoMicros(v);
    return v;
  }));
}

// Rows of an apache-arrow table read raw: ints and timestamps from their
// BigInt64 buffers, dates as int32 days.
function arrowRows(table) {
  const out = [];
  for (const batch of table.batches) {
    for (let i = 0; i < batch.numRows; i++) {
      out.push(batch.schema.fields.map((f, k) => {
        const data = batch.getChildAt(k).data[0];
        if (!batch.getChildAt(k).isValid(i)) return null;
        if (f.type.typeId === arrow.Type.Date || f.type.typeId === arrow.Type.Timestamp) return typeof data.values[i] === 'bigint' ? data.values[i] : Number(data.values[i]);
        return batch.getChildAt(k).get(i);
      }));
    }
  }
  return out;
}

function checkArrow(bytes, json) {
  const table = arrow.tableFromIPC(bytes);
  assert.deepEqual(table.schema.fields.map((f) => f.name), json.columns.map((c) => c.name));
  for (const f of table.schema.fields) {
    assert.equal(String(f.type), TYPES[f.name], f.name);
    assert.equal(f.nullable, true, f.name);
  }
  assert.equal(table.numRows, json.rows.length);
  assert.deepEqual(arrowRows(table), expected(json));
  return table;
}

// nodejs-polars: its own reader of the same bytes; ints and timestamps
// compared through casts to Int64 (microseconds), dates through Int32 days.
function checkPolars(bytes, json) {
  const df = pl.readIPCStream(bytes);
  assert.deepEqual(df.columns, json.columns.map((c) => c.name));
  assert.deepEqual(df.dtypes.map(String), ['Int64', 'Bool', 'Int64', 'Float64', 'String', 'Date', 'Datetime(us,UTC)'].map((t) => `DataType(${t})`));
  const raw = df.select(pl.col('id'), pl.col('b'), pl.col('i'), pl.col('f'), pl.col('s'),
    pl.col('d').cast(pl.Int32), pl.col('ts').cast(pl.Int64));
  const got = raw.rows().map((row) => row.map((v, k) => (v === null || v === undefined ? null
    : [0, 2, 6].includes(k) ? BigInt(v) : v)));
  assert.equal(df.height, json.rows.length);
  assert.deepEqual(got, expected(json));
}

// The stream's messages: [metadata length, body length] each, walking the
// framing; asserts the continuation, 8-byte alignment and the end marker.
function messages(bytes) {
  const out = [];
  let pos = 0;
  for (;;) {
    assert.equal(bytes.readUInt32LE(pos), 0xffffffff, `continuation at ${pos}`);
    const meta = bytes.readInt32LE(pos + 4);
    if (meta === 0) {
      assert.equal(pos + 8, bytes.length, 'the end-of-stream marker ends the body');
      return out;
    }
    assert.equal(meta % 8, 0, 'metadata padded to 8 bytes');
    const root = pos + 8;
    const table = root + bytes.readUInt32LE(root);
    const vtable = table - bytes.readInt32LE(table);
    const bodyOff = vtable + 4 + 2 * 3; // field 3: bodyLength
    const at = bytes.readUInt16LE(vtable) > 10 ? bytes.readUInt16LE(bodyOff) : 0;
    const body = at ? Number(bytes.readBigInt64LE(table + at)) : 0;
    assert.equal(body % 8, 0, 'body padded to 8 bytes');
    out.push([meta, body]);
    pos += 8 + meta + body;
  }
}

test('an Arrow result of every type with nulls, in several batches, equals the JSON result', async () => {
  const json = await jsonResult(qid);
  assert.equal(json.rows.length, NROWS);
  const r = await fetchBytes(`/v1/queries/${qid}/result?format=arrow`);
  assert.equal(r.status, 200);
  assert.equal(r.headers.get('content-type'), ARROW);
  const table = checkArrow(r.bytes, json);
  assert.deepEqual(table.batches.map((b) => b.numRows), [1000, 1000, 537], 'one batch per morsel_size_rows rows');
  assert.equal(messages(r.bytes).length, 4, 'a schema and three batches');
  checkPolars(r.bytes, json);
  // HEAD says the length a GET streams.
  const head = await fetch(`${srv.base}/v1/queries/${qid}/result?format=arrow`, { method: 'HEAD' });
  assert.equal(head.status, 200);
  assert.equal(Number(head.headers.get('content-length')), r.bytes.length);
});

test('offset and limit cut the Arrow result as they cut the JSON one', async () => {
  for (const q of ['offset=7&limit=1500', 'offset=1001', 'limit=3', 'offset=2536', 'offset=5000']) {
    const json = await jsonResult(qid, `?${q}`);
    const r = await fetchBytes(`/v1/queries/${qid}/result?format=arrow&${q}`);
    assert.equal(r.status, 200, q);
    const table = checkArrow(r.bytes, json);
    assert.equal(table.numRows, json.rows.length, q);
    if (json.rows.length > 0) checkPolars(r.bytes, json);
  }
});

test('an empty result is a schema message and the end marker', async () => {
  const json = await jsonResult(emptyId);
  assert.equal(json.rows.length, 0);
  const r = await fetchBytes(`/v1/queries/${emptyId}/result?format=arrow`);
  assert.equal(r.status, 200);
  const table = checkArrow(r.bytes, json);
  assert.equal(table.numRows, 0);
  assert.equal(messages(r.bytes).length, 1, 'the schema only');
  const df = pl.readIPCStream(r.bytes);
  assert.equal(df.height, 0);
  assert.deepEqual(df.columns, json.columns.map((c) => c.name));
});

test('Accept negotiates the Arrow and Parquet types; the others stay as they were', async () => {
  const target = `/v1/queries/${qid}/result?limit=10`;
  const cases = [
    [ARROW, ARROW],
    [`${ARROW};q=0.9, application/json;q=0.5`, ARROW],
    ['application/vnd.apache.parquet', 'application/vnd.apache.parquet'],
    [`application/*`, 'application/json'],
    ['*/*', 'application/json'],
    [`${ARROW};q=0.5, text/csv`, 'text/csv; charset=utf-8'],
  ];
  for (const [accept, type] of cases) {
    const r = await fetchBytes(target, { accept });
    assert.equal(r.status, 200, accept);
    assert.equal(r.headers.get('content-type'), type, accept);
    if (type === ARROW) assert.equal(arrow.tableFromIPC(r.bytes).numRows, 10);
  }
  const no = await call(srv.base, 'GET', target, { headers: { accept: `${ARROW};q=0, image/png` } });
  assertProblem(no, 406, 'not-acceptable');
  assert.ok(no.body.offered.includes(ARROW) && no.body.offered.includes('application/vnd.apache.parquet'));
  assert.match(no.body.detail, /application\/vnd\.apache\.arrow\.stream/);
  const down = await fetchBytes(`/v1/queries/${qid}/result?format=arrow&download=1`);
  assert.equal(down.headers.get('content-disposition'), `attachment; filename="${qid}.arrow"`);
});

test('a bad format or compression is 400 invalid-parameter', async () => {
  for (const [q, parameter] of [['format=feather', 'format'], ['format=parquet&compression=gzip', 'compression'],
    ['compression=', 'compression'], ['format=arrow&compression=lz4', 'compression']]) {
    const r = await call(srv.base, 'GET', `/v1/queries/${qid}/result?${q}`);
    assertProblem(r, 400, 'invalid-parameter');
    assert.equal(r.body.parameter, parameter, q);
  }
});
