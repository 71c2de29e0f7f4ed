// spill: with --memory-limit, a query whose intermediate data and answer do
// not fit next to the dataframes spills them to a file with no name in the
// spill dir and still answers, exactly; --spill-dir none, or a --spill-limit
// too small, fails it memory-budget-exceeded as before. A task over the budget runs again alone,
// with its query's held outputs spilled first. Nothing is left in the spill
// dir, the file's space is given back when the result goes, and a
// materialized dataframe whose parts went to disk still answers.
import assert from 'node:assert/strict';
import { readdirSync, readlinkSync, statSync, writeFileSync } from 'node:fs';
import http from 'node:http';
import path from 'node:path';
import { test } from 'node:test';
import { call, startServer } from './lib.mjs';

const ROWS = 1500000;
// every row its own group (as db-benchmark's q10): the partials and the answer are as large as the data
const CONFIG = {
  maintain_order: false, shuffle_partitions: 16, shuffle_coalesce_bytes: 0,
  scan_tasks_max_size_bytes: 2000000, scan_tasks_min_size_bytes: 1,
};
const GROUP = [{ groupby: ['k', 'g'], agg: ['sum(v) as v', 'count(*) as n'] }];

function writeData(dataDir) {
  const lines = ['k,g,v'];
  let sum = 0;
  for (let i = 0; i < ROWS; i++) {
    const v = (i % 1000) / 8;
    sum += v;
    lines.push(`key${String((i * 7919) % ROWS).padStart(9, '0')},${i % 1000},${v}`);
  }
  writeFileSync(path.join(dataDir, 'u.csv'), `${lines.join('\n')}\n`);
  return sum;
}

async function readBack(base) {
  const m = (await call(base, 'GET', '/metrics')).text.match(/^framed_runner_memory_bytes\{kind="read_back"\} (\d+)$/m);
  return Number(m[1]);
}

async function gauge(base) {
  const m = (await call(base, 'GET', '/metrics')).text.match(/^framed_memory_used_bytes (\d+)$/m);
  return Number(m[1]);
}

// A server with the data, its config and the table materialized: [server, frame id, sum of v].
async function serverWithTable(args) {
  const srv = await startServer({ args: ['--threads', '2', ...args] });
  const sum = writeData(srv.dataDir);
  let r = await call(srv.base, 'POST', '/v1/config', { json: CONFIG });
  assert.equal(r.status, 200, r.text);
  r = await call(srv.base, 'POST', '/v1/dataframes', { json: { source: { dataset: 'u' } } });
  assert.equal(r.status, 201, r.text);
  const frame = r.body.id;
  r = await call(srv.base, 'POST', '/v1/queries?wait=120', { json: { dataframe: frame } });
  assert.equal(r.body.state, 'succeeded', r.text);
  return [srv, frame, sum];
}

async function group(base, frame) {
  const r = await call(base, 'POST', '/v1/queries?wait=120', { json: { plan: { source: { dataframe: frame }, ops: GROUP } } });
  assert.ok(r.status === 200 || r.status === 201, r.text);
  return r.body;
}

// The spill file of a server: an fd whose file has no name ("(deleted)", or O_TMPFILE's "/#<inode>").
function spillFiles(pid, dir) {
  const out = [];
  for (const fd of readdirSync(`/proc/${pid}/fd`)) {
    let to;
    try { to = readlinkSync(`/proc/${pid}/fd/${fd}`); } catch { continue; }
    if (to.startsWith(dir) && (to.endsWith('(deleted)') || /\/#\d+/.test(to)))
      out.push(statSync(`/proc/${pid}/fd/${fd}`));
  }
  return out;
}

test('a query over the memory budget spills, answers exactly, and leaves nothing behind', async () => {
  // the sizes on a server without a limit: the table kept (T) and the answer (R)
  const [free, freeFrame, sum] = await serverWithTable([]);
  let T, R, peak;
  try {
    T = await gauge(free.base);
    const whole = await group(free.base, freeFrame);
    assert.equal(whole.state, 'succeeded', JSON.stringify(whole));
    assert.equal(whole.rows, ROWS);
    R = (await gauge(free.base)) - T;
    peak = whole.progress.intermediate_peak_bytes;
  } finally {
    await free.stop();
  }
  // room for the table and 60% of the answer: not for the partials and the answer in memory
  const limit = Math.floor(T + 0.6 * R);
  assert.ok(T + R + peak / 2 > limit);

  const [none, noneFrame] = await serverWithTable(['--memory-limit', String(limit), '--spill-dir', 'none']);
  try {
    const failed = await group(none.base, noneFrame);
    assert.equal(failed.state, 'failed', JSON.stringify(failed));
    assert.equal(failed.error.kind, 'memory-budget-exceeded');
    assert.equal(failed.progress.spilled_bytes, 0);
  } finally {
    await none.stop();
  }

  // the disk is bounded too: past --spill-limit nothing more spills, and the query fails as without
  const [capped, cappedFrame] = await serverWithTable(['--memory-limit', String(limit), '--spill-limit', '1M']);
  try {
    const failed = await group(capped.base, cappedFrame);
    assert.equal(failed.state, 'failed', JSON.stringify(failed));
    assert.equal(failed.error.kind, 'memory-budget-exceeded');
  } finally {
    await capped.stop();
  }

  const [srv, frame] = await serverWithTable(['--memory-limit', String(limit)]);
  try {
    const q = await group(srv.base, frame);
    assert.equal(q.state, 'succeeded', JSON.stringify(q));
    assert.equal(q.rows, ROWS);
    assert.ok(q.progress.spilled_bytes > R / 4, `spilled ${q.progress.spilled_bytes} bytes`);
    const held = Number((await call(srv.base, 'GET', '/metrics')).text.match(/^framed_spill_bytes (\d+)$/m)[1]);
    assert.ok(held > 0, 'the result on disk shows in framed_spill_bytes');
    const used = await gauge(srv.base);
    assert.ok(used <= limit, `the gauge ${used} is over the limit ${limit}`);
    // a task that went over ran again alone, and the query still answered
    const stages = (await call(srv.base, 'GET', `/v1/queries/${q.id}/stages`)).body;
    const retried = stages.stages.flatMap((s) => s.tasks).filter((t) => t.state === 'retried');
    assert.ok(retried.length > 0, 'no task ran again alone (at least one does at this budget)');
    assert.ok(retried.every((t) => /memory budget/.test(t.error)), JSON.stringify(retried[0]));
    // every row read back, through the paged API and the CSV stream, disk parts included
    let rows = 0, total = 0, n = 0;
    for (let offset = 0; offset < ROWS; offset += 200000) {
      const page = await call(srv.base, 'GET', `/v1/queries/${q.id}/result?offset=${offset}&limit=200000`);
      assert.equal(page.status, 200, page.text.slice(0, 300));
      const cols = page.body.columns.map((c) => c.name ?? c);
      const [iv, inn] = [cols.indexOf('v'), cols.indexOf('n')];
      for (const row of page.body.rows) {
        rows++;
        total += row[iv];
        n += row[inn];
      }
    }
    assert.equal(rows, ROWS);
    assert.equal(n, ROWS);
    assert.ok(Math.abs(total - sum) < 1e-6 * sum, `sum ${total} against ${sum}`);
    const csv = await fetch(`${srv.base}/v1/queries/${q.id}/result?format=csv`);
    assert.equal(csv.status, 200);
    assert.equal((await csv.text()).trimEnd().split('\n').length, ROWS + 1);
    // the reads done, the copies they read back are no longer charged (the stream is freed
    // just after its last byte: a moment's wait)
    let back = -1;
    for (let i = 0; i < 100 && back !== 0; i++) {
      back = await readBack(srv.base);
      if (back) await new Promise((res) => setTimeout(res, 20));
    }
    assert.equal(back, 0, 'read-back copies still charged after the reads');
    // the spill dir (the state dir by default) holds no file; the open file has no name
    const named = readdirSync(srv.stateDir).filter((f) => f.startsWith('spill'));
    assert.deepEqual(named, []);
    assert.equal(spillFiles(srv.pid, srv.stateDir).length, 1, 'one spill file, open with no name');
    // the result deleted: its space goes back once the last reader let go of it
    const del = await call(srv.base, 'DELETE', `/v1/queries/${q.id}/result`);
    assert.ok(del.status === 200 || del.status === 204, del.text);
    let size = -1, metrics = '';
    for (let i = 0; i < 100; i++) {
      size = spillFiles(srv.pid, srv.stateDir)[0].size;
      metrics = (await call(srv.base, 'GET', '/metrics')).text;
      if (size === 0 && /^framed_spill_bytes 0$/m.test(metrics)) break;
      await new Promise((res) => setTimeout(res, 50));
    }
    assert.equal(size, 0, 'the spill file is cut to nothing');
    assert.match(metrics, /^framed_spill_bytes 0$/m, 'the gauge is back to 0');
    const written = Number(metrics.match(/^framed_spill_written_bytes_total (\d+)$/m)[1]);
    assert.ok(written >= q.progress.spilled_bytes && written >= held, `${written} bytes written in all`);
    assert.ok(await gauge(srv.base) <= used);
  } finally {
    await srv.stop();
  }
});

test('a materialized dataframe whose run spilled still answers; kill -9 leaves no spill file', async () => {
  const srv = await startServer({ args: ['--threads', '2', '--memory-limit', '40000000'] });
  try {
    await spilledFrame(srv);
  } catch (e) {
    process.kill(srv.pid, 'SIGKILL');
    throw e;
  }
  process.kill(srv.pid, 'SIGKILL');
  await srv.exited;
  assert.deepEqual(readdirSync(srv.stateDir).filter((f) => f.startsWith('spill')), []);
});

async function spilledFrame(srv) {
  const sum = writeData(srv.dataDir);
  let r = await call(srv.base, 'POST', '/v1/config', { json: CONFIG });
  assert.equal(r.status, 200, r.text);
  r = await call(srv.base, 'POST', '/v1/dataframes', { json: { source: { dataset: 'u' }, ops: GROUP } });
  assert.equal(r.status, 201, r.text);
  const frame = r.body.id;
  r = await call(srv.base, 'POST', '/v1/queries?wait=120', { json: { dataframe: frame } });
  assert.equal(r.body.state, 'succeeded', r.text);
  assert.ok(r.body.progress.spilled_bytes > 0, JSON.stringify(r.body.progress));
  r = await call(srv.base, 'POST', '/v1/queries?wait=120', {
    json: { plan: { source: { dataframe: frame }, ops: [{ agg: ['sum(v) as v', 'sum(n) as n', 'count(*) as c'] }] } },
  });
  assert.equal(r.body.state, 'succeeded', r.text);
  const res = (await call(srv.base, 'GET', `/v1/queries/${r.body.id}/result`)).body;
  const cols = res.columns.map((c) => c.name ?? c);
  const row = Object.fromEntries(cols.map((c, i) => [c, res.rows[0][i]]));
  assert.equal(row.n, ROWS);
  assert.equal(row.c, ROWS);
  assert.ok(Math.abs(row.v - sum) < 1e-6 * sum);
}

// Streams a CSV result, pausing the client at each twentieth of the rows and at its first bytes
// (the server then holds the partition it was writing when the socket filled) to run
// atPause(k) (k = 0 at the first bytes); resolves to the lines read.
function pausingCsv(base, id, atPause) {
  const u = new URL(`${base}/v1/queries/${id}/result?format=csv`);
  return new Promise((resolve, reject) => {
    http.get({ host: u.hostname, port: u.port, path: u.pathname + u.search }, (res) => {
      if (res.statusCode !== 200) return reject(new Error(`status ${res.statusCode}`));
      let n = 0, next = 0;
      res.on('data', (b) => {
        for (const c of b) if (c === 10) n++;
        const k = Math.floor((n * 20) / ROWS);
        if (k >= next && next <= 19) {
          next = k + 1;
          res.pause();
          atPause(k).then(() => res.resume(), reject);
        }
      });
      res.on('end', () => resolve(n));
      res.on('error', reject);
    }).on('error', reject);
  });
}

async function readBackZero(base) {
  let back = -1;
  for (let i = 0; i < 100 && back !== 0; i++) {
    back = await readBack(base);
    if (back) await new Promise((res) => setTimeout(res, 20));
  }
  return back;
}

// A result partition read back from disk is charged while the reader holds it. A stream of a
// spilled result outlives the runner when a reset comes while a client reads it (the reset does
// not wait for readers): the parts read back after it must not touch the freed runner (ASan:
// heap-use-after-free), the stream still ends with every row, and its copies stay charged.
test('a spilled result read back is charged while held, and streams whole across a runner reset', async () => {
  const srv = await startServer({ args: ['--threads', '2', '--memory-limit', '40000000'] });
  try {
    writeData(srv.dataDir);
    let r = await call(srv.base, 'POST', '/v1/config', { json: CONFIG });
    assert.equal(r.status, 200, r.text);
    r = await call(srv.base, 'POST', '/v1/dataframes', { json: { source: { dataset: 'u' }, ops: GROUP } });
    assert.equal(r.status, 201, r.text);
    const q = (await call(srv.base, 'POST', '/v1/queries?wait=120', { json: { dataframe: r.body.id } })).body;
    assert.equal(q.state, 'succeeded', JSON.stringify(q));
    // the query done, what the spill file holds is result partitions (its stage outputs are freed)
    const onDisk = Number((await call(srv.base, 'GET', '/metrics')).text.match(/^framed_spill_bytes (\d+)$/m)[1]);
    assert.ok(onDisk > 0, 'some of the result is on disk');
    assert.equal(await readBack(srv.base), 0);

    // one whole read: some pause falls in a partition read back from disk, and then it is charged
    let most = 0;
    const lines = await pausingCsv(srv.base, q.id, async () => { most = Math.max(most, await readBack(srv.base)); });
    assert.equal(lines, ROWS + 1);
    assert.ok(most > 0, 'no pause saw a read-back copy charged');
    assert.equal(await readBackZero(srv.base), 0, 'read-back copies still charged after the read');

    // again, with the runner reset at the first bytes: every spilled part comes after it
    const across = await pausingCsv(srv.base, q.id, async (k) => {
      if (k !== 0) return;
      const d = await call(srv.base, 'DELETE', '/v1/runner');
      assert.equal(d.status, 200, d.text);
    });
    assert.equal(across, ROWS + 1);
    assert.equal((await call(srv.base, 'GET', '/livez')).status, 200);
    assert.equal(await readBackZero(srv.base), 0, 'the stream across the reset left a charge');
  } finally {
    await srv.stop();
  }
});
