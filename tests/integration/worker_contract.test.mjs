// worker_contract: the real bodies of a worker's GET /v1/info, POST /v1/tasks
// and DELETE /v1/configs/{id} validate against their schemas in api/schemas
// (the ones openapi.yaml references), with Ajv (draft 2020-12).
import assert from 'node:assert/strict';
import { readdirSync, readFileSync } from 'node:fs';
import path from 'node:path';
import { after, before, test } from 'node:test';
import Ajv2020 from 'ajv/dist/2020.js';
import { call, rowsPlan, SOURCE_DIR, startServer, startWorker } from './lib.mjs';

const SCHEMAS = path.join(SOURCE_DIR, 'api', 'schemas');

// Every schema of api/schemas under its file name, so "common.json#/..." resolves.
function validator() {
  const ajv = new Ajv2020({ strict: false, validateFormats: false, allErrors: true });
  for (const f of readdirSync(SCHEMAS).filter((n) => n.endsWith('.json'))) {
    const schema = JSON.parse(readFileSync(path.join(SCHEMAS, f), 'utf8'));
    delete schema.$id;
    ajv.addSchema(schema, f);
  }
  return (ref, body) => {
    const validate = ajv.getSchema(ref);
    assert.ok(validate, `no schema ${ref}`);
    assert.ok(validate(body), `${ref}: ${JSON.stringify(validate.errors)}\n${JSON.stringify(body)}`);
  };
}

let coordinator;
let worker;
let configId;
before(async () => {
  coordinator = await startServer();
  worker = await startWorker(coordinator.base, { args: ['--data-dir', coordinator.dataDir] });
  const r = await call(coordinator.base, 'POST', '/v1/dataframes', { json: rowsPlan([{ a: 1 }]) });
  assert.equal(r.status, 201, r.text);
  configId = (await call(coordinator.base, 'GET', '/v1/config')).body.config_id;
});
after(async () => {
  await worker?.stop();
  await coordinator?.stop();
});

test('a worker\'s bodies match their schemas: /v1/info, POST /v1/tasks, DELETE /v1/configs/{id}', async () => {
  const check = validator();
  const task = {
    query_id: 'q-contract', stage: 0, task: 0, attempt: 0,
    spec: {
      stage: 0, task: 0, input: { kind: 'rows', rows: [{ a: 1 }, { a: 2 }], hints: [] }, core: null,
      pipeline: [{ filter: 'a > 1' }], sink: null, nbuckets: 1,
    },
    inputs: [],
  };
  check('task.json', task); // the request the coordinator sends, too
  const done = await call(worker.base, 'POST', '/v1/tasks', { json: task, headers: { 'framed-config-id': configId } });
  assert.equal(done.status, 200, done.text);
  check('task.json#/$defs/Done', done.body);

  const info = await call(worker.base, 'GET', '/v1/info');
  assert.equal(info.status, 200, info.text);
  assert.deepEqual(info.body.config_ids, [configId]);
  check('info.json#/$defs/Worker', info.body);

  const released = await call(worker.base, 'DELETE', `/v1/configs/${configId}`, { headers: { 'framed-config-id': configId } });
  assert.equal(released.status, 200, released.text);
  check('task.json#/$defs/ConfigReleased', released.body);
  assert.equal(released.body.dropped_partitions, 1);
  check('info.json#/$defs/Worker', (await call(worker.base, 'GET', '/v1/info')).body);

  // The coordinator's own /v1/info keeps its schema.
  check('info.json', (await call(coordinator.base, 'GET', '/v1/info')).body);
});

test('a worker serves the same contract at /openapi.yaml and /api/schemas/{file}', async () => {
  const r = await fetch(`${worker.base}/openapi.yaml`);
  assert.equal(r.status, 200);
  assert.equal(r.headers.get('content-type'), 'application/yaml; charset=utf-8');
  assert.ok(Buffer.from(await r.arrayBuffer()).equals(readFileSync(path.join(SOURCE_DIR, 'openapi.yaml'))));
  const s = await fetch(`${worker.base}/api/schemas/task.json`);
  assert.equal(s.status, 200);
  assert.deepEqual(await s.json(), JSON.parse(readFileSync(path.join(SCHEMAS, 'task.json'), 'utf8')));
  assert.equal((await call(worker.base, 'GET', '/api/schemas/nope.json')).status, 404);
});
