// data: datasets are streamed to disk (never held whole), replaced
// atomically, and an upload that ends early (over the limit, or the client
// goes away) leaves nothing behind. A large result streams in every format.
import assert from 'node:assert/strict';
import { readdirSync } from 'node:fs';
import net from 'node:net';
import { test } from 'node:test';
import { assertProblem, call, startServer } from './lib.mjs';

const UPLOAD_LIMIT = 256 * 1024;

function csv(rows) {
  const lines = ['id,name,score'];
  for (let i = 0; i < rows; i++) lines.push(`${i},n${i % 97},${(i % 1000) / 10}`);
  return `${lines.join('\n')}\n`;
}

// Sends the headers and part of a declared body, then closes the socket.
function abandonedUpload(port, name, declared, sent) {
  return new Promise((resolve, reject) => {
    const sock = net.connect(port, '127.0.0.1', () => {
      sock.write(`PUT /v1/datasets/${name} HTTP/1.1\r\nHost: x\r\nContent-Type: text/csv\r\n` +
        `Content-Length: ${declared}\r\n\r\n${'a,b\n1,2\n'.repeat(sent / 8)}`, () => {
        setTimeout(() => { sock.destroy(); resolve(); }, 200);
      });
    });
    sock.on('error', reject);
  });
}

test('datasets: upload, replace, limits, abandoned uploads, streamed results', async (t) => {
  const srv = await startServer({ args: ['--max-upload-bytes', String(UPLOAD_LIMIT)] });
  const put = (name, body, type = 'text/csv') => call(srv.base, 'PUT', `/v1/datasets/${name}`, {
    body, headers: { 'content-type': type },
  });
  try {
    await t.test('upload creates, a second one replaces', async () => {
      let r = await put('scores', csv(10));
      assert.equal(r.status, 201, r.text);
      assert.equal(r.headers.get('location'), '/v1/datasets/scores');
      assert.equal(r.body.name, 'scores');
      assert.deepEqual(r.body.schema.map((c) => c.name), ['id', 'name', 'score']);
      r = await put('scores', csv(5000));
      assert.equal(r.status, 200, r.text);
      r = await call(srv.base, 'GET', '/v1/datasets/scores');
      assert.equal(r.status, 200);
      assert.equal(r.body.bytes, Buffer.byteLength(csv(5000)));
      r = await call(srv.base, 'GET', '/v1/datasets');
      assert.equal(r.status, 200);
    });

    await t.test('over the upload limit: 413, the old file stays', async () => {
      const r = await put('scores', 'x'.repeat(UPLOAD_LIMIT + 1));
      assertProblem(r, 413, 'payload-too-large');
      const d = await call(srv.base, 'GET', '/v1/datasets/scores');
      assert.equal(d.body.bytes, Buffer.byteLength(csv(5000)));
    });

    await t.test('wrong media type: 415', async () => {
      const r = await put('other', '{"a":1}', 'application/json');
      assertProblem(r, 415, 'unsupported-media-type');
    });

    await t.test('a client that goes away mid-upload leaves nothing behind', async () => {
      await abandonedUpload(srv.port, 'gone', 100000, 40000);
      await new Promise((r) => setTimeout(r, 300));
      const r = await call(srv.base, 'GET', '/v1/datasets/gone');
      assertProblem(r, 404, 'dataset-not-found');
      const files = readdirSync(srv.dataDir);
      assert.deepEqual(files.filter((f) => !f.startsWith('scores')), [], `left behind: ${files}`);
    });

    await t.test('a large result streams as JSON pages, CSV and NDJSON', async () => {
      let r = await call(srv.base, 'POST', '/v1/queries?wait=60', {
        json: { plan: { source: { path: 'scores.csv', format: 'csv' } } },
      });
      assert.equal(r.status, 200, r.text);
      assert.equal(r.body.state, 'succeeded', r.text);
      const id = r.body.id;
      r = await call(srv.base, 'GET', `/v1/queries/${id}/result`);
      assert.equal(r.body.total_rows, 5000);
      assert.equal(r.body.rows.length, 5000);
      assert.equal(r.body.limit, null);
      r = await call(srv.base, 'GET', `/v1/queries/${id}/result?offset=4990&limit=20`);
      assert.deepEqual(r.body.rows.map((row) => row[0]), [...Array(10).keys()].map((i) => 4990 + i));
      r = await call(srv.base, 'GET', `/v1/queries/${id}/result`, { headers: { accept: 'text/csv' } });
      const lines = r.text.split(/\r?\n/).filter((l) => l);
      assert.equal(lines.length, 5001);
      assert.equal(lines[0], 'id,name,score');
      r = await call(srv.base, 'GET', `/v1/queries/${id}/result`, {
        headers: { accept: 'application/x-ndjson' },
      });
      const objs = r.text.trim().split('\n').map((l) => JSON.parse(l));
      assert.equal(objs.length, 5000);
      assert.deepEqual(Object.keys(objs[0]), ['id', 'name', 'score']);
      r = await call(srv.base, 'GET', `/v1/queries/${id}/result?limit=-1`);
      assertProblem(r, 400, 'invalid-parameter');
      assert.equal(r.body.parameter, 'limit');
      r = await call(srv.base, 'GET', `/v1/queries/${id}/result`, { headers: { accept: 'image/png' } });
      assertProblem(r, 406, 'not-acceptable');
    });

    await t.test('delete', async () => {
      let r = await call(srv.base, 'DELETE', '/v1/datasets/scores');
      assert.equal(r.status, 204);
      r = await call(srv.base, 'DELETE', '/v1/datasets/scores');
      assertProblem(r, 404, 'dataset-not-found');
    });
  } finally {
    await srv.stop();
  }
});
