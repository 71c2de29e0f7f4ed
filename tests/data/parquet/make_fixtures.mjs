// make_fixtures: writes the Parquet fixtures of the reader's unit tests
// (tests/unit/engine/test_parquet_*.c) with DuckDB and nodejs-polars, and
// beside each <name>.parquet the expected contents <name>.json as DuckDB
// reads them: {"columns":[{"name","type"}],"rows":[[...]]}, with ints and
// timestamps (epoch microseconds) as strings, dates as epoch days, floats
// and decimals as numbers. Run from the repository: node tests/data/parquet/make_fixtures.mjs
import { DuckDBInstance } from '@duckdb/node-api';
import { createRequire } from 'node:module';
import { writeFileSync, statSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';

const dir = dirname(fileURLToPath(import.meta.url));
const require = createRequire(import.meta.url);
const inst = await DuckDBInstance.create(':memory:', { threads: '1' });
const con = await inst.connect();

// Every type of the reader's mapping, a null every 7th row (shifted per
// column), 300 rows.
const N = 300;
const nul = (k, e) => `case when (i + ${k}) % 7 = 0 then null else ${e} end`;
const cols = [
  ['i32', 'int64', nul(0, '(i * 7919 - 1000000)::INTEGER')],
  ['i64', 'int64', nul(1, '(i * 1234567890123 - 99999999999999)::BIGINT')],
  ['i8', 'int64', nul(2, '((i % 256) - 128)::TINYINT')],
  ['i16', 'int64', nul(3, '(i * 211 % 65536 - 32768)::SMALLINT')],
  ['u8', 'int64', nul(4, '(i % 256)::UTINYINT')],
  ['u16', 'int64', nul(5, '(i * 331 % 65536)::USMALLINT')],
  ['u32', 'int64', nul(6, '(i * 14316557 % 4294967296)::UINTEGER')],
  ['f32', 'float64', nul(0, '(i / 8.0 - 3.25)::FLOAT')],
  ['f64', 'float64', nul(1, '(i * 1.1 - 64.904572)::DOUBLE')],
  ['b', 'bool', nul(2, 'i % 3 = 0')],
  ['s', 'string', nul(3, "'str_' || (i % 17)::VARCHAR || repeat('é', i % 3)")],
  ['d', 'date', nul(4, "DATE '1969-12-25' + (i * 37)::INTEGER")],
  ['ts', 'timestamp', nul(5, "TIMESTAMP '1969-12-31 23:00:00' + to_microseconds(i * 3600000123)")],
  ['ts_ms', 'timestamp', nul(6, "(TIMESTAMP '2001-02-03 04:05:06' + to_milliseconds(i * 86400001))::TIMESTAMP_MS")],
  ['ts_ns', 'timestamp', nul(0, "(TIMESTAMP '1969-12-31 23:59:59' + to_microseconds(i * 1000001))::TIMESTAMP_NS")],
  ['tstz', 'timestamp', nul(1, "(TIMESTAMP '2020-01-01 00:00:00' + to_microseconds(i * 77777))::TIMESTAMPTZ")],
  ['dec4', 'float64', nul(2, '((i - 150) * 0.37)::DECIMAL(4,2)')],
  ['dec18', 'float64', nul(3, '((i - 150) * 123456789.123)::DECIMAL(18,3)')],
  ['dec38', 'float64', nul(4, '((i - 150) * 98765432109876.54321)::DECIMAL(38,5)')],
];
const allTypes = `select ${cols.map(([n, , e]) => `${e} as ${n}`).join(', ')} from range(${N}) t(i)`;

// The expected values: a JSON-friendly expression per engine type.
function expectExpr(name, type) {
  switch (type) {
    case 'int64': return `${name}::BIGINT::VARCHAR`;
    case 'timestamp': return `epoch_us(${name}::TIMESTAMP)::VARCHAR`;
    case 'date': return `date_diff('day', DATE '1970-01-01', ${name})::INTEGER`;
    case 'float64': return `${name}::DOUBLE`;
    default: return name;
  }
}

async function expect(file, columns, json = file) {
  const path = join(dir, `${file}.parquet`);
  const sel = columns.map(([n, t]) => expectExpr(n, t)).join(', ');
  const r = await con.runAndReadAll(`select ${sel} from read_parquet('${path}')`);
  const rows = r.getRows().map((row) => row.map((v) => (typeof v === 'bigint' ? v.toString() : v)));
  const out = { columns: columns.map(([name, type]) => ({ name, type })), rows };
  writeFileSync(join(dir, `${json}.json`), JSON.stringify(out) + '\n');
  const size = statSync(path).size;
  if (size > 65536) throw new Error(`${file}.parquet is ${size} bytes (> 64 KiB)`);
  console.log(`${file}.parquet: ${size} bytes, ${rows.length} rows`);
}

async function copy(file, sql, opts, columns, json = file) {
  await con.run(`copy (${sql}) to '${join(dir, `${file}.parquet`)}' (format parquet, ${opts})`);
  if (columns) await expect(file, columns, json);
}

const typed = cols.map(([n, t]) => [n, t]);
// Codecs and format versions (one expectation, types.json, for all).
for (const [codec, ver] of [['uncompressed', 'V1'], ['snappy', 'V1'], ['gzip', 'V1'], ['zstd', 'V1'],
  ['lz4', 'V1'], ['snappy', 'V2'], ['zstd', 'V2']]) {
  await copy(`types_${codec}_${ver.toLowerCase()}`, allTypes,
    `compression ${codec}, parquet_version ${ver}`, typed, 'types');
}
// Dictionary fallback: few distinct strings in the first row group, many
// after; and an int column DuckDB writes with a dictionary then plain.
const fallback = `select case when i < 4096 then 'k' || (i % 5)::VARCHAR else 'v' || (i * 7)::VARCHAR end as s,
  case when i % 11 = 0 then null when i < 4096 then i % 4 else i end::BIGINT as n from range(6000) t(i)`;
await copy('dict_fallback', fallback, 'compression zstd, row_group_size 4096, dictionary_size_limit 1000',
  [['s', 'string'], ['n', 'int64']]);
await copy('dict_fallback_v2', fallback,
  'compression snappy, row_group_size 4096, dictionary_size_limit 1000, parquet_version V2',
  [['s', 'string'], ['n', 'int64']], 'dict_fallback');
// Several row groups (DuckDB cuts them at multiples of 2048 rows).
await copy('row_groups', `select ${nul(0, 'i::BIGINT')} as i64, ${nul(1, '(i % 100) / 4.0')} as f64,
  ${nul(2, "'g' || (i % 37)::VARCHAR")} as s, ${nul(3, "DATE '2020-01-01' + (i % 1000)::INTEGER")} as d,
  ${nul(4, 'i % 2 = 0')} as b from range(4500) t(i)`, 'compression zstd, row_group_size 2048',
  [['i64', 'int64'], ['f64', 'float64'], ['s', 'string'], ['d', 'date'], ['b', 'bool']]);
// Required (non-null) columns: DuckDB writes them as optional unless the
// table says NOT NULL; a table with constraints makes them required.
await con.run('create table req (a BIGINT NOT NULL, s VARCHAR NOT NULL, f DOUBLE NOT NULL)');
await con.run(`insert into req select i, 'r' || i::VARCHAR, i / 4.0 from range(500) t(i)`);
await copy('required', 'select * from req', 'compression snappy, row_group_size 200',
  [['a', 'int64'], ['s', 'string'], ['f', 'float64']]);
// Columns all null or nearly, in both page versions.
const nulls = `select null::BIGINT as n, null::VARCHAR as s, case when i = 77 then 1.5 end::DOUBLE as f,
  case when i % 500 = 3 then 'x' end as t from range(1000) t(i)`;
for (const ver of ['V1', 'V2']) {
  await copy(`nulls_${ver.toLowerCase()}`, nulls, `compression snappy, parquet_version ${ver}`,
    [['n', 'int64'], ['s', 'string'], ['f', 'float64'], ['t', 'string']], 'nulls');
}
// Zero rows, and nested columns for the refusal.
await copy('empty', `${allTypes} limit 0`, 'compression snappy', typed);
await copy('nested_struct', `select i::BIGINT as id, {'x': i, 'y': 'a'} as st from range(10) t(i)`, 'compression snappy');
await copy('nested_list', `select i::BIGINT as id, [i, i + 1] as li from range(10) t(i)`, 'compression snappy');

// Polars, zstd.
const pl = require('nodejs-polars');
const pdf = pl.DataFrame({
  id: Array.from({ length: 1000 }, (_, i) => i),
  x: Array.from({ length: 1000 }, (_, i) => (i % 9 === 0 ? null : i * 0.25 - 7)),
  name: Array.from({ length: 1000 }, (_, i) => (i % 13 === 0 ? null : `n${i % 50}`)),
  flag: Array.from({ length: 1000 }, (_, i) => (i % 5 === 0 ? null : i % 2 === 0)),
});
pdf.writeParquet(join(dir, 'polars_zstd.parquet'), { compression: 'zstd' });
const pcols = await con.runAndReadAll(`select name, type from parquet_schema('${join(dir, 'polars_zstd.parquet')}')`);
console.log('polars schema', JSON.stringify(pcols.getRows()));
await expect('polars_zstd', [['id', 'float64'], ['x', 'float64'], ['name', 'string'], ['flag', 'bool']]);
