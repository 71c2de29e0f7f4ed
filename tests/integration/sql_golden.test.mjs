// sql_golden: the golden SQL suite. Every statement of tests/sql/golden/*.sql
// runs through framed's SQL (POST /v1/queries {"sql": ...}) over the plan
// goldens' inputs and must give DuckDB's answer over the same files, read
// with the column types framed infers (the first test checks that premise
// against framed's own schemas). No expectation is written down: DuckDB
// computes each one at test time. The statements run three times: on a
// server with the default config, on one whose config cuts the work finely,
// and on a remote runner with two workers under that config. Then the
// error statements: a syntax error
// with its line, column, caret excerpt and what was expected; an unknown
// column with its suggestion; an unknown table with the nearest name; a
// window frame clause refused as unsupported (422).
import assert from 'node:assert/strict';
import { copyFileSync, mkdirSync, readdirSync, readFileSync } from 'node:fs';
import path from 'node:path';
import { after, before, test } from 'node:test';
import { fileURLToPath } from 'node:url';
import { assertProblem, call, startServer, startWorker } from './lib.mjs';
import { assertSameAnswer, duckAnswer, duckConnect, framedAnswer, framedSubmit, hasTopLevelOrderBy } from './sql_lib.mjs';

const HERE = path.dirname(fileURLToPath(import.meta.url));
const INPUTS = path.join(HERE, '..', 'data', 'golden', 'inputs');
const GOLDEN = path.join(HERE, '..', 'sql', 'golden');

// The tables: file, and the column types framed infers from it (checked below).
const TABLES = {
  trips: ['trips.csv', { id: 'BIGINT', vendor: 'VARCHAR', fare: 'DOUBLE', tip: 'DOUBLE', pickup: 'DATE', note: 'VARCHAR' }],
  vendors: ['vendors.csv', { vendor: 'VARCHAR', name: 'VARCHAR', rating: 'DOUBLE' }],
  groups: ['groups.csv', { g: 'VARCHAR', x: 'BIGINT', y: 'DOUBLE', s: 'VARCHAR' }],
  nums: ['nums.csv', { id: 'BIGINT', a: 'BIGINT', b: 'BIGINT', x: 'DOUBLE', y: 'DOUBLE', s: 'VARCHAR' }],
  sortme: ['sortme.csv', { id: 'BIGINT', grp: 'VARCHAR', val: 'BIGINT', name: 'VARCHAR' }],
  left: ['left.csv', { k: 'BIGINT', kf: 'DOUBLE', name: 'VARCHAR', lv: 'BIGINT' }],
  right: ['right.csv', { k: 'BIGINT', kf: 'BIGINT', name: 'VARCHAR', rv: 'BIGINT' }],
  events: ['events.csv', { id: 'BIGINT', day: 'DATE', ts: 'TIMESTAMPTZ', label: 'VARCHAR' }],
  unicode: ['unicode.csv', { id: 'BIGINT', name: 'VARCHAR', city: 'VARCHAR' }],
  quoted: ['quoted.csv', { id: 'BIGINT', text: 'VARCHAR', n: 'BIGINT' }],
  na: ['na.csv', { id: 'BIGINT', score: 'VARCHAR', grade: 'VARCHAR' }],
  spaced: ['spaced.csv', { id: 'BIGINT', 'my col': 'BIGINT', z: 'VARCHAR' }],
  sales: ['sales.ndjson', { id: 'BIGINT', region: 'VARCHAR', amount: 'DOUBLE', qty: 'BIGINT', ok: 'BOOLEAN', day: 'DATE', extra: 'VARCHAR' }],
};
const FRAMED_TYPE = { BIGINT: 'int64', DOUBLE: 'float64', VARCHAR: 'string', DATE: 'date', TIMESTAMPTZ: 'timestamp', BOOLEAN: 'bool' };

// The statements of one file: a ';' at a line's end ends one; the '--' lines
// before it are its note.
function parseStatements(file) {
  const out = [];
  let note = [];
  let body = [];
  for (const line of readFileSync(path.join(GOLDEN, file), 'utf8').split('\n')) {
    const t = line.trim();
    if (body.length === 0 && t.startsWith('--')) { note.push(t.replace(/^--\s?/, '')); continue; }
    if (body.length === 0 && t === '') continue;
    body.push(line);
    if (t.endsWith(';')) {
      const sql = body.join('\n').trim().replace(/;$/, '');
      out.push({ file, n: out.length + 1, sql, note: note.join(' '), ordered: hasTopLevelOrderBy(sql) });
      note = [];
      body = [];
    }
  }
  assert.equal(body.length, 0, `${file}: a statement without its ';'`);
  return out;
}

const STATEMENTS = readdirSync(GOLDEN).filter((f) => f.endsWith('.sql')).sort().flatMap(parseStatements);

let duck;
let srv;

before(async () => {
  duck = await duckConnect();
  for (const [name, [file, cols]] of Object.entries(TABLES)) {
    const spec = `{${Object.entries(cols).map(([c, t]) => `'${c}': '${t}'`).join(', ')}}`;
    const src = path.join(INPUTS, file);
    const read = file.endsWith('.ndjson')
      ? `read_json('${src}', format='newline_delimited', columns=${spec})`
      : `read_csv('${src}', header=true, nullstr='', allow_quoted_nulls=false, auto_detect=false, columns=${spec})`;
    // TIMESTAMPTZ reads the offsets; framed's timestamps are UTC without a zone.
    const select = Object.entries(cols).map(([c, t]) => (t === 'TIMESTAMPTZ' ? `"${c}"::timestamp as "${c}"` : `"${c}"`)).join(', ');
    await duck.con.run(`create table "${name}" as select ${select} from ${read}`);
  }
  srv = await startServer();
  mkdirSync(srv.dataDir, { recursive: true });
  for (const [file] of Object.values(TABLES)) copyFileSync(path.join(INPUTS, file), path.join(srv.dataDir, file));
});

after(async () => {
  await srv?.stop();
  duck?.con?.closeSync?.();
});

test('the suite has at least 150 statements and DuckDB runs every one', async () => {
  assert.ok(STATEMENTS.length >= 150, `${STATEMENTS.length} statements`);
  for (const s of STATEMENTS) {
    await assert.doesNotReject(duck.con.runAndReadAll(s.sql), `${s.file} #${s.n}: DuckDB refuses ${s.sql}`);
  }
});

test('DuckDB reads the tables with the types framed infers', async () => {
  for (const [name, [, cols]] of Object.entries(TABLES)) {
    const r = await call(srv.base, 'GET', `/v1/datasets/${name}`);
    assert.equal(r.status, 200, r.text);
    const want = Object.entries(cols).map(([c, t]) => ({ name: c, type: FRAMED_TYPE[t] }));
    assert.deepEqual(r.body.schema.map((c) => ({ name: c.name, type: c.type })), want, `${name}: framed's schema`);
  }
});

// The second server's config cuts the work finely (tiny scan tasks and morsels, 5 shuffle
// partitions, no broadcast joins, no maintained order): the answers must not change.
const FORCED_CONFIG = {
  scan_tasks_min_size_bytes: 1,
  scan_tasks_max_size_bytes: 64,
  shuffle_partitions: 5,
  morsel_size_rows: 3,
  maintain_order: false,
  broadcast_join_size_bytes_threshold: 0,
};

for (const [label, mode] of [['default config', 'default'], ['work cut finely', 'forced'],
  ['remote runner with 2 workers, work cut finely', 'remote']]) {
  test(`framed SQL gives DuckDB's answers: ${label}`, async (t) => {
    const cluster = mode === 'default' ? { coord: srv, stop: async () => {} } : await startForced(mode === 'remote');
    try {
      await runStatements(t, cluster.coord.base);
    } finally {
      await cluster.stop();
    }
  });
}

// A server (or a remote coordinator with 2 workers on its data dir) with the
// inputs and FORCED_CONFIG.
async function startForced(remote) {
  const coord = await startServer(remote ? { args: ['--runner', 'remote'] } : {});
  const workers = [];
  const stop = async () => {
    for (const w of workers) await w.stop();
    await coord.stop();
  };
  try {
    mkdirSync(coord.dataDir, { recursive: true });
    for (const [file] of Object.values(TABLES)) copyFileSync(path.join(INPUTS, file), path.join(coord.dataDir, file));
    if (remote) {
      for (let i = 0; i < 2; i++) workers.push(await startWorker(coord.base, { args: ['--threads', '1', '--data-dir', coord.dataDir] }));
      let active = 0;
      for (let i = 0; i < 200 && active < 2; i++) {
        const w = await call(coord.base, 'GET', '/v1/workers');
        active = w.status === 200 ? w.body.workers.filter((x) => x.state === 'active').length : 0;
        if (active < 2) await new Promise((res) => setTimeout(res, 100));
      }
      assert.equal(active, 2, 'both workers are active');
    }
    const r = await call(coord.base, 'POST', '/v1/config', { json: FORCED_CONFIG });
    assert.equal(r.status, 200, r.text);
  } catch (e) {
    await stop();
    throw e;
  }
  return { coord, stop };
}

async function runStatements(t, base) {
  const failed = [];
  for (const s of STATEMENTS) {
    const label = `${s.file} #${s.n}: ${s.sql.replace(/\s+/g, ' ').slice(0, 90)}`;
    await t.test(label, async () => {
      const want = await duckAnswer(duck.con, s.sql);
      try {
        const got = await framedAnswer(base, s.sql);
        assertSameAnswer(got, want, { ordered: s.ordered, what: `${s.file} #${s.n}` });
      } catch (e) {
        failed.push(`${s.file} #${s.n}`);
        e.message = `${e.message}\nstatement: ${s.sql}${s.note ? `\nnote: ${s.note}` : ''}`;
        throw e;
      }
    });
  }
  t.diagnostic(`${STATEMENTS.length - failed.length} of ${STATEMENTS.length} statements agree; failing: ${failed.join(', ')}`);
}

// ---------------------------------------------------------------- errors
// The string members of a problem body, to find the caret excerpt in.
const excerptOf = (body) => String(body.excerpt ?? '');

test('a syntax error names its line and column, shows a caret and what was expected', async () => {
  const sql = 'select id, fare\nfrom trips\norder id';
  const r = await framedSubmit(srv.base, sql);
  assertProblem(r, 400, 'invalid-sql');
  assert.equal(r.body.line, 3, r.text);
  assert.equal(r.body.column, 7, r.text);
  assert.match(r.body.detail, /line 3, column 7/, r.text);
  assert.match(r.body.detail, /expected[^]*\bBY\b/i, r.text);
  assert.match(r.body.detail, /found[^]*\bid\b/i, r.text);
  assert.ok(excerptOf(r.body).includes('order id\n      ^'), `caret excerpt: ${r.text}`);
});

test('a syntax error on the first line, and one at the end of the text', async () => {
  let r = await framedSubmit(srv.base, 'select id, fare + from trips');
  assertProblem(r, 400, 'invalid-sql');
  assert.equal(r.body.line, 1, r.text);
  assert.equal(r.body.column, 19, r.text); // 'from' where an operand was expected
  assert.match(r.body.detail, /expected/i, r.text);
  assert.ok(excerptOf(r.body).includes('select id, fare + from trips\n' + ' '.repeat(18) + '^'), r.text);
  r = await framedSubmit(srv.base, 'select id from trips where (fare > 10');
  assertProblem(r, 400, 'invalid-sql');
  assert.equal(r.body.line, 1, r.text);
  assert.equal(r.body.column, 38, r.text);
  assert.match(r.body.detail, /expected[^]*'\)'/i, r.text);
  r = await framedSubmit(srv.base, "select 'unterminated from trips");
  assertProblem(r, 400, 'invalid-sql');
  assert.equal(r.body.line, 1, r.text);
  assert.equal(r.body.column, 8, r.text);
});

test('an unknown column suggests the nearest name', async () => {
  const r = await framedSubmit(srv.base, 'select id, vendr\nfrom trips');
  assertProblem(r, 400, 'invalid-sql');
  assert.equal(r.body.line, 1, r.text);
  assert.equal(r.body.column, 12, r.text);
  assert.match(r.body.detail, /vendr/, r.text);
  assert.match(r.body.detail, /did you mean[^]*vendor/i, r.text);
  assert.ok(excerptOf(r.body).includes('select id, vendr\n           ^'), r.text);
  // Quoted names are exact: "ID" is not id.
  const q = await framedSubmit(srv.base, 'select "ID" from trips');
  assertProblem(q, 400, 'invalid-sql');
  assert.match(q.body.detail, /did you mean[^]*\bid\b/i, q.text);
  // A qualified unknown column.
  const t = await framedSubmit(srv.base, 'select t.fair from trips t');
  assertProblem(t, 400, 'invalid-sql');
  assert.match(t.body.detail, /did you mean[^]*fare/i, t.text);
});

test('an unknown table is 404 dataset-not-found with the nearest name', async () => {
  const r = await framedSubmit(srv.base, 'select *\nfrom trip');
  assertProblem(r, 404, 'dataset-not-found');
  assert.equal(r.body.line, 2, r.text);
  assert.equal(r.body.column, 6, r.text);
  assert.match(r.body.detail, /trip/, r.text);
  assert.match(r.body.detail, /did you mean[^]*trips/i, r.text);
  const j = await framedSubmit(srv.base, 'select * from trips t join vendor v on t.vendor = v.vendor');
  assertProblem(j, 404, 'dataset-not-found');
  assert.match(j.body.detail, /vendors/, j.text);
});

test('named windows: a duplicate name, an overridden ORDER BY or PARTITION BY are 400 invalid-sql at the clause', async () => {
  let r = await framedSubmit(srv.base, 'select id, rank() over w as r from sortme\nwindow w as (order by id), w as (order by val)');
  assertProblem(r, 400, 'invalid-sql');
  assert.match(r.body.detail, /window "w" is already defined/, r.text);
  assert.equal(r.body.line, 2, r.text);
  assert.equal(r.body.column, 28, r.text);
  r = await framedSubmit(srv.base, 'select id, rank() over (w order by val) as r from sortme window w as (partition by grp order by id)');
  assertProblem(r, 400, 'invalid-sql');
  assert.match(r.body.detail, /Cannot override ORDER BY clause of window/, r.text);
  r = await framedSubmit(srv.base, 'select id, rank() over (w partition by grp) as r from sortme window w as (order by id)');
  assertProblem(r, 400, 'invalid-sql');
  assert.match(r.body.detail, /PARTITION BY/, r.text);
  r = await framedSubmit(srv.base, 'select id, lead(val, 2000000) over (order by id) as n from sortme');
  assertProblem(r, 400, 'invalid-sql');
  assert.equal(r.body.column, 22, r.text);
  r = await framedSubmit(srv.base, 'select id, lag(val, 1, 1.5) over (order by id) as p from sortme');
  assertProblem(r, 400, 'invalid-sql');
  assert.equal(r.body.column, 24, r.text);
});

test('an int64 sum past int64 fails the query with arithmetic-overflow naming the column, GROUP BY and window alike', async () => {
  // each value fits (ids 1..8), their sum does not: DuckDB answers with a HUGEINT
  for (const sql of ['select grp, sum(id + 9223372036854775000) as s from sortme group by grp',
    'select sum(id + 9223372036854775000) as s from sortme',
    'select id, sum(id + 9223372036854775000) over (order by id) as s from sortme']) {
    const r = await framedSubmit(srv.base, sql);
    assert.ok([200, 201, 202].includes(r.status), r.text);
    assert.equal(r.body.state, 'failed', `${sql}: ${r.text}`);
    assert.equal(r.body.error.kind, 'arithmetic-overflow', r.text);
    assert.match(r.body.error.message, /cast to double to sum past int64/, r.text);
  }
  // cast to double, the sum is DuckDB's
  const ok = await framedAnswer(srv.base, 'select sum(cast(id + 9223372036854775000 as double)) as s from sortme');
  assert.ok(Math.abs(ok.rows[0][0] - 8 * 9223372036854775000) / 7.4e19 < 1e-9, JSON.stringify(ok));
});

test('a window frame clause is unsupported (422), named, never misread', async () => {
  const sql = 'select id,\n  sum(fare) over (order by id rows between 1 preceding and current row) as s\nfrom trips';
  const r = await framedSubmit(srv.base, sql);
  assertProblem(r, 422, 'unsupported-sql');
  assert.match(r.body.detail, /ROWS BETWEEN/i, r.text);
  assert.match(r.body.detail, /not supported/i, r.text);
  assert.equal(r.body.line, 2, r.text);
  assert.equal(r.body.column, 31, r.text);
  assert.ok(excerptOf(r.body).includes('^'), r.text);
  const g = await framedSubmit(srv.base, 'select id, count(*) over (order by id range between unbounded preceding and current row) as c from trips');
  assertProblem(g, 422, 'unsupported-sql');
  assert.match(g.body.detail, /RANGE BETWEEN/i, g.text);
});

test('an ambiguous column and a column neither grouped nor aggregated are 400 invalid-sql', async () => {
  const a = await framedSubmit(srv.base, 'select name from trips t join vendors v on t.vendor = v.vendor join sortme s on s.id = t.id');
  assertProblem(a, 400, 'invalid-sql');
  assert.match(a.body.detail, /ambiguous/i, a.text);
  assert.equal(a.body.line, 1, a.text);
  assert.equal(a.body.column, 8, a.text);
  const g = await framedSubmit(srv.base, 'select vendor, fare from trips group by vendor');
  assertProblem(g, 400, 'invalid-sql');
  assert.match(g.body.detail, /fare/, g.text);
  assert.equal(g.body.column, 16, g.text);
  const w = await framedSubmit(srv.base, 'select id from trips where sum(fare) > 10');
  assertProblem(w, 400, 'invalid-sql');
  assert.match(w.body.detail, /aggregate/i, w.text);
});

test('nesting, length and tokens are bounded: 400 invalid-sql naming the bound', async () => {
  const deep = await framedSubmit(srv.base, `select ${'('.repeat(100)}1${')'.repeat(100)} as x`);
  assertProblem(deep, 400, 'invalid-sql');
  assert.match(deep.body.detail, /nest|deep/i, deep.text);
  const long = await framedSubmit(srv.base, `select 1 as x -- ${'y'.repeat(300 * 1024)}`);
  assertProblem(long, 400, 'invalid-sql');
  assert.match(long.body.detail, /262144/, long.text);
  const many = await framedSubmit(srv.base, `select ${Array.from({ length: 70000 }, () => '1').join(',')}`);
  assertProblem(many, 400, 'invalid-sql');
  assert.match(many.body.detail, /65536/, many.text);
});

test('refused statements change nothing: the server still answers', async () => {
  const got = await framedAnswer(srv.base, 'select count(*) as n from trips');
  assert.deepEqual(got.rows, [[8]]);
});
