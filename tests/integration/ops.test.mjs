// ops: request IDs, the JSON access log, /metrics, /v1/info, the dashboard,
// and a graceful stop that lets an in-flight request finish.
import assert from 'node:assert/strict';
import http from 'node:http';
import { mkdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import net from 'node:net';
import path from 'node:path';
import { test } from 'node:test';
import { assertProblem, call, startServer, startWorker, tempRoot } from './lib.mjs';

const ID_PATTERN = /^[A-Za-z0-9._-]{1,128}$/;

async function logLineFor(srv, requestId) {
  // The access line is written when the response completes: poll briefly.
  for (let i = 0; i < 100; i++) {
    const line = srv.logLines().find((l) => l.request_id === requestId);
    if (line) return line;
    await new Promise((r) => setTimeout(r, 20));
  }
  throw new Error(`no log line for ${requestId}:\n${srv.stderr()}`);
}

test('request IDs and access log lines', async () => {
  const srv = await startServer();
  try {
    let r = await call(srv.base, 'GET', '/v1/config', { headers: { 'x-request-id': 'it-req.123_A' } });
    assert.equal(r.headers.get('x-request-id'), 'it-req.123_A');
    const line = await logLineFor(srv, 'it-req.123_A');
    assert.equal(line.method, 'GET');
    assert.equal(line.path, '/v1/config');
    assert.equal(line.status, 200);
    assert.equal(line.bytes, Buffer.byteLength(r.text));
    assert.equal(typeof line.duration_ms, 'number');
    assert.ok(!Number.isNaN(Date.parse(line.ts)));

    r = await call(srv.base, 'GET', '/nope', { headers: { 'x-request-id': 'it-404' } });
    assertProblem(r, 404, 'not-found');
    assert.equal(r.body.request_id, 'it-404');
    assert.equal((await logLineFor(srv, 'it-404')).status, 404);

    for (const bad of ['has space', 'x'.repeat(129), 'semi;colon', '']) {
      r = await call(srv.base, 'GET', '/livez', { headers: { 'x-request-id': bad } });
      const id = r.headers.get('x-request-id');
      assert.match(id, ID_PATTERN);
      assert.notEqual(id, bad);
    }
    const a = (await call(srv.base, 'GET', '/livez')).headers.get('x-request-id');
    const b = (await call(srv.base, 'GET', '/livez')).headers.get('x-request-id');
    assert.match(a, ID_PATTERN);
    assert.notEqual(a, b);
  } finally {
    await srv.stop();
  }
});

test('metrics, info, probes and the dashboard', async () => {
  const root = tempRoot();
  const staticDir = path.join(root, 'static');
  mkdirSync(staticDir);
  writeFileSync(path.join(staticDir, 'index.html'), '<!doctype html><title>framed test</title>');
  const srv = await startServer({ args: ['--static-dir', staticDir] });
  try {
    let r = await call(srv.base, 'GET', '/livez');
    assert.equal(r.status, 200);
    assert.equal(r.text, 'ok\n');
    r = await call(srv.base, 'GET', '/readyz');
    assert.equal(r.text, 'ready\n');
    r = await call(srv.base, 'HEAD', '/livez');
    assert.equal(r.status, 200);

    await call(srv.base, 'GET', '/v1/config');
    r = await call(srv.base, 'GET', '/metrics');
    assert.equal(r.status, 200);
    assert.match(r.headers.get('content-type'), /^text\/plain/);
    assert.match(r.text, /^framed_http_requests_total\{route="\/v1\/config",method="GET",status="200"\} [1-9]/m);
    assert.match(r.text, /^# TYPE framed_http_request_duration_seconds histogram$/m);
    assert.match(r.text, /^framed_http_request_duration_seconds_bucket\{route="\/v1\/config",method="GET",le="\+Inf"\} [1-9]/m);
    assert.match(r.text, /^framed_http_request_duration_seconds_count\{route="\/v1\/config",method="GET"\} [1-9]/m);
    assert.match(r.text, /^framed_config_locked 0$/m);

    r = await call(srv.base, 'GET', '/v1/info');
    assert.equal(r.status, 200);
    assert.match(r.body.version, /^\d+\.\d+\.\d+/);
    assert.equal(r.body.role, 'coordinator');
    assert.equal(r.body.config_id, null);
    assert.equal(typeof r.body.uptime_s, 'number');
    assert.equal(r.body.runner.state, 'none');

    r = await call(srv.base, 'GET', '/');
    assert.equal(r.status, 200);
    assert.match(r.headers.get('content-type'), /^text\/html/);
    assert.match(r.text, /framed test/);
  } finally {
    await srv.stop();
    rmSync(root, { recursive: true, force: true });
  }
});

// Sends a PUT whose body arrives in two parts; returns {sent, done}: sent
// resolves once the first part is out, done with the response.
function slowUpload(base, name, first, rest, gapPromise) {
  let sentResolve;
  const sent = new Promise((r) => { sentResolve = r; });
  const done = new Promise((resolve, reject) => {
    const req = http.request(`${base}/v1/datasets/${name}`, {
      method: 'PUT',
      headers: { 'content-type': 'text/csv', 'content-length': Buffer.byteLength(first + rest) },
    }, (res) => {
      let text = '';
      res.on('data', (d) => { text += d; });
      res.on('end', () => resolve({ status: res.statusCode, text }));
    });
    req.on('error', reject);
    req.write(first, () => sentResolve());
    gapPromise.then(() => req.end(rest));
  });
  return { sent, done };
}

test('SIGTERM lets an in-flight request finish, then exits 0', async () => {
  const srv = await startServer();
  let release;
  const gap = new Promise((r) => { release = r; });
  const upload = slowUpload(srv.base, 'slow', 'a,b\n1,x\n', '2,y\n', gap);
  await upload.sent;
  // Give the server time to have read the headers and the first part.
  await new Promise((r) => setTimeout(r, 300));
  process.kill(srv.pid, 'SIGTERM');
  await new Promise((r) => setTimeout(r, 300));
  release();
  const res = await upload.done;
  assert.ok(res.status === 201 || res.status === 200, `${res.status} ${res.text}`);
  await srv.waitExit();
  assert.match(srv.stderr(), /received SIGTERM/);
});

// A worker that accepts connections and never answers: a task sent to it
// hangs, so a query on it runs until something cancels it.
async function blackHoleWorker() {
  const socks = new Set();
  const hole = net.createServer((s) => { socks.add(s); s.on('data', () => {}); s.on('close', () => socks.delete(s)); });
  await new Promise((r) => hole.listen(0, '127.0.0.1', r));
  return {
    url: `http://127.0.0.1:${hole.address().port}`,
    close() { for (const s of socks) s.destroy(); hole.close(); },
  };
}

test('SIGTERM with a stuck query: readyz fails, the deadline passes, the query is cancelled, exit 3', async () => {
  const hole = await blackHoleWorker();
  const srv = await startServer({ args: ['--runner', 'remote', '--workers', hole.url, '--shutdown-timeout', '1'] });
  try {
    // Waits up to the maximum (300 s): before the deadline this held SIGTERM forever.
    const stuck = call(srv.base, 'POST', '/v1/queries?wait=300', { json: { plan: { source: { rows: [{ a: 1 }] } } } })
      .catch((e) => ({ error: e }));
    let running = null;
    for (let i = 0; i < 100 && !running; i++) {
      await new Promise((r) => setTimeout(r, 50));
      const m = (await call(srv.base, 'GET', '/metrics')).text.match(/^framed_queries\{state="running"\} (\d+)$/m);
      if (m && Number(m[1]) > 0) running = true;
    }
    assert.ok(running, 'the query never started running');
    // A keep-alive connection opened before the signal still reaches /readyz.
    const agent = new http.Agent({ keepAlive: true, maxSockets: 1 });
    const get = (p) => new Promise((resolve, reject) => {
      http.get(`${srv.base}${p}`, { agent }, (res) => {
        let text = '';
        res.on('data', (d) => { text += d; });
        res.on('end', () => resolve({ status: res.statusCode, text }));
      }).on('error', reject);
    });
    assert.equal((await get('/readyz')).status, 200);
    process.kill(srv.pid, 'SIGTERM');
    await new Promise((r) => setTimeout(r, 200));
    assert.equal((await get('/readyz')).status, 503);
    agent.destroy();
    const timeout = new Promise((r) => setTimeout(() => r('timeout'), 20000));
    const exit = await Promise.race([srv.exited, timeout]);
    assert.notEqual(exit, 'timeout', `no exit 20 s after SIGTERM with --shutdown-timeout 1:\n${srv.stderr().slice(-3000)}`);
    assert.deepEqual(exit, { code: 3, signal: null }, srv.stderr().slice(-3000));
    assert.match(srv.stderr(), /shutdown deadline of 1 s passed with 1 requests in flight/);
    assert.match(srv.stderr(), /cancelling running work/);
    // The waiting request got its answer (the query not finished, or cancelled by the
    // deadline) or a closed connection.
    const res = await stuck;
    if (!res.error) {
      assert.ok(res.status === 202 || (res.status === 200 && res.body.state === 'cancelled'), res.text);
      assert.notEqual(res.body.state, 'succeeded');
    }
  } finally {
    if (srv.exited && (await Promise.race([srv.exited, Promise.resolve('running')])) === 'running') {
      process.kill(srv.pid, 'SIGKILL');
    }
    hole.close();
  }
});

test('slow requests past --max-slow-requests get 503 with Retry-After, and the server still serves', async () => {
  const hole = await blackHoleWorker();
  const srv = await startServer({ args: ['--runner', 'remote', '--workers', hole.url, '--shutdown-timeout', '1',
    '--max-slow-requests', '1'] });
  try {
    // A query the black hole never answers, then a reset that drains it: the
    // reset holds the one slow-request thread for as long as the query runs.
    const q = await call(srv.base, 'POST', '/v1/queries', { json: { plan: { source: { rows: [{ a: 1 }] } } } });
    assert.equal(q.status, 202, q.text);
    call(srv.base, 'DELETE', '/v1/runner').catch((e) => ({ error: e }));
    let full = null;
    for (let i = 0; i < 200 && !full; i++) {
      await new Promise((r) => setTimeout(r, 50));
      const r = await call(srv.base, 'GET', '/v1/datasets');
      if (r.status === 503) full = r;
    }
    assert.ok(full, 'GET /v1/datasets never got 503 with the one slow-request thread held');
    assertProblem(full, 503, 'unavailable');
    assert.match(full.body.detail, /slow requests/);
    assert.ok(Number(full.headers.get('retry-after')) > 0);
    assert.equal((await call(srv.base, 'GET', '/livez')).status, 200);
    assert.equal((await call(srv.base, 'GET', '/v1/config')).status, 200);
  } finally {
    process.kill(srv.pid, 'SIGKILL');
    await srv.exited;
    hole.close();
  }
});

// Threads: of /proc/<pid>/status.
function threadsOf(pid) {
  return Number(/^Threads:\s+(\d+)$/m.exec(readFileSync(`/proc/${pid}/status`, 'utf8'))[1]);
}

test('?wait= requests wait with no thread each; past --max-waiting-requests 503 with Retry-After', async () => {
  const hole = await blackHoleWorker();
  const srv = await startServer({ args: ['--runner', 'remote', '--workers', hole.url, '--shutdown-timeout', '1',
    '--max-waiting-requests', '256', '--max-slow-requests', '512', '--max-connections-per-ip', '1000'] });
  try {
    // 300 waits for queries the black hole never answers: 256 wait, 44 get 503.
    const answers = [];
    const all = Array.from({ length: 300 }, () =>
      call(srv.base, 'POST', '/v1/queries?wait=30', { json: { plan: { source: { rows: [{ a: 1 }] } } } })
        .then((r) => { answers.push(r); return r; }));
    for (let i = 0; i < 600 && answers.length < 44; i++) await new Promise((r) => setTimeout(r, 50));
    assert.equal(answers.length, 44, `${answers.length} answers while 256 should wait`);
    for (const r of answers) {
      assertProblem(r, 503, 'unavailable');
      assert.ok(Number(r.headers.get('retry-after')) > 0);
      assert.match(r.body.detail, /--max-waiting-requests/);
    }
    // The 256 waiting hold no thread each (the submit jobs have returned).
    let threads = threadsOf(srv.pid);
    for (let i = 0; i < 200 && threads >= 64; i++) {
      await new Promise((r) => setTimeout(r, 50));
      threads = threadsOf(srv.pid);
    }
    assert.ok(threads < 64, `${threads} threads with 256 requests waiting`);
    const m = await call(srv.base, 'GET', '/metrics');
    assert.match(m.text, /^framed_http_waiting_requests 256$/m);
    assert.equal((await call(srv.base, 'GET', '/livez')).status, 200);
    assert.equal((await call(srv.base, 'GET', '/v1/config')).status, 200);
    // At their deadline every wait gets its answer: 202, the query not finished.
    const results = await Promise.all(all);
    const waited = results.filter((r) => r.status !== 503);
    assert.equal(waited.length, 256);
    for (const r of waited) {
      assert.equal(r.status, 202, r.text);
      assert.match(r.body.id, /^q-/);
      assert.equal(r.headers.get('location'), `/v1/queries/${r.body.id}`);
      assert.ok(['queued', 'running'].includes(r.body.state), r.body.state);
    }
    assert.match((await call(srv.base, 'GET', '/metrics')).text, /^framed_http_waiting_requests 0$/m);
  } finally {
    process.kill(srv.pid, 'SIGKILL');
    await srv.exited;
    hole.close();
  }
});

test('?wait= requests resumed by their queries\' completion answer 200 with the finished query', async () => {
  const srv = await startServer({ args: ['--threads', '1', '--max-slow-requests', '512', '--max-connections-per-ip', '1000'] });
  try {
    const rows = Array.from({ length: 3000 }, (_, i) => ({ k: i % 7, v: i }));
    const plan = { source: { rows }, ops: [{ groupby: ['k'], agg: ['sum(v) as s'] }] };
    const first = await call(srv.base, 'POST', '/v1/queries?wait=30', { json: { plan } });
    assert.equal(first.status, 200, first.text);
    const results = await Promise.all(Array.from({ length: 300 }, () =>
      call(srv.base, 'POST', '/v1/queries?wait=30', { json: { plan } })));
    for (const r of results) {
      assert.equal(r.status, 200, r.text);
      assert.equal(r.body.state, 'succeeded');
      assert.equal(r.headers.get('location'), `/v1/queries/${r.body.id}`);
    }
    const res = await call(srv.base, 'GET', `/v1/queries/${results[299].body.id}/result`);
    assert.equal(res.body.total_rows, 7);
    assert.match((await call(srv.base, 'GET', '/metrics')).text, /^framed_http_waiting_requests 0$/m);
  } finally {
    await srv.stop();
  }
});

// Sends the headers and part of a JSON body, then holds the request open:
// it stays in flight (the drain waits for it) until finish() or abort().
function heldRequest(base, method, urlPath, headers = {}) {
  const u = new URL(base);
  const sock = net.connect(Number(u.port), u.hostname);
  let text = '';
  sock.on('data', (d) => { text += d; });
  sock.on('error', () => {});
  const closed = new Promise((r) => sock.on('close', () => r(text)));
  const opened = new Promise((r) => sock.on('connect', r)).then(() => new Promise((r) => {
    const extra = Object.entries(headers).map(([k, v]) => `${k}: ${v}\r\n`).join('');
    sock.write(`${method} ${urlPath} HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\n` +
      `Content-Length: 100000\r\n${extra}\r\n{"plan":`, r);
  }));
  return { opened, closed, abort: () => sock.destroy() };
}

// During the drain a fresh connection still gets /livez 200 and /readyz 503
// (problem+json unavailable): orchestrators see the drain until the exit.
async function assertProbesDuringDrain(proc, held) {
  await held.opened;
  await new Promise((r) => setTimeout(r, 300)); // the server reads the headers
  process.kill(proc.pid, 'SIGTERM');
  let ready = null;
  for (let i = 0; i < 200; i++) {
    ready = await call(proc.base, 'GET', '/readyz', { headers: { connection: 'close' } });
    if (ready.status === 503) break;
    await new Promise((r) => setTimeout(r, 20));
  }
  assertProblem(ready, 503, 'unavailable');
  for (let i = 0; i < 5; i++) {
    const live = await call(proc.base, 'GET', '/livez', { headers: { connection: 'close' } });
    assert.equal(live.status, 200);
    assert.equal(live.text, 'ok\n');
    assertProblem(await call(proc.base, 'GET', '/readyz'), 503, 'unavailable');
  }
  // New work is turned away while the held request drains.
  assertProblem(await call(proc.base, 'GET', '/v1/info'), 503, 'unavailable');
  held.abort();
  await proc.waitExit();
}

test('SIGTERM drain: /livez and /readyz keep answering until the exit (coordinator)', async () => {
  const srv = await startServer();
  await assertProbesDuringDrain(srv, heldRequest(srv.base, 'POST', '/v1/queries'));
});

test('SIGTERM drain: /livez and /readyz keep answering until the exit (worker)', async () => {
  const coordinator = await startServer();
  try {
    const worker = await startWorker(coordinator.base);
    await assertProbesDuringDrain(worker, heldRequest(worker.base, 'POST', '/v1/tasks',
      { 'Framed-Config-Id': 'a'.repeat(64) }));
  } finally {
    await coordinator.stop();
  }
});

test('probe and scrape requests log at debug, the others at info', async () => {
  for (const level of ['info', 'debug']) {
    const srv = await startServer({ args: ['--log-level', level] });
    try {
      for (const p of ['/livez', '/readyz', '/metrics']) await call(srv.base, 'GET', p, { headers: { 'x-request-id': `probe-${p.slice(1)}` } });
      await call(srv.base, 'GET', '/v1/config', { headers: { 'x-request-id': 'after-probes' } });
      assert.equal((await logLineFor(srv, 'after-probes')).level, 'info');
      const probes = srv.logLines().filter((l) => l.msg === 'request' && /^probe-/.test(l.request_id));
      if (level === 'info') assert.deepEqual(probes, []);
      // the line is written once the response is done: lines may pass each other
      else assert.deepEqual(probes.map((l) => [l.path, l.level]).sort(), [['/livez', 'debug'], ['/metrics', 'debug'], ['/readyz', 'debug']]);
    } finally {
      await srv.stop();
    }
  }
});
