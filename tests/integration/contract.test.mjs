// contract: the code and openapi.yaml agree. Every kind the C code sets is a
// row of the problem table, and every problem type the HTTP
// edge can emit (the table in src/http/http_problem.c) is a stable type of
// api/schemas/problem-type.json and is listed in openapi.yaml with its status;
// and real responses of a running coordinator validate against the schemas
// openapi.yaml names for them (components.schemas -> api/schemas/*.json):
// with Ajv (draft 2020-12, pinned in package.json) and with the small
// validator below, which knows the keywords our schemas use and fails on any
// other. The route tables of src/http and the operations of openapi.yaml are
// the same set; the server serves the spec it was built with
// (/openapi.yaml, /api/schemas/{file}); results download with
// Content-Disposition; and the live checker every test runs through
// (contract_lib.mjs, lib.mjs's fetch) is tested on hand-made bad answers.
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { copyFileSync, readdirSync, readFileSync } from 'node:fs';
import { createServer } from 'node:http';
import path from 'node:path';
import { test } from 'node:test';
import YAML from 'yaml';
import { checkResponse, compilePaths, findOperation, loadContract } from './contract_lib.mjs';
import { assertProblem, call, contractViolations, markFramedOrigin, SAMPLE_PLAN, SOURCE_DIR, startServer } from './lib.mjs';

const SCHEMAS = path.join(SOURCE_DIR, 'api', 'schemas');
const OPENAPI = readFileSync(path.join(SOURCE_DIR, 'openapi.yaml'), 'utf8');
const BASE = 'https://framed.dev/problems/';

const AJV_BASE = 'https://framed.dev/schemas/';
let ajv = null;
try {
  const { default: Ajv2020 } = await import('ajv/dist/2020.js');
  ajv = new Ajv2020({ strict: false, validateFormats: false, allErrors: true });
  for (const f of readdirSync(SCHEMAS).filter((n) => n.endsWith('.json'))) {
    ajv.addSchema({ ...JSON.parse(readFileSync(path.join(SCHEMAS, f), 'utf8')), $id: AJV_BASE + f });
  }
} catch (e) {
  if (e.code !== 'ERR_MODULE_NOT_FOUND') throw e;
  ajv = null; // no Ajv here: the small validator alone
}

// ---------------------------------------------------------------- problem types
function problemTable() {
  const src = readFileSync(path.join(SOURCE_DIR, 'src', 'http', 'http_problem.c'), 'utf8');
  const rows = [...src.matchAll(/\{(FR_\w+), "([a-z-]+)", (\d{3}), "/g)].map((m) => ({ kind: m[2], http: Number(m[3]) }));
  assert.ok(rows.length > 30, `only ${rows.length} rows read from the problem table`);
  return rows;
}

// "slug [status]" and "slug [409 on a worker, 500 from ...]" in the
// description's list of stable problem types.
function documentedStatuses() {
  const start = OPENAPI.indexOf('**Stable problem types**');
  assert.ok(start > 0, 'openapi.yaml lists the stable problem types');
  const para = OPENAPI.slice(start, OPENAPI.indexOf('\n  license:', start));
  const out = new Map();
  for (const m of para.matchAll(/([a-z][a-z-]+) \[([^\]]+)\]/g)) {
    out.set(m[1], [...m[2].matchAll(/\b(\d{3})\b/g)].map((n) => Number(n[1])));
  }
  return out;
}

// Kinds that never leave the process that sets them (none at present: a
// worker's dataset-changed is its 409 answer, worker_source.c).
const INNER_KINDS = new Set([]);

// Every kind the C code sets with a literal after a status
// (fr_error_setk(err, FR_E..., "kind", ...), fail_job(job, FR_E..., "kind", ...)).
function kindsInCode(dir = path.join(SOURCE_DIR, 'src'), out = new Map()) {
  for (const e of readdirSync(dir, { withFileTypes: true })) {
    const p = path.join(dir, e.name);
    if (e.isDirectory()) kindsInCode(p, out);
    else if (e.name.endsWith('.c')) {
      for (const m of readFileSync(p, 'utf8').matchAll(/\bFR_E[A-Z]+,\s*"([a-z][a-z-]+)"/g)) {
        out.set(m[1], path.relative(SOURCE_DIR, p));
      }
    }
  }
  return out;
}

test('every kind the code sets is a row of the problem table', () => {
  const table = new Set(problemTable().map((r) => r.kind));
  const missing = [...kindsInCode()].filter(([kind]) => !table.has(kind) && !INNER_KINDS.has(kind))
    .map(([kind, file]) => `${kind} (${file}): not in src/http/http_problem.c`);
  assert.deepEqual(missing, []);
});

test('every problem type the code can emit is documented, with its status', () => {
  const enumTypes = JSON.parse(readFileSync(path.join(SCHEMAS, 'problem-type.json'), 'utf8')).enum;
  const listed = documentedStatuses();
  const missing = [];
  for (const { kind, http } of problemTable()) {
    if (!enumTypes.includes(BASE + kind)) missing.push(`${kind}: not in api/schemas/problem-type.json`);
    if (!listed.has(kind)) missing.push(`${kind}: not in openapi.yaml's stable problem types`);
    else if (!listed.get(kind).includes(http)) missing.push(`${kind}: ${http} in the code, [${listed.get(kind)}] in openapi.yaml`);
  }
  assert.deepEqual(missing, []);
});

// ---------------------------------------------------------------- a validator
const files = new Map();
function schemaFile(name) {
  if (!files.has(name)) files.set(name, JSON.parse(readFileSync(path.join(SCHEMAS, name), 'utf8')));
  return files.get(name);
}

function pointer(doc, frag) {
  let node = doc;
  for (const part of (frag || '').split('/').filter(Boolean)) node = node[part.replace(/~1/g, '/').replace(/~0/g, '~')];
  assert.ok(node !== undefined, `no ${frag}`);
  return node;
}

// A component of openapi.yaml (components.schemas.<name>) as [file, schema].
function component(name) {
  const m = new RegExp(`^    ${name}: \\{\\$ref: 'api/schemas/([^'#]+)(?:#([^']*))?'\\}`, 'm').exec(OPENAPI);
  assert.ok(m, `openapi.yaml has no component schema ${name}`);
  return [m[1], pointer(schemaFile(m[1]), m[2])];
}

const typeOf = (v) => (v === null ? 'null' : Array.isArray(v) ? 'array' : Number.isInteger(v) ? 'integer' : typeof v);
const KNOWN = new Set(['$schema', '$id', 'title', 'description', 'examples', 'default', 'format', 'deprecated', 'readOnly',
  '$ref', '$defs', 'allOf', 'oneOf', 'anyOf', 'not', 'type', 'const', 'enum', 'required', 'properties', 'additionalProperties',
  'items', 'minItems', 'maxItems', 'uniqueItems', 'minimum', 'maximum', 'minLength', 'maxLength', 'pattern', 'minProperties', 'maxProperties']);

function validate(file, s, v, at, errs) {
  if (s === true) return;
  for (const k of Object.keys(s)) if (!KNOWN.has(k)) errs.push(`${at}: the validator does not know '${k}'`);
  if (s.$ref) {
    const [f, frag] = s.$ref.split('#');
    const target = f ? f : file;
    validate(target, pointer(schemaFile(target), frag), v, at, errs);
  }
  for (const sub of s.allOf ?? []) validate(file, sub, v, at, errs);
  if (s.oneOf) {
    const ok = s.oneOf.filter((sub) => { const e = []; validate(file, sub, v, at, e); return e.length === 0; }).length;
    if (ok !== 1) errs.push(`${at}: matches ${ok} of oneOf's ${s.oneOf.length}`);
  }
  if (s.anyOf && !s.anyOf.some((sub) => { const e = []; validate(file, sub, v, at, e); return e.length === 0; })) {
    errs.push(`${at}: matches none of anyOf`);
  }
  if (s.not) {
    const e = [];
    validate(file, s.not, v, at, e);
    if (e.length === 0) errs.push(`${at}: matches what 'not' forbids`);
  }
  if (s.type) {
    const types = [].concat(s.type);
    const t = typeOf(v);
    if (!types.includes(t) && !(t === 'integer' && types.includes('number'))) errs.push(`${at}: ${t}, not ${types}`);
  }
  if ('const' in s && JSON.stringify(s.const) !== JSON.stringify(v)) errs.push(`${at}: ${JSON.stringify(v)} is not ${JSON.stringify(s.const)}`);
  if (s.enum && !s.enum.some((e) => JSON.stringify(e) === JSON.stringify(v))) errs.push(`${at}: ${JSON.stringify(v)} not in the enum`);
  if (typeOf(v) === 'object') {
    for (const r of s.required ?? []) if (!(r in v)) errs.push(`${at}: '${r}' is required`);
    for (const [k, val] of Object.entries(v)) {
      if (s.properties?.[k]) validate(file, s.properties[k], val, `${at}.${k}`, errs);
      else if (s.additionalProperties === false) errs.push(`${at}: '${k}' is not allowed`);
      else if (typeof s.additionalProperties === 'object') validate(file, s.additionalProperties, val, `${at}.${k}`, errs);
    }
  }
  if (Array.isArray(v)) {
    if (s.minItems !== undefined && v.length < s.minItems) errs.push(`${at}: fewer than ${s.minItems} items`);
    if (s.maxItems !== undefined && v.length > s.maxItems) errs.push(`${at}: more than ${s.maxItems} items`);
    if (s.uniqueItems && new Set(v.map((x) => JSON.stringify(x))).size !== v.length) errs.push(`${at}: items repeat`);
    if (s.items) v.forEach((x, i) => validate(file, s.items, x, `${at}[${i}]`, errs));
  }
  if (typeof v === 'number') {
    if (s.minimum !== undefined && v < s.minimum) errs.push(`${at}: ${v} < ${s.minimum}`);
    if (s.maximum !== undefined && v > s.maximum) errs.push(`${at}: ${v} > ${s.maximum}`);
  }
  if (typeof v === 'string') {
    if (s.minLength !== undefined && v.length < s.minLength) errs.push(`${at}: shorter than ${s.minLength}`);
    if (s.maxLength !== undefined && v.length > s.maxLength) errs.push(`${at}: longer than ${s.maxLength}`);
    if (s.pattern && !new RegExp(s.pattern, 'u').test(v)) errs.push(`${at}: does not match ${s.pattern}`);
  }
}

function assertValid(name, res, label) {
  const [file, schema] = component(name);
  const errs = [];
  validate(file, schema, res.body, '$', errs);
  assert.deepEqual(errs, [], `${label}: the ${name} answer breaks its schema: ${res.text}`);
  if (ajv) {
    const m = new RegExp(`^    ${name}: \\{\\$ref: 'api/schemas/([^']+)'\\}`, 'm').exec(OPENAPI);
    const ref = m[1].includes('#') ? m[1] : `${m[1]}#`;
    const check = ajv.getSchema(AJV_BASE + ref);
    assert.ok(check, `Ajv resolves ${ref}`);
    assert.ok(check(res.body), `${label}: Ajv: ${ajv.errorsText(check.errors)}: ${res.text}`);
  }
}

test('the validator refuses what a schema forbids', () => {
  const [file, schema] = component('RunnerReleased');
  const errs = [];
  validate(file, schema, { released_config_id: 'x', surprise: 1 }, '$', errs);
  assert.ok(errs.some((e) => /surprise/.test(e)) && errs.some((e) => /forced/.test(e)), errs.join('\n'));
  if (ajv) assert.equal(ajv.getSchema(`${AJV_BASE}runner.json#/$defs/Released`)({ released_config_id: 'x', surprise: 1 }), false);
});

// ---------------------------------------------------------------- real answers
test('real responses validate against their schemas', async () => {
  const srv = await startServer();
  try {
    const examples = path.join(SOURCE_DIR, 'api', 'examples');
    for (const f of ['trips.csv', 'vendors.ndjson']) copyFileSync(path.join(examples, f), path.join(srv.dataDir, f));
    const example = (f) => JSON.parse(readFileSync(path.join(examples, f), 'utf8'));
    let r = await call(srv.base, 'GET', '/v1/config');
    assertValid('ConfigState', r, 'GET /v1/config');
    r = await call(srv.base, 'POST', '/v1/config', { json: example('config-patch-invalid.json') });
    assert.equal(r.status, 422, r.text);
    assertValid('ValidationProblem', r, 'POST /v1/config (invalid)');
    r = await call(srv.base, 'GET', '/v1/runner');
    assertValid('Runner', r, 'GET /v1/runner (none)');
    r = await call(srv.base, 'POST', '/v1/dataframes', { json: example('dataframe-join.json') });
    assert.equal(r.status, 201, r.text);
    const df = r.body.id;
    r = await call(srv.base, 'GET', `/v1/dataframes/${df}`);
    assertValid('Dataframe', r, 'GET /v1/dataframes/{id}');
    r = await call(srv.base, 'POST', '/v1/queries?wait=60', { json: { dataframe: df } });
    assertValid('Query', r, 'POST /v1/queries?wait');
    r = await call(srv.base, 'GET', `/v1/queries/${r.body.id}`);
    assertValid('Query', r, 'GET /v1/queries/{id}');
    r = await call(srv.base, 'GET', '/v1/runner');
    assertValid('Runner', r, 'GET /v1/runner (active)');
    r = await call(srv.base, 'GET', '/v1/queries/q-nope');
    assert.equal(r.status, 404, r.text);
    assertValid('Problem', r, 'GET /v1/queries/{unknown}');
    r = await call(srv.base, 'POST', '/v1/workers', { json: { id: 'w-1', url: 'http://127.0.0.1:9', threads: 0 } });
    assert.equal(r.status, 422, `a bad announce is 422 validation-failed: ${r.text}`);
    assertValid('ValidationProblem', r, 'POST /v1/workers (invalid)');
    assert.match(r.body.errors[0].message, /threads/);
    r = await call(srv.base, 'GET', '/v1/workers');
    assertValid('WorkerList', r, 'GET /v1/workers');
    r = await call(srv.base, 'DELETE', '/v1/runner');
    assert.equal(r.status, 200, r.text);
    assert.equal(r.body.queries_dropped, 1, r.text);
    assertValid('RunnerReleased', r, 'DELETE /v1/runner');
  } finally {
    await srv.stop();
  }
});

// ---------------------------------------------------------------- routes
// The route tables of src/http/*.c ({"METHOD", "/pattern", handler, ...}) and
// the operations of openapi.yaml are the same set. The dashboard's files
// other than / are static assets, documented with / (its page loads them);
// a rest-of-path segment "{name*}" is documented as "{name}" with
// x-framed-rest-of-path (contract_lib.mjs).
function codeRoutes() {
  const dir = path.join(SOURCE_DIR, 'src', 'http');
  const out = new Set();
  for (const f of readdirSync(dir).filter((n) => n.endsWith('.c'))) {
    for (const m of readFileSync(path.join(dir, f), 'utf8').matchAll(/\{"(GET|POST|PUT|DELETE|PATCH)", "(\/[^"]*)"/g)) {
      out.add(`${m[1]} ${m[2].replace(/\{([^}]+)\*\}/g, '{$1}')}`);
    }
  }
  return out;
}

test('every route of the code is an operation of openapi.yaml, and every operation a route', () => {
  const spec = YAML.parse(OPENAPI);
  const documented = new Set();
  for (const [p, item] of Object.entries(spec.paths)) {
    for (const m of ['get', 'post', 'put', 'delete', 'patch']) if (item[m]) documented.add(`${m.toUpperCase()} ${p}`);
  }
  const code = codeRoutes();
  assert.ok(code.size > 25, `only ${code.size} routes read from src/http`);
  const asset = (r) => /^GET \/[^/]+\.(js|css|svg|png|map)$/.test(r);
  assert.deepEqual([...code].filter((r) => !documented.has(r) && !asset(r)), [], 'routes openapi.yaml does not document');
  assert.deepEqual([...documented].filter((r) => !code.has(r)), [], 'operations no route serves');
});

// ---------------------------------------------------------------- the served contract
test('GET /openapi.yaml is the source file byte for byte, parses, and its $refs resolve on the server', async () => {
  const srv = await startServer();
  try {
    const r = await fetch(`${srv.base}/openapi.yaml`);
    assert.equal(r.status, 200);
    assert.equal(r.headers.get('content-type'), 'application/yaml; charset=utf-8');
    const bytes = Buffer.from(await r.arrayBuffer());
    assert.ok(bytes.equals(readFileSync(path.join(SOURCE_DIR, 'openapi.yaml'))), 'the served spec differs from openapi.yaml: rebuild?');
    const spec = YAML.parse(bytes.toString('utf8'));
    assert.equal(spec.openapi, '3.1.0');
    assert.ok(spec.paths['/openapi.yaml'], 'the spec documents its own path');
    const etag = r.headers.get('etag');
    assert.match(etag, /^"[0-9a-f]{32}"$/);
    assert.equal(r.headers.get('cache-control'), 'public, max-age=300');
    const again = await fetch(`${srv.base}/openapi.yaml`, { headers: { 'if-none-match': etag } });
    assert.equal(again.status, 304);
    assert.equal((await again.text()).length, 0);

    // Every file the served spec references, resolved against the served spec's URL.
    const refs = new Set([...bytes.toString('utf8').matchAll(/'(api\/schemas\/[a-z0-9-]+\.json)/g)].map((m) => m[1]));
    assert.ok(refs.size > 10, `only ${refs.size} schema files referenced`);
    for (const ref of refs) {
      const url = new URL(ref, `${srv.base}/openapi.yaml`);
      const s = await fetch(url);
      assert.equal(s.status, 200, `${url}`);
      assert.equal(s.headers.get('content-type'), 'application/schema+json');
      const body = Buffer.from(await s.arrayBuffer());
      assert.ok(body.equals(readFileSync(path.join(SOURCE_DIR, ref))), `${ref} differs from the source`);
      assert.equal(JSON.parse(body.toString('utf8')).$schema, 'https://json-schema.org/draft/2020-12/schema');
    }
    // A schema's own relative $ref ("common.json#/...") resolves under /api/schemas/ too.
    const query = await (await fetch(`${srv.base}/api/schemas/query.json`)).text();
    assert.match(query, /"common\.json#/);
    assert.equal((await fetch(new URL('common.json', `${srv.base}/api/schemas/query.json`))).status, 200);
  } finally {
    await srv.stop();
  }
});

test('GET /api/schemas/{file} serves only the embedded names: unknown and traversal are 404', async () => {
  const srv = await startServer();
  try {
    for (const p of ['/api/schemas/nope.json', '/api/schemas/..%2Fopenapi.yaml', '/api/schemas/%2e%2e%2f%2e%2e%2fCMakeLists.txt',
      '/api/schemas/openapi.yaml', '/api/schemas/..', `/api/schemas/${'a'.repeat(300)}.json`]) {
      const r = await call(srv.base, 'GET', p);
      assertProblem(r, 404, 'not-found');
    }
    const head = await fetch(`${srv.base}/api/schemas/common.json`, { method: 'HEAD' });
    assert.equal(head.status, 200);
    assert.equal(head.headers.get('content-length'), String(readFileSync(path.join(SCHEMAS, 'common.json')).length));
  } finally {
    await srv.stop();
  }
});

test('?download=1 on a result adds Content-Disposition with the query ID and the format\'s extension', async () => {
  const srv = await startServer();
  try {
    const q = await call(srv.base, 'POST', '/v1/queries?wait=60', { json: { plan: SAMPLE_PLAN } });
    assert.equal(q.body.state, 'succeeded', q.text);
    const id = q.body.id;
    for (const [format, ext] of [['json', 'json'], ['csv', 'csv'], ['ndjson', 'ndjson'], ['arrow', 'arrow'], ['parquet', 'parquet']]) {
      const r = await call(srv.base, 'GET', `/v1/queries/${id}/result?format=${format}&download=1`);
      assert.equal(r.status, 200, r.text);
      assert.equal(r.headers.get('content-disposition'), `attachment; filename="${id}.${ext}"`);
    }
    const accept = await call(srv.base, 'GET', `/v1/queries/${id}/result?download=true`, { headers: { accept: 'text/csv' } });
    assert.equal(accept.headers.get('content-disposition'), `attachment; filename="${id}.csv"`);
    for (const inline of ['', '&download=0', '&download=false']) {
      const r = await call(srv.base, 'GET', `/v1/queries/${id}/result?format=csv${inline}`);
      assert.equal(r.status, 200, r.text);
      assert.equal(r.headers.get('content-disposition'), null);
    }
    for (const bad of ['2', 'yes', '', 'TRUE']) {
      const r = await call(srv.base, 'GET', `/v1/queries/${id}/result?download=${bad}`);
      assertProblem(r, 400, 'invalid-parameter');
      assert.equal(r.body.parameter, 'download');
    }
  } finally {
    await srv.stop();
  }
});

// ---------------------------------------------------------------- the live checker itself
test('contract_lib rejects what the contract forbids and passes what it allows', () => {
  const c = loadContract(SOURCE_DIR);
  const runner = { state: 'none', kind: 'local', config_id: null, created_at: null, queries: { running: 0, finished: 0 } };
  const ok = { method: 'GET', path: '/v1/runner', status: 200, contentType: 'application/json', body: JSON.stringify(runner) };
  assert.deepEqual(checkResponse(c, ok), []);
  assert.deepEqual(checkResponse(c, { ...ok, method: 'HEAD', body: undefined }), []);
  const bad = checkResponse(c, { ...ok, body: JSON.stringify({ ...runner, state: 'sleeping' }) });
  assert.equal(bad.length, 1, bad.join('\n'));
  assert.match(bad[0], /the body breaks its schema: .*state/);
  assert.match(checkResponse(c, { ...ok, body: JSON.stringify({ ...runner, queries: undefined }) })[0], /required property 'queries'/);
  assert.deepEqual(checkResponse(c, { ...ok, status: 418 }).length, 1);
  assert.match(checkResponse(c, { ...ok, status: 418 })[0], /418 is not documented/);
  assert.match(checkResponse(c, { ...ok, contentType: 'text/html' })[0], /text\/html is not documented/);
  assert.match(checkResponse(c, { ...ok, body: '{"state":' })[0], /not JSON/);
  const livez = { method: 'GET', path: '/livez', status: 200, contentType: 'text/plain; charset=utf-8' };
  assert.deepEqual(checkResponse(c, { ...livez, body: 'ok\n' }), []);
  assert.match(checkResponse(c, { ...livez, body: 'fine\n' })[0], /text\/plain body breaks its schema/);
  const headers = new Headers({ 'content-type': 'application/json', etag: 'sha256:not-quoted' });
  const config = { method: 'GET', path: `/v1/configs/sha256:${'0'.repeat(64)}`, status: 200, contentType: 'application/json', headers };
  assert.match(checkResponse(c, config).join(), /header ETag: "sha256:not-quoted" breaks its schema/);
  assert.match(checkResponse(c, config).join(), /X-Request-Id null: missing/);
  headers.set('x-request-id', 'r-1');
  headers.set('etag', `"sha256:${'0'.repeat(64)}"`);
  assert.ok(!checkResponse(c, config).some((e) => /X-Request-Id|ETag/.test(e)));
  assert.match(checkResponse(c, { ...ok, path: '/v1/nowhere' })[0], /no path of openapi.yaml matches/);
  assert.match(checkResponse(c, { ...ok, method: 'PATCH' })[0], /no PATCH operation/);
  const notAllowed = { ...ok, method: 'PUT', status: 405, contentType: 'application/problem+json', body: JSON.stringify({ type: 'https://framed.dev/problems/method-not-allowed', title: 't', status: 405, detail: 'd' }) };
  assert.deepEqual(checkResponse(c, { ...notAllowed, headers: new Headers({ 'x-request-id': 'r', allow: 'GET, HEAD, DELETE' }) }), []);
  assert.match(checkResponse(c, { ...notAllowed, headers: new Headers({ 'x-request-id': 'r', allow: 'GET, HEAD, POST' }) })[0], /Allow "GET, HEAD, POST", but openapi.yaml documents/);
  assert.match(checkResponse(c, { ...notAllowed, headers: new Headers({ 'x-request-id': 'r' }) })[0], /Allow null/);
  // The conventions every operation shares: a problem of the right type only.
  const problem = (status, slug) => JSON.stringify({ type: `https://framed.dev/problems/${slug}`, title: 't', status, detail: 'd' });
  assert.deepEqual(checkResponse(c, { ...ok, status: 503, contentType: 'application/problem+json', body: problem(503, 'unavailable') }), []);
  assert.match(checkResponse(c, { ...ok, status: 503, contentType: 'application/problem+json', body: problem(503, 'no-workers') }).join(), /expected https:\/\/framed.dev\/problems\/unavailable/);
  assert.deepEqual(checkResponse(c, { ...ok, path: '/v1/nowhere', status: 404, contentType: 'application/problem+json', body: problem(404, 'not-found') }), []);
  // ... also beside a status the operation documents, but no other type.
  const result400 = { method: 'GET', path: '/v1/queries/q-1/result', status: 400, contentType: 'application/problem+json' };
  assert.deepEqual(checkResponse(c, { ...result400, body: JSON.stringify({ ...JSON.parse(problem(400, 'invalid-parameter')), parameter: 'limit' }) }), []);
  assert.ok(checkResponse(c, { ...result400, body: problem(400, 'invalid-json') }).length > 0, 'invalid-json on a route without a body');
  // A real body that passes: the one GET /v1/queries/{id} answers for an unknown ID.
  assert.deepEqual(checkResponse(c, { method: 'GET', path: '/v1/queries/q-x', status: 404, contentType: 'application/problem+json', body: problem(404, 'query-not-found') }), []);
  // Path templates: a literal path beats a template, a template takes one segment only.
  assert.equal(findOperation(c, 'GET', '/v1/queries/q-1/result').template, '/v1/queries/{id}/result');
  assert.equal(findOperation(c, 'HEAD', '/api/schemas/common.json').template, '/api/schemas/{file}');
  assert.equal(findOperation(c, 'GET', '/v1/queries/a/b/c'), null);
  // The method decides between matching paths, as in the router.
  c.spec.paths['/v1/configs/literal'] = { get: { responses: {} } };
  c.paths = compilePaths(c.spec);
  assert.equal(findOperation(c, 'GET', '/v1/configs/literal').template, '/v1/configs/literal');
  assert.equal(findOperation(c, 'DELETE', '/v1/configs/literal').template, '/v1/configs/{id}');
  assert.deepEqual(findOperation(c, 'PUT', '/v1/configs/literal').allowed.sort(), ['delete', 'get']);
  // A rest-of-path parameter (the router's "{name*}") takes several segments, after every other path.
  c.spec.paths['/{file}'] = { parameters: [{ name: 'file', in: 'path', required: true, 'x-framed-rest-of-path': true }], get: { responses: {} } };
  c.paths = compilePaths(c.spec);
  assert.equal(findOperation(c, 'GET', '/vendor/preact/preact.module.js').template, '/{file}');
  assert.equal(findOperation(c, 'GET', '/livez').template, '/livez');
  assert.equal(findOperation(c, 'GET', '/v1/queries/q-1').template, '/v1/queries/{id}');
});

test('the fetch wrapper throws on a violation from a framed origin, and leaves other origins alone', async () => {
  // Answers with a Content-Length (checked before fetch resolves), or
  // chunked with ?streamed (checked when the body is read whole).
  const fake = createServer((req, res) => {
    const body = JSON.stringify({ state: 42 });
    const sized = !req.url.includes('streamed');
    res.writeHead(200, { 'content-type': 'application/json', 'x-request-id': 'fake-1', ...(sized ? { 'content-length': Buffer.byteLength(body) } : {}) });
    if (sized) res.end(body);
    else { res.write(body.slice(0, 5)); res.end(body.slice(5)); }
  });
  await new Promise((resolve) => fake.listen(0, '127.0.0.1', resolve));
  const origin = `http://127.0.0.1:${fake.address().port}`;
  try {
    const plain = await fetch(`${origin}/v1/runner`); // not framed: not checked
    assert.deepEqual(await plain.json(), { state: 42 });
    markFramedOrigin(origin, true);
    const before = contractViolations.length;
    const broken = (e) => e instanceof assert.AssertionError && /GET \/v1\/runner(\?streamed)? -> 200: the body breaks its schema/.test(e.message);
    await assert.rejects(fetch(`${origin}/v1/runner`), broken);
    await assert.rejects(fetch(`${origin}/elsewhere`), /no path of openapi.yaml matches \/elsewhere/);
    const streamed = await fetch(`${origin}/v1/runner?streamed`);
    assert.equal(streamed.status, 200); // status and type are fine: the body is checked when read
    await assert.rejects(streamed.json(), broken);
    assert.equal(contractViolations.length, before + 3);
    contractViolations.splice(before, 3); // these were made on purpose
  } finally {
    markFramedOrigin(origin, false);
    await new Promise((resolve) => fake.close(resolve));
  }
});

test('a violation a test catches still fails its run at exit', async () => {
  // A child node that imports lib.mjs, fetches a bad answer from a fake it
  // marks as framed, swallows the AssertionError and ends normally.
  const script = `
    import { createServer } from 'node:http';
    import { markFramedOrigin } from ${JSON.stringify(new URL('./lib.mjs', import.meta.url).href)};
    const fake = createServer((req, res) => { res.writeHead(418, { 'content-length': 0, 'x-request-id': 'fake-1' }); res.end(); });
    await new Promise((r) => fake.listen(0, '127.0.0.1', r));
    const origin = 'http://127.0.0.1:' + fake.address().port;
    markFramedOrigin(origin, true);
    try { await fetch(origin + '/livez'); } catch { /* swallowed */ }
    fake.close();
  `;
  const child = spawn(process.execPath, ['--input-type=module', '-e', script], { env: process.env, stdio: ['ignore', 'ignore', 'pipe'] });
  let stderr = '';
  child.stderr.on('data', (d) => { stderr += d; });
  const code = await new Promise((resolve) => child.on('exit', resolve));
  assert.equal(code, 1, stderr);
  assert.match(stderr, /1 contract violation\(s\):\ncontract: GET \/livez -> 418: status 418 is not documented/);
});
