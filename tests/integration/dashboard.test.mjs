// dashboard: the web dashboard (static/) in Debian's headless Chromium against the real server
// (local runner, an admin token), at 1440x900 and 390x844. Config: 401 without the token, a 422
// shown at its field, byte fields saved with units; Datasets: upload with progress and a confirm
// before replacing, compose and run a query: its state, stage graph and result grid (sorted,
// formatted) and CSV download; a slow query whose progress moves and whose Cancel shows
// cancelled at once; the lock (a 409 for edits made before the freeze), the reset, and the
// history that survives it. Every view is screenshot at both widths into the artifacts dir; a
// console error or page error fails the test; no chromium fails it too (never a skip).
// Also: the static files as served (types, ETag, traversal refused) and the vendored libraries
// equal to node_modules' pinned copies.
import assert from 'node:assert/strict';
import { cpSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, statSync, symlinkSync, writeFileSync } from 'node:fs';
import { randomBytes } from 'node:crypto';
import http from 'node:http';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { test } from 'node:test';
import { call, SOURCE_DIR, startServer } from './lib.mjs';
import { assertNoSideScroll, go, launch, openPage, shoot, shootViews, STATIC_DIR, waitFor } from './dashboard_lib.mjs';

const TRIPS_CSV = [
  'trip_id,vendor,passengers,distance_km,fare',
  '1,acme,1,2.0,10.0', '2,zoom,2,4.0,20.0', '3,acme,1,1.0,5.5', '4,zoom,0,3.0,9.0',
  '5,cabco,3,10.0,30.0', '6,,1,4.0,1234.5', '',
].join('\n');

// 2M rows (~36 MB); read 40 times over in 64 KiB scan tasks it keeps a query busy for many
// seconds, in thousands of short tasks, so a cancel lands between two of them.
function writeBig(dataDir) {
  const parts = ['k,v,s\n'];
  let buf = '';
  for (let i = 0; i < 2000000; i++) {
    buf += `${(i * 7919) % 100003},${i},x${i % 1000}\n`;
    if (buf.length > 1 << 20) { parts.push(buf); buf = ''; }
  }
  parts.push(buf);
  writeFileSync(path.join(dataDir, 'big.csv'), parts.join(''));
}
const SLOW_PLAN = {
  source: { dataset: 'big' },
  ops: [...Array.from({ length: 40 }, () => ({ union: { source: { dataset: 'big' } } })),
    { groupby: ['k'], agg: ['count(*) as n', 'sum(v) as t'] }],
};

const VENDORED = [
  ['preact/preact.mjs', 'preact/dist/preact.mjs'], ['preact/hooks.mjs', 'preact/hooks/dist/hooks.mjs'],
  ['preact/LICENSE', 'preact/LICENSE'], ['htm/htm.mjs', 'htm/dist/htm.mjs'], ['htm/LICENSE', 'htm/LICENSE'],
  ['uplot/uPlot.esm.js', 'uplot/dist/uPlot.esm.js'], ['uplot/uPlot.min.css', 'uplot/dist/uPlot.min.css'],
  ['uplot/LICENSE', 'uplot/LICENSE'],
];

test('the vendored libraries are node_modules\' pinned copies, byte for byte', () => {
  assert.ok(SOURCE_DIR, 'FRAMED_SOURCE_DIR must name the source tree');
  const pkg = JSON.parse(readFileSync(path.join(SOURCE_DIR, 'package.json'), 'utf8'));
  for (const name of ['preact', 'htm', 'uplot']) {
    const installed = JSON.parse(readFileSync(path.join(SOURCE_DIR, 'node_modules', name, 'package.json'), 'utf8')).version;
    assert.equal(installed, pkg.devDependencies[name], `node_modules/${name} is not the pinned version: run npm ci`);
  }
  for (const [dest, src] of VENDORED) {
    const a = readFileSync(path.join(STATIC_DIR, 'vendor', dest));
    const b = readFileSync(path.join(SOURCE_DIR, 'node_modules', src));
    assert.ok(a.equals(b), `static/vendor/${dest} differs from node_modules/${src}: run scripts/vendor-static.sh`);
  }
  const listed = readdirSync(path.join(STATIC_DIR, 'vendor'), { recursive: true })
    .filter((f) => statSync(path.join(STATIC_DIR, 'vendor', f)).isFile()).sort();
  assert.deepEqual(listed, VENDORED.map(([d]) => d).sort(), 'static/vendor holds exactly what vendor-static.sh copies');
});

// A request with the path exactly as given (fetch would normalize "..").
function rawGet(port, target, headers = {}, method = 'GET') {
  return new Promise((resolve, reject) => {
    const req = http.request({ host: '127.0.0.1', port, path: target, method, headers }, (res) => {
      const chunks = [];
      res.on('data', (c) => chunks.push(c));
      res.on('end', () => resolve({ status: res.statusCode, headers: res.headers, body: Buffer.concat(chunks) }));
    });
    req.on('error', reject);
    req.end();
  });
}

test('the static dir is served by path, typed by extension, and nothing outside it', async () => {
  const root = mkdtempSync(path.join(tmpdir(), 'framed-static-'));
  const dir = path.join(root, 'static');
  cpSync(STATIC_DIR, dir, { recursive: true });
  writeFileSync(path.join(root, 'secret.js'), 'outside');
  symlinkSync(path.join(root, 'secret.js'), path.join(dir, 'escape.js'));
  symlinkSync(path.join(dir, 'app.js'), path.join(dir, 'inside.js'));
  mkdirSync(path.join(dir, 'folder.js'));
  writeFileSync(path.join(dir, '.hidden.js'), 'hidden');
  const typed = { 'a.svg': 'image/svg+xml', 'a.png': 'image/png', 'a.json': 'application/json', 'a.map': 'application/json',
    'a.txt': 'text/plain; charset=utf-8', 'a.mjs': 'text/javascript; charset=utf-8', 'a.css': 'text/css; charset=utf-8' };
  for (const f of Object.keys(typed)) writeFileSync(path.join(dir, f), 'x');
  writeFileSync(path.join(dir, 'a.bin'), 'x');
  const srv = await startServer({ args: ['--static-dir', dir] });
  try {
    const ok = async (target, type) => {
      const r = await rawGet(srv.port, target);
      assert.equal(r.status, 200, `${target}: ${r.status} ${r.body}`);
      assert.equal(r.headers['content-type'], type, target);
      assert.equal(r.headers['cache-control'], 'no-cache', target);
      return r;
    };
    const index = await ok('/', 'text/html; charset=utf-8');
    assert.ok(index.body.equals(readFileSync(path.join(dir, 'index.html'))));
    await ok('/index.html', 'text/html; charset=utf-8');
    const app = await ok('/app.js', 'text/javascript; charset=utf-8');
    assert.ok(app.body.equals(readFileSync(path.join(dir, 'app.js'))));
    await ok('/views/query.js', 'text/javascript; charset=utf-8');
    await ok('/vendor/preact/preact.mjs', 'text/javascript; charset=utf-8');
    await ok('/vendor/uplot/uPlot.min.css', 'text/css; charset=utf-8');
    await ok('/inside.js', 'text/javascript; charset=utf-8'); // a symlink that stays inside
    for (const [f, type] of Object.entries(typed)) await ok(`/${f}`, type);
    // ETag: the same tag again is 304 without a body
    const etag = app.headers.etag;
    assert.match(etag, /^"[0-9a-f]+-[0-9a-f]+"$/);
    const again = await rawGet(srv.port, '/app.js', { 'If-None-Match': etag });
    assert.equal(again.status, 304);
    assert.equal(again.body.length, 0);
    for (const target of ['/escape.js', '/%2e%2e/secret.js', '/../secret.js', '/vendor/%2e%2e/%2e%2e/secret.js',
      '/vendor/..%2f..%2fsecret.js', '/folder.js', '/vendor', '/vendor/', '/.hidden.js', '/a.bin',
      '/vendor/preact/LICENSE', '/missing.js', '/v1/nothing.js']) {
      const r = await rawGet(srv.port, target);
      assert.equal(r.status, 404, `${target} answered ${r.status}: ${r.body}`);
      assert.match(r.headers['content-type'], /^application\/problem\+json/, target);
      assert.ok(!r.body.includes('outside'), `${target} leaked the file outside`);
    }
    assert.equal((await rawGet(srv.port, '/app%00.js')).status, 400);
    // the API keeps its routes: a method the catch-all does not take is no 405 on a file path
    // (raw: the contract checker of call() knows GET /{file} only)
    const post = await rawGet(srv.port, '/app.js', { 'Content-Length': '0' }, 'POST');
    assert.equal(post.status, 404, String(post.body));
    assert.equal((await call(srv.base, 'GET', '/livez')).text, 'ok\n');
    assert.equal((await call(srv.base, 'POST', '/v1/info', { json: {} })).status, 405);
  } finally {
    await srv.stop();
    rmSync(root, { recursive: true, force: true });
  }
});

async function tableRows(page, selector) {
  return page.$$eval(`${selector} tbody tr`, (trs) => trs.map((tr) => [...tr.children].map((td) => td.textContent.trim())));
}

// Config: 401 without the token, the 422 at its field, then saved with byte units.
async function configSteps(page, srv, token) {
  await go(page, '#/config', '#config-form');
  assert.match(await page.textContent('#cfg-shuffle_partitions-row'), /range 1 – 4096/);
  await page.fill('#cfg-shuffle_partitions', '4');
  await page.click('#config-save');
  await page.waitForSelector('#config-problem .problem-unauthorized');
  assert.equal((await call(srv.base, 'GET', '/v1/config')).body.values.shuffle_partitions, 8);
  await page.fill('#admin-token', token);
  await page.click('#token-form button[type="submit"]');
  await page.fill('#cfg-shuffle_partitions', '0');
  await page.click('#config-save');
  await page.waitForSelector('#cfg-shuffle_partitions-err:has-text("4096")');
  assert.ok(await page.$eval('#cfg-shuffle_partitions-row', (e) => e.classList.contains('has-error')));
  assert.equal(await page.getAttribute('#config-problem .problem', 'data-kind'), 'validation-failed');
  assert.equal((await call(srv.base, 'GET', '/v1/config')).body.values.shuffle_partitions, 8);
  const posted = [];
  const onReq = (r) => { if (r.method() === 'POST' && r.url().endsWith('/v1/config')) posted.push(r.postDataJSON()); };
  page.on('request', onReq);
  await page.fill('#cfg-shuffle_partitions', '4');
  await page.fill('#cfg-scan_tasks_max_size_bytes', '64');
  await page.selectOption('#cfg-scan_tasks_max_size_bytes-unit', 'KiB');
  await page.fill('#cfg-scan_tasks_min_size_bytes', '1');
  await page.selectOption('#cfg-scan_tasks_min_size_bytes-unit', 'KiB');
  await page.click('#config-save');
  await page.waitForSelector('#config-status:has-text("Saved")');
  page.off('request', onReq);
  assert.deepEqual(posted.at(-1), { shuffle_partitions: 4, scan_tasks_max_size_bytes: 65536, scan_tasks_min_size_bytes: 1024 });
  const values = (await call(srv.base, 'GET', '/v1/config')).body.values;
  assert.equal(values.scan_tasks_max_size_bytes, 65536);
  await page.waitForSelector('#cfg-scan_tasks_max_size_bytes-current:has-text("64 KiB")');
  assert.ok(await page.$eval('#cfg-shuffle_partitions-row', (e) => e.classList.contains('changed')), 'a change from the default is highlighted');
  assert.ok(!(await page.$eval('#cfg-morsel_size_rows-row', (e) => e.classList.contains('changed'))));
}

// Datasets: upload with progress, the confirm before replacing.
async function uploadSteps(page, srv, dir) {
  const file = path.join(dir, 'trips.csv');
  writeFileSync(file, TRIPS_CSV);
  await go(page, '#/datasets', '#upload-form');
  await page.setInputFiles('#ds-file', file);
  assert.equal(await page.inputValue('#ds-name'), 'trips');
  await page.click('#ds-upload');
  await page.waitForSelector('#ds-upload-status:has-text("Uploaded trips (created)")');
  assert.equal(await page.getAttribute('#ds-upload-progress', 'value'), '100');
  await page.waitForSelector('#datasets-list [data-dataset="trips"]');
  assert.match(await page.textContent('#datasets-list [data-dataset="trips"]'), /5 columns/);
  let asked = '';
  page.once('dialog', (d) => { asked = d.message(); d.dismiss(); });
  await page.click('#ds-upload');
  await page.waitForSelector('#ds-upload-status:has-text("Not replaced")');
  assert.match(asked, /Replace the dataset trips/);
  page.once('dialog', (d) => d.accept());
  await page.click('#ds-upload');
  await page.waitForSelector('#ds-upload-status:has-text("Uploaded trips (replaced)")');
  const names = await page.$$eval('#datasets-list > li', (lis) => lis.map((l) => l.dataset.dataset));
  assert.deepEqual(names, [...names].sort(), 'datasets are sorted');
  assert.equal((await call(srv.base, 'GET', '/v1/datasets/trips')).body.bytes, Buffer.byteLength(TRIPS_CSV));
  // its schema, then a preview with the row count (this freezes the config: it is set already)
  await page.click('#datasets-list [data-dataset="trips"] summary');
  assert.deepEqual((await tableRows(page, '#datasets-list [data-dataset="trips"] .schema-table')).map((r) => r[0]),
    ['trip_id', 'vendor', 'passengers', 'distance_km', 'fare']);
  await page.click('.preview-btn[data-dataset="trips"]');
  await page.waitForSelector('.row-count[data-dataset="trips"]');
  assert.match(await page.textContent('.row-count[data-dataset="trips"]'), /^6 rows/);
  assert.equal((await tableRows(page, '.preview-table[data-dataset="trips"]')).length, 6);
}

// Compose a query, run it: state, stage graph, decisions, result grid, sort, download.
async function composeSteps(page, srv) {
  await page.selectOption('#c-dataset', 'trips');
  await page.fill('#c-where', 'passengers >= 1');
  await page.fill('#c-groupby', 'vendor');
  await page.fill('#c-agg', 'count(*) as trips, sum(fare) as total');
  await page.fill('#c-sort', 'total desc');
  await page.fill('#c-limit', '10');
  const plan = JSON.parse(await page.textContent('#c-plan'));
  assert.deepEqual(plan, { source: { dataset: 'trips' }, ops: [{ where: 'passengers >= 1' },
    { groupby: ['vendor'], agg: ['count(*) as trips', 'sum(fare) as total'] }, { sort: ['total desc'] }, { limit: 10 }] });
  await page.click('#c-run');
  await page.waitForURL(/#\/queries\/q-/);
  const id = decodeURIComponent(page.url().split('/').pop());
  await page.waitForSelector('#q-state[data-state="succeeded"]');
  await page.waitForSelector('#stage-graph g.stage');
  const stages = (await call(srv.base, 'GET', `/v1/queries/${id}/stages`)).body.stages;
  assert.equal(await page.$$eval('#stage-graph g.stage', (g) => g.length), stages.length);
  assert.equal(await page.$$eval('#stage-graph path.edge', (p) => p.length), stages.reduce((n, s) => n + s.inputs.length, 0));
  await page.waitForSelector('#decisions-table tbody tr');
  assert.match(await page.textContent('#decisions-table'), /scan_tasks_max_size_bytes/);
  await page.waitForSelector('#timeline g.task');
  await page.waitForSelector('#result-table tbody tr');
  // 1234.5 is formatted by Intl.NumberFormat (en-US: "1,234.5")
  assert.deepEqual(await tableRows(page, '#result-table'), [
    ['null', '1', '1,234.5'], ['cabco', '1', '30'], ['zoom', '1', '20'], ['acme', '2', '15.5']]);
  await page.click('#result-table th button[data-col="trips"]');
  assert.deepEqual((await tableRows(page, '#result-table')).map((r) => r[1]), ['1', '1', '1', '2']);
  await page.click('#result-table th button[data-col="trips"]');
  assert.equal((await tableRows(page, '#result-table'))[0][1], '2');
  assert.match(await page.textContent('#page-info'), /rows 1–4 of 4/);
  const cfg = (await call(srv.base, 'GET', '/v1/config')).body;
  assert.equal(await page.getAttribute('#q-config-id .config-id', 'data-config-id'), cfg.config_id);
  const [download] = await Promise.all([page.waitForEvent('download'), page.click('#q-download-csv')]);
  assert.equal(download.suggestedFilename(), `${id}.csv`);
  const csv = readFileSync(await download.path(), 'utf8').trim().split(/\r?\n/);
  assert.equal(csv[0], 'vendor,trips,total');
  assert.equal(csv.length, 5, csv.join('\n'));
  return { id, configId: cfg.config_id };
}

// The SQL tab: it starts from the builder's fields; a syntax error shows its line, column and
// caret; Explain shows the compiled plan; Run runs it and its rows are DuckDB's answer here.
async function sqlSteps(page, srv) {
  await go(page, '#/datasets', '#composer');
  await page.selectOption('#c-dataset', 'trips');
  await page.fill('#c-groupby', 'vendor');
  await page.fill('#c-agg', 'count(*) as trips');
  await page.fill('#c-limit', '');
  await page.click('#c-mode-sql');
  assert.equal(await page.getAttribute('#c-mode-sql', 'aria-selected'), 'true');
  assert.equal(await page.inputValue('#c-sql'), 'SELECT vendor, count(*) as trips\nFROM trips\nGROUP BY vendor');
  await page.fill('#c-sql', 'SELECT vendor,\n  count(*) AS trips\nFORM trips');
  await page.click('#c-sql-run');
  await page.waitForSelector('#c-sql-problem .problem-invalid-sql');
  assert.equal((await page.textContent('#c-sql-problem [data-field="line-column"]')).trim(), 'line 3, column 1');
  assert.match(await page.textContent('#c-sql-problem .problem-excerpt'), /FORM trips\s*\n\^/);
  await shoot(page, 'composer-sql-error');
  const sql = 'SELECT vendor, count(*) AS trips, rank() OVER (ORDER BY count(*) DESC, vendor) AS r\nFROM trips WHERE vendor IS NOT NULL GROUP BY vendor ORDER BY r';
  await page.fill('#c-sql', sql);
  await page.click('#c-sql-explain');
  await page.waitForSelector('#c-sql-plan');
  assert.match(await page.textContent('#c-sql-plan'), /"window"/);
  assert.equal(await page.$('#c-sql-problem .problem'), null, 'the explain cleared the problem');
  await page.click('#c-sql-run');
  await page.waitForURL(/#\/queries\/q-/);
  await page.waitForSelector('#q-state[data-state="succeeded"]');
  await page.waitForSelector('#result-table tbody tr');
  assert.deepEqual(await tableRows(page, '#result-table'), [['acme', '2', '1'], ['zoom', '2', '2'], ['cabco', '1', '3']]);
  assert.equal(await page.textContent('#q-sql'), sql, 'the query view shows its SQL');
}

// A slow query: its progress moves on the page, and Cancel shows cancelled at once.
async function cancelSteps(page, srv) {
  const r = await call(srv.base, 'POST', '/v1/queries', { json: { plan: SLOW_PLAN } });
  assert.equal(r.status, 202, r.text);
  const id = r.body.id;
  await go(page, `#/queries/${id}`, '#q-progress');
  const done = () => page.getAttribute('#q-progress', 'aria-valuenow').then(Number);
  await page.waitForSelector('#q-state[data-state="running"]');
  const first = await done();
  await waitFor(async () => (await done()) > first, 'the progress bar to move');
  await page.waitForSelector('#stage-graph g.stage-running');
  await page.waitForSelector('#q-cancel:not([disabled])');
  // a poll of the query sent while it runs is held and answered (running) only after the
  // cancel: the page must not go back from cancelled to running on that old answer
  let release, held, answered;
  const gate = new Promise((r) => { release = r; });
  const heldOne = new Promise((r) => { held = r; });
  const answeredOne = new Promise((r) => { answered = r; });
  let holding = true;
  const hold = async (route) => {
    if (route.request().method() !== 'GET' || !holding) return route.continue();
    holding = false;
    const old = await route.fetch();
    held();
    await gate;
    await route.fulfill({ response: old });
    answered();
  };
  await page.route(`**/v1/queries/${id}`, hold);
  try {
    await heldOne;
    await page.click('#q-cancel');
    // DELETE answers once the tasks stopped: the page shows it from that answer (or the event)
    await page.waitForSelector('#q-state[data-state="cancelled"]', { timeout: 3000 });
    // the page's next GET of the query comes after the old answer was handled: asked again
    // once it is dropped, or (without the check) the running page's next poll
    const next = page.waitForRequest((q) => q.method() === 'GET' && q.url().endsWith(`/v1/queries/${id}`), { timeout: 10000 });
    release();
    await answeredOne;
    await next;
    assert.equal(await page.getAttribute('#q-state', 'data-state'), 'cancelled', 'an old answer does not take the state back');
  } finally {
    release();
    await page.unroute(`**/v1/queries/${id}`, hold);
  }
  assert.equal((await call(srv.base, 'GET', `/v1/queries/${id}`)).body.state, 'cancelled');
  assert.ok(await page.$eval('#q-cancel', (b) => b.disabled));
  await shoot(page, 'query-cancelled', { fullPage: false }); // 41 stages: a tall page
  return id;
}

// A failed query: its error as kind, message and file:line:column, a red badge.
async function failedSteps(page, srv) {
  writeFileSync(path.join(srv.dataDir, 'bad.csv'), 'k,v\n1,2.5\n2,NA\n');
  const r = await call(srv.base, 'POST', '/v1/queries?wait=30', { json: { plan: { source: { dataset: 'bad', options: { schema: { v: 'float64' } } } } } });
  assert.equal(r.body.state, 'failed', r.text);
  await go(page, `#/queries/${r.body.id}`, '#q-error');
  assert.equal((await page.textContent('#q-error-kind')).trim(), 'malformed-data');
  assert.equal((await page.textContent('#q-error-location')).trim(), 'bad.csv:3:2');
  assert.match(await page.textContent('#q-error-message'), /'NA' is not a float64/);
  const red = await page.$eval('#q-state', (b) => getComputedStyle(b).color);
  assert.equal(red, 'rgb(185, 28, 28)', 'failed is red');
  await shoot(page, 'query-failed');
  return r.body.id;
}

// Keyboard: the skip button, then the views' links, each with a visible focus ring.
async function keyboardSteps(page) {
  await go(page, '#/queries', '#view-queries');
  await page.focus('button.skip');
  await page.keyboard.press('Enter');
  assert.equal(await page.evaluate(() => document.activeElement.id), 'main', 'the skip button moves focus to the view');
  await page.focus('button.skip');
  for (let i = 0; i < 10 && await page.evaluate(() => document.activeElement.id) !== 'nav-config'; i++) await page.keyboard.press('Tab');
  assert.equal(await page.evaluate(() => document.activeElement.id), 'nav-config');
  assert.notEqual(await page.evaluate(() => getComputedStyle(document.activeElement).outlineStyle), 'none', 'a focus ring');
  await page.keyboard.press('Enter');
  await page.waitForSelector('#view-config');
}

// The lock: edits made before the freeze get the 409 with its members; the view turns
// read-only with Reset runner at hand; the reset; the history survives.
async function lockSteps(page, srv, before, cancelled) {
  await go(page, '#/config', '#config-locked');
  assert.ok(await page.$eval('#config-save', (b) => b.disabled), 'read-only while locked');
  assert.ok(await page.$eval('#cfg-shuffle_partitions', (i) => i.disabled));
  const cfg = (await call(srv.base, 'GET', '/v1/config')).body;
  assert.ok((await page.textContent('#config-locked')).includes(cfg.frozen_at));
  await page.waitForSelector('#info-lock:has-text("locked")');
  page.once('dialog', (d) => d.accept());
  await page.check('#runner-force');
  await page.click('#runner-reset');
  await page.waitForSelector('#runner-status:has-text("Runner reset")');
  await page.waitForSelector('#config-save:not([disabled])');
  assert.equal((await call(srv.base, 'GET', '/v1/runner')).body.state, 'none');
  // an edit, then a runner appears elsewhere: Save gets the 409 and the view locks
  await page.fill('#cfg-shuffle_partitions', '6');
  const df = await call(srv.base, 'POST', '/v1/dataframes', { json: { source: { dataset: 'trips' } } });
  assert.equal(df.status, 201, df.text);
  await page.click('#config-save');
  await page.waitForSelector('#config-problem .problem-config-locked');
  const locked = (await call(srv.base, 'GET', '/v1/config')).body;
  assert.ok((await page.textContent('#config-problem')).includes(locked.config_id));
  assert.equal((await page.textContent('#config-problem [data-field="frozen_at"]')).trim(), locked.frozen_at);
  await page.waitForSelector('#config-locked');
  assert.equal((await call(srv.base, 'GET', '/v1/config')).body.values.shuffle_partitions, 4);
  // the history of config IDs: the first runner, reset, with its config ID; the diff
  await page.waitForSelector(`#runners-table tr:has(code[data-config-id="${before.configId}"])`);
  const runners = (await call(srv.base, 'GET', '/v1/runners')).body.runners;
  const first = runners.find((r) => r.config_id === before.configId && r.state === 'reset');
  assert.ok(first, JSON.stringify(runners));
  await page.waitForSelector(`#runners-table tr[data-runner-id="${first.id}"] .badge[data-state="reset"]`);
  await page.selectOption('#diff-from', 'defaults');
  await page.selectOption('#diff-to', before.configId);
  await page.click('#diff-run');
  await page.waitForSelector('#diff-table tbody tr');
  const changes = await tableRows(page, '#diff-table');
  assert.deepEqual(changes.map((c) => c[0]).sort(), ['scan_tasks_max_size_bytes', 'scan_tasks_min_size_bytes', 'shuffle_partitions']);
  // the past query is listed with its config ID, archived; its page says so; its result is gone
  await go(page, '#/queries', `#queries-table tr[data-query-id="${before.id}"]`);
  const row = `#queries-table tr[data-query-id="${before.id}"]`;
  assert.equal(await page.getAttribute(`${row} .config-id`, 'data-config-id'), before.configId);
  assert.equal(await page.getAttribute(row, 'data-state'), 'succeeded');
  assert.match(await page.getAttribute(`${row} time`, 'title'), /^\d{4}-\d\d-\d\d \d\d:\d\d:\d\d\.\d{3} UTC$/);
  assert.match(await page.textContent(`${row} time`), /ago$/);
  assert.equal(await page.$eval(`${row} .badge`, (b) => getComputedStyle(b).color), 'rgb(21, 128, 61)', 'succeeded is green');
  const grey = await page.$eval(`#queries-table tr[data-query-id="${cancelled}"] .badge`, (b) => getComputedStyle(b).color);
  assert.equal(grey, 'rgb(75, 85, 99)', 'cancelled is grey');
  await page.selectOption('#qf-state', 'cancelled');
  await page.waitForFunction(() => [...document.querySelectorAll('#queries-table tbody tr')].every((t) => t.dataset.state === 'cancelled'));
  await page.click('#qf-clear');
  await page.fill('#qf-config', before.configId);
  await page.click('#qf-apply');
  await page.waitForFunction((c) => [...document.querySelectorAll('#queries-table tbody tr .config-id')].every((e) => e.dataset.configId === c), before.configId);
  await go(page, `#/queries/${before.id}`, '#q-state[data-state="succeeded"]');
  await page.waitForSelector('#q-archived');
  await page.waitForSelector('#result-problem[data-kind="result-released"]');
  await page.waitForSelector('#stage-graph g.stage');
}

test('the dashboard in Chromium: config, upload, compose, cancel, lock, reset, history', { timeout: 300000 }, async () => {
  const browser = await launch();
  const token = randomBytes(12).toString('hex');
  const srv = await startServer({ args: ['--static-dir', STATIC_DIR], env: { FRAMED_ADMIN_TOKEN: token } });
  const dir = mkdtempSync(path.join(tmpdir(), 'framed-dash-'));
  let page, errors;
  try {
    mkdirSync(srv.dataDir, { recursive: true });
    writeBig(srv.dataDir);
    // provoked: 401 (no token), 409 (the lock), 410 (a released result), 422 (a bad value), and
    // /readyz's 503 while the reset drains the runner
    ({ page, errors } = await openPage(browser, srv.base, { expectedStatuses: [400, 401, 409, 410, 422], expectedUrls: [[503, '/readyz']] }));
    await page.waitForSelector('#info-lock:has-text("unlocked")');
    const info = (await call(srv.base, 'GET', '/v1/info')).body;
    assert.equal((await page.textContent('#info-version')).trim(), info.version);
    await configSteps(page, srv, token);
    await uploadSteps(page, srv, dir);
    const first = await composeSteps(page, srv);
    await sqlSteps(page, srv);
    await page.waitForSelector('#live-status:has-text("live")'); // the event stream is open
    const cancelled = await cancelSteps(page, srv);
    await failedSteps(page, srv);
    await keyboardSteps(page);
    await shootViews(page, [['query', `#/queries/${first.id}`, '#result-table tbody tr'], ['queries', '#/queries', '#queries-table'],
      ['config', '#/config', '#config-locked'], ['datasets', '#/datasets', '#composer'], ['cluster', '#/cluster', '#runner-facts']]);
    await lockSteps(page, srv, first, cancelled);
    await shootViews(page, [['config', '#/config', '#runners-table'], ['queries', '#/queries', '#queries-table']], 'after-reset');
    await page.setViewportSize({ width: 390, height: 844 });
    await go(page, `#/queries/${first.id}`, '#q-state');
    await assertNoSideScroll(page, 'a past query at 390 px');
    assert.deepEqual(errors, [], 'the page logged errors');
  } catch (e) {
    if (page) await shoot(page, 'failure').catch(() => {});
    if (errors && errors.length) e.message += `\npage errors: ${errors.join('\n')}`;
    throw e;
  } finally {
    await browser.close();
    rmSync(dir, { recursive: true, force: true });
    await srv.stop();
  }
});
