// submit_edges: the edges of submitting a query. An accepted submit answers
// with its query even when a reset races it; ?wait= clients that go away give
// their waiting slot back at once; Accept field lines are combined (RFC 9110
// section 5.3) before negotiation.
import assert from 'node:assert/strict';
import http from 'node:http';
import net from 'node:net';
import { test } from 'node:test';
import { assertProblem, call, startServer } from './lib.mjs';

// A "worker" that accepts connections and never answers: a query on it runs
// until cancelled.
async function blackHoleWorker() {
  const socks = new Set();
  const hole = net.createServer((s) => { socks.add(s); s.on('data', () => {}); s.on('close', () => socks.delete(s)); });
  await new Promise((r) => hole.listen(0, '127.0.0.1', r));
  return {
    url: `http://127.0.0.1:${hole.address().port}`,
    close() { for (const s of socks) s.destroy(); hole.close(); },
  };
}

async function waitingGauge(base) {
  const m = (await call(base, 'GET', '/metrics')).text.match(/^framed_http_waiting_requests (\d+)$/m);
  return Number(m[1]);
}

test('a submit that races resets answers its accepted query, never 404', async () => {
  const srv = await startServer({ args: ['--max-connections-per-ip', '1000', '--max-slow-requests', '512'] });
  try {
    const rows = Array.from({ length: 200 }, (_, i) => ({ fare: (i * 37) % 101 }));
    const plan = { source: { rows }, ops: [{ sort: ['fare'] }] };
    let accepted = 0;
    for (let i = 0; i < 150; i++) {
      const wait = i % 3 === 0 ? '?wait=5' : '';
      const [, sub] = await Promise.all([
        call(srv.base, 'DELETE', '/v1/runner?force=true'),
        call(srv.base, 'POST', `/v1/queries${wait}`, { json: { plan } }),
      ]);
      assert.notEqual(sub.status, 404, `submit ${i}${wait} answered 404: ${sub.text}`);
      if (sub.status === 200 || sub.status === 202) {
        accepted++;
        assert.match(sub.body.id, /^q-/);
        assert.equal(sub.headers.get('location'), `/v1/queries/${sub.body.id}`);
        assert.ok(['queued', 'running', 'succeeded', 'cancelled'].includes(sub.body.state), sub.text);
      }
    }
    assert.ok(accepted > 0, 'no submit was accepted');
  } finally {
    await srv.stop();
  }
});

test('?wait= clients that disconnect give their waiting slots back', async () => {
  const hole = await blackHoleWorker();
  const srv = await startServer({ args: ['--runner', 'remote', '--workers', hole.url, '--shutdown-timeout', '1',
    '--max-waiting-requests', '4'] });
  try {
    const body = JSON.stringify({ plan: { source: { rows: [{ a: 1 }] } } });
    const reqs = Array.from({ length: 4 }, () => {
      const req = http.request(`${srv.base}/v1/queries?wait=300`, { method: 'POST', agent: false,
        headers: { 'content-type': 'application/json', 'content-length': Buffer.byteLength(body) } });
      req.on('error', () => {});
      req.end(body);
      return req;
    });
    let n = 0;
    for (let i = 0; i < 200 && n < 4; i++) {
      await new Promise((r) => setTimeout(r, 25));
      n = await waitingGauge(srv.base);
    }
    assert.equal(n, 4, 'the four ?wait= requests never all waited');
    assertProblem(await call(srv.base, 'POST', '/v1/queries?wait=1', { body, headers: { 'content-type': 'application/json' } }),
      503, 'unavailable');
    for (const r of reqs) r.destroy(); // the clients give up
    for (let i = 0; i < 200 && n > 0; i++) {
      await new Promise((r) => setTimeout(r, 25));
      n = await waitingGauge(srv.base);
    }
    assert.equal(n, 0, 'the gone clients still hold their waiting slots');
    const again = await call(srv.base, 'POST', '/v1/queries?wait=1', { body, headers: { 'content-type': 'application/json' } });
    assert.equal(again.status, 202, again.text);
    assert.match(again.body.id, /^q-/);
  } finally {
    process.kill(srv.pid, 'SIGKILL');
    await srv.exited;
    hole.close();
  }
});

// One GET with the given raw header lines; resolves to {status, type}.
function getWithHeaders(port, urlPath, lines) {
  return new Promise((resolve, reject) => {
    const sock = net.connect(port, '127.0.0.1');
    const chunks = [];
    sock.on('connect', () => sock.write(`GET ${urlPath} HTTP/1.1\r\nHost: x\r\nConnection: close\r\n${lines.join('\r\n')}\r\n\r\n`));
    sock.on('data', (d) => chunks.push(d));
    sock.on('error', reject);
    sock.on('close', () => {
      const text = Buffer.concat(chunks).toString('latin1');
      const type = /^content-type:\s*(.*)$/mi.exec(text);
      resolve({ status: Number(text.split(' ')[1]), type: type ? type[1].trim() : '' });
    });
  });
}

test('Accept field lines are combined before negotiation', async () => {
  const srv = await startServer();
  try {
    const q = await call(srv.base, 'POST', '/v1/queries?wait=30', { json: { plan: { source: { rows: [{ a: 1 }] } } } });
    assert.equal(q.status, 200, q.text);
    const url = `/v1/queries/${q.body.id}/result`;
    let r = await getWithHeaders(srv.port, url, ['Accept: application/json;q=0', 'Accept: text/csv']);
    assert.equal(r.status, 200);
    assert.match(r.type, /^text\/csv/);
    r = await getWithHeaders(srv.port, url, ['Accept: text/csv;q=0', 'Accept: application/json;q=0']);
    assert.equal(r.status, 406);
    r = await getWithHeaders(srv.port, url, ['Accept: text/csv;q=0.5', 'accept: application/x-ndjson']);
    assert.equal(r.status, 200);
    assert.match(r.type, /^application\/x-ndjson/);
  } finally {
    await srv.stop();
  }
});
