// hostile_lib: what the hostile_* catalogues share. A case is a row
// {name, method, path, headers, body | chunks | raw, expect: {status, type}};
// it is sent byte for byte (node:http with the path as given, or a raw
// node:net socket for what node:http refuses to send), its answer is checked
// against the expected problem, and the target must still answer /livez and
// hold exactly the state it held before the group (config, runner, dataset
// listing, the data dir's files including hidden ones).
import assert from 'node:assert/strict';
import { isDeepStrictEqual } from 'node:util';
import { readFileSync, readdirSync, rmSync, statSync } from 'node:fs';
import http from 'node:http';
import net from 'node:net';
import path from 'node:path';
import { SOURCE_DIR, startServer, startWorker, tempRoot } from './lib.mjs';

export const PROBLEM_BASE = 'https://framed.dev/problems/';
const CASE_TIMEOUT_MS = 15000;
const RAW_TIMEOUT_MS = 5000;
const STOP_GRACE_MS = 15000;

// One request through node:http: the path is sent as it is (no URL
// normalisation, so %2e%2e and // survive). chunks: a chunked body.
export function send(base, c, timeoutMs = CASE_TIMEOUT_MS) {
  const u = new URL(base);
  return new Promise((resolve) => {
    const headers = { ...(c.headers ?? {}) };
    let req;
    try {
      req = http.request({
      host: u.hostname, port: u.port, method: c.method, path: c.path, headers,
        agent: false, setHost: c.noHost !== true,
      }, (res) => {
        const parts = [];
        res.on('data', (d) => parts.push(d));
        res.on('end', () => resolve(answer(res.statusCode, res.headers, Buffer.concat(parts))));
        res.on('error', (e) => resolve({ status: null, error: String(e) }));
      });
    } catch (e) {
      // node:http refused to send it: the case belongs on a raw socket.
      resolve({ status: null, error: `not sent: ${e}` });
      return;
    }
    req.setTimeout(timeoutMs, () => {
      req.destroy();
      resolve({ status: null, error: `no answer in ${timeoutMs} ms` });
    });
    req.on('error', (e) => resolve({ status: null, error: String(e) }));
    if (c.chunks) {
      for (const ch of c.chunks) req.write(ch);
      req.end();
    } else {
      req.end(c.body);
    }
  });
}

function answer(status, headers, bytes) {
  const text = bytes.toString('utf8');
  let body;
  if (/json/.test(headers['content-type'] ?? '') && !/ndjson/.test(headers['content-type'])) {
    try { body = JSON.parse(text); } catch { body = undefined; }
  }
  return { status, headers, text, bytes, body };
}

// Raw bytes over a socket; resolves with the first response parsed from what
// came back before the server closed or timeoutMs passed. opts.endAfter:
// half-close the socket after writing (a client that went away).
export function sendRaw(base, raw, { timeoutMs = RAW_TIMEOUT_MS, endAfter = false } = {}) {
  const u = new URL(base);
  return new Promise((resolve) => {
    const sock = net.connect(Number(u.port), u.hostname);
    const parts = [];
    let done = false;
    const finish = (why) => {
      if (done) return;
      done = true;
      clearTimeout(timer);
      sock.destroy();
      resolve({ ...parseRaw(Buffer.concat(parts)), closed: why });
    };
    const timer = setTimeout(() => finish('timeout'), timeoutMs);
    sock.on('connect', () => {
      const chunks = Array.isArray(raw) ? raw : [raw];
      for (const ch of chunks) sock.write(ch);
      if (endAfter) sock.end();
    });
    sock.on('data', (d) => {
      parts.push(d);
      if (parseRaw(Buffer.concat(parts)).complete) finish('answered');
    });
    sock.on('end', () => finish('closed'));
    sock.on('close', () => finish('closed'));
    sock.on('error', () => finish('error'));
  });
}

// The first HTTP response in bytes (Content-Length or chunked body).
export function parseRaw(bytes) {
  // Interim 1xx answers (100 Continue) are skipped: the final one counts.
  while (/^HTTP\/\d\.\d 1\d\d /.test(bytes.subarray(0, 16).toString('latin1'))) {
    const end = bytes.indexOf('\r\n\r\n');
    if (end < 0) break;
    bytes = bytes.subarray(end + 4);
  }
  const head = bytes.indexOf('\r\n\r\n');
  if (head < 0) return { status: null, complete: false, text: bytes.toString('latin1') };
  const lines = bytes.subarray(0, head).toString('latin1').split('\r\n');
  const m = /^HTTP\/\d\.\d (\d{3})/.exec(lines[0]);
  const headers = {};
  for (const l of lines.slice(1)) {
    const i = l.indexOf(':');
    if (i > 0) headers[l.slice(0, i).trim().toLowerCase()] = l.slice(i + 1).trim();
  }
  let rest = bytes.subarray(head + 4);
  let complete = false;
  if (headers['content-length'] !== undefined) {
    const n = Number(headers['content-length']);
    complete = rest.length >= n;
    rest = rest.subarray(0, n);
  } else if (/chunked/i.test(headers['transfer-encoding'] ?? '')) {
    const out = [];
    let p = 0;
    for (;;) {
      const eol = rest.indexOf('\r\n', p);
      if (eol < 0) break;
      const size = parseInt(rest.subarray(p, eol).toString('latin1'), 16);
      if (Number.isNaN(size)) break;
      if (size === 0) { complete = true; break; }
      out.push(rest.subarray(eol + 2, eol + 2 + size));
      p = eol + 2 + size + 2;
    }
    rest = Buffer.concat(out);
  }
  const r = answer(m ? Number(m[1]) : null, headers, rest);
  return { ...r, complete };
}

// Checks an answer against expect: {status (a number or a list), type (a
// slug; null: any framed problem type), alt: {status, type} also taken
// where the code and openapi.yaml disagree}; expect.status null: the server may
// close without answering (a request cut by the client).
export function checkAnswer(c, r) {
  const e = c.expect;
  const what = `${c.name}: got ${r.status} ${r.error ?? ''} ${(r.text ?? '').slice(0, 300)}`;
  assert.ok(!String(r.error ?? '').startsWith('not sent'), `${c.name}: ${r.error}`);
  if (e.status === null) {
    assert.ok(r.status === null || (r.status >= 400 && r.status < 500), what);
    if (e.closes) assert.notEqual(r.closed, 'timeout', `${what}: neither answered nor closed`);
    return;
  }
  const statuses = Array.isArray(e.status) ? e.status : [e.status];
  if (e.alt && r.status === e.alt.status && r.body?.type === PROBLEM_BASE + e.alt.type) return;
  assert.ok(statuses.includes(r.status), `expected ${statuses.join('|')} ${e.type ?? ''}; ${what}`);
  if (e.problem === false) return;
  assert.match(r.headers['content-type'] ?? '', /^application\/problem\+json/, what);
  assert.ok(r.body && typeof r.body === 'object', `${what}: no JSON problem body`);
  if (e.type) assert.equal(r.body.type, PROBLEM_BASE + e.type, what);
  else assert.ok(String(r.body.type).startsWith(PROBLEM_BASE), what);
  assert.equal(r.body.status, r.status, what);
}

// Every file under dir (hidden ones included) with its size and mtime.
export function listTree(dir) {
  const out = [];
  const walk = (d, rel) => {
    let names;
    try { names = readdirSync(d).sort(); } catch { return; }
    for (const n of names) {
      const p = path.join(d, n);
      const st = statSync(p, { throwIfNoEntry: false }) ?? { size: -1, mtimeMs: 0 };
      out.push(`${path.join(rel, n)} ${st.size} ${st.mtimeMs}`);
      if (st.isDirectory?.()) walk(p, path.join(rel, n));
    }
  };
  walk(dir, '');
  return out;
}

// A process under attack: restarted (same dirs) when a case killed it, so
// the cases after it still run; the kill itself fails that case.
export class Target {
  constructor(kind, opts = {}) {
    this.kind = kind; // 'serve' or 'worker'
    this.opts = opts;
    this.root = kind === 'serve' ? (opts.root ?? tempRoot()) : null;
    this.deaths = [];
  }

  async start() {
    if (this.kind === 'serve') {
      this.srv = await startServer({ ...this.opts, root: this.root });
    } else {
      this.srv = await startWorker(this.opts.coordinator(), this.opts);
    }
    this.alive = true;
    this.srv.exited.then((x) => { this.alive = false; this.exit = x; });
    if (this.opts.setup && !this.setUp) {
      this.setUp = true;
      await this.opts.setup(this);
    }
    return this;
  }

  // A group changed the state (a defect): start over from fresh dirs and the
  // setup, so the next group is not judged on this one's damage.
  async reset() {
    try { await this.stop({ keepRoot: true }); } catch { /* reported by the state check */ }
    if (this.root) {
      rmSync(path.join(this.root, 'data'), { recursive: true, force: true });
      rmSync(path.join(this.root, 'state'), { recursive: true, force: true });
    }
    this.setUp = false;
    await this.start();
  }

  get base() { return this.srv.base; }
  get dataDir() { return this.srv.dataDir; }

  // After a case: the process answers /livez, else it is restarted and the
  // case fails with how it died.
  async assertUp(name) {
    let ok = false;
    if (this.alive) {
      const r = await send(this.base, { method: 'GET', path: '/livez' }, 10000);
      ok = r.status === 200;
    }
    if (ok) return;
    const why = this.alive ? 'stopped answering /livez' : `died (${JSON.stringify(this.exit)})`;
    this.deaths.push(name);
    const tail = this.srv.stderr().slice(-3000);
    await this.kill();
    await this.start();
    assert.fail(`${this.kind} ${why} after "${name}":\n${tail}`);
  }

  async kill() {
    if (this.alive) process.kill(this.srv.pid, 'SIGKILL');
    await this.srv.exited;
  }

  // SIGTERM and a clean exit (no leak report), within a bound: a process
  // that cannot stop is killed and the stop fails.
  async stop({ keepRoot = false } = {}) {
    let timer;
    const hung = new Promise((r) => { timer = setTimeout(() => r('hung'), STOP_GRACE_MS); });
    try {
      if (!this.alive) {
        assert.deepEqual(this.exit, { code: 0, signal: null }, this.srv.stderr().slice(-3000));
        return;
      }
      const res = await Promise.race([this.srv.stop().then(() => 'ok'), hung]);
      if (res === 'hung') {
        await this.kill();
        assert.fail(`${this.kind} did not stop within ${STOP_GRACE_MS} ms of SIGTERM`);
      }
    } finally {
      clearTimeout(timer);
      if (this.root && !keepRoot) rmSync(this.root, { recursive: true, force: true });
    }
  }
}

// What a coordinator's state is made of, as text.
export async function coordinatorState(t) {
  const get = async (p) => {
    const r = await send(t.base, { method: 'GET', path: p }, 20000);
    return `${r.status} ${r.text}`;
  };
  const runner = JSON.parse((await get('/v1/runner')).slice(4) || '{}');
  return {
    config: await get('/v1/config'),
    runner: `${runner.state} ${runner.config_id} ${JSON.stringify(runner.queries)}`,
    datasets: await get('/v1/datasets'),
    files: listTree(t.dataDir),
  };
}

// Compares the state with the one before the group; a case that changed it
// fails, and the target starts over so the next case is judged alone.
async function sameState(target, stateFn, ref, name, settleMs = 200) {
  let after;
  let leftovers;
  // A cut request is noticed by the server a moment later: settleMs for it.
  for (let i = 0; i <= settleMs / 200; i++) {
    if (i > 0) await new Promise((r) => setTimeout(r, 200));
    after = await stateFn(target);
    leftovers = target.dataDir
      ? listTree(target.dataDir).filter((l) => /(^|\/)\.upload-/.test(l)) : [];
    if (leftovers.length === 0 && isDeepStrictEqual(after, ref.state)) return;
  }
  try {
    assert.deepEqual(after, ref.state, `"${name}" changed the state`);
    assert.deepEqual(leftovers, [], `"${name}" left an upload behind`);
  } catch (e) {
    await target.reset();
    ref.state = await stateFn(target); // mtimes of the re-made fixtures
    throw e;
  }
}

// Runs a group of cases as subtests of t, then checks the state. stateFn
// (target) -> the state to compare; taken before the first case.
export async function runGroup(t, target, group, cases, stateFn = coordinatorState) {
  await t.test(group, async (g) => {
    const ref = { state: await stateFn(target) };
    for (const c of cases) {
      await g.test(c.name, async () => {
        const r = c.raw !== undefined
          ? await sendRaw(target.base, c.raw, c.rawOpts)
          : await send(target.base, c);
        // Every failure of the case is reported, not only the last one.
        const failures = [];
        const attempt = async (fn) => {
          try { await fn(); } catch (e) { failures.push(e.message); }
        };
        await attempt(async () => {
          checkAnswer(c, r);
          if (c.check) await c.check(r, target);
        });
        await attempt(() => target.assertUp(c.name));
        await attempt(() => sameState(target, stateFn, ref, c.name, c.expect.status === null ? 3000 : 200));
        assert.deepEqual(failures, []);
      });
    }
    await g.test(`${group}: state unchanged, no upload left`, async () => {
      await sameState(target, stateFn, ref, group, 3000);
    });
  });
}

// Shorthands for table rows.
export const json = (method, p, body, expect, extra = {}) => ({
  ...extra,
  name: extra.name ?? `${method} ${p} ${String(body).slice(0, 40)}`,
  method, path: p, body, headers: { 'content-type': 'application/json', ...(extra.headers ?? {}) },
  expect,
});
export const problem = (status, type) => ({ status, type });

// n levels of [ or {"a": around a value.
export function deepJson(n, kind = 'array') {
  return kind === 'array'
    ? '['.repeat(n) + ']'.repeat(n)
    : '{"a":'.repeat(n) + '1' + '}'.repeat(n);
}

// The datasets every coordinator of the catalogue starts with.
export async function uploadFixtures(target, headers = {}) {
  const trips = readFileSync(path.join(SOURCE_DIR, 'api/examples/trips.csv'));
  const vendors = readFileSync(path.join(SOURCE_DIR, 'api/examples/vendors.ndjson'));
  for (const [name, type, bytes] of [['trips', 'text/csv', trips], ['vendors', 'application/x-ndjson', vendors],
    ['victim', 'text/csv', trips], ['victim2', 'text/csv', trips]]) {
    const r = await send(target.base, { method: 'PUT', path: `/v1/datasets/${name}`, headers: { 'content-type': type, ...headers }, body: bytes });
    if (r.status !== 201) throw new Error(`setup upload ${name}: ${r.status} ${r.text}`);
  }
}
