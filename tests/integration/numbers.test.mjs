// numbers: every float framed prints - previews, JSON, CSV and NDJSON
// results, and any JSON the server writes with jansson (dataframes, queries,
// stages, info) - is the shortest text that reads back to the same double,
// alike everywhere (jansson alone prints 64.904572 as 64.904572000000002).
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { call, startServer } from './lib.mjs';

const CSV = 'k,v3\na,64.904572\nb,0.1\nc,0.30000000000000004\nd,1e21\ne,3\nf,2.5e-310\ng,-0.000123\n';
const WANT = [64.904572, 0.1, 0.30000000000000004, 1e21, 3, 2.5e-310, -0.000123];

// The significant digits of a decimal text ("6.4904572e+1" -> "64904572").
function digits(text) {
  const mant = text.toLowerCase().split('e')[0].replace('-', '').replace('.', '');
  return mant.replace(/^0+/, '').replace(/0+$/, '') || '0';
}

// Every real token outside strings in a JSON (or CSV/NDJSON) text.
function realTokens(text) {
  const out = [];
  let i = 0;
  while (i < text.length) {
    const c = text[i];
    if (c === '"') {
      for (i++; i < text.length && text[i] !== '"'; i++) if (text[i] === '\\') i++;
      i++;
      continue;
    }
    const m = /^-?[0-9][0-9.eE+-]*/.exec(text.slice(i, i + 40));
    if (m && (i === 0 || !/[A-Za-z0-9_]/.test(text[i - 1]))) {
      if (/[.eE]/.test(m[0])) out.push(m[0]);
      i += m[0].length;
      continue;
    }
    i++;
  }
  return out;
}

// A token is shortest when it has no more significant digits than JS's
// shortest round-trip form (toExponential() without an argument).
function assertShortest(text, where) {
  const tokens = realTokens(text);
  for (const t of tokens) {
    const v = Number(t);
    assert.ok(Number.isFinite(v), `${where}: ${t}`);
    assert.equal(digits(t), digits(v.toExponential()), `${where}: ${t} is not the shortest form of ${v}`);
  }
  return tokens;
}

test('floats print shortest in previews, results of every format, and server JSON', async () => {
  const srv = await startServer();
  try {
    let r = await call(srv.base, 'PUT', '/v1/datasets/nums', { body: CSV, headers: { 'content-type': 'text/csv' } });
    assert.ok(r.status === 200 || r.status === 201, r.text);
    r = await call(srv.base, 'POST', '/v1/dataframes', { json: { source: { dataset: 'nums' } } });
    assert.equal(r.status, 201, r.text);
    assert.ok(r.text.includes('64.904572,') || r.text.includes('64.904572]'), r.text);
    assert.ok(!r.text.includes('64.904572000000002'), r.text);
    const previewReals = assertShortest(r.text, 'preview');
    assert.ok(previewReals.length >= WANT.length, r.text);
    const df = r.body.id;
    assertShortest((await call(srv.base, 'GET', `/v1/dataframes/${df}`)).text, 'dataframe');

    r = await call(srv.base, 'POST', '/v1/queries?wait=60', { json: {
      plan: { source: { dataset: 'nums' }, ops: [{ select: ['k', 'v3', 'v3 * 3 as t', 'v3 / 7 as d'] }] } } });
    assert.equal(r.status, 200, r.text);
    const q = r.body.id;
    const res = await call(srv.base, 'GET', `/v1/queries/${q}/result`);
    assert.equal(res.status, 200, res.text);
    assert.deepEqual(res.body.rows.map((row) => row[1]), WANT);
    const jsonReals = assertShortest(res.text, 'json result');
    for (const fmt of ['csv', 'ndjson']) {
      const t = await call(srv.base, 'GET', `/v1/queries/${q}/result?format=${fmt}`);
      assert.equal(t.status, 200);
      // the same texts as the JSON result, value for value
      assert.deepEqual(assertShortest(t.text, fmt), jsonReals, fmt);
    }
    assert.ok(jsonReals.includes('64.904572') && jsonReals.includes('0.1') && jsonReals.includes('3.0'),
      jsonReals.join(' '));
    // the other JSON the server writes through jansson
    for (const p of [`/v1/queries/${q}`, `/v1/queries/${q}/stages`, '/v1/queries', '/v1/info',
      '/v1/runner', '/v1/config', '/v1/datasets']) {
      const t = await call(srv.base, 'GET', p);
      assert.equal(t.status, 200, `${p}: ${t.text}`);
      assertShortest(t.text, p);
    }
  } finally {
    await srv.stop();
  }
});
