// auth: with an admin token, state-changing requests need it as a bearer
// token (401 otherwise); reads stay open; the token never shows up in the
// server's log or in any response.
import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import { rmSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { test } from 'node:test';
import { assertProblem, call, SAMPLE_PLAN, startServer, tempRoot } from './lib.mjs';

function recorder(base) {
  const texts = [];
  return {
    texts,
    async call(method, urlPath, opts) {
      const r = await call(base, method, urlPath, opts);
      texts.push(r.text, JSON.stringify([...r.headers]));
      return r;
    },
  };
}

test('the admin token guards state changes only', async () => {
  const token = randomBytes(16).toString('hex');
  const srv = await startServer({ env: { FRAMED_ADMIN_TOKEN: token } });
  const api = recorder(srv.base);
  const bearer = (t) => ({ authorization: `Bearer ${t}` });
  try {
    let r = await api.call('POST', '/v1/config', { json: { shuffle_partitions: 3 } });
    assertProblem(r, 401, 'unauthorized');
    assert.match(r.headers.get('www-authenticate'), /^Bearer/);
    for (const headers of [bearer('wrong'), bearer(`${token}x`), bearer(token.slice(1)),
      { authorization: `Basic ${token}` }, { authorization: token }]) {
      r = await api.call('POST', '/v1/config', { json: { shuffle_partitions: 3 }, headers });
      assertProblem(r, 401, 'unauthorized');
    }
    assert.equal((await api.call('GET', '/v1/config')).body.values.shuffle_partitions, 8);

    r = await api.call('POST', '/v1/config', { json: { shuffle_partitions: 3 }, headers: bearer(token) });
    assert.equal(r.status, 200, r.text);
    assert.equal(r.body.values.shuffle_partitions, 3);

    for (const p of ['/v1/config', '/v1/runner', '/v1/info', '/metrics', '/v1/datasets', '/livez']) {
      assert.equal((await api.call('GET', p)).status, 200, p);
    }
    // Dataframes are not admin operations.
    r = await api.call('POST', '/v1/dataframes', { json: SAMPLE_PLAN });
    assert.equal(r.status, 201, r.text);

    assertProblem(await api.call('DELETE', '/v1/runner'), 401, 'unauthorized');
    assertProblem(await api.call('PUT', '/v1/datasets/t', {
      body: 'a,b\n1,2\n', headers: { 'content-type': 'text/csv' },
    }), 401, 'unauthorized');
    assertProblem(await api.call('DELETE', '/v1/datasets/t'), 401, 'unauthorized');
    r = await api.call('DELETE', '/v1/runner', { headers: bearer(token) });
    assert.equal(r.status, 200, r.text);
  } finally {
    await srv.stop();
  }
  assert.ok(!srv.stderr().includes(token), 'the token is in the server log');
  for (const text of api.texts) assert.ok(!text.includes(token), 'the token is in a response');
});

test('--admin-token-file is read and trimmed', async () => {
  const token = randomBytes(16).toString('hex');
  const root = tempRoot();
  const file = path.join(root, 'token');
  writeFileSync(file, `${token}\n`);
  const srv = await startServer({ args: ['--admin-token-file', file] });
  try {
    let r = await call(srv.base, 'POST', '/v1/config', { json: { shuffle_partitions: 3 } });
    assertProblem(r, 401, 'unauthorized');
    r = await call(srv.base, 'POST', '/v1/config', {
      json: { shuffle_partitions: 3 }, headers: { authorization: `Bearer ${token}` },
    });
    assert.equal(r.status, 200, r.text);
  } finally {
    await srv.stop();
    rmSync(root, { recursive: true, force: true });
  }
  assert.ok(!srv.stderr().includes(token));
});

test('the data token guards the data endpoints, so nobody else can freeze the config', async () => {
  const admin = randomBytes(16).toString('hex');
  const data = randomBytes(16).toString('hex');
  const root = tempRoot();
  const file = path.join(root, 'data-token');
  writeFileSync(file, `${data}\n`);
  const srv = await startServer({ root, env: { FRAMED_ADMIN_TOKEN: admin }, args: ['--data-token-file', file] });
  const api = recorder(srv.base);
  const bearer = (t) => ({ authorization: `Bearer ${t}` });
  try {
    // Without a token (or with a wrong one), no data endpoint answers and the
    // config stays unfrozen.
    for (const headers of [{}, bearer('wrong'), bearer(`${data}x`), { authorization: data }]) {
      assertProblem(await api.call('POST', '/v1/dataframes', { json: SAMPLE_PLAN, headers }), 401, 'unauthorized');
      assertProblem(await api.call('POST', '/v1/queries', { json: { plan: SAMPLE_PLAN }, headers }), 401, 'unauthorized');
      for (const p of ['/v1/datasets', '/v1/datasets/t', '/v1/dataframes/x', '/v1/queries/x', '/v1/queries/x/result', '/v1/queries/x/result/locations']) {
        assertProblem(await api.call('GET', p, { headers }), 401, 'unauthorized');
      }
      assertProblem(await api.call('DELETE', '/v1/queries/x/result', { headers }), 401, 'unauthorized');
      // With both tokens set, the other reads need a token too.
      for (const p of ['/v1/config', '/v1/runner', '/v1/info', '/metrics', '/v1/workers', '/v1/config/schema']) {
        assertProblem(await api.call('GET', p, { headers }), 401, 'unauthorized');
      }
    }
    let r = await api.call('GET', '/v1/config', { headers: bearer(admin) });
    assert.equal(r.body.locked, false);
    // The probes stay open for the platform's health checks.
    assert.equal((await api.call('GET', '/livez')).status, 200);
    assert.equal((await api.call('GET', '/readyz')).status, 200);

    // The data token opens the data endpoints and the reads, not config changes.
    r = await api.call('POST', '/v1/dataframes', { json: SAMPLE_PLAN, headers: bearer(data) });
    assert.equal(r.status, 201, r.text);
    r = await api.call('POST', '/v1/queries?wait=30', { json: { dataframe: r.body.id }, headers: bearer(data) });
    assert.equal(r.status, 200, r.text);
    r = await api.call('GET', `/v1/queries/${r.body.id}/result`, { headers: bearer(data) });
    assert.equal(r.status, 200, r.text);
    assert.equal((await api.call('GET', '/v1/datasets', { headers: bearer(data) })).status, 200);
    assert.equal((await api.call('GET', '/v1/config', { headers: bearer(data) })).status, 200);
    assertProblem(await api.call('DELETE', '/v1/runner', { headers: bearer(data) }), 401, 'unauthorized');
    assertProblem(await api.call('PUT', '/v1/datasets/t', {
      body: 'a,b\n1,2\n', headers: { 'content-type': 'text/csv', ...bearer(data) },
    }), 401, 'unauthorized');

    // The admin token is accepted on data endpoints too.
    r = await api.call('POST', '/v1/dataframes', { json: SAMPLE_PLAN, headers: bearer(admin) });
    assert.equal(r.status, 201, r.text);
    r = await api.call('DELETE', '/v1/runner', { headers: bearer(admin) });
    assert.equal(r.status, 200, r.text);
  } finally {
    await srv.stop();
    rmSync(root, { recursive: true, force: true });
  }
  for (const t of [admin, data]) {
    assert.ok(!srv.stderr().includes(t), 'a token is in the server log');
    for (const text of api.texts) assert.ok(!text.includes(t), 'a token is in a response');
  }
});

test('FRAMED_DATA_TOKEN alone closes the data endpoints and state changes, reads stay open', async () => {
  const data = randomBytes(16).toString('hex');
  const srv = await startServer({ env: { FRAMED_DATA_TOKEN: data } });
  const bearer = { authorization: `Bearer ${data}` };
  try {
    assertProblem(await call(srv.base, 'POST', '/v1/dataframes', { json: SAMPLE_PLAN }), 401, 'unauthorized');
    assertProblem(await call(srv.base, 'GET', '/v1/datasets'), 401, 'unauthorized');
    assertProblem(await call(srv.base, 'POST', '/v1/config', { json: { shuffle_partitions: 3 } }), 401, 'unauthorized');
    assert.equal((await call(srv.base, 'GET', '/v1/config')).body.locked, false);
    assert.equal((await call(srv.base, 'GET', '/v1/info')).status, 200);
    const r = await call(srv.base, 'POST', '/v1/dataframes', { json: SAMPLE_PLAN, headers: bearer });
    assert.equal(r.status, 201, r.text);
  } finally {
    await srv.stop();
  }
  assert.ok(!srv.stderr().includes(data));
});
