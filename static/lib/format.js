// format: numbers, bytes, durations and times as people read them. Times are shown relative and
// local ("3 s ago"), with the exact UTC time in the title attribute.
const numberFmt = new Intl.NumberFormat(undefined, { maximumFractionDigits: 6 });
const intFmt = new Intl.NumberFormat(undefined, { maximumFractionDigits: 0 });

export function fmtNumber(v) {
  if (typeof v !== 'number' || !Number.isFinite(v)) return v === null || v === undefined ? '—' : String(v);
  return Number.isInteger(v) ? intFmt.format(v) : numberFmt.format(v);
}

export const BYTE_UNITS = [['B', 1], ['KiB', 1024], ['MiB', 1024 ** 2], ['GiB', 1024 ** 3], ['TiB', 1024 ** 4]];

export function fmtBytes(n) {
  if (typeof n !== 'number' || !Number.isFinite(n)) return n === null || n === undefined ? '—' : String(n);
  let u = 0;
  while (u + 1 < BYTE_UNITS.length && Math.abs(n) >= BYTE_UNITS[u + 1][1]) u++;
  const v = n / BYTE_UNITS[u][1];
  return u === 0 ? `${intFmt.format(n)} B` : `${numberFmt.format(Math.round(v * 10) / 10)} ${BYTE_UNITS[u][0]}`;
}

// The largest unit that holds n exactly (1048576 -> MiB), for a byte field's editor.
export function exactUnit(n) {
  for (let u = BYTE_UNITS.length - 1; u > 0; u--) {
    if (n !== 0 && n % BYTE_UNITS[u][1] === 0) return BYTE_UNITS[u];
  }
  return BYTE_UNITS[0];
}

export function fmtMs(ms) {
  if (typeof ms !== 'number') return '—';
  if (ms < 1000) return `${Math.round(ms)} ms`;
  if (ms < 60000) return `${(ms / 1000).toFixed(1)} s`;
  const m = Math.floor(ms / 60000);
  return `${m} min ${Math.round((ms % 60000) / 1000)} s`;
}

// "2 s ago" / "in 3 min" relative to now; "—" for no time.
export function fmtAgo(iso, now = Date.now()) {
  if (!iso) return '—';
  const t = Date.parse(iso);
  if (Number.isNaN(t)) return String(iso);
  const s = Math.round((now - t) / 1000);
  const a = Math.abs(s);
  let text;
  if (a < 60) text = `${a} s`;
  else if (a < 3600) text = `${Math.floor(a / 60)} min`;
  else if (a < 86400) text = `${Math.floor(a / 3600)} h`;
  else return new Date(t).toLocaleString();
  return s >= 0 ? `${text} ago` : `in ${text}`;
}

export function fmtUtc(iso) {
  if (!iso) return '';
  const t = Date.parse(iso);
  return Number.isNaN(t) ? String(iso) : `${new Date(t).toISOString().replace('T', ' ').replace('Z', '')} UTC`;
}

// "sha256:4ba2da3e2b2f" for a config ID: the full one goes into a title.
export function shortId(id) {
  if (typeof id !== 'string') return '—';
  const m = /^sha256:([0-9a-f]{12})[0-9a-f]*$/.exec(id);
  return m ? `sha256:${m[1]}` : id;
}

export function fmtUptime(s) {
  if (typeof s !== 'number') return '—';
  const t = Math.floor(s);
  const d = Math.floor(t / 86400), h = Math.floor((t % 86400) / 3600), m = Math.floor((t % 3600) / 60);
  return (d ? `${d}d ` : '') + (d || h ? `${h}h ` : '') + `${m}m ${t % 60}s`;
}

export function fmtValue(v) {
  if (v === null || v === undefined) return 'null';
  if (typeof v === 'object') return JSON.stringify(v);
  return String(v);
}

// frozen_by is a request ID or {request_id, method, path}.
export function fmtFrozenBy(fb) {
  if (!fb) return '—';
  if (typeof fb === 'string') return `request ${fb}`;
  return `${fb.method || ''} ${fb.path || ''} (request ${fb.request_id || '?'})`.trim();
}
