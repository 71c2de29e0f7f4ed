// api: every HTTP call of the dashboard. api() turns any failure (a problem+json body, another
// body, no answer at all) into a problem object the views render, so nothing fails silently.
// The admin token (kept in this tab's sessionStorage) is sent on protected calls only.
const TOKEN_KEY = 'framed.adminToken';
export const PROBLEM_BASE = 'https://framed.dev/problems/';

export function adminToken() {
  try { return sessionStorage.getItem(TOKEN_KEY) || ''; } catch { return ''; }
}

export function setAdminToken(token) {
  try {
    if (token) sessionStorage.setItem(TOKEN_KEY, token);
    else sessionStorage.removeItem(TOKEN_KEY);
  } catch { /* private mode: the token lives only as long as the page */ }
}

function authHeaders(admin) {
  const token = adminToken();
  return admin && token ? { Authorization: `Bearer ${token}` } : {};
}

function unreachable(method, path, message) {
  return {
    title: 'Server unreachable', status: 0, type: 'about:blank#network', instance: path,
    detail: `${method} ${path} got no answer: ${message}. Is framed running?`,
  };
}

// A problem for a failed reply whose body is not problem+json.
function foreignProblem(method, path, status, statusText, text) {
  return {
    title: `HTTP ${status} ${statusText || ''}`.trim(), status, type: 'about:blank', instance: path,
    detail: `${method} ${path} failed and the body was not a problem+json document` +
      (text ? `: ${text.slice(0, 300)}` : ' (empty body).'),
  };
}

function parseReply(method, path, status, statusText, type, text) {
  let data;
  if (/json/.test(type) && !/ndjson/.test(type) && text) {
    try { data = JSON.parse(text); } catch { data = undefined; }
  }
  const ok = status >= 200 && status < 300;
  const out = { ok, status, data, text };
  if (!ok) {
    out.problem = data && typeof data === 'object' && (data.type || data.title)
      ? data : foreignProblem(method, path, status, statusText, text);
    if (!out.problem.instance) out.problem.instance = path;
  }
  return out;
}

// One call. opts: json (sent as JSON), body + contentType (raw), accept, admin (send the admin
// token), signal. Resolves to {ok, status, data, text, headers, problem}; never rejects.
export async function api(method, path, opts = {}) {
  const headers = { Accept: opts.accept || 'application/json', ...authHeaders(opts.admin) };
  let body;
  if (opts.json !== undefined) {
    headers['Content-Type'] = 'application/json';
    body = JSON.stringify(opts.json);
  } else if (opts.body !== undefined) {
    headers['Content-Type'] = opts.contentType;
    body = opts.body;
  }
  let res;
  try {
    res = await fetch(path, { method, headers, body, cache: 'no-store', signal: opts.signal });
  } catch (e) {
    return { ok: false, status: 0, problem: unreachable(method, path, e.message) };
  }
  let text = '';
  try { text = await res.text(); } catch { text = ''; }
  const out = parseReply(method, path, res.status, res.statusText, res.headers.get('Content-Type') || '', text);
  out.headers = res.headers;
  return out;
}

// PUT of a file with upload progress (fetch has none): onProgress(sent, total) as bytes leave.
export function upload(path, file, contentType, onProgress) {
  return new Promise((resolve) => {
    const xhr = new XMLHttpRequest();
    xhr.open('PUT', path);
    xhr.setRequestHeader('Content-Type', contentType);
    xhr.setRequestHeader('Accept', 'application/json');
    for (const [k, v] of Object.entries(authHeaders(true))) xhr.setRequestHeader(k, v);
    xhr.upload.onprogress = (e) => onProgress(e.loaded, e.lengthComputable ? e.total : file.size);
    xhr.onload = () => resolve(parseReply('PUT', path, xhr.status, xhr.statusText,
      xhr.getResponseHeader('Content-Type') || '', xhr.responseText));
    xhr.onerror = () => resolve({ ok: false, status: 0, problem: unreachable('PUT', path, 'the upload failed') });
    xhr.send(file);
  });
}

// The slug of a problem's type ("config-locked"), or "".
export function problemKind(problem) {
  const t = problem && problem.type;
  return typeof t === 'string' && t.startsWith(PROBLEM_BASE) ? t.slice(PROBLEM_BASE.length) : '';
}

// Query string from an object, leaving out empty values.
export function qs(params) {
  const s = new URLSearchParams();
  for (const [k, v] of Object.entries(params)) if (v !== undefined && v !== null && v !== '') s.set(k, String(v));
  const t = s.toString();
  return t ? `?${t}` : '';
}

export const enc = encodeURIComponent;
