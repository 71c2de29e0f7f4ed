// golden-duckdb: fills the "expect" of golden plan cases from DuckDB. For each
// tests/data/golden/<case>.json named on the command line that has "sql" and
// no "expect_error", runs the SQL in DuckDB over views of every CSV in
// tests/data/golden/inputs (named by file, without .csv) and writes the
// result's columns (DuckDB types mapped to framed's) and rows back into the
// case, keeping "ordered". Usage: node scripts/golden-duckdb.mjs tests/data/golden/window_*.json
import fs from 'node:fs';
import path from 'node:path';
import { DuckDBInstance } from '@duckdb/node-api';

const inputs = path.join(path.dirname(new URL(import.meta.url).pathname), '..', 'tests', 'data', 'golden', 'inputs');
const TYPES = { BIGINT: 'int64', HUGEINT: 'int64', INTEGER: 'int64', DOUBLE: 'float64', VARCHAR: 'string', BOOLEAN: 'bool', DATE: 'date' };

function norm(v) {
  if (typeof v === 'bigint') return Number(v);
  if (v !== null && typeof v === 'object') return String(v);
  return v;
}

// Floats keep a fraction (2.0, not 2), as framed writes them.
function cell(v, type) {
  if (type === 'float64' && Number.isInteger(v)) return `${v}.0`;
  return JSON.stringify(v);
}

const inst = await DuckDBInstance.create(':memory:', { threads: '1' });
const con = await inst.connect();
for (const f of fs.readdirSync(inputs).filter((n) => n.endsWith('.csv'))) {
  const name = f.slice(0, -4);
  await con.run(`CREATE VIEW "${name}" AS SELECT * FROM read_csv('${path.join(inputs, f)}', header = true)`);
}
for (const file of process.argv.slice(2)) {
  const tc = JSON.parse(fs.readFileSync(file, 'utf8'));
  if (!tc.sql || tc.expect_error) continue;
  const r = await con.runAndReadAll(tc.sql);
  const names = r.columnNames();
  const types = r.columnTypes().map((t) => String(t));
  const columns = names.map((n, i) => {
    const t = TYPES[types[i]];
    if (!t) throw new Error(`${file}: DuckDB type ${types[i]} of ${n} has no framed type`);
    return { name: n, type: t };
  });
  const rows = r.getRows().map((row) => row.map(norm));
  tc.expect = { columns, rows, ordered: Boolean(tc.expect && tc.expect.ordered) };
  const top = Object.entries(tc).filter(([k]) => k !== 'expect').map(([k, v]) => `  ${JSON.stringify(k)}: ${JSON.stringify(v)}`);
  const body = `{\n${top.join(',\n')},\n  "expect": {"columns": ${JSON.stringify(columns)},\n    "rows": [\n` +
    rows.map((row) => `      [${row.map((v, i) => cell(v, columns[i].type)).join(',')}]`).join(',\n') + `\n    ], "ordered": ${tc.expect.ordered}}\n}`;
  fs.writeFileSync(file, body + '\n');
  console.log(`${file}: ${rows.length} rows`);
}
