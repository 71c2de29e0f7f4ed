// Processes and HTTP for the cluster benchmarks: a coordinator (`framed serve`) and workers
// (`framed worker`) on 127.0.0.1, each started by PID and stopped by that PID (SIGTERM, then
// SIGKILL after 10 s); nothing else is ever signalled. Logs go to files in a temp dir.
// With `listen` (and a cluster secret file) they listen on another address; with `netns` a
// process runs inside that network namespace (`ip netns exec NS framed ...`: ip execs framed
// in place, so the PID spawned is framed's own and SIGTERM reaches it; see NET=tbf in README).
import { spawn } from 'node:child_process';
import { mkdtempSync, openSync, readFileSync, rmSync } from 'node:fs';
import http from 'node:http';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

export const ROOT = new URL('../..', import.meta.url).pathname.replace(/\/$/, '');
export const BIN = process.env.FRAMED_BIN || join(ROOT, 'build-rel/framed');

const live = new Set();
process.on('exit', () => { for (const c of live) { try { process.kill(c.pid, 'SIGKILL'); } catch {} } });
for (const sig of ['SIGINT', 'SIGTERM']) process.on(sig, () => process.exit(130));

const sleep = (ms) => new Promise((r) => setTimeout(r, ms));

// Starts BIN with args (inside network namespace netns when given); resolves once its
// "listening" log line names the port. host: the address it listens on.
async function startProc(args, logPath, { env = {}, netns, host = '127.0.0.1' } = {}) {
  const [cmd, argv] = netns ? ['ip', ['netns', 'exec', netns, BIN, ...args]] : [BIN, args];
  const child = spawn(cmd, argv, { stdio: ['ignore', 'ignore', openSync(logPath, 'w')],
    env: { ...process.env, ...env } });
  live.add(child);
  const exited = new Promise((r) => child.once('exit', (code, signal) => { live.delete(child); r({ code, signal }); }));
  let port;
  for (let i = 0; i < 400 && !port; i++) {
    await sleep(25);
    if (child.exitCode !== null) break;
    const m = readFileSync(logPath, 'utf8').match(/"listening".*?"port":(\d+)/);
    if (m) port = Number(m[1]);
  }
  if (!port) {
    try { process.kill(child.pid, 'SIGKILL'); } catch {}
    throw new Error(`${args[0]} did not report its port; see ${logPath}`);
  }
  return {
    pid: child.pid, port, base: `http://${host}:${port}`, log: logPath,
    async stop() {
      if (child.exitCode !== null || child.signalCode !== null) return exited;
      process.kill(child.pid, 'SIGTERM');
      const t = setTimeout(() => { try { process.kill(child.pid, 'SIGKILL'); } catch {} }, 10000);
      const r = await exited;
      clearTimeout(t);
      return r;
    },
  };
}

// Flags for an address beyond loopback: where to listen and the cluster secret's file.
const netFlags = (listen, secretFile) => [...(listen ? ['--listen', listen] : []),
  ...(secretFile ? ['--cluster-secret-file', secretFile] : [])];

// A coordinator: runner 'local' or 'remote'. dataDir is shared by path with the workers.
// listen/secretFile: see netFlags (default 127.0.0.1, no secret).
export async function startCoordinator({ runner = 'remote', dataDir, threads = 2, dir, listen, secretFile, netns } = {}) {
  const root = dir || mkdtempSync(join(tmpdir(), 'framed-cbench-'));
  const state = mkdtempSync(join(root, 'state-'));
  const data = dataDir || mkdtempSync(join(root, 'data-'));
  const p = await startProc(['serve', '--port', '0', '--runner', runner, '--threads', String(threads),
    '--data-dir', data, '--state-dir', state, '--log-level', 'warn', ...netFlags(listen, secretFile)],
  join(root, `coord-${Date.now()}.log`), { host: listen, netns });
  p.root = root;
  p.dataDir = data;
  const stop = p.stop;
  // The state goes; the logs stay only when the process did not exit cleanly (or KEEP_LOGS is set).
  p.stop = async () => {
    const r = await stop();
    rmSync(state, { recursive: true, force: true });
    if (!dir && r.code === 0 && r.signal === null && !process.env.KEEP_LOGS) rmSync(root, { recursive: true, force: true });
    return r;
  };
  return p;
}

// dataDir: the coordinator's, so task file inputs (relative to it) resolve.
// args: extra flags (e.g. --data-source remote). netns: run inside that network namespace;
// listen/secretFile: see netFlags.
export async function startWorker(coordBase, { threads = 2, dir, dataDir, args = [], netns, listen, secretFile } = {}) {
  const root = dir || mkdtempSync(join(tmpdir(), 'framed-cbench-'));
  const p = await startProc(['worker', '--coordinator', coordBase, '--port', '0', '--threads', String(threads),
    ...(dataDir ? ['--data-dir', dataDir] : []), '--log-level', 'warn', ...netFlags(listen, secretFile), ...args],
  join(root, `worker-${Date.now()}-${Math.random().toString(16).slice(2, 6)}.log`), { netns, host: listen });
  const stop = p.stop;
  p.stop = async () => {
    const r = await stop();
    if (!dir && r.code === 0 && r.signal === null && !process.env.KEEP_LOGS) rmSync(root, { recursive: true, force: true });
    return r;
  };
  return p;
}

// Waits until the coordinator lists n active workers.
export async function waitWorkers(base, n) {
  for (let i = 0; i < 200; i++) {
    const r = await call(base, 'GET', '/v1/workers');
    if (r.status === 200 && r.body.workers.filter((w) => w.state === 'active').length >= n) return;
    await sleep(50);
  }
  throw new Error(`${n} workers did not become active`);
}

// One keep-alive agent per process: the round trips measured reuse one connection.
// timeout: an idle socket's end; a server's Keep-Alive hint (framed's: its idle timeout, 30 s)
// lowers it to a second under the server's, so a socket is never reused as the server closes it
export const agent = new http.Agent({ keepAlive: true, maxSockets: 1, timeout: 60000 });

// A request over the keep-alive agent: {status, headers, text, body (JSON or null)}.
export function call(base, method, path, { json, headers = {}, raw } = {}) {
  const payload = raw !== undefined ? raw : json !== undefined ? JSON.stringify(json) : undefined;
  const u = new URL(base + path);
  return new Promise((resolve, reject) => {
    const req = http.request({ host: u.hostname, port: u.port, path: u.pathname + u.search, method, agent,
      headers: { ...(payload !== undefined ? { 'content-type': 'application/json',
        'content-length': Buffer.byteLength(payload) } : {}), ...headers } }, (res) => {
      const chunks = [];
      res.on('data', (c) => chunks.push(c));
      res.on('end', () => {
        const text = Buffer.concat(chunks).toString('utf8');
        let body = null;
        try { body = JSON.parse(text); } catch {}
        resolve({ status: res.statusCode, headers: res.headers, text, body });
      });
    });
    req.on('error', reject);
    if (payload !== undefined) req.write(payload);
    req.end();
  });
}

// Bodies drained in parallel (a result read 4 at a time) each get a connection of their own:
// over the one-socket agent above they would queue behind each other on one connection a host.
export const drainAgent = new http.Agent({ keepAlive: true, maxSockets: 8, timeout: 60000 });

// A GET whose body is only counted, never kept (a large result): {status, bytes}; throws on
// a status >= 400.
export function drain(base, path, { headers = {} } = {}) {
  const u = new URL(base + path);
  return new Promise((resolve, reject) => {
    const req = http.request({ host: u.hostname, port: u.port, path: u.pathname + u.search, method: 'GET', agent: drainAgent, headers }, (res) => {
      let bytes = 0;
      const err = [];
      res.on('data', (c) => { bytes += c.length; if (res.statusCode >= 400 && err.length < 8) err.push(c); });
      res.on('end', () => {
        if (res.statusCode >= 400) reject(new Error(`GET ${path} -> ${res.statusCode}: ${Buffer.concat(err).toString('utf8').slice(0, 400)}`));
        else resolve({ status: res.statusCode, bytes });
      });
      res.on('error', reject);
    });
    req.on('error', reject);
    req.end();
  });
}

// call() that throws on a status >= 400.
export async function ok(base, method, path, opts) {
  const r = await call(base, method, path, opts);
  if (r.status >= 400) throw new Error(`${method} ${path} -> ${r.status}: ${r.text.slice(0, 400)}`);
  return r.body;
}

export function pct(sorted, p) {
  if (!sorted.length) return NaN;
  const rank = Math.min(sorted.length, Math.max(1, Math.ceil((p / 100) * sorted.length)));
  return sorted[rank - 1];
}

export function machine() {
  const cpu = (readFileSync('/proc/cpuinfo', 'utf8').match(/model name\s*:\s*(.*)/) || [])[1] || '?';
  const ncpu = (readFileSync('/proc/cpuinfo', 'utf8').match(/^processor/gm) || []).length;
  const mem = Number((readFileSync('/proc/meminfo', 'utf8').match(/MemTotal:\s+(\d+)/) || [0, 0])[1]) / (1 << 20);
  const kernel = readFileSync('/proc/sys/kernel/osrelease', 'utf8').trim();
  return { cpu, ncpu, mem_gib: +mem.toFixed(1), kernel, node: process.version };
}

export const loadavg = () => readFileSync('/proc/loadavg', 'utf8').split(' ').slice(0, 3).join(' ');
