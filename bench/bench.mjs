// Runs every engine on the same files (one process per engine, one after the other), then
// compares row counts and checksums and writes bench/results/<N>.json and .md, and
// bench/RESULTS.md (all result files, the largest N first, plus bench/results/notes.md).
// Usage: node bench/bench.mjs N [DATADIR] [engines]   (run by bench/run.sh; engines default
// "duckdb,polars,pandas,framed"; an engine left out is taken from an earlier results file;
// "none" only rewrites the tables, e.g. after editing bench/results/notes.md)
import { spawnSync, execSync } from 'node:child_process';
import { writeFileSync, readFileSync, existsSync, mkdirSync, readdirSync } from 'node:fs';
import { join } from 'node:path';
import { QUESTIONS, pretty } from './engines/common.mjs';
import { writeResultsMd } from './results_md.mjs';

const BENCH = new URL('.', import.meta.url).pathname;
const ROOT = join(BENCH, '..');
const N = Math.round(Number(process.argv[2] || 1e7));
const DIR = process.argv[3] || join(BENCH, 'data');
// "none": only rewrite the tables and RESULTS.md from the last results of this N
const ENGINES = (process.argv[4] || 'duckdb,polars,pandas,framed').split(',').filter((e) => e !== 'none');
const NN = pretty(N);
const RES = join(BENCH, 'results');
mkdirSync(RES, { recursive: true });
const rawPath = join(RES, `${NN}.json`);
const old = existsSync(rawPath) ? JSON.parse(readFileSync(rawPath, 'utf8')) : { engines: {} };

const sh = (c) => { try { return execSync(c, { encoding: 'utf8' }).trim(); } catch { return '?'; } };
const loadavg = () => readFileSync('/proc/loadavg', 'utf8').split(' ').slice(0, 3).join(' ');
let meta = {
  n: N, date: new Date().toISOString().replace(/\.\d+Z$/, 'Z'),
  cpu: sh("lscpu | sed -n 's/^Model name: *//p' | head -1"),
  cores: sh('nproc'), mem: sh("free -g | awk '/^Mem:/{print $2\" GiB\"}'"),
  kernel: sh('uname -r'), node: process.version,
  framed_rev: sh(`git -C ${ROOT} rev-parse --short HEAD`),
  load_before: loadavg(), load_during: [],
};

const qjson = JSON.stringify(QUESTIONS.map((q) => [q.id, q.chk]));
const cmds = {
  duckdb: ['node', [join(BENCH, 'engines/duckdb.mjs'), String(N), DIR], {}],
  polars: ['node', [join(BENCH, 'engines/polars.mjs'), String(N), DIR], { POLARS_MAX_THREADS: '2' }],
  pandas: ['/usr/bin/python3', [join(BENCH, 'engines/pandas_bench.py'), String(N), DIR, qjson],
    { OMP_NUM_THREADS: '1', OPENBLAS_NUM_THREADS: '1', MKL_NUM_THREADS: '1' }],
  framed: ['node', [join(BENCH, 'engines/framed.mjs'), String(N), DIR], {}],
};
const res = { ...old.engines };
for (const e of ENGINES) {
  const [cmd, args, env] = cmds[e];
  if (e === 'framed' && res.duckdb) { // profile the questions slower than 2x DuckDB
    writeFileSync(join(RES, '.duckdb.tmp.json'), JSON.stringify(res.duckdb));
    env.PROFILE_AGAINST = join(RES, '.duckdb.tmp.json');
  }
  process.stderr.write(`== ${e} (load average ${loadavg()})\n`);
  meta.load_during.push(`${e}: ${loadavg()}`);
  const r = spawnSync(cmd, args, { env: { ...process.env, ...env }, encoding: 'utf8',
    stdio: ['ignore', 'pipe', 'inherit'], maxBuffer: 1 << 28 });
  const line = (r.stdout || '').trim().split('\n').pop();
  try {
    res[e] = JSON.parse(line);
  } catch {
    res[e] = { engine: e, error: `exit ${r.status} ${r.signal || ''}: no result`, q: {}, load: {} };
  }
}
meta.load_after = loadavg();
if (!ENGINES.length && old.meta) meta = old.meta;
writeFileSync(rawPath, JSON.stringify({ meta, engines: res }, null, 1) + '\n');

// ---- the table ----
const f = (t) => (t === undefined || t === null ? '' : t >= 100 ? t.toFixed(0) : t >= 10 ? t.toFixed(1) : t >= 1 ? t.toFixed(2) : t.toFixed(3));
const cell = (r) => (!r ? 'n/a' : r.error ? 'FAIL' : f(r.t));
const ratio = (a, b) => (a && b && !a.error && !b.error && b.t > 0 ? (a.t / b.t).toFixed(2) : '');
const close = (a, b) => Math.abs(a - b) <= 1e-6 * Math.max(1, Math.abs(a), Math.abs(b));

const fr = res.framed || { q: {}, load: {} };
const rows = [];
const checks = [];
const lt = (e, k) => (res[e] && res[e].load && res[e].load[k] !== undefined ? { t: res[e].load[k] } : null);
for (const [k, label] of [['G1', 'load CSV (groupby table)'], ['join', 'load CSV (4 join tables)']]) {
  const fe = lt('framed', k), fw = fr.load_e2e && fr.load_e2e[k] !== undefined ? { t: fr.load_e2e[k] } : null;
  rows.push([label, cell(fe), cell(fw), cell(lt('duckdb', k)), cell(lt('polars', k)), cell(lt('pandas', k)),
    ratio(fe, lt('duckdb', k)), ratio(fe, lt('polars', k)), '']);
}
for (const q of QUESTIONS) {
  const get = (e) => (res[e] && res[e].q ? res[e].q[q.id] : undefined);
  const fe = get('framed'), fw = fr.e2e && fr.e2e[q.id];
  // checks: rows and checksums against DuckDB (else the first engine that has an answer)
  const engines = ['duckdb', 'polars', 'pandas', 'framed'].filter((e) => get(e) && !get(e).error);
  let check = 'ok';
  if (engines.length < 2) check = engines.length ? 'only one answer' : '';
  const ref = engines[0];
  const bad = [];
  for (const e of engines.slice(1)) {
    const a = get(ref), b = get(e);
    if (a.rows !== b.rows) bad.push(`${e} rows ${b.rows} vs ${a.rows}`);
    else if (!a.chk || !b.chk || a.chk.length !== b.chk.length || !a.chk.every((v, i) => close(v, b.chk[i])))
      bad.push(`${e} checksum ${JSON.stringify(b.chk)} vs ${JSON.stringify(a.chk)}`);
  }
  if (bad.length) check = `MISMATCH: ${bad.join('; ')} (vs ${ref})`;
  for (const e of ['duckdb', 'polars', 'pandas', 'framed'])
    if (get(e) && get(e).error) checks.push(`${q.id} ${e} failed: ${get(e).error}`);
  const rowsN = ref ? get(ref).rows : '';
  rows.push([`${q.id} ${q.desc}`, cell(fe), fw ? f(fw.t) : cell(fe), cell(get('duckdb')), cell(get('polars')),
    cell(get('pandas')), ratio(fe, get('duckdb')), ratio(fe, get('polars')), `${rowsN} ${check}`.trim()]);
  if (bad.length) checks.push(`${q.id}: ${check}`);
}
const head = ['question', 'framed (engine)', 'framed (e2e)', 'DuckDB', 'Polars', 'pandas',
  'framed/DuckDB', 'framed/Polars', 'rows, check'];
const md = [];
md.push(`## N = ${NN} (${N.toLocaleString('en-US')} rows)`, '');
md.push(`- date: ${meta.date}; framed ${fr.version || '?'} at ${meta.framed_rev}`);
md.push(`- machine: ${meta.cpu}, ${meta.cores} cores, ${meta.mem}, Linux ${meta.kernel}`);
md.push(`- load average (1/5/15 min): before ${meta.load_before}; at each engine's start: ${meta.load_during.join('; ')}; after ${meta.load_after}`);
md.push(`- versions: DuckDB ${res.duckdb ? res.duckdb.version : '?'} (@duckdb/node-api), nodejs-polars ${res.polars ? res.polars.version : '?'}, pandas ${res.pandas ? res.pandas.version : '?'} (Debian, /usr/bin/python3), Node ${meta.node}`);
md.push(`- threads: framed 2 (--threads 2), DuckDB 2, Polars 2 (POLARS_MAX_THREADS), pandas 1`);
md.push(`- seconds, median of 2 runs (of 3 when the two differ by over 2x), load excluded; framed (engine) = the query's elapsed_ms, framed (e2e) = wall time of the HTTP POST ?wait; ratios use framed (engine)`);
if (fr.right_mode === 'dataset')
  md.push(`- **framed joins read their right side from CSV inside the timed query** (a join with a \`{"dataframe": id}\` right side gives wrong results; see the notes)`);
md.push('');
md.push(`| ${head.join(' | ')} |`, `|${head.map((h, i) => (i ? '---:' : '---')).join('|')}|`);
for (const r of rows) md.push(`| ${r.join(' | ')} |`);
md.push('');
if (checks.length) md.push('Checks:', '', ...checks.map((c) => `- ${c}`), '');
if (fr.notes && fr.notes.length) md.push('framed notes:', '', ...fr.notes.map((c) => `- ${c}`), '');
const prof = fr.profiles || {};
if (Object.keys(prof).length) {
  md.push('Questions slower than 2x DuckDB, profiled (one more run under `perf record -g -p <server>`; top symbols by self time):', '');
  for (const [id, p] of Object.entries(prof)) {
    md.push(`- ${id} (${f(p.wall)} s under perf): ${p.error ? p.error : ''}`);
    if (p.top) md.push('', '  ```', ...p.top.map((l) => `  ${l}`), '  ```');
  }
  md.push('');
}
writeFileSync(join(RES, `${NN}.md`), md.join('\n'));
process.stdout.write(md.join('\n') + '\n');

// ---- RESULTS.md: the one-run tables, every N, the other benchmarks, the notes ----
writeResultsMd(BENCH);
