// Query: one query. Its facts and Cancel (DELETE at once), the error as kind, message and
// file:line:column, the plan as a stage graph with live progress (GET /v1/queries/{id}/stages,
// refreshed on its query events or by polling), the planner decisions, a task timeline per
// worker, and the result as a sortable, formatted page with CSV/NDJSON/Arrow downloads.
import { useEffect, useRef, useState } from 'preact/hooks';
import { html } from '../lib/html.js';
import { api, enc } from '../lib/api.js';
import { href } from '../lib/router.js';
import { useEvent, useInterval, useLive } from '../lib/sse.js';
import { Badge, ConfigId, Loading, Problem, Progress, Time, useNow } from '../lib/ui.js';
import { fmtMs, fmtNumber, fmtValue } from '../lib/format.js';
import { StageGraph, Timeline, stagesFromExplain } from './stages.js';

const POLL_MS = 500;
const ACTIVE = new Set(['queued', 'running']);

function ErrorBox({ error }) {
  if (!error) return null;
  const loc = error.file ? `${error.file}${error.line ? `:${error.line}` : ''}${error.column ? `:${error.column}` : ''}` : null;
  return html`<div class="problem query-error" role="alert" id="q-error">
    <p><code id="q-error-kind" class="problem-kind">${error.kind}</code> <span id="q-error-message">${error.message}</span></p>
    ${loc ? html`<p>at <code id="q-error-location">${loc}</code>${error.field ? html` (column <code>${error.field}</code>)` : null}</p>` : null}
  </div>`;
}

function Facts({ q, onCancel, cancelling }) {
  const active = ACTIVE.has(q.state);
  const p = q.progress || { tasks_total: q.tasks_total, tasks_done: q.tasks_done };
  return html`<div class="query-head">
    <dl class="facts">
      <dt>State</dt><dd><${Badge} state=${q.state} id="q-state" /></dd>
      <dt>Progress</dt><dd><${Progress} id="q-progress" done=${p.tasks_done} total=${p.tasks_total} state=${q.state} /></dd>
      <dt>Elapsed</dt><dd id="q-elapsed">${fmtMs(q.elapsed_ms)}</dd>
      <dt>Rows</dt><dd id="q-rows" class="num">${fmtNumber(q.rows)}</dd>
      <dt>Config ID</dt><dd id="q-config-id"><${ConfigId} id=${q.config_id} /></dd>
      ${q.runner_id ? html`<dt>Runner</dt><dd><code id="q-runner-id">${q.runner_id}</code></dd>` : null}
      ${q.dataframe ? html`<dt>Dataframe</dt><dd><code id="q-dataframe">${q.dataframe}</code></dd>` : null}
      ${q.created_at ? html`<dt>Created</dt><dd><${Time} iso=${q.created_at} /></dd>` : null}
      ${q.retries ? html`<dt>Retries</dt><dd id="q-retries">${q.retries}</dd>` : null}
      ${q.archived ? html`<dt>History</dt><dd><span class="tag" id="q-archived">archived</span> its runner is gone</dd>` : null}
    </dl>
    <div class="actions">
      <button type="button" id="q-cancel" class="danger" disabled=${!active || cancelling} onClick=${onCancel}>
        ${cancelling ? 'Cancelling…' : 'Cancel'}</button>
    </div>
  </div>`;
}

function Decisions({ stages, explain }) {
  const list = [];
  for (const s of stages || []) for (const d of s.decisions || []) list.push({ ...d, stage: s.stage });
  if (!list.length && explain) {
    for (const d of explain.decisions || []) list.push({ decision: d.decision, field: d.config_field, value: d.config_value });
  }
  if (!list.length) return null;
  return html`<div class="table-wrap"><table id="decisions-table">
    <thead><tr><th>Stage</th><th>Decision</th><th>Config field</th><th>Value</th></tr></thead>
    <tbody>${list.map((d) => html`<tr><td>${d.stage ?? '—'}</td><td>${d.decision}</td>
      <td>${d.field ? html`<code>${d.field}</code>` : '—'}</td><td class="mono">${d.field ? fmtValue(d.value) : ''}</td></tr>`)}</tbody>
  </table></div>`;
}

const NUMERIC = /^(u?int|float|double|decimal)/;

function ResultGrid({ id }) {
  const [page, setPage] = useState({ offset: 0, limit: 25 });
  const [res, setRes] = useState(null);
  const [sort, setSort] = useState(null);
  useEffect(() => {
    api('GET', `/v1/queries/${enc(id)}/result?offset=${page.offset}&limit=${page.limit}`).then(setRes);
  }, [id, page.offset]);
  if (!res) return html`<${Loading} what="the result" />`;
  if (!res.ok) return html`<${Problem} problem=${res.problem} context="the result" id="result-problem" />`;
  const { columns = [], rows = [], total_rows: total = 0 } = res.data;
  let shown = rows;
  if (sort) {
    const k = sort.col, dir = sort.dir;
    shown = rows.slice().sort((a, b) => {
      const x = a[k], y = b[k];
      if (x === y) return 0;
      if (x === null) return 1;
      if (y === null) return -1;
      return (x < y ? -1 : 1) * dir;
    });
  }
  const toggle = (i) => setSort((s) => (s && s.col === i ? (s.dir === 1 ? { col: i, dir: -1 } : null) : { col: i, dir: 1 }));
  const last = Math.min(page.offset + rows.length, total);
  return html`<div class="result">
    <div class="table-wrap"><table id="result-table">
      <thead><tr>${columns.map((c, i) => html`<th class=${NUMERIC.test(c.type) ? 'num' : ''} aria-sort=${sort && sort.col === i ? (sort.dir === 1 ? 'ascending' : 'descending') : 'none'}>
        <button type="button" class="sort" onClick=${() => toggle(i)} data-col=${c.name}>${c.name}
          <span class="muted small">${c.type}</span>${sort && sort.col === i ? (sort.dir === 1 ? ' ▲' : ' ▼') : ''}</button></th>`)}</tr></thead>
      <tbody>${shown.map((r) => html`<tr>${r.map((v, i) => html`<td class=${NUMERIC.test(columns[i] && columns[i].type) ? 'num' : ''}>
        ${v === null ? html`<span class="muted">null</span>` : typeof v === 'number' ? fmtNumber(v) : fmtValue(v)}</td>`)}</tr>`)}</tbody>
    </table></div>
    <div class="pager">
      <button type="button" id="page-prev" disabled=${page.offset === 0} onClick=${() => setPage((p) => ({ ...p, offset: Math.max(0, p.offset - p.limit) }))}>Previous</button>
      <span id="page-info">${total ? `rows ${page.offset + 1}–${last} of ${fmtNumber(total)}` : 'no rows'}</span>
      <button type="button" id="page-next" disabled=${last >= total} onClick=${() => setPage((p) => ({ ...p, offset: p.offset + p.limit }))}>Next</button>
    </div>
    <p class="downloads">Download:
      ${['csv', 'ndjson', 'arrow', 'parquet'].map((f) => html` <a id=${`q-download-${f}`} class="button-link" download=""
        href=${`/v1/queries/${enc(id)}/result?format=${f}&download=1`}>${f.toUpperCase()}</a>`)}</p>
  </div>`;
}

// The query and its stages, kept fresh by events or polling while the query is active.
function useQuery(id) {
  const live = useLive();
  const [q, setQ] = useState({ data: null, problem: null });
  const [stages, setStages] = useState({ data: null, missing: false, problem: null });
  const [explain, setExplain] = useState(null);
  const busy = useRef(false);
  // A query that ended never runs again: an answer that says it is active where the page
  // shows it ended is older than the page (a poll sent before a cancel, answered after it).
  // It is not shown (the check is in the state update, so it also holds for an end not yet
  // rendered), and when the rendered page already shows the end, its stages are dropped too and
  // asked again, at most 3 times in a row.
  const shown = useRef(null);
  shown.current = q.data ? q.data.state : null;
  const retries = useRef(0);
  const outdated = (state, answer) => !!state && !ACTIVE.has(state) && ACTIVE.has(answer.state);
  const load = async () => {
    if (busy.current) return;
    busy.current = true;
    const [a, b] = await Promise.all([api('GET', `/v1/queries/${enc(id)}`), api('GET', `/v1/queries/${enc(id)}/stages`)]);
    busy.current = false;
    if (a.ok && outdated(shown.current, a.data)) {
      if (retries.current++ < 3) setTimeout(load, 250);
      return;
    }
    retries.current = 0;
    setQ(a.ok ? (s) => (s.data && outdated(s.data.state, a.data) ? s : { data: a.data, problem: null }) : (s) => ({ ...s, problem: a.problem }));
    setStages(b.ok ? { data: b.data, missing: false, problem: null } : { data: null, missing: b.status === 404, problem: b.status === 404 ? null : b.problem });
  };
  useEffect(() => { load(); }, [id]);
  const dfId = q.data && q.data.dataframe;
  useEffect(() => {
    if (stages.missing && dfId && !explain) api('GET', `/v1/dataframes/${enc(dfId)}/explain`).then((r) => r.ok && setExplain(r.data));
  }, [stages.missing, dfId]);
  const active = q.data ? ACTIVE.has(q.data.state) : !q.problem; // a 404 stops the polling
  useInterval(load, POLL_MS, active && !live);
  useInterval(load, 2000, active && live); // stages have no event of their own
  useEvent('query', (ev) => {
    if (ev.id !== id) return;
    setQ((s) => (s.data ? { ...s, data: { ...s.data, state: ev.state, rows: ev.rows ?? s.data.rows, elapsed_ms: ev.elapsed_ms ?? s.data.elapsed_ms,
      progress: { tasks_total: ev.tasks_total, tasks_done: ev.tasks_done } } } : s));
    load();
  });
  return { q, setQ, stages, explain, reload: load };
}

export function QueryView({ id }) {
  const now = useNow(1000);
  const { q, setQ, stages, explain, reload } = useQuery(id);
  const [cancel, setCancel] = useState({ busy: false, problem: null });
  const onCancel = async () => {
    setCancel({ busy: true, problem: null });
    const r = await api('DELETE', `/v1/queries/${enc(id)}`);
    setCancel({ busy: false, problem: r.ok ? null : r.problem });
    if (r.ok && r.data) setQ((s) => ({ ...s, data: { ...s.data, ...r.data } }));
    reload();
  };
  const data = q.data;
  const stageList = stages.data ? stages.data.stages : stages.missing ? stagesFromExplain(explain) : null;
  return html`<section class="view" id="view-query" aria-labelledby="h-query">
    <p class="crumbs"><a href=${href('queries')}>Queries</a> /</p>
    <h1 id="h-query" class="mono">${id}</h1>
    ${q.problem ? html`<${Problem} problem=${q.problem} context=${`GET /v1/queries/${id}`} id="q-problem" />` : null}
    ${cancel.problem ? html`<${Problem} problem=${cancel.problem} context="Cancel" />` : null}
    ${!data && !q.problem ? html`<${Loading} what="the query" />` : null}
    ${data ? html`
      <${Facts} q=${data} onCancel=${onCancel} cancelling=${cancel.busy} />
      <${ErrorBox} error=${data.error} />
      ${typeof data.sql === 'string' ? html`<details open><summary>SQL</summary><pre id="q-sql" class="plan-json">${data.sql}</pre>
        ${data.plan ? html`<details><summary>Compiled plan</summary><pre id="q-plan" class="plan-json">${JSON.stringify(data.plan, null, 2)}</pre></details>` : null}</details>` : null}
      <h2>Stages</h2>
      ${stages.problem ? html`<${Problem} problem=${stages.problem} context="stages" />` : null}
      ${stages.missing ? html`<p class="muted small" id="stages-missing">Live stages are not served here (GET /v1/queries/${id}/stages answered 404)${explain ? ': the plan from explain, without progress.' : '.'}</p>` : null}
      ${stageList === null && !stages.missing && !stages.problem ? html`<${Loading} what="stages" />` : null}
      ${stageList && stageList.length ? html`<${StageGraph} stages=${stageList} />` : null}
      ${stageList && !stageList.length && !stages.missing ? html`<p class="empty">No stages yet.</p>` : null}
      <h2>Planner decisions</h2>
      <${Decisions} stages=${stageList} explain=${explain} />
      <h2>Tasks</h2>
      <${Timeline} stages=${stageList} now=${now} />
      <h2>Result</h2>
      ${data.state === 'succeeded' ? html`<${ResultGrid} id=${id} />`
        : html`<p class="empty" id="result-empty">${ACTIVE.has(data.state) ? 'The result appears when the query succeeds.' : `No result: the query ${data.state}.`}</p>`}
    ` : null}
  </section>`;
}
