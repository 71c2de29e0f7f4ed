// Config: the pending config as a form built from GET /v1/config/schema (byte fields with
// units, changes from the defaults highlighted, a 422 shown at its field), read-only while the
// config is frozen (saying by what and when, with Reset runner at hand), and the history of
// config IDs (GET /v1/runners) with a diff view (GET /v1/configs/diff).
import { useEffect, useRef, useState } from 'preact/hooks';
import { html } from '../lib/html.js';
import { api, enc, problemKind, qs } from '../lib/api.js';
import { href } from '../lib/router.js';
import { useEvent } from '../lib/sse.js';
import { Badge, ConfigId, Empty, Loading, Missing, Problem, Time, useNow, useResource } from '../lib/ui.js';
import { BYTE_UNITS, exactUnit, fmtBytes, fmtFrozenBy, fmtUtc, fmtValue } from '../lib/format.js';

const isBytes = (f) => f.type === 'integer' && /bytes/.test(f.name);
const same = (a, b) => JSON.stringify(a) === JSON.stringify(b);

function draftOf(f, v) {
  if (isBytes(f)) {
    const [unit, mul] = exactUnit(v);
    return { text: String(v / mul), unit };
  }
  if (f.type === 'array') return { text: (v || []).join(', ') };
  return { text: String(v) };
}

// The value a draft stands for: {ok, value} or {ok: false, message}.
function parseDraft(f, d) {
  const t = d.text.trim();
  if (f.type === 'boolean') return t === 'true' || t === 'false' ? { ok: true, value: t === 'true' } : { ok: false, message: 'true or false' };
  if (f.type === 'array') {
    if (t.startsWith('[')) {
      try { const v = JSON.parse(t); if (Array.isArray(v)) return { ok: true, value: v }; } catch { /* below */ }
      return { ok: false, message: 'a JSON array of strings, or values separated by commas' };
    }
    return { ok: true, value: t ? t.split(',').map((s) => s.trim()) : [] };
  }
  if (!/^\d+(\.\d+)?$/.test(t)) return { ok: false, message: 'a number' };
  const mul = isBytes(f) ? BYTE_UNITS.find(([u]) => u === d.unit)[1] : 1;
  const v = Number(t) * mul;
  return Number.isInteger(v) ? { ok: true, value: v } : { ok: false, message: 'a whole number of bytes' };
}

function FieldEditor({ f, d, set, disabled }) {
  const id = `cfg-${f.name}`;
  if (f.type === 'boolean') {
    return html`<select id=${id} value=${d.text} disabled=${disabled} onChange=${(e) => set({ ...d, text: e.currentTarget.value })}>
      <option value="true">true</option><option value="false">false</option></select>`;
  }
  const input = html`<input id=${id} value=${d.text} disabled=${disabled} inputmode=${f.type === 'integer' ? 'decimal' : undefined}
    aria-describedby=${`${id}-doc ${id}-err`} onInput=${(e) => set({ ...d, text: e.currentTarget.value })} />`;
  if (!isBytes(f)) return input;
  return html`<span class="with-unit">${input}<select id=${`${id}-unit`} aria-label=${`${f.name} unit`} value=${d.unit} disabled=${disabled}
    onChange=${(e) => set({ ...d, unit: e.currentTarget.value })}>${BYTE_UNITS.map(([u]) => html`<option value=${u}>${u}</option>`)}</select></span>`;
}

function FieldRow({ f, value, d, set, error, disabled }) {
  const changed = !same(value, f.default);
  const fmt = (v) => (isBytes(f) ? `${fmtBytes(v)} (${v})` : fmtValue(v));
  const range = f.minimum !== undefined ? `range ${isBytes(f) ? fmtBytes(f.minimum) : f.minimum} – ${isBytes(f) ? fmtBytes(f.maximum) : f.maximum}` : '';
  return html`<div class=${`field${changed ? ' changed' : ''}${error ? ' has-error' : ''}`} id=${`cfg-${f.name}-row`}>
    <label for=${`cfg-${f.name}`}><code>${f.name}</code> <span class="muted small">${f.scope}</span></label>
    <${FieldEditor} f=${f} d=${d} set=${set} disabled=${disabled} />
    <p class="small" id=${`cfg-${f.name}-doc`}>${f.doc}${range ? html` <span class="muted">(${range})</span>` : null}</p>
    <p class="small">current <strong id=${`cfg-${f.name}-current`}>${fmt(value)}</strong>
      ${changed ? html` <span class="changed-note">changed from the default ${fmt(f.default)}</span>` : html` <span class="muted">(default)</span>`}</p>
    <p class="field-error" id=${`cfg-${f.name}-err`} role=${error ? 'alert' : undefined}>${error || ''}</p>
  </div>`;
}

function ResetRunner({ onDone }) {
  const [force, setForce] = useState(false);
  const [st, setSt] = useState({ busy: false, text: '', problem: null });
  const reset = async () => {
    if (!confirm(`Reset the runner${force ? ', cancelling running queries' : ''}? The config unlocks; its queries stay in the history.`)) return;
    setSt({ busy: true, text: 'Resetting…', problem: null });
    const r = await api('DELETE', `/v1/runner${force ? '?force=true' : ''}`, { admin: true });
    setSt({ busy: false, text: r.ok ? `Runner reset${r.data && r.data.config_id ? `: released ${r.data.config_id}` : ''}` : '', problem: r.ok ? null : r.problem });
    onDone();
  };
  return html`<div class="reset">
    <label class="check"><input type="checkbox" id="runner-force" checked=${force} onChange=${(e) => setForce(e.currentTarget.checked)} /> cancel running queries</label>
    <button type="button" id="runner-reset" class="danger" disabled=${st.busy} onClick=${reset}>Reset runner</button>
    <span id="runner-status" aria-live="polite">${st.text}</span>
    <${Problem} problem=${st.problem} context="DELETE /v1/runner" />
  </div>`;
}

// The lock state and Reset runner, one element either way, so the reset's status outlives the
// unlock it causes.
function LockState({ config, onReset }) {
  return html`<div class=${config.locked ? 'locked-banner' : 'unlocked-note'} id=${config.locked ? 'config-locked' : 'config-unlocked'} role="status">
    ${config.locked ? html`<p><strong>Read-only: the config is frozen into the runner.</strong> It was frozen as <${ConfigId} id=${config.config_id} />${' '}
      at <span title=${fmtUtc(config.frozen_at)} data-field="frozen_at">${config.frozen_at}</span> (<${Time} iso=${config.frozen_at} />),
      by ${fmtFrozenBy(config.frozen_by)}.
      Changes get 409 until the runner is reset.</p>`
      : html`<p>The config is unlocked: saved changes apply to the next runner.</p>`}
    <${ResetRunner} onDone=${onReset} />
  </div>`;
}

function ConfigForm({ schema, config, reload, dirtyRef }) {
  // drafts from the first render on, so the form (and Save) never shows a frame later than the
  // lock banner beside it
  const [drafts, setDrafts] = useState(() => Object.fromEntries(schema.map((f) => [f.name, draftOf(f, config.values[f.name])])));
  const [errors, setErrors] = useState({});
  const [st, setSt] = useState({ text: '', problem: null });
  const shown = useRef(null); // the config the drafts were made from
  // A reload keeps the fields being edited (unless the config is now locked) and refreshes the rest.
  useEffect(() => {
    const prev = shown.current;
    shown.current = config;
    setDrafts((old) => Object.fromEntries(schema.map((f) => {
      const fresh = draftOf(f, config.values[f.name]);
      const editing = prev && old[f.name] && !same(old[f.name], draftOf(f, prev.values[f.name]));
      return [f.name, editing && !config.locked ? old[f.name] : fresh];
    })));
  }, [config]);
  dirtyRef.current = schema.some((f) => drafts[f.name] && !same(drafts[f.name], draftOf(f, config.values[f.name])));
  if (!Object.keys(drafts).length) return null;
  const save = async (e) => {
    e.preventDefault();
    const patch = {}, bad = {};
    for (const f of schema) {
      const p = parseDraft(f, drafts[f.name]);
      if (!p.ok) bad[f.name] = `must be ${p.message}`;
      else if (!same(p.value, config.values[f.name])) patch[f.name] = p.value;
    }
    setErrors(bad);
    if (Object.keys(bad).length) { setSt({ text: 'Fix the marked fields first; nothing was sent.', problem: null }); return; }
    if (!Object.keys(patch).length) { setSt({ text: 'Nothing changed; nothing to save.', problem: null }); return; }
    setSt({ text: 'Saving…', problem: null });
    const r = await api('POST', '/v1/config', { json: patch, admin: true });
    if (r.ok) {
      setSt({ text: `Saved: ${Object.entries(patch).map(([k, v]) => `${k} = ${fmtValue(v)}`).join(', ')}`, problem: null });
      reload();
      return;
    }
    setErrors(Object.fromEntries((r.problem.errors || []).map((x) => [x.field, x.message])));
    setSt({ text: `Not saved (${r.status || 'no answer'}).`, problem: r.problem });
    if (problemKind(r.problem) === 'config-locked') reload();
  };
  return html`<form id="config-form" onSubmit=${save} novalidate>
    <fieldset disabled=${config.locked} class="fields">
      <legend class="sr-only">Config fields</legend>
      ${schema.map((f) => html`<${FieldRow} key=${f.name} f=${f} value=${config.values[f.name]} d=${drafts[f.name]} error=${errors[f.name]}
        disabled=${config.locked} set=${(d) => setDrafts((x) => ({ ...x, [f.name]: d }))} />`)}
    </fieldset>
    <div class="actions"><button type="submit" id="config-save" disabled=${config.locked}>Save</button>
      <span id="config-status" aria-live="polite">${st.text}</span></div>
    <div id="config-problem"><${Problem} problem=${st.problem} context="POST /v1/config" /></div>
  </form>`;
}

function Diff({ ids }) {
  const [from, setFrom] = useState('defaults');
  const [to, setTo] = useState(ids[0] || 'pending');
  const [res, setRes] = useState(null);
  const opts = ['defaults', 'pending', ...ids];
  const run = async (e) => { e.preventDefault(); setRes(await api('GET', `/v1/configs/diff${qs({ from, to })}`)); };
  const label = (o) => (o.startsWith('sha256:') ? o.slice(0, 19) : o);
  return html`<form class="diff" id="diff-form" onSubmit=${run}>
    <label>From <select id="diff-from" value=${from} onChange=${(e) => setFrom(e.currentTarget.value)}>${opts.map((o) => html`<option value=${o}>${label(o)}</option>`)}</select></label>
    <label>To <select id="diff-to" value=${to} onChange=${(e) => setTo(e.currentTarget.value)}>${opts.map((o) => html`<option value=${o}>${label(o)}</option>`)}</select></label>
    <button type="submit" id="diff-run">Compare</button>
  </form>
  <div id="diff-result">${res && !res.ok ? html`<${Problem} problem=${res.problem} context="GET /v1/configs/diff" />` : null}
    ${res && res.ok && res.data.equal ? html`<p class="empty">The two configs are equal.</p>` : null}
    ${res && res.ok && !res.data.equal ? html`<div class="table-wrap"><table id="diff-table"><thead><tr><th>Field</th><th>From</th><th>To</th></tr></thead>
      <tbody>${res.data.changes.map((c) => html`<tr><td><code>${c.field}</code></td><td class="mono del">${fmtValue(c.from)}</td><td class="mono ins">${fmtValue(c.to)}</td></tr>`)}</tbody></table></div>` : null}</div>`;
}

function History({ stamp }) {
  useNow(5000);
  const runners = useResource('/v1/runners?limit=50');
  useEvent('runner', runners.reload);
  useEffect(() => { runners.reload(); }, [stamp]); // a freeze or reset seen by this page
  if (runners.missing) return html`<${Missing} path="/v1/runners" what="The history of runners" />`;
  if (runners.problem) return html`<${Problem} problem=${runners.problem} context="GET /v1/runners" />`;
  if (!runners.data) return html`<${Loading} what="the history" />`;
  const list = runners.data.runners || [];
  const ids = [...new Set(list.map((r) => r.config_id).filter(Boolean))];
  return html`${list.length ? html`<div class="table-wrap"><table id="runners-table">
    <thead><tr><th>Runner</th><th>Kind</th><th>State</th><th>Config ID</th><th>Frozen</th><th>Reset</th><th class="num">Queries</th></tr></thead>
    <tbody>${list.map((r) => html`<tr data-runner-id=${r.id}>
      <td class="mono">${r.id}</td><td>${r.kind}</td><td><${Badge} state=${r.state} /></td>
      <td><a href=${href('queries', null, { config_id: r.config_id })} title="its queries"><${ConfigId} id=${r.config_id} /></a>
        ${r.config_id ? html` <a class="small" href=${`/v1/history/configs/${enc(r.config_id)}`} target="_blank" rel="noopener">bytes</a>` : null}</td>
      <td><${Time} iso=${r.frozen_at} /></td><td><${Time} iso=${r.reset_at} /></td><td class="num">${r.queries}</td></tr>`)}</tbody>
  </table></div>` : html`<${Empty}>No runner yet: the first dataframe request creates one.</${Empty}>`}
  <h3>Diff</h3><${Diff} ids=${ids} />`;
}

export function ConfigView() {
  const schema = useResource('/v1/config/schema');
  const config = useResource('/v1/config');
  const dirty = useRef(false);
  const [frozenMeanwhile, setFrozenMeanwhile] = useState(false);
  // Unsaved edits are kept when a runner appears meanwhile: Save then shows the 409 and locks.
  useEvent('runner', (e) => {
    if (dirty.current && e.state === 'active' && config.data && !config.data.locked) setFrozenMeanwhile(true);
    else config.reload();
  });
  const reload = () => { setFrozenMeanwhile(false); config.reload(); };
  const c = config.data;
  return html`<section class="view" id="view-config" aria-labelledby="h-config">
    <h1 id="h-config">Config</h1>
    ${schema.problem ? html`<${Problem} problem=${schema.problem} context="GET /v1/config/schema" />` : null}
    ${config.problem ? html`<${Problem} problem=${config.problem} context="GET /v1/config" />` : null}
    ${!schema.data || !c ? html`<${Loading} what="the config" />` : html`
      <${LockState} config=${c} onReset=${reload} />
      ${frozenMeanwhile ? html`<p class="warning" id="config-frozen-meanwhile" role="alert">A runner was created meanwhile and froze the config: saving these edits will be refused (409).</p>` : null}
      <${ConfigForm} schema=${schema.data} config=${c} reload=${reload} dirtyRef=${dirty} />`}
    <h2>History of config IDs</h2>
    <${History} stamp=${c ? `${c.locked}:${c.config_id}` : ''} />
  </section>`;
}
