// The wall clock is stepped (as NTP or an operator steps a machine's) under
// a running coordinator and worker: tests/support/clockshift.c, preloaded,
// moves each process's CLOCK_REALTIME by the seconds in a file the test
// rewrites. A step changes no timeout: workers stay active and keep beating,
// queries still run, and a reset still tells a hung worker to drop its config
// (before the fix, a step an hour ahead made the coordinator forget every
// worker at once, so such a reset told nobody; a step on the worker held its
// heartbeat an hour).
import assert from 'node:assert/strict';
import { existsSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { test } from 'node:test';
import { BIN, call, rowsPlan, startServer, startWorker, tempRoot } from './lib.mjs';

const SHIM = process.env.FRAMED_TEST_CLOCKSHIFT ?? path.join(path.dirname(BIN), 'libframed_clockshift.so');

// The env that steps a process's wall clock by what `file` holds (seconds).
function steppable(file) {
  assert.ok(existsSync(SHIM), `the clock stepper is built: ${SHIM}`);
  writeFileSync(file, '0');
  const asan = process.env.ASAN_OPTIONS ? `${process.env.ASAN_OPTIONS}:` : '';
  // the preloaded stepper comes before the sanitizer runtime in the link order
  return { LD_PRELOAD: SHIM, FRAMED_TEST_CLOCK_SHIFT: file, ASAN_OPTIONS: `${asan}verify_asan_link_order=0` };
}

async function workers(base) {
  const r = await call(base, 'GET', '/v1/workers');
  assert.equal(r.status, 200, r.text);
  return r.body.workers;
}

async function runQuery(base) {
  const r = await call(base, 'POST', '/v1/queries?wait=60', { json: { plan: rowsPlan([{ a: 1 }, { a: 2 }], [{ agg: ['sum(a) as s'] }]) } });
  assert.equal(r.status, 200, r.text);
  return r.body;
}

const sleep = (ms) => new Promise((res) => setTimeout(res, ms));

// Polls fn (up to ms) until it returns something truthy; returns its last value.
async function eventually(fn, ms = 5000) {
  const end = Date.now() + ms;
  let v = await fn();
  while (!v && Date.now() < end) { await sleep(25); v = await fn(); }
  return v;
}

const activeCount = async (base) => (await workers(base)).filter((w) => w.state === 'active').length;

test('a wall clock stepped an hour ahead on the coordinator: workers stay, queries run, a reset still tells the hung ones', async () => {
  const root = tempRoot();
  const clock = path.join(root, 'coordinator-clock');
  const coord = await startServer({ root, args: ['--runner', 'remote'], env: steppable(clock) });
  const ws = [await startWorker(coord.base, { args: ['--threads', '1'] }), await startWorker(coord.base, { args: ['--threads', '1'] })];
  let stopped = false;
  try {
    assert.ok(await eventually(async () => (await activeCount(coord.base)) === 2), 'both workers joined');
    assert.equal((await runQuery(coord.base)).state, 'succeeded');
    const before = (await call(coord.base, 'GET', '/v1/info')).body;

    writeFileSync(clock, '3600');
    const seen = await workers(coord.base);
    assert.equal(seen.length, 2, `both workers still known: ${JSON.stringify(seen)}`);
    assert.ok(seen.every((w) => w.state === 'active'), `both still active: ${JSON.stringify(seen)}`);
    const q = await runQuery(coord.base);
    assert.equal(q.state, 'succeeded', JSON.stringify(q));
    // the step took: the coordinator now logs times an hour ahead
    const stepped = await eventually(() => Date.parse(coord.logLines().at(-1).ts) > Date.now() + 3500e3);
    assert.ok(stepped, `the coordinator's wall clock is stepped: it logs ${JSON.stringify(coord.logLines().at(-1))}`);
    const after = (await call(coord.base, 'GET', '/v1/info')).body;
    assert.equal(typeof before.uptime_s, 'number', JSON.stringify(before));
    assert.ok(after.uptime_s < before.uptime_s + 60, `uptime counts real time, not the step: ${before.uptime_s} -> ${after.uptime_s}`);

    // Both workers hang: the reset must still tell them (the release waits
    // for its timeout), so it stays draining meanwhile.
    for (const w of ws) process.kill(w.pid, 'SIGSTOP');
    stopped = true;
    const t0 = Date.now();
    let settled = false;
    const reset = call(coord.base, 'DELETE', '/v1/runner').then((x) => { settled = true; return x; });
    let state = 'active';
    for (let i = 0; i < 200 && state === 'active'; i++) {
      state = (await call(coord.base, 'GET', '/v1/runner')).body.state;
      if (state === 'active') await sleep(10);
    }
    assert.equal(state, 'draining');
    const during = await call(coord.base, 'POST', '/v1/queries', { json: { plan: rowsPlan([{ a: 1 }]) } });
    assert.equal(during.status, 503, during.text);
    assert.equal(during.body.type.split('/').pop(), 'runner-draining');
    const done = await reset;
    assert.equal(done.status, 200, done.text);
    const took = Date.now() - t0;
    assert.ok(took >= 2500, `the reset waited for the hung workers' release timeout (${took} ms, settled early: ${settled})`);
    const unconfirmedLines = () => coord.logLines().filter((l) => /did not confirm dropping config/.test(l.msg ?? ''));
    await eventually(() => unconfirmedLines().length >= 2);
    const unconfirmed = unconfirmedLines();
    if (unconfirmed.length !== 2) { // what the coordinator said of its workers, to tell why
      const said = coord.logLines().filter((l) => /worker|gone|forgotten|drop|release/.test(l.msg ?? '')).slice(-20);
      const known = await workers(coord.base);
      assert.fail(`each hung worker was told: ${JSON.stringify(unconfirmed)}; workers ${JSON.stringify(known)}; `
        + `the coordinator's log of them: ${JSON.stringify(said)}`);
    }
  } finally {
    if (stopped) for (const w of ws) process.kill(w.pid, 'SIGCONT');
    for (const w of ws) await w.stop();
    await coord.stop();
  }
});

test('a wall clock stepped on a worker: its heartbeats go on, it stays active and runs tasks', async () => {
  const root = tempRoot();
  const clock = path.join(root, 'worker-clock');
  const coord = await startServer({ args: ['--runner', 'remote'] });
  const w = await startWorker(coord.base, { args: ['--threads', '1', '--log-level', 'debug'], env: steppable(clock) });
  try {
    assert.ok(await eventually(async () => (await activeCount(coord.base)) === 1), 'the worker joined');
    const beats = () => w.logLines().filter((l) => l.level === 'debug' && /^heartbeat to /.test(l.msg ?? '')).length;
    for (const shift of ['3600', '-3600']) {
      writeFileSync(clock, shift);
      const before = beats();
      await sleep(4500); // over 3 beats: a held heartbeat would make it suspect
      const last = w.logLines().at(-1);
      assert.ok(Math.abs(Date.parse(last.ts) - Date.now() - Number(shift) * 1000) < 600e3,
        `the worker's wall clock is stepped by ${shift} s: it logs ${last.ts}`);
      // one beat a second: neither held (a deadline an hour on) nor in a
      // tight loop (a deadline an hour past)
      const n = beats() - before;
      assert.ok(n >= 2 && n <= 10, `${n} heartbeats in 4.5 s after a ${shift} s step`);
      const seen = await workers(coord.base);
      assert.equal(seen.length, 1);
      assert.equal(seen[0].state, 'active', `after a ${shift} s step: ${JSON.stringify(seen)}`);
      const q = await runQuery(coord.base);
      assert.equal(q.state, 'succeeded', JSON.stringify(q));
    }
  } finally {
    await w.stop();
    await coord.stop();
  }
});
