// events: GET /v1/events, Server-Sent Events read with fetch and a stream
// reader (Node 18 has no EventSource). The runner's freeze, a query from
// queued to succeeded with its tasks counted up, stats every second, a
// worker going suspect then gone (SIGSTOP), Last-Event-ID resume, the
// ?types filter and its 400, --max-event-streams with its 503 and a slot
// freed by a client that went away, and a SIGTERM with streams open.
import assert from 'node:assert/strict';
import { rmSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { test } from 'node:test';
import { assertProblem, call, startServer, startWorker } from './lib.mjs';

// An open stream: its parsed events ({id, event, data} or {comment}), read as
// they arrive. until(pred) resolves with the first event from `from` on that
// matches; the deadline only bounds a hang.
async function openStream(base, query = '', headers = {}) {
  const ctrl = new AbortController();
  const res = await fetch(`${base}/v1/events${query}`, { headers, signal: ctrl.signal });
  const s = { res, events: [], raw: '', ended: false, wakers: [] };
  const wake = () => { for (const w of s.wakers.splice(0)) w(); };
  if (res.status !== 200) {
    s.text = await res.text();
    return s;
  }
  const reader = res.body.getReader();
  const dec = new TextDecoder();
  let buf = '';
  s.done = (async () => {
    try {
      for (;;) {
        const { value, done } = await reader.read();
        if (done) break;
        const text = dec.decode(value, { stream: true });
        s.raw += text;
        buf += text;
        let i;
        while ((i = buf.indexOf('\n\n')) >= 0) {
          const block = buf.slice(0, i);
          buf = buf.slice(i + 2);
          const ev = {};
          for (const line of block.split('\n')) {
            if (line.startsWith(':')) ev.comment = line.slice(1).trim();
            else if (line.startsWith('id: ')) ev.id = Number(line.slice(4));
            else if (line.startsWith('event: ')) ev.event = line.slice(7);
            else if (line.startsWith('data: ')) ev.data = JSON.parse(line.slice(6));
            else if (line.startsWith('retry: ')) ev.retry = Number(line.slice(7));
          }
          s.events.push(ev);
          wake();
        }
      }
    } catch { /* aborted */ }
    s.ended = true;
    wake();
  })();
  s.until = async (pred, what, from = 0, timeoutMs = 60000) => {
    const deadline = Date.now() + timeoutMs;
    for (;;) {
      const i = s.events.findIndex((e, k) => k >= from && pred(e));
      if (i >= 0) return { ev: s.events[i], index: i };
      if (s.ended) throw new Error(`the stream ended before ${what}:\n${s.raw.slice(-2000)}`);
      if (Date.now() > deadline) throw new Error(`waited in vain for ${what}:\n${s.raw.slice(-2000)}`);
      await new Promise((r) => { s.wakers.push(r); setTimeout(r, 200); });
    }
  };
  // Abort, and cancel the reader too: Node 18's fetch can leave a pending
  // read of an aborted body unsettled, which would hang the test at its end.
  s.close = async () => {
    ctrl.abort();
    const settled = Promise.all([reader.cancel().catch(() => {}), s.done]);
    await Promise.race([settled, new Promise((r) => setTimeout(r, 5000))]);
  };
  return s;
}

function bigCsv(dataDir, rows) {
  let s = 'k,v\n';
  for (let i = 0; i < rows; i++) s += `${i % 97},${i}\n`;
  writeFileSync(path.join(dataDir, 'big.csv'), s);
}

// The query runs on a worker held stopped (SIGSTOP) until the stream has
// shown it running, so its progress is seen whatever the machine's speed.
test('a stream shows the freeze, a query from queued to succeeded, and stats each second', async () => {
  const server = await startServer({ args: ['--runner', 'remote'] });
  const worker = await startWorker(server.base, { args: ['--threads', '1', '--data-dir', server.dataDir] });
  let all = null;
  let statsOnly = null;
  let stopped = false;
  try {
    all = await openStream(server.base);
    assert.equal(all.res.status, 200);
    assert.match(all.res.headers.get('content-type'), /^text\/event-stream/);
    statsOnly = await openStream(server.base, '?types=stats');
    assert.equal(statsOnly.res.status, 200);
    const first = await all.until(() => true, 'the first block');
    assert.equal(first.ev.retry, 2000, 'retry: 2000 comes first');
    await all.until((e) => e.event === 'worker' && e.data.url === worker.base && e.data.state === 'active', 'the worker');
    bigCsv(server.dataDir, 20000);
    let r = await call(server.base, 'POST', '/v1/config', { json: { scan_tasks_max_size_bytes: 8192, scan_tasks_min_size_bytes: 1 } });
    assert.equal(r.status, 200, r.text);
    process.kill(worker.pid, 'SIGSTOP');
    stopped = true;
    r = await call(server.base, 'POST', '/v1/queries', { json: { plan: { source: { dataset: 'big' }, ops: [{ groupby: ['k'], agg: ['sum(v) as s'] }] } } });
    assert.equal(r.status, 202, r.text);
    const id = r.body.id;
    const runner = await all.until((e) => e.event === 'runner', 'the runner event');
    assert.equal(runner.ev.data.state, 'active');
    assert.match(runner.ev.data.runner_id, /^runner-[0-9a-f]{16}$/);
    assert.equal(runner.ev.data.config_id, r.body.config_id);
    const queued = await all.until((e) => e.event === 'query' && e.data.id === id, 'the accept');
    assert.equal(queued.ev.data.state, 'queued');
    assert.equal(queued.ev.data.config_id, r.body.config_id, 'the accept names its config');
    assert.ok(queued.ev.data.tasks_total > 2, 'the accept counts its tasks');
    assert.ok(queued.index > runner.index, 'the freeze comes before the query');
    const running = await all.until((e) => e.event === 'query' && e.data.id === id && e.data.state === 'running', 'running', queued.index);
    assert.ok(running.ev.data.tasks_total > 2);
    assert.ok(running.ev.data.tasks_done < running.ev.data.tasks_total);
    process.kill(worker.pid, 'SIGCONT');
    stopped = false;
    const done = await all.until((e) => e.event === 'query' && e.data.id === id && e.data.state === 'succeeded', 'succeeded', running.index, 120000);
    assert.equal(done.ev.data.tasks_done, done.ev.data.tasks_total);
    assert.equal(done.ev.data.rows, 97);
    assert.equal(done.ev.data.config_id, r.body.config_id);
    assert.equal(done.ev.data.dataframe, null);
    const mine = all.events.filter((e) => e.event === 'query' && e.data.id === id);
    for (let i = 1; i < mine.length; i++) {
      assert.ok(mine[i].data.tasks_done >= mine[i - 1].data.tasks_done, 'tasks_done never goes back');
    }
    assert.ok(done.ev.data.tasks_done > running.ev.data.tasks_done, 'tasks_done rose');
    assert.equal(mine.filter((e) => e.data.state === 'succeeded').length, 1, 'one final event');
    const ids = all.events.filter((e) => e.id !== undefined).map((e) => e.id);
    for (let i = 1; i < ids.length; i++) assert.ok(ids[i] > ids[i - 1], 'ids rise');
    // stats every second, after the query too; only stats on the filtered stream
    const s1 = await statsOnly.until((e) => e.event === 'stats' && e.data.tasks_done_total >= done.ev.data.tasks_total, 'stats counting the tasks');
    const s2 = await statsOnly.until((e) => e.event === 'stats', 'the next stats', s1.index + 1);
    assert.ok(Date.parse(s2.ev.data.time) > Date.parse(s1.ev.data.time));
    assert.equal(s2.ev.data.queries_running, 0);
    assert.equal(typeof s2.ev.data.workers_active, 'number');
    assert.equal(typeof s2.ev.data.tasks_per_s, 'number');
    assert.ok(statsOnly.events.filter((e) => e.event).every((e) => e.event === 'stats'), 'the filter holds');
    // a reset: draining, then none
    r = await call(server.base, 'DELETE', '/v1/runner');
    assert.equal(r.status, 200, r.text);
    const drain = await all.until((e) => e.event === 'runner' && e.data.state === 'draining', 'draining');
    const none = await all.until((e) => e.event === 'runner' && e.data.state === 'none', 'none', drain.index);
    assert.equal(none.ev.data.runner_id, null);
  } finally {
    if (stopped) process.kill(worker.pid, 'SIGCONT');
    if (all) await all.close();
    if (statsOnly) await statsOnly.close();
    await worker.stop();
    await server.stop();
  }
});

test('Last-Event-ID resumes after that event; one the ring no longer holds says reset', async () => {
  const server = await startServer();
  const streams = [];
  try {
    const a = await openStream(server.base, '?types=stats');
    streams.push(a);
    const s1 = await a.until((e) => e.event === 'stats', 'a stats event');
    await a.until((e) => e.event === 'stats', 'a later one', s1.index + 1);
    const b = await openStream(server.base, '?types=stats', { 'Last-Event-ID': String(s1.ev.id) });
    streams.push(b);
    const next = await b.until((e) => e.event === 'stats', 'the resumed stream');
    assert.equal(next.ev.id, a.events.find((e, k) => k > s1.index && e.event === 'stats').id, 'it goes on right after');
    const c = await openStream(server.base, '', { 'Last-Event-ID': '99999999' });
    streams.push(c);
    const reset = await c.until((e) => e.event === 'reset', 'the reset event');
    assert.equal(reset.ev.data.last_event_id, 99999999);
    const after = await c.until((e) => e.id !== undefined, 'the events held', reset.index);
    assert.equal(after.ev.id, reset.ev.data.oldest_id, 'from the oldest held');
    assert.ok(after.ev.id > Date.parse('2026-01-01') * 1000, 'ids start at the start time in ms x 1000');
    assertProblem(await call(server.base, 'GET', '/v1/events', { headers: { 'Last-Event-ID': 'abc' } }), 400, 'invalid-parameter');
    for (const bad of ['bogus', 'query,', '', 'query,,stats']) {
      const r = await call(server.base, 'GET', `/v1/events?types=${bad}`);
      assertProblem(r, 400, 'invalid-parameter');
      assert.equal(r.body.parameter, 'types');
    }
  } finally {
    for (const s of streams) await s.close();
    await server.stop();
  }
});

test('--max-event-streams: 503 past it; a client that went away frees its slot; SIGTERM ends streams', async () => {
  const server = await startServer({ args: ['--max-event-streams', '2', '--shutdown-timeout', '20'] });
  const streams = [];
  try {
    streams.push(await openStream(server.base));
    streams.push(await openStream(server.base));
    for (const s of streams) assert.equal(s.res.status, 200);
    let r = await call(server.base, 'GET', '/v1/events');
    assertProblem(r, 503, 'unavailable');
    assert.ok(Number(r.headers.get('retry-after')) > 0);
    await streams.shift().close(); // the client goes away
    let third = null;
    const deadline = Date.now() + 30000;
    while (!third) {
      const s = await openStream(server.base);
      if (s.res.status === 200) third = s;
      else if (Date.now() > deadline) throw new Error(`the slot was never freed: ${s.text}`);
      else await new Promise((res) => setTimeout(res, 100));
    }
    streams.push(third);
    r = await call(server.base, 'GET', '/v1/events');
    assertProblem(r, 503, 'unavailable');
    // a stop with streams open: they end and the server exits 0, before its deadline
    const started = Date.now();
    await server.stop();
    assert.ok(Date.now() - started < 20000, 'the stop did not wait for its deadline');
    for (const s of streams) {
      await s.done;
      assert.equal(s.ended, true);
    }
  } finally {
    for (const s of streams) await s.close();
    await server.stop();
  }
});

test('a worker that stops beating goes suspect, then gone', async () => {
  const coord = await startServer({ args: ['--runner', 'remote'] });
  const worker = await startWorker(coord.base);
  let stream = null;
  let stopped = false;
  try {
    stream = await openStream(coord.base, '?types=worker');
    const active = await stream.until((e) => e.event === 'worker' && e.data.url === worker.base && e.data.state === 'active', 'the worker active');
    assert.equal(typeof active.ev.data.id, 'string');
    assert.ok(Array.isArray(active.ev.data.config_ids));
    assert.equal(typeof active.ev.data.threads, 'number');
    process.kill(worker.pid, 'SIGSTOP');
    stopped = true;
    const suspect = await stream.until((e) => e.event === 'worker' && e.data.url === worker.base && e.data.state === 'suspect', 'suspect', active.index);
    await stream.until((e) => e.event === 'worker' && e.data.url === worker.base && e.data.state === 'gone', 'gone', suspect.index);
    process.kill(worker.pid, 'SIGCONT');
    stopped = false;
    await stream.until((e) => e.event === 'worker' && e.data.url === worker.base && e.data.state === 'active', 'active again', suspect.index);
  } finally {
    if (stopped) process.kill(worker.pid, 'SIGCONT');
    if (stream) await stream.close();
    await worker.stop();
    await coord.stop();
  }
});

// A reset right after the queries were accepted drops their records at once;
// each still gets its final event (it is published by the query's end, not
// by the next tick of the live thread, which would find no record).
test('a reset right after queries: every query still gets its final event', async () => {
  const server = await startServer();
  let all = null;
  try {
    bigCsv(server.dataDir, 200000);
    all = await openStream(server.base, '?types=query,runner');
    assert.equal(all.res.status, 200);
    const ids = [];
    for (let i = 0; i < 6; i++) {
      const r = await call(server.base, 'POST', '/v1/queries', { json: { plan: { source: { dataset: 'big' }, ops: [{ groupby: ['k'], agg: ['sum(v) as s'] }] } } });
      assert.equal(r.status, 202, r.text);
      ids.push(r.body.id);
    }
    const r = await call(server.base, 'DELETE', '/v1/runner');
    assert.equal(r.status, 200, r.text);
    await all.until((e) => e.event === 'runner' && e.data.state === 'none', 'the reset');
    for (const id of ids) {
      const fin = await all.until((e) => e.event === 'query' && e.data.id === id && !['queued', 'running'].includes(e.data.state), `the final event of ${id}`, 0, 20000);
      assert.ok(['succeeded', 'failed', 'cancelled'].includes(fin.ev.data.state));
      const finals = all.events.filter((e) => e.event === 'query' && e.data.id === id && !['queued', 'running'].includes(e.data.state));
      assert.equal(finals.length, 1, `one final event for ${id}`);
    }
  } finally {
    if (all) await all.close();
    await server.stop();
  }
});

// The query events carry what the data token guards on /v1/queries: with only
// a data token set, the stream needs it too.
test('with a data token the stream needs it, as /v1/queries does', async () => {
  const data = 'd'.repeat(40);
  const server = await startServer({ env: { FRAMED_DATA_TOKEN: data } });
  let s = null;
  try {
    assertProblem(await call(server.base, 'GET', '/v1/queries'), 401, 'unauthorized');
    const r = await call(server.base, 'GET', '/v1/events');
    assertProblem(r, 401, 'unauthorized');
    assertProblem(await call(server.base, 'GET', '/v1/events', { headers: { authorization: 'Bearer wrong' } }), 401, 'unauthorized');
    s = await openStream(server.base, '?types=stats', { authorization: `Bearer ${data}` });
    assert.equal(s.res.status, 200);
    await s.until((e) => e.event === 'stats', 'a stats event with the token');
  } finally {
    if (s) await s.close();
    await server.stop();
  }
});

// Ids never repeat across runs: a Last-Event-ID from before a restart is
// older than every id of the new run, so the resume says reset instead of
// silently skipping the new run's events.
test('a Last-Event-ID from before a restart gets a reset, not a silent resume', async () => {
  const first = await startServer({ keepRoot: true });
  let old;
  let s = null;
  let second = null;
  try {
    s = await openStream(first.base, '?types=stats');
    old = (await s.until((e) => e.event === 'stats', 'a stats event')).ev.id;
    await s.close();
    s = null;
  } finally {
    await first.stop();
  }
  try {
    second = await startServer({ root: first.root });
    // the new run has gone past the old id (a resume from it would skip events)
    const a = await openStream(second.base, '?types=stats');
    try {
      await a.until((e) => e.event === 'stats' && e.id > old, 'a new id past the old one');
    } finally {
      await a.close();
    }
    s = await openStream(second.base, '?types=stats', { 'Last-Event-ID': String(old) });
    assert.equal(s.res.status, 200);
    const reset = await s.until((e) => e.event === 'reset', 'the reset event');
    assert.equal(reset.ev.data.last_event_id, old);
    const next = await s.until((e) => e.event === 'stats', 'the new run\'s stats', reset.index);
    assert.ok(next.ev.id > old, `the new run's id ${next.ev.id} is past the old ${old}`);
  } finally {
    if (s) await s.close();
    if (second) await second.stop();
    rmSync(first.root, { recursive: true, force: true });
  }
});
