// load.mjs: framed serve under wrk. Starts the server on 127.0.0.1 (an
// ephemeral port) with a temp data dir holding a generated CSV dataset, runs
// rounds of wrk over a weighted mix of endpoints (mix.lua), and reads the
// server's RSS from /proc before and after each round, so a leak or an
// unbounded cache shows as growth between rounds. Writes
// bench/results/load.{json,md} and the "Load" section of bench/RESULTS.md.
// Usage: node bench/load/load.mjs [--duration S] [--connections N]
//   [--threads N (wrk)] [--server-threads N] [--rounds N] [--rows N]
//   [--bin PATH] [--log-level L] [--no-write]
import { execFileSync, spawn } from 'node:child_process';
import { createWriteStream, existsSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

const HERE = path.dirname(fileURLToPath(import.meta.url));
const BENCH = path.dirname(HERE);
const ROOT = path.dirname(BENCH);
const RESULTS = path.join(BENCH, 'results');

function parseArgs(argv) {
  const opts = {
    duration: 60, connections: 64, threads: 2, serverThreads: 2, rounds: 2, rows: 20000,
    bin: path.join(ROOT, 'build-rel', 'framed'), logLevel: 'info', write: true,
  };
  const numeric = { '--duration': 'duration', '--connections': 'connections', '--threads': 'threads',
    '--server-threads': 'serverThreads', '--rounds': 'rounds', '--rows': 'rows' };
  for (let i = 0; i < argv.length; i++) {
    const a = argv[i];
    if (numeric[a]) {
      const v = Number(argv[++i]);
      if (!Number.isInteger(v) || v < 1 || v > 1e7) throw new Error(`${a} needs an integer in 1..1e7`);
      opts[numeric[a]] = v;
    } else if (a === '--bin') opts.bin = path.resolve(argv[++i]);
    else if (a === '--log-level') opts.logLevel = argv[++i];
    else if (a === '--no-write') opts.write = false;
    else throw new Error(`unknown argument ${a} (see the comment at the top of load.mjs)`);
  }
  if (opts.connections < opts.threads) throw new Error('--connections must be at least --threads');
  return opts;
}

// A seeded table: id, 100 string keys, an int and a float column.
function writeDataset(file, rows) {
  let seed = 42;
  const rnd = () => { seed = (seed * 1103515245 + 12345) % 2147483648; return seed / 2147483648; };
  const lines = ['id,key,v1,v2'];
  for (let i = 0; i < rows; i++) {
    const k = String(Math.floor(rnd() * 100)).padStart(3, '0');
    lines.push(`${i},k${k},${Math.floor(rnd() * 1000)},${(rnd() * 100).toFixed(3)}`);
  }
  writeFileSync(file, lines.join('\n') + '\n');
}

function procStatus(pid) {
  const s = readFileSync(`/proc/${pid}/status`, 'utf8');
  const kb = (k) => Number(new RegExp(`^${k}:\\s+(\\d+) kB`, 'm').exec(s)?.[1] ?? NaN);
  return {
    rss_kib: kb('VmRSS'), hwm_kib: kb('VmHWM'),
    threads: Number(/^Threads:\s+(\d+)/m.exec(s)?.[1] ?? NaN),
    fds: readdirSync(`/proc/${pid}/fd`).length,
  };
}

const uptime = () => execFileSync('uptime', { encoding: 'utf8' }).trim();
const sleep = (ms) => new Promise((r) => setTimeout(r, ms));

async function startServer(opts, root) {
  const logFile = path.join(root, 'server.log');
  const log = createWriteStream(logFile);
  const args = ['serve', '--listen', '127.0.0.1', '--port', '0', '--threads', String(opts.serverThreads),
    '--data-dir', path.join(root, 'data'), '--state-dir', path.join(root, 'state'),
    '--log-level', opts.logLevel];
  const child = spawn(opts.bin, args, { stdio: ['ignore', 'ignore', 'pipe'] });
  const exited = new Promise((resolve) => child.on('exit', (code, signal) => resolve({ code, signal })));
  let head = '';
  const port = await new Promise((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error(`no listening line in 30 s: ${head}`)), 30000);
    child.stderr.on('data', (d) => {
      log.write(d);
      if (head.length < 65536) head += d;
      const m = /"msg":"listening"[^\n]*"port":(\d+)/.exec(head);
      if (m) { clearTimeout(timer); resolve(Number(m[1])); }
    });
    exited.then((e) => { clearTimeout(timer); reject(new Error(`framed exited ${JSON.stringify(e)}: ${head}`)); });
  });
  const base = `http://127.0.0.1:${port}`;
  for (let i = 0; ; i++) {
    const r = await fetch(`${base}/readyz`).catch(() => null);
    if (r?.status === 200) break;
    if (i > 300) throw new Error('/readyz never answered 200');
    await sleep(100);
  }
  return { child, exited, base, logFile, log };
}

async function stopServer(srv) {
  srv.child.kill('SIGTERM');
  const timer = setTimeout(() => srv.child.kill('SIGKILL'), 40000);
  const e = await srv.exited;
  clearTimeout(timer);
  srv.log.end();
  return e;
}

// One finished query, so the first result fetches of a round have an ID.
async function warmUp(base) {
  const body = { plan: { source: { dataset: 'events' }, ops: [{ groupby: ['key'], agg: ['count(*) as n'] }] } };
  const r = await fetch(`${base}/v1/queries?wait=60`, {
    method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify(body),
  });
  const q = await r.json();
  if (r.status !== 200 || q.state !== 'succeeded') throw new Error(`warm-up query: ${r.status} ${JSON.stringify(q)}`);
  const res = await fetch(`${base}/v1/queries/${q.id}/result`);
  const page = await res.json();
  if (page.total_rows !== 100) throw new Error(`warm-up result: ${JSON.stringify(page).slice(0, 200)}`);
  return q.id;
}

function runWrk(opts, base, queryId) {
  const args = ['-t', String(opts.threads), '-c', String(opts.connections), '-d', `${opts.duration}s`,
    '--timeout', '10s', '-s', path.join(HERE, 'mix.lua'), base, '--', queryId, 'events'];
  return new Promise((resolve, reject) => {
    const child = spawn('wrk', args, { stdio: ['ignore', 'pipe', 'inherit'] });
    let out = '';
    child.stdout.on('data', (d) => { out += d; });
    child.on('error', reject);
    child.on('exit', (code) => {
      const m = /^LOADJSON (.*)$/m.exec(out);
      if (code !== 0 || !m) reject(new Error(`wrk exited ${code}:\n${out}`));
      else resolve({ ...JSON.parse(m[1]), wrk_text: out.replace(/^LOADJSON .*$/m, '').trim() });
    });
  });
}

// Errors: socket errors, and answers that were not the expected ones.
function summarize(w) {
  const kinds = Object.values(w.kinds);
  const bad = kinds.reduce((s, k) => s + k.bad, 0);
  const se = w.socket_errors;
  const seconds = w.duration_us / 1e6;
  return {
    requests: w.requests, seconds, rps: w.requests / seconds, mib_per_s: w.bytes / seconds / 1048576,
    p50_ms: w.latency_us.p50 / 1000, p90_ms: w.latency_us.p90 / 1000, p99_ms: w.latency_us.p99 / 1000,
    max_ms: w.latency_us.max / 1000, errors: bad + se.connect + se.read + se.write + se.timeout,
  };
}

async function main() {
  const opts = parseArgs(process.argv.slice(2));
  if (!existsSync(opts.bin)) throw new Error(`no framed binary at ${opts.bin} (bench/load/run.sh builds it)`);
  const root = mkdtempSync(path.join(os.tmpdir(), 'framed-load-'));
  const out = {
    date: new Date().toISOString(), options: { ...opts, bin: path.relative(ROOT, opts.bin) },
    machine: {
      cpu: os.cpus()[0]?.model ?? '?', cores: os.cpus().length,
      memory_gib: Math.round(os.totalmem() / 2 ** 30), kernel: os.release(),
    },
    commit: execFileSync('git', ['-C', ROOT, 'rev-parse', '--short', 'HEAD'], { encoding: 'utf8' }).trim(),
    wrk: execFileSync('sh', ['-c', 'wrk --version 2>&1 | head -1'], { encoding: 'utf8' }).trim(),
    uptime_before: uptime(), rounds: [],
  };
  let srv;
  try {
    mkdirSync(path.join(root, 'data'));
    writeDataset(path.join(root, 'data', 'events.csv'), opts.rows);
    srv = await startServer(opts, root);
    await warmUp(srv.base);
    out.server_before = procStatus(srv.child.pid);
    for (let i = 1; i <= opts.rounds; i++) {
      // A fresh ID per round: the last round's warm-up query was evicted long ago.
      const queryId = await warmUp(srv.base);
      const before = uptime();
      process.stderr.write(`== round ${i}: wrk -t${opts.threads} -c${opts.connections} -d${opts.duration}s (${before})\n`);
      const w = await runWrk(opts, srv.base, queryId);
      const after = uptime();
      await sleep(2000); // let the server close the round's connections
      out.rounds.push({ round: i, ...summarize(w), wrk: w, server_after: procStatus(srv.child.pid),
        uptime_before: before, uptime_after: after });
    }
    out.server_exit = await stopServer(srv);
    const log = readFileSync(srv.logFile, 'utf8');
    const noisy = log.split('\n').filter((l) => /"level":"(warn|error)"/.test(l));
    out.server_log = {
      warn: noisy.filter((l) => l.includes('"level":"warn"')).length,
      error: noisy.filter((l) => l.includes('"level":"error"')).length,
      first: noisy.slice(0, 5),
    };
    srv = null;
  } finally {
    if (srv) await stopServer(srv);
    rmSync(root, { recursive: true, force: true });
  }
  out.uptime_after = uptime();
  // Flat: the rounds after the first grow RSS by at most 4 MiB or 10% (allocator noise);
  // the first round fills the bounded caches (512 query records, dataset schemas).
  const r1 = out.rounds[0].server_after.rss_kib;
  out.rss_growth_kib = out.rounds[out.rounds.length - 1].server_after.rss_kib - r1;
  out.rss_flat = out.rss_growth_kib <= Math.max(4096, r1 / 10);
  // Hand-written notes (the valgrind figures, what the table says) follow the table.
  const notesFile = path.join(HERE, 'notes.md');
  const notes = existsSync(notesFile) ? readFileSync(notesFile, 'utf8').trim() : '';
  const md = markdown(out) + (notes ? `\n\n${notes}` : '');
  process.stdout.write(md + '\n');
  if (opts.write) {
    writeFileSync(path.join(RESULTS, 'load.json'), JSON.stringify(out, null, 2) + '\n');
    writeFileSync(path.join(RESULTS, 'load.md'), md + '\n');
    writeResultsSection(md);
  }
  const failed = out.rounds.some((r) => r.errors > 0) || out.server_exit.code !== 0 || !out.rss_flat;
  process.exitCode = failed ? 1 : 0;
}

const mib = (kib) => (kib / 1024).toFixed(1);
const f1 = (x) => x.toFixed(1);
const f2 = (x) => x.toFixed(2);

function markdown(o) {
  const b = o.server_before;
  const lines = [
    '# Load: framed serve under wrk', '',
    'Made by `bench/load/run.sh` (see bench/README.md): `framed serve --threads ' +
      `${o.options.serverThreads} --log-level ${o.options.logLevel}\` (${o.options.bin}) on 127.0.0.1, ` +
      `a ${o.options.rows}-row CSV dataset, then ${o.rounds.length} rounds of \`wrk -t${o.options.threads} ` +
      `-c${o.options.connections} -d${o.options.duration}s\` over the mix of \`bench/load/mix.lua\`: ` +
      '20% `GET /livez`, 10% `GET /v1/config`, 10% `GET /v1/datasets`, 20% `POST /v1/queries?wait=30` ' +
      '(filter, group by 100 keys, sort, limit), 20% `GET /v1/queries/{id}/result` (JSON, CSV, NDJSON), ' +
      '10% `GET /metrics`, 10% a 404 (missing dataset or query). An error is a socket error or an answer ' +
      'other than the expected one (a non-2xx, a query that did not succeed, a 404 that is not a problem).', '',
    `- date: ${o.date}; framed at ${o.commit}; ${o.wrk}`,
    `- machine: ${o.machine.cpu}, ${o.machine.cores} cores, ${o.machine.memory_gib} GiB, Linux ${o.machine.kernel}; ` +
      'wrk and the server share the 2 cores, and other work was running on the machine when the load average is high',
    `- uptime before: \`${o.uptime_before}\`; after: \`${o.uptime_after}\``,
    `- server exit: code ${o.server_exit.code}${o.server_exit.signal ? `, signal ${o.server_exit.signal}` : ''}; ` +
      `log lines at warn ${o.server_log?.warn ?? '?'}, at error ${o.server_log?.error ?? '?'}`, '',
    '| round | requests | req/s | MiB/s | p50 ms | p90 ms | p99 ms | max ms | errors | RSS after (MiB) | threads | fds | load average during |',
    '|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---|',
    `| before (after one warm-up query) | | | | | | | | | ${mib(b.rss_kib)} | ${b.threads} | ${b.fds} | |`,
  ];
  for (const r of o.rounds) {
    const s = r.server_after;
    const load = /load average: (.*)$/.exec(r.uptime_after)?.[1] ?? '?';
    lines.push(`| ${r.round} | ${r.requests} | ${f1(r.rps)} | ${f2(r.mib_per_s)} | ${f2(r.p50_ms)} | ` +
      `${f2(r.p90_ms)} | ${f2(r.p99_ms)} | ${f1(r.max_ms)} | ${r.errors} | ${mib(s.rss_kib)} | ${s.threads} | ${s.fds} | ${load} |`);
  }
  const last = o.rounds[o.rounds.length - 1];
  const first = o.rounds[0];
  lines.push('', `RSS: ${mib(b.rss_kib)} MiB before, ${mib(first.server_after.rss_kib)} after round 1, ` +
    `${mib(last.server_after.rss_kib)} after round ${last.round} ` +
    `(${(last.server_after.rss_kib - first.server_after.rss_kib) >= 0 ? '+' : ''}${mib(last.server_after.rss_kib - first.server_after.rss_kib)} MiB ` +
    `between the first and the last round: ${o.rss_flat ? 'flat' : 'GROWING'}, the bound being 4 MiB or 10%); ` +
    `peak (VmHWM) ${mib(last.server_after.hwm_kib)} MiB.`, '');
  for (const l of o.server_log?.first ?? []) lines.push(`- server log: \`${l.slice(0, 240)}\``);
  if (o.server_log?.first?.length) lines.push('');
  lines.push('| round | ' + Object.keys(first.wrk.kinds).sort().join(' | ') + ' |');
  lines.push('|---|' + Object.keys(first.wrk.kinds).map(() => '---:').join('|') + '|');
  for (const r of o.rounds) {
    lines.push(`| ${r.round} (answered, bad) | ` + Object.keys(first.wrk.kinds).sort()
      .map((k) => `${r.wrk.kinds[k].ok + r.wrk.kinds[k].bad}, ${r.wrk.kinds[k].bad}`).join(' | ') + ' |');
  }
  for (const r of o.rounds) {
    if (r.wrk.bad_examples) lines.push('', `Bad answers in round ${r.round} (the first): ${r.wrk.bad_examples.slice(0, 300)}`);
  }
  return lines.join('\n');
}

// Replaces the "# Load" section of bench/RESULTS.md (up to the next top-level
// heading), or appends it at the end.
function writeResultsSection(md) {
  const file = path.join(BENCH, 'RESULTS.md');
  const text = existsSync(file) ? readFileSync(file, 'utf8') : '';
  const start = text.search(/^# Load\b/m);
  let next = -1;
  if (start >= 0) {
    const rest = text.slice(start + 1).search(/^# /m);
    next = rest >= 0 ? start + 1 + rest : -1;
  }
  const before = start >= 0 ? text.slice(0, start) : text.replace(/\n*$/, '\n\n');
  const after = start >= 0 && next >= 0 ? '\n' + text.slice(next) : '';
  writeFileSync(file, before + md + '\n' + after);
}

main().catch((e) => { process.stderr.write(`${e.stack ?? e}\n`); process.exitCode = 2; });
