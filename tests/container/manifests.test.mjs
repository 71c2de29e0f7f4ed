// manifests: docker/k8s/ validated against the Kubernetes schemas
// (kubernetes-models, pinned in package.json) and checked for what a
// deployment needs: Pod Security "restricted", probes, requests and limits,
// images by tag with a pull policy, no committed secrets, workers without a
// data volume, Redis on a PersistentVolumeClaim, an HPA for the workers.
// Also docker/compose.yaml (accepted by Debian's docker-compose and by
// podman-compose, no top-level `name:`), the Dockerfiles and .dockerignore.
// Needs no container engine.
import { execFileSync } from 'node:child_process';
import { chmodSync, existsSync, mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { test } from 'node:test';
import assert from 'node:assert/strict';
import YAML from 'yaml';
import * as apps from 'kubernetes-models/apps/v1';
import * as autoscaling from 'kubernetes-models/autoscaling/v2';
import * as core from 'kubernetes-models/v1';
import * as networking from 'kubernetes-models/networking.k8s.io/v1';

const SOURCE_DIR = process.env.FRAMED_SOURCE_DIR ?? path.resolve(path.dirname(new URL(import.meta.url).pathname), '..', '..');
const K8S = path.join(SOURCE_DIR, 'docker', 'k8s');
const MODELS = { 'apps/v1': apps, 'autoscaling/v2': autoscaling, v1: core, 'networking.k8s.io/v1': networking };
const RESTRICTED_VOLUMES = ['configMap', 'csi', 'downwardAPI', 'emptyDir', 'ephemeral', 'persistentVolumeClaim', 'projected', 'secret'];

function loadManifests() {
  const docs = [];
  for (const f of readdirSync(K8S).filter((n) => n.endsWith('.yaml') && n !== 'kustomization.yaml').sort()) {
    for (const d of YAML.parseAllDocuments(readFileSync(path.join(K8S, f), 'utf8'))) {
      assert.equal(d.errors.length, 0, `${f}: ${d.errors.join('; ')}`);
      const obj = d.toJSON();
      if (obj) docs.push({ file: f, obj });
    }
  }
  return docs;
}

const docs = loadManifests();
const byKind = (kind) => docs.filter((d) => d.obj.kind === kind).map((d) => d.obj);
const named = (kind, name) => byKind(kind).find((o) => o.metadata.name === name);

test('every manifest validates against its Kubernetes schema', () => {
  assert.ok(docs.length >= 8, `${docs.length} objects`);
  for (const { file, obj } of docs) {
    const group = MODELS[obj.apiVersion];
    assert.ok(group, `${file}: no models for ${obj.apiVersion}`);
    const Model = group[obj.kind];
    assert.ok(Model, `${file}: no model for ${obj.apiVersion} ${obj.kind}`);
    assert.doesNotThrow(() => new Model(obj).validate(), `${file}: ${obj.kind} ${obj.metadata?.name}`);
  }
  // The validator does reject a bad object.
  assert.throws(() => new apps.Deployment({ metadata: { name: 'x' }, spec: { selector: {}, template: { spec: { containers: [{ name: 1 }] } } } }).validate());
});

test('kustomization lists every manifest and pins the images by tag', () => {
  const k = YAML.parse(readFileSync(path.join(K8S, 'kustomization.yaml'), 'utf8'));
  const files = readdirSync(K8S).filter((n) => n.endsWith('.yaml') && n !== 'kustomization.yaml').sort();
  assert.deepEqual([...k.resources].sort(), files);
  for (const img of k.images) assert.match(img.newTag, /^\d+\.\d+\.\d+$/, img.name);
});

test('no secrets committed: no Secret objects, secret values come from kubectl create secret', () => {
  assert.equal(byKind('Secret').length, 0);
  for (const { file, obj } of docs) assert.doesNotMatch(JSON.stringify(obj), /change-me|stringData/i, file);
  const readme = readFileSync(path.join(SOURCE_DIR, 'README.md'), 'utf8');
  assert.match(readme, /kubectl[^\n]*create secret generic framed-secrets/, 'README documents the Secret');
});

test('every pod passes Pod Security "restricted", with probes, requests, limits and tagged images', () => {
  const deployments = byKind('Deployment');
  assert.deepEqual(deployments.map((d) => d.metadata.name).sort(), ['framed-coordinator', 'framed-redis', 'framed-worker']);
  for (const d of deployments) {
    const where = d.metadata.name;
    const pod = d.spec.template.spec;
    assert.equal(pod.automountServiceAccountToken, false, `${where}: no service-account token`);
    assert.ok(!pod.hostNetwork && !pod.hostPID && !pod.hostIPC, `${where}: no host namespaces`);
    const psc = pod.securityContext ?? {};
    assert.equal(psc.runAsNonRoot, true, `${where}: runAsNonRoot`);
    assert.ok(psc.runAsUser > 0, `${where}: a non-zero runAsUser`);
    assert.equal(psc.seccompProfile?.type, 'RuntimeDefault', `${where}: seccompProfile`);
    for (const v of pod.volumes ?? []) {
      const type = Object.keys(v).find((k) => k !== 'name');
      assert.ok(RESTRICTED_VOLUMES.includes(type), `${where}: volume ${v.name} of type ${type}`);
    }
    for (const c of [...(pod.initContainers ?? []), ...pod.containers]) {
      const at = `${where}/${c.name}`;
      const sc = c.securityContext ?? {};
      assert.equal(sc.allowPrivilegeEscalation, false, `${at}: allowPrivilegeEscalation`);
      assert.notEqual(sc.privileged, true, `${at}: privileged`);
      assert.deepEqual(sc.capabilities?.drop, ['ALL'], `${at}: drop ALL`);
      assert.ok((sc.capabilities?.add ?? []).every((a) => a === 'NET_BIND_SERVICE'), `${at}: capabilities added`);
      assert.equal(sc.readOnlyRootFilesystem, true, `${at}: read-only root`);
      assert.notEqual(sc.runAsUser, 0, `${at}: runAsUser`);
      assert.ok(c.volumeMounts?.some((m) => m.mountPath === '/tmp'), `${at}: a writable /tmp`);
      for (const m of c.volumeMounts ?? []) assert.ok(pod.volumes.some((v) => v.name === m.name), `${at}: volume ${m.name}`);
      assert.match(c.image, /^[a-z0-9./-]+:\d+\.\d+\.\d+$/, `${at}: image by version tag`);
      assert.ok(['IfNotPresent', 'Always'].includes(c.imagePullPolicy), `${at}: imagePullPolicy`);
      assert.ok(c.readinessProbe && c.livenessProbe, `${at}: readiness and liveness probes`);
      for (const r of ['cpu', 'memory']) {
        assert.ok(c.resources?.requests?.[r], `${at}: requests.${r}`);
        assert.ok(c.resources?.limits?.[r], `${at}: limits.${r}`);
      }
      for (const p of ['readinessProbe', 'livenessProbe', 'startupProbe']) {
        const port = c[p]?.httpGet?.port ?? c[p]?.tcpSocket?.port;
        if (typeof port === 'string') assert.ok(c.ports.some((x) => x.name === port), `${at}: ${p} port ${port}`);
      }
      for (const e of c.env ?? []) {
        const ref = e.valueFrom?.configMapKeyRef;
        if (ref) assert.ok(named('ConfigMap', ref.name)?.data?.[ref.key] !== undefined, `${at}: ${ref.name}/${ref.key}`);
      }
    }
    assert.deepEqual(d.spec.selector.matchLabels, Object.fromEntries(Object.entries(d.spec.template.metadata.labels).filter(([k]) => k in d.spec.selector.matchLabels)), `${where}: selector`);
  }
});

test('workers have no data volume; the coordinator and Redis keep theirs on PersistentVolumeClaims', () => {
  const worker = named('Deployment', 'framed-worker').spec.template.spec;
  assert.ok(!(worker.volumes ?? []).some((v) => v.persistentVolumeClaim), 'no worker PVC');
  for (const c of worker.containers) {
    assert.ok(!(c.volumeMounts ?? []).some((m) => m.mountPath.startsWith('/var/lib/framed')), 'no data mount on workers');
  }
  const pvcs = new Set(byKind('PersistentVolumeClaim').map((p) => p.metadata.name));
  const claims = (name) => named('Deployment', name).spec.template.spec.volumes.filter((v) => v.persistentVolumeClaim).map((v) => v.persistentVolumeClaim.claimName);
  const coordClaims = claims('framed-coordinator');
  assert.equal(coordClaims.length, 2);
  for (const c of coordClaims) assert.ok(pvcs.has(c), c);
  const redis = named('Deployment', 'framed-redis');
  assert.deepEqual(claims('framed-redis').filter((c) => pvcs.has(c)).length, 1);
  assert.ok(redis.spec.template.spec.containers[0].volumeMounts.some((m) => m.mountPath === '/data'));
  assert.match(redis.spec.template.spec.containers[0].image, /^framed-redis:/);
  for (const name of ['framed-coordinator', 'framed-redis']) assert.equal(named('Deployment', name).spec.strategy.type, 'Recreate', name);
  // Redis has no password: a NetworkPolicy lets only framed's coordinator and workers in.
  const policy = byKind('NetworkPolicy').find((p) => p.spec.podSelector.matchLabels['app.kubernetes.io/component'] === 'redis');
  assert.ok(policy, 'a NetworkPolicy guards Redis');
  assert.deepEqual(policy.spec.policyTypes, ['Ingress']);
  const allowed = policy.spec.ingress.flatMap((r) => r.from.map((f) => f.podSelector.matchLabels['app.kubernetes.io/component'])).sort();
  assert.deepEqual(allowed, ['coordinator', 'worker']);
  assert.deepEqual(policy.spec.ingress.flatMap((r) => r.ports.map((p) => p.port)), [6379]);
  const conf = readFileSync(path.join(SOURCE_DIR, 'docker', 'redis', 'redis.conf'), 'utf8');
  assert.match(conf, /^appendonly yes$/m, 'Redis persists with AOF');
});

test('the workers have a HorizontalPodAutoscaler; Services select their pods', () => {
  const hpa = byKind('HorizontalPodAutoscaler');
  assert.equal(hpa.length, 1);
  assert.deepEqual(hpa[0].spec.scaleTargetRef, { apiVersion: 'apps/v1', kind: 'Deployment', name: 'framed-worker' });
  assert.ok(hpa[0].spec.minReplicas >= 1 && hpa[0].spec.maxReplicas > hpa[0].spec.minReplicas);
  for (const s of byKind('Service')) {
    const pods = byKind('Deployment').filter((d) => Object.entries(s.spec.selector).every(([k, v]) => d.spec.template.metadata.labels[k] === v));
    assert.equal(pods.length, 1, `${s.metadata.name} selects one Deployment`);
  }
});

test('docker/compose.yaml: Debian\'s docker-compose and podman-compose accept it', () => {
  const file = path.join(SOURCE_DIR, 'docker', 'compose.yaml');
  const compose = YAML.parse(readFileSync(file, 'utf8'));
  assert.equal(compose.name, undefined, 'no top-level name: (compose v1 refuses it)');
  for (const k of Object.keys(compose)) assert.ok(['services', 'volumes', 'networks', 'configs', 'secrets'].includes(k) || k.startsWith('x-'), k);
  assert.deepEqual(Object.keys(compose.services).sort(), ['coordinator', 'redis', 'worker-1', 'worker-2', 'worker-3']);
  const env = { ...process.env, FRAMED_CLUSTER_SECRET: 'test-only' };
  execFileSync('docker-compose', ['-f', file, 'config', '-q'], { env, stdio: ['ignore', 'inherit', 'inherit'] });
  const resolved = YAML.parse(execFileSync('docker-compose', ['-f', file, 'config'], { env, encoding: 'utf8' }));
  const ports = new Set();
  for (const [name, s] of Object.entries(resolved.services)) {
    assert.equal(s.network_mode, 'host', `${name}: host networking`);
    const port = s.environment.FRAMED_PORT ?? s.environment.REDIS_PORT;
    assert.ok(port && !ports.has(port), `${name}: a port of its own`);
    ports.add(port);
    const dataMount = (s.volumes ?? []).some((v) => (typeof v === 'string' ? v : v.target).includes('/var/lib/framed/data'));
    assert.equal(dataMount, name === 'coordinator', `${name}: only the coordinator has the data volume`);
  }
  // A missing secret is refused with the message naming it.
  const noSecret = { ...process.env };
  delete noSecret.FRAMED_CLUSTER_SECRET;
  assert.throws(() => execFileSync('docker-compose', ['-f', file, 'config', '-q'], { env: noSecret, stdio: 'pipe' }), /FRAMED_CLUSTER_SECRET/);
  // podman-compose 1.0.3 has no `config`: a dry run parses and interpolates
  // the file; its podman is a stub, so nothing is created.
  const dir = mkdtempSync(path.join(tmpdir(), 'framed-ct-compose-'));
  try {
    const stub = path.join(dir, 'podman');
    writeFileSync(stub, '#!/bin/sh\necho "podman version 4.3.1"\n');
    chmodSync(stub, 0o755);
    const out = execFileSync('podman-compose', ['--podman-path', stub, '-f', file, '-p', 'framed-test-dry', '--dry-run', 'up', '-d'],
      { env, encoding: 'utf8', stdio: ['ignore', 'pipe', 'pipe'] });
    for (const s of ['redis', 'coordinator', 'worker-1', 'worker-2', 'worker-3']) assert.match(out, new RegExp(`--name=framed-test-dry_${s}_1`), s);
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
});

test('Dockerfiles: docker-format health checks, non-root users, one .dockerignore', () => {
  const framed = readFileSync(path.join(SOURCE_DIR, 'docker', 'Dockerfile'), 'utf8');
  const redis = readFileSync(path.join(SOURCE_DIR, 'docker', 'redis', 'Dockerfile'), 'utf8');
  for (const [name, text] of [['framed', framed], ['redis', redis]]) {
    assert.match(text, /^HEALTHCHECK /m, `${name}: HEALTHCHECK`);
    assert.match(text, /^USER (?!root|0)/m, `${name}: USER`);
    for (const m of text.matchAll(/^FROM (\S+)/gm)) assert.match(m[1], /^debian:bookworm(-slim)?$/, `${name}: FROM ${m[1]}`);
  }
  assert.match(framed, /uid 10001/);
  assert.ok(!existsSync(path.join(SOURCE_DIR, 'docker', 'Dockerfile.dockerignore')), 'one ignore file, read by every builder');
  const ignore = readFileSync(path.join(SOURCE_DIR, '.dockerignore'), 'utf8').split('\n').map((l) => l.trim());
  for (const p of ['.git', 'node_modules', 'build', 'build-*', 'data', 'state']) assert.ok(ignore.includes(p), `.dockerignore: ${p}`);
});
