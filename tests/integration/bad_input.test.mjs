// bad_input: every kind of bad request gets its problem type, changes
// nothing (GET /v1/config is unchanged) and leaves the server answering.
import assert from 'node:assert/strict';
import http from 'node:http';
import { test } from 'node:test';
import { assertProblem, call, startServer } from './lib.mjs';

const LIMIT = 1024;

// A POST with a chunked body (no Content-Length), so the limit is enforced
// while the body streams in rather than from the header.
function postChunked(base, urlPath, chunks) {
  return new Promise((resolve, reject) => {
    const req = http.request(`${base}${urlPath}`, {
      method: 'POST', headers: { 'content-type': 'application/json' },
    }, (res) => {
      let text = '';
      res.on('data', (d) => { text += d; });
      res.on('end', () => resolve({ status: res.statusCode, headers: res.headers, text }));
    });
    req.on('error', reject);
    for (const c of chunks) req.write(c);
    req.end();
  });
}

test('bad requests get problems and change nothing', async (t) => {
  const srv = await startServer({ args: ['--max-body-bytes', String(LIMIT)] });
  const before = (await call(srv.base, 'GET', '/v1/config')).text;
  const unchanged = async () => {
    assert.equal((await call(srv.base, 'GET', '/v1/config')).text, before);
    assert.equal((await call(srv.base, 'GET', '/livez')).status, 200);
  };
  try {
    await t.test('malformed JSON: 400 invalid-json with line and column', async () => {
      const r = await call(srv.base, 'POST', '/v1/config', {
        body: '{\n  "shuffle_partitions": 4,\n  oops\n}', headers: { 'content-type': 'application/json' },
      });
      assertProblem(r, 400, 'invalid-json');
      assert.equal(r.body.line, 3);
      assert.equal(typeof r.body.column, 'number');
      assert.match(r.body.detail, /line 3/);
      await unchanged();
    });

    await t.test('wrong types: 422 listing every field', async () => {
      const r = await call(srv.base, 'POST', '/v1/config', {
        json: { shuffle_partitions: 'four', maintain_order: 3, num_preview_rows: 5 },
      });
      assertProblem(r, 422, 'validation-failed');
      const fields = r.body.errors.map((e) => e.field).sort();
      assert.deepEqual(fields, ['maintain_order', 'shuffle_partitions']);
      for (const e of r.body.errors) assert.equal(typeof e.message, 'string');
      await unchanged();
    });

    await t.test('unknown field: 422', async () => {
      const r = await call(srv.base, 'POST', '/v1/config', { json: { shuffle_partition: 4 } });
      assertProblem(r, 422, 'validation-failed');
      assert.deepEqual(r.body.errors.map((e) => e.field), ['shuffle_partition']);
      await unchanged();
    });

    await t.test('out of bounds: 422', async () => {
      const r = await call(srv.base, 'POST', '/v1/config', { json: { shuffle_partitions: 0 } });
      assertProblem(r, 422, 'validation-failed');
      await unchanged();
    });

    await t.test('body over the limit: 413 (declared and chunked)', async () => {
      const big = { csv_null_values: Array.from({ length: 300 }, (_, i) => `v${i}`) };
      assert.ok(JSON.stringify(big).length > LIMIT);
      let r = await call(srv.base, 'POST', '/v1/config', { json: big });
      assertProblem(r, 413, 'payload-too-large');
      const chunks = ['{"csv_null_values": [', ...Array.from({ length: 400 }, () => '"xxxxxxxx",'), '"y"]}'];
      r = await postChunked(srv.base, '/v1/config', chunks);
      assert.equal(r.status, 413, r.text);
      assert.equal(JSON.parse(r.text).type, 'https://framed.dev/problems/payload-too-large');
      await unchanged();
    });

    await t.test('wrong media type: 415', async () => {
      const r = await call(srv.base, 'POST', '/v1/config', {
        body: '{"shuffle_partitions": 4}', headers: { 'content-type': 'text/plain' },
      });
      assertProblem(r, 415, 'unsupported-media-type');
      await unchanged();
    });

    await t.test('unknown route: 404', async () => {
      const r = await call(srv.base, 'GET', '/v1/nothing-here');
      assertProblem(r, 404, 'not-found');
      assert.equal(r.body.instance, '/v1/nothing-here');
      await unchanged();
    });

    await t.test('wrong method: 405 with Allow', async () => {
      const r = await call(srv.base, 'PUT', '/v1/config', { json: { shuffle_partitions: 4 } });
      assertProblem(r, 405, 'method-not-allowed');
      const allow = r.headers.get('allow').split(/,\s*/);
      assert.ok(allow.includes('GET') && allow.includes('POST'), r.headers.get('allow'));
      await unchanged();
    });

    await t.test('a bad plan is rejected without creating the runner', async () => {
      let r = await call(srv.base, 'POST', '/v1/dataframes', { json: { source: 5 } });
      assertProblem(r, 400, 'invalid-plan');
      r = await call(srv.base, 'POST', '/v1/dataframes', { body: '{"source":', headers: { 'content-type': 'application/json' } });
      assertProblem(r, 400, 'invalid-json');
      r = await call(srv.base, 'GET', '/v1/runner');
      assert.equal(r.body.state, 'none');
      await unchanged();
    });

    await t.test('bad query parameters: 400 invalid-parameter', async () => {
      let r = await call(srv.base, 'POST', '/v1/queries?wait=soon', { json: { dataframe: 'x' } });
      assertProblem(r, 400, 'invalid-parameter');
      r = await call(srv.base, 'GET', '/v1/configs/not-an-id');
      assertProblem(r, 400, 'invalid-parameter');
      await unchanged();
    });
  } finally {
    await srv.stop();
  }
});
