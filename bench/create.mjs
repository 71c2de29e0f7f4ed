// Creating a dataframe: what POST /v1/dataframes costs for each db-benchmark groupby question
// over the loaded groupby table, for a join question over the loaded join tables, and for a
// bare scan of the CSV dataset (no dataframe: the file itself). Issue 13 asks each question's
// create to take under 50 ms at 1e7.
// Each binary named in FRAMED_BINS (default build-rel/framed; "a.out,b.out" compares two, as
// `base` and `new`) gets its own server on the same data dir; the rounds alternate between
// them (A, B, A, B ...) so that load drift hits both alike. Time = wall time of the POST
// (HTTP, planning, the preview run, JSON); the medians of REPS rounds (default 5) and the
// min-max are printed and written to bench/results/create-<N>.{json,md}.
// Usage: node bench/create.mjs N DATADIR
import { spawn } from 'node:child_process';
import { mkdtempSync, rmSync, openSync, readFileSync, writeFileSync, mkdirSync } from 'node:fs';
import { tmpdir, cpus, totalmem } from 'node:os';
import { join, resolve } from 'node:path';
import { GROUPBY_OPS, QUESTIONS, files, now, median, pretty } from './engines/common.mjs';

const N = Number(process.argv[2] || 1e7), DIR = resolve(process.argv[3] || 'bench/data');
const F = files(N, DIR);
const ROOT = new URL('..', import.meta.url).pathname;
const REPS = Number(process.env.REPS || 5);
const BINS = (process.env.FRAMED_BINS || join(ROOT, 'build-rel/framed')).split(',');

async function server(bin) {
  const state = mkdtempSync(join(tmpdir(), 'framed-create-'));
  const errlog = join(state, 'server.log');
  const proc = spawn(bin, ['serve', '--port', '0', '--threads', '2', '--data-dir', DIR, '--state-dir', state],
    { stdio: ['ignore', 'ignore', openSync(errlog, 'w')] });
  let base;
  for (let i = 0; i < 200 && !base; i++) {
    await new Promise((r) => setTimeout(r, 50));
    const m = readFileSync(errlog, 'utf8').match(/"listening".*?"port":(\d+)/);
    if (m) base = `http://127.0.0.1:${m[1]}`;
  }
  if (!base) throw new Error(`${bin} did not report its port; see ${errlog}`);
  const http = async (method, path, body) => {
    const r = await fetch(base + path, { method, headers: body ? { 'content-type': 'application/json' } : {},
      body: body ? JSON.stringify(body) : undefined });
    const j = await r.json();
    if (r.status >= 400) throw new Error(`${method} ${path} -> ${r.status}: ${j.detail}`);
    return j;
  };
  const stop = async () => {
    const gone = new Promise((r) => proc.once('exit', r));
    proc.kill('SIGTERM');
    await gone;
    rmSync(state, { recursive: true, force: true });
  };
  process.on('exit', () => { try { proc.kill('SIGKILL'); } catch {} });
  return { bin, http, stop };
}

async function load(s, name) {
  const df = await s.http('POST', '/v1/dataframes', { source: { dataset: name } });
  let st = await s.http('POST', '/v1/queries?wait=300', { dataframe: df.id });
  while (st.state === 'queued' || st.state === 'running') st = await s.http('GET', `/v1/queries/${st.id}?wait=300`);
  if (st.state !== 'succeeded') throw new Error(`load of ${name}: ${st.state}`);
  return df.id;
}

const servers = [];
for (const bin of BINS) {
  const s = await server(bin);
  await s.http('POST', '/v1/config', { maintain_order: false });
  s.g = await load(s, F.G1.name);
  s.x = await load(s, F.x.name);
  s.big = await load(s, F.big.name);
  servers.push(s);
}
const cases = [
  { id: 'scan', desc: `bare scan of ${F.G1.name}.csv`, plan: () => ({ source: { dataset: F.G1.name } }) },
  ...QUESTIONS.filter((q) => GROUPBY_OPS[q.id]).map((q) => ({ id: q.id, desc: q.desc,
    plan: (s) => ({ source: { dataframe: s.g }, ops: GROUPBY_OPS[q.id] }) })),
  { id: 'j5', desc: 'big inner on int', plan: (s) => ({ source: { dataframe: s.x },
    ops: [{ join: { right: { source: { dataframe: s.big } }, on: ['id3'] } }] }) },
];
const t = {}; // t[case][bin] = [seconds]
for (let rep = 0; rep < REPS; rep++) {
  for (const c of cases) {
    const order = rep % 2 ? [...servers].reverse() : servers;
    for (const s of order) {
      const t0 = now();
      const df = await s.http('POST', '/v1/dataframes', c.plan(s));
      const dt = now() - t0;
      if (!Array.isArray(df.preview)) throw new Error(`${c.id}: no preview`);
      ((t[c.id] ??= {})[s.bin] ??= []).push(dt);
      await s.http('DELETE', `/v1/dataframes/${df.id}`).catch(() => {});
    }
  }
}
for (const s of servers) await s.stop();

const names = BINS.length === 2 ? ['base', 'new'] : BINS.map((_, i) => (BINS.length === 1 ? 'framed' : `bin${i}`));
const ms = (x) => (x * 1000).toFixed(1);
let md = `## Creating a dataframe (POST /v1/dataframes), N = ${pretty(N)}\n\n`;
md += `- date: ${new Date().toISOString()}; ${cpus()[0].model.split(' ').slice(0, 2).join(' ')}, ${cpus().length} cores, `
  + `${(totalmem() / 2 ** 30).toFixed(0)} GiB; load average ${readFileSync('/proc/loadavg', 'utf8').split(' ').slice(0, 3).join(' ')}\n`;
md += `- wall time of the POST in ms, median of ${REPS} (min-max), servers taking turns; groupby questions over the `
  + `materialized groupby table, j5 over the materialized join tables; {"maintain_order": false}\n\n`;
md += `| dataframe | ${names.map((n) => `${n} ms`).join(' | ')} |${names.length === 2 ? ' new/base |' : ''}\n`;
md += `|---|${names.map(() => '---:').join('|')}|${names.length === 2 ? '---:|' : ''}\n`;
for (const c of cases) {
  const cells = BINS.map((b) => { const v = t[c.id][b]; return `${ms(median(v))} (${ms(Math.min(...v))}-${ms(Math.max(...v))})`; });
  const ratio = BINS.length === 2 ? ` ${(median(t[c.id][BINS[1]]) / median(t[c.id][BINS[0]])).toFixed(3)} |` : '';
  md += `| ${c.id} ${c.desc} | ${cells.join(' | ')} |${ratio}\n`;
}
console.log(md);
if (!process.env.NO_WRITE) {
  mkdirSync(join(ROOT, 'bench/results'), { recursive: true });
  writeFileSync(join(ROOT, `bench/results/create-${pretty(N)}.md`), md);
  writeFileSync(join(ROOT, `bench/results/create-${pretty(N)}.json`),
    JSON.stringify({ n: N, reps: REPS, bins: names, times: Object.fromEntries(Object.entries(t).map(([k, v]) =>
      [k, Object.fromEntries(Object.entries(v).map(([b, xs], i) => [names[BINS.indexOf(b)], xs]))])) }, null, 1));
}
