// contract_lib: checks a live response against openapi.yaml and the JSON
// Schemas of api/schemas (Ajv, draft 2020-12, formats on). The operation is
// found by path template and method; the status must be documented for it
// (or "default", or one of the conventions every operation shares, listed in
// EDGE_PROBLEMS); the Content-Type must be one of the documented media
// types; a JSON body is validated against the documented schema, a text
// body against its string schema (const, pattern). lib.mjs
// runs every response of a framed process through checkResponse.
import { readFileSync, readdirSync } from 'node:fs';
import path from 'node:path';
import Ajv2020 from 'ajv/dist/2020.js';
import addFormats from 'ajv-formats';
import YAML from 'yaml';

// Schemas are registered under the URL the served spec gives them, so the
// spec's relative $refs ("api/schemas/x.json#/...") resolve as on a server.
const BASE = 'https://framed.invalid/';
export const MAX_BODY_CHECK_BYTES = 4 * 1024 * 1024;

// What openapi.yaml's "Conventions" say any operation may answer, not
// repeated on each: status and problem slug. `body`: only operations that
// take a request body.
export const EDGE_PROBLEMS = [
  { status: 400, slug: 'invalid-parameter' }, // a repeated parameter or an encoded NUL, any route
  { status: 400, slug: 'bad-request' }, // framing
  { status: 400, slug: 'invalid-json', body: true },
  { status: 401, slug: 'unauthorized' }, // tokens or cluster signatures configured
  { status: 404, slug: 'not-found' }, // a path that matches no route
  { status: 405, slug: 'method-not-allowed' },
  { status: 413, slug: 'payload-too-large', body: true },
  { status: 414, slug: 'uri-too-long' },
  { status: 415, slug: 'unsupported-media-type', body: true },
  { status: 431, slug: 'headers-too-large' },
  { status: 500, slug: 'internal' },
  { status: 501, slug: 'not-implemented' },
  { status: 503, slug: 'unavailable' }, // past --max-connections, or shutting down
];
const PROBLEM_BASE = 'https://framed.dev/problems/';
const METHODS = ['get', 'put', 'post', 'delete', 'patch', 'options', 'head'];

// Ajv's errors, each with where, what, and the member or value it names.
function ajvErrors(errors) {
  return (errors ?? []).slice(0, 12).map((e) => {
    const extra = e.params?.additionalProperty ?? e.params?.missingProperty ?? e.params?.allowedValues ?? e.params?.allowedValue;
    return `${e.instancePath || '/'} ${e.message}${extra !== undefined ? ` (${JSON.stringify(extra)})` : ''}`;
  }).join('; ');
}

const mediaOf = (type) => (type ?? '').split(';')[0].trim().toLowerCase();
const isJsonMedia = (m) => m === 'application/json' || m.endsWith('+json');

// Path parameters marked `x-framed-rest-of-path: true` (the router's
// "{name*}", e.g. the dashboard's files) match the rest of the path,
// slashes included; others one segment.
// Its schema's pattern, if any, must be found in that rest (GET /{file}: the
// router takes only a path whose last segment has an extension).
function restParams(item) {
  const all = [...(item.parameters ?? []), ...METHODS.flatMap((m) => item[m]?.parameters ?? [])];
  return new Map(all.filter((p) => p.in === 'path' && p['x-framed-rest-of-path']).map((p) => [p.name, p.schema?.pattern]));
}

// The path templates of the spec as regular expressions, literal segments
// before templated ones ("/v1/configs/diff" wins over "/v1/configs/{id}"),
// rest-of-path ones last.
export function compilePaths(spec) {
  const out = [];
  for (const [template, item] of Object.entries(spec.paths ?? {})) {
    const rest = restParams(item);
    const segs = template.split('/');
    const re = segs.map((s) => {
      const whole = /^\{([^}]+)\}$/.exec(s);
      if (whole && rest.has(whole[1])) return rest.get(whole[1]) ? `(?=.*(?:${rest.get(whole[1])})).+` : '.+';
      if (whole) return '[^/]+';
      return s.replace(/\{[^}]+\}/g, '\u0000').replace(/[.*+?^${}()|[\]\\]/g, '\\$&').replace(/\u0000/g, '[^/]+');
    }).join('/');
    const params = (template.match(/\{/g) ?? []).length + (rest.size ? 100 : 0);
    out.push({ template, item, re: new RegExp(`^${re}$`), params });
  }
  out.sort((a, b) => a.params - b.params);
  return out;
}

// A deep copy of schema with every $ref made absolute: '#/components/...'
// into the spec's own objects (components.schemas are refs to files),
// 'api/schemas/...' against BASE.
function absolutize(spec, node, seen = new Set()) {
  if (Array.isArray(node)) return node.map((n) => absolutize(spec, n, seen));
  if (!node || typeof node !== 'object') return node;
  const out = {};
  for (const [k, v] of Object.entries(node)) {
    if (k === '$ref' && typeof v === 'string') {
      if (v.startsWith('#/')) {
        if (seen.has(v)) throw new Error(`a $ref cycle through ${v} in openapi.yaml`);
        const target = pointer(spec, v.slice(1));
        Object.assign(out, absolutize(spec, target, new Set([...seen, v])));
      } else {
        out.$ref = new URL(v, BASE).href;
      }
    } else {
      out[k] = absolutize(spec, v, seen);
    }
  }
  return out;
}

function pointer(doc, frag) {
  let node = doc;
  for (const part of frag.split('/').filter(Boolean)) {
    node = node?.[decodeURIComponent(part).replace(/~1/g, '/').replace(/~0/g, '~')];
  }
  if (node === undefined) throw new Error(`openapi.yaml has nothing at #${frag}`);
  return node;
}

// Resolves a response or request object that is a $ref into components.
function deref(spec, obj) {
  let o = obj;
  for (let i = 0; o && o.$ref && i < 8; i++) o = pointer(spec, o.$ref.slice(1));
  return o;
}

// Loads the contract of sourceDir (openapi.yaml and api/schemas/*.json).
export function loadContract(sourceDir) {
  const spec = YAML.parse(readFileSync(path.join(sourceDir, 'openapi.yaml'), 'utf8'));
  const ajv = new Ajv2020({ strict: false, allErrors: true, validateFormats: true });
  addFormats(ajv);
  const dir = path.join(sourceDir, 'api', 'schemas');
  for (const f of readdirSync(dir).filter((n) => n.endsWith('.json')).sort()) {
    const schema = JSON.parse(readFileSync(path.join(dir, f), 'utf8'));
    ajv.addSchema({ ...schema, $id: `${BASE}api/schemas/${f}` });
  }
  return { spec, ajv, paths: compilePaths(spec), validators: new Map() };
}

// The operation of method and URL path: {template, op}, or {template,
// allowed} when paths match but none has the method (as the router, which
// tries every route for the method before answering 405), or null.
export function findOperation(contract, method, urlPath) {
  const m = method.toLowerCase() === 'head' ? 'get' : method.toLowerCase();
  const matching = contract.paths.filter((p) => p.re.test(urlPath));
  const hit = matching.find((p) => p.item[m]);
  if (hit) return { template: hit.template, op: hit.item[m] };
  if (matching.length === 0) return null;
  const allowed = [...new Set(matching.flatMap((p) => METHODS.filter((x) => p.item[x])))];
  return { template: matching[0].template, op: null, allowed };
}

function validatorFor(contract, key, schema) {
  if (!contract.validators.has(key)) {
    contract.validators.set(key, contract.ajv.compile(absolutize(contract.spec, schema)));
  }
  return contract.validators.get(key);
}

const PROBLEM_SCHEMA = { $ref: 'api/schemas/problem.json' };

// Checks a problem body against problem.json and its type against slug.
function checkProblem(contract, res, slug, errs) {
  if (mediaOf(res.contentType) !== 'application/problem+json') {
    errs.push(`Content-Type ${res.contentType || '(none)'} is not application/problem+json`);
    return;
  }
  if (res.body === undefined) return;
  const validate = validatorFor(contract, 'problem', PROBLEM_SCHEMA);
  const body = parseJson(res.body, errs);
  if (body === undefined) return;
  if (!validate(body)) errs.push(`the body breaks problem.json: ${ajvErrors(validate.errors)}`);
  if (slug && body?.type !== PROBLEM_BASE + slug) errs.push(`type ${body?.type}, expected ${PROBLEM_BASE}${slug}`);
}

function parseJson(text, errs) {
  try {
    return JSON.parse(text);
  } catch (e) {
    errs.push(`the body is not JSON (${e.message}): ${text.slice(0, 200)}`);
    return undefined;
  }
}

// The documented response of op for status: its object or undefined.
function documentedResponse(contract, op, status) {
  const r = op.responses ?? {};
  const hit = r[String(status)] ?? r[`${String(status)[0]}XX`] ?? r.default;
  return hit ? deref(contract.spec, hit) : undefined;
}

// A 405's Allow header lists methods the spec documents on the path (and
// HEAD beside GET). A subset: a path's operations may be split between the
// coordinator and the worker (GET /v1/configs/{id} and DELETE on a worker).
function checkAllow(res, allowed, errs) {
  if (!res.headers) return;
  const want = new Set(allowed.map((m) => m.toUpperCase()));
  if (want.has('GET')) want.add('HEAD');
  const got = (res.headers.get('allow') ?? '').split(',').map((m) => m.trim()).filter(Boolean);
  if (got.length === 0 || !got.every((m) => want.has(m))) {
    errs.push(`Allow ${JSON.stringify(res.headers.get('allow'))}, but openapi.yaml documents ${[...want].join(', ')}`);
  }
}

// An edge problem (EDGE_PROBLEMS) the response may be, by its status.
function edgeFor(op, status) {
  const hasBody = Boolean(op?.requestBody);
  return EDGE_PROBLEMS.filter((e) => e.status === status && (!e.body || hasBody));
}

// res: {method, path, status, contentType, body (text, or undefined when
// not checked), headers (a Headers, optional)}. Returns the list of what
// breaks the contract ([] = fine).
export function checkResponse(contract, res) {
  const errs = [];
  // The Conventions: every response carries X-Request-Id.
  const rid = res.headers?.get('x-request-id');
  if (res.headers && !(rid && /^[A-Za-z0-9._-]{1,128}$/.test(rid))) errs.push(`X-Request-Id ${JSON.stringify(rid)}: missing or malformed`);
  const found = findOperation(contract, res.method, res.path);
  if (!found || !found.op) {
    const slug = !found ? 'not-found' : 'method-not-allowed';
    const status = !found ? 404 : 405;
    if (res.status !== status) {
      errs.push(found ? `no ${res.method} operation on ${found.template} (documented: ${found.allowed.join(', ')})`
        : `no path of openapi.yaml matches ${res.path}`);
    } else {
      checkProblem(contract, res, slug, errs);
      if (found) checkAllow(res, found.allowed, errs);
    }
    return errs;
  }
  const doc = documentedResponse(contract, found.op, res.status);
  const edges = edgeFor(found.op, res.status);
  // A convention every operation shares (EDGE_PROBLEMS) holds beside what
  // the operation documents for the same status.
  const isEdge = () => edges.some((e) => { const x = []; checkProblem(contract, res, e.slug, x); return x.length === 0; });
  if (!doc) {
    if (edges.length === 0) {
      errs.push(`status ${res.status} is not documented for ${res.method} ${found.template} (documented: ${Object.keys(found.op.responses ?? {}).join(', ')})`);
    } else if (!isEdge()) {
      checkProblem(contract, res, edges[0].slug, errs);
    }
    return errs;
  }
  const before = errs.length;
  checkDocumented(contract, res, found, doc, errs);
  if (errs.length > before && isEdge()) errs.length = before;
  return errs;
}

// The documented headers the response carries, against their schemas
// (a header the response lacks is not checked: the spec marks none required).
function checkHeaders(contract, res, found, doc, errs) {
  for (const [name, h] of Object.entries(doc.headers ?? {})) {
    const header = deref(contract.spec, h);
    const raw = res.headers?.get(name);
    if (raw === null || raw === undefined || !header?.schema) continue;
    const schema = absolutize(contract.spec, header.schema);
    const value = (schema.type === 'integer' || schema.type === 'number') && /^-?\d+(\.\d+)?$/.test(raw) ? Number(raw) : raw;
    const validate = validatorFor(contract, `${res.method} ${found.template} ${res.status} header ${name}`, header.schema);
    if (!validate(value)) errs.push(`header ${name}: ${JSON.stringify(raw)} breaks its schema: ${ajvErrors(validate.errors)}`);
  }
}

// The media type and body of a response the operation documents.
function checkDocumented(contract, res, found, doc, errs) {
  checkHeaders(contract, res, found, doc, errs);
  const content = doc.content ?? {};
  const types = Object.keys(content);
  const media = mediaOf(res.contentType);
  const bodyless = res.method === 'HEAD' || res.status === 304 || res.status === 204;
  if (types.length === 0) {
    if (res.body && res.body.length > 0) errs.push(`a body (${media || 'no type'}) where ${found.template} documents none for ${res.status}`);
    return;
  }
  if (!media) {
    if (!bodyless && !(res.body !== undefined && res.body.length === 0)) errs.push(`no Content-Type (documented: ${types.join(', ')})`);
    return;
  }
  const key = types.find((t) => mediaOf(t) === media)
    ?? types.find((t) => t.endsWith('/*') && media.startsWith(t.slice(0, -1)))
    ?? types.find((t) => t === '*/*');
  if (!key) {
    errs.push(`Content-Type ${res.contentType} is not documented (documented: ${types.join(', ')})`);
    return;
  }
  const schema = content[key].schema;
  if (bodyless || res.body === undefined || !schema) return;
  if (!isJsonMedia(media)) { // a text body against a string schema (const, pattern)
    const validate = validatorFor(contract, `${res.method} ${found.template} ${res.status} ${key}`, schema);
    if (!validate(res.body)) errs.push(`the ${media} body breaks its schema: ${ajvErrors(validate.errors)}: ${JSON.stringify(res.body.slice(0, 200))}`);
    return;
  }
  const body = parseJson(res.body, errs);
  if (body === undefined) return;
  const validate = validatorFor(contract, `${res.method} ${found.template} ${res.status} ${key}`, schema);
  if (!validate(body)) errs.push(`the body breaks its schema: ${ajvErrors(validate.errors)}`);
}
