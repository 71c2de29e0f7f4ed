// hostile_http_slow: clients that hold connections. A header (or a body)
// sent a byte per second must not hold a connection, or a thread, for ever:
// the server closes it within a deadline while everyone else is served at
// once. A flood of idle connections gets the excess answered (503) or
// refused, never a hang for the next client. Every wait here is bounded.
import assert from 'node:assert/strict';
import net from 'node:net';
import { test } from 'node:test';
import { send, Target } from './hostile_lib.mjs';

const DRIP_DEADLINE_MS = 40000; // the server must have closed a dripping connection by then
const SLOW_CLIENTS = 16;

// Opens a connection that sends `head` and then one byte of `drip` per
// second. Resolves with how it ended and when.
function dripper(port, head, drip) {
  return new Promise((resolve) => {
    const t0 = Date.now();
    const sock = net.connect(port, '127.0.0.1');
    let i = 0;
    let got = '';
    let timer;
    const end = (how) => {
      clearInterval(timer);
      sock.destroy();
      resolve({ how, ms: Date.now() - t0, got: got.slice(0, 200) });
    };
    const deadline = setTimeout(() => end('still open'), DRIP_DEADLINE_MS);
    sock.on('connect', () => {
      sock.write(head);
      timer = setInterval(() => {
        if (!sock.writable) return;
        sock.write(drip[i % drip.length]);
        i++;
      }, 1000);
    });
    sock.on('data', (d) => { got += d; });
    const closed = () => { clearTimeout(deadline); end(got ? 'answered' : 'closed'); };
    sock.on('close', closed);
    sock.on('error', closed);
  });
}

// How long /livez takes while the slow clients hold their connections.
async function livezWhile(base, n) {
  const times = [];
  for (let k = 0; k < n; k++) {
    const t0 = Date.now();
    const r = await send(base, { method: 'GET', path: '/livez' }, 5000);
    times.push({ status: r.status, ms: Date.now() - t0 });
    await new Promise((r2) => setTimeout(r2, 500));
  }
  return times;
}

test('slowloris: headers and bodies a byte per second', async () => {
  const target = await new Target('serve').start();
  try {
    const headers = Array.from({ length: SLOW_CLIENTS / 2 }, () =>
      dripper(target.srv.port, 'GET /livez HTTP/1.1\r\nHost: x\r\n', 'X-Slow: abcdefghij\r\n'));
    const bodies = Array.from({ length: SLOW_CLIENTS / 2 }, () =>
      dripper(target.srv.port, 'POST /v1/config HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nContent-Length: 100000\r\n\r\n{"csv_null_values":[', '"a",'));
    const during = await livezWhile(target.base, 10);
    for (const t of during) {
      assert.equal(t.status, 200, `livez during the slowloris: ${JSON.stringify(during)}`);
      assert.ok(t.ms < 3000, `livez took ${t.ms} ms during the slowloris`);
    }
    const ends = await Promise.all([...headers, ...bodies]);
    for (const e of ends) {
      assert.notEqual(e.how, 'still open', `a dripping connection was still open after ${DRIP_DEADLINE_MS} ms: ${JSON.stringify(ends)}`);
      if (e.how === 'answered') assert.match(e.got, /^HTTP\/1\.1 (408|400|413|431|503)/, e.got);
    }
    assert.equal((await send(target.base, { method: 'GET', path: '/livez' })).status, 200);
  } finally {
    await target.stop();
  }
});

test('1,100 idle connections do not lock the next client out', async () => {
  const target = await new Target('serve').start();
  const socks = [];
  try {
    try {
      await Promise.all(Array.from({ length: 1100 }, () => new Promise((resolve) => {
        const s = net.connect(target.srv.port, '127.0.0.1');
        socks.push(s);
        s.on('connect', resolve);
        s.on('error', resolve);
        s.on('close', resolve);
        setTimeout(resolve, 5000);
      })));
      // Either served or told to come back: an answer, and soon. A connect in
      // the same instant as the burst may still meet libmicrohttpd's hard
      // limit (closed unanswered) before the evicted idle sockets are gone;
      // a client retrying within the 5 s gets its answer.
      let r;
      const until = Date.now() + 5000;
      do {
        r = await send(target.base, { method: 'GET', path: '/livez' }, 5000);
      } while (r.status == null && Date.now() < until);
      assert.ok(r.status === 200 || r.status === 503, `livez behind 1,100 idle connections: ${r.status} ${r.error ?? ''}`);
      if (r.status === 503) assert.match(r.headers['content-type'] ?? '', /^application\/problem\+json/);
    } finally {
      for (const s of socks) s.destroy();
    }
    let r;
    for (let i = 0; i < 20; i++) {
      r = await send(target.base, { method: 'GET', path: '/livez' }, 2000);
      if (r.status === 200) break;
      await new Promise((r2) => setTimeout(r2, 100));
    }
    assert.equal(r.status, 200, 'livez once the idle connections are gone');
  } finally {
    await target.stop();
  }
});
