// dashboard: the web dashboard (static/) in a real headless Chromium against the real server.
// Starts `framed serve` with an admin token and the source tree's static dir, writes a small
// trips.csv into its data dir, and drives the page: header, config save (401 without the token,
// 422 next to the field, then saved), create + preview, run + result rows, explain, CSV
// download, the lock with the same config_id as GET /v1/config, the 409 config-locked message,
// and the runner reset. Needs Debian's chromium at /usr/bin/chromium and playwright-core from
// package.json (`npm ci`); without either the test fails, it never skips. FRAMED_CHROMIUM
// overrides the browser path on machines that keep Chromium elsewhere.
import assert from 'node:assert/strict';
import { existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { randomBytes } from 'node:crypto';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { test } from 'node:test';
import { call, SOURCE_DIR, startServer } from './lib.mjs';

const CHROMIUM = process.env.FRAMED_CHROMIUM || '/usr/bin/chromium';
const SCREENSHOT = path.join(tmpdir(), 'framed-dashboard.png');
const STEP_MS = 15000;

const CHROMIUM_ARGS = ['--headless', '--no-sandbox', '--disable-gpu', '--disable-quic', '--no-first-run',
  '--disable-background-networking', '--disable-component-update', '--disable-sync'];

// Small enough to check by hand: passengers >= 1 and fare > 0 keeps trips 1, 2, 3, 5, 6.
const TRIPS_CSV = [
  'trip_id,vendor,passengers,distance_km,fare',
  '1,acme,1,2.0,10.0',
  '2,zoom,2,4.0,20.0',
  '3,acme,1,1.0,5.5',
  '4,zoom,0,3.0,9.0',
  '5,cabco,3,10.0,30.0',
  '6,,1,4.0,12.0',
  '',
].join('\n');

// The editor's example plan on TRIPS_CSV: vendor, trips, total, avg_fare_per_km by total desc.
const EXPECTED_ROWS = [
  ['cabco', '1', '30', '3'],
  ['zoom', '1', '20', '5'],
  ['acme', '2', '15.5', '5.25'],
  ['null', '1', '12', '3'],
];

async function loadPlaywright() {
  try {
    return await import('playwright-core');
  } catch (e) {
    throw new Error(`playwright-core is not installed (${e.message}); run \`PLAYWRIGHT_SKIP_BROWSER_DOWNLOAD=1 npm ci\` in ${SOURCE_DIR}`);
  }
}

async function tableRows(page, selector) {
  return page.$$eval(`${selector} tbody tr`, (trs) => trs.map((tr) => [...tr.children].map((td) => td.textContent.trim())));
}

test('the dashboard drives the config lifecycle in headless Chromium', { timeout: 180000 }, async () => {
  assert.ok(SOURCE_DIR, 'FRAMED_SOURCE_DIR must name the source tree (CTest sets it)');
  assert.ok(existsSync(CHROMIUM),
    `Chromium is missing: no ${CHROMIUM}. Install Debian's package (apt-get install -y chromium); this test never downloads a browser.`);
  const { chromium } = await loadPlaywright();

  const token = randomBytes(12).toString('hex');
  const srv = await startServer({
    args: ['--static-dir', path.join(SOURCE_DIR, 'static')],
    env: { FRAMED_ADMIN_TOKEN: token },
  });
  const profile = mkdtempSync(path.join(tmpdir(), 'framed-chromium-'));
  let context;
  try {
    mkdirSync(srv.dataDir, { recursive: true });
    writeFileSync(path.join(srv.dataDir, 'trips.csv'), TRIPS_CSV);

    // The page is three files served from static/; say so plainly when one is not served.
    for (const file of ['/', '/app.js', '/style.css']) {
      const r = await call(srv.base, 'GET', file);
      assert.equal(r.status, 200, `GET ${file} answered ${r.status}: the server must serve static${file === '/' ? '/index.html' : file}\n${r.text}`);
    }

    context = await chromium.launchPersistentContext(profile, {
      executablePath: CHROMIUM, headless: true, args: CHROMIUM_ARGS,
      viewport: { width: 1440, height: 900 }, acceptDownloads: true,
    });
    context.setDefaultTimeout(STEP_MS);
    const page = context.pages()[0] ?? await context.newPage();
    const pageErrors = [];
    page.on('pageerror', (e) => pageErrors.push(`pageerror: ${e.message}`));
    page.on('console', (m) => { if (m.type() === 'error') pageErrors.push(`console: ${m.text()} (${m.location().url})`); });
    page.on('requestfailed', (r) => pageErrors.push(`requestfailed: ${r.url()} ${r.failure()?.errorText}`));

    await page.goto(`${srv.base}/`);
    await page.waitForSelector('body[data-ready="1"]');

    // Header: the version from GET /v1/info, the role, readiness, unlocked.
    const info = (await call(srv.base, 'GET', '/v1/info')).body;
    assert.equal((await page.textContent('#info-version')).trim(), info.version);
    assert.equal((await page.textContent('#info-role')).trim(), 'coordinator');
    assert.equal((await page.textContent('#info-ready')).trim(), 'ready');
    assert.match(await page.textContent('#info-lock'), /unlocked/);

    // Config fields come from the schema, with docs and bounds.
    assert.match(await page.textContent('#cfg-shuffle_partitions-row'), /range 1 – 4096/);

    // Save without the token: 401 shown with the way out.
    await page.fill('#cfg-shuffle_partitions', '4');
    await page.click('#config-save');
    await page.waitForSelector('#config-problem .problem-unauthorized');
    assert.match(await page.textContent('#config-problem'), /Admin token/);
    assert.equal((await call(srv.base, 'GET', '/v1/config')).body.values.shuffle_partitions, 8);

    // Keep the token; a value out of bounds gets its 422 message next to the field.
    await page.fill('#admin-token', token);
    await page.click('#token-form button[type="submit"]');
    await page.fill('#cfg-shuffle_partitions', '0');
    await page.click('#config-save');
    await page.waitForSelector('#cfg-shuffle_partitions-err:has-text("4096")');
    assert.match(await page.textContent('#config-problem'), /validation-failed/);

    // A good value saves, and only the changed field is sent.
    const posted = [];
    page.on('request', (r) => { if (r.method() === 'POST' && r.url().endsWith('/v1/config')) posted.push(r.postDataJSON()); });
    await page.fill('#cfg-shuffle_partitions', '4');
    await page.click('#config-save');
    await page.waitForSelector('#config-status:has-text("Saved")');
    assert.deepEqual(posted.at(-1), { shuffle_partitions: 4 });
    assert.equal((await page.textContent('#cfg-shuffle_partitions-current')).trim(), '4');
    assert.equal((await call(srv.base, 'GET', '/v1/config')).body.values.shuffle_partitions, 4);

    // Create the editor's example dataframe: the preview shows the expected values.
    const plan = JSON.parse(await page.inputValue('#plan-editor'));
    assert.equal(plan.source.dataset, 'trips');
    await page.click('#df-create');
    await page.waitForSelector('#preview-table tbody tr');
    assert.deepEqual(await tableRows(page, '#preview-table'), EXPECTED_ROWS);
    assert.deepEqual(await page.$$eval('#preview-table thead th', (ths) => ths.map((th) => th.firstChild.textContent)),
      ['vendor', 'trips', 'total', 'avg_fare_per_km']);
    const dfConfigId = (await page.textContent('#df-config-id')).trim();
    assert.match(dfConfigId, /^sha256:[0-9a-f]{64}$/);

    // Run it: the query succeeds and its result rows are the same.
    await page.click('#df-run');
    await page.waitForSelector('#q-state:has-text("succeeded")');
    await page.waitForSelector('#result-table tbody tr');
    assert.deepEqual(await tableRows(page, '#result-table'), EXPECTED_ROWS);
    assert.equal((await page.textContent('#q-rows')).trim(), '4');
    assert.equal((await page.textContent('#q-config-id')).trim(), dfConfigId);
    assert.match(await page.textContent('#page-info'), /rows 1–4 of 4/);

    // Explain lists the stages with their task counts and the decisions.
    await page.click('#df-explain');
    await page.waitForSelector('#stages-table tbody tr');
    const stages = await tableRows(page, '#stages-table');
    assert.ok(stages.length >= 1 && stages.every((s) => /^\d+$/.test(s[2])), `stages: ${JSON.stringify(stages)}`);
    await page.waitForSelector('#decisions-table tbody tr');

    // Download CSV: a header line and the four rows.
    const [download] = await Promise.all([page.waitForEvent('download'), page.click('#q-download')]);
    const csv = readFileSync(await download.path(), 'utf8').trim().split(/\r?\n/);
    assert.equal(csv[0], 'vendor,trips,total,avg_fare_per_km');
    assert.equal(csv.length, 5, csv.join('\n'));

    // The config is locked with the config_id GET /v1/config reports.
    const cfg = (await call(srv.base, 'GET', '/v1/config')).body;
    assert.equal(cfg.locked, true);
    assert.equal(cfg.config_id, dfConfigId);
    await page.waitForSelector('#info-lock:has-text("locked")');
    assert.doesNotMatch(await page.textContent('#info-lock'), /unlocked/);
    assert.equal((await page.textContent('#info-config-id')).trim(), cfg.config_id);
    assert.equal((await page.textContent('#runner-facts [data-field="config_id"]')).trim(), cfg.config_id);

    // Saving again gets the 409 config-locked problem: the ID, when, and how to unlock.
    await page.fill('#cfg-shuffle_partitions', '6');
    await page.click('#config-save');
    await page.waitForSelector('#config-problem .problem-config-locked');
    const locked = await page.textContent('#config-problem');
    assert.match(locked, /Config is locked/);
    assert.ok(locked.includes(cfg.config_id), locked);
    assert.match(locked, /DELETE \/v1\/runner/);
    assert.equal((await page.textContent('#config-problem [data-field="frozen_at"]')).trim(), cfg.frozen_at);
    assert.equal((await call(srv.base, 'GET', '/v1/config')).body.values.shuffle_partitions, 4);

    await page.screenshot({ path: SCREENSHOT, fullPage: true });

    // Reset the runner (confirm dialog accepted): the runner is gone and the config unlocks.
    page.once('dialog', (d) => d.accept());
    await page.check('#runner-force');
    await page.click('#runner-reset');
    await page.waitForSelector('#runner-status:has-text("Runner reset")');
    await page.waitForSelector('#runner-state-badge:has-text("none")');
    await page.waitForSelector('#info-lock:has-text("unlocked")');
    assert.equal((await call(srv.base, 'GET', '/v1/runner')).body.state, 'none');
    assert.equal((await call(srv.base, 'GET', '/v1/config')).body.locked, false);

    assert.deepEqual(pageErrors.filter((e) => !/status of (401|409|422)/.test(e)), [],
      'the page logged errors');
  } finally {
    if (context) await context.close();
    rmSync(profile, { recursive: true, force: true });
    await srv.stop(); // SIGTERM by PID; asserts exit code 0
  }
});
