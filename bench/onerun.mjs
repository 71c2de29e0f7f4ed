// The one-run benchmark: framed, DuckDB and Polars (2 threads each) in one run, each a long-lived
// child (bench/engines/worker.mjs; framed's worker drives a server), interleaved question by
// question: every repetition loads the groupby CSV, runs q1..q10, loads the join tables, runs
// j1..j5, each question on every engine before the next; who goes first rotates per repetition.
// Each engine is one long-lived process; after each question its results are dropped (framed:
// DELETE /v1/queries/{id}/result; DuckDB: DROP TABLE ans), and a load replaces the last one's
// tables (framed: DELETE /v1/dataframes/{id}), all untimed. Checksums once (first repetition, untimed). framed also gets one timed
// POST /v1/dataframes {plan} per question (first repetition).
// ALONE=1 (the default from N = 5e7 on, where three engines' copies of the table do not fit in
// 24 GiB together): within a repetition one engine at a time starts, loads, runs every question
// and quits before the next starts; who goes first still rotates per repetition, so drift hits
// every engine's block in turn. An engine that runs out of memory is listed as FAIL.
// Usage: node bench/onerun.mjs N DATADIR [reps]  (REPS=5 default; PHASES=groupby for groupby only)
//   -> bench/results/onerun-<N><SUFFIX>.{json,md}, bench/RESULTS.md
import { spawn, execSync } from 'node:child_process';
import { createInterface } from 'node:readline';
import { readFileSync, writeFileSync, mkdirSync } from 'node:fs';
import { join } from 'node:path';
import { QUESTIONS, pretty, median } from './engines/common.mjs';
import { writeResultsMd } from './results_md.mjs';

const BENCH = new URL('.', import.meta.url).pathname;
const N = Math.round(Number(process.argv[2] || 1e7)), DIR = process.argv[3] || join(BENCH, 'data');
const REPS = Number(process.argv[4] || process.env.REPS || 5);
const ALONE = process.env.ALONE ? process.env.ALONE === '1' : N >= 5e7;
const PHASES = (process.env.PHASES || (ALONE ? 'groupby' : 'groupby,join')).split(',');
const SUFFIX = process.env.SUFFIX || '';
const ENGINES = ['framed', 'duckdb', 'polars'];
// ONLY=duckdb,polars runs those alone (a probe of their times and memory; the table keeps every column)
const RUNS = process.env.ONLY ? process.env.ONLY.split(',') : ENGINES;
const loadavg = () => readFileSync('/proc/loadavg', 'utf8').split(' ').slice(0, 3).join(' ');
const sh = (c) => { try { return execSync(c, { encoding: 'utf8' }).trim(); } catch { return '?'; } };

function worker(e) {
  const env = { ...process.env, ...(e === 'polars' ? { POLARS_MAX_THREADS: '2' } : {}) };
  // one engine at a time: framed serves with a memory budget of 70% of RAM, so a question that
  // does not fit fails (memory-budget-exceeded) rather than the OOM killer ending the server
  if (ALONE && e === 'framed' && !env.FRAMED_MEMORY_LIMIT)
    env.FRAMED_MEMORY_LIMIT = String(Math.floor(Number(sh("awk '/MemTotal/{print $2}' /proc/meminfo")) * 1024 * 0.7));
  const p = spawn('node', ['--expose-gc', join(BENCH, 'engines/worker.mjs'), e, String(N), DIR], { env, stdio: ['pipe', 'pipe', 'inherit'] });
  const waiting = [];
  let dead = null;
  createInterface({ input: p.stdout }).on('line', (l) => {
    const w = waiting.shift();
    if (w) { try { w.ok(JSON.parse(l)); } catch { w.ok({ error: `bad answer: ${l.slice(0, 200)}` }); } }
  });
  p.on('exit', (code, sig) => {
    dead = `worker exited (${code} ${sig || ''})`;
    while (waiting.length) waiting.shift().ok({ error: dead });
  });
  return {
    p,
    send: (cmd) => new Promise((ok) => {
      if (dead) return ok({ error: dead });
      waiting.push({ ok });
      p.stdin.write(cmd + '\n');
    }),
  };
}

const W = ALONE ? {} : Object.fromEntries(ENGINES.map((e) => [e, worker(e)]));
const info = {};
if (!ALONE) for (const e of ENGINES) info[e] = await W[e].send('hello');
for (const e of ENGINES) info[e] = info[e] || {};
const ids = [...(PHASES.includes('groupby') ? ['load G1', ...QUESTIONS.filter((q) => q.id[0] === 'q').map((q) => q.id)] : []),
  ...(PHASES.includes('join') ? ['load join', ...QUESTIONS.filter((q) => q.id[0] === 'j').map((q) => q.id)] : [])];
const R = {}; // R[id][engine] = { times, e2e, rows, chk, errors }
for (const id of ids) R[id] = Object.fromEntries(ENGINES.map((e) => [e, { times: [], e2e: [], errors: [] }]));
const create = {}, loads = {}, order = [];
const meta = { n: N, reps: REPS, date: new Date().toISOString().replace(/\.\d+Z$/, 'Z'),
  cpu: sh("lscpu | sed -n 's/^Model name: *//p' | head -1"), cores: sh('nproc'),
  mem: sh("free -g | awk '/^Mem:/{print $2\" GiB\"}'"), mem_available_gib: +(Number(sh("awk '/MemAvailable/{print $2}' /proc/meminfo")) / (1 << 20)).toFixed(1),
  framed_rev: sh(`git -C ${BENCH} rev-parse --short HEAD`), node: process.version, load_before: loadavg() };

// One question (or load) on one engine: timed, then (first repetition) its checksum, then drop.
async function one(e, id, rep) {
  const isLoad = id.startsWith('load');
  const a = await W[e].send(isLoad ? id : `run ${id}`);
  const r = R[id][e];
  if (a.error) { r.errors.push(a.error); return false; }
  r.times.push(a.t);
  if (a.e2e !== undefined) r.e2e.push(a.e2e);
  r.rss = a.rss;
  if (!isLoad) {
    r.rows = a.rows;
    if (rep === 0) {
      const c = await W[e].send(`checksum ${id}`);
      if (c.error) r.errors.push(`checksum: ${c.error}`); else r.chk = c.chk;
    }
    await W[e].send('drop');
    if (e === 'framed' && rep === 0) {
      const c = await W.framed.send(`create ${id}`);
      create[id] = c.error ? { error: c.error } : { t: c.t };
    }
  }
  return true;
}
const progress = (rep, id, es) => process.stderr.write(`[onerun] rep ${rep + 1}/${REPS} ${id}: ${es.map((e) => `${e} ${R[id][e].times.at(-1)?.toFixed(3)}`).join(', ')} (load ${loadavg()})\n`);

for (let rep = 0; rep < REPS; rep++) {
  const ord = RUNS.map((_, i) => RUNS[(i + rep) % RUNS.length]);
  order.push(ord.join(','));
  if (ALONE) {
    for (const e of ord) {
      W[e] = worker(e);
      const h = await W[e].send('hello');
      if (!info[e].engine) info[e] = h;
      let loaded = false;
      for (const id of ids) {
        if (id.startsWith('load')) loaded = await one(e, id, rep);
        else if (loaded) await one(e, id, rep);
        else R[id][e].errors.push('not loaded');
        (loads[id] = loads[id] || []).push(loadavg());
        progress(rep, id, [e]);
      }
      info[e].quit = await W[e].send('quit');
      await new Promise((ok) => (W[e].p.exitCode !== null || W[e].p.signalCode !== null ? ok() : W[e].p.once('exit', ok)));
    }
    continue;
  }
  let firstJoin = true;
  for (const id of ids) {
    const isLoad = id.startsWith('load');
    if (!isLoad && id[0] === 'j' && !firstJoin) await W.framed.send('restart'); // untimed
    if (!isLoad && id[0] === 'j') firstJoin = false;
    for (const e of ord) await one(e, id, rep);
    (loads[id] = loads[id] || []).push(loadavg());
    progress(rep, id, ord);
  }
}
if (!ALONE) for (const e of ENGINES) { info[e].quit = await W[e].send('quit'); }
meta.load_after = loadavg();
meta.notes = info.framed.quit && info.framed.notes;
const NN = pretty(N);
const RES = join(BENCH, 'results');
mkdirSync(RES, { recursive: true });
writeFileSync(join(RES, `onerun-${NN}${SUFFIX}.json`), JSON.stringify({ meta, info, order, loadavg: loads, create, q: R }, null, 1) + '\n');

// ---- the table ----
const f = (t) => (t === undefined || t === null ? '' : t >= 100 ? t.toFixed(0) : t >= 10 ? t.toFixed(1) : t >= 1 ? t.toFixed(2) : t.toFixed(3));
const med = (xs) => (xs.length ? median(xs) : undefined);
const cell = (xs, errs) => (errs && errs.length && !xs.length ? 'FAIL' : xs.length ? `${f(median(xs))} (${f(Math.min(...xs))}-${f(Math.max(...xs))})` : 'n/a');
const close = (a, b) => Math.abs(a - b) <= 1e-6 * Math.max(1, Math.abs(a), Math.abs(b));
const rat = (a, b) => (a !== undefined && b ? a / b : undefined);
const geo = { fd: [], fde: [] };
const rows = [], checks = [];
for (const id of ids) {
  const r = R[id], fm = med(r.framed.times), fe = med(r.framed.e2e), dm = med(r.duckdb.times), pm = med(r.polars.times);
  const fd = rat(fm, dm), fde = rat(fe, dm), fp = rat(fm, pm), fpe = rat(fe, pm);
  if (fd) geo.fd.push(fd);
  if (fde) geo.fde.push(fde);
  let check = '';
  if (!id.startsWith('load')) {
    const ok = ENGINES.filter((e) => r[e].rows !== undefined);
    const ref = ok.includes('duckdb') ? 'duckdb' : ok[0];
    const bad = [];
    for (const e of ok.filter((x) => x !== ref)) {
      const a = r[ref], b = r[e];
      if (a.rows !== b.rows) bad.push(`${e} rows ${b.rows} vs ${a.rows}`);
      else if (!a.chk || !b.chk || a.chk.length !== b.chk.length || !a.chk.every((v, i) => close(v, b.chk[i])))
        bad.push(`${e} checksum ${JSON.stringify(b.chk)} vs ${JSON.stringify(a.chk)}`);
    }
    check = bad.length ? `MISMATCH: ${bad.join('; ')} (vs ${ref})` : ok.length > 1 ? 'ok' : 'only one answer';
    if (bad.length) checks.push(`${id}: ${check}`);
    check = `${ref ? r[ref].rows : ''} ${check}`;
  }
  for (const e of ENGINES) for (const x of r[e].errors) checks.push(`${id} ${e} failed: ${x}`);
  const la = loads[id].map((l) => Number(l.split(' ')[0]));
  const q = QUESTIONS.find((x) => x.id === id);
  rows.push([q ? `${id} ${q.desc}` : id === 'load G1' ? 'load CSV (groupby table)' : 'load CSV (4 join tables)',
    cell(r.framed.times, r.framed.errors), cell(r.framed.e2e), cell(r.duckdb.times, r.duckdb.errors), cell(r.polars.times, r.polars.errors),
    fd ? fd.toFixed(2) : '', fde ? fde.toFixed(2) : '', fp ? fp.toFixed(2) : '', fpe ? fpe.toFixed(2) : '',
    `${Math.min(...la).toFixed(2)}-${Math.max(...la).toFixed(2)}`, check]);
}
const gm = (xs) => (xs.length ? Math.exp(xs.reduce((s, x) => s + Math.log(x), 0) / xs.length).toFixed(2) : '');
rows.push([`**geometric mean** (${geo.fd.length} rows)`, '', '', '', '', gm(geo.fd), gm(geo.fde), '', '', '', '']);
const head = ['question', 'framed (engine)', 'framed (e2e)', 'DuckDB', 'Polars', 'framed/DuckDB', 'framed/DuckDB (e2e)',
  'framed/Polars', 'framed/Polars (e2e)', 'load avg (1 min)', 'rows, check'];
const md = [`## One run, ${ALONE ? 'one engine at a time' : 'interleaved'}: N = ${NN} (${N.toLocaleString('en-US')} rows)${SUFFIX ? ` (${SUFFIX.replace(/^-/, '')})` : ''}`, ''];
md.push(`- date: ${meta.date}; framed ${info.framed.version} at ${meta.framed_rev}; machine: ${meta.cpu}, ${meta.cores} cores, ${meta.mem} (MemAvailable ${meta.mem_available_gib} GiB at the start), Node ${meta.node}`);
md.push(`- DuckDB ${info.duckdb.version} (@duckdb/node-api), nodejs-polars ${info.polars.version}; 2 threads each; each engine its own long-lived process (bench/engines/worker.mjs)`);
md.push(ALONE
  ? `- ${REPS} repetitions; one engine at a time (${N.toLocaleString('en-US')} rows three times over do not fit in ${meta.mem}): in each repetition an engine starts, loads, runs every question and quits before the next starts (orders: ${order.join(' / ')}); seconds, median (min-max); checksums from the first repetition; FAIL = the engine failed (e.g. out of memory), see Checks`
  : `- ${REPS} repetitions, each question on all three engines before the next (orders: ${order.join(' / ')}); seconds, median (min-max); checksums from the first repetition`);
md.push('- framed (engine) = the query\'s elapsed_ms; framed (e2e) = wall time of POST /v1/queries?wait (result materialized on the server); loads: creating and running one dataframe per CSV');
md.push(`- load average: before ${meta.load_before}, after ${meta.load_after}; the column gives the 1-minute load after each question round (min-max over the repetitions)`);
if (ALONE) md.push(`- framed's server has --memory-limit ${process.env.FRAMED_MEMORY_LIMIT || '70% of RAM'} (FRAMED_MEMORY_LIMIT), spilling to its state dir what does not fit (--spill-dir; a question fails memory-budget-exceeded only past that), and its config has ${N >= 1e8 ? '16 shuffle partitions (the default is 8; bench/engines/framed.mjs config())' : 'the default shuffle partitions'}; DuckDB and Polars have no limit set (DuckDB's own default is 80% of RAM, with a temp directory)`);
md.push('- pandas is not in this run (bench/run.sh N keeps it, one process per engine, 1 thread)', '');
md.push(`| ${head.join(' | ')} |`, `|${head.map((h, i) => (i ? '---:' : '---')).join('|')}|`, ...rows.map((r) => `| ${r.join(' | ')} |`), '');
const peak = (e) => Math.max(0, ...ids.map((id) => (R[id][e].rss && R[id][e].rss.peak) || 0));
md.push(`Peak resident memory over the questions answered (GiB; framed: its server's; a FAIL's own peak is not seen): ${ENGINES.map((e) => `${e} ${peak(e).toFixed(1)}`).join(', ')}`, '');
md.push('Creating each question\'s dataframe over the loaded one (framed, POST /v1/dataframes {plan}, wall time, first repetition; target < 50 ms):', '');
md.push(`| ${Object.keys(create).join(' | ')} |`, `|${Object.keys(create).map(() => '---:').join('|')}|`,
  `| ${Object.values(create).map((c) => (c.error ? 'FAIL' : f(c.t))).join(' | ')} |`, '');
if (checks.length) md.push('Checks:', '', ...checks.map((c) => `- ${c}`), '');
if (meta.notes && meta.notes.length) md.push('framed notes:', '', ...meta.notes.map((c) => `- ${c}`), '');
writeFileSync(join(RES, `onerun-${NN}${SUFFIX}.md`), md.join('\n'));
process.stdout.write(md.join('\n') + '\n');
writeResultsMd(BENCH);
process.exit(0);
