// contract: the code and openapi.yaml agree. Every kind the C code sets is a
// row of the problem table, and every problem type the HTTP
// edge can emit (the table in src/http/http_problem.c) is a stable type of
// api/schemas/problem-type.json and is listed in openapi.yaml with its status;
// and real responses of a running coordinator validate against the schemas
// openapi.yaml names for them (components.schemas -> api/schemas/*.json):
// with Ajv (draft 2020-12) when node_modules has it (it comes with Redocly,
// not pinned by us), and always with the small validator below, which knows
// the keywords our schemas use and fails on any other.
import assert from 'node:assert/strict';
import { copyFileSync, readdirSync, readFileSync } from 'node:fs';
import path from 'node:path';
import { test } from 'node:test';
import { call, SOURCE_DIR, startServer } from './lib.mjs';

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

// Kinds that never leave the process that sets them: a worker's
// dataset-changed becomes 503 dataset-unavailable (worker_source.c).
const INNER_KINDS = new Set(['dataset-changed']);

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
