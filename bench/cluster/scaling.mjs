// bench/cluster/scaling.mjs N DATADIR [setups]: the db-benchmark groupby (q1..q10) and join
// (j1..j5) questions on framed with the local runner and with the remote runner on 1, 2 and 3
// workers, all on 127.0.0.1 (setups: local,1,2,3 by default). Run by bench/cluster/scaling.sh,
// which builds framed and generates the tables with bench/datagen.c.
//
// Reuses the single-process benchmark (bench/engines): the question list, the file names and
// measure() (2 runs, median; a third when they differ by over 2x) from common.mjs, and the
// framed plans of the questions from bench/engines/framed.mjs (common.mjs's FRAMED_OPS when it
// exports them, else common.mjs's GROUPBY_OPS and the JQ table read out of framed.mjs (GB
// too in older trees), so both benchmarks ask the same).
//
// Each setup: `framed serve --runner local|remote --threads 2 --data-dir DATADIR` and k x
// `framed worker --threads 2` (given the coordinator's data dir with --data-dir), config {"maintain_order": false};
// the groupby table is loaded as a materialized dataframe (POST /v1/dataframes, then a query of
// it) and q1..q10 run on it; then, on a fresh cluster per join question (so results are freed),
// the four join tables are loaded and the question run. The setups' clusters run side by side
// and each question's runs alternate between them (INTERLEAVE below). Time = the query's elapsed_ms (runner
// start to finish); e2e = wall time of the POST ?wait plus reading the whole result
// (RESULT_READ below: by its locations, or as one stream). Rows and a checksum (untimed:
// the question's ops plus sums of its result columns) are compared with the local runner's.
//
// NET=tbf: every worker in its own network namespace fdw<i> (10.213.0.(10+i)) behind a veth
// shaped by tbf 10 Gbit/s at both ends, the coordinator likewise in fdw0 (10.213.0.10) and this
// client on the bridge fdbr0 (10.213.0.1) in the root namespace (CLIENT below; netns.sh
// builds and removes it, by name, at start and at exit,
// also on SIGINT/SIGTERM), a cluster secret in a 0600 file; workers get --threads
// max(1, floor(2/k)) ("same cores" as the local runner's --threads 2; WORKER_THREADS
// overrides); the bytes each run put on the links are read from the veth and bridge counters.
// Its files are scaling-<N>-client-tbf.* (SCALING_TAG=x: scaling-<N>-x-client-tbf.*; with
// CLIENT=coordinator scaling-<N>[-x]-tbf.*).
// Where the time goes, per question: CPU seconds of every process (/proc/PID/stat) against
// wall x cores, and on the workers (their /metrics) the task time spent fetching input
// partitions from other workers vs taking them from memory vs executing.
// Writes bench/cluster/results/scaling-<N>.{json,md}. Every process is stopped by its PID.
import { execFileSync } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { mkdtempSync, readFileSync, rmSync, writeFileSync, mkdirSync } from 'node:fs';
import { availableParallelism, tmpdir } from 'node:os';
import { join } from 'node:path';
import { call, drain, loadavg, machine, ok, ROOT, startCoordinator, startWorker, waitWorkers } from './procs.mjs';

const common = await import(new URL('../engines/common.mjs', import.meta.url));
const { QUESTIONS, files, measure, median, pretty, RUNS } = common;

// `scaling.mjs --report results/scaling-<N>.json` rewrites the .md from a saved run.
const FROM = process.argv[2] === '--report' ? JSON.parse(readFileSync(process.argv[3], 'utf8')) : null;
const N = FROM ? FROM.N : Math.round(Number(process.argv[2] || 1e7));
const DATA = process.argv[3] || join(ROOT, 'bench/data');
const SETUPS = (process.argv[4] || 'local,1,2,3').split(',').map((s) => (s === 'local' ? 0 : Number(s)));
const ONLY = (process.env.QUESTIONS || '').split(',').filter(Boolean);
const THREADS = 2, CORES = availableParallelism();
const NET = FROM ? FROM.net || 'loopback' : process.env.NET || 'loopback';
if (!['loopback', 'tbf'].includes(NET)) throw new Error(`NET=${NET}: loopback (default) or tbf`);
const TBF = NET === 'tbf';
// CLIENT=own (NET=tbf's default): the coordinator gets a host of its own too (namespace fdw0
// at 10.213.0.10), so this client, left in the root namespace, reads every result over a
// shaped link: the local runner's from the coordinator's host as the workers' from theirs;
// every process is then on a host of its own, as a user's client on another machine.
// CLIENT=coordinator (loopback's only setup) puts the client on the coordinator's host: the
// local runner's result then crosses no link at all, the workers' two links' worth.
// A result file of a run from before 2026-12-07 has no `client`: those all ran beside the
// coordinator.
const CLIENT = FROM ? FROM.client || 'coordinator' : process.env.CLIENT || (TBF ? 'own' : 'coordinator');
if (!['coordinator', 'own'].includes(CLIENT)) throw new Error(`CLIENT=${CLIENT}: own (NET=tbf's default) or coordinator`);
if (CLIENT === 'own' && !TBF) throw new Error('CLIENT=own needs NET=tbf');
const OWN = CLIENT === 'own';
// --threads of each worker with k workers: WORKER_THREADS, else with NET=tbf the local runner's
// cores shared out (max(1, floor(2/k))), else 2 as ever.
const workerThreads = (k) => (process.env.WORKER_THREADS ? Number(process.env.WORKER_THREADS)
  : TBF ? Math.max(1, Math.floor(THREADS / k)) : THREADS);
const CONFIG = { maintain_order: false, ...JSON.parse(process.env.SCALING_CONFIG || '{}') };
const F = files(N, DATA);
const log = (m) => process.stderr.write(`[scaling] ${m}\n`);

// ---- the questions' plans, from the single-process benchmark ----
let J = {};
const right = (k) => ({ source: { dataframe: J[k] } });
function framedOps() {
  if (common.FRAMED_OPS) return common.FRAMED_OPS(right);
  const src = readFileSync(new URL('../engines/framed.mjs', import.meta.url), 'utf8');
  const grab = (name) => {
    const m = src.match(new RegExp(`\\nconst ${name} = (\\{[\\s\\S]*?\\n\\});`));
    if (!m) throw new Error(`bench/engines/framed.mjs no longer has "const ${name} = {...};": export the plans (FRAMED_OPS in common.mjs)`);
    return m[1];
  };
  // the groupby plans live in common.mjs now (GROUPBY_OPS); framed.mjs's GB is that object
  const GB = common.GROUPBY_OPS || new Function(`return ${grab('GB')};`)();
  const JQ = new Function('right', `return ${grab('JQ')};`)(right);
  return { ...GB, ...Object.fromEntries(Object.entries(JQ).map(([k, f]) => [k, f])) };
}
const OPS = FROM ? {} : framedOps();
const opsOf = (id) => (typeof OPS[id] === 'function' ? OPS[id]() : OPS[id]);

// ---- one cluster ----
const CLK_TCK = 100;
function cpuSeconds(pid) {
  try {
    const f = readFileSync(`/proc/${pid}/stat`, 'utf8').split(') ')[1].split(' ');
    return (Number(f[11]) + Number(f[12])) / CLK_TCK;
  } catch { return 0; }
}

// ---- NET=tbf: the namespaces, the secret, the link counters ----
const NETNS = join(ROOT, 'bench/cluster/netns.sh');
const BRIDGE = { dev: 'fdbr0', addr: '10.213.0.1' };
const COORD_ADDR = OWN ? '10.213.0.10' : BRIDGE.addr; // CLIENT=own: in netns fdw0
const wAddr = (i) => `10.213.0.${11 + i}`; // worker i (0-based) in netns fdw<i+1>
let secretFile;
function netDown() { try { execFileSync('sh', [NETNS, 'down'], { stdio: ['ignore', 'ignore', 'inherit'] }); } catch {} }
if (TBF && !FROM) {
  if (process.getuid?.() !== 0) throw new Error('NET=tbf needs root (ip netns, ip link, tc)');
  const maxK = Math.max(0, ...SETUPS);
  // registered after procs.mjs's handler (which kills the processes it started first)
  process.on('exit', () => { netDown(); if (secretFile) rmSync(secretFile, { force: true }); });
  netDown();
  const env = { ...process.env, COORD_HOST: OWN ? '1' : '0' };
  if (maxK) execFileSync('sh', [NETNS, 'up', String(maxK)], { stdio: ['ignore', 'inherit', 'inherit'], env });
  else execFileSync('sh', [NETNS, 'up', '1'], { stdio: ['ignore', 'inherit', 'inherit'], env }); // the bridge address
  const d = mkdtempSync(join(tmpdir(), 'framed-cbench-secret-'));
  secretFile = join(d, 'cluster-secret');
  writeFileSync(secretFile, randomBytes(32).toString('hex') + '\n', { mode: 0o600 });
  process.on('exit', () => rmSync(d, { recursive: true, force: true }));
  log(`NET=tbf: ${execFileSync('sh', [NETNS, 'show'], { encoding: 'utf8' }).trim().split('\n').join('; ')}`);
}
const counter = (dev, dir) => Number(readFileSync(`/sys/class/net/${dev}/statistics/${dir}_bytes`, 'utf8'));
// Bytes on the links so far: from the root end of each worker's veth fdv<i> (rx = sent by
// worker i, tx = sent to it) and the bridge's own (rx = delivered to the root namespace's host,
// tx = sent by it). CLIENT=own: the coordinator's link is fdv0 (tx = sent to it, rx = by it),
// and the root namespace holds only this client.
function wire(k) {
  const w = { br_rx: counter(BRIDGE.dev, 'rx'), br_tx: counter(BRIDGE.dev, 'tx'), v_rx: 0, v_tx: 0,
    c_rx: OWN ? counter('fdv0', 'rx') : 0, c_tx: OWN ? counter('fdv0', 'tx') : 0 };
  for (let i = 1; i <= k; i++) { w.v_rx += counter(`fdv${i}`, 'rx'); w.v_tx += counter(`fdv${i}`, 'tx'); }
  return w;
}
// to_coord: into the coordinator's host; from_coord: out of it; w2w: worker -> worker (the
// bytes the workers sent that reached neither the coordinator nor the client; each crossed two
// links, counted once); to_client (CLIENT=own): into the client's host (results, answers).
const WIRE_KEYS = ['to_coord', 'from_coord', 'w2w', ...(OWN ? ['to_client'] : [])];
const wireDelta = (a, b) => (OWN
  ? { to_coord: b.c_tx - a.c_tx, from_coord: b.c_rx - a.c_rx, to_client: b.br_rx - a.br_rx,
    w2w: Math.max(0, (b.v_rx - a.v_rx) - (b.c_tx - a.c_tx) - (b.br_rx - a.br_rx)) }
  : { to_coord: b.br_rx - a.br_rx, from_coord: b.br_tx - a.br_tx,
    w2w: Math.max(0, (b.v_rx - a.v_rx) - (b.br_rx - a.br_rx)) });

async function startCluster(k) {
  const net = TBF ? { listen: COORD_ADDR, secretFile, ...(OWN ? { netns: 'fdw0' } : {}) } : {};
  const coord = await startCoordinator({ runner: k === 0 ? 'local' : 'remote', dataDir: DATA, threads: THREADS, ...net });
  const workers = [];
  for (let i = 0; i < k; i++) {
    workers.push(await startWorker(coord.base, { threads: workerThreads(k), dir: coord.root, dataDir: coord.dataDir,
      ...(TBF ? { netns: `fdw${i + 1}`, listen: wAddr(i), secretFile } : {}) }));
  }
  if (k) await waitWorkers(coord.base, k);
  await ok(coord.base, 'POST', '/v1/config', { json: CONFIG });
  return {
    coord, workers, k,
    async stop() { for (const w of workers) await w.stop(); await coord.stop(); },
    // Partitions held by each worker (after a load: how the table is spread). With a cluster
    // secret the worker's /v1/info wants a signature: its /metrics gauge instead.
    async spread() {
      const n = [];
      for (const w of workers) {
        if (!TBF) { n.push((await ok(w.base, 'GET', '/v1/info')).partitions); continue; }
        const m = (await call(w.base, 'GET', '/metrics')).text.match(/^framed_worker_partitions (\S+)/m);
        n.push(m ? Number(m[1]) : null);
      }
      return n;
    },
    // CPU seconds per process and the workers' task counters, now.
    async snapshot() {
      const s = { coord_cpu: cpuSeconds(coord.pid), worker_cpu: 0, remote_n: 0, remote_s: 0, remote_bytes: 0,
        local_s: 0, exec_s: 0, serve_s: 0 };
      for (const [i, w] of workers.entries()) {
        s.worker_cpu += cpuSeconds(w.pid);
        const m = (await call(w.base, 'GET', '/metrics')).text;
        const g = (re) => Number((m.match(re) || [0, 0])[1]);
        s.remote_n += g(/^framed_worker_input_fetches_total\{source="remote"\} (\S+)/m);
        s.remote_s += g(/^framed_worker_input_fetch_seconds_total\{source="remote"\} (\S+)/m);
        s.remote_bytes += g(/^framed_worker_input_fetch_bytes_total (\S+)/m);
        s.local_s += g(/^framed_worker_input_fetch_seconds_total\{source="local"\} (\S+)/m);
        s.exec_s += g(/^framed_worker_task_execute_seconds_total (\S+)/m);
        s[`exec_w${i}`] = g(/^framed_worker_task_execute_seconds_total (\S+)/m);
        s.serve_s += g(/^framed_http_request_duration_seconds_sum\{route="\/v1\/partitions\/\{id\}",method="GET"\} (\S+)/m);
      }
      return s;
    },
  };
}

// RESULT_READ=locations (the default): a result is read as a client that asks where it is
// would (GET /v1/queries/{id}/result/locations, then every location's Arrow stream, 4 at a
// time spread over the hosts holding them, from the workers or from the coordinator); stream: as one Arrow stream
// through the coordinator (GET /v1/queries/{id}/result?format=arrow).
const READ = process.env.RESULT_READ || 'locations';
if (!['locations', 'stream'].includes(READ)) throw new Error(`RESULT_READ=${READ}: locations or stream`);
const READ_PARALLEL = 4;

// A client reading in parallel spreads its reads over the hosts holding the parts: the
// locations come in row order, so a part's pieces (and often whole parts) sit on one worker
// back to back, and taking them in list order would put every read on that worker's link
// while the others idle. Each reader takes the next piece of the host with the fewest reads in
// flight (ties: the most pieces left); first_row places a piece in the result whatever order
// they arrive in.
async function readLocations(base, id) {
  const loc = await ok(base, 'GET', `/v1/queries/${id}/result/locations`);
  const hosts = new Map();
  for (const l of loc.locations) {
    const u = new URL(l.url, base);
    if (!hosts.has(u.origin)) hosts.set(u.origin, { todo: [], busy: 0 });
    hosts.get(u.origin).todo.push(u);
  }
  const pick = () => {
    let best = null;
    for (const h of hosts.values()) {
      if (!h.todo.length) continue;
      if (!best || h.busy < best.busy || (h.busy === best.busy && h.todo.length > best.todo.length)) best = h;
    }
    return best;
  };
  let bytes = 0;
  await Promise.all(Array.from({ length: READ_PARALLEL }, async () => {
    for (let h = pick(); h; h = pick()) {
      const u = h.todo.shift();
      h.busy++;
      try {
        const got = await drain(u.origin, u.pathname + u.search); // not `bytes += await`: that reads bytes before the wait
        bytes += got.bytes;
      } finally { h.busy--; }
    }
  }));
  return bytes;
}

// The query, waited for; with fetch, then its whole result as Arrow (the body counted, not
// kept): wall = both, st.post_s = the POST ?wait alone, st.result_bytes.
async function run(base, body, { fetch = false } = {}) {
  const t0 = performance.now();
  let st = await ok(base, 'POST', '/v1/queries?wait=300', { json: body });
  while (st.state === 'queued' || st.state === 'running') st = await ok(base, 'GET', `/v1/queries/${st.id}?wait=300`);
  st.post_s = (performance.now() - t0) / 1000;
  if (st.state !== 'succeeded') throw new Error(`query ${st.state}: ${st.error ? `${st.error.kind}: ${st.error.message}` : '?'}`);
  if (fetch && READ === 'stream') st.result_bytes = (await drain(base, `/v1/queries/${st.id}/result?format=arrow`)).bytes;
  if (fetch && READ === 'locations') st.result_bytes = await readLocations(base, st.id);
  const wall = (performance.now() - t0) / 1000;
  // read: its memory given back (untimed), so every run allocates what the one before freed
  // rather than memory the machine never touched (first touch is dear on a VM)
  if (fetch) await call(base, 'DELETE', `/v1/queries/${st.id}/result`);
  return [st, wall];
}

async function frame(base, ds) {
  const df = await ok(base, 'POST', '/v1/dataframes', { json: { source: { dataset: ds } } });
  const [st, wall] = await run(base, { dataframe: df.id });
  return { id: df.id, t: st.elapsed_ms / 1000, wall };
}

// One question: measure() over the timed runs, snapshots around them, then the checksum.
async function question(cl, q, src) {
  const base = cl.coord.base, ops = opsOf(q.id);
  const s = { e2e: [], post: [], nets: [] };
  s.before = await cl.snapshot();
  const r = await measure(q.id, async () => {
    const w0 = TBF ? wire(cl.k) : null;
    const [st, wall] = await run(base, { plan: { source: { dataframe: src }, ops } }, { fetch: true });
    if (TBF) s.nets.push(wireDelta(w0, wire(cl.k)));
    s.e2e.push(wall);
    s.post.push(st.post_s);
    s.resultBytes = st.result_bytes;
    return { t: st.elapsed_ms / 1000, rows: st.rows };
  });
  return finish(cl, q, src, ops, r, s);
}

// A question's runs done (r: measure()'s answer; s: its e2e, post, nets, resultBytes and the
// snapshot before): where the time went, then the checksum (untimed).
async function finish(cl, q, src, ops, r, s) {
  const base = cl.coord.base, { e2e, post, nets, before } = s;
  const after = await cl.snapshot();
  if (!r.error) {
    const nrun = r.times.length, wall = e2e.reduce((a, b) => a + b, 0);
    const d = Object.fromEntries(Object.keys(after).map((k) => [k, (after[k] - before[k]) / nrun]));
    r.where = { ...d, wall: wall / nrun, cpu_util: (d.coord_cpu + d.worker_cpu) / ((wall / nrun) * CORES) };
    if (TBF) for (const key of WIRE_KEYS) r.where[`wire_${key}`] = nets.reduce((a, x) => a + x[key], 0) / nets.length;
    try {
      const agg = q.chk.map((c) => `sum(${c})`);
      const [cs] = await run(base, { plan: { source: { dataframe: src }, ops: [...ops, { agg }] } });
      const res = await ok(base, 'GET', `/v1/queries/${cs.id}/result`);
      r.chk = res.rows[0].map((v) => (v === null ? 0 : Number(v)));
    } catch (e) { r.chk_error = String(e.message).slice(0, 300); }
  }
  r.e2e = e2e;
  r.post = post;
  r.result_bytes = s.resultBytes;
  r.loadavg = loadavg();
  log(`${cl.k ? `${cl.k}w` : 'local'} ${q.id} ${r.error ? `ERROR ${r.error}` : `${r.t.toFixed(3)} s, e2e ${median(e2e).toFixed(3)} s`}`
    + (r.where ? ` cpu ${(100 * r.where.cpu_util).toFixed(0)}% fetch ${r.where.remote_s.toFixed(3)} s exec ${r.where.exec_s.toFixed(3)} s` : '')
    + (r.where?.wire_w2w !== undefined ? ` wire MB to/from coord ${(r.where.wire_to_coord / 1e6).toFixed(1)}/${(r.where.wire_from_coord / 1e6).toFixed(1)} w2w ${(r.where.wire_w2w / 1e6).toFixed(1)}${r.where.wire_to_client !== undefined ? ` to client ${(r.where.wire_to_client / 1e6).toFixed(1)}` : ''}` : ''));
  return r;
}

// INTERLEAVE=1 (the default): every setup's cluster is up at once (idle but for heartbeats when
// not asked) and each question's timed runs alternate between them, run by run (local, 2w,
// local, 2w, ...), so that drift in the machine's load (2-3x on this VM within minutes) hits
// every setup alike, as the single-process benchmark interleaves its engines; measure()'s rule
// holds per setup (one more run when its runs differ by over 2x). INTERLEAVE=0: one setup after
// the other, as before 2026-12-06.
const INTERLEAVE = FROM ? FROM.interleave !== false : process.env.INTERLEAVE !== '0';

// The question on every cluster of cls, runs interleaved; opsFor(i): cls[i]'s ops (a join's
// name the dataframes of that cluster), srcs[i] its source dataframe. Returns one result a
// cluster, as question() does.
async function questionInterleaved(cls, q, srcs, opsFor) {
  const st = cls.map(() => ({ e2e: [], post: [], nets: [], times: [] }));
  const ops = cls.map((_, i) => opsFor(i));
  const one = async (i) => {
    const s = st[i], cl = cls[i];
    if (s.error) return;
    try {
      const w0 = TBF ? wire(cl.k) : null;
      const [res, wall] = await run(cl.coord.base, { plan: { source: { dataframe: srcs[i] }, ops: ops[i] } }, { fetch: true });
      if (TBF) s.nets.push(wireDelta(w0, wire(cl.k)));
      s.e2e.push(wall);
      s.post.push(res.post_s);
      s.resultBytes = res.result_bytes;
      s.rows = res.rows;
      s.times.push(res.elapsed_ms / 1000);
    } catch (e) { s.error = String(e && e.message ? e.message : e).slice(0, 500); }
  };
  for (const [i, cl] of cls.entries()) st[i].before = await cl.snapshot();
  for (let r = 0; r < RUNS; r++) for (let i = 0; i < cls.length; i++) await one(i);
  for (const [i, s] of st.entries()) {
    if (!s.error && Math.max(...s.times) > 2 * Math.min(...s.times) && Math.max(...s.times) > 0.05) await one(i);
  }
  const results = [];
  for (const [i, cl] of cls.entries()) {
    const s = st[i];
    const r = s.error ? { error: s.error, times: s.times } : { times: s.times, t: median(s.times), rows: s.rows };
    results.push(await finish(cl, q, srcs[i], ops[i], r, s));
  }
  return results;
}

// Every setup at once (INTERLEAVE): the groupby table loaded on each cluster, its questions
// run interleaved; then per join question fresh clusters of every setup with the four join
// tables loaded, the question run interleaved, the clusters stopped.
async function runInterleaved() {
  const all = SETUPS.map((k) => ({ k, name: k ? `${k}w` : 'local' }));
  for (const { k, name } of all) out.setups[name] = { k, load: {}, q: {}, loadavg_start: loadavg() };
  const stopAll = async (cls) => { for (const cl of cls) await cl.stop(); };
  const gq = QUESTIONS.filter((q) => q.id.startsWith('q') && wanted(q));
  if (gq.length) {
    const cls = [];
    try {
      const gids = [];
      for (const { k, name } of all) {
        const cl = await startCluster(k);
        cls.push(cl);
        if (!out.version) out.version = (await ok(cl.coord.base, 'GET', '/v1/info')).version;
        const g = await frame(cl.coord.base, F.G1.name);
        gids.push(g.id);
        out.setups[name].load.G1 = g.t;
        out.setups[name].spread_G1 = await cl.spread();
        log(`${name} load G1 ${g.t.toFixed(2)} s`);
      }
      for (const q of gq) {
        const rs = await questionInterleaved(cls, q, gids, () => opsOf(q.id));
        for (const [i, { name }] of all.entries()) out.setups[name].q[q.id] = rs[i];
      }
    } catch (e) {
      for (const { name } of all) out.setups[name].error = String(e.message).slice(0, 400);
      log(`groupby failed: ${String(e.message).slice(0, 400)}`);
    } finally { await stopAll(cls); }
  }
  for (const q of QUESTIONS.filter((q) => q.id.startsWith('j') && wanted(q))) {
    const cls = [];
    try {
      const joins = [];
      for (const { k, name } of all) {
        const cl = await startCluster(k);
        cls.push(cl);
        const ids = {};
        let t = 0;
        for (const key of ['x', 'small', 'medium', 'big']) {
          const f = await frame(cl.coord.base, F[key].name);
          ids[key] = f.id;
          t += f.t;
        }
        joins.push(ids);
        out.setups[name].load.join = t;
        out.setups[name].spread_join = await cl.spread();
      }
      // a join's ops name the other tables of its own cluster (right() reads J)
      const rs = await questionInterleaved(cls, q, joins.map((j) => j.x), (i) => { J = joins[i]; return opsOf(q.id); });
      for (const [i, { name }] of all.entries()) out.setups[name].q[q.id] = rs[i];
    } catch (e) {
      for (const { name } of all) out.setups[name].q[q.id] = { error: String(e.message).slice(0, 400) };
      log(`${q.id} failed: ${String(e.message).slice(0, 400)}`);
    } finally { await stopAll(cls); }
  }
  for (const { name } of all) out.setups[name].loadavg_end = loadavg();
}

const wanted = (q) => !ONLY.length || ONLY.includes(q.id);
const out = FROM || { N, config: CONFIG, date: new Date().toISOString(), machine: machine(), loadavg_start: loadavg(), result_read: READ, setups: {} };
if (!FROM) {
  out.net = NET;
  out.client = CLIENT;
  out.tag = [process.env.SCALING_TAG, OWN ? 'client' : '', TBF ? 'tbf' : ''].filter(Boolean).join('-');
  out.e2e_def = 'post+arrow';
  if (TBF) out.link = { rate: process.env.RATE || '10gbit', burst: process.env.BURST || '4mb', latency: process.env.LATENCY || '10ms' };
  out.threads = { local: THREADS, coordinator: THREADS,
    workers: Object.fromEntries(SETUPS.filter((k) => k).map((k) => [`${k}w`, workerThreads(k)])),
    rule: process.env.WORKER_THREADS ? `WORKER_THREADS=${process.env.WORKER_THREADS}` : TBF ? 'max(1, floor(2/k))' : '2 each' };
  try { out.commit = execFileSync('git', ['-C', ROOT, 'rev-parse', '--short', 'HEAD'], { encoding: 'utf8' }).trim(); } catch { out.commit = '?'; }
  out.interleave = INTERLEAVE;
  if (INTERLEAVE) await runInterleaved();
  for (const k of INTERLEAVE ? [] : SETUPS) {
    const name = k ? `${k}w` : 'local';
    const res = { k, load: {}, q: {}, loadavg_start: loadavg() };
    out.setups[name] = res;
    // groupby: one cluster, the table loaded once
    const gq = QUESTIONS.filter((q) => q.id.startsWith('q') && wanted(q));
    if (gq.length) {
      const cl = await startCluster(k);
      try {
        if (!out.version) out.version = (await ok(cl.coord.base, 'GET', '/v1/info')).version;
        const g = await frame(cl.coord.base, F.G1.name);
        res.load.G1 = g.t;
        res.spread_G1 = await cl.spread();
        log(`${name} load G1 ${g.t.toFixed(2)} s`);
        for (const q of gq) res.q[q.id] = await question(cl, q, g.id);
      } catch (e) {
        res.error = String(e.message).slice(0, 400);
        log(`${name} groupby failed: ${res.error}`);
      } finally { await cl.stop(); }
    }
    // joins: a fresh cluster per question
    for (const q of QUESTIONS.filter((q) => q.id.startsWith('j') && wanted(q))) {
      const cl = await startCluster(k);
      try {
        J = {};
        let t = 0;
        for (const key of ['x', 'small', 'medium', 'big']) {
          const f = await frame(cl.coord.base, F[key].name);
          J[key] = f.id;
          t += f.t;
        }
        res.load.join = t;
        res.spread_join = await cl.spread();
        res.q[q.id] = await question(cl, q, J.x);
      } catch (e) {
        res.q[q.id] = { error: String(e.message).slice(0, 400) };
        log(`${name} ${q.id} failed: ${res.q[q.id].error}`);
      } finally { await cl.stop(); }
    }
    res.loadavg_end = loadavg();
  }
  out.loadavg_end = loadavg();
}


// ---- report ----
const names = Object.keys(out.setups);
const fx = (x) => (x === undefined || x === null || Number.isNaN(x) ? '-' : x >= 100 ? x.toFixed(0) : x >= 10 ? x.toFixed(1) : x.toFixed(3));
const pctf = (x) => (x === undefined || Number.isNaN(x) ? '-' : `${(100 * x).toFixed(0)}%`);
const tOf = (name, id) => { const r = out.setups[name]?.q[id]; return r && !r.error ? r.t : undefined; };
const ids = QUESTIONS.filter(wanted).map((q) => q.id);
const remote = names.filter((n) => n !== 'local' && n !== '1w');
const lines = [];
const tbf = out.net === 'tbf';
const ownClient = out.client === 'own';
const withFetch = out.e2e_def === 'post+arrow';
const thr = out.threads || { local: THREADS, workers: {}, rule: '2 each' };
const wthr = (n) => thr.workers?.[n] ?? THREADS;
const ks = names.filter((n) => n !== 'local').map((n) => parseInt(n, 10));
const who = [...(names.includes('local') ? ['local runner'] : []), ...(ks.length ? [`${ks.join(', ')} worker${ks.length === 1 && ks[0] === 1 ? '' : 's'}`] : [])].join(' and ');
lines.push(`### Scaling at N = ${pretty(N)}${out.tag ? ` (${out.tag})` : ''}: ${who} ${tbf
  ? `over a modelled ${(out.link?.rate || '10gbit').replace(/gbit$/, ' Gbit/s').replace(/mbit$/, ' Mbit/s')} network (a network namespace per worker, veth + tbf)` : 'on loopback'}`, '');
lines.push(`- date: ${out.date}; framed ${out.version} at ${out.commit}; ${out.machine.cpu}, ${out.machine.ncpu} cores, ${out.machine.mem_gib} GiB, Linux ${out.machine.kernel}, Node ${out.machine.node}`);
lines.push(`- load average (1/5/15 min): at start ${out.loadavg_start}; ${names.map((n) => `${n}: ${out.setups[n].loadavg_start} -> ${out.setups[n].loadavg_end}`).join('; ')}; at end ${out.loadavg_end}`);
if (tbf) {
  const l = out.link || {};
  if (out.client === 'own') lines.push('- client on a host of its own (CLIENT=own): the coordinator is in network namespace fdw0 at 10.213.0.10 behind a shaped veth like a worker\'s, and this client alone in the root namespace, so the local runner\'s result crosses one shaped link to the client as the workers\' do (coordinator <-> worker: two links)');
  lines.push(`- network: worker i alone in network namespace fdw<i> at 10.213.0.(10+i), linked by a veth pair to the bridge fdbr0 (10.213.0.1, root namespace: ${out.client === 'own' ? 'this client alone' : 'the coordinator and this client'}); both ends of every veth \`tc qdisc ... root tbf rate ${l.rate} burst ${l.burst} latency ${l.latency}\`, so coordinator <-> worker crosses one shaped link, worker <-> worker two (as through a switch); no delay is modelled (netem is not in this kernel); a cluster secret signs the internal calls; the workers read the scanned files from the shared data dir (the same filesystem), so only partitions, tasks and results cross the links`);
}
lines.push(out.interleave ? `- runs interleaved: every setup's cluster up at once, each question's ${RUNS} timed runs alternating between them run by run (${names.join(', ')}, then again), so load drift hits them alike` : '- runs: one setup after the other (not interleaved)');
lines.push(`- threads (same cores): local runner --threads ${thr.local}; workers ${names.filter((n) => n !== 'local').map((n) => `${n} ${parseInt(n, 10)} x --threads ${wthr(n)}`).join(', ')} (${thr.rule}); the remote coordinator --threads ${thr.coordinator ?? THREADS} (its local runner's, unused); all on this ${CORES}-core machine; config ${JSON.stringify(out.config)}, the rest default; seconds = the query's elapsed_ms (runner start to finish), median of 2 runs (3 when they differ by over 2x); loads excluded`);
lines.push(`- speedup = t(1 worker) / t(k workers); efficiency = speedup / k. With ${CORES} cores, 1 worker with ${wthr('1w')} threads already has every core: the ideal speedup of more workers here is 1, so the ideal efficiency is 1/k (${remote.map((n) => `${(1 / parseInt(n, 10)).toFixed(2)} for ${n}`).join(', ')}); below that is overhead`);
lines.push('');
function timeTable(label, tOf) {
  lines.push(`| ${label} | ${names.join(' | ')} | ${remote.map((n) => `speedup ${n}`).join(' | ')} | ${remote.map((n) => `eff. ${n}`).join(' | ')} | rows, check vs local |`);
  lines.push(`|---|${names.map(() => '---:').join('|')}|${remote.map(() => '---:').join('|')}|${remote.map(() => '---:').join('|')}|---|`);
  const sums = Object.fromEntries(names.map((n) => [n, { q: 0, j: 0 }]));
  for (const id of ids) {
    const q = QUESTIONS.find((x) => x.id === id);
    const ts = names.map((n) => tOf(n, id));
    names.forEach((n, i) => { if (ts[i] !== undefined) sums[n][id[0]] += ts[i]; });
    const t1 = tOf('1w', id);
    const sp = remote.map((n) => (t1 !== undefined && tOf(n, id) ? t1 / tOf(n, id) : undefined));
    const eff = remote.map((n, i) => (sp[i] !== undefined ? sp[i] / parseInt(n, 10) : undefined));
    const ref = out.setups.local?.q[id];
    const checks = names.filter((n) => n !== 'local').map((n) => {
      const r = out.setups[n].q[id];
      if (!r || r.error) return `${n}: ${r ? 'error' : '-'}`;
      if (!ref || ref.error || !ref.chk || !r.chk) return `${n}: ${r.rows}`;
      const same = r.rows === ref.rows && r.chk.every((v, i) => Math.abs(v - ref.chk[i]) <= 1e-6 * Math.max(1, Math.abs(ref.chk[i])));
      return same ? null : `${n}: **${r.rows} ${JSON.stringify(r.chk)} vs ${ref.rows} ${JSON.stringify(ref.chk)}**`;
    }).filter(Boolean);
    lines.push(`| ${id} ${q.desc} | ${ts.map(fx).join(' | ')} | ${sp.map((x) => (x === undefined ? '-' : x.toFixed(2))).join(' | ')} | ${eff.map((x) => (x === undefined ? '-' : x.toFixed(2))).join(' | ')} | ${ref && !ref.error ? `${ref.rows} ` : ''}${checks.length ? checks.join('; ') : 'same'} |`);
  }
  for (const [kind, lab] of [['q', 'sum of groupby q1..q10'], ['j', 'sum of joins j1..j5']]) {
    const ts = names.map((n) => sums[n][kind]);
    const t1 = sums['1w']?.[kind];
    const sp = remote.map((n) => (t1 ? t1 / sums[n][kind] : undefined));
    lines.push(`| **${lab}** | ${ts.map(fx).join(' | ')} | ${sp.map((x) => (x === undefined ? '-' : x.toFixed(2))).join(' | ')} | ${sp.map((x, i) => (x === undefined ? '-' : (x / parseInt(remote[i], 10)).toFixed(2))).join(' | ')} | |`);
  }
  lines.push('');
}
timeTable('engine seconds (elapsed_ms)', tOf);
const readText = (out.result_read || 'stream') === 'locations'
  ? ' plus reading the whole result as a client that asks where it is: GET /v1/queries/{id}/result/locations, then each location\'s Arrow stream, 4 at a time on connections of their own, spread over the hosts holding them (the fewest reads in flight first), bodies drained (the parts left on workers straight from them on a signed token, the rest from the coordinator)'
  : ' plus fetching the whole result, GET /v1/queries/{id}/result?format=arrow with the body drained';
lines.push(`End to end (wall time of the POST ?wait${withFetch ? readText : ''}, median of the same runs): with the remote runner the result stays on the workers when the query ends${(out.result_read || 'stream') === 'locations' ? '' : ', and the read streams it through the coordinator partition by partition (fetching the next while the current one is sent), so that time is all in the fetch'}.`, '');
const e2eOf = (n, id) => { const r = out.setups[n]?.q[id]; return r && !r.error && r.e2e?.length ? median(r.e2e) : undefined; };
timeTable('end-to-end seconds', e2eOf);
// The target: on 2 workers each question's end-to-end time within 1.3x of the local runner's.
const LIMIT = 1.3;
const vsLocal = names.filter((n) => n !== 'local');
if (out.setups.local && vsLocal.length) {
  // the link's rate in bytes a second ('10gbit', '1gbit', '500mbit'), for the result's floor
  const rateOf = (r) => { const m = /^([\d.]+)\s*([kmg]?)bit$/i.exec(r || ''); return m ? Number(m[1]) * { '': 1, k: 1e3, m: 1e6, g: 1e9 }[m[2].toLowerCase()] / 8 : 0; };
  const linkK = parseInt(vsLocal[0], 10) || 1;
  const linkBps = tbf ? rateOf(out.link?.rate || '10gbit') * linkK : 0;
  const span = (n, id) => { const e = out.setups[n]?.q[id]?.e2e; return e?.length ? `${fx(Math.min(...e))}-${fx(Math.max(...e))}` : '-'; };
  lines.push(`End to end against the local runner on the same cores: t(k workers) / t(local); **bold** = over ${LIMIT} (the target: on 2 workers${tbf ? ' over the modelled 10 Gbit/s link' : ''}, every question within ${LIMIT}x of the local runner); the spread is the fastest and slowest of the runs.${withFetch ? ' Result MB = the Arrow stream fetched.' : ''}${withFetch && linkBps ? ` Link s = the time those bytes take on the links of ${linkK} workers together (${out.link?.rate || '10gbit'} each, the parts spread evenly): the floor of a read from the workers, which the local runner's read ${out.client === 'own' ? 'pays too (over the coordinator\'s link)' : '(loopback) does not pay'}.` : ''}`, '');
  lines.push(`| question | local s | local spread | ${vsLocal.map((n) => `${n} / local | ${n} spread`).join(' | ')} |${withFetch ? ' result MB |' : ''}${withFetch && linkBps ? ' link s |' : ''}`);
  lines.push(`|---|---:|---:|${vsLocal.map(() => '---:|---:').join('|')}|${withFetch ? '---:|' : ''}${withFetch && linkBps ? '---:|' : ''}`);
  const over = Object.fromEntries(vsLocal.map((n) => [n, []]));
  let counted = 0;
  for (const id of ids) {
    const t0 = e2eOf('local', id);
    const cells = vsLocal.map((n) => {
      const t = e2eOf(n, id);
      if (t === undefined || !t0) return '-';
      const x = t / t0;
      if (x > LIMIT) over[n].push(id);
      return `${x > LIMIT ? `**${x.toFixed(2)}**` : x.toFixed(2)} | ${span(n, id)}`;
    });
    if (t0) counted++;
    const rb = out.setups.local.q[id]?.result_bytes;
    lines.push(`| ${id} | ${fx(t0)} | ${span('local', id)} | ${cells.join(' | ')} |${withFetch ? ` ${rb === undefined ? '-' : (rb / 1e6).toFixed(1)} |` : ''}${withFetch && linkBps ? ` ${rb === undefined ? '-' : (rb / linkBps).toFixed(2)} |` : ''}`);
  }
  lines.push('');
  for (const n of vsLocal) lines.push(`- ${n}: ${over[n].length ? `over ${LIMIT}x on ${over[n].length} of ${counted}: ${over[n].join(', ')}` : `within ${LIMIT}x on all ${counted}`}`);
  lines.push('');
}
const errs = [];
for (const n of names) {
  if (out.setups[n].error) errs.push(`- ${n}: ${out.setups[n].error}`);
  for (const [id, r] of Object.entries(out.setups[n].q)) {
    if (r.error) errs.push(`- ${n} ${id}: ${r.error}`);
    if (r.chk_error) errs.push(`- ${n} ${id} checksum: ${r.chk_error}`);
  }
}
if (errs.length) lines.push('Failures:', '', ...errs);
lines.push('', `#### Where the time goes (per run, averaged over the timed runs)`, '');
lines.push(`CPU = CPU seconds of the coordinator and every worker (utime + stime) / (wall x ${CORES} cores): 100% = both cores busy. On the workers, summed over tasks (which overlap, so the sum can exceed the wall time): fetch = taking input partitions from other workers (GET, transfer, deserialize), mem = from the worker's own memory, exec = running the task's spec; fetch share = fetch / (fetch + mem + exec); MB = in-memory bytes of the fetched partitions. coord = the coordinator's share of the CPU seconds.${tbf ? ' Wire MB (per timed run: the POST and the result fetch) from the link counters (/sys/class/net/*/statistics, Ethernet frames with their headers): ->c = workers to the coordinator (fdbr0 rx: tasks\' answers, result partitions), c-> = coordinator to the workers (fdbr0 tx: tasks, partitions it serves), w-w = between workers (what the workers\' veths took in minus what reached the coordinator; each such byte crossed two links, counted once).' : ''}${ownClient ? ' With CLIENT=own the coordinator\'s link is fdv0 (->c = fdv0 tx, c-> = fdv0 rx), w-w excludes what reached the coordinator or the client, and ->client = into the client\'s host (fdbr0 rx: results, answers).' : ''}`, '');
const wnames = names.filter((n) => n !== 'local');
const wireKeys = ['wire_to_coord', 'wire_from_coord', 'wire_w2w', ...(ownClient ? ['wire_to_client'] : [])];
const wireCols = tbf ? wnames.flatMap((n) => [`wire MB ->c ${n}`, `c-> ${n}`, `w-w ${n}`, ...(ownClient ? [`->client ${n}`] : [])]) : [];
lines.push(`| question | ${names.map((n) => `CPU ${n}`).join(' | ')} | ${wnames.map((n) => `coord ${n}`).join(' | ')} | ${wnames.map((n) => `fetch share ${n}`).join(' | ')} | ${wnames.map((n) => `MB fetched ${n}`).join(' | ')} |${wireCols.map((c) => ` ${c} |`).join('')}`);
lines.push(`|---|${names.map(() => '---:').join('|')}|${wnames.map(() => '---:').join('|')}|${wnames.map(() => '---:').join('|')}|${wnames.map(() => '---:').join('|')}|${wireCols.map(() => '---:|').join('')}`);
const mb = (x) => (x === undefined ? '-' : x >= 1e7 ? (x / 1e6).toFixed(0) : (x / 1e6).toFixed(1));
const wireCells = (get) => (tbf ? wnames.flatMap((n) => wireKeys.map((k) => mb(get(n)?.[k]))).map((c) => ` ${c} |`).join('') : '');
const wsum = Object.fromEntries(names.map((n) => [n, { cpu: 0, wall: 0, coord: 0, fetch: 0, mem: 0, exec: 0, bytes: 0, wire_to_coord: 0, wire_from_coord: 0, wire_w2w: 0, wire_to_client: 0 }]));
for (const id of ids) {
  const w = (n) => out.setups[n]?.q[id]?.where;
  for (const n of names) {
    const x = w(n);
    if (!x) continue;
    const s = wsum[n];
    s.cpu += x.coord_cpu + x.worker_cpu; s.wall += x.wall; s.coord += x.coord_cpu;
    s.fetch += x.remote_s; s.mem += x.local_s; s.exec += x.exec_s; s.bytes += x.remote_bytes;
    for (const k of wireKeys) s[k] += x[k] || 0;
  }
  const share = (x) => (x ? x.remote_s / Math.max(1e-9, x.remote_s + x.local_s + x.exec_s) : undefined);
  const coordShare = (x) => (x ? x.coord_cpu / Math.max(1e-9, x.coord_cpu + x.worker_cpu) : undefined);
  lines.push(`| ${id} | ${names.map((n) => pctf(w(n)?.cpu_util)).join(' | ')} | ${wnames.map((n) => pctf(coordShare(w(n)))).join(' | ')} | ${wnames.map((n) => pctf(share(w(n)))).join(' | ')} | ${wnames.map((n) => (w(n) ? (w(n).remote_bytes / 1e6).toFixed(0) : '-')).join(' | ')} |${wireCells(w)}`);
}
lines.push(`| **all** | ${names.map((n) => pctf(wsum[n].cpu / Math.max(1e-9, wsum[n].wall * CORES))).join(' | ')} | ${wnames.map((n) => pctf(wsum[n].coord / Math.max(1e-9, wsum[n].cpu))).join(' | ')} | ${wnames.map((n) => pctf(wsum[n].fetch / Math.max(1e-9, wsum[n].fetch + wsum[n].mem + wsum[n].exec))).join(' | ')} | ${wnames.map((n) => (wsum[n].bytes / 1e6).toFixed(0)).join(' | ')} |${wireCells((n) => wsum[n])}`);
lines.push('');
for (const n of wnames) {
  const st = out.setups[n];
  const busiest = [];
  for (const id of ids) {
    const x = st.q[id]?.where;
    if (!x) continue;
    const per = Object.keys(x).filter((k) => /^exec_w\d+$/.test(k)).map((k) => x[k]);
    const tot = per.reduce((a, b) => a + b, 0);
    if (tot > 0) busiest.push(`${id} ${(100 * Math.max(...per) / tot).toFixed(0)}%`);
  }
  lines.push(`- ${n}: partitions per worker after loading the groupby table ${JSON.stringify(st.spread_G1 ?? [])}, the four join tables ${JSON.stringify(st.spread_join ?? [])}; the busiest worker's share of task execution time: ${busiest.join(', ')}`);
}
lines.push('');
out.summary = wsum;
const md = lines.join('\n') + '\n';
const dir = join(ROOT, 'bench/cluster/results');
mkdirSync(dir, { recursive: true });
const tag = `${pretty(N)}${out.tag ? `-${out.tag}` : ''}`;
writeFileSync(join(dir, `scaling-${tag}.json`), JSON.stringify(out, null, 1) + '\n');
writeFileSync(join(dir, `scaling-${tag}.md`), md);
process.stdout.write(md);
