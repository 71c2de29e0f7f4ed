// framed through its HTTP API. Starts build-rel/framed serve --port 0 --threads 2 on the data
// dir, sets {"maintain_order": false} (and at 1e8 rows 16 shuffle partitions: config() below)
// before the first dataframe, creates one dataframe per
// table and runs it once (timed: the "load", its partitions stay in memory), then each question
// as POST /v1/queries?wait=300 {"plan": {"source": {"dataframe": id}, "ops": [...]}}.
//   engine time = the query status' elapsed_ms (runner start to finish, no HTTP);
//   e2e time    = wall time of the POST (HTTP, JSON parse, planning, queueing, run; the result
//                 stays materialized on the server, ready to fetch).
// Rows come from the status; the checksum from a second, untimed query: the same ops plus
// {"agg": ["sum(col)", ...]}. The server is stopped by its PID at the end.
// The driver (bench/onerun.mjs) frees each question's results after it (DELETE
// /v1/queries/{id}/result, untimed, as DuckDB drops its ans table) and a load's dataframes at
// the next load (DELETE /v1/dataframes/{id}), in one long-lived server as the other engines'
// processes are. Until 2026-12-07 it restarted the server before each load and between join
// questions (results could not be freed over the API then), so every repetition's q10 and j5
// ran in a fresh process, on memory the kernel had to fault in. The per-engine script (bench.mjs)
// still restarts between join questions.
// Profiling: PROFILE=q3,j5 (or PROFILE_AGAINST=duckdb.json: every question slower than 2x
// DuckDB) runs each such question once more under `perf record -g -p <server pid>` and adds
// the top symbols by self time to the output.
// As a module: open(N, DIR) -> an engine driver (bench/engines/worker.mjs, bench/onerun.mjs).
// As a script: node bench/engines/framed.mjs N DATADIR  -> JSON on stdout (bench/bench.mjs)
import { spawn, execFileSync } from 'node:child_process';
import { mkdtempSync, rmSync, openSync, readFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { pathToFileURL } from 'node:url';
import { join } from 'node:path';
import { GROUPBY_OPS, QUESTIONS, files, measure, now, log, median } from './common.mjs';

let N, DIR, F;
const ROOT = new URL('../..', import.meta.url).pathname;
const BIN = process.env.FRAMED_BIN || join(ROOT, 'build-rel/framed');
const THREADS = 2;
const PROFILE = (process.env.PROFILE || '').split(',').filter(Boolean);
// With PROFILE_AGAINST=duckdb.json: profile every question slower than 2x DuckDB.
const AGAINST = process.env.PROFILE_AGAINST ? JSON.parse(readFileSync(process.env.PROFILE_AGAINST, 'utf8')) : null;
const slow = (id, t) => PROFILE.includes(id) ||
  (AGAINST && AGAINST.q[id] && AGAINST.q[id].t > 0 && t > 2 * AGAINST.q[id].t);

const ONLY = (process.env.QUESTIONS || '').split(',').filter(Boolean);
let srv, base, state;

// Starts a server on a fresh state dir; waits for its "listening" log line.
async function start() {
  state = mkdtempSync(join(tmpdir(), 'framed-bench-'));
  const errlog = join(state, 'server.log');
  srv = spawn(BIN, ['serve', '--port', '0', '--threads', String(THREADS), '--data-dir', DIR,
    '--state-dir', state], { stdio: ['ignore', 'ignore', openSync(errlog, 'w')] });
  base = undefined;
  for (let i = 0; i < 200 && !base; i++) {
    await new Promise((r) => setTimeout(r, 50));
    const m = readFileSync(errlog, 'utf8').match(/"listening".*?"port":(\d+)/);
    if (m) base = `http://127.0.0.1:${m[1]}`;
  }
  if (!base) throw new Error(`framed serve did not report its port; see ${errlog}`);
  await http('POST', '/v1/config', config());
}
// The config posted before the first dataframe. At 1e8 rows, 16 shuffle partitions instead of the
// default 8: q10's final tasks (every row its own group) then need about 1.5 GB of working memory
// each instead of 2.7 GB, so two run at once beside the 10 GB table under the 70% budget (with 8,
// one goes over, runs again alone and q10 takes 35-37 s instead of 16-28 s; 2026-12-07).
// FRAMED_BENCH_CONFIG='{"shuffle_partitions": 8}' overrides.
const config = () => ({
  maintain_order: false, ...(N >= 1e8 ? { shuffle_partitions: 16 } : {}),
  ...JSON.parse(process.env.FRAMED_BENCH_CONFIG || '{}'),
});
// Stops it by its PID and waits for it to exit.
async function stop() {
  // exitCode stays null when a signal ended it (the OOM killer's SIGKILL, say): check both
  if (!srv || srv.exitCode !== null || srv.signalCode !== null) return;
  const gone = new Promise((r) => srv.once('exit', r));
  srv.kill('SIGTERM');
  const t = setTimeout(() => srv.kill('SIGKILL'), 10000);
  await gone;
  clearTimeout(t);
  rmSync(state, { recursive: true, force: true });
}
process.on('exit', () => { try { if (srv && srv.exitCode === null && srv.signalCode === null) srv.kill('SIGKILL'); } catch {} });
// the server's resident memory now and at its peak (VmRSS, VmHWM), GiB
const rss = () => {
  try {
    const st = readFileSync(`/proc/${srv.pid}/status`, 'utf8');
    const g = (k) => Number((st.match(new RegExp(`${k}:\\s+(\\d+)`)) || [0, 0])[1]) / (1 << 20);
    return { rss: +g('VmRSS').toFixed(2), peak: +g('VmHWM').toFixed(2) };
  } catch { return {}; }
};

async function http(method, path, body) {
  const r = await fetch(base + path, {
    method, headers: body ? { 'content-type': 'application/json' } : {},
    body: body ? JSON.stringify(body) : undefined,
  });
  const text = await r.text();
  let j;
  try { j = JSON.parse(text); } catch { j = { text }; }
  if (r.status >= 400) throw new Error(`${method} ${path} -> ${r.status}: ${j.detail || text.slice(0, 300)}`);
  return j;
}

// POST a query and wait for it; returns [status, wall seconds].
async function run(body) {
  const t0 = now();
  let st = await http('POST', '/v1/queries?wait=300', body);
  while (st.state === 'queued' || st.state === 'running')
    st = await http('GET', `/v1/queries/${st.id}?wait=300`);
  const wall = now() - t0;
  if (st.state !== 'succeeded')
    throw new Error(`query ${st.state}: ${st.error ? `${st.error.kind}: ${st.error.message}` : '?'}`);
  return [st, wall];
}

async function frame(ds) {
  const df = await http('POST', '/v1/dataframes', { source: { dataset: ds } });
  const [st, wall] = await run({ dataframe: df.id });
  return { id: df.id, t: st.elapsed_ms / 1000, wall };
}

const J = {};
async function loadJoin() {
  let t = 0, w = 0;
  for (const k of ['x', 'small', 'medium', 'big']) {
    const f = await frame(F[k].name);
    J[k] = f.id;
    t += f.t;
    w += f.wall;
  }
  return [t, w];
}

const GB = GROUPBY_OPS;
// Join questions: the right side is a plan over the right table's dataframe (rightMode
// 'dataframe'), or over its CSV dataset when the runner mixes up stored sources (see below).
let rightMode = 'dataframe';
const right = (k) => (rightMode === 'dataframe' ? { source: { dataframe: J[k] } } : { source: { dataset: F[k].name } });
const JQ = {
  j1: () => [{ join: { right: right('small'), on: ['id1'] } }],
  j2: () => [{ join: { right: right('medium'), on: ['id2'] } }],
  j3: () => [{ join: { right: right('medium'), on: ['id2'], how: 'left' } }],
  j4: () => [{ join: { right: right('medium'), on: ['id5'] } }],
  j5: () => [{ join: { right: right('big'), on: ['id3'] } }],
};

// Probe: does a join whose right side is another dataframe read that dataframe? (It read the
// left one instead in framed 0.1.0: runner_submit loads only the first stage's stored parts.)
async function probeRight() {
  const cnt = async (r) => {
    const [st] = await run({ plan: { source: { dataframe: J.medium }, ops: [
      { join: { right: r, on: ['id1'] } }, { agg: ['count(*)', 'sum(v2_right)'] }] } });
    return JSON.stringify((await http('GET', `/v1/queries/${st.id}/result`)).rows);
  };
  let a, b;
  try {
    a = await cnt({ source: { dataframe: J.small } });
  } catch (e) { a = String(e.message); }
  b = await cnt({ source: { dataset: F.small.name } });
  if (a !== b) {
    rightMode = 'dataset';
    const note = `join with a dataframe as right side gives wrong results (probe: ${a} vs ${b} from the CSV); `
      + 'the joins below read their right side from its CSV inside the timed query';
    return note;
  }
  return null;
}

// The driver (bench/engines/worker.mjs): one server, kept; load() drops the last load's
// dataframes and results first (untimed).
//   load('G1' | 'join') -> { t: elapsed_ms sum, e2e: wall sum };
//   run(id) -> { t: elapsed_ms, e2e: wall of the POST ?wait, rows } over the loaded dataframe;
//   checksum(id) -> { chk } by one more, untimed query (the ops plus an agg);
//   create(id) -> { t: wall of POST /v1/dataframes {plan} } (the question's dataframe, not run);
//   restart() -> between join questions: the results dropped (the server is kept);
//   drop() -> the results of the runs and checksums since the last drop freed (untimed);
//   rss() -> the server's { rss, peak } GiB.
export async function open(n, dir) {
  N = n;
  DIR = dir;
  F = files(N, DIR);
  await start();
  const info = await http('GET', '/v1/info');
  let g = null, probed = false;
  const notes = [];
  const plan = (id) => (id.startsWith('q') ? { source: { dataframe: g }, ops: GB[id] }
    : { source: { dataframe: J.x }, ops: JQ[id]() });
  const chkOf = {};
  for (const q of QUESTIONS) chkOf[q.id] = q.chk;
  const held = []; // queries whose results the server still holds
  return {
    engine: 'framed', version: info.version || '?', threads: THREADS, notes,
    get rightMode() { return rightMode; },
    // a new load drops what the last one made (its results, its dataframes) in the same
    // server, as DuckDB replaces its tables: no restart, so the process keeps its memory as the
    // other engines' long-lived processes do
    async load(which) {
      await this.drop();
      for (const id of [g, ...Object.values(J)].filter(Boolean)) await http('DELETE', `/v1/dataframes/${id}`);
      g = null;
      for (const k of Object.keys(J)) delete J[k];
      if (which === 'G1') {
        const f = await frame(F.G1.name);
        g = f.id;
        return { t: f.t, e2e: f.wall };
      }
      const [t, e2e] = await loadJoin();
      if (!probed) {
        probed = true;
        const note = await probeRight();
        if (note) notes.push(note);
      }
      return { t, e2e };
    },
    async run(id) {
      const [st, wall] = await run({ plan: plan(id) });
      held.push(st.id);
      return { t: st.elapsed_ms / 1000, e2e: wall, rows: st.rows };
    },
    async checksum(id) {
      const p = plan(id);
      const agg = chkOf[id].map((c) => `sum(${c})`);
      const [cs] = await run({ plan: { ...p, ops: [...p.ops, { agg }] } });
      held.push(cs.id);
      const res = await http('GET', `/v1/queries/${cs.id}/result`);
      return { chk: res.rows[0].map((v) => (v === null ? 0 : Number(v))) };
    },
    async create(id) {
      const t0 = now();
      await http('POST', '/v1/dataframes', plan(id));
      return { t: now() - t0 };
    },
    async restart() { // between join questions: their results are dropped already
      await this.drop();
      return {};
    },
    // the answers of the question's runs are freed (DELETE .../result), as DuckDB drops ans
    async drop() {
      for (const id of held.splice(0)) await http('DELETE', `/v1/queries/${id}/result`);
    },
    rss,
    async close() { await stop(); },
  };
}

// ---- the per-engine script (bench/bench.mjs) ----
async function main() {
  N = Number(process.argv[2]);
  DIR = process.argv[3];
  F = files(N, DIR);
  await start();
  const info = await http('GET', '/v1/info');
  const out = { engine: 'framed', version: info.version || '?', threads: THREADS, load: {}, load_e2e: {},
    q: {}, e2e: {}, notes: [], profiles: {} };
  let g = await frame(F.G1.name);
  out.load.G1 = g.t;
  out.load_e2e.G1 = g.wall;
  log('framed', `load G1 ${g.t.toFixed(2)} s (e2e ${g.wall.toFixed(2)} s)`);

  const plans = {}; // the exact plans, for the report

  async function question(q, src, ops) {
    plans[q.id] = { source: { dataframe: src }, ops };
    const e2e = [];
    const r = await measure(q.id, async (i) => {
      const [st, wall] = await run({ plan: { source: { dataframe: src }, ops } });
      e2e.push(wall);
      let chk;
      if (i === 1) { // checksum once, untimed
        const agg = q.chk.map((c) => `sum(${c})`);
        const [cs] = await run({ plan: { source: { dataframe: src }, ops: [...ops, { agg }] } });
        const res = await http('GET', `/v1/queries/${cs.id}/result`);
        chk = res.rows[0].map((v) => (v === null ? 0 : Number(v)));
      }
      return { t: st.elapsed_ms / 1000, rows: st.rows, chk };
    });
    out.q[q.id] = r;
    r.server_gib = rss();
    r.loadavg = readFileSync('/proc/loadavg', 'utf8').split(' ').slice(0, 3).join(' ');
    if (e2e.length) out.e2e[q.id] = { times: e2e, t: median(e2e) };
    log('framed', `${q.id} ${JSON.stringify(r)} e2e ${JSON.stringify(e2e)}`);
    if (!r.error && slow(q.id, r.t)) out.profiles[q.id] = await profile(src, ops);
  }

  // One more run of the question under perf; the top symbols by self time.
  async function profile(src, ops) {
    const data = join(state, 'perf.data');
    const perf = spawn('perf', ['record', '-F', '1999', '-g', '-p', String(srv.pid), '-o', data],
      { stdio: 'ignore' });
    await new Promise((r) => setTimeout(r, 500));
    let t = 0;
    try { [, t] = await run({ plan: { source: { dataframe: src }, ops } }); } catch (e) { /* reported elsewhere */ }
    perf.kill('SIGINT');
    await new Promise((r) => perf.on('exit', r));
    try {
      const rep = execFileSync('perf', ['report', '-i', data, '--no-children', '--stdio', '--sort', 'dso,sym',
        '-g', 'none', '--percent-limit', '1.5'], { encoding: 'utf8', stdio: ['ignore', 'pipe', 'ignore'], maxBuffer: 1 << 26 });
      const lines = rep.split('\n').filter((l) => /^\s+\d/.test(l)).slice(0, 14).map((l) => l.trim().replace(/\s+/g, ' '));
      return { wall: t, top: lines };
    } catch (e) {
      return { wall: t, error: String(e.message).slice(0, 200) };
    }
  }

  const wanted = (q) => !ONLY.length || ONLY.includes(q.id);
  for (const q of QUESTIONS.filter((q) => q.id.startsWith('q') && wanted(q))) await question(q, g.id, GB[q.id]);

  // Joins: a fresh server, so the groupby results are freed (DELETE /v1/runner frees no memory in
  // framed 0.1.0: partitions and results stay resident, and a few join results fill the 24 GiB).
  await stop();
  await start();
  const [tj, wj] = await loadJoin();
  out.load.join = tj;
  out.load_e2e.join = wj;
  log('framed', `load join tables ${tj.toFixed(2)} s (e2e ${wj.toFixed(2)} s)`);

  {
    const note = await probeRight();
    if (note) {
      out.notes.push(note);
      log('framed', note);
    }
  }
  out.right_mode = rightMode;

  const joins = QUESTIONS.filter((q) => q.id.startsWith('j') && wanted(q));
  for (const q of joins) {
    await question(q, J.x, JQ[q.id]());
    // a fresh server for the next question (to free this one's results)
    await stop();
    if (q !== joins[joins.length - 1]) {
      await start();
      await loadJoin();
    }
  }
  out.plans = plans;
  await stop();
  process.stdout.write(JSON.stringify(out) + '\n');
  process.exit(0);
}
if (import.meta.url === pathToFileURL(process.argv[1]).href) await main();
