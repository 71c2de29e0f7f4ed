// lib: what the integration tests share. Starts `framed serve --port 0` with
// fresh temp data/state dirs (or `framed worker --port 0`), reads the chosen
// port from the "listening" log line, waits for /readyz, and stops the process
// by its PID (SIGTERM, then an exit code 0 is asserted). Every response of a
// framed process that a test gets through fetch (call() included) is checked
// against openapi.yaml (contract_lib.mjs); a violation throws from the
// awaited fetch (or from reading a streamed body) and fails the test.
import assert from 'node:assert/strict';
import { execFileSync, spawn } from 'node:child_process';
import { createHash, createHmac, randomBytes } from 'node:crypto';
import { appendFileSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { checkResponse, loadContract, MAX_BODY_CHECK_BYTES } from './contract_lib.mjs';

export const BIN = process.env.FRAMED_BIN;
export const SOURCE_DIR = process.env.FRAMED_SOURCE_DIR;
if (!BIN) throw new Error('FRAMED_BIN must name the framed binary');

// ---------------------------------------------------------------- the contract
// The origins of the framed processes this test started (startServer and
// startWorker add them): only their responses are checked, not those of
// fakes a test serves itself.
const framedOrigins = new Set();
const contract = SOURCE_DIR ? loadContract(SOURCE_DIR) : null;
// Every violation seen, also those a test caught: reported at exit, which
// then fails.
export const contractViolations = [];
// For contract.test.mjs's own check of this wrapper: treats origin as a
// framed process (on) or not.
export function markFramedOrigin(origin, on) {
  if (on) framedOrigins.add(origin);
  else framedOrigins.delete(origin);
}
const realFetch = globalThis.fetch;

function requestOf(input, init) {
  const url = new URL(input instanceof Request ? input.url : String(input));
  const method = (init?.method ?? (input instanceof Request ? input.method : 'GET')).toUpperCase();
  return { url, method };
}

function violation(method, url, status, errs) {
  const message = `contract: ${method} ${url.pathname}${url.search} -> ${status}: ${errs.join('; ')}`;
  contractViolations.push(message);
  return new assert.AssertionError({ message });
}

// With FRAMED_CONTRACT_REPORT=<file>, each check appends a line there
// ("METHOD path status body|nobody"), to see what the tests cover.
const reportFile = process.env.FRAMED_CONTRACT_REPORT;

// Runs the check; throws the AssertionError of a violation.
function enforce(method, url, res, body) {
  if (reportFile) appendFileSync(reportFile, `${method} ${url.pathname} ${res.status} ${body === undefined ? 'nobody' : 'body'}\n`);
  const errs = checkResponse(contract, {
    method, path: url.pathname, status: res.status, contentType: res.headers.get('content-type'), body, headers: res.headers,
  });
  if (errs.length) throw violation(method, url, res.status, errs);
}

// A streamed body (no Content-Length) is checked when the test reads it
// whole through text() or json(); status and type are checked at once.
function checkWhenRead(method, url, res) {
  const text = res.text.bind(res);
  let checked = null;
  const read = () => {
    checked ??= text().then((t) => {
      if (t.length <= MAX_BODY_CHECK_BYTES) enforce(method, url, res, t);
      return t;
    });
    return checked;
  };
  Object.defineProperty(res, 'text', { value: read });
  Object.defineProperty(res, 'json', { value: async () => JSON.parse(await read()) });
}

// fetch, checked: same arguments, same response (the body is read from a
// clone, so the test can still read it).
async function checkedFetch(input, init) {
  const res = await realFetch(input, init);
  const { url, method } = requestOf(input, init);
  if (!contract || !framedOrigins.has(url.origin)) return res;
  const type = (res.headers.get('content-type') ?? '').toLowerCase();
  const length = res.headers.get('content-length');
  const small = length !== null && Number(length) <= MAX_BODY_CHECK_BYTES;
  const json = /json/.test(type) && !/ndjson/.test(type);
  const text = type.startsWith('text/') && !type.startsWith('text/event-stream');
  if (method === 'HEAD' || (!json && !(text && small))) {
    enforce(method, url, res, undefined); // status and type only
  } else if (small) {
    // A body cut short fails the test's own read as it would unchecked.
    const body = await res.clone().text().catch(() => undefined);
    enforce(method, url, res, body);
  } else {
    enforce(method, url, res, undefined);
    checkWhenRead(method, url, res);
  }
  return res;
}
globalThis.fetch = checkedFetch;

process.on('exit', () => {
  if (contractViolations.length === 0) return;
  process.stderr.write(`\n${contractViolations.length} contract violation(s):\n${contractViolations.join('\n')}\n`);
  process.exitCode = 1;
});

const START_TIMEOUT_MS = 30000;
const STOP_TIMEOUT_MS = 40000;

// Every temp root goes when the test process exits, whatever the test did with
// it (kept across a restart, or left by a failure); a tree a test made
// unreadable (chmod 0) is opened up first.
const tempRoots = new Set();
function removeTree(dir) {
  try {
    rmSync(dir, { recursive: true, force: true });
  } catch {
    try {
      execFileSync('chmod', ['-R', 'u+rwx', dir], { stdio: 'ignore' });
      rmSync(dir, { recursive: true, force: true });
    } catch { /* what cannot go stays: the test's verdict stands */ }
  }
}
process.on('exit', () => { for (const d of tempRoots) removeTree(d); });

export function tempRoot() {
  const dir = mkdtempSync(path.join(tmpdir(), 'framed-it-'));
  tempRoots.add(dir);
  return dir;
}

// The test's environment without FRAMED_* variables, so the server sees only
// what a test sets.
function cleanEnv(extra) {
  const env = {};
  for (const [k, v] of Object.entries(process.env)) {
    if (!k.startsWith('FRAMED_')) env[k] = v;
  }
  return { ...env, ...extra };
}

// Spawns the binary and collects its stderr. Resolves to a handle once the
// "listening" line arrived; rejects if the process exits first.
function spawnServer(args, env) {
  const child = spawn(BIN, args, { env: cleanEnv(env), stdio: ['ignore', 'pipe', 'pipe'] });
  const proc = { child, stderr: '', stdout: '', port: null };
  proc.exited = new Promise((resolve) => {
    child.on('exit', (code, signal) => resolve({ code, signal }));
  });
  child.stdout.on('data', (d) => { proc.stdout += d; });
  proc.listening = new Promise((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error(`no listening line in ${START_TIMEOUT_MS} ms:\n${proc.stderr}`)), START_TIMEOUT_MS);
    child.stderr.on('data', (d) => {
      proc.stderr += d;
      const m = /"msg":"listening"[^\n]*"port":(\d+)/.exec(proc.stderr);
      if (m && proc.port === null) {
        proc.port = Number(m[1]);
        clearTimeout(timer);
        resolve(proc.port);
      }
    });
    proc.exited.then(({ code, signal }) => {
      clearTimeout(timer);
      reject(new Error(`framed exited (code ${code}, signal ${signal}) before listening:\n${proc.stderr}`));
    });
  });
  return proc;
}

// Starts a server. opts: args (extra flags), env (extra variables), root (a
// temp dir to reuse, e.g. across a restart), keepRoot (do not delete it).
export async function startServer(opts = {}) {
  const root = opts.root ?? tempRoot();
  const dataDir = path.join(root, 'data');
  const stateDir = path.join(root, 'state');
  const args = ['serve', '--port', '0', '--data-dir', dataDir, '--state-dir', stateDir,
    ...(opts.args ?? [])];
  const proc = spawnServer(args, opts.env ?? {});
  const port = await proc.listening;
  const base = `http://127.0.0.1:${port}`;
  framedOrigins.add(base);
  await waitReady(base);
  return processHandle(proc, { base, port, root, dataDir, stateDir }, () => {
    if (!opts.keepRoot && !opts.root) rmSync(root, { recursive: true, force: true });
  });
}

// Starts `framed worker --coordinator <coordinator> --port 0`. opts: args
// (extra flags), env (extra variables, e.g. FRAMED_CLUSTER_SECRET).
export async function startWorker(coordinator, opts = {}) {
  const args = ['worker', '--coordinator', coordinator, '--port', '0', ...(opts.args ?? [])];
  const proc = spawnServer(args, opts.env ?? {});
  const port = await proc.listening;
  const base = `http://127.0.0.1:${port}`;
  framedOrigins.add(base);
  await waitReady(base);
  return processHandle(proc, { base, port }, () => {});
}

// What a test holds of a started process: its fields, its log, and a stop
// that asserts a clean exit.
function processHandle(proc, fields, cleanup) {
  const server = {
    ...fields, pid: proc.child.pid,
    stderr: () => proc.stderr,
    // Every JSON line the server logged so far.
    logLines: () => proc.stderr.split('\n').filter((l) => l.startsWith('{')).map((l) => {
      try { return JSON.parse(l); } catch { return null; }
    }).filter(Boolean),
    exited: proc.exited,
    // SIGTERM, wait for the exit, assert it was clean (0: no leak reports either).
    async stop() {
      if (proc.child.exitCode === null && proc.child.signalCode === null) {
        process.kill(proc.child.pid, 'SIGTERM');
      }
      await server.waitExit();
    },
    // Waits for an exit caused elsewhere and asserts it was clean.
    async waitExit() {
      const timer = setTimeout(() => proc.child.kill('SIGKILL'), STOP_TIMEOUT_MS);
      const { code, signal } = await proc.exited;
      clearTimeout(timer);
      framedOrigins.delete(fields.base); // its port may serve a test's fake next
      assert.equal(signal, null, `framed died by ${signal}:\n${proc.stderr}`);
      assert.equal(code, 0, `framed exited with ${code}:\n${proc.stderr.slice(-4000)}`);
      cleanup();
    },
  };
  return server;
}

// Runs the binary with args expecting it to exit on its own (a failed start).
export async function runToExit(args, env = {}) {
  const proc = spawnServer(args, env);
  proc.listening.catch(() => {});
  const timer = setTimeout(() => proc.child.kill('SIGKILL'), START_TIMEOUT_MS);
  const { code, signal } = await proc.exited;
  clearTimeout(timer);
  return { code, signal, stderr: proc.stderr, stdout: proc.stdout, listened: proc.port !== null };
}

async function waitReady(base) {
  const deadline = Date.now() + START_TIMEOUT_MS;
  for (;;) {
    try {
      const r = await fetch(`${base}/readyz`);
      await r.text();
      if (r.status === 200) return;
    } catch (e) {
      if (e instanceof assert.AssertionError) throw e; // a contract violation, not "not accepting yet"
    }
    if (Date.now() > deadline) throw new Error(`${base}/readyz never answered 200`);
    await new Promise((r) => setTimeout(r, 50));
  }
}

// One HTTP call. opts: json (a value sent as application/json), body (raw),
// headers. Returns {status, headers, text, body (parsed when JSON)}.
export async function call(base, method, urlPath, opts = {}) {
  const headers = { ...(opts.headers ?? {}) };
  let body = opts.body;
  if (opts.json !== undefined) {
    body = JSON.stringify(opts.json);
    if (!Object.keys(headers).some((h) => h.toLowerCase() === 'content-type')) {
      headers['content-type'] = 'application/json';
    }
  }
  const r = await fetch(base + urlPath, { method, headers, body });
  const text = await r.text();
  const type = r.headers.get('content-type') ?? '';
  let parsed;
  if (/json/.test(type) && !/ndjson/.test(type) && text.length > 0) parsed = JSON.parse(text);
  return { status: r.status, headers: r.headers, text, body: parsed };
}

// Asserts an RFC 9457 problem reply of the given status and type slug.
export function assertProblem(res, status, slug) {
  assert.equal(res.status, status, `expected ${status} ${slug}, got ${res.status}: ${res.text}`);
  assert.match(res.headers.get('content-type') ?? '', /^application\/problem\+json/);
  assert.equal(res.body.type, `https://framed.dev/problems/${slug}`);
  assert.equal(res.body.status, status);
  assert.equal(typeof res.body.title, 'string');
  assert.equal(typeof res.body.detail, 'string');
  assert.equal(res.body.request_id, res.headers.get('x-request-id'));
}

// A dataframe body of inline rows, optionally with ops.
export function rowsPlan(rows, ops = []) {
  return { source: { rows }, ops };
}

export const SAMPLE_PLAN = rowsPlan([{ a: 1, b: 'x' }, { a: 2, b: 'y' }], [{ where: 'a > 1' }]);

// Waits until coord lists n active workers (at most 30 s).
export async function waitWorkersActive(coord, n) {
  for (let i = 0; i < 600; i++) {
    const w = (await call(coord.base, 'GET', '/v1/workers')).body.workers;
    if (w.filter((x) => x.state === 'active').length === n) return;
    await new Promise((res) => setTimeout(res, 50));
  }
  assert.fail(`${n} workers active within 30 s`);
}

// The signing headers of a cluster GET of target (api/internal-protocol.md), as sender 'test'.
export function signedGet(secret, target) {
  const ts = String(Math.floor(Date.now() / 1000)), nonce = randomBytes(16).toString('hex');
  const bodyHash = createHash('sha256').update('').digest('hex');
  const mac = createHmac('sha256', secret).update(`GET\n${target}\n${bodyHash}\n${ts}\ntest\n${nonce}`).digest('hex');
  return { 'Framed-Sender': 'test', 'Framed-Timestamp': ts, 'Framed-Nonce': nonce, 'Framed-Signature': `v1=${mac}` };
}
