// bench/parquet.mjs: the db-benchmark groupby table as Parquet, written by DuckDB with snappy
// (default row groups), read by framed and by DuckDB in the same run, interleaved question by
// question (framed, then DuckDB, for the load, then q1, then q2, ...), so that load drift on this
// shared machine hits both alike. Two ways for each question:
//   from Parquet: the question straight over the file (framed: a plan over the dataset
//     {"dataset": "<name>"} of the .parquet file; DuckDB: SELECT ... FROM read_parquet(file));
//   loaded: over the table loaded into memory first (framed: a materialized dataframe; DuckDB:
//     CREATE TABLE x AS SELECT * FROM read_parquet(file)).
// framed's time is the query's elapsed_ms (engine) and the wall time of the POST (e2e); DuckDB's
// is the wall time of CREATE OR REPLACE TABLE ans AS ... (the result materialized). Row counts
// and db-benchmark's checksums are compared. Median of REPS (default 3) runs, with min-max.
// Usage: bench/run.sh makes the CSV; then node bench/parquet.mjs N [DATADIR]
//   -> bench/results/parquet-<N>.{json,md}, and RESULTS.md refolded (node bench/bench.mjs N DIR none)
import { spawn, spawnSync } from 'node:child_process';
import { existsSync, mkdirSync, mkdtempSync, openSync, readFileSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { DuckDBInstance } from '@duckdb/node-api';
import { GROUPBY_OPS, QUESTIONS, files, groupbySql, median, now, log, pretty } from './engines/common.mjs';

const BENCH = new URL('.', import.meta.url).pathname;
const ROOT = join(BENCH, '..');
const N = Math.round(Number(process.argv[2] || 1e7));
const DIR = process.argv[3] || join(BENCH, 'data');
const REPS = Number(process.env.REPS || 3);
const NN = pretty(N);
const F = files(N, DIR);
const PQ_NAME = `${F.G1.name}_snappy`;
const PQ = join(DIR, `${PQ_NAME}.parquet`);
const GROUPBY = QUESTIONS.filter((q) => q.id.startsWith('q'));

const OPS = GROUPBY_OPS;

// ---- DuckDB, in this process, 2 threads
const inst = await DuckDBInstance.create(':memory:', { threads: '2' });
const con = await inst.connect();
const one = async (sql) => (await con.runAndReadAll(sql)).getRows()[0];
if (!existsSync(PQ)) {
  if (!existsSync(F.G1.path)) throw new Error(`${F.G1.path} is missing: run bench/run.sh ${NN} duckdb first`);
  log('parquet', `writing ${PQ} (DuckDB, snappy)`);
  await con.run(`COPY (SELECT * FROM read_csv('${F.G1.path}')) TO '${PQ}.tmp' (FORMAT parquet, COMPRESSION snappy)`);
  spawnSync('mv', [`${PQ}.tmp`, PQ]);
}
const duckVersion = String((await one('SELECT version()'))[0]);
const rgs = Number((await one(`SELECT count(*) FROM parquet_metadata('${PQ}') WHERE column_id = 0`))[0]);

async function duck(sql) {
  const t0 = now();
  await con.run(`CREATE OR REPLACE TABLE ans AS ${sql}`);
  const t = now() - t0;
  return { t };
}
async function duckCheck(q) {
  const row = await one(`SELECT count(*), ${q.chk.map((c) => `sum(${c})::DOUBLE`).join(', ')} FROM ans`);
  return { rows: Number(row[0]), chk: row.slice(1).map(Number) };
}

// ---- framed: build-rel/framed serve, 2 threads, on the data dir
const BIN = join(ROOT, 'build-rel/framed');
const state = mkdtempSync(join(tmpdir(), 'framed-bench-pq-'));
const errlog = join(state, 'server.log');
const srv = spawn(BIN, ['serve', '--port', '0', '--threads', '2', '--data-dir', DIR, '--state-dir', state],
  { stdio: ['ignore', 'ignore', openSync(errlog, 'w')] });
process.on('exit', () => { try { srv.kill('SIGKILL'); } catch {} });
let base;
for (let i = 0; i < 200 && !base; i++) {
  await new Promise((r) => setTimeout(r, 50));
  const m = readFileSync(errlog, 'utf8').match(/"listening".*?"port":(\d+)/);
  if (m) base = `http://127.0.0.1:${m[1]}`;
}
if (!base) throw new Error(`framed did not start: ${readFileSync(errlog, 'utf8').slice(-2000)}`);
async function http(method, path, body) {
  const r = await fetch(base + path, { method, headers: body ? { 'content-type': 'application/json' } : {},
    body: body ? JSON.stringify(body) : undefined });
  const j = await r.json();
  if (r.status >= 400) throw new Error(`${method} ${path} -> ${r.status}: ${j.detail}`);
  return j;
}
async function framed(body) {
  const t0 = now();
  let st = await http('POST', '/v1/queries?wait=300', body);
  while (st.state === 'queued' || st.state === 'running') st = await http('GET', `/v1/queries/${st.id}?wait=300`);
  const wall = now() - t0;
  if (st.state !== 'succeeded') throw new Error(`framed query ${st.state}: ${JSON.stringify(st.error)}`);
  return { t: st.elapsed_ms / 1000, wall, rows: st.rows, id: st.id };
}
async function framedCheck(q, source) {
  const r = await framed({ plan: { source, ops: [...OPS[q.id], { agg: q.chk.map((c) => `sum(${c}) as ${c}`) }] } });
  const res = await http('GET', `/v1/queries/${r.id}/result`);
  return res.rows[0].map(Number);
}
await http('POST', '/v1/config', { maintain_order: false });
const info = await http('GET', '/v1/info');

// ---- the run, interleaved
const out = { n: N, date: new Date().toISOString().replace(/\.\d+Z$/, 'Z'), file: `${PQ_NAME}.parquet`,
  bytes: statSync(PQ).size, row_groups: rgs, duckdb: duckVersion, framed: info.version, reps: REPS,
  loadavg: [], rows: {} };
const loadavg = () => readFileSync('/proc/loadavg', 'utf8').split(' ').slice(0, 3).join(' ');
const stat = (xs) => ({ med: median(xs), min: Math.min(...xs), max: Math.max(...xs) });
out.loadavg.push(loadavg());

const loads = { framed: [], framed_e2e: [], duckdb: [] };
let df;
for (let r = 0; r < REPS; r++) {
  const d = await http('POST', '/v1/dataframes', { source: { dataset: PQ_NAME } });
  const f = await framed({ dataframe: d.id });
  loads.framed.push(f.t);
  loads.framed_e2e.push(f.wall);
  df = d.id; // the last one serves the loaded questions
  const t0 = now();
  await con.run(`CREATE OR REPLACE TABLE x AS SELECT * FROM read_parquet('${PQ}')`);
  loads.duckdb.push(now() - t0);
}
out.rows.load = { framed: stat(loads.framed), framed_e2e: stat(loads.framed_e2e), duckdb: stat(loads.duckdb) };
log('parquet', `load ${JSON.stringify(out.rows.load)}`);

for (const q of GROUPBY) {
  for (const [mode, source, table] of [['parquet', { dataset: PQ_NAME }, `read_parquet('${PQ}')`],
    ['loaded', { dataframe: df }, 'x']]) {
    const t = { framed: [], framed_e2e: [], duckdb: [] };
    let frows = 0;
    for (let r = 0; r < REPS; r++) {
      const f = await framed({ plan: { source, ops: OPS[q.id] } });
      t.framed.push(f.t);
      t.framed_e2e.push(f.wall);
      frows = f.rows;
      t.duckdb.push((await duck(groupbySql(table)[q.id])).t);
    }
    const dchk = await duckCheck(q);
    const fchk = await framedCheck(q, source);
    const ok = frows === dchk.rows && fchk.every((v, i) => Math.abs(v - dchk.chk[i]) <= 1e-6 * Math.max(1, Math.abs(dchk.chk[i])));
    out.rows[`${q.id} ${mode}`] = { framed: stat(t.framed), framed_e2e: stat(t.framed_e2e), duckdb: stat(t.duckdb),
      rows: frows, duck_rows: dchk.rows, check: ok ? 'ok' : `framed ${fchk} vs DuckDB ${dchk.chk}` };
    log('parquet', `${q.id} ${mode} ${JSON.stringify(out.rows[`${q.id} ${mode}`])}`);
  }
  out.loadavg.push(loadavg());
}
srv.kill('SIGTERM');
rmSync(state, { recursive: true, force: true });

// ---- the table
const f3 = (x) => (x >= 10 ? x.toFixed(1) : x >= 1 ? x.toFixed(2) : x.toFixed(3));
const cell = (s) => `${f3(s.med)} (${f3(s.min)}-${f3(s.max)})`;
const sh = (c, a) => { const r = spawnSync(c, a, { encoding: 'utf8' }); return (r.stdout || '?').trim(); };
const md = [`## Parquet, N = ${NN}: the groupby table written by DuckDB (snappy), read by framed and DuckDB`, '',
  `- date: ${out.date}; framed ${out.framed} at ${sh('git', ['-C', ROOT, 'rev-parse', '--short', 'HEAD'])}; ${duckVersion} (@duckdb/node-api), 2 threads each`,
  `- machine: ${sh('sh', ['-c', "lscpu | sed -n 's/^Model name: *//p' | head -1"])}, ${sh('nproc', [])} cores; load average (1/5/15) during: ${out.loadavg.join('; ')}`,
  `- file: ${out.file}, ${(out.bytes / 2 ** 20).toFixed(0)} MiB, ${rgs} row groups; seconds, median of ${REPS} (min-max), interleaved framed then DuckDB per question`,
  '- "from Parquet": each run reads the file (framed: a plan over the dataset; DuckDB: read_parquet); "loaded": over the table in memory (framed: a materialized dataframe; DuckDB: CREATE TABLE x AS read_parquet)',
  '- framed (engine) = the query\'s elapsed_ms; framed (e2e) = wall time of the HTTP POST; the ratio uses engine time', '',
  '| question | framed (engine) | framed (e2e) | DuckDB | framed/DuckDB | rows, check |', '|---|---:|---:|---:|---:|---:|'];
for (const [k, v] of Object.entries(out.rows)) {
  md.push(`| ${k === 'load' ? 'load Parquet into memory' : k.replace(' parquet', ' from Parquet')} | ${cell(v.framed)} | ${cell(v.framed_e2e)} | ${cell(v.duckdb)} | ${(v.framed.med / v.duckdb.med).toFixed(2)} | ${v.rows !== undefined ? `${v.rows} ${v.check}` : ''} |`);
}
const RES = join(BENCH, 'results');
mkdirSync(RES, { recursive: true });
writeFileSync(join(RES, `parquet-${NN}.json`), JSON.stringify(out, null, 1));
writeFileSync(join(RES, `parquet-${NN}.md`), md.join('\n') + '\n');
process.stdout.write(md.join('\n') + '\n');
spawnSync('node', [join(BENCH, 'bench.mjs'), String(N), DIR, 'none'], { stdio: 'inherit' });
