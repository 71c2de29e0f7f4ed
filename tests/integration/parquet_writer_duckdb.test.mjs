// parquet_writer_duckdb: framed's Parquet writer checked by other readers.
// The writer's unit test (unit_engine_test_parquet_write) writes its files,
// and each file's rows as JSON, into FRAMED_PARQUET_OUT_DIR; here DuckDB
// (@duckdb/node-api) and nodejs-polars read every file: the schema, every
// value, the statistics DuckDB decodes (min, max, null count per row group)
// and filtered counts (which DuckDB answers with row-group pruning by those
// statistics) must equal what the C test wrote. The unit test binary is
// found in FRAMED_UNIT_BIN_DIR, else next to FRAMED_BIN (the build dir).
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { existsSync, mkdtempSync, readdirSync, readFileSync, rmSync } from 'node:fs';
import { createRequire } from 'node:module';
import { tmpdir } from 'node:os';
import path from 'node:path';

const SOURCE_DIR = process.env.FRAMED_SOURCE_DIR;
const BIN_DIR = process.env.FRAMED_UNIT_BIN_DIR ||
  (process.env.FRAMED_BIN ? path.dirname(process.env.FRAMED_BIN) : null);
if (!BIN_DIR) throw new Error('FRAMED_UNIT_BIN_DIR or FRAMED_BIN must name the build directory');
const UNIT = path.join(BIN_DIR, 'unit_engine_test_parquet_write');

function requireFromSource(name) {
  const require = createRequire(path.join(SOURCE_DIR || process.cwd(), 'package.json'));
  return require.resolve(name);
}
async function load(name) {
  try {
    return await import(name);
  } catch {
    return await import(requireFromSource(name));
  }
}

const DUCK_TYPES = {
  int64: 'BIGINT', float64: 'DOUBLE', bool: 'BOOLEAN', string: 'VARCHAR', date: 'DATE',
  timestamp: 'TIMESTAMP WITH TIME ZONE',
};
const POLARS_TYPES = {
  int64: 'Int64', float64: 'Float64', bool: 'Bool', string: 'String', date: 'Date',
  timestamp: 'Datetime(us,UTC)',
};

// The files are made before the tests are declared, one test per file and reader.
assert.ok(existsSync(UNIT), `${UNIT} is missing: build the unit tests first`);
const outDir = mkdtempSync(path.join(tmpdir(), 'framed-pqw-'));
const run = spawnSync(UNIT, [], {
  env: { ...process.env, FRAMED_PARQUET_OUT_DIR: outDir }, encoding: 'utf8', timeout: 300000,
});
const files = readdirSync(outDir).filter((f) => f.endsWith('.parquet')).map((f) => f.slice(0, -8)).sort();
let duck;
let pl;

before(async () => {
  const { DuckDBInstance } = await load('@duckdb/node-api');
  const inst = await DuckDBInstance.create(':memory:', { threads: '2' });
  duck = { inst, con: await inst.connect() };
  pl = (await load('nodejs-polars')).default;
});

after(() => {
  duck?.con?.closeSync?.();
  rmSync(outDir, { recursive: true, force: true });
});

test('the writer\'s unit test passes and writes every file with its rows', () => {
  assert.equal(run.status, 0, `the writer's unit test failed:\n${run.stdout}\n${run.stderr}`);
  for (const name of ['all_types_plain', 'all_types_snappy', 'all_types_zstd', 'dictionary_overflow',
    'long_strings', 'no_row_groups', 'row_groups', 'zero_rows']) {
    assert.ok(files.includes(name), `${name}.parquet was not written`);
    assert.ok(existsSync(path.join(outDir, `${name}.json`)), `${name}.json was not written`);
  }
});

const fileOf = (name) => path.join(outDir, `${name}.parquet`);
const expectedOf = (name) => JSON.parse(readFileSync(path.join(outDir, `${name}.json`), 'utf8'));
const q = (s) => `"${s.replaceAll('"', '""')}"`;

// A value as the C test wrote it: int64 and timestamps as decimal strings,
// floats as strings ("NaN", "-0"), dates as days, the rest as they are.
function canon(type, v) {
  if (v === null || v === undefined) return null;
  if (type === 'int64' || type === 'timestamp') return String(v);
  if (type === 'float64') return typeof v === 'string' ? Number(v) : v;
  if (type === 'date') return Number(v);
  return v;
}

function sameValue(type, got, want) {
  if (type === 'float64' && want !== null) return Object.is(got, want) || (Number.isNaN(got) && Number.isNaN(want));
  return got === want;
}

function compareRows(who, columns, got, rows) {
  assert.equal(got.length, rows.length, `${who}: row count`);
  let bad = 0;
  const shown = [];
  for (let r = 0; r < rows.length; r++) {
    for (let c = 0; c < columns.length; c++) {
      const [name, type] = columns[c];
      const want = canon(type, rows[r][c]);
      if (!sameValue(type, got[r][c], want)) {
        bad++;
        if (shown.length < 5) shown.push(`row ${r} ${name}: got ${String(got[r][c])} want ${String(want)}`);
      }
    }
  }
  assert.equal(bad, 0, `${who}: ${bad} values differ:\n${shown.join('\n')}`);
}

// The SELECT that brings every column into the C test's form.
function duckProjection(columns) {
  return columns.map(([name, type]) => {
    if (type === 'int64') return `cast(${q(name)} as varchar)`;
    if (type === 'date') return `date_diff('day', date '1970-01-01', ${q(name)})`;
    if (type === 'timestamp') return `cast(epoch_us(${q(name)}) as varchar)`;
    return q(name);
  }).join(', ');
}

for (const name of files) {
  test(`DuckDB reads ${name}.parquet as written`, async () => {
    const { columns, rows } = expectedOf(name);
    const src = `read_parquet('${fileOf(name)}', file_row_number = true)`;
    const desc = (await duck.con.runAndReadAll(`describe select * exclude (file_row_number) from ${src}`)).getRows();
    assert.deepEqual(desc.map((r) => [r[0], r[1]]), columns.map(([n, t]) => [n, DUCK_TYPES[t]]));
    const sql = `select ${duckProjection(columns)} from ${src} order by file_row_number`;
    const got = (await duck.con.runAndReadAll(sql)).getRows().map((r) => r.map((v, c) => canon(columns[c][1], v)));
    compareRows(`DuckDB ${name}`, columns, got, rows);
  });

  test(`Polars reads ${name}.parquet as written`, () => {
    const { columns, rows } = expectedOf(name);
    const df = pl.readParquet(fileOf(name));
    assert.deepEqual(df.columns, columns.map(([n]) => n));
    assert.deepEqual(df.dtypes.map((d) => String(d).replace(/^DataType\((.*)\)$/, '$1')),
      columns.map(([, t]) => POLARS_TYPES[t]));
    assert.equal(df.height, rows.length);
    const cast = df.select(...columns.map(([n, t]) => t === 'timestamp' ? pl.col(n).cast(pl.Int64)
      : t === 'date' ? pl.col(n).cast(pl.Int32) : pl.col(n)));
    const cols = columns.map(([n, t]) => cast.getColumn(n).toArray().map((v) => canon(t, v)));
    const got = rows.map((_, r) => cols.map((c) => c[r]));
    compareRows(`Polars ${name}`, columns, got, rows);
  });

  test(`DuckDB decodes the statistics of ${name}.parquet and prunes by them correctly`, async () => {
    const { columns, rows } = expectedOf(name);
    const meta = (await duck.con.runAndReadAll(
      `select row_group_id, row_group_num_rows, column_id, stats_min_value, stats_max_value, stats_null_count
         from parquet_metadata('${fileOf(name)}') order by row_group_id, column_id`)).getRowObjectsJS();
    const groups = new Map();
    for (const m of meta) groups.set(Number(m.row_group_id), Number(m.row_group_num_rows));
    let first = 0;
    for (const [rg, n] of [...groups.entries()].sort((a, b) => a[0] - b[0])) {
      const slice = rows.slice(first, first + n);
      first += n;
      for (const m of meta.filter((x) => Number(x.row_group_id) === rg)) {
        const c = Number(m.column_id);
        const [col, type] = columns[c];
        const vals = slice.map((r) => canon(type, r[c])).filter((v) => v !== null);
        assert.equal(Number(m.stats_null_count), n - vals.length, `${col} rg ${rg}: null count`);
        checkMinMax(`${col} rg ${rg}`, type, vals, m.stats_min_value, m.stats_max_value);
      }
    }
    assert.equal(first, rows.length);
    for (let c = 0; c < columns.length; c++) {
      const [col, type] = columns[c];
      if (!['int64', 'string', 'date', 'float64'].includes(type)) continue;
      const vals = rows.map((r) => r[c]).filter((v) => v !== null && v !== 'NaN');
      if (!vals.length) continue;
      const pivot = vals[Math.floor(vals.length / 2)];
      const lit = type === 'string' ? `'${pivot.replaceAll("'", "''")}'`
        : type === 'date' ? `date '1970-01-01' + ${pivot}` : type === 'int64' ? pivot : `${Number(pivot)}::double`;
      const want = vals.filter((v) => cmp(type, v, pivot) > 0).length;
      const nanGuard = type === 'float64' ? ` and not isnan(${q(col)})` : ''; // NaN sorts above all
      const [[got]] = (await duck.con.runAndReadAll(
        `select count(*) from read_parquet('${fileOf(name)}') where ${q(col)} > ${lit}${nanGuard}`)).getRows();
      assert.equal(Number(got), want, `${col} > ${pivot}`);
    }
  });
}

function cmp(type, a, b) {
  if (type === 'string') {
    const x = Buffer.from(a), y = Buffer.from(b);
    return Buffer.compare(x, y);
  }
  if (type === 'int64') return BigInt(a) < BigInt(b) ? -1 : BigInt(a) > BigInt(b) ? 1 : 0;
  return Number(a) - Number(b);
}

// DuckDB's rendering of a min/max against the values' own min/max (strings
// only when exact: past 64 bytes the writer cuts them).
function checkMinMax(what, type, vals, min, max) {
  const real = vals.filter((v) => !(type === 'float64' && Number.isNaN(v)));
  if (!real.length) {
    assert.equal(min, null, `${what}: a min without values`);
    return;
  }
  if (type === 'string') {
    const sorted = [...real].sort((a, b) => cmp('string', a, b));
    const lo = sorted[0], hi = sorted[sorted.length - 1];
    if (Buffer.byteLength(lo) <= 64) assert.equal(min, lo, `${what}: min`);
    else assert.ok(lo.startsWith(min ?? ''), `${what}: a cut min is a prefix`);
    if (Buffer.byteLength(hi) <= 64) assert.equal(max, hi, `${what}: max`);
    else if (max !== null) assert.ok(cmp('string', max, hi) > 0, `${what}: a cut max is above every value`);
    return;
  }
  if (type === 'int64') {
    const sorted = [...real].sort((a, b) => cmp('int64', a, b));
    assert.equal(min, sorted[0], `${what}: min`);
    assert.equal(max, sorted[sorted.length - 1], `${what}: max`);
  } else if (type === 'float64') {
    // == as -0 == 0: the format writes a zero min as -0 and a zero max as +0
    assert.ok(Number(min) == real.reduce((a, b) => Math.min(a, b)), `${what}: min ${min}`);
    assert.ok(Number(max) == real.reduce((a, b) => Math.max(a, b)), `${what}: max ${max}`);
  } else if (type === 'date') {
    const day = (s) => Math.round(Date.parse(`${s}T00:00:00Z`) / 86400000);
    assert.equal(day(min), real.reduce((a, b) => Math.min(a, b)), `${what}: min ${min}`);
    assert.equal(day(max), real.reduce((a, b) => Math.max(a, b)), `${what}: max ${max}`);
  }
}
