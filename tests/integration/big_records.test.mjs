// big_records: records longer than the readers' 1 MiB buffers (2 MB and
// 50 MB fields, quoted fields full of line feeds, long NDJSON lines) upload
// and query whole, also when tiny scan tasks cut ranges inside them; wide
// headers and inline rows are 422 too-many-columns past FR_MAX_COLUMNS
// (10000) and duplicate names stay fast; a NUL byte in a field reads the
// same in the preview and the query; contradicting plan members are 400s.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { assertProblem, call, startServer } from './lib.mjs';

const MB = 1000 * 1000;

async function upload(srv, name, body, type = 'text/csv') {
  return call(srv.base, 'PUT', `/v1/datasets/${name}`, { body, headers: { 'content-type': type } });
}

async function rows(srv, plan) {
  const r = await call(srv.base, 'POST', '/v1/queries?wait=120', { json: { plan } });
  assert.equal(r.status, 200, r.text);
  assert.equal(r.body.state, 'succeeded', JSON.stringify(r.body));
  const res = await call(srv.base, 'GET', `/v1/queries/${r.body.id}/result`);
  assert.equal(res.status, 200, res.text);
  return res.body.rows;
}

// id,text with one `len`-byte field per row (letters, or quoted with a line
// feed every 7 bytes).
function longCsv(nrows, len, newlines) {
  const parts = ['id,text\n'];
  for (let i = 0; i < nrows; i++) {
    const unit = newlines ? `${String.fromCharCode(97 + i)}xxxxx\n` : String.fromCharCode(97 + i);
    const field = unit.repeat(Math.ceil(len / unit.length)).slice(0, len);
    parts.push(newlines ? `${i},"${field}"\n` : `${i},${field}\n`);
  }
  return parts.join('');
}

const LENGTHS = { source: { dataset: 'x' }, ops: [{ select: ['id', 'length(text) as n'] }, { sort: ['id'] }] };
const lengths = (name) => ({ ...LENGTHS, source: { dataset: name } });

test('records longer than the read buffer upload and query whole', async (t) => {
  const srv = await startServer();
  try {
    // Tiny scan tasks: byte ranges start and end inside the long records.
    let r = await call(srv.base, 'POST', '/v1/config', {
      json: { scan_tasks_min_size_bytes: 1, scan_tasks_max_size_bytes: 100000 },
    });
    assert.equal(r.status, 200, r.text);

    await t.test('2 MB fields', async () => {
      r = await upload(srv, 'two', longCsv(3, 2 * MB, false));
      assert.equal(r.status, 201, r.text);
      assert.deepEqual(await rows(srv, lengths('two')), [[0, 2 * MB], [1, 2 * MB], [2, 2 * MB]]);
    });

    await t.test('one 50 MB field', async () => {
      r = await upload(srv, 'fifty', longCsv(1, 50 * MB, false));
      assert.equal(r.status, 201, r.text);
      assert.deepEqual(await rows(srv, lengths('fifty')), [[0, 50 * MB]]);
    });

    await t.test('quoted fields full of line feeds', async () => {
      r = await upload(srv, 'lines', longCsv(2, 3 * MB, true));
      assert.equal(r.status, 201, r.text);
      assert.deepEqual(await rows(srv, lengths('lines')), [[0, 3 * MB], [1, 3 * MB]]);
      const got = await rows(srv, { source: { dataset: 'lines' }, ops: [
        { select: ['id', 'substr(text, 3000000 - 16, 14) as tail'] }, { sort: ['id'] }] });
      const tail = (c) => `${c}xxxxx\n${c}xxxxx\n${c}xxxxx\n`.slice(0, 14);
      // 1-based 2,999,984 is 0-based 2,999,983, a multiple of 7: a unit starts there
      assert.deepEqual(got, [[0, tail('a')], [1, tail('b')]]);
    });

    await t.test('NDJSON lines of 3 MB', async () => {
      const body = [0, 1, 2].map((i) => JSON.stringify({ id: i, text: 'q'.repeat(3 * MB) })).join('\n');
      r = await upload(srv, 'nd', `${body}\n`, 'application/x-ndjson');
      assert.equal(r.status, 201, r.text);
      assert.deepEqual(await rows(srv, lengths('nd')), [[0, 3 * MB], [1, 3 * MB], [2, 3 * MB]]);
    });
  } finally {
    await srv.stop();
  }
});

test('column limits, duplicate names, NUL bytes and plan members', async (t) => {
  const srv = await startServer();
  try {
    await t.test('1e5 header columns: 422 too-many-columns, nothing stored', async () => {
      const names = Array.from({ length: 100000 }, (_, i) => `c${i}`);
      let r = await upload(srv, 'wide', `${names.join(',')}\n${names.map(() => '1').join(',')}\n`);
      assertProblem(r, 422, 'too-many-columns');
      assert.match(r.body.detail, /10000/);
      r = await upload(srv, 'widend', `${JSON.stringify(Object.fromEntries(names.map((n) => [n, 1])))}\n`,
        'application/x-ndjson');
      assertProblem(r, 422, 'too-many-columns');
      assertProblem(await call(srv.base, 'GET', '/v1/datasets/wide'), 404, 'dataset-not-found');
    });

    await t.test('2,000 copies of one header name: deduplicated', async () => {
      const header = Array(2000).fill('a').join(',');
      const r = await upload(srv, 'dups', `${header}\n${Array(2000).fill('7').join(',')}\n`);
      assert.equal(r.status, 201, r.text);
      assert.deepEqual(r.body.schema.slice(0, 3).map((c) => c.name), ['a', 'a_2', 'a_3']);
      assert.equal(r.body.schema[1999].name, 'a_2000');
    });

    await t.test('inline rows with 1e5 keys: 422 too-many-columns', async () => {
      const row = Object.fromEntries(Array.from({ length: 100000 }, (_, i) => [`k${i}`, i]));
      const r = await call(srv.base, 'POST', '/v1/dataframes', { json: { source: { rows: [row] } } });
      assertProblem(r, 422, 'too-many-columns');
    });

    await t.test('a NUL byte: the preview equals the query', async () => {
      let r = await upload(srv, 'nul', 'id,s\n1,a\u0000b\n2,"c\u0000"\n3,d\n');
      assert.equal(r.status, 201, r.text);
      const plan = { source: { dataset: 'nul' }, ops: [{ sort: ['id'] }] };
      const want = [[1, 'a\u0000b'], [2, 'c\u0000'], [3, 'd']];
      r = await call(srv.base, 'POST', '/v1/dataframes', { json: plan });
      assert.equal(r.status, 201, r.text);
      assert.deepEqual(r.body.preview, want);
      assert.deepEqual(await rows(srv, plan), want);
    });

    await t.test('contradicting or missing plan members: 400 invalid-plan naming them', async () => {
      const cases = [
        [{ source: { dataset: 'nul', rows: [{ a: 1 }] } }, /dataset.*rows|rows.*dataset/],
        [{ source: { dataset: 'nul' }, ops: [{ groupby: ['id'] }] }, /agg/],
        [{ source: { dataset: 'nul' }, ops: [{ join: { right: { source: { dataset: 'nul' } }, on: ['id'], suffix: '' } }] }, /suffix/],
        [{ source: { dataset: 'nul' }, ops: [{ with_column: { name: 'x', expr: 'id', as: 'y' } }] }, /as/],
      ];
      for (const [plan, detail] of cases) {
        const r = await call(srv.base, 'POST', '/v1/dataframes', { json: plan });
        assertProblem(r, 400, 'invalid-plan');
        assert.match(r.body.detail, detail);
      }
    });
  } finally {
    await srv.stop();
  }
});
