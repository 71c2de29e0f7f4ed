// metrics: /metrics of both roles read by a strict parser of the Prometheus
// text format (0.0.4), as a scrape would: one series per name and label set,
// HELP and TYPE once per family and before its samples, label syntax,
// histograms whole (cumulative buckets, +Inf = _count). Also the families the
// contract promises: the latency histogram by route and method,
// framed_build_info and process_*.
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { test } from 'node:test';
import { call, startServer, startWorker } from './lib.mjs';

const NAME = /^[a-zA-Z_:][a-zA-Z0-9_:]*$/;
const LABEL_NAME = /^[a-zA-Z_][a-zA-Z0-9_]*$/;
const TYPES = new Set(['counter', 'gauge', 'histogram', 'summary', 'untyped']);

// Parses `{a="x",b="y\"z"}` at text[i] (the '{'): returns [labels, next index].
function parseLabels(text, i, where) {
  const labels = {};
  assert.equal(text[i], '{');
  i++;
  while (text[i] !== '}') {
    const eq = text.indexOf('=', i);
    assert.ok(eq > i, `${where}: label without '='`);
    const name = text.slice(i, eq);
    assert.match(name, LABEL_NAME, `${where}: label name ${JSON.stringify(name)}`);
    assert.ok(!(name in labels), `${where}: label ${name} twice`);
    assert.equal(text[eq + 1], '"', `${where}: label value not quoted`);
    let j = eq + 2;
    let value = '';
    for (; j < text.length && text[j] !== '"'; j++) {
      if (text[j] === '\\') {
        j++;
        assert.ok(['\\', '"', 'n'].includes(text[j]), `${where}: bad escape \\${text[j]}`);
        value += text[j] === 'n' ? '\n' : text[j];
      } else {
        value += text[j];
      }
    }
    assert.equal(text[j], '"', `${where}: unterminated label value`);
    labels[name] = value;
    i = j + 1;
    if (text[i] === ',') i++;
    else assert.equal(text[i], '}', `${where}: expected ',' or '}'`);
  }
  return [labels, i + 1];
}

function familyOf(name, types) {
  for (const suffix of ['_bucket', '_sum', '_count']) {
    const base = name.endsWith(suffix) ? name.slice(0, -suffix.length) : null;
    if (base && (types.get(base) === 'histogram' || types.get(base) === 'summary')) return base;
  }
  return name;
}

// Returns {types: Map family -> type, samples: [{name, labels, value}]}.
export function parseExposition(text) {
  assert.ok(text.endsWith('\n'), 'the exposition ends with a newline');
  const types = new Map();
  const helps = new Set();
  const seenSamples = new Set(); // families that have had samples
  const series = new Set();
  const samples = [];
  for (const [n, line] of text.slice(0, -1).split('\n').entries()) {
    const where = `line ${n + 1}: ${line}`;
    if (line === '') continue;
    if (line.startsWith('#')) {
      const m = /^# (HELP|TYPE) (\S+) ?(.*)$/.exec(line);
      if (!m) continue; // a comment
      const [, kind, name, rest] = m;
      assert.match(name, NAME, where);
      assert.ok(!seenSamples.has(name), `${where}: ${kind} after the family's samples`);
      if (kind === 'HELP') {
        assert.ok(!helps.has(name), `${where}: HELP twice`);
        helps.add(name);
      } else {
        assert.ok(!types.has(name), `${where}: TYPE twice`);
        assert.ok(TYPES.has(rest), `${where}: unknown type`);
        types.set(name, rest);
      }
      continue;
    }
    const nameEnd = line.search(/[{ ]/);
    assert.ok(nameEnd > 0, where);
    const name = line.slice(0, nameEnd);
    assert.match(name, NAME, where);
    let labels = {};
    let i = nameEnd;
    if (line[i] === '{') [labels, i] = parseLabels(line, i, where);
    assert.equal(line[i], ' ', `${where}: no space before the value`);
    const fields = line.slice(i + 1).split(' ');
    assert.ok(fields.length <= 2, `${where}: extra fields`);
    assert.match(fields[0], /^([-+]?(\d+\.?\d*([eE][-+]?\d+)?|\.\d+([eE][-+]?\d+)?)|[-+]?Inf|NaN)$/, `${where}: value`);
    const key = `${name}{${Object.entries(labels).sort().map(([k, v]) => `${k}=${JSON.stringify(v)}`).join(',')}}`;
    assert.ok(!series.has(key), `${where}: duplicate series ${key}`);
    series.add(key);
    const family = familyOf(name, types);
    seenSamples.add(family);
    samples.push({ name, family, labels, value: Number(fields[0].replace(/^\+?Inf$/, 'Infinity')) });
  }
  checkHistograms(types, samples);
  return { types, samples };
}

// Each histogram series: buckets non-decreasing in le, a +Inf bucket equal to _count, a _sum.
function checkHistograms(types, samples) {
  for (const [family, type] of types) {
    if (type !== 'histogram') continue;
    const groups = new Map();
    for (const s of samples.filter((x) => x.family === family)) {
      const { le, ...rest } = s.labels;
      const key = JSON.stringify(Object.entries(rest).sort());
      if (!groups.has(key)) groups.set(key, { buckets: [], sum: null, count: null });
      const g = groups.get(key);
      if (s.name === `${family}_bucket`) {
        assert.ok(le !== undefined, `${family}_bucket without le`);
        g.buckets.push([le === '+Inf' ? Infinity : Number(le), s.value]);
      } else if (s.name === `${family}_sum`) g.sum = s.value;
      else if (s.name === `${family}_count`) g.count = s.value;
    }
    for (const [key, g] of groups) {
      assert.notEqual(g.sum, null, `${family}${key}: no _sum`);
      assert.notEqual(g.count, null, `${family}${key}: no _count`);
      const last = g.buckets.at(-1);
      assert.ok(last && last[0] === Infinity, `${family}${key}: no +Inf bucket last`);
      assert.equal(last[1], g.count, `${family}${key}: +Inf bucket != _count`);
      for (let i = 1; i < g.buckets.length; i++) {
        assert.ok(g.buckets[i][0] > g.buckets[i - 1][0], `${family}${key}: le not increasing`);
        assert.ok(g.buckets[i][1] >= g.buckets[i - 1][1], `${family}${key}: buckets not cumulative`);
      }
    }
  }
}

// Asserts the families every role exports, and the method label of the histogram.
function assertCommonFamilies(parsed, role, route) {
  const { types, samples } = parsed;
  const one = (name) => {
    const found = samples.filter((s) => s.name === name);
    assert.equal(found.length, 1, `${name}: ${found.length} samples`);
    return found[0];
  };
  const info = one('framed_build_info');
  assert.equal(info.value, 1);
  assert.match(info.labels.version, /^\d+\.\d+\.\d+/);
  assert.equal(info.labels.role, role);
  assert.equal(types.get('process_cpu_seconds_total'), 'counter');
  for (const g of ['process_resident_memory_bytes', 'process_open_fds', 'process_max_fds', 'process_start_time_seconds']) {
    assert.equal(types.get(g), 'gauge', g);
  }
  assert.ok(one('process_resident_memory_bytes').value > 1024 * 1024);
  assert.ok(one('process_open_fds').value >= 3);
  assert.ok(one('process_max_fds').value >= one('process_open_fds').value);
  assert.ok(one('process_cpu_seconds_total').value >= 0);
  const start = one('process_start_time_seconds').value;
  assert.ok(start > Date.now() / 1000 - 3600 && start <= Date.now() / 1000 + 5, `start time ${start}`);
  // GET and HEAD of one route are two series of the histogram, not one twice.
  const counts = samples.filter((s) => s.name === 'framed_http_request_duration_seconds_count' && s.labels.route === route);
  assert.deepEqual(counts.map((s) => s.labels.method).sort(), ['GET', 'HEAD']);
}

test('/metrics of the coordinator parses strictly, with build_info, process_* and method labels', async () => {
  const srv = await startServer();
  try {
    await call(srv.base, 'GET', '/v1/info');
    await call(srv.base, 'HEAD', '/v1/info');
    await call(srv.base, 'POST', '/v1/queries?wait=10', { json: { plan: { source: { rows: [{ a: 1 }] } } } });
    const r = await call(srv.base, 'GET', '/metrics');
    assert.equal(r.status, 200);
    assert.match(r.headers.get('content-type'), /^text\/plain; version=0\.0\.4/);
    const parsed = parseExposition(r.text);
    assertCommonFamilies(parsed, 'coordinator', '/v1/info');
    // Families other parts of the coordinator add, checked when present.
    for (const [family, type] of parsed.types) {
      if (/^framed_(store|workers|tasks)/.test(family)) assert.ok(TYPES.has(type), family);
    }
  } finally {
    await srv.stop();
  }
});

test('/metrics of a worker parses strictly, with build_info, process_* and method labels', async () => {
  const coordinator = await startServer();
  try {
    const worker = await startWorker(coordinator.base);
    try {
      await call(worker.base, 'GET', '/v1/info');
      await call(worker.base, 'HEAD', '/v1/info');
      const r = await call(worker.base, 'GET', '/metrics');
      assert.equal(r.status, 200);
      assertCommonFamilies(parseExposition(r.text), 'worker', '/v1/info');
    } finally {
      await worker.stop();
    }
  } finally {
    await coordinator.stop();
  }
});

// Prometheus's own linter (Debian's prometheus package, a test package of
// scripts/deps.sh): exit 0 and nothing to say, for a coordinator with a
// remote runner, a frozen config and a worker, and for that worker.
function promtoolCheck(text, who) {
  let out;
  try {
    out = execFileSync('promtool', ['check', 'metrics'], { input: text, encoding: 'utf8', stdio: ['pipe', 'pipe', 'pipe'] });
  } catch (e) {
    assert.fail(`promtool check metrics (${who}) exited ${e.status}: ${e.stdout}${e.stderr}`);
  }
  assert.equal(out.trim(), '', `promtool check metrics (${who})`);
}

test('promtool check metrics is clean for the coordinator and a worker', async () => {
  const coordinator = await startServer({ args: ['--runner', 'remote'] });
  try {
    const worker = await startWorker(coordinator.base);
    try {
      for (let i = 0; i < 100; i++) {
        const w = await call(coordinator.base, 'GET', '/v1/workers');
        if (w.body.workers?.some((x) => x.state === 'active')) break;
        await new Promise((r) => setTimeout(r, 100));
      }
      const q = await call(coordinator.base, 'POST', '/v1/queries?wait=30',
        { json: { plan: { source: { rows: [{ a: 1 }, { a: 2 }] }, ops: [{ agg: ['sum(a) as s'] }] } } });
      assert.equal(q.body.state, 'succeeded', JSON.stringify(q.body));
      promtoolCheck((await call(coordinator.base, 'GET', '/metrics')).text, 'coordinator');
      promtoolCheck((await call(worker.base, 'GET', '/metrics')).text, 'worker');
    } finally {
      await worker.stop();
    }
  } finally {
    await coordinator.stop();
  }
});

test('the strict parser refuses what a scrape would drop', () => {
  assert.throws(() => parseExposition('# TYPE a gauge\na{x="1"} 1\na{x="1"} 2\n'), /duplicate series/);
  assert.throws(() => parseExposition('# TYPE a gauge\n# TYPE a gauge\na 1\n'), /TYPE twice/);
  assert.throws(() => parseExposition('a 1\n# HELP a late\n'), /after the family's samples/);
  assert.throws(() => parseExposition('a{1x="1"} 1\n'), /label name/);
  assert.throws(() => parseExposition('a{x=1} 1\n'), /not quoted/);
  assert.throws(() => parseExposition('# TYPE h histogram\nh_bucket{le="1"} 2\nh_bucket{le="+Inf"} 1\nh_sum 1\nh_count 1\n'), /cumulative/);
  assert.doesNotThrow(() => parseExposition('# HELP a x\n# TYPE a counter\na{x="q\\"\\\\"} 1.5e3\n'));
});
