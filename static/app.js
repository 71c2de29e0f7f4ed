// framed dashboard: plain JS over the REST API (openapi.yaml). Every call goes through api(),
// which turns any failure (a problem+json body, another body, or no answer at all) into a
// problem object that showProblem() renders: nothing fails silently.
'use strict';

const REFRESH_MS = 3000;
const POLL_MS = 400;
const TOKEN_KEY = 'framed.adminToken';
const PROBLEM_BASE = 'https://framed.dev/problems/';

const EXAMPLE_PLAN = {
  source: {
    dataset: 'trips',
    options: { header: true, on_error: 'null', schema: { fare: 'float64' } },
  },
  ops: [
    { where: 'passengers >= 1 and fare > 0' },
    { with_column: { name: 'fare_per_km', expr: 'fare / distance_km' } },
    { groupby: ['vendor'], agg: ['count(*) as trips', 'sum(fare) as total', 'avg(fare_per_km) as avg_fare_per_km'] },
    { sort: ['total desc', 'vendor nulls first'] },
    { limit: 10 },
  ],
};

const state = {
  schema: null,        // GET /v1/config/schema
  config: null,        // GET /v1/config
  dataframe: null,     // the last created dataframe
  query: null,         // the last query
  pollTimer: null,
  page: { offset: 0, limit: 25, total: 0 },
};

const $ = (id) => document.getElementById(id);

/* ---------- small DOM helpers ---------- */

// Creates an element; attrs may hold text, className, hidden and any attribute.
function el(tag, attrs = {}, ...children) {
  const node = document.createElement(tag);
  for (const [k, v] of Object.entries(attrs)) {
    if (v === undefined || v === null || v === false) continue;
    if (k === 'text') node.textContent = v;
    else if (k === 'className') node.className = v;
    else if (k.startsWith('on')) node.addEventListener(k.slice(2), v);
    else node.setAttribute(k, v === true ? '' : String(v));
  }
  for (const c of children.flat()) {
    if (c === null || c === undefined || c === false) continue;
    node.append(c instanceof Node ? c : document.createTextNode(String(c)));
  }
  return node;
}

function setText(id, text) {
  $(id).textContent = text === null || text === undefined ? '—' : String(text);
}

function setStatus(id, text, kind = 'ok') {
  const node = $(id);
  node.textContent = text || '';
  node.dataset.kind = kind;
}

function fmtBytes(n) {
  if (typeof n !== 'number' || !Number.isFinite(n)) return String(n);
  const units = ['B', 'KiB', 'MiB', 'GiB', 'TiB'];
  let v = n;
  let u = 0;
  while (v >= 1024 && u < units.length - 1) { v /= 1024; u++; }
  return u === 0 ? `${n} B` : `${v.toFixed(v < 10 && v % 1 ? 1 : 0)} ${units[u]}`;
}

function fmtUptime(s) {
  if (typeof s !== 'number') return '—';
  const t = Math.floor(s);
  const d = Math.floor(t / 86400);
  const h = Math.floor((t % 86400) / 3600);
  const m = Math.floor((t % 3600) / 60);
  const sec = t % 60;
  const pad = (x) => String(x).padStart(2, '0');
  return (d ? `${d}d ` : '') + (d || h ? `${h}h ` : '') + `${pad(m)}m ${pad(sec)}s`;
}

function fmtMs(ms) {
  if (typeof ms !== 'number') return '—';
  return ms < 1000 ? `${ms} ms` : `${(ms / 1000).toFixed(2)} s`;
}

function fmtValue(v) {
  if (v === null || v === undefined) return 'null';
  if (typeof v === 'object') return JSON.stringify(v);
  return String(v);
}

// frozen_by is {request_id, method, path} in the contract; a bare request ID is shown too.
function fmtFrozenBy(fb) {
  if (!fb) return '—';
  if (typeof fb === 'string') return `request ${fb}`;
  return `${fb.method} ${fb.path} (request ${fb.request_id})`;
}

/* ---------- the API ---------- */

function adminToken() {
  try { return sessionStorage.getItem(TOKEN_KEY) || ''; } catch { return ''; }
}

// One HTTP call. opts: json (sent as application/json), body + contentType (raw), accept,
// admin (send the admin token), text (read the body as text). Resolves to
// {ok, status, data, text, headers, problem}; never rejects.
async function api(method, path, opts = {}) {
  const headers = { Accept: opts.accept || 'application/json' };
  let body;
  if (opts.json !== undefined) {
    headers['Content-Type'] = 'application/json';
    body = JSON.stringify(opts.json);
  } else if (opts.body !== undefined) {
    headers['Content-Type'] = opts.contentType;
    body = opts.body;
  }
  const token = adminToken();
  if (opts.admin && token) headers.Authorization = `Bearer ${token}`;
  let res;
  try {
    res = await fetch(path, { method, headers, body, cache: 'no-store' });
  } catch (e) {
    return {
      ok: false, status: 0, problem: {
        title: 'Server unreachable', status: 0, type: 'about:blank#network',
        detail: `${method} ${path} got no answer: ${e.message}. Is framed running?`,
      },
    };
  }
  const type = res.headers.get('Content-Type') || '';
  let text = '';
  try { text = await res.text(); } catch (e) { text = ''; }
  let data;
  if (/json/.test(type) && !/ndjson/.test(type) && text) {
    try { data = JSON.parse(text); } catch { data = undefined; }
  }
  const out = { ok: res.ok, status: res.status, data, text, headers: res.headers };
  if (!res.ok) {
    if (data && typeof data === 'object' && (data.type || data.title)) {
      out.problem = data;
    } else {
      out.problem = {
        title: `HTTP ${res.status} ${res.statusText || ''}`.trim(), status: res.status,
        type: 'about:blank',
        detail: `${method} ${path} failed and the body was not a problem+json document` +
          (text ? `: ${text.slice(0, 300)}` : ' (empty body).'),
      };
    }
    if (!out.problem.instance) out.problem.instance = path;
  }
  return out;
}

/* ---------- problems ---------- */

const CORE_MEMBERS = new Set(['type', 'title', 'status', 'detail', 'instance', 'request_id']);

function slugOf(problem) {
  const t = problem && problem.type;
  return typeof t === 'string' && t.startsWith(PROBLEM_BASE) ? t.slice(PROBLEM_BASE.length) : '';
}

// Renders a problem into the slot (an element or its id); null clears it.
function showProblem(slot, problem, context) {
  const node = typeof slot === 'string' ? $(slot) : slot;
  node.replaceChildren();
  if (!problem) return;
  node.append(renderProblem(problem, context));
}

function renderProblem(p, context) {
  const slug = slugOf(p);
  const box = el('div', { className: `problem problem-${slug || 'other'}`, role: 'alert', 'data-type': p.type || '' });
  box.append(el('p', { className: 'problem-title' },
    el('strong', { text: p.title || 'Error' }),
    p.status ? el('span', { className: 'problem-status', text: ` ${p.status}` }) : null,
    context ? el('span', { className: 'problem-context', text: ` — ${context}` }) : null));
  if (p.detail) box.append(el('p', { className: 'problem-detail', text: p.detail }));

  if (slug === 'unauthorized') {
    box.append(el('p', { className: 'problem-hint' },
      adminToken()
        ? 'The admin token kept in this tab was refused. Check it in the "Admin token" field at the top.'
        : 'This server needs an admin token for this call. Enter it in the "Admin token" field at the top and try again.'));
  }
  if (slug === 'config-locked') box.append(renderLocked(p));
  if (slug === 'invalid-expression' && typeof p.expression === 'string') box.append(renderExpression(p));
  if (Array.isArray(p.errors) && p.errors.length) {
    box.append(el('ul', { className: 'problem-errors' },
      p.errors.map((e) => el('li', {}, el('code', { text: e.field }), `: ${e.message}`))));
  }

  const dl = el('dl', { className: 'problem-members' });
  dl.append(el('div', {}, el('dt', { text: 'type' }), el('dd', { className: 'mono', text: p.type || '—' })));
  for (const key of ['instance', 'request_id']) {
    if (p[key] !== undefined) dl.append(el('div', {}, el('dt', { text: key }), el('dd', { className: 'mono', text: fmtValue(p[key]) })));
  }
  const shown = new Set(['errors']);
  if (slug === 'config-locked') ['config_id', 'frozen_at', 'frozen_by', 'unlock'].forEach((k) => shown.add(k));
  for (const [key, value] of Object.entries(p)) {
    if (CORE_MEMBERS.has(key) || shown.has(key)) continue;
    if (key === 'cause' && value && typeof value === 'object') {
      dl.append(el('div', {}, el('dt', { text: 'cause' }), el('dd', {}, renderProblem(value))));
      continue;
    }
    dl.append(el('div', {}, el('dt', { text: key }), el('dd', { className: 'mono', text: fmtValue(value) })));
  }
  box.append(dl);
  return box;
}

function renderLocked(p) {
  const unlock = typeof p.unlock === 'string' ? { hint: p.unlock } : (p.unlock || {});
  const wrap = el('div', { className: 'locked-facts' });
  wrap.append(el('dl', { className: 'kv' },
    el('div', {}, el('dt', { text: 'config_id' }), el('dd', { className: 'mono', 'data-field': 'config_id', text: p.config_id || '—' })),
    el('div', {}, el('dt', { text: 'frozen_at' }), el('dd', { 'data-field': 'frozen_at', text: p.frozen_at || '—' })),
    el('div', {}, el('dt', { text: 'frozen_by' }), el('dd', { 'data-field': 'frozen_by', text: fmtFrozenBy(p.frozen_by) })),
    el('div', {}, el('dt', { text: 'to unlock' }), el('dd', { 'data-field': 'unlock' },
      el('code', { text: `${unlock.method || 'DELETE'} ${unlock.path || '/v1/runner'}` }),
      unlock.hint && unlock.hint !== `${unlock.method || 'DELETE'} ${unlock.path || '/v1/runner'}` ? ` — ${unlock.hint}` : ''))));
  wrap.append(el('button', {
    type: 'button', className: 'link-button',
    onclick: () => { $('runner-reset').focus(); $('runner-panel').scrollIntoView({ behavior: 'smooth' }); },
    text: 'Go to "Reset runner"',
  }));
  return wrap;
}

function renderExpression(p) {
  const pos = Number.isInteger(p.position) ? Math.min(p.position, p.expression.length) : null;
  const pre = el('pre', { className: 'expr' });
  pre.append(p.expression);
  if (pos !== null) pre.append('\n' + ' '.repeat(pos) + '^');
  const extra = [];
  if (p.pointer) extra.push(el('span', {}, 'at ', el('code', { text: p.pointer })));
  if (p.suggestion) extra.push(el('span', {}, ' — did you mean ', el('code', { text: p.suggestion }), '?'));
  return el('div', { className: 'expr-wrap' }, pre, extra.length ? el('p', {}, extra) : null);
}

/* ---------- header: info, readiness, config lock ---------- */

async function refreshHeader() {
  const [info, ready] = await Promise.all([api('GET', '/v1/info'), api('GET', '/readyz', { accept: 'text/plain, application/problem+json' })]);
  if (info.ok && info.data) {
    const d = info.data;
    setText('info-version', d.version);
    setText('info-role', d.role);
    setText('info-uptime', fmtUptime(d.uptime_s));
    showProblem('header-problem', null);
  } else {
    showProblem('header-problem', info.problem, 'GET /v1/info');
  }
  const r = $('info-ready');
  if (ready.ok) {
    r.textContent = 'ready';
    r.dataset.kind = 'ok';
    r.title = '';
  } else {
    r.textContent = ready.problem ? `not ready (${slugOf(ready.problem) || ready.status})` : 'not ready';
    r.dataset.kind = 'warn';
    r.title = ready.problem ? ready.problem.detail || '' : '';
  }
  return info.ok;
}

function renderLockState(cfg) {
  const lock = $('info-lock');
  const badge = $('config-lock-badge');
  if (!cfg) return;
  if (cfg.locked) {
    lock.textContent = 'locked';
    lock.dataset.kind = 'warn';
    badge.textContent = 'locked';
    badge.dataset.kind = 'warn';
    const note = $('config-locked-note');
    note.hidden = false;
    note.replaceChildren(
      el('strong', { text: 'Locked: ' }),
      'frozen into the runner at ', el('span', { id: 'config-frozen-at', text: cfg.frozen_at || '—' }),
      ' by ', el('span', { text: fmtFrozenBy(cfg.frozen_by) }),
      '. Changes get 409 until the runner is reset (DELETE /v1/runner).');
  } else {
    lock.textContent = 'unlocked (setup)';
    lock.dataset.kind = 'ok';
    badge.textContent = 'unlocked';
    badge.dataset.kind = 'ok';
    $('config-locked-note').hidden = true;
  }
  setText('info-config-id', cfg.config_id || 'none (not frozen)');
}

/* ---------- config panel ---------- */

function fieldInputId(name) { return `cfg-${name}`; }

function describeBounds(f) {
  const parts = [];
  if (f.type === 'array') {
    parts.push(`default ${JSON.stringify(f.default)}`);
    if (f.maximum !== undefined) parts.push(`at most ${f.maximum} entries`);
  } else {
    parts.push(`default ${fmtValue(f.default)}`);
    if (f.minimum !== undefined || f.maximum !== undefined) parts.push(`range ${f.minimum ?? '…'} – ${f.maximum ?? '…'}`);
  }
  if (f.type === 'integer' && /bytes/.test(f.name)) parts.push(`(${fmtBytes(f.default)} default)`);
  return parts.join(' · ');
}

function buildConfigForm(schema) {
  const body = $('config-fields');
  body.replaceChildren();
  for (const f of schema) {
    const id = fieldInputId(f.name);
    let input;
    if (f.type === 'boolean') {
      input = el('input', { id, type: 'checkbox', name: f.name, 'aria-describedby': `${id}-doc ${id}-err` });
    } else if (f.type === 'integer') {
      input = el('input', {
        id, type: 'number', name: f.name, step: 1, inputmode: 'numeric',
        min: f.minimum, max: f.maximum, 'aria-describedby': `${id}-doc ${id}-err`,
      });
    } else {
      input = el('input', {
        id, type: 'text', name: f.name, spellcheck: 'false', placeholder: '["NA", "null"]',
        'aria-describedby': `${id}-doc ${id}-err`,
      });
    }
    input.addEventListener('input', () => markDirty(f.name));
    input.addEventListener('change', () => markDirty(f.name));
    const row = el('tr', { id: `${id}-row`, 'data-field': f.name },
      el('th', { scope: 'row' },
        el('label', { for: id }, el('code', { text: f.name })),
        el('span', { className: `scope scope-${f.scope}`, text: f.scope }),
        el('div', { id: `${id}-doc`, className: 'doc' }, f.doc, el('span', { className: 'bounds', text: describeBounds(f) }))),
      el('td', {}, input, el('div', { id: `${id}-err`, className: 'field-error', role: 'alert' })),
      el('td', { id: `${id}-current`, className: 'current mono' }));
    body.append(row);
  }
}

function inputValue(f) {
  const input = $(fieldInputId(f.name));
  if (f.type === 'boolean') return { ok: true, value: input.checked };
  const raw = input.value.trim();
  if (f.type === 'integer') {
    if (raw === '' || !/^-?\d+$/.test(raw)) return { ok: false, message: 'enter a whole number' };
    return { ok: true, value: Number(raw) };
  }
  if (raw === '') return { ok: true, value: [] };
  try {
    const v = JSON.parse(raw);
    if (!Array.isArray(v) || v.some((x) => typeof x !== 'string')) return { ok: false, message: 'enter a JSON array of strings, e.g. ["NA", "null"]' };
    return { ok: true, value: v };
  } catch {
    return { ok: false, message: 'enter a JSON array of strings, e.g. ["NA", "null"]' };
  }
}

function setInputValue(f, value) {
  const input = $(fieldInputId(f.name));
  if (f.type === 'boolean') input.checked = Boolean(value);
  else if (f.type === 'array') input.value = JSON.stringify(value ?? []);
  else input.value = value ?? '';
}

function sameValue(a, b) { return JSON.stringify(a) === JSON.stringify(b); }

function markDirty(name) {
  const f = state.schema.find((x) => x.name === name);
  const v = inputValue(f);
  const current = state.config ? state.config.values[name] : undefined;
  const dirty = !v.ok || !sameValue(v.value, current);
  $(`${fieldInputId(name)}-row`).classList.toggle('dirty', dirty);
  $(`${fieldInputId(name)}-row`).dataset.dirty = dirty ? '1' : '';
}

function isDirty(name) { return $(`${fieldInputId(name)}-row`).dataset.dirty === '1'; }

function clearFieldErrors() {
  for (const f of state.schema || []) {
    $(`${fieldInputId(f.name)}-err`).textContent = '';
    $(`${fieldInputId(f.name)}-row`).classList.remove('invalid');
    $(fieldInputId(f.name)).removeAttribute('aria-invalid');
  }
}

function setFieldError(name, message) {
  const errNode = $(`${fieldInputId(name)}-err`);
  if (!errNode) return false;
  errNode.textContent = errNode.textContent ? `${errNode.textContent}; ${message}` : message;
  $(`${fieldInputId(name)}-row`).classList.add('invalid');
  $(fieldInputId(name)).setAttribute('aria-invalid', 'true');
  return true;
}

// Shows the config's values; inputs the user is editing keep their edits unless force.
function renderConfigValues(cfg, force) {
  if (!state.schema || !cfg) return;
  for (const f of state.schema) {
    const v = cfg.values[f.name];
    const cur = $(`${fieldInputId(f.name)}-current`);
    cur.textContent = f.type === 'array' ? JSON.stringify(v) : fmtValue(v);
    cur.title = f.type === 'integer' && /bytes/.test(f.name) ? fmtBytes(v) : '';
    if (force || !isDirty(f.name)) {
      setInputValue(f, v);
      markDirty(f.name);
    } else {
      markDirty(f.name);
    }
  }
}

async function loadSchema() {
  const res = await api('GET', '/v1/config/schema');
  if (!res.ok) {
    showProblem('config-problem', res.problem, 'GET /v1/config/schema');
    return false;
  }
  state.schema = res.data;
  buildConfigForm(state.schema);
  return true;
}

async function refreshConfig(force = false) {
  const res = await api('GET', '/v1/config');
  if (!res.ok) {
    showProblem('config-problem', res.problem, 'GET /v1/config');
    return;
  }
  state.config = res.data;
  renderLockState(res.data);
  renderConfigValues(res.data, force);
}

async function saveConfig(ev) {
  ev.preventDefault();
  if (!state.schema || !state.config) return;
  clearFieldErrors();
  showProblem('config-problem', null);
  const patch = {};
  let bad = 0;
  for (const f of state.schema) {
    if (!isDirty(f.name)) continue;
    const v = inputValue(f);
    if (!v.ok) { setFieldError(f.name, v.message); bad++; continue; }
    patch[f.name] = v.value;
  }
  if (bad) { setStatus('config-status', `Fix ${bad} field${bad > 1 ? 's' : ''} first; nothing was sent.`, 'error'); return; }
  const names = Object.keys(patch);
  if (!names.length) { setStatus('config-status', 'Nothing changed; nothing to save.', 'info'); return; }
  setStatus('config-status', 'Saving…', 'info');
  $('config-save').disabled = true;
  const res = await api('POST', '/v1/config', { json: patch, admin: true });
  $('config-save').disabled = false;
  if (res.ok) {
    state.config = res.data;
    renderLockState(res.data);
    renderConfigValues(res.data, true);
    setStatus('config-status', `Saved: ${names.map((n) => `${n} = ${fmtValue(patch[n])}`).join(', ')}`, 'ok');
    return;
  }
  setStatus('config-status', `Not saved (${res.status || 'no answer'}): ${res.problem.title}`, 'error');
  if (Array.isArray(res.problem.errors)) {
    for (const e of res.problem.errors) {
      if (!setFieldError(e.field, e.message)) { /* unknown field: listed in the problem box */ }
    }
  }
  showProblem('config-problem', res.problem, 'POST /v1/config');
  if (slugOf(res.problem) === 'config-locked') refreshConfig();
  if (slugOf(res.problem) === 'unauthorized') $('admin-token').focus();
}

/* ---------- runner panel ---------- */

function renderRunner(r) {
  const badge = $('runner-state-badge');
  badge.textContent = r.state;
  badge.dataset.kind = r.state === 'active' ? 'warn' : r.state === 'draining' ? 'error' : 'ok';
  const rows = [
    ['state', r.state], ['kind', r.kind || '—'], ['config_id', r.config_id || '—'],
    ['created_at', r.created_at || '—'], ['frozen_by', fmtFrozenBy(r.frozen_by)],
    ['queries running', r.queries ? r.queries.running : '—'],
    ['queries finished', r.queries ? r.queries.finished : '—'],
  ];
  if (r.dataframes !== undefined) rows.push(['dataframes', r.dataframes]);
  if (r.workers !== undefined) rows.push(['workers', r.workers === null ? 'n/a (local)' : r.workers]);
  if (r.detail && typeof r.detail === 'object') {
    for (const [k, v] of Object.entries(r.detail)) if (k !== 'kind' && k !== 'running') rows.push([k.replace(/_/g, ' '), fmtValue(v)]);
  }
  $('runner-facts').replaceChildren(...rows.map(([k, v]) =>
    el('div', {}, el('dt', { text: k }), el('dd', { className: k === 'config_id' ? 'mono' : '', 'data-field': k, text: String(v) }))));
  $('runner-reset').disabled = r.state === 'none';
}

async function refreshRunner() {
  const res = await api('GET', '/v1/runner');
  if (!res.ok) { showProblem('runner-problem', res.problem, 'GET /v1/runner'); return; }
  renderRunner(res.data);
}

// What DELETE /v1/runner released, in words; reads the contract's members and says what else came.
function describeRelease(d) {
  const parts = [];
  const id = d.config_id || d.released_config_id;
  parts.push(`Runner reset: released ${id || 'the config'}`);
  const known = {
    queries_finished: 'queries finished', queries_cancelled: 'queries cancelled',
    dataframes: 'dataframes dropped', dataframes_dropped: 'dataframes dropped',
    partitions: 'partitions dropped', workers_notified: 'workers notified',
  };
  const counts = [];
  for (const [k, label] of Object.entries(known)) if (typeof d[k] === 'number') counts.push(`${d[k]} ${label}`);
  if (counts.length) parts.push(counts.join(', '));
  if (d.store_released || d.config_released) parts.push('store released');
  const ms = d.elapsed_ms ?? d.drained_ms;
  if (typeof ms === 'number') parts.push(`in ${fmtMs(ms)}`);
  return `${parts.join('; ')}. The config is unlocked.`;
}

async function resetRunner() {
  const force = $('runner-force').checked;
  const msg = force
    ? 'Reset the runner and CANCEL its running queries?\n\nIts dataframes, queries and partitions are dropped and the frozen config is released (the config unlocks).'
    : 'Reset the runner?\n\nIt waits for running queries, then drops its dataframes, queries and partitions and releases the frozen config (the config unlocks).';
  if (!window.confirm(msg)) { setStatus('runner-status', 'Reset cancelled.', 'info'); return; }
  showProblem('runner-problem', null);
  setStatus('runner-status', force ? 'Resetting (cancelling queries)…' : 'Resetting (waiting for running queries)…', 'info');
  $('runner-reset').disabled = true;
  const res = await api('DELETE', `/v1/runner${force ? '?force=true' : ''}`, { admin: true });
  $('runner-reset').disabled = false;
  if (res.ok) {
    setStatus('runner-status', describeRelease(res.data || {}), 'ok');
    forgetDataframe('The runner was reset: its dataframes and queries are gone.');
  } else {
    setStatus('runner-status', `Reset failed (${res.status || 'no answer'}).`, 'error');
    showProblem('runner-problem', res.problem, 'DELETE /v1/runner');
    if (slugOf(res.problem) === 'unauthorized') $('admin-token').focus();
  }
  await Promise.all([refreshRunner(), refreshConfig(), refreshHeader()]);
}

/* ---------- datasets ---------- */

function schemaText(cols) {
  if (!Array.isArray(cols)) return '—';
  return cols.map((c) => `${c.name}: ${c.type}`).join(', ');
}

async function refreshDatasets() {
  const res = await api('GET', '/v1/datasets');
  const body = $('datasets-body');
  if (!res.ok) { showProblem('datasets-problem', res.problem, 'GET /v1/datasets'); return; }
  body.replaceChildren();
  // The contract's list is an array; a {datasets: [...]} wrapper is read too.
  const list = Array.isArray(res.data) ? res.data : (res.data && res.data.datasets) || [];
  if (!list.length) {
    body.append(el('tr', {}, el('td', { colspan: 5, className: 'empty', text: 'No datasets yet. Upload a CSV or NDJSON file below.' })));
    return;
  }
  for (const d of list) {
    body.append(el('tr', { 'data-dataset': d.name },
      el('th', { scope: 'row', className: 'mono', text: d.name }),
      el('td', { text: d.format }),
      el('td', { className: 'num', title: `${d.bytes} bytes`, text: fmtBytes(d.bytes) }),
      el('td', { className: 'schema-cell', text: schemaText(d.schema) }),
      el('td', { className: 'row-actions' },
        el('button', { type: 'button', onclick: () => usePlanSource(d.name), 'aria-label': `Use ${d.name} in the plan editor`, text: 'Use' }),
        el('button', { type: 'button', className: 'danger', onclick: () => deleteDataset(d.name), 'aria-label': `Delete dataset ${d.name}`, text: 'Delete' }))));
  }
}

// Starts a new plan on the dataset (the old ops named other columns; "Load example" brings them back).
function usePlanSource(name) {
  $('plan-editor').value = JSON.stringify({ source: { dataset: name }, ops: [] }, null, 2);
  setStatus('df-status', `Plan reset to read ${name}; add ops, then Create.`, 'info');
  $('plan-editor').focus();
}

async function deleteDataset(name) {
  if (!window.confirm(`Delete dataset "${name}"? The file is removed from the data directory.`)) return;
  showProblem('datasets-problem', null);
  const res = await api('DELETE', `/v1/datasets/${encodeURIComponent(name)}`, { admin: true });
  if (res.ok) setStatus('upload-status', `Deleted ${name}.`, 'ok');
  else showProblem('datasets-problem', res.problem, `DELETE /v1/datasets/${name}`);
  await refreshDatasets();
}

function uploadContentType(file) {
  const chosen = $('upload-format').value;
  if (chosen !== 'auto') return chosen;
  if (/\.(ndjson|jsonl)$/i.test(file.name)) return 'application/x-ndjson';
  if (/\.csv$/i.test(file.name)) return 'text/csv';
  if (file.type === 'text/csv' || file.type === 'application/x-ndjson') return file.type;
  return null;
}

async function uploadDataset(ev) {
  ev.preventDefault();
  showProblem('datasets-problem', null);
  const file = $('upload-file').files[0];
  if (!file) { setStatus('upload-status', 'Choose a file first.', 'error'); return; }
  const name = $('upload-name').value.trim() || file.name.replace(/\.(csv|ndjson|jsonl)$/i, '');
  const type = uploadContentType(file);
  if (!type) { setStatus('upload-status', 'Cannot tell the format from the file name: pick CSV or NDJSON.', 'error'); return; }
  setStatus('upload-status', `Uploading ${file.name} as ${name} (${type})…`, 'info');
  const res = await api('PUT', `/v1/datasets/${encodeURIComponent(name)}`, { body: file, contentType: type, admin: true });
  if (res.ok) {
    setStatus('upload-status', `${res.status === 201 ? 'Created' : 'Replaced'} ${name}: ${fmtBytes(res.data.bytes)}, ${res.data.schema.length} columns.`, 'ok');
    $('upload-form').reset();
  } else {
    setStatus('upload-status', `Upload failed (${res.status || 'no answer'}).`, 'error');
    showProblem('datasets-problem', res.problem, `PUT /v1/datasets/${name}`);
  }
  await refreshDatasets();
}

/* ---------- dataframes ---------- */

function renderTable(table, columns, rows, caption) {
  table.replaceChildren();
  if (caption) table.append(el('caption', { className: 'sr-only', text: caption }));
  table.append(el('thead', {}, el('tr', {}, columns.map((c) =>
    el('th', { scope: 'col', title: c.type }, c.name, el('span', { className: 'coltype', text: c.type }))))));
  const tbody = el('tbody');
  for (const row of rows) {
    tbody.append(el('tr', {}, row.map((v, i) => {
      const t = columns[i] ? columns[i].type : '';
      return el('td', { className: `${t === 'int64' || t === 'float64' ? 'num' : ''}${v === null ? ' null' : ''}`, text: v === null ? 'null' : String(v) });
    })));
  }
  if (!rows.length) tbody.append(el('tr', {}, el('td', { colspan: Math.max(columns.length, 1), className: 'empty', text: 'no rows' })));
  table.append(tbody);
}

function readPlan() {
  const text = $('plan-editor').value;
  try {
    return { ok: true, plan: JSON.parse(text) };
  } catch (e) {
    return {
      ok: false, problem: {
        title: 'The plan is not valid JSON', status: 0, type: 'about:blank#client',
        detail: `${e.message}. Nothing was sent. Fix the JSON in the editor (or press "Load example").`,
      },
    };
  }
}

function forgetDataframe(note) {
  stopPolling();
  state.dataframe = null;
  state.query = null;
  $('df-run').disabled = true;
  $('df-explain').disabled = true;
  $('df-details').hidden = true;
  $('df-empty').hidden = false;
  $('query-area').hidden = true;
  $('explain-area').hidden = true;
  if (note) setStatus('df-status', note, 'info');
}

async function createDataframe() {
  showProblem('df-problem', null);
  const p = readPlan();
  if (!p.ok) { showProblem('df-problem', p.problem); setStatus('df-status', '', 'info'); return; }
  setStatus('df-status', 'Creating…', 'info');
  $('df-create').disabled = true;
  const res = await api('POST', '/v1/dataframes', { json: p.plan });
  $('df-create').disabled = false;
  if (!res.ok) {
    setStatus('df-status', `Create failed (${res.status || 'no answer'}).`, 'error');
    showProblem('df-problem', res.problem, 'POST /v1/dataframes');
    return;
  }
  const df = res.data;
  stopPolling();
  state.dataframe = df;
  state.query = null;
  $('query-area').hidden = true;
  $('explain-area').hidden = true;
  $('df-empty').hidden = true;
  $('df-details').hidden = false;
  setText('df-id', df.id);
  setText('df-config-id', df.config_id);
  setText('df-created', df.created_at || '—');
  $('df-schema').replaceChildren(...df.schema.map((c) => el('span', { className: 'col-chip' }, el('code', { text: c.name }), ` ${c.type}`)));
  // The contract's preview is {rows, truncated}; a bare array of rows is read too.
  const preview = Array.isArray(df.preview) ? { rows: df.preview } : (df.preview || { rows: [] });
  const n = preview.rows.length;
  renderTable($('preview-table'), df.schema, preview.rows, 'Preview rows');
  $('preview-note').textContent = `${n} row${n === 1 ? '' : 's'} shown` +
    (preview.truncated === true ? ' (truncated: the dataframe has more; Run it for all rows).'
      : preview.truncated === false ? ' (all rows).' : ' (the server did not say whether there are more).');
  $('df-run').disabled = false;
  $('df-explain').disabled = false;
  setStatus('df-status', `Created ${df.id}.`, 'ok');
  refreshConfig();
  refreshRunner();
  refreshHeader();
}

function stopPolling() {
  if (state.pollTimer) clearTimeout(state.pollTimer);
  state.pollTimer = null;
}

const RUNNING = new Set(['queued', 'running']);

function renderQuery(q) {
  $('query-area').hidden = false;
  setText('q-id', q.id);
  const st = $('q-state');
  st.textContent = q.state;
  st.dataset.kind = q.state === 'succeeded' ? 'ok' : RUNNING.has(q.state) ? 'info' : 'error';
  const prog = q.progress || { tasks_total: 0, tasks_done: 0 };
  $('q-progress').max = Math.max(prog.tasks_total, 1);
  $('q-progress').value = prog.tasks_done;
  setText('q-progress-text', `${prog.tasks_done} / ${prog.tasks_total} tasks`);
  setText('q-elapsed', q.elapsed_ms !== undefined ? fmtMs(q.elapsed_ms) : '—');
  setText('q-rows', q.rows);
  setText('q-null-errors', q.null_errors);
  setText('q-config-id', q.config_id);
  $('q-cancel').disabled = !RUNNING.has(q.state);
  $('q-download').disabled = q.state !== 'succeeded';
  if (q.error) showProblem('q-problem', q.error, `query ${q.state}`);
  else showProblem('q-problem', null);
}

async function runQuery() {
  if (!state.dataframe) return;
  stopPolling();
  showProblem('q-problem', null);
  $('result-area').hidden = true;
  setStatus('df-status', `Running ${state.dataframe.id}…`, 'info');
  $('df-run').disabled = true;
  // The first answer comes when the query finishes or after 30 s; show it as queued meanwhile.
  renderQuery({ id: '…', state: 'queued', progress: { tasks_total: 0, tasks_done: 0 }, rows: null, null_errors: null, config_id: state.dataframe.config_id });
  const res = await api('POST', '/v1/queries?wait=30', { json: { dataframe: state.dataframe.id } });
  $('df-run').disabled = false;
  if (!res.ok) {
    setStatus('df-status', `Run failed (${res.status || 'no answer'}).`, 'error');
    $('query-area').hidden = true;
    showProblem('df-problem', res.problem, 'POST /v1/queries');
    return;
  }
  setStatus('df-status', '', 'info');
  state.query = res.data;
  state.page.offset = 0;
  if (res.status === 202 || RUNNING.has(res.data.state)) {
    renderQuery({ progress: { tasks_total: 0, tasks_done: 0 }, rows: null, null_errors: 0, elapsed_ms: 0, error: null, ...res.data });
    pollQuery(res.data.id);
  } else {
    onQueryUpdate(res.data);
  }
  refreshRunner();
}

function onQueryUpdate(q) {
  state.query = q;
  renderQuery(q);
  if (RUNNING.has(q.state)) {
    state.pollTimer = setTimeout(() => pollQuery(q.id), POLL_MS);
    return;
  }
  setStatus('q-status', `Query ${q.state}${q.state === 'succeeded' ? `: ${q.rows} rows in ${fmtMs(q.elapsed_ms)}` : ''}.`, q.state === 'succeeded' ? 'ok' : 'error');
  if (q.state === 'succeeded') loadResultPage();
  refreshRunner();
}

async function pollQuery(id) {
  state.pollTimer = null;
  const res = await api('GET', `/v1/queries/${encodeURIComponent(id)}`);
  if (!state.query || state.query.id !== id) return; // superseded
  if (!res.ok) {
    showProblem('q-problem', res.problem, `GET /v1/queries/${id}`);
    setStatus('q-status', 'Stopped following the query.', 'error');
    return;
  }
  onQueryUpdate(res.data);
}

async function cancelQuery() {
  if (!state.query) return;
  const id = state.query.id;
  setStatus('q-status', 'Cancelling…', 'info');
  const res = await api('DELETE', `/v1/queries/${encodeURIComponent(id)}`);
  if (!res.ok) {
    showProblem('q-problem', res.problem, `DELETE /v1/queries/${id}`);
    setStatus('q-status', 'Cancel failed.', 'error');
    return;
  }
  stopPolling();
  onQueryUpdate(res.data);
}

async function loadResultPage() {
  const q = state.query;
  if (!q || q.state !== 'succeeded') return;
  const { offset, limit } = state.page;
  const res = await api('GET', `/v1/queries/${encodeURIComponent(q.id)}/result?offset=${offset}&limit=${limit}`);
  $('result-area').hidden = false;
  if (!res.ok) {
    showProblem('result-problem', res.problem, 'GET result');
    return;
  }
  showProblem('result-problem', null);
  const r = res.data;
  state.page.total = r.total_rows;
  renderTable($('result-table'), r.columns, r.rows, 'Result rows');
  const first = r.rows.length ? r.offset + 1 : 0;
  const last = r.offset + r.rows.length;
  $('page-info').textContent = `rows ${first}–${last} of ${r.total_rows}`;
  $('page-first').disabled = offset === 0;
  $('page-prev').disabled = offset === 0;
  $('page-next').disabled = last >= r.total_rows;
}

function goPage(delta) {
  const { limit, total } = state.page;
  if (delta === 'first') state.page.offset = 0;
  else state.page.offset = Math.max(0, Math.min(state.page.offset + delta * limit, Math.max(0, total - 1)));
  loadResultPage();
}

async function downloadCsv() {
  const q = state.query;
  if (!q) return;
  setStatus('q-status', 'Fetching CSV…', 'info');
  const res = await api('GET', `/v1/queries/${encodeURIComponent(q.id)}/result`, { accept: 'text/csv' });
  if (!res.ok) {
    showProblem('q-problem', res.problem, 'download CSV');
    setStatus('q-status', 'Download failed.', 'error');
    return;
  }
  const url = URL.createObjectURL(new Blob([res.text], { type: 'text/csv' }));
  const a = el('a', { href: url, download: `${q.id}.csv`, hidden: true });
  document.body.append(a);
  a.click();
  a.remove();
  setTimeout(() => URL.revokeObjectURL(url), 10000);
  setStatus('q-status', `Downloaded ${q.id}.csv (${fmtBytes(new Blob([res.text]).size)}).`, 'ok');
}

// Stage inputs are stage numbers in the contract; objects ({stage, mode} or a file) are described.
function fmtStageInput(i) {
  if (typeof i === 'number') return `stage ${i}`;
  if (i && typeof i === 'object') {
    if (i.stage !== undefined) return `stage ${i.stage}${i.mode ? ` (${i.mode})` : ''}`;
    if (i.name) return `${i.kind || 'file'} ${i.name}${i.bytes !== undefined ? ` (${fmtBytes(i.bytes)})` : ''}`;
  }
  return fmtValue(i);
}

// The contract's stage detail is a string; other members (pipeline, sink, core) are summed up
// as "filter → project → partial_agg" with the full JSON one click away.
function stageDetail(s) {
  if (typeof s.detail === 'string') return s.detail;
  const extra = {};
  for (const [k, v] of Object.entries(s)) if (!['id', 'kind', 'tasks', 'inputs'].includes(k)) extra[k] = v;
  if (!Object.keys(extra).length) return '';
  const steps = [];
  for (const op of Array.isArray(extra.pipeline) ? extra.pipeline : []) {
    if (op && typeof op === 'object') steps.push(Object.keys(op)[0]);
  }
  for (const k of ['core', 'sink']) if (extra[k] && extra[k].op) steps.push(extra[k].op);
  return el('details', { className: 'stage-detail' },
    el('summary', { text: steps.length ? steps.join(' → ') : 'details' }),
    el('pre', { text: JSON.stringify(extra, null, 2) }));
}

function planText(p) {
  if (p === undefined || p === null) return '';
  return typeof p === 'string' ? p : JSON.stringify(p, null, 2);
}

async function explainDataframe() {
  if (!state.dataframe) return;
  const id = state.dataframe.id;
  const res = await api('GET', `/v1/dataframes/${encodeURIComponent(id)}/explain`);
  $('explain-area').hidden = false;
  if (!res.ok) {
    showProblem('explain-problem', res.problem, `GET /v1/dataframes/${id}/explain`);
    return;
  }
  showProblem('explain-problem', null);
  const x = res.data;
  setText('explain-config-id', x.config_id || state.dataframe.config_id);
  const stages = (x.physical && x.physical.stages) || [];
  const st = $('stages-table');
  st.replaceChildren(
    el('thead', {}, el('tr', {}, ['stage', 'kind', 'tasks', 'inputs', 'detail'].map((h) => el('th', { scope: 'col', text: h })))),
    el('tbody', {}, stages.map((s) => el('tr', {},
      el('td', { className: 'num', text: s.id }), el('td', { text: s.kind }),
      el('td', { className: 'num', text: s.tasks }), el('td', { text: (s.inputs || []).map(fmtStageInput).join(', ') || '—' }),
      el('td', { className: 'small' }, stageDetail(s))))));
  const dt = $('decisions-table');
  const decisions = x.decisions || [];
  dt.replaceChildren(
    el('thead', {}, el('tr', {}, ['decision', 'reason', 'config field', 'config value'].map((h) => el('th', { scope: 'col', text: h })))),
    el('tbody', {}, decisions.length
      ? decisions.map((d) => el('tr', {},
        el('td', { text: d.decision }), el('td', { text: d.reason ?? '—' }),
        el('td', { className: 'mono', text: d.config_field ?? '—' }), el('td', { className: 'mono', text: fmtValue(d.config_value) })))
      : el('tr', {}, el('td', { colspan: 4, className: 'empty', text: 'no decisions' }))));
  $('explain-logical').textContent = planText(x.logical);
  $('explain-optimized').textContent = planText(x.optimized);
  $('explain-area').scrollIntoView({ behavior: 'smooth', block: 'nearest' });
}

/* ---------- token, refresh loop, wiring ---------- */

function initToken() {
  $('admin-token').value = adminToken();
  $('token-form').addEventListener('submit', (ev) => {
    ev.preventDefault();
    const v = $('admin-token').value.trim();
    try {
      if (v) sessionStorage.setItem(TOKEN_KEY, v); else sessionStorage.removeItem(TOKEN_KEY);
    } catch (e) { /* storage disabled: nothing kept */ }
    setStatus('refresh-state', v ? 'Admin token kept for this tab.' : 'Admin token cleared.', 'info');
  });
  $('admin-token-clear').addEventListener('click', () => {
    $('admin-token').value = '';
    try { sessionStorage.removeItem(TOKEN_KEY); } catch (e) { /* nothing kept */ }
    setStatus('refresh-state', 'Admin token cleared.', 'info');
  });
}

let refreshing = false;
async function refreshAll() {
  if (refreshing) return;
  refreshing = true;
  try {
    const ok = await refreshHeader();
    await Promise.all([
      refreshRunner(),
      state.schema ? refreshConfig() : loadSchema().then((loaded) => (loaded ? refreshConfig(true) : null)),
    ]);
    setStatus('refresh-state', `${ok ? 'Updated' : 'Update failed'} at ${new Date().toLocaleTimeString()} (every ${REFRESH_MS / 1000} s)`, ok ? 'ok' : 'error');
  } finally {
    refreshing = false;
  }
}

async function init() {
  initToken();
  $('plan-editor').value = JSON.stringify(EXAMPLE_PLAN, null, 2);
  $('config-form').addEventListener('submit', saveConfig);
  $('config-revert').addEventListener('click', () => {
    clearFieldErrors();
    renderConfigValues(state.config, true);
    setStatus('config-status', 'Edits reverted.', 'info');
  });
  $('runner-reset').addEventListener('click', resetRunner);
  $('datasets-refresh').addEventListener('click', refreshDatasets);
  $('upload-form').addEventListener('submit', uploadDataset);
  $('upload-file').addEventListener('change', () => {
    const f = $('upload-file').files[0];
    if (f && !$('upload-name').value) $('upload-name').value = f.name.replace(/\.(csv|ndjson|jsonl)$/i, '');
  });
  $('df-create').addEventListener('click', createDataframe);
  $('df-run').addEventListener('click', runQuery);
  $('df-explain').addEventListener('click', explainDataframe);
  $('plan-format').addEventListener('click', () => {
    const p = readPlan();
    if (p.ok) { $('plan-editor').value = JSON.stringify(p.plan, null, 2); showProblem('df-problem', null); } else showProblem('df-problem', p.problem);
  });
  $('plan-example').addEventListener('click', () => { $('plan-editor').value = JSON.stringify(EXAMPLE_PLAN, null, 2); });
  $('q-cancel').addEventListener('click', cancelQuery);
  $('q-download').addEventListener('click', downloadCsv);
  $('page-first').addEventListener('click', () => goPage('first'));
  $('page-prev').addEventListener('click', () => goPage(-1));
  $('page-next').addEventListener('click', () => goPage(1));
  $('page-size').addEventListener('change', () => {
    state.page.limit = Number($('page-size').value);
    state.page.offset = 0;
    loadResultPage();
  });
  state.page.limit = Number($('page-size').value);

  await refreshHeader();
  if (await loadSchema()) await refreshConfig(true);
  await Promise.all([refreshRunner(), refreshDatasets()]);
  setStatus('refresh-state', `Updated at ${new Date().toLocaleTimeString()} (every ${REFRESH_MS / 1000} s)`, 'ok');
  document.body.dataset.ready = '1';
  setInterval(refreshAll, REFRESH_MS);
}

document.addEventListener('DOMContentLoaded', init);
