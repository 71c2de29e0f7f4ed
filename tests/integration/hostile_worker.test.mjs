// hostile_worker: a catalogue against `framed worker` and the coordinator's
// cluster endpoint. Wrong methods and routes, missing or forged
// Framed-Config-Id, malformed task bodies, hostile task specs (buckets -1,
// unknown input kinds, files like /etc/passwd, negative slices, deep
// filters), hostile partitions served by a fake owner (truncated FRTB1, zero
// columns of 2^60 rows, lengths past the bytes), partition and config IDs
// with traversal, and forged worker announces. Each gets its problem; the
// worker stays up with the same partitions and configs.
import assert from 'node:assert/strict';
import { createServer } from 'node:http';
import { test } from 'node:test';
import { deepJson, json, problem, runGroup, send, Target } from './hostile_lib.mjs';

const INVALID_TASK = { ...problem(400, 'invalid-task'), alt: problem(400, 'invalid-plan') };
const INPUT_LOST = problem(424, 'input-lost');
const METHOD = problem(405, 'method-not-allowed');
const OTHER_ID = `sha256:${'b'.repeat(64)}`;

// ---- FRTB1, the partition wire format (src/engine/engine_serde.c) ----
const u32 = (n) => { const b = Buffer.alloc(4); b.writeUInt32LE(n); return b; };
const u64 = (n) => { const b = Buffer.alloc(8); b.writeBigUInt64LE(BigInt(n)); return b; };
const u8 = (n) => Buffer.from([n]);
const header = (ncols, nrows) => Buffer.concat([Buffer.from('FRTB1'), u32(ncols), u64(nrows)]);
const intColumn = (name, values, { type = 2, nulls = 0, flags = 0, nameLen } = {}) => Buffer.concat([
  u32(nameLen ?? Buffer.byteLength(name)), Buffer.from(name), u8(type), u64(nulls), u8(flags),
  ...values.map((v) => u64(v))]);
const strColumn = (name, offsets, data) => Buffer.concat([
  u32(Buffer.byteLength(name)), Buffer.from(name), u8(4), u64(0), u8(0), ...offsets.map((o) => u64(o)),
  u64(data.length), Buffer.from(data)]);
const goodTable = Buffer.concat([header(1, 2), intColumn('a', [1, 2])]);

const PARTITIONS = {
  'p-empty': Buffer.alloc(0),
  'p-magic-only': Buffer.from('FRTB1'),
  'p-wrong-magic': Buffer.concat([Buffer.from('FRTB9'), goodTable.subarray(5)]),
  'p-cut-header': goodTable.subarray(0, 9),
  'p-cut-values': goodTable.subarray(0, goodTable.length - 3),
  'p-zero-cols-2e60-rows': header(0, 2n ** 60n),
  'p-zero-cols-2e63-rows': header(0, 2n ** 63n - 1n),
  'p-2e32-cols': Buffer.concat([header(0xffffffff, 1), intColumn('a', [1])]),
  'p-rows-past-the-bytes': Buffer.concat([header(1, 2n ** 40n), intColumn('a', [1, 2])]),
  'p-type-99': Buffer.concat([header(1, 1), intColumn('a', [1], { type: 99 })]),
  'p-type-0': Buffer.concat([header(1, 1), intColumn('a', [1], { type: 0 })]),
  'p-flags-2': Buffer.concat([header(1, 1), intColumn('a', [1], { flags: 2 })]),
  'p-nulls-past-rows': Buffer.concat([header(1, 1), intColumn('a', [1], { nulls: 5 })]),
  'p-name-2e31': Buffer.concat([header(1, 1), intColumn('a', [1], { nameLen: 2 ** 31 })]),
  'p-trailing-bytes': Buffer.concat([goodTable, Buffer.from('junk')]),
  'p-offsets-decreasing': Buffer.concat([header(1, 2), strColumn('s', [0, 3, 1], 'abc')]),
  'p-offsets-past-data': Buffer.concat([header(1, 1), strColumn('s', [0, 1000], 'abc')]),
  'p-two-columns-one-name': Buffer.concat([header(2, 1), intColumn('a', [1]), intColumn('a', [2])]),
};

// The worker takes partition IDs as p-<hex> only (they go into a URL path),
// so each hostile partition is offered under a hex ID of its own; the label
// names it in the case.
const HTML_ID = 'p-0000f0';
const ERROR_ID = 'p-0000f1';
const partitionId = (label) => `p-${(Object.keys(PARTITIONS).indexOf(label) + 1).toString(16).padStart(6, '0')}`;
const BY_ID = Object.fromEntries(Object.entries(PARTITIONS).map(([label, bytes]) => [partitionId(label), bytes]));

// A fake owner: serves the hostile partitions, a 500, and HTML.
function fakeOwner() {
  const srv = createServer((req, res) => {
    const id = req.url.split('/').pop();
    if (BY_ID[id]) {
      res.writeHead(200, { 'content-type': 'application/vnd.framed.table', 'framed-config-id': req.headers['framed-config-id'] ?? '' });
      res.end(BY_ID[id]);
    } else if (id === HTML_ID) {
      res.writeHead(200, { 'content-type': 'text/html' });
      res.end('<html>hello</html>');
    } else {
      res.writeHead(500);
      res.end('no');
    }
  });
  return new Promise((resolve) => srv.listen(0, '127.0.0.1', () => resolve(srv)));
}

// A task as the planner makes them (plan_task_spec), with overrides.
function task(spec = {}, top = {}) {
  return {
    query_id: 'q-hostile', stage: 0, task: 0, attempt: 0,
    spec: {
      stage: 0, task: 0, input: { kind: 'rows', rows: [{ a: 1, b: 'x' }], hints: [] }, core: null,
      pipeline: [], sink: null, nbuckets: 1, ...spec,
    },
    inputs: [], ...top,
  };
}

function workerCases(cfg, ownerUrl) {
  const H = { 'framed-config-id': cfg };
  const post = (label, body, expect, headers = H) => json('POST', '/v1/tasks', typeof body === 'string' || Buffer.isBuffer(body) ? body : JSON.stringify(body), expect, { name: `task ${label}`, headers });
  const hp = (buckets) => ({ sink: { op: 'hash_partition', keys: ['a'], buckets }, nbuckets: typeof buckets === 'number' && buckets > 0 && buckets < 64 ? buckets : 1 });
  const stored = (id) => task({ input: { kind: 'stored' } }, { inputs: [[{ url: ownerUrl, id }]] });
  const fileInput = (p) => task({ input: { kind: 'file', path: p, format: 'csv', display: 'x.csv', options: { delimiter: ',', quote: '"', header: false, on_error_null: false }, hints: [], schema: [], columns: null, range: [0, 1 << 20, 1], max_rows: -1 } });
  const cases = [];
  const routes = { '/v1/tasks': ['POST'], '/v1/partitions/p-x': ['GET', 'DELETE'], '/v1/results/p-x': ['GET'], [`/v1/configs/${OTHER_ID}`]: ['DELETE'], '/livez': ['GET'], '/readyz': ['GET'], '/metrics': ['GET'], '/v1/info': ['GET'] };
  for (const [p, allowed] of Object.entries(routes)) {
    for (const m of ['GET', 'POST', 'PUT', 'DELETE', 'PATCH'].filter((x) => !allowed.includes(x))) {
      cases.push(json(m, p, m === 'GET' ? undefined : '{}', METHOD, { name: `${m} ${p}`, headers: H }));
    }
  }
  for (const p of ['/v1/config', '/v1/dataframes', '/v1/datasets', '/v1/workers', '/v1/tasks/', '/v1/partitions', '/v1/tasks/../config']) {
    cases.push({ name: `GET ${p} on a worker`, method: 'GET', path: p, expect: problem(404, 'not-found') });
  }
  const missing = problem(400, 'missing-config-id');
  for (const [label, h] of [['no header', {}], ['empty', { 'framed-config-id': '' }], ['upper-case hex', { 'framed-config-id': cfg.toUpperCase() }],
    ['md5 scheme', { 'framed-config-id': `md5:${'a'.repeat(32)}` }], ['traversal', { 'framed-config-id': 'sha256:../../../../etc/passwd' }],
    ['63 hex digits', { 'framed-config-id': cfg.slice(0, -1) }], ['65 hex digits', { 'framed-config-id': `${cfg}a` }],
    ['10 KB', { 'framed-config-id': `sha256:${'a'.repeat(10000)}` }]]) {
    cases.push(post(`config ID ${label}`, task(), missing, { 'content-type': 'application/json', ...h }));
    cases.push({ name: `GET partition, config ID ${label}`, method: 'GET', path: '/v1/partitions/p-x', headers: h, expect: missing });
  }
  for (const ct of ['text/plain', 'application/jsonx', 'application/x-ndjson']) {
    cases.push(post(`as ${ct}`, task(), problem(415, 'unsupported-media-type'), { ...H, 'content-type': ct }));
  }
  for (const [label, body] of [['empty', ''], ['cut', '{"spec":'], ['trailing comma', '{"a":1,}'], ['NaN', '{"stage":NaN}'],
    ['2^63', '{"stage":9223372036854775808}'], ['NUL', Buffer.from('{"a":1}\0')], ['invalid UTF-8', Buffer.from([0x7b, 0x22, 0xff, 0x22, 0x3a, 0x31, 0x7d])],
    ['10,000 nested arrays', deepJson(10000)], ['10,000 nested objects', deepJson(10000, 'object')], ['duplicate keys', '{"spec":{},"spec":{}}']]) {
    cases.push(post(`body ${label}`, body, problem(400, 'invalid-json')));
  }
  const specCases = [
    ['without a spec', { ...task(), spec: undefined }], ['spec a string', { ...task(), spec: 'x' }], ['spec an array', { ...task(), spec: [] }],
    ['inputs a string', task({}, { inputs: 'x' })], ['inputs of numbers', task({}, { inputs: [[1]] })],
    ['9 input slots', task({}, { inputs: Array.from({ length: 9 }, () => []) })], ['an input without url', task({}, { inputs: [[{ id: 'p-1' }]] })],
    ['input without kind', task({ input: {} })], ['input kind nope', task({ input: { kind: 'nope' } })], ['input kind 5', task({ input: { kind: 5 } })],
    ['input null', task({ input: null })], ['rows a string', task({ input: { kind: 'rows', rows: 'x', hints: [] } })],
    ['rows of arrays', task({ input: { kind: 'rows', rows: [[1]], hints: [] } })],
    ['hash_partition buckets -1', task(hp(-1))], ['hash_partition buckets 0', task(hp(0))], ['hash_partition buckets 2^31', task(hp(2 ** 31))],
    ['hash_partition buckets 1e9', task(hp(1e9))], ['hash_partition buckets "4"', task(hp('4'))], ['hash_partition buckets 2^63-1', task(hp('9223372036854775807'))],
    ['hash_partition keys a string', task({ sink: { op: 'hash_partition', keys: 'a', buckets: 2 }, nbuckets: 2 })],
    ['hash_partition on an unknown key', task({ sink: { op: 'hash_partition', keys: ['zz'], buckets: 2 }, nbuckets: 2 })],
    ['range_partition without boundaries', task({ sink: { op: 'range_partition', keys: ['a'], buckets: 2 }, nbuckets: 2 })],
    ['partial_agg buckets -1', task({ sink: { op: 'partial_agg', keys: ['a'], aggs: ['count(*)'], buckets: -1 } })],
    ['sort_sample of -1', task({ sink: { op: 'sort_sample', keys: ['a'], sample: -1 }, nbuckets: 2 })],
    ['an unknown sink op', task({ sink: { op: 'explode' } })], ['nbuckets -1', task({ nbuckets: -1 })], ['nbuckets 1e9', task({ nbuckets: 1e9 })],
    ['pipeline a string', task({ pipeline: 'x' })], ['an unknown pipeline op', task({ pipeline: [{ nope: 1 }] })],
    ['a filter of 5', task({ pipeline: [{ filter: 5 }] })],
    ['slice offset -1', task({ pipeline: [{ slice: { offset: -1, limit: 1 } }] })], ['slice limit -5', task({ pipeline: [{ slice: { offset: 0, limit: -5 } }] })],
    ['project not a list', task({ pipeline: [{ project: 'a' }] })], ['project of an unknown column', task({ pipeline: [{ project: [{ col: 'zz', name: 'zz' }] }] })],
    ['an unknown core op', task({ core: { op: 'explode' } })], ['merge without keys', task({ core: { op: 'merge' }, input: { kind: 'slots', nslots: 1 } })],
    ['slots -1', task({ input: { kind: 'slots', nslots: -1 }, core: { op: 'concat' } })],
    ['config_inline a number', task({}, { config_inline: 5 })],
    ['stage -1', task({}, { stage: -1 })], ['attempt "x"', task({}, { attempt: 'x' })], ['query_id 5', task({}, { query_id: 5 })],
    ['an unknown member', task({}, { evil: true })],
  ];
  for (const [label, body] of specCases) cases.push(post(label, body, INVALID_TASK));
  // The planner passes any non-negative offset and limit of a plan through
  // (plan_logical.c), so offset and limit 2^62 are a valid spec: the task runs
  // without overflowing offset + limit and keeps no row. Its partition is
  // released so that the worker's state is the one before the case.
  cases.push({
    ...post('slice offset 2^62', task({ pipeline: [{ slice: { offset: 2 ** 62, limit: 2 ** 62 } }] }), { status: 200, problem: false }),
    check: async (r, target) => {
      assert.equal(r.body?.outputs?.length, 1, r.text);
      assert.equal(r.body.outputs[0].rows, 0, r.text);
      const d = await send(target.base, { method: 'DELETE', path: `/v1/partitions/${r.body.outputs[0].id}`, headers: H });
      assert.equal(d.status, 204, d.text);
    },
  });
  cases.push(post('a filter of 10,000 parentheses', task({ pipeline: [{ filter: `${'('.repeat(10000)}a${')'.repeat(10000)} > 0` }] }), { ...problem(400, 'invalid-expression'), alt: INVALID_TASK.alt }));
  cases.push(post('a filter that does not parse', task({ pipeline: [{ filter: 'a >>> 1' }] }), { ...problem(400, 'invalid-expression'), alt: INVALID_TASK.alt }));
  cases.push(post('rows of 10,001 columns', task({ input: { kind: 'rows', rows: [Object.fromEntries(Array.from({ length: 10001 }, (_, i) => [`c${i}`, i]))], hints: [] } }), problem(422, 'too-many-columns')));
  cases.push(post('config_inline that does not hash to the ID', task({}, { config_inline: '{"shuffle_partitions":1}' }), problem(409, 'config-integrity')));
  const fileExpect = { status: [400, 403, 404], type: null };
  for (const p of ['/etc/passwd', '/proc/self/environ', '../../../../../../etc/passwd', '/etc/shadow', '/dev/zero', '/proc/self/fd/0']) {
    cases.push(post(`file input ${p}`, fileInput(p), fileExpect));
  }
  for (const label of Object.keys(PARTITIONS)) cases.push(post(`partition ${label}`, stored(partitionId(label)), INPUT_LOST));
  cases.push(post('partition answered with HTML', stored(HTML_ID), INPUT_LOST));
  cases.push(post('partition answered 500', stored(ERROR_ID), INPUT_LOST));
  cases.push(post('zero columns of 2^60 rows, then project', task({ input: { kind: 'stored' }, pipeline: [{ project: [{ expr: '1', name: 'one' }] }] }, { inputs: [[{ url: ownerUrl, id: partitionId('p-zero-cols-2e60-rows') }]] }), INPUT_LOST));
  cases.push(post('a partition ID that is not p-<hex>', stored('p-zero-cols-2e60-rows'), problem(400, 'invalid-task')));
  for (const url of ['file:///etc/passwd', 'gopher://127.0.0.1:1/', 'http://127.0.0.1:1', 'not a url', `${ownerUrl}/../../`]) {
    cases.push(post(`an input at ${url}`, task({ input: { kind: 'stored' } }, { inputs: [[{ url, id: 'p-x' }]] }), { ...INPUT_LOST, alt: problem(400, 'invalid-task') }));
  }
  const notFound = problem(404, 'partition-not-found');
  for (const id of ['p-nope', 'p-%00', '%2e%2e', '..%2f..%2fetc%2fpasswd', 'x'.repeat(5000)]) {
    // An encoded NUL anywhere in the target is 400 for every route (the request layer).
    const expect = id.includes('%00') ? problem(400, 'invalid-parameter')
      : /%2f/i.test(id) ? { ...notFound, alt: problem(404, 'not-found') } : notFound;
    cases.push({ name: `GET partition ${id.slice(0, 24)}`, method: 'GET', path: `/v1/partitions/${id}`, headers: H, expect });
    cases.push({ name: `DELETE partition ${id.slice(0, 24)}`, method: 'DELETE', path: `/v1/partitions/${id}`, headers: H, expect });
  }
  for (const id of ['not-an-id', `sha256:${'A'.repeat(64)}`, `${cfg}%00`, 'sha256:..%2f..%2f', `${cfg}x`]) {
    const expect = /%2f/i.test(id) ? { ...problem(400, 'invalid-parameter'), alt: problem(404, 'not-found') } : problem(400, 'invalid-parameter');
    cases.push({ name: `DELETE config ${id.slice(0, 24)}`, method: 'DELETE', path: `/v1/configs/${id}`, expect });
  }
  return cases;
}

// What a worker holds: its partitions and its configs.
async function workerState(t) {
  const r = await send(t.base, { method: 'GET', path: '/v1/info' });
  return `${r.status} partitions=${r.body?.partitions} configs=${JSON.stringify(r.body?.config_ids)} running=${r.body?.running_tasks}`;
}

// What a coordinator knows of its workers. The live worker's heartbeats
// change its own running_tasks and config_ids whenever they arrive, so of it
// only the ID and URL count (a forged announce must not take them over).
const workersState = (liveUrl) => async (t) => {
  const r = await send(t.base, { method: 'GET', path: '/v1/workers' });
  return JSON.stringify((r.body?.workers ?? []).map((w) => (w.url === liveUrl
    ? [w.id, w.url] : [w.id, w.url, w.threads, w.running_tasks, w.config_ids])));
};

function announceCases() {
  const w = (over) => JSON.stringify({ id: 'w-hostile', url: 'http://127.0.0.1:9', threads: 2, running_tasks: 0, config_ids: [], ...over });
  const bad = problem(422, 'validation-failed');
  const a = (label, body, expect = bad) => json('POST', '/v1/workers', body, expect, { name: `announce ${label}` });
  return [
    a('threads 3e9', w({ threads: 3000000000 })), a('threads -1', w({ threads: -1 })), a('threads 0', w({ threads: 0 })),
    a('threads 1.5', w({ threads: 1.5 })), a('threads "2"', w({ threads: '2' })), a('threads 2^63-1', w({ threads: 9223372036854775807n.toString() }).replace('"9223372036854775807"', '9223372036854775807')),
    a('running_tasks "x"', w({ running_tasks: 'x' })), a('running_tasks -1', w({ running_tasks: -1 })),
    a('config_ids [1]', w({ config_ids: [1] })), a('config_ids "x"', w({ config_ids: 'x' })), a('config_ids of bad IDs', w({ config_ids: ['sha256:zz'] })),
    a('url ftp', w({ url: 'ftp://127.0.0.1:9' })), a('url empty', w({ url: '' })), a('url 100 KB', w({ url: `http://${'a'.repeat(100000)}` }), problem(413, 'payload-too-large')),
    a('url with a path', w({ url: 'http://127.0.0.1:9/../../x' })),
    a('id empty', w({ id: '' })), a('id 10 KB', w({ id: `w-${'a'.repeat(10000)}` })), a('id with a slash', w({ id: 'w-../../x' })),
    a('an array', '[]'), a('no id', JSON.stringify({ url: 'http://127.0.0.1:9', threads: 2 })),
    a('id with an escaped NUL', w({ id: 'w-\u0000' }), { ...problem(400, 'invalid-json'), alt: bad.alt }),
    a('cut JSON', '{"id":', problem(400, 'invalid-json')),
  ];
}

test('hostile requests to a worker and to the cluster endpoint', async (t) => {
  const owner = await fakeOwner();
  const ownerUrl = `http://127.0.0.1:${owner.address().port}`;
  const coordinator = await new Target('serve').start();
  let cfg;
  // The worker ran one good task: its config is cached and one partition held.
  const setup = async (target) => {
    const r = await send(target.base, { method: 'POST', path: '/v1/tasks', headers: { 'content-type': 'application/json', 'framed-config-id': cfg }, body: JSON.stringify(task()) });
    assert.equal(r.status, 200, r.text);
  };
  let worker;
  try {
    const df = await send(coordinator.base, { method: 'POST', path: '/v1/dataframes', headers: { 'content-type': 'application/json' }, body: '{"source":{"rows":[{"a":1}]}}' });
    assert.equal(df.status, 201, df.text);
    cfg = df.body.config_id;
    worker = await new Target('worker', { coordinator: () => coordinator.base, setup }).start();
    await runGroup(t, worker, 'worker: hostile requests, specs and partitions', workerCases(cfg, ownerUrl), workerState);
    await runGroup(t, coordinator, 'coordinator: forged worker announces', announceCases(), workersState(worker.base));
  } finally {
    await worker?.stop();
    await coordinator.stop();
    owner.close();
  }
});
