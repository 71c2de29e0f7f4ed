// Datasets: the data dir's datasets sorted by name with their schemas and sizes, a preview and
// row count (small queries: they freeze the config like any query), upload with a progress bar and a
// confirm before replacing, and a composer that builds a plan (where, select, groupby with
// aggregates, sort, limit) from a dataset and runs it, or takes SQL (starting from the
// builder's fields) and runs or explains it.
import { useEffect, useMemo, useState } from 'preact/hooks';
import { html } from '../lib/html.js';
import { api, enc, upload } from '../lib/api.js';
import { navigate } from '../lib/router.js';
import { Empty, Loading, Problem, useResource } from '../lib/ui.js';
import { fmtBytes, fmtNumber, fmtValue } from '../lib/format.js';

const PREVIEW_ROWS = 10;
const list = (s) => s.split(',').map((x) => x.trim()).filter(Boolean);

function contentTypeOf(file) {
  return /\.(nd)?jsonl?$/i.test(file.name) || /ndjson/.test(file.type) ? 'application/x-ndjson' : 'text/csv';
}

// Runs a query's plan and reads its first rows: {data} or {problem}.
async function runRows(plan, limit) {
  const q = await api('POST', '/v1/queries?wait=30', { json: { plan } });
  if (!q.ok) return { problem: q.problem };
  if (q.data.state !== 'succeeded') return { problem: { title: `The query ${q.data.state}`, detail: q.data.error ? q.data.error.message : '' } };
  const r = await api('GET', `/v1/queries/${enc(q.data.id)}/result?limit=${limit}`);
  return r.ok ? { data: r.data } : { problem: r.problem };
}

// The first rows and the row count, by two small queries (they freeze the config like any).
function Preview({ name }) {
  const [st, setSt] = useState(null);
  const run = async () => {
    setSt({ busy: true });
    const [rows, count] = await Promise.all([runRows({ source: { dataset: name }, ops: [{ limit: PREVIEW_ROWS }] }, PREVIEW_ROWS),
      runRows({ source: { dataset: name }, ops: [{ agg: ['count(*) as n'] }] }, 1)]);
    const problem = rows.problem || count.problem;
    setSt(problem ? { problem } : { data: rows.data, count: count.data.rows[0][0] });
  };
  if (!st) return html`<button type="button" class="preview-btn" data-dataset=${name} onClick=${run} title="runs two small queries (this freezes the config)">Preview and count rows</button>`;
  if (st.busy) return html`<${Loading} what="the preview" />`;
  if (st.problem) return html`<${Problem} problem=${st.problem} context="preview" />`;
  return html`<p class="row-count" data-dataset=${name}><strong>${fmtNumber(st.count)}</strong> rows${st.count > st.data.rows.length ? `, the first ${st.data.rows.length}:` : ':'}</p>
  <div class="table-wrap"><table class="preview-table" data-dataset=${name}>
    <thead><tr>${st.data.columns.map((c) => html`<th>${c.name}</th>`)}</tr></thead>
    <tbody>${st.data.rows.map((r) => html`<tr>${r.map((v) => html`<td class=${typeof v === 'number' ? 'num' : ''}>${v === null ? html`<span class="muted">null</span>` : typeof v === 'number' ? fmtNumber(v) : fmtValue(v)}</td>`)}</tr>`)}</tbody>
  </table></div>`;
}

function DatasetRow({ d, onDelete }) {
  return html`<li class="dataset card" data-dataset=${d.name}>
    <div class="dataset-head"><h3><code>${d.name}</code></h3>
      <span class="muted">${d.format} · ${fmtBytes(d.bytes)} · ${(d.schema || []).length} columns · ${d.rows !== undefined ? `${fmtNumber(d.rows)} rows` : 'rows: see Preview'}</span>
      <button type="button" class="danger small-btn" onClick=${() => onDelete(d.name)} aria-label=${`Delete ${d.name}`}>Delete</button></div>
    <details><summary>Schema</summary><div class="table-wrap"><table class="schema-table"><thead><tr><th>Column</th><th>Type</th></tr></thead>
      <tbody>${(d.schema || []).map((c) => html`<tr><td><code>${c.name}</code></td><td>${c.type}</td></tr>`)}</tbody></table></div></details>
    <${Preview} name=${d.name} />
  </li>`;
}

function Upload({ names, onDone }) {
  const [file, setFile] = useState(null);
  const [name, setName] = useState('');
  const [st, setSt] = useState({ sent: 0, total: 0, busy: false, text: '', problem: null });
  const pick = (e) => {
    const f = e.currentTarget.files[0] || null;
    setFile(f);
    if (f && !name) setName(f.name.replace(/\.[^.]*$/, '').replace(/[^A-Za-z0-9_-]/g, '_'));
  };
  const submit = async (e) => {
    e.preventDefault();
    if (!file || !name) { setSt((s) => ({ ...s, text: 'Pick a file and a name first.' })); return; }
    if (names.includes(name) && !confirm(`Replace the dataset ${name}?`)) { setSt((s) => ({ ...s, text: 'Not replaced.' })); return; }
    setSt({ sent: 0, total: file.size, busy: true, text: 'Uploading…', problem: null });
    const r = await upload(`/v1/datasets/${enc(name)}`, file, contentTypeOf(file), (sent, total) => setSt((s) => ({ ...s, sent, total })));
    setSt((s) => ({ ...s, busy: false, sent: r.ok ? s.total : s.sent, text: r.ok ? `Uploaded ${name} (${r.status === 201 ? 'created' : 'replaced'})` : 'Upload failed.', problem: r.ok ? null : r.problem }));
    if (r.ok) onDone();
  };
  const pct = st.total ? Math.round((100 * st.sent) / st.total) : 0;
  return html`<form id="upload-form" class="card" onSubmit=${submit}>
    <h2>Upload</h2>
    <label>File (CSV or NDJSON) <input type="file" id="ds-file" accept=".csv,.ndjson,.jsonl,text/csv,application/x-ndjson" onChange=${pick} /></label>
    <label>Name <input id="ds-name" value=${name} pattern="[A-Za-z0-9_\\-]+" onInput=${(e) => setName(e.currentTarget.value)} /></label>
    <button type="submit" id="ds-upload" disabled=${st.busy}>Upload</button>
    <progress id="ds-upload-progress" max="100" value=${pct} aria-label="upload progress">${pct}%</progress>
    <span id="ds-upload-status" aria-live="polite">${st.text}${st.busy ? ` ${pct}% of ${fmtBytes(st.total)}` : ''}</span>
    <${Problem} problem=${st.problem} context="upload" />
  </form>`;
}

// The plan the composer's fields describe.
function buildPlan(c) {
  const ops = [];
  if (c.where.trim()) ops.push({ where: c.where.trim() });
  if (list(c.groupby).length) ops.push({ groupby: list(c.groupby), agg: list(c.agg).length ? list(c.agg) : ['count(*) as n'] });
  else if (list(c.select).length) ops.push({ select: list(c.select) });
  if (list(c.sort).length) ops.push({ sort: list(c.sort) });
  if (String(c.limit).trim()) ops.push({ limit: Number(c.limit) });
  return { source: { dataset: c.dataset }, ops };
}

// The builder's fields as one SQL statement (the SQL tab starts from it).
const quoteIdent = (n) => (/^[a-z_][a-z0-9_]*$/.test(n) ? n : `"${n.replace(/"/g, '""')}"`);
function buildSql(c) {
  const keys = list(c.groupby);
  const items = keys.length ? [...keys, ...(list(c.agg).length ? list(c.agg) : ['count(*) as n'])] : list(c.select);
  const parts = [`SELECT ${items.length ? items.join(', ') : '*'}`, `FROM ${quoteIdent(c.dataset || 'dataset')}`];
  if (c.where.trim()) parts.push(`WHERE ${c.where.trim()}`);
  if (keys.length) parts.push(`GROUP BY ${keys.join(', ')}`);
  if (list(c.sort).length) parts.push(`ORDER BY ${list(c.sort).join(', ')}`);
  if (String(c.limit).trim()) parts.push(`LIMIT ${Number(c.limit)}`);
  return parts.join('\n');
}

// SQL beside the builder: POST /v1/queries {"sql"}; Explain shows the plan it compiles to, and a
// syntax error shows its line, column and caret excerpt.
function SqlComposer({ initial }) {
  const [sql, setSql] = useState(initial);
  const [st, setSt] = useState({ busy: false, problem: null, explain: null });
  const send = async (text) => api('POST', '/v1/queries', { json: { sql: text } });
  const run = async (e) => {
    e.preventDefault();
    setSt({ busy: true, problem: null, explain: null });
    const r = await send(sql);
    setSt({ busy: false, problem: r.ok ? null : r.problem, explain: null });
    if (r.ok) navigate('queries', r.data.id);
  };
  const explain = async () => {
    setSt({ busy: true, problem: null, explain: null });
    const r = await send(`EXPLAIN ${sql.replace(/;\s*$/, '')}`);
    setSt({ busy: false, problem: r.ok ? null : r.problem, explain: r.ok ? r.data : null });
  };
  return html`<form id="sql-composer" onSubmit=${run}>
    <label for="c-sql">SQL <span class="muted small">(DuckDB/PostgreSQL dialect; datasets are tables)</span></label>
    <textarea id="c-sql" class="sql-editor" rows="8" spellcheck="false" value=${sql}
      onInput=${(e) => setSql(e.currentTarget.value)}
      onKeyDown=${(e) => { if (e.key === 'Enter' && (e.ctrlKey || e.metaKey)) run(e); }}></textarea>
    <div class="actions">
      <button type="submit" id="c-sql-run" disabled=${st.busy || !sql.trim()}>Run</button>
      <button type="button" id="c-sql-explain" disabled=${st.busy || !sql.trim()} onClick=${explain}>Explain</button>
      <span class="muted small">Ctrl+Enter runs</span>
    </div>
    <div id="c-sql-problem"><${Problem} problem=${st.problem} context="POST /v1/queries (sql)" /></div>
    ${st.explain ? html`<details open><summary>Plan</summary><pre id="c-sql-plan" class="plan-json">${JSON.stringify(st.explain, null, 2)}</pre></details>` : null}
  </form>`;
}

function Composer({ datasets }) {
  const [c, setC] = useState({ dataset: '', where: '', select: '', groupby: '', agg: '', sort: '', limit: '100' });
  const [mode, setMode] = useState('builder');
  const [st, setSt] = useState({ busy: false, problem: null });
  useEffect(() => { if (!c.dataset && datasets.length) setC((x) => ({ ...x, dataset: datasets[0].name })); }, [datasets]);
  const plan = useMemo(() => buildPlan(c), [c]);
  const cols = (datasets.find((d) => d.name === c.dataset) || { schema: [] }).schema || [];
  const field = (key, label, hint) => html`<label>${label} <input id=${`c-${key}`} value=${c[key]} placeholder=${hint} spellcheck="false"
    onInput=${(e) => setC({ ...c, [key]: e.currentTarget.value })} /></label>`;
  const run = async (e) => {
    e.preventDefault();
    setSt({ busy: true, problem: null });
    const r = await api('POST', '/v1/queries', { json: { plan } });
    setSt({ busy: false, problem: r.ok ? null : r.problem });
    if (r.ok) navigate('queries', r.data.id);
  };
  const tab = (m, label) => html`<button type="button" role="tab" id=${`c-mode-${m}`} aria-selected=${mode === m ? 'true' : 'false'}
    class=${mode === m ? 'tab active' : 'tab'} onClick=${() => setMode(m)}>${label}</button>`;
  return html`<div id="composer" class="card">
    <h2>Compose a query</h2>
    <div role="tablist" class="tabs" aria-label="composer mode">${tab('builder', 'Plan builder')}${tab('sql', 'SQL')}</div>
    ${mode === 'sql' ? html`<${SqlComposer} initial=${buildSql(c)} />` : html`<form id="plan-composer" onSubmit=${run}>
    <label>Dataset <select id="c-dataset" value=${c.dataset} onChange=${(e) => setC({ ...c, dataset: e.currentTarget.value })}>
      ${datasets.map((d) => html`<option value=${d.name}>${d.name}</option>`)}</select></label>
    ${cols.length ? html`<p class="muted small">columns: ${cols.map((x) => x.name).join(', ')}</p>` : null}
    ${field('where', 'Where', 'fare > 10 and passengers >= 1')}
    ${field('select', 'Select', 'vendor, fare (ignored with groupby)')}
    ${field('groupby', 'Group by', 'vendor')}
    ${field('agg', 'Aggregates', 'count(*) as trips, sum(fare) as total')}
    ${field('sort', 'Sort', 'total desc, vendor')}
    ${field('limit', 'Limit', '100')}
    <details open><summary>Plan JSON</summary><pre id="c-plan" class="plan-json">${JSON.stringify(plan, null, 2)}</pre></details>
    <button type="submit" id="c-run" disabled=${st.busy || !c.dataset}>Run</button>
    <${Problem} problem=${st.problem} context="POST /v1/queries" />
  </form>`}
  </div>`;
}

export function DatasetsView() {
  const res = useResource('/v1/datasets');
  const [del, setDel] = useState(null);
  const datasets = useMemo(() => ((res.data && res.data.datasets) || []).slice().sort((a, b) => a.name.localeCompare(b.name)), [res.data]);
  const onDelete = async (name) => {
    if (!confirm(`Delete the dataset ${name}?`)) return;
    const r = await api('DELETE', `/v1/datasets/${enc(name)}`, { admin: true });
    setDel(r.ok ? null : r.problem);
    res.reload();
  };
  return html`<section class="view" id="view-datasets" aria-labelledby="h-datasets">
    <h1 id="h-datasets">Datasets</h1>
    ${res.problem ? html`<${Problem} problem=${res.problem} context="GET /v1/datasets" />` : null}
    <${Problem} problem=${del} context="delete" />
    <div class="datasets-grid">
      <div>
        ${!res.data && !res.problem ? html`<${Loading} what="datasets" />` : null}
        ${res.data && !datasets.length ? html`<${Empty}>No datasets yet: upload a CSV or NDJSON file.</${Empty}>` : null}
        <ul class="datasets" id="datasets-list">${datasets.map((d) => html`<${DatasetRow} key=${d.name} d=${d} onDelete=${onDelete} />`)}</ul>
      </div>
      <div>
        <${Upload} names=${datasets.map((d) => d.name)} onDone=${res.reload} />
        ${datasets.length ? html`<${Composer} datasets=${datasets} />` : null}
      </div>
    </div>
  </section>`;
}
