// sql_lib: what the SQL suites share (sql_golden, sql_dbbench, tpch; the loader also
// differential and window): DuckDB
// in process as the source of every expected answer, running a statement
// through framed's SQL over HTTP (POST /v1/queries {"sql": ...}, then the
// result), and comparing the two answers: columns (names case-insensitively,
// DuckDB's types mapped to framed's), row counts, rows as multisets or in
// order, floats within a relative tolerance.
import assert from 'node:assert/strict';
import { createRequire } from 'node:module';
import path from 'node:path';
import { call, SOURCE_DIR } from './lib.mjs';

// @duckdb/node-api from the repository's node_modules: if it cannot be loaded
// the suite FAILS, it never skips.
export async function loadDuckDb() {
  const errors = [];
  try {
    return await import('@duckdb/node-api');
  } catch (e) {
    errors.push(e.message);
  }
  if (SOURCE_DIR) {
    try {
      const require = createRequire(path.join(SOURCE_DIR, 'package.json'));
      return await import(require.resolve('@duckdb/node-api'));
    } catch (e) {
      errors.push(e.message);
    }
  }
  throw new Error('the tests that check answers against DuckDB need @duckdb/node-api (pinned in package.json): run `npm ci` in ' +
    'the source directory. Loading it failed: ' + errors.join(' | '));
}

// A DuckDB connection with 2 threads and UTC as its time zone (framed's
// timestamps are UTC).
export async function duckConnect() {
  const { DuckDBInstance } = await loadDuckDb();
  const inst = await DuckDBInstance.create(':memory:', { threads: '2' });
  const con = await inst.connect();
  await con.run("SET TimeZone = 'UTC'");
  return { inst, con };
}

// framed's type of a DuckDB type (its text).
export function framedType(duckType) {
  const t = duckType.toUpperCase();
  if (/^(BIGINT|INTEGER|SMALLINT|TINYINT|HUGEINT|UBIGINT|UINTEGER|USMALLINT|UTINYINT|UHUGEINT)$/.test(t)) return 'int64';
  if (/^(DOUBLE|FLOAT|REAL)$/.test(t) || t.startsWith('DECIMAL')) return 'float64';
  if (t === 'VARCHAR') return 'string';
  if (t === 'BOOLEAN') return 'bool';
  if (t === 'DATE') return 'date';
  if (t.startsWith('TIMESTAMP')) return 'timestamp';
  return `duckdb:${t}`;
}

const pad2 = (n) => String(n).padStart(2, '0');
function isoDate(d) {
  const y = d.getUTCFullYear();
  const ys = y < 0 ? '-' + String(-y).padStart(4, '0') : String(y).padStart(4, '0');
  return `${ys}-${pad2(d.getUTCMonth() + 1)}-${pad2(d.getUTCDate())}`;
}

// One value in the form both sides are compared in: numbers as numbers,
// dates as 'YYYY-MM-DD', timestamps as epoch milliseconds, NaN as null.
function normValue(v, type) {
  if (v === null || v === undefined) return null;
  if (typeof v === 'bigint') return Number(v);
  if (typeof v === 'number' && Number.isNaN(v)) return null;
  if (type === 'date') {
    if (v instanceof Date) return isoDate(v);
    return String(v).slice(0, 10);
  }
  if (type === 'timestamp') {
    if (v instanceof Date) return v.getTime();
    // framed: 2024-02-29T23:59:59.500000Z; JS parses milliseconds only.
    const s = String(v).replace(/(\.\d{3})\d+/, '$1');
    const ms = Date.parse(s);
    return Number.isNaN(ms) ? s : ms;
  }
  if (type === 'float64' && typeof v === 'string' && /^-?[\d.]+(e[-+]?\d+)?$/i.test(v)) return Number(v);
  if (typeof v === 'object' && typeof v.toDouble === 'function') return v.toDouble();
  return v;
}

// DuckDB's answer: {columns: [{name, type}], rows} in the compared form.
export async function duckAnswer(con, sql) {
  const r = await con.runAndReadAll(sql);
  const types = r.columnTypes().map((t) => framedType(t.toString()));
  const columns = r.columnNames().map((name, i) => ({ name, type: types[i] }));
  const rows = r.getRowsJS().map((row) => row.map((v, i) => normValue(v, types[i])));
  return { columns, rows };
}

const TERMINAL = ['succeeded', 'failed', 'cancelled'];

// POSTs {"sql": text} and returns the reply ({status, body, text}) as is.
export async function framedSubmit(base, sql, waitS = 60) {
  return call(base, 'POST', `/v1/queries?wait=${waitS}`, { json: { sql } });
}

// Runs a statement on framed to its end and returns its answer in the
// compared form, or throws an AssertionError that says what went wrong
// (the problem of a refused statement, the error of a failed query). A query
// still running after timeoutMs is cancelled (DELETE) and the call fails.
export async function framedAnswer(base, sql, { timeoutMs = 120000, ndjson = false } = {}) {
  let r = await framedSubmit(base, sql, Math.min(60, Math.ceil(timeoutMs / 1000)));
  assert.ok([200, 201, 202].includes(r.status), `POST /v1/queries {sql} -> ${r.status}: ${r.text}`);
  const id = r.body.id;
  const deadline = Date.now() + timeoutMs;
  while (!TERMINAL.includes(r.body.state)) {
    if (Date.now() > deadline) {
      await call(base, 'DELETE', `/v1/queries/${id}`);
      assert.fail(`query ${id} still ${r.body.state} after ${timeoutMs} ms (cancelled)`);
    }
    await new Promise((res) => setTimeout(res, 100));
    r = await call(base, 'GET', `/v1/queries/${id}`);
    assert.equal(r.status, 200, r.text);
  }
  assert.equal(r.body.state, 'succeeded', `query ${id} ${r.body.state}: ${JSON.stringify(r.body.error)}`);
  if (ndjson) return framedNdjson(base, id);
  const res = await call(base, 'GET', `/v1/queries/${id}/result`);
  assert.equal(res.status, 200, res.text);
  assert.equal(res.body.total_rows, res.body.rows.length, 'the JSON result holds every row');
  const columns = res.body.columns.map((c) => ({ name: c.name, type: c.type }));
  const rows = res.body.rows.map((row) => row.map((v, i) => normValue(v, columns[i].type)));
  return { id, columns, rows };
}

async function framedNdjson(base, id) {
  const head = await call(base, 'GET', `/v1/queries/${id}/result?limit=0`);
  assert.equal(head.status, 200, head.text);
  const columns = head.body.columns.map((c) => ({ name: c.name, type: c.type }));
  const res = await call(base, 'GET', `/v1/queries/${id}/result`, { headers: { accept: 'application/x-ndjson' } });
  assert.equal(res.status, 200, res.text);
  const objs = res.text.split('\n').filter((l) => l.length).map((l) => JSON.parse(l));
  assert.equal(objs.length, head.body.total_rows, 'NDJSON lines vs total_rows');
  const rows = objs.map((o) => columns.map((c) => normValue(o[c.name], c.type)));
  return { id, columns, rows };
}

function sortKey(row) {
  return JSON.stringify(row.map((v) => (typeof v === 'number' && !Number.isInteger(v) ? Number(v.toPrecision(9)) : v)));
}
export function sortRows(rows) {
  return rows.map((r) => [sortKey(r), r]).sort((a, b) => (a[0] < b[0] ? -1 : a[0] > b[0] ? 1 : 0)).map((x) => x[1]);
}

// Equal, or both numbers within tol relative (an absolute 1e-12 near zero).
export function closeTo(a, b, tol) {
  if (a === b) return true;
  if (typeof a !== 'number' || typeof b !== 'number') return false;
  return Math.abs(a - b) <= tol * Math.max(Math.abs(a), Math.abs(b)) + 1e-12;
}

// Asserts framed's answer `got` equals DuckDB's `want`. opts: ordered
// (compare in order), tol (relative, default 1e-9), types (compare column
// types, default true), what (a label for messages).
export function assertSameAnswer(got, want, opts = {}) {
  const { ordered = false, tol = 1e-9, types = true, what = '' } = opts;
  const names = (a) => a.columns.map((c) => c.name.toLowerCase());
  assert.deepEqual(names(got), names(want), `${what}: column names (framed vs DuckDB)`);
  if (types) {
    assert.deepEqual(got.columns.map((c) => c.type), want.columns.map((c) => c.type),
      `${what}: column types (framed vs DuckDB's mapped to framed's)`);
  }
  assert.equal(got.rows.length, want.rows.length,
    `${what}: row count (framed ${got.rows.length}, DuckDB ${want.rows.length})` +
    `\nframed: ${JSON.stringify(got.rows.slice(0, 12))}\nduckdb: ${JSON.stringify(want.rows.slice(0, 12))}`);
  const a = ordered ? got.rows : sortRows(got.rows);
  const b = ordered ? want.rows : sortRows(want.rows);
  const shown = [];
  let bad = 0;
  for (let i = 0; i < a.length; i++) {
    if (a[i].length !== b[i].length || a[i].some((v, j) => !closeTo(v, b[i][j], tol))) {
      bad++;
      if (shown.length < 6) shown.push(`row ${i}: framed ${JSON.stringify(a[i])} duckdb ${JSON.stringify(b[i])}`);
    }
  }
  assert.equal(bad, 0, `${what}: ${bad} of ${a.length} rows differ${ordered ? ' (in order)' : ' (as multisets)'}:\n${shown.join('\n')}`);
}

// True when the statement has an ORDER BY at its top level (outside
// parentheses and quotes): its rows are then compared in order.
export function hasTopLevelOrderBy(sql) {
  let depth = 0;
  let out = '';
  for (let i = 0; i < sql.length; i++) {
    const c = sql[i];
    if (c === "'" || c === '"') {
      const j = sql.indexOf(c, i + 1);
      i = j < 0 ? sql.length : j;
      out += ' ';
      continue;
    }
    if (c === '-' && sql[i + 1] === '-') {
      const j = sql.indexOf('\n', i);
      i = j < 0 ? sql.length : j;
      continue;
    }
    if (c === '(') depth++;
    else if (c === ')') depth--;
    else if (depth === 0) out += c;
  }
  return /\border\s+by\b/i.test(out);
}
