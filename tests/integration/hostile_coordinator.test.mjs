// hostile_coordinator: a catalogue of hostile requests against `framed serve`
// over every route: malformed, deep and huge JSON, number limits, invalid
// UTF-8 and NUL bytes, wrong methods and media types, encoded traversal in
// names and IDs, query-string abuse, plan and expression abuse. Each gets its
// documented problem; after each group the server answers /livez and holds
// the state it held before (config, runner, datasets, data dir files).
import { test } from 'node:test';
import { deepJson, json, problem, runGroup, Target, uploadFixtures } from './hostile_lib.mjs';

const LIMIT = 1 << 20;
const JSON_ROUTES = ['/v1/config', '/v1/dataframes', '/v1/queries', '/v1/workers'];
const ID = `sha256:${'a'.repeat(64)}`;

const INVALID_JSON = problem(400, 'invalid-json');
const BAD_PLAN = problem(400, 'invalid-plan');
const BAD_EXPR = problem(400, 'invalid-expression');
const BAD_PARAM = problem(400, 'invalid-parameter');
const INVALID = problem(422, 'validation-failed');
const NOT_FOUND = problem(404, 'not-found');
const NO_DATASET = problem(404, 'dataset-not-found');
const TOO_LARGE = problem(413, 'payload-too-large');
const MEDIA = problem(415, 'unsupported-media-type');
const METHOD = problem(405, 'method-not-allowed');
const COLUMNS = problem(422, 'too-many-columns');

// Bodies that are not JSON: [label, bytes].
const MALFORMED = [
  ['empty', ''], ['open brace', '{'], ['cut member', '{"a":'], ['trailing comma', '[1,]'],
  ['trailing comma in object', '{"a":1,}'], ['single quotes', "{'a':1}"],
  ['trailing garbage', '{} x'], ['comment', '/*c*/{}'], ['bare word', 'nul'],
  ['bad escape', '{"a":"\\x"}'], ['lone surrogate', '{"a":"\\ud800"}'],
  ['escaped NUL', '{"a":"\\u0000"}'], ['NUL after the value', Buffer.from('{"shuffle_partitions":5}\0{"x":1}')],
  ['NUL inside a string', Buffer.from('{"a":"x\0y"}')],
  ['invalid UTF-8 (0xff)', Buffer.from([0x7b, 0x22, 0x61, 0x22, 0x3a, 0x22, 0xff, 0x22, 0x7d])],
  ['invalid UTF-8 in a key', Buffer.from([0x7b, 0x22, 0xff, 0x22, 0x3a, 0x31, 0x7d])],
  ['overlong UTF-8 (c0 80)', Buffer.from([0x7b, 0x22, 0xc0, 0x80, 0x22, 0x3a, 0x31, 0x7d])],
  ['cut UTF-8 sequence', Buffer.from([0x7b, 0x22, 0x61, 0x22, 0x3a, 0x22, 0xe2, 0x82, 0x22, 0x7d])],
  ['duplicate keys', '{"shuffle_partitions":4,"shuffle_partitions":5}'],
  ['NaN', '{"shuffle_partitions":NaN}'], ['Infinity', '{"shuffle_partitions":Infinity}'],
  ['1e309', '{"shuffle_partitions":1e309}'], ['2^63', '{"shuffle_partitions":9223372036854775808}'],
  ['-2^63-1', '{"shuffle_partitions":-9223372036854775809}'],
  ['10,000 nested arrays', deepJson(10000)], ['10,000 nested objects', deepJson(10000, 'object')],
  ['UTF-16 BOM', Buffer.from([0xfe, 0xff, 0x00, 0x7b, 0x00, 0x7d])],
];

function malformedCases() {
  const cases = [];
  for (const route of JSON_ROUTES) {
    for (const [label, body] of MALFORMED) {
      cases.push(json('POST', route, body, INVALID_JSON, { name: `POST ${route}: ${label}` }));
    }
  }
  return cases;
}

// Config values at and past their limits: validated whole, nothing applied.
function numberCases() {
  const cfg = (label, body, expect = INVALID) =>
    json('POST', '/v1/config', body, expect, { name: `config ${label}` });
  const rows = [{ a: 1 }];
  const plan = (label, ops, expect = BAD_PLAN) =>
    json('POST', '/v1/dataframes', JSON.stringify({ source: { rows }, ops }), expect,
      { name: `plan ${label}` });
  return [
    cfg('2^53', '{"shuffle_partitions":9007199254740992}'),
    cfg('2^63-1', '{"shuffle_partitions":9223372036854775807}'),
    cfg('-1', '{"shuffle_partitions":-1}'),
    cfg('-0', '{"shuffle_partitions":-0}'),
    cfg('1e308', '{"shuffle_partitions":1e308}'),
    cfg('4.5', '{"shuffle_partitions":4.5}'),
    cfg('a string', '{"shuffle_partitions":"8"}'),
    cfg('null', '{"shuffle_partitions":null}'),
    cfg('an object', '{"shuffle_partitions":{"n":8}}'),
    cfg('memory limit 2^63-1', '{"task_memory_limit_bytes":9223372036854775807,"shuffle_partitions":0}'),
    cfg('task timeout -2^63', '{"task_timeout_ms":-9223372036854775808}'),
    cfg('morsel 0', '{"morsel_size_rows":0}'),
    cfg('bool as 1', '{"maintain_order":1}'),
    cfg('null values not strings', '{"csv_null_values":[1,null,{}]}'),
    cfg('null value with NUL', '{"csv_null_values":["a\\u0000b"]}', INVALID_JSON),
    cfg('900 KB string', `{"shuffle_partitions":"${'x'.repeat(900000)}"}`),
    cfg('unknown field with invalid UTF-8', Buffer.concat([Buffer.from('{"'), Buffer.from([0xed, 0xa0, 0x80]), Buffer.from('":1}')]), INVALID_JSON),
    cfg('a JSON array', '[]', { ...INVALID, alt: INVALID_JSON }),
    cfg('a JSON string', '"shuffle_partitions"', { ...INVALID, alt: INVALID_JSON }),
    plan('limit -1', [{ limit: -1 }]),
    plan('limit 2^63-1 as a string', [{ limit: '9223372036854775807' }]),
    plan('limit 1e308', [{ limit: 1e308 }]),
    plan('offset -1', [{ offset: -1 }]),
    plan('offset 2.5', [{ offset: 2.5 }]),
    plan('top_k k -1', [{ top_k: { k: -1, by: ['a'] } }]),
    json('POST', '/v1/dataframes', JSON.stringify({ source: { rows, options: { sample_rows: 0 } } }), BAD_PLAN, { name: 'plan sample_rows 0' }),
    json('POST', '/v1/dataframes', JSON.stringify({ source: { rows, options: { sample_rows: 1e7 } } }), BAD_PLAN, { name: 'plan sample_rows 1e7' }),
    json('POST', '/v1/dataframes', JSON.stringify({ source: { rows, schema: { a: 'int128' } } }), BAD_PLAN, { name: 'plan unknown type hint' }),
    json('POST', '/v1/dataframes', JSON.stringify({ source: { dataset: 'trips', options: { delimiter: ',,' } } }), BAD_PLAN, { name: 'plan two-byte delimiter' }),
    json('POST', '/v1/dataframes', JSON.stringify({ source: { dataset: 'trips', options: { delimiter: '\u0000' } } }), { ...BAD_PLAN, alt: INVALID_JSON }, { name: 'plan NUL delimiter' }),
    json('POST', '/v1/dataframes', JSON.stringify({ source: { dataset: 'trips', options: { on_error: 'maybe' } } }), BAD_PLAN, { name: 'plan unknown on_error' }),
  ];
}

// Every route with every method it does not serve.
const ROUTES = {
  '/v1/config': ['GET', 'POST'], '/v1/config/schema': ['GET'], [`/v1/configs/${ID}`]: ['GET'],
  '/v1/runner': ['GET', 'DELETE'], '/v1/datasets': ['GET'], '/v1/datasets/trips': ['GET', 'PUT', 'DELETE'],
  '/v1/dataframes': ['GET', 'POST'], '/v1/dataframes/df-x': ['GET', 'DELETE'], '/v1/dataframes/df-x/explain': ['GET'],
  '/v1/queries': ['GET', 'POST'], '/v1/queries/q-x': ['GET', 'DELETE'], '/v1/queries/q-x/result': ['GET', 'DELETE'], '/v1/queries/q-x/result/locations': ['GET'],
  '/v1/runners': ['GET'], '/v1/runners/runner-x': ['GET'], [`/v1/history/configs/${ID}`]: ['GET'],
  '/v1/configs/diff': ['GET'],
  '/v1/workers': ['GET', 'POST'], '/livez': ['GET'], '/readyz': ['GET'], '/metrics': ['GET'], '/v1/info': ['GET'],
};
const METHODS = ['GET', 'POST', 'PUT', 'DELETE', 'PATCH'];

function methodCases() {
  const cases = [];
  for (const [p, allowed] of Object.entries(ROUTES)) {
    for (const m of METHODS.filter((x) => !allowed.includes(x))) {
      const body = m === 'GET' ? undefined : '{"shuffle_partitions":3}';
      cases.push(json(m, p, body, METHOD, {
        name: `${m} ${p}`,
        check: (r) => { if (!r.headers.allow) throw new Error(`no Allow on ${m} ${p}`); },
      }));
    }
  }
  for (const m of ['FOO', 'OPTIONS', 'TRACE', 'PROPFIND']) {
    cases.push(json(m, '/v1/config', undefined, METHOD, { name: `${m} /v1/config` }));
  }
  return cases;
}

function mediaCases() {
  const cases = [];
  const types = ['text/plain', 'application/jsonx', 'application/json-patch+json', 'multipart/form-data; boundary=x',
    'application/x-www-form-urlencoded', 'text/json', 'application/x-ndjson', 'application/json\u0000'];
  for (const route of JSON_ROUTES) {
    for (const ct of types) {
      if (ct.includes('\u0000')) continue; // node:http refuses it; see hostile_http_raw
      cases.push(json('POST', route, '{"shuffle_partitions":3}', MEDIA, { name: `POST ${route} as ${ct}`, headers: { 'content-type': ct } }));
    }
    cases.push({ name: `POST ${route} without a media type`, method: 'POST', path: route, body: '{"shuffle_partitions":3}', expect: MEDIA });
  }
  // A parameter or upper case still names JSON: the body is read (and rejected for what it says).
  cases.push(json('POST', '/v1/config', '{"shuffle_partition":3}', INVALID, { name: 'config as application/json; charset=utf-8', headers: { 'content-type': 'application/json; charset=utf-8' } }));
  cases.push(json('POST', '/v1/config', '{"shuffle_partition":3}', INVALID, { name: 'config as APPLICATION/JSON', headers: { 'content-type': 'APPLICATION/JSON' } }));
  return cases;
}

// Dataset names are checked after percent-decoding: 1-128 of [A-Za-z0-9_.-],
// not starting with '.', no NUL.
const BAD_NAMES = ['trips%00evil', 'victim%00.bak', '%2e%2e', '%2e%2e%2fstate', '..%2f..%2fetc%2fpasswd',
  '..%5c..%5cetc%5cpasswd', '%252e%252e%252fstate', '.hidden', '%2etrips', 'a%20b', '%C3%A9t%C3%A9', '%ff%fe',
  'x'.repeat(129), 'trips%2f', 'a%3bb', '%00', 'trips%0d%0aX-Evil:%201'];

function nameCases() {
  const cases = [];
  for (const n of BAD_NAMES) {
    const short = n.length > 40 ? `${n.slice(0, 12)}...(${n.length})` : n;
    // A decoded '/' (or nothing at all) leaves no route: 404 not-found is as safe.
    const expect = /%2f/i.test(n) || n === '%00' ? { ...BAD_PARAM, alt: NOT_FOUND } : BAD_PARAM;
    cases.push({ name: `GET dataset ${short}`, method: 'GET', path: `/v1/datasets/${n}`, expect });
    cases.push({ name: `DELETE dataset ${short}`, method: 'DELETE', path: `/v1/datasets/${n}`, expect });
    cases.push({ name: `PUT dataset ${short}`, method: 'PUT', path: `/v1/datasets/${n}`, body: 'a,b\n6,6\n', headers: { 'content-type': 'text/csv' }, expect });
  }
  cases.push({ name: 'GET a 128-character name that is not there', method: 'GET', path: `/v1/datasets/${'x'.repeat(128)}`, expect: NO_DATASET });
  cases.push({ name: 'GET trips.csv (not the name)', method: 'GET', path: '/v1/datasets/trips.csv', expect: NO_DATASET });
  for (const p of ['/v1/datasets/../config', '/v1/%2e%2e/v1/config', '//v1/config', '/v1/config/', '/v1/datasets/trips/',
    '/v1/datasets/%2e%2e/%2e%2e/etc/passwd', '/v1//datasets', '/v1/datasets/trips/../victim', '/V1/CONFIG']) {
    cases.push({ name: `GET ${p}`, method: 'GET', path: p, expect: NOT_FOUND });
  }
  // An encoded NUL anywhere in the target is 400 for every route (the request
  // layer checks the raw target): decoded, "/v1/config%00" would be /v1/config.
  cases.push({ name: 'GET /v1/config%00', method: 'GET', path: '/v1/config%00', expect: BAD_PARAM });
  cases.push({ name: 'GET /v1/%00/config', method: 'GET', path: '/v1/%00/config', expect: BAD_PARAM });
  cases.push({ name: 'GET /livez?x=%00', method: 'GET', path: '/livez?x=%00', expect: BAD_PARAM });
  const ids = ['not-an-id', 'sha256:abc', `sha256:${'A'.repeat(64)}`, `sha256:${'a'.repeat(64)}%00`, `sha256:${'a'.repeat(63)}g`,
    `sha256:${'a'.repeat(65)}`, `sha256:%2e%2e%2f${'a'.repeat(58)}`, `${'a'.repeat(5000)}`];
  for (const id of ids) {
    const expect = /%2f/i.test(id) ? { ...BAD_PARAM, alt: NOT_FOUND } : BAD_PARAM;
    cases.push({ name: `GET config ${id.slice(0, 30)}`, method: 'GET', path: `/v1/configs/${id}`, expect });
  }
  cases.push({ name: 'GET an unknown config', method: 'GET', path: `/v1/configs/${ID}`, expect: problem(404, 'config-not-found') });
  for (const id of ['df-nope', 'df-%00', '%2e%2e', 'x'.repeat(3000)]) {
    const gone = (type) => (id.includes('%00') ? BAD_PARAM : problem(404, type));
    cases.push({ name: `GET dataframe ${id.slice(0, 20)}`, method: 'GET', path: `/v1/dataframes/${id}`, expect: gone('dataframe-not-found') });
    cases.push({ name: `explain dataframe ${id.slice(0, 20)}`, method: 'GET', path: `/v1/dataframes/${id}/explain`, expect: gone('dataframe-not-found') });
    cases.push({ name: `DELETE dataframe ${id.slice(0, 20)}`, method: 'DELETE', path: `/v1/dataframes/${id}`, expect: gone('dataframe-not-found') });
    cases.push({ name: `GET query ${id.slice(0, 20)}`, method: 'GET', path: `/v1/queries/${id}`, expect: gone('query-not-found') });
    cases.push({ name: `DELETE query ${id.slice(0, 20)}`, method: 'DELETE', path: `/v1/queries/${id}`, expect: gone('query-not-found') });
  }
  return cases;
}

// Path sources name files relative to the data dir and may not leave it.
function traversalPlanCases() {
  const src = (label, source, expect = BAD_PLAN) =>
    json('POST', '/v1/dataframes', JSON.stringify({ source }), expect, { name: `source ${label}` });
  return [
    src('../state', { path: '../state/pending.json' }),
    src('absolute', { path: '/etc/passwd' }),
    src('backslashes', { path: '..\\..\\etc\\passwd' }),
    src('dot-dot in the middle', { path: 'a/../../etc/passwd' }),
    src('encoded dot-dot (a file name)', { path: '%2e%2e/%2e%2e/etc/passwd' }, { status: 404, type: 'dataset-not-found', alt: BAD_PLAN }),
    src('NUL in the path', { path: 'trips.csv\u0000.txt' }, { ...BAD_PLAN, alt: INVALID_JSON }),
    src('empty path', { path: '' }),
    src('the data dir itself', { path: '.' }),
    src('dataset ../x', { dataset: '../x' }),
    src('dataset with NUL', { dataset: 'trips\u0000x' }, { ...BAD_PLAN, alt: INVALID_JSON }),
    src('dataset .hidden', { dataset: '.hidden' }),
    src('dataset 129 characters', { dataset: 'x'.repeat(129) }),
    src('dataset that is not there', { dataset: 'nope' }, NO_DATASET),
  ];
}

function queryStringCases() {
  const body = '{"dataframe":"df-none"}';
  const q = (qs) => json('POST', `/v1/queries?${qs}`, body, BAD_PARAM, { name: `POST /v1/queries?${qs.slice(0, 40)}` });
  return [
    q('wait=soon'), q('wait=-1'), q('wait=301'), q('wait=1e308'), q('wait=NaN'), q('wait=inf'), q('wait=0x10'),
    q('wait='), q('wait=1&wait=x'), q(`wait=${'9'.repeat(5000)}`), q('wait=%00'), q('wait=1%00'), q('wait=-0.0000001'),
    json('DELETE', '/v1/runner?force=maybe', undefined, BAD_PARAM, { name: 'DELETE /v1/runner?force=maybe' }),
    json('DELETE', '/v1/runner?force=2', undefined, BAD_PARAM, { name: 'DELETE /v1/runner?force=2' }),
    json('DELETE', '/v1/runner?force=true%00', undefined, BAD_PARAM, { name: 'DELETE /v1/runner?force=true%00' }),
    // One strict parser: decimal numbers only, booleans true/false only, a
    // repeated parameter (even spelled with an escape) is refused.
    q('wait=1&w%61it=2'), q('wait=+1'), q('wait=1e1'), q('wait=%201'), q('wait=1.'), q('wait'),
    ...['force', 'force=1', 'force=TRUE', 'force=true&force=true'].map((qs) =>
      json('DELETE', `/v1/runner?${qs}`, undefined, BAD_PARAM, { name: `DELETE /v1/runner?${qs}` })),
    // libmicrohttpd looks names up caselessly: LIMIT repeats limit.
    q('wait=1&WAIT=2'),
    ...['limit=0x5', 'limit=-0', 'offset=+1', 'limit=5&limit=5', 'limit=1&LIMIT=5', `limit=${'9'.repeat(19)}`].map((qs) =>
      json('GET', `/v1/queries/q-none/result?${qs}`, undefined, BAD_PARAM, { name: `GET a result ?${qs}` })),
    json('DELETE', '/v1/runner', undefined, problem(404, 'no-runner'), { name: 'DELETE /v1/runner without one' }),
  ];
}

// Plans and expressions that must be refused before any runner exists.
function planCases() {
  const rows = [{ a: 1, b: 'x' }];
  const plan = (label, p, expect = BAD_PLAN) => json('POST', '/v1/dataframes', JSON.stringify(p), expect, { name: `plan ${label}` });
  const where = (label, expr, expect = BAD_EXPR) => plan(label, { source: { rows }, ops: [{ where: expr }] }, expect);
  const inList = Array.from({ length: 100000 }, (_, i) => i).join(',');
  return [
    plan('no source', { ops: [] }), plan('source 5', { source: 5 }), plan('rows a string', { source: { rows: 'x' } }),
    plan('rows of numbers', { source: { rows: [1, 2] } }), plan('rows of arrays', { source: { rows: [[1]] } }),
    plan('dataset and rows', { source: { dataset: 'trips', rows } }),
    plan('dataset and path', { source: { dataset: 'trips', path: 'trips.csv' } }),
    plan('unknown source member', { source: { rows, evil: 1 } }),
    plan('unknown plan member', { source: { rows }, ops: [], evil: true }),
    plan('ops an object', { source: { rows }, ops: { where: 'a > 0' } }),
    plan('unknown op', { source: { rows }, ops: [{ frobnicate: 1 }] }),
    plan('two ops in one', { source: { rows }, ops: [{ where: 'a > 0', limit: 1 }] }),
    plan('empty op', { source: { rows }, ops: [{}] }),
    plan('groupby without agg', { source: { rows }, ops: [{ groupby: ['a'] }] }),
    plan('agg without items', { source: { rows }, ops: [{ groupby: ['a'], agg: [] }] }),
    plan('where a number', { source: { rows }, ops: [{ where: 5 }] }),
    plan('select not a list', { source: { rows }, ops: [{ select: 'a' }] }),
    plan('select of numbers', { source: { rows }, ops: [{ select: [1] }] }),
    plan('join how sideways', { source: { rows }, ops: [{ join: { right: { source: { rows } }, on: ['a'], how: 'sideways' } }] }),
    plan('join right a number', { source: { rows }, ops: [{ join: { right: 5, on: ['a'] } }] }),
    plan('join without on', { source: { rows }, ops: [{ join: { right: { source: { rows } } } }] }),
    plan('union of nothing', { source: { rows }, ops: [{ union: null }] }),
    plan('dataframe 5', { source: { dataframe: 5 } }),
    plan('dataframe unknown', { source: { dataframe: 'df-nope' } }, problem(404, 'dataframe-not-found')),
    plan('with_column without expr', { source: { rows }, ops: [{ with_column: { name: 'c' } }] }),
    plan('with_column with an empty name', { source: { rows }, ops: [{ with_column: { name: '', expr: 'a' } }] }),
    where('unknown function', 'frob(a) > 1'), where('empty', ' '), where('unknown column', 'zz > 1'),
    where('10,000 parentheses', `${'('.repeat(10000)}a${')'.repeat(10000)} > 0`),
    where('10,000 nots', `${'not '.repeat(10000)}a > 0`),
    where('10,000 minus signs', `${'-'.repeat(10000)}a > 0`),
    where('100,000 additions', `${'a + '.repeat(100000)}zz > 0`),
    where('IN of 100,000 on an unknown column', `zz in (${inList})`),
    where('IN of 100,000 and an unknown column', `a in (${inList}) and zz > 0`),
    where('unterminated string', "b = 'x"), where('NUL in a string', "b = 'x\u0000'", { ...BAD_EXPR, alt: INVALID_JSON }),
    where('a boolean on strings', "b and 'x'"), where('cast to an unknown type', 'cast(a as int128) > 0'),
    where('like without a pattern', 'b like'), where('between without and', 'a between 1'),
    where('case without end', 'case when a > 0 then 1'), where('sum in where', 'sum(a) > 0'),
    where('a trailing alias only', 'as x'), where('a 100 KB identifier', `${'z'.repeat(100000)} > 0`),
    plan('sort by an unknown column', { source: { rows }, ops: [{ sort: ['zz'] }] }, { ...BAD_EXPR, alt: BAD_PLAN }),
    plan('sort direction sideways', { source: { rows }, ops: [{ sort: ['a sideways'] }] }, { ...BAD_EXPR, alt: BAD_PLAN }),
    plan('agg median of a string column', { source: { rows }, ops: [{ agg: ['frob(b)'] }] }, { ...BAD_EXPR, alt: BAD_PLAN }),
    json('POST', '/v1/queries', JSON.stringify({ plan: { source: { rows } }, evil: 1 }), BAD_PLAN, { name: 'query with an unknown member' }),
    json('POST', '/v1/queries', JSON.stringify({ plan: { source: { rows } }, dataframe: 'df-x' }), BAD_PLAN, { name: 'query with plan and dataframe' }),
    json('POST', '/v1/queries', '{}', BAD_PLAN, { name: 'query with nothing' }),
    json('POST', '/v1/queries', '{"dataframe":5}', BAD_PLAN, { name: 'query dataframe 5' }),
    json('POST', '/v1/queries', '{"plan":[]}', BAD_PLAN, { name: 'query plan an array' }),
    json('POST', '/v1/queries', `{"plan":${deepJson(10000, 'object')}}`, INVALID_JSON, { name: 'query deep plan' }),
    json('POST', '/v1/dataframes', JSON.stringify({ source: { rows: [Object.fromEntries(Array.from({ length: 10001 }, (_, i) => [`c${i}`, i]))] } }), COLUMNS, { name: 'one inline row of 10,001 columns' }),
    json('POST', '/v1/dataframes', JSON.stringify({ source: { rows, schema: Object.fromEntries(Array.from({ length: 10001 }, (_, i) => [`c${i}`, 'int64'])) } }), { ...COLUMNS, alt: BAD_PLAN }, { name: 'a schema of 10,001 hints' }),
  ];
}

function hugeCases() {
  const big = `{"csv_null_values":[${'"xxxxxxxxxxxxxx",'.repeat(LIMIT / 16)}"y"]}`;
  const cases = [];
  for (const route of JSON_ROUTES) {
    cases.push(json('POST', route, big, TOO_LARGE, { name: `POST ${route} over the limit` }));
    cases.push(json('POST', route, undefined, TOO_LARGE, {
      name: `POST ${route} chunked over the limit`,
      chunks: Array.from({ length: 80 }, () => `[${'1,'.repeat(8000)}`),
    }));
  }
  cases.push({ name: 'PUT dataset declaring 1 TB', method: 'PUT', path: '/v1/datasets/huge', headers: { 'content-type': 'text/csv', 'content-length': String(2 ** 40) }, body: 'a\n', expect: { status: [413, 400], type: null } });
  return cases;
}

test('hostile requests to a coordinator in setup', async (t) => {
  const target = await new Target('serve', {
    args: ['--max-body-bytes', String(LIMIT), '--max-upload-bytes', String(64 << 20)], setup: uploadFixtures,
  }).start();
  try {
    await runGroup(t, target, 'malformed, deep and odd JSON', malformedCases());
    await runGroup(t, target, 'number limits and wrong types', numberCases());
    await runGroup(t, target, 'wrong methods', methodCases());
    await runGroup(t, target, 'wrong media types', mediaCases());
    await runGroup(t, target, 'names, IDs and encoded traversal in paths', nameCases());
    await runGroup(t, target, 'traversal in plan sources', traversalPlanCases());
    await runGroup(t, target, 'query-string abuse', queryStringCases());
    await runGroup(t, target, 'plan and expression abuse', planCases());
    await runGroup(t, target, 'huge bodies', hugeCases());
  } finally {
    await target.stop();
  }
});
