// worker: `framed worker` beside a coordinator (`framed serve`). Tasks need
// Framed-Config-Id (400 without, 404 for an ID the store does not hold); a
// task under the frozen config runs, its output stays as a partition served
// only under that config; the config is fetched from the store once and then
// served from the cache (concurrent misses: one fetch, proven against a fake
// store); bytes that do not hash to the ID get 409 and are not cached; DELETE
// /v1/configs/{id} drops the config and its partitions. With a cluster secret
// every cluster call must be signed, and not too long ago.
import assert from 'node:assert/strict';
import { createHash, createHmac, randomBytes } from 'node:crypto';
import { execFileSync } from 'node:child_process';
import { mkdirSync, symlinkSync, writeFileSync } from 'node:fs';
import { createServer } from 'node:http';
import path from 'node:path';
import { after, before, describe, test } from 'node:test';
import { assertProblem, call, rowsPlan, startServer, startWorker } from './lib.mjs';

const OTHER_ID = `sha256:${'a'.repeat(64)}`;

// The task spec plan_task_spec makes for a stage reading inline rows.
function rowsTask(rows, filter) {
  return {
    query_id: 'q-test', stage: 0, task: 0, attempt: 0,
    spec: {
      stage: 0, task: 0, input: { kind: 'rows', rows, hints: [] }, core: null,
      pipeline: [{ filter }], sink: null, nbuckets: 1,
    },
    inputs: [],
  };
}

// Freezes the coordinator's config (the first dataframe does) and returns its ID.
async function freeze(coordinator) {
  const r = await call(coordinator.base, 'POST', '/v1/dataframes', { json: rowsPlan([{ a: 1 }]) });
  assert.equal(r.status, 201, r.text);
  const cfg = await call(coordinator.base, 'GET', '/v1/config');
  assert.match(cfg.body.config_id, /^sha256:[0-9a-f]{64}$/);
  return cfg.body.config_id;
}

// Polls fn until it returns something truthy (heartbeats come every second).
async function waitFor(fn, timeoutMs = 10000) {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const v = await fn();
    if (v) return v;
    if (Date.now() > deadline) throw new Error('waited in vain');
    await new Promise((r) => setTimeout(r, 100));
  }
}

// The signature headers of api/internal-protocol.md, with a fresh
// Framed-Nonce unless nonce is null (then the v1 text without one).
function signed(secret, method, target, body, { sender = 'test-sender', ts, nonce } = {}) {
  const stamp = ts ?? Math.floor(Date.now() / 1000);
  const n = nonce === undefined ? randomBytes(16).toString('hex') : nonce;
  const bodyHash = createHash('sha256').update(body ?? '').digest('hex');
  const text = `${method}\n${target}\n${bodyHash}\n${stamp}\n${sender}${n === null ? '' : `\n${n}`}`;
  const mac = createHmac('sha256', secret).update(text).digest('hex');
  return {
    'framed-sender': sender,
    'framed-timestamp': String(stamp),
    ...(n === null ? {} : { 'framed-nonce': n }),
    'framed-signature': `v1=${mac}`,
  };
}

describe('a worker beside its coordinator', () => {
  let coordinator;
  let worker;
  let configId;
  before(async () => {
    coordinator = await startServer();
    worker = await startWorker(coordinator.base, { args: ['--data-dir', coordinator.dataDir] });
  });
  after(async () => {
    await worker?.stop();
    await coordinator?.stop();
  });

  test('says it is a worker and is ready', async () => {
    assert.equal((await call(worker.base, 'GET', '/livez')).status, 200);
    assert.equal((await call(worker.base, 'GET', '/readyz')).status, 200);
    const info = await call(worker.base, 'GET', '/v1/info');
    assert.equal(info.body.role, 'worker');
    assert.equal(info.body.url, worker.base);
    assert.match(info.body.id, /^w-/);
    assert.deepEqual(info.body.config_ids, []);
    assert.ok(worker.logLines().some((l) => /loopback only/.test(l.msg)));
  });

  test('announces itself to the coordinator', async () => {
    const info = await call(worker.base, 'GET', '/v1/info');
    const listed = await waitFor(async () => {
      const r = await call(coordinator.base, 'GET', '/v1/workers');
      return r.body.workers.find((w) => w.id === info.body.id);
    });
    assert.equal(listed.url, worker.base);
    assert.equal(listed.state, 'active');
  });

  test('a task without Framed-Config-Id is refused with 400', async () => {
    const r = await call(worker.base, 'POST', '/v1/tasks', { json: rowsTask([{ a: 1 }], 'a > 0') });
    assertProblem(r, 400, 'missing-config-id');
    const bad = await call(worker.base, 'POST', '/v1/tasks', {
      json: rowsTask([{ a: 1 }], 'a > 0'), headers: { 'framed-config-id': 'sha256:nothex' },
    });
    assertProblem(bad, 400, 'missing-config-id');
  });

  test('a task under an ID the store does not hold gets 404', async () => {
    const r = await call(worker.base, 'POST', '/v1/tasks', {
      json: rowsTask([{ a: 1 }], 'a > 0'), headers: { 'framed-config-id': OTHER_ID },
    });
    assertProblem(r, 404, 'config-not-found');
    assert.equal(r.headers.get('framed-config-id'), OTHER_ID);
  });

  test('a task under the frozen config runs and leaves its output as a partition', async () => {
    configId = await freeze(coordinator);
    const headers = { 'framed-config-id': configId };
    const r = await call(worker.base, 'POST', '/v1/tasks', {
      json: rowsTask([{ a: 1 }, { a: 2 }], 'a > 1'), headers,
    });
    assert.equal(r.status, 200, r.text);
    assert.equal(r.headers.get('framed-config-id'), configId);
    assert.equal(r.body.config_id, configId);
    assert.equal(r.body.outputs.length, 1);
    assert.equal(r.body.outputs[0].rows, 1);
    assert.ok(r.body.outputs[0].bytes > 0);
    assert.equal(r.body.null_errors, 0);
    const pid = r.body.outputs[0].id;
    assert.match(pid, /^p-[0-9a-f]+$/);

    const part = await fetch(`${worker.base}/v1/partitions/${pid}`, { headers });
    assert.equal(part.status, 200);
    assert.equal(part.headers.get('content-type'), 'application/vnd.framed.table');
    assert.equal(part.headers.get('framed-config-id'), configId);
    const bytes = Buffer.from(await part.arrayBuffer());
    assert.equal(bytes.subarray(0, 5).toString(), 'FRTB1');

    const other = await call(worker.base, 'GET', `/v1/partitions/${pid}`, {
      headers: { 'framed-config-id': OTHER_ID },
    });
    assertProblem(other, 409, 'config-mismatch');
    // A delete under another config is refused like the GET, and drops nothing.
    const otherDelete = await call(worker.base, 'DELETE', `/v1/partitions/${pid}`, {
      headers: { 'framed-config-id': OTHER_ID },
    });
    assertProblem(otherDelete, 409, 'config-mismatch');
    assert.equal((await fetch(`${worker.base}/v1/partitions/${pid}`, { headers })).status, 200);
    const none = await call(worker.base, 'GET', '/v1/partitions/p-0000', { headers });
    assertProblem(none, 404, 'partition-not-found');
    const bare = await call(worker.base, 'GET', `/v1/partitions/${pid}`);
    assertProblem(bare, 400, 'missing-config-id');
  });

  test('the config is fetched once, then served from the cache', async () => {
    const headers = { 'framed-config-id': configId };
    const r = await call(worker.base, 'POST', '/v1/tasks', {
      json: rowsTask([{ a: 5 }, { a: 6 }, { a: 0 }], 'a > 1'), headers,
    });
    assert.equal(r.status, 200, r.text);
    assert.equal(r.body.outputs[0].rows, 2);
    const info = await call(worker.base, 'GET', '/v1/info');
    assert.deepEqual(info.body.config_ids, [configId]);
    assert.deepEqual(info.body.configs[configId], { fetches: 1, cache_hits: 1, tasks: 2 });
    assert.equal(info.body.partitions, 2);
    const metrics = await call(worker.base, 'GET', '/metrics');
    assert.match(metrics.text, new RegExp(`framed_worker_config_fetches_total\\{config_id="${configId}"\\} 1`));
    assert.match(metrics.text, new RegExp(`framed_worker_tasks_total\\{config_id="${configId}"\\} 2`));
    assert.match(metrics.text, /framed_worker_partitions 2/);
  });

  test('a failing task answers with its kind', async () => {
    const r = await call(worker.base, 'POST', '/v1/tasks', {
      json: rowsTask([{ a: 1 }], 'nope > 1'), headers: { 'framed-config-id': configId },
    });
    assert.ok(r.status >= 400 && r.status < 500, r.text);
    assert.match(r.headers.get('content-type'), /^application\/problem\+json/);
    assert.equal(r.headers.get('framed-config-id'), configId);
  });

  test('malformed data fails the task with its kind and where it is', async () => {
    writeFileSync(path.join(coordinator.dataDir, 'bad.csv'), 'a\n1\nx\n');
    const spec = {
      stage: 0, task: 0, core: null, pipeline: [], sink: null, nbuckets: 1,
      input: {
        kind: 'file', path: 'bad.csv', format: 'csv', display: 'bad.csv',
        options: { delimiter: ',', header: true, on_error_null: false, hints: [] },
        schema: [['a', 'int64']], columns: null, range: [2, 6, 2], max_rows: 0,
      },
    };
    const r = await call(worker.base, 'POST', '/v1/tasks', {
      json: { query_id: 'q-bad', stage: 0, task: 0, attempt: 0, spec, inputs: [] },
      headers: { 'framed-config-id': configId },
    });
    assertProblem(r, 422, 'malformed-data');
    assert.match(r.body.detail, /bad\.csv/);
    assert.equal(r.body.line, 3);
    assert.equal(r.body.field_index, 1);
    assert.ok(r.body.column === undefined || typeof r.body.column === 'string', r.text); // a name, as from the coordinator
  });

  test('DELETE /v1/configs/{id} needs Framed-Config-Id naming that config (400 missing-config-id)', async () => {
    const bare = await call(worker.base, 'DELETE', `/v1/configs/${configId}`);
    assertProblem(bare, 400, 'missing-config-id');
    const other = await call(worker.base, 'DELETE', `/v1/configs/${configId}`, { headers: { 'framed-config-id': OTHER_ID } });
    assertProblem(other, 400, 'missing-config-id');
    const info = await call(worker.base, 'GET', '/v1/info');
    assert.deepEqual(info.body.config_ids, [configId], 'nothing was dropped');
  });

  test('DELETE /v1/configs/{id} drops the config and its partitions', async () => {
    const hdr = { headers: { 'framed-config-id': configId } };
    const r = await call(worker.base, 'DELETE', `/v1/configs/${configId}`, hdr);
    assert.equal(r.status, 200, r.text);
    assert.equal(r.body.dropped_partitions, 2);
    assert.equal(r.body.was_cached, true);
    const info = await call(worker.base, 'GET', '/v1/info');
    assert.deepEqual(info.body.config_ids, []);
    // The two failing tasks above ran too: they count.
    assert.deepEqual(info.body.configs[configId], { fetches: 1, cache_hits: 3, tasks: 4 }, 'counters stay');
    assert.equal(info.body.partitions, 0);
    const again = await call(worker.base, 'DELETE', `/v1/configs/${configId}`, hdr);
    assert.equal(again.body.was_cached, false);
  });

  // ?offset=&limit=: rows of the partition alone, as a table of their own
  // (FRTB1: "FRTB1" u32 ncols u64 nrows, then per column u32 name_len, name,
  // u8 type, u64 nulls, u8 flags, [bitmap], values); a limit past the end is
  // cut to it; bad numbers are 400s, not a guess.
  test('a partition is served in row ranges', async () => {
    const headers = { 'framed-config-id': configId };
    const rows = [];
    for (let i = 0; i < 20; i++) rows.push({ a: i * 3 });
    const r = await call(worker.base, 'POST', '/v1/tasks', { json: rowsTask(rows, 'a >= 0'), headers });
    assert.equal(r.status, 200, r.text);
    const pid = r.body.outputs[0].id;
    const values = (bytes) => {
      const nrows = Number(bytes.readBigUInt64LE(9));
      let at = 17;
      const nameLen = bytes.readUInt32LE(at);
      at += 4 + nameLen;
      assert.equal(bytes[at], 2, 'int64'); // type
      const flags = bytes[at + 9];
      at += 10;
      assert.equal(flags, 0, 'no bitmap');
      const out = [];
      for (let i = 0; i < nrows; i++) out.push(Number(bytes.readBigInt64LE(at + 8 * i)));
      assert.equal(at + 8 * nrows, bytes.length, 'nothing after the column');
      return out;
    };
    const get = async (q) => {
      const res = await fetch(`${worker.base}/v1/partitions/${pid}${q}`, { headers });
      return { status: res.status, bytes: Buffer.from(await res.arrayBuffer()) };
    };
    assert.deepEqual(values((await get('')).bytes), rows.map((x) => x.a));
    assert.deepEqual(values((await get('?offset=5&limit=3')).bytes), [15, 18, 21]);
    assert.deepEqual(values((await get('?offset=18&limit=100')).bytes), [54, 57]);
    assert.deepEqual(values((await get('?offset=20&limit=1')).bytes), []);
    assert.deepEqual(values((await get('?offset=7')).bytes), rows.slice(7).map((x) => x.a));
    for (const q of ['?offset=21&limit=1', '?offset=-1', '?offset=abc', '?limit=1e3', '?offset=1&offset=2']) {
      const bad = await call(worker.base, 'GET', `/v1/partitions/${pid}${q}`, { headers });
      assertProblem(bad, 400, 'invalid-parameter');
    }
    assert.equal((await call(worker.base, 'DELETE', `/v1/partitions/${pid}`, { headers })).status, 204);
  });
});

describe('a worker with a cluster secret', () => {
  const secret = randomBytes(24).toString('hex');
  const env = { FRAMED_CLUSTER_SECRET: secret };
  let coordinator;
  let worker;
  before(async () => {
    coordinator = await startServer({ env });
    worker = await startWorker(coordinator.base, { env });
  });
  after(async () => {
    await worker?.stop();
    await coordinator?.stop();
  });

  test('refuses unsigned or wrongly signed calls, keeps probes open', async () => {
    assertProblem(await call(worker.base, 'GET', '/v1/info'), 401, 'unauthorized');
    const body = JSON.stringify(rowsTask([{ a: 1 }], 'a > 0'));
    const unsigned = await call(worker.base, 'POST', '/v1/tasks', {
      body, headers: { 'content-type': 'application/json', 'framed-config-id': OTHER_ID },
    });
    assertProblem(unsigned, 401, 'unauthorized');
    const wrong = await call(worker.base, 'GET', '/v1/info', {
      headers: signed('not-the-secret', 'GET', '/v1/info', ''),
    });
    assertProblem(wrong, 401, 'unauthorized');
    const otherPath = await call(worker.base, 'GET', '/v1/info', {
      headers: signed(secret, 'GET', '/v1/tasks', ''),
    });
    assertProblem(otherPath, 401, 'unauthorized');
    for (const p of ['/livez', '/readyz', '/metrics']) {
      assert.equal((await call(worker.base, 'GET', p)).status, 200, p);
    }
    assert.ok(!worker.stderr().includes(secret));
  });

  test('accepts correctly signed calls', async () => {
    const info = await call(worker.base, 'GET', '/v1/info', {
      headers: signed(secret, 'GET', '/v1/info', ''),
    });
    assert.equal(info.status, 200, info.text);
    assert.equal(info.body.role, 'worker');

    const configId = await freeze(coordinator);
    const body = JSON.stringify(rowsTask([{ a: 1 }, { a: 2 }], 'a > 1'));
    const r = await call(worker.base, 'POST', '/v1/tasks', {
      body,
      headers: {
        'content-type': 'application/json', 'framed-config-id': configId,
        ...signed(secret, 'POST', '/v1/tasks', body),
      },
    });
    assert.equal(r.status, 200, r.text);
    assert.equal(r.body.outputs[0].rows, 1);
    const tampered = await call(worker.base, 'POST', '/v1/tasks', {
      body: body.replace('a > 1', 'a > 0'),
      headers: {
        'content-type': 'application/json', 'framed-config-id': configId,
        ...signed(secret, 'POST', '/v1/tasks', body),
      },
    });
    assertProblem(tampered, 401, 'unauthorized');
  });

  test('its coordinator takes only signed announces, and lists this worker', async () => {
    const announce = { id: 'w-intruder', url: 'http://127.0.0.1:9', threads: 1, running_tasks: 0, config_ids: [] };
    assertProblem(await call(coordinator.base, 'POST', '/v1/workers', { json: announce }), 401, 'unauthorized');
    const body = JSON.stringify(announce);
    const wrong = await call(coordinator.base, 'POST', '/v1/workers', {
      body, headers: { 'content-type': 'application/json', ...signed('nope', 'POST', '/v1/workers', body) },
    });
    assertProblem(wrong, 401, 'unauthorized');
    const info = await call(worker.base, 'GET', '/v1/info', { headers: signed(secret, 'GET', '/v1/info', '') });
    const listed = await waitFor(async () => {
      const r = await call(coordinator.base, 'GET', '/v1/workers');
      return r.body.workers.find((w) => w.id === info.body.id);
    });
    assert.equal(listed.url, worker.base);
    const r = await call(coordinator.base, 'GET', '/v1/workers');
    assert.ok(!r.body.workers.some((w) => w.id === 'w-intruder'));
  });

  test('refuses a replayed signed request, also without a nonce', async () => {
    for (const nonce of [null, undefined]) {
      const headers = signed(secret, 'GET', '/v1/info', '', { nonce });
      const first = await call(worker.base, 'GET', '/v1/info', { headers });
      assert.equal(first.status, 200, first.text);
      const again = await call(worker.base, 'GET', '/v1/info', { headers });
      assertProblem(again, 401, 'unauthorized');
      assert.match(again.body.detail, /replay/);
    }
    const configId = await freeze(coordinator);
    const body = JSON.stringify(rowsTask([{ a: 1 }, { a: 2 }], 'a > 1'));
    const headers = {
      'content-type': 'application/json', 'framed-config-id': configId,
      ...signed(secret, 'POST', '/v1/tasks', body),
    };
    const before = (await call(worker.base, 'GET', '/v1/info', { headers: signed(secret, 'GET', '/v1/info', '') })).body;
    assert.equal((await call(worker.base, 'POST', '/v1/tasks', { body, headers })).status, 200);
    assertProblem(await call(worker.base, 'POST', '/v1/tasks', { body, headers }), 401, 'unauthorized');
    const after = (await call(worker.base, 'GET', '/v1/info', { headers: signed(secret, 'GET', '/v1/info', '') })).body;
    assert.equal(after.partitions, before.partitions + 1);
  });

  test('refuses a signature older than 300 s', async () => {
    const old = Math.floor(Date.now() / 1000) - 301;
    const r = await call(worker.base, 'GET', '/v1/info', {
      headers: signed(secret, 'GET', '/v1/info', '', { ts: old }),
    });
    assertProblem(r, 401, 'unauthorized');
    const recent = await call(worker.base, 'GET', '/v1/info', {
      headers: signed(secret, 'GET', '/v1/info', '', { ts: old + 60 }),
    });
    assert.equal(recent.status, 200, recent.text);
  });
});

// A config store that counts its fetches and answers slowly: the real bytes
// of `goodId` (taken from a coordinator), and the same bytes under `badId`,
// where they do not hash to the ID; any other ID at once with a 404.
function fakeStore(goodId, bytes, badId) {
  const fetches = new Map();
  const times = new Map(); // id -> [Date.now() of each fetch]
  const server = createServer((req, res) => {
    const id = decodeURIComponent(req.url.replace('/v1/configs/', ''));
    fetches.set(id, (fetches.get(id) ?? 0) + 1);
    times.set(id, [...(times.get(id) ?? []), Date.now()]);
    const known = id === goodId || id === badId;
    setTimeout(() => {
      if (id === goodId || id === badId) {
        res.writeHead(200, { 'content-type': 'application/json' });
        res.end(bytes);
      } else {
        res.writeHead(404, { 'content-type': 'application/problem+json' });
        res.end('{}');
      }
    }, known ? 300 : 0);
  });
  // Node closes an idle keep-alive connection after 5 s; a worker (libcurl) that reuses it just
  // then sends its request again on a new one, a second fetch of the same ID that no worker rule
  // caused (seen on a loaded machine): idle connections stay open for the test's length.
  server.keepAliveTimeout = 120000;
  return new Promise((resolve) => {
    server.listen(0, '127.0.0.1', () => {
      resolve({ base: `http://127.0.0.1:${server.address().port}`, fetches, times, close: () => { server.close(); server.closeAllConnections?.(); } });
    });
  });
}

describe('a worker resolving configs from a store', () => {
  let coordinator;
  let store;
  let worker;
  let configId;
  const badId = `sha256:${'b'.repeat(64)}`;
  before(async () => {
    coordinator = await startServer();
    configId = await freeze(coordinator);
    const bytes = await (await fetch(`${coordinator.base}/v1/configs/${configId}`)).text();
    store = await fakeStore(configId, bytes, badId);
    worker = await startWorker(coordinator.base, { args: ['--store', store.base, '--threads', '2'] });
  });
  after(async () => {
    await worker?.stop();
    await coordinator?.stop();
    store?.close();
  });

  test('concurrent tasks missing one config cause one store fetch', async () => {
    const headers = { 'framed-config-id': configId };
    const results = await Promise.all([...Array(6).keys()].map((i) => call(worker.base, 'POST',
      '/v1/tasks', { json: rowsTask([{ a: i }, { a: 10 }], 'a > 5'), headers })));
    for (const r of results) {
      assert.equal(r.status, 200, r.text);
      assert.equal(r.body.config_id, configId);
    }
    assert.equal(store.fetches.get(configId), 1);
    const info = await call(worker.base, 'GET', '/v1/info');
    assert.deepEqual(info.body.configs[configId], { fetches: 1, cache_hits: 5, tasks: 6 });
  });

  test('bytes that do not hash to the ID: 409, the task never runs, nothing is cached', async () => {
    const headers = { 'framed-config-id': badId };
    for (let round = 1; round <= 2; round++) {
      const r = await call(worker.base, 'POST', '/v1/tasks', { json: rowsTask([{ a: 1 }], 'a > 0'), headers });
      assertProblem(r, 409, 'config-integrity');
      assert.equal(store.fetches.get(badId), round);
    }
    const info = await call(worker.base, 'GET', '/v1/info');
    assert.deepEqual(info.body.config_ids, [configId]);
    assert.deepEqual(info.body.configs[badId], { fetches: 2, cache_hits: 0, tasks: 0 });
    assert.equal(info.body.partitions, 6);
  });

  // Defect 8: a stream of well-formed unknown IDs costs one store fetch per
  // ID per window (asked again at once: none), and neither /metrics nor
  // /v1/info grows with it; a dropped config's series go with it.
  test('thousands of unknown config IDs: one fetch each, bounded memory and series', async () => {
    const N = 2000;
    // distinct: every i has 4 hex digits (0x1000 + i), so no padding makes two alike
    const ids = [...Array(N).keys()].map((i) => `sha256:${(0x1000 + i).toString(16).padStart(64, 'c')}`);
    const series = async () => (await call(worker.base, 'GET', '/metrics')).text.split('\n').filter((l) => l.includes('config_id="')).length;
    const held = await series();
    assert.equal(held, 3, 'fetches, hits and tasks of the one cached config');
    const task = JSON.stringify(rowsTask([{ a: 1 }], 'a > 0'));
    const ask = async (list) => {
      for (let i = 0; i < list.length; i += 8) {
        const batch = list.slice(i, i + 8).map((id) => call(worker.base, 'POST', '/v1/tasks', {
          body: task, headers: { 'content-type': 'application/json', 'framed-config-id': id },
        }));
        for (const r of await Promise.all(batch)) assertProblem(r, 404, 'config-not-found');
      }
    };
    await ask(ids);
    assert.equal(ids.reduce((n, id) => n + (store.fetches.get(id) ?? 0), 0), N, 'one fetch per ID');
    // Asked again, the latest first: an ID is fetched again only once the
    // worker's window (1 s, PROTO_CONFIG_NEGATIVE_TTL_MS) has passed since
    // its last fetch, however slow this machine is.
    // The rule is per window, not per pass: a second pass that runs slowly
    // (a loaded machine) may see a window end twice for one ID; no fetch
    // ever follows the last one by less than the window.
    await ask([...ids].reverse());
    for (const id of ids) {
      const t = store.times.get(id);
      assert.ok(t.length <= 3 && t.every((x, i) => i === 0 || x - t[i - 1] >= 900), `${id}: fetched at ${t}`);
    }
    assert.equal(await series(), held);
    const info = await call(worker.base, 'GET', '/v1/info');
    assert.ok(Object.keys(info.body.configs).length <= 1 + 16, `counters bounded: ${Object.keys(info.body.configs).length}`);
    const d = await call(worker.base, 'DELETE', `/v1/configs/${configId}`, { headers: { 'framed-config-id': configId } });
    assert.equal(d.status, 200, d.text);
    assert.equal(await series(), 0, 'the dropped config\'s series are gone');
  });
});

// A task reading file `file` (relative to the worker's data dir, or not).
function fileTask(file) {
  return {
    query_id: 'q-file', stage: 0, task: 0, attempt: 0, inputs: [],
    spec: {
      stage: 0, task: 0, core: null, pipeline: [], sink: null, nbuckets: 1,
      input: {
        kind: 'file', path: file, format: 'csv', display: 'x',
        options: { delimiter: ',', header: false, on_error_null: false, hints: [] },
        schema: [['a', 'string']], columns: null, range: [0, 1 << 20, 1], max_rows: 0,
      },
    },
  };
}

describe('a worker reads files only inside its data dir', () => {
  let coordinator;
  let worker;
  let headers;
  let outside;
  before(async () => {
    coordinator = await startServer();
    worker = await startWorker(coordinator.base, { args: ['--data-dir', coordinator.dataDir] });
    headers = { 'framed-config-id': await freeze(coordinator) };
    outside = path.join(coordinator.root, 'secret.csv');
    writeFileSync(outside, 'top-secret\n');
    writeFileSync(path.join(coordinator.dataDir, 'inside.csv'), 'hello\n');
    symlinkSync(outside, path.join(coordinator.dataDir, 'leak.csv'));
    symlinkSync('inside.csv', path.join(coordinator.dataDir, 'alias.csv'));
    mkdirSync(path.join(coordinator.dataDir, 'sub'));
    execFileSync('mkfifo', [path.join(coordinator.dataDir, 'pipe.csv')]);
  });
  after(async () => {
    await worker?.stop();
    await coordinator?.stop();
  });

  test('a file inside, or a symlink that stays inside, is read', async () => {
    for (const f of ['inside.csv', 'alias.csv', './sub/../inside.csv']) {
      const r = await call(worker.base, 'POST', '/v1/tasks', { json: fileTask(f), headers });
      assert.equal(r.status, 200, `${f}: ${r.text}`);
      assert.equal(r.body.outputs[0].rows, 1);
    }
  });

  test('absolute paths, traversal and symlinks out are 400 invalid-task; nothing is served', async () => {
    const before = (await call(worker.base, 'GET', '/v1/info')).body.partitions;
    for (const f of ['/etc/passwd', outside, '../secret.csv', 'sub/../../secret.csv', 'leak.csv', '']) {
      const r = await call(worker.base, 'POST', '/v1/tasks', { json: fileTask(f), headers });
      assertProblem(r, 400, 'invalid-task');
      assert.ok(!r.text.includes('top-secret') && !r.text.includes('root:'), r.text);
    }
    const nul = await call(worker.base, 'POST', '/v1/tasks', { json: fileTask('inside.csv\u0000x'), headers });
    assert.equal(nul.status, 400, nul.text);
    assert.equal((await call(worker.base, 'GET', '/v1/info')).body.partitions, before);
    assert.ok(worker.logLines().some((l) => l.level === 'warn' && /outside the data dir/.test(l.msg)));
  });

  test('a FIFO or a directory is not opened: 404 dataset-not-found, no hang', async () => {
    for (const f of ['pipe.csv', 'sub', 'missing.csv']) {
      const r = await call(worker.base, 'POST', '/v1/tasks', { json: fileTask(f), headers });
      assertProblem(r, 404, 'dataset-not-found');
    }
  });
});

// The answer to a heartbeat may name configs to drop (released while the
// worker was away). A coordinator's answer is checked like any input: a bad
// list is refused whole (logged), an answer that is not JSON (a NUL in a
// string) is ignored, and the worker keeps beating and serving, at the pace
// the answer sets (heartbeat_ms, 50 ms here).
test('a heartbeat answer naming bad configs to drop changes nothing; a good one is dropped', async () => {
  const valid = `sha256:${'c'.repeat(64)}`;
  const answers = [
    { release_config_ids: 'sha256:x' },
    { release_config_ids: [7, valid] },
    { release_config_ids: ['../../etc', valid] },
    { release_config_ids: [`${valid}\u0000tail`] },
    { release_config_ids: [`sha256:${'C'.repeat(64)}`] },
    { release_config_ids: Array.from({ length: 5000 }, () => valid) },
    { release_config_ids: [valid] },
  ];
  let beats = 0;
  const fake = createServer((req, res) => {
    req.resume();
    req.on('end', () => {
      const body = JSON.stringify({ heartbeat_ms: 50, ...(answers[Math.min(beats, answers.length - 1)]) });
      beats++;
      res.writeHead(200, { 'content-type': 'application/json', 'content-length': Buffer.byteLength(body) });
      res.end(body);
    });
  });
  await new Promise((r) => fake.listen(0, '127.0.0.1', r));
  const worker = await startWorker(`http://127.0.0.1:${fake.address().port}`);
  try {
    const started = Date.now();
    await waitFor(() => beats > answers.length + 2, 30000);
    assert.ok(Date.now() - started < 5000, `the worker kept its own 1 s pace: ${Date.now() - started} ms`);
    const r = await call(worker.base, 'GET', '/v1/info');
    assert.equal(r.status, 200, r.text);
    const lines = worker.logLines();
    assert.equal(lines.filter((l) => /named configs to drop that are not a list/.test(l.msg)).length, 5, worker.stderr());
    const dropped = lines.filter((l) => l.msg.includes(`released config ${valid} while this worker was away`));
    // one drop a beat answered with the last (valid) list, none for the 5000-long one
    assert.ok(dropped.length >= 2 && dropped.length <= beats - (answers.length - 1), `${dropped.length} drops in ${beats} beats`);
    // the answer's heartbeat_ms (50) set the pace: far more than one beat a second
    assert.ok(beats >= 10, `${beats} beats`);
    assert.ok(!lines.some((l) => /released config sha256:C/.test(l.msg)));
  } finally {
    await worker.stop();
    await new Promise((r) => fake.close(r));
  }
});

// With a cluster secret a worker acts on a heartbeat answer only when it is
// signed for that very request (Framed-Answer-Signature over its
// Framed-Nonce and the body): an unsigned answer, one signed for another
// request or with another secret is logged and ignored (no drop, its own
// pace kept); a good one is acted on.
test('with a cluster secret, only an answer signed for its request is acted on', async () => {
  const secret = randomBytes(24).toString('hex');
  const valid = `sha256:${'d'.repeat(64)}`;
  const body = JSON.stringify({ heartbeat_ms: 50, release_config_ids: [valid] });
  const sig = (key, nonce) => `v1=${createHmac('sha256', key).update(`framed-answer\n${nonce}\n${createHash('sha256').update(body).digest('hex')}`).digest('hex')}`;
  let mode = 'unsigned';
  let beats = 0;
  let lastNonce = 'none';
  const fake = createServer((req, res) => {
    req.resume();
    req.on('end', () => {
      beats++;
      const nonce = req.headers['framed-nonce'] ?? '';
      const headers = { 'content-type': 'application/json', 'content-length': Buffer.byteLength(body) };
      if (mode === 'other-secret') headers['framed-answer-signature'] = sig('another secret', nonce);
      if (mode === 'other-request') headers['framed-answer-signature'] = sig(secret, lastNonce);
      if (mode === 'signed') headers['framed-answer-signature'] = sig(secret, nonce);
      lastNonce = nonce;
      res.writeHead(200, headers);
      res.end(body);
    });
  });
  await new Promise((r) => fake.listen(0, '127.0.0.1', r));
  const worker = await startWorker(`http://127.0.0.1:${fake.address().port}`, { env: { FRAMED_CLUSTER_SECRET: secret } });
  const dropped = () => worker.logLines().filter((l) => l.msg.includes(`released config ${valid}`)).length;
  try {
    for (mode of ['unsigned', 'other-secret', 'other-request']) {
      const from = beats;
      await waitFor(() => beats >= from + 2, 10000);
      assert.equal(dropped(), 0, `${mode}: nothing dropped`);
    }
    const started = Date.now();
    // logged once, not at every beat
    assert.equal(worker.logLines().filter((l) => /not signed for this request/.test(l.msg)).length, 1, worker.stderr());
    mode = 'signed';
    await waitFor(() => dropped() >= 3, 10000);
    // and its pace: 50 ms from the first good answer on
    const from = beats;
    await waitFor(() => beats >= from + 10, 10000);
    assert.ok(Date.now() - started < 6000, `beats at 50 ms once signed: ${Date.now() - started} ms`);
  } finally {
    await worker.stop();
    await new Promise((r) => fake.close(r));
  }
});

test('a worker beyond loopback without a cluster secret refuses to start unless --insecure', async () => {
  const { runToExit } = await import('./lib.mjs');
  const r = await runToExit(['worker', '--port', '0', '--listen', '0.0.0.0', '--coordinator',
    'http://127.0.0.1:9']);
  assert.equal(r.code, 2);
  assert.equal(r.listened, false);
  assert.match(r.stderr, /cluster secret/);
  assert.match(r.stderr, /--insecure/);
  const w = await startWorker('http://127.0.0.1:9', { args: ['--listen', '0.0.0.0', '--insecure'] });
  assert.ok(w.logLines().some((l) => l.level === 'warn' && /--insecure/.test(l.msg)));
  await w.stop();
});

// The loopback check resolves the address: "127." at the start of a host
// name proves nothing, and a name that does not resolve is refused.
test('a worker --listen on a host name that merely starts with 127. does not start', async () => {
  const { runToExit } = await import('./lib.mjs');
  const r = await runToExit(['worker', '--port', '0', '--listen', '127.example.invalid',
    '--coordinator', 'http://127.0.0.1:9']);
  assert.equal(r.code, 2, r.stderr);
  assert.equal(r.listened, false);
  assert.match(r.stderr, /cannot resolve --listen 127\.example\.invalid/);
  const ok = await startWorker('http://127.0.0.1:9', { args: ['--listen', '127.0.0.1'] });
  await ok.stop();
});

test('a worker without --coordinator or with an unreadable secret file does not start', async () => {
  const { runToExit } = await import('./lib.mjs');
  const none = await runToExit(['worker', '--port', '0']);
  assert.equal(none.code, 2);
  assert.match(none.stderr, /--coordinator/);
  const missing = '/nonexistent/framed-secret';
  const r = await runToExit(['worker', '--port', '0', '--coordinator', 'http://127.0.0.1:9',
    '--cluster-secret-file', missing]);
  assert.equal(r.code, 1);
  assert.ok(r.stderr.includes(missing), r.stderr);
  assert.equal(r.listened, false);
});

test('a worker whose --advertise-url has a path does not start (every announce would be refused)', async () => {
  const { runToExit } = await import('./lib.mjs');
  for (const url of ['http://127.0.0.1:1/api', 'http://u@127.0.0.1:1', 'ftp://127.0.0.1:1']) {
    const r = await runToExit(['worker', '--port', '0', '--coordinator', 'http://127.0.0.1:9',
      '--advertise-url', url]);
    assert.equal(r.code, 2, r.stderr);
    assert.match(r.stderr, /advertise-url/);
    assert.equal(r.listened, false);
  }
});

describe('a worker given hostile task specs', () => {
  let coordinator;
  let worker;
  before(async () => {
    coordinator = await startServer();
    worker = await startWorker(coordinator.base);
  });
  after(async () => {
    await worker?.stop();
    await coordinator?.stop();
  });

  test('hostile task specs get 400 invalid-task and the worker stays up', async () => {
    const headers = { 'framed-config-id': await freeze(coordinator) };
    const base = rowsTask([{ a: 1 }, { a: 2 }], 'a > 0');
    const variants = [
      { sink: { op: 'hash_partition', keys: ['a'], buckets: -1 } },
      { sink: { op: 'hash_partition', keys: ['a'], buckets: 1e9 } },
      { sink: { op: 'range_partition', keys: [], buckets: 'x' } },
      { sink: { op: 'explode' } },
      { input: { kind: 'teleport' } },
      { input: 'rows' },
      { nbuckets: -5 },
      { pipeline: [{ slice: { offset: -1, limit: 1 } }] },
      { pipeline: [{ top_k: { by: [], sort: [], k: -3 } }] },
      { pipeline: 'filter' },
      { core: { op: 'teleport' } },
      { input: { kind: 'slots', nslots: 2 }, core: { op: 'agg_final', keys: [{ col: 'a' }], aggs: [{ expr: 'a' }], input_schema: [] } },
      { input: { kind: 'slots', nslots: 2 }, core: { op: 'join', how: 7, left_on: ['a'], right_on: ['a'] } },
      { input: { kind: 'slots', nslots: 2 }, core: { op: 'merge', keys: ['a'] } },
      { sink: { op: 'partial_agg', keys: ['a'], aggs: [1] } },
      { sink: { op: 'sort_sample', keys: ['a'], sample: 3 } },
      { input: { kind: 'file', path: 'x.csv', format: 'csv', range: [5, 1, 0] } },
      { input: { kind: 'file', path: 'x.csv', format: 'csv', range: [0, 1, 0], columns: [-1] } },
    ];
    for (const v of variants) {
      const r = await call(worker.base, 'POST', '/v1/tasks', {
        json: { ...base, spec: { ...base.spec, ...v } }, headers,
      });
      assertProblem(r, 400, 'invalid-task');
    }
    const join = await call(worker.base, 'POST', '/v1/tasks', {
      json: {
        ...base,
        spec: { ...base.spec, input: { kind: 'slots', nslots: 2 }, pipeline: [],
          core: { op: 'join', how: 'inner', left_on: ['a'], right_on: ['a', 'b', 'c', 'd'] } },
        inputs: [[], []],
      },
      headers,
    });
    assert.ok(join.status >= 400 && join.status < 500, join.text);
    for (const core of [null, { op: 'union' }, { op: 'join', how: 'inner', left_on: [], right_on: [] },
      { op: 'merge', keys: [] }]) {
      const input = core ? { kind: 'slots', nslots: 2 } : { kind: 'stored' };
      const r = await call(worker.base, 'POST', '/v1/tasks', {
        json: { ...base, spec: { ...base.spec, input, core, pipeline: [] }, inputs: [] }, headers,
      });
      assert.ok(r.status >= 400 && r.status < 500, `${JSON.stringify(core)}: ${r.text}`);
    }
    const wide = Array.from({ length: 10001 }, (_, i) => ({ name: `c${i}`, col: 'a' }));
    const tooWide = await call(worker.base, 'POST', '/v1/tasks', {
      json: { ...base, spec: { ...base.spec, pipeline: [{ project: wide }] } }, headers,
    });
    assertProblem(tooWide, 422, 'too-many-columns');
    for (const ref of [{ url: 'file:///etc/passwd', id: 'p-00' }, { url: 'gopher://x', id: 'p-00' },
      { url: worker.base, id: '../../v1/info' }, { url: worker.base, id: 'p-zz?x=1' }]) {
      const r = await call(worker.base, 'POST', '/v1/tasks', {
        json: { ...base, spec: { ...base.spec, input: { kind: 'stored' } }, inputs: [[ref]] }, headers,
      });
      assertProblem(r, 400, 'invalid-task');
    }
    assert.equal((await call(worker.base, 'GET', '/livez')).status, 200);
  });
});
