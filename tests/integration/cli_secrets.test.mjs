// cli_secrets: both roles take each secret one way: its file flag, its
// FRAMED_*_FILE variable or its plain FRAMED_* variable (a flag wins over its
// variables; both variables set is an error naming both); a missing or empty
// file stops the start with exit code 1 naming the file and the secret. Also:
// misspelt FRAMED_* variables are warned about, a server beyond loopback says
// what is open, and a coordinator with --cluster-secret-file runs queries on a
// worker whose secret comes from FRAMED_CLUSTER_SECRET_FILE.
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { existsSync, mkdirSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { test } from 'node:test';
import { call, runToExit, SAMPLE_PLAN, startServer, startWorker, tempRoot } from './lib.mjs';

const dir = tempRoot();
function secretFile(name, text) {
  const f = path.join(dir, name);
  writeFileSync(f, text);
  return f;
}
const bearer = (t) => ({ authorization: `Bearer ${t}` });

// Each secret of serve, with a probe: is the secret `value` in force?
const SERVE_SECRETS = [
  {
    what: 'admin token', flag: '--admin-token-file', env: 'FRAMED_ADMIN_TOKEN',
    async inForce(base, value) {
      const open = await call(base, 'POST', '/v1/config', { json: { shuffle_partitions: 3 } });
      const ok = await call(base, 'POST', '/v1/config', { json: { shuffle_partitions: 3 }, headers: bearer(value) });
      return open.status === 401 && ok.status === 200;
    },
  },
  {
    what: 'data token', flag: '--data-token-file', env: 'FRAMED_DATA_TOKEN',
    async inForce(base, value) {
      const open = await call(base, 'POST', '/v1/dataframes', { json: SAMPLE_PLAN });
      const ok = await call(base, 'POST', '/v1/dataframes', { json: SAMPLE_PLAN, headers: bearer(value) });
      return open.status === 401 && ok.status === 201;
    },
  },
  {
    what: 'cluster secret', flag: '--cluster-secret-file', env: 'FRAMED_CLUSTER_SECRET',
    // Unsigned announces are refused only when a cluster secret is set.
    async inForce(base) {
      const r = await call(base, 'POST', '/v1/workers', { json: { id: 'w-probe', url: 'http://127.0.0.1:1', threads: 1 } });
      return r.status === 401;
    },
  },
];

for (const s of SERVE_SECRETS) {
  test(`serve takes the ${s.what} from ${s.flag}, ${s.env}_FILE or ${s.env}`, async () => {
    const value = `value-of-${s.env.toLowerCase()}`;
    const file = secretFile(`${s.env}.txt`, `  ${value}\n`);
    const other = secretFile(`${s.env}.other`, 'some-other-value\n');
    const ways = [
      { name: 'the flag', args: [s.flag, file], env: {} },
      { name: 'the file variable', args: [], env: { [`${s.env}_FILE`]: file } },
      { name: 'the plain variable', args: [], env: { [s.env]: value } },
      { name: 'the flag over a bad file variable', args: [s.flag, file], env: { [`${s.env}_FILE`]: '/nonexistent' } },
      { name: 'the flag over the plain variable', args: [s.flag, file], env: { [s.env]: 'not-this' } },
    ];
    for (const way of ways) {
      const srv = await startServer({ args: way.args, env: way.env });
      try {
        assert.ok(await s.inForce(srv.base, value), `${s.what} from ${way.name}`);
      } finally {
        await srv.stop();
      }
      assert.ok(!srv.stderr().includes(value), `the ${s.what} is in the log`);
    }
    // Without any, the secret is not in force.
    const none = await startServer();
    try {
      assert.equal(await s.inForce(none.base, value), false);
    } finally {
      await none.stop();
    }
    // Both variables: an error naming both.
    let r = await runToExit(['serve', '--port', '0'], { [`${s.env}_FILE`]: other, [s.env]: value });
    assert.equal(r.code, 2, r.stderr);
    assert.ok(r.stderr.includes(`${s.env}_FILE`) && r.stderr.includes(`${s.env} `), r.stderr);
    assert.equal(r.listened, false);
  });

  test(`serve stops on a bad ${s.what} file, naming the file and the secret`, async () => {
    const empty = secretFile(`${s.env}.empty`, ' \n\n');
    const fifo = path.join(dir, `${s.env}.fifo`);
    if (!existsSync(fifo)) execFileSync('mkfifo', [fifo]);
    const big = secretFile(`${s.env}.big`, 'x'.repeat(1 << 20));
    const cases = [
      { args: [s.flag, '/nonexistent/secret'], env: {}, file: '/nonexistent/secret', source: s.flag },
      { args: [], env: { [`${s.env}_FILE`]: '/nonexistent/secret' }, file: '/nonexistent/secret', source: `${s.env}_FILE` },
      { args: [s.flag, empty], env: {}, file: empty, source: s.flag, why: /empty/ },
      { args: [s.flag, dir], env: {}, file: dir, source: s.flag, why: /not a regular file/ },
      // Bounded: a device or a FIFO stops the start at once (no endless read,
      // no open blocked with the stop signals masked), a long file too.
      { args: [s.flag, '/dev/zero'], env: {}, file: '/dev/zero', source: s.flag, why: /not a regular file/ },
      { args: [], env: { [`${s.env}_FILE`]: '/dev/zero' }, file: '/dev/zero', source: `${s.env}_FILE` },
      { args: [s.flag, fifo], env: {}, file: fifo, source: s.flag, why: /not a regular file/ },
      { args: [s.flag, big], env: {}, file: big, source: s.flag, why: /longer than the limit of 4096 bytes/ },
    ];
    for (const c of cases) {
      const root = tempRoot();
      const r = await runToExit(['serve', '--port', '0', '--state-dir', path.join(root, 's'),
        '--data-dir', path.join(root, 'd'), ...c.args], c.env);
      assert.equal(r.signal, null, `${c.file}: killed after the start timeout, not stopped by itself`);
      assert.equal(r.code, 1, r.stderr);
      assert.equal(r.listened, false);
      assert.ok(r.stderr.includes(`the ${s.what} file ${c.file}`), r.stderr);
      assert.ok(r.stderr.includes(c.source), r.stderr);
      for (const o of SERVE_SECRETS.filter((x) => x !== s)) assert.ok(!r.stderr.includes(o.what), r.stderr);
      if (c.why) assert.match(r.stderr, c.why);
    }
  });
}

test('worker takes the cluster secret from the flag, FRAMED_CLUSTER_SECRET_FILE or FRAMED_CLUSTER_SECRET', async () => {
  const value = 'worker-cluster-secret';
  const file = secretFile('worker.secret', `${value}\n`);
  const ways = [
    { args: ['--cluster-secret-file', file], env: {} },
    { args: [], env: { FRAMED_CLUSTER_SECRET_FILE: file } },
    { args: [], env: { FRAMED_CLUSTER_SECRET: value } },
    { args: ['--cluster-secret-file', file], env: { FRAMED_CLUSTER_SECRET_FILE: '/nonexistent' } },
  ];
  for (const way of ways) {
    const w = await startWorker('http://127.0.0.1:9', way);
    try {
      assert.equal((await call(w.base, 'GET', '/v1/info')).status, 401, JSON.stringify(way));
    } finally {
      await w.stop();
    }
    assert.ok(!w.stderr().includes(value));
  }
  let r = await runToExit(['worker', '--port', '0', '--coordinator', 'http://127.0.0.1:9',
    '--cluster-secret-file', '/nonexistent/secret']);
  assert.equal(r.code, 1, r.stderr);
  assert.ok(r.stderr.includes('the cluster secret file /nonexistent/secret (--cluster-secret-file)'), r.stderr);
  r = await runToExit(['worker', '--port', '0', '--coordinator', 'http://127.0.0.1:9'],
    { FRAMED_CLUSTER_SECRET_FILE: '/nonexistent/secret' });
  assert.equal(r.code, 1, r.stderr);
  assert.ok(r.stderr.includes('the cluster secret file /nonexistent/secret (FRAMED_CLUSTER_SECRET_FILE)'), r.stderr);
  const fifo = path.join(dir, 'worker.fifo');
  if (!existsSync(fifo)) execFileSync('mkfifo', [fifo]);
  for (const bad of ['/dev/zero', fifo, dir, secretFile('worker.big', 'y'.repeat(1 << 20))]) {
    r = await runToExit(['worker', '--port', '0', '--coordinator', 'http://127.0.0.1:9'],
      { FRAMED_CLUSTER_SECRET_FILE: bad });
    assert.equal(r.signal, null, `${bad}: killed after the start timeout, not stopped by itself`);
    assert.equal(r.code, 1, r.stderr);
    assert.ok(r.stderr.includes(`the cluster secret file ${bad} (FRAMED_CLUSTER_SECRET_FILE)`), r.stderr);
  }
  r = await runToExit(['worker', '--port', '0', '--coordinator', 'http://127.0.0.1:9'],
    { FRAMED_CLUSTER_SECRET_FILE: file, FRAMED_CLUSTER_SECRET: value });
  assert.equal(r.code, 2, r.stderr);
  assert.match(r.stderr, /FRAMED_CLUSTER_SECRET_FILE and FRAMED_CLUSTER_SECRET /);
});

test('worker warns that the serve-only secret variables do not apply to it, by name only', async () => {
  const admin = secretFile('w-admin.txt', 'admin-secret-value\n');
  const data = secretFile('w-data.txt', 'data-secret-value\n');
  const env = {
    FRAMED_ADMIN_TOKEN_FILE: admin, FRAMED_DATA_TOKEN_FILE: data,
    FRAMED_ADMIN_TOKEN: 'plain-admin-value', FRAMED_DATA_TOKEN: 'plain-data-value',
  };
  const w = await startWorker('http://127.0.0.1:9', { env });
  await w.stop();
  const log = w.stderr();
  for (const v of Object.keys(env)) {
    assert.match(log, new RegExp(`${v} is ignored: the (admin|data) token applies only to serve`), log);
  }
  for (const v of ['admin-secret-value', 'data-secret-value', 'plain-admin-value', 'plain-data-value', admin, data]) {
    assert.ok(!log.includes(v), `${v} in the worker log`);
  }
  // serve takes them: no such warning there.
  const srv = await startServer({ env: { FRAMED_ADMIN_TOKEN: 'x-admin' } });
  await srv.stop();
  assert.ok(!srv.stderr().includes('applies only to serve'), srv.stderr());
});

test('a misspelt FRAMED_* variable is warned about at start, by name only', async () => {
  const srv = await startServer({ env: { FRAMED_ADMN_TOKEN: 'hush-hush-value', FRAMED_XYZZY_PLUGH_QUUX: '1' } });
  await srv.stop();
  const warn = srv.logLines().filter((l) => l.level === 'warn' && /unknown variable/.test(l.msg));
  assert.ok(warn.some((l) => l.msg.includes('FRAMED_ADMN_TOKEN') && l.msg.includes('did you mean FRAMED_ADMIN_TOKEN?')),
    srv.stderr());
  assert.ok(warn.some((l) => l.msg.includes('FRAMED_XYZZY_PLUGH_QUUX') && !l.msg.includes('did you mean')), srv.stderr());
  assert.ok(!srv.stderr().includes('hush-hush-value'));
  // Known names and FRAMED_CONFIG_* (config_env's) are not reported.
  const ok = await startServer({ env: { FRAMED_LOG_LEVEL: 'info', FRAMED_CONFIG_SHUFFLE_PARTITIONS: '4' } });
  await ok.stop();
  assert.ok(!/unknown variable/.test(ok.stderr()), ok.stderr());
  const w = await startWorker('http://127.0.0.1:9', { env: { FRAMED_CORDINATOR: 'x' } });
  await w.stop();
  assert.ok(w.logLines().some((l) => l.level === 'warn' && l.msg.includes('FRAMED_CORDINATOR')
    && l.msg.includes('FRAMED_COORDINATOR')), w.stderr());
});

test('serve or worker beyond loopback without tokens or a cluster secret says what is open', async () => {
  const open = await startServer({ args: ['--listen', '0.0.0.0', '--runner', 'remote'] });
  await open.stop();
  const warns = open.logLines().filter((l) => l.level === 'warn').map((l) => l.msg);
  assert.ok(warns.some((m) => /without an admin or data token: anyone who reaches it can change the config/.test(m)), open.stderr());
  assert.ok(warns.some((m) => /without a cluster secret: cluster calls are unsigned/.test(m)), open.stderr());
  const closed = await startServer({
    args: ['--listen', '0.0.0.0', '--runner', 'remote'],
    env: { FRAMED_ADMIN_TOKEN: 'a-token', FRAMED_DATA_TOKEN: 'd-token', FRAMED_CLUSTER_SECRET: 'c-secret' },
  });
  await closed.stop();
  assert.ok(!closed.logLines().some((l) => l.level === 'warn' && /listening on/.test(l.msg)), closed.stderr());
  const w = await startWorker('http://127.0.0.1:9', { args: ['--listen', '0.0.0.0', '--insecure'] });
  await w.stop();
  assert.ok(w.logLines().some((l) => l.level === 'warn' && /anyone who reaches this port can run tasks \(POST \/v1\/tasks\)/.test(l.msg)),
    w.stderr());
  const loop = await startServer();
  await loop.stop();
  assert.ok(!loop.logLines().some((l) => l.level === 'warn' && /listening on/.test(l.msg)), loop.stderr());
});

async function activeWorkers(base) {
  const r = await call(base, 'GET', '/v1/workers');
  return r.status === 200 ? r.body.workers.filter((w) => w.state === 'active').length : 0;
}

test('--cluster-secret-file on the coordinator and FRAMED_CLUSTER_SECRET_FILE on the worker: queries run', async () => {
  const file = secretFile('cluster.secret', 'one shared cluster secret\n');
  const wrong = secretFile('wrong.secret', 'not the same secret\n');
  const coord = await startServer({ args: ['--runner', 'remote', '--cluster-secret-file', file] });
  const workers = [];
  try {
    mkdirSync(coord.dataDir, { recursive: true });
    writeFileSync(path.join(coord.dataDir, 't.csv'), 'a,b\n1,x\n2,y\n3,z\n');
    workers.push(await startWorker(coord.base, { args: ['--data-dir', coord.dataDir], env: { FRAMED_CLUSTER_SECRET_FILE: file } }));
    while (await activeWorkers(coord.base) < 1) await new Promise((r) => setTimeout(r, 50));
    const q = await call(coord.base, 'POST', '/v1/queries?wait=60', {
      json: { plan: { source: { dataset: 't' }, ops: [{ where: 'a > 1' }] } },
    });
    assert.equal(q.status, 200, q.text);
    assert.equal(q.body.state, 'succeeded', q.text);
    const res = await call(coord.base, 'GET', `/v1/queries/${q.body.id}/result`);
    assert.equal(res.body.rows.length, 2, res.text);

    // A worker with another secret is refused at its announce, and says so.
    const bad = await startWorker(coord.base, { env: { FRAMED_CLUSTER_SECRET_FILE: wrong } });
    workers.push(bad);
    while (!/the coordinator answered 401/.test(bad.stderr())) await new Promise((r) => setTimeout(r, 50));
    const list = await call(coord.base, 'GET', '/v1/workers');
    assert.equal(list.body.workers.length, 1, list.text);
    assert.ok(/"path":"\/v1\/workers","status":401/.test(coord.stderr()));
  } finally {
    for (const w of workers) await w.stop();
    await coord.stop();
  }
});
