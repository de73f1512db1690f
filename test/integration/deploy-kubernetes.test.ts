/**
 * deploy/kubernetes: every manifest valid against the Kubernetes API schema of its apiVersion and
 * kind (the kubernetes-models validators; the Prometheus Operator's for its kinds), the
 * kustomizations listing only files that exist, the settings the deployment relies on, and the
 * container's command run the way the Deployment (then the CronJob) runs it: its args, its env
 * from the ConfigMap and its own list, the Secret's files at the mount path, a non-root user and
 * only the emptyDir writable, against the test PostgreSQL and the simulator.
 */
import { spawnSync } from 'node:child_process';
import { chmod, chown, mkdir, mkdtemp, readdir, readFile, rm, stat, symlink, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { dirname, join, relative } from 'node:path';
import * as monitoring from '@kubernetes-models/prometheus-operator/monitoring.coreos.com/v1';
import * as core from 'kubernetes-models/v1';
import * as apps from 'kubernetes-models/apps/v1';
import * as batch from 'kubernetes-models/batch/v1';
import { parse } from 'yaml';
import { describe, expect, it } from 'vitest';
import { itAsRoot, ownedOutside, runAs, startAs, unusedId } from '../support/deployed.js';
import { useSyncFixture } from '../support/fixture.js';
import { freePort } from '../support/global-setup.js';
import { ROOT } from '../support/harness.js';

const DIR = join(ROOT, 'deploy', 'kubernetes');
const RECORDS = 1200;

/** A manifest as read from its file, before a model checks it. */
interface Manifest {
  apiVersion: string;
  kind: string;
  [field: string]: unknown;
}

interface Kustomization {
  apiVersion: string;
  kind: string;
  resources: string[];
}

/** The manifests a kustomization applies, each with the file it came from, following directories. */
async function build(dir: string): Promise<Array<{ file: string; doc: Manifest }>> {
  const kustomization = parse(await readFile(join(dir, 'kustomization.yaml'), 'utf8')) as Kustomization;
  const out: Array<{ file: string; doc: Manifest }> = [];
  for (const entry of kustomization.resources) {
    const path = join(dir, entry);
    if ((await stat(path)).isDirectory()) out.push(...(await build(path)));
    else out.push({ file: relative(DIR, path), doc: parse(await readFile(path, 'utf8')) as Manifest });
  }
  return out;
}

/** The one manifest of this kind, raw. */
function raw(docs: Array<{ doc: Manifest }>, kind: string): Manifest {
  const found = docs.filter((d) => d.doc.kind === kind);
  expect(found, kind).toHaveLength(1);
  return found[0]!.doc;
}

/** The one manifest of this kind, as its kubernetes-models class (typed fields). */
function the<T>(docs: Array<{ doc: Manifest }>, kind: string, Model: new (data: never) => T): T {
  return new Model(raw(docs, kind) as never);
}

type Validated = new (data: never) => { validate(): void };

/** kubernetes-models' classes (and its Prometheus Operator package's) by apiVersion. */
const MODELS: Record<string, Record<string, unknown>> = {
  v1: core,
  'apps/v1': apps,
  'batch/v1': batch,
  'monitoring.coreos.com/v1': monitoring,
};

function model(apiVersion: string, kind: string): Validated {
  const found = MODELS[apiVersion]?.[kind];
  expect(found, `${apiVersion} ${kind} in kubernetes-models`).toBeDefined();
  return found as Validated;
}

const PROBES = ['startupProbe', 'livenessProbe', 'readinessProbe'] as const;

describe('the Kubernetes manifests', () => {
  it('each kustomization lists only files that exist, and every manifest is in one', async () => {
    const listed = new Set<string>();
    const check = async (dir: string) => {
      const k = parse(await readFile(join(dir, 'kustomization.yaml'), 'utf8')) as Kustomization;
      expect(k).toMatchObject({ apiVersion: 'kustomize.config.k8s.io/v1beta1', kind: 'Kustomization' });
      for (const entry of k.resources) {
        const path = join(dir, entry);
        const st = await stat(path).catch(() => undefined);
        expect(st, `${relative(DIR, dir) || '.'}/kustomization.yaml lists ${entry}`).toBeDefined();
        if (st!.isDirectory()) await stat(join(path, 'kustomization.yaml'));
        else listed.add(path);
      }
    };
    await check(DIR);
    await check(join(DIR, 'cronjob'));
    await check(join(DIR, 'common'));
    const files = (await readdir(DIR, { recursive: true })).filter((f) => f.endsWith('.yaml'));
    const manifests = files.filter((f) => !f.endsWith('kustomization.yaml')).map((f) => join(DIR, f));
    expect(manifests.filter((f) => !listed.has(f))).toEqual([]);
  });

  it('every manifest is valid against the API schema of its apiVersion and kind', async () => {
    const docs = [...(await build(DIR)), ...(await build(join(DIR, 'cronjob')))];
    expect(new Set(docs.map((d) => `${d.doc.apiVersion} ${d.doc.kind}`))).toEqual(
      new Set([
        'v1 ServiceAccount',
        'v1 ConfigMap',
        'apps/v1 Deployment',
        'v1 Service',
        'monitoring.coreos.com/v1 ServiceMonitor',
        'monitoring.coreos.com/v1 PrometheusRule',
        'batch/v1 CronJob',
      ]),
    );
    for (const { file, doc } of docs) {
      const Model = model(doc.apiVersion, doc.kind);
      expect(() => new Model(doc as never).validate(), file).not.toThrow();
    }
    // The validators are real: a wrong type and a missing required field are errors.
    const deployment = raw(docs, 'Deployment');
    const wrongType = { ...deployment, spec: { ...(deployment.spec as object), replicas: 'one' } };
    expect(() => new apps.Deployment(wrongType as never).validate()).toThrow(/replicas/);
    const cron = raw(docs, 'CronJob');
    const noSchedule = { ...cron, spec: { ...(cron.spec as object), schedule: undefined } };
    expect(() => new batch.CronJob(noSchedule as never).validate()).toThrow(/schedule/);
  });

  it("no manifest has a field its API type does not know (kubernetes-models' types, checked by tsc)", async () => {
    // The validators above ignore unknown fields; TypeScript's excess-property check on an object
    // literal does not. Each manifest becomes a constant typed with its kind's interface, and a copy
    // of the Deployment with one misspelt field shows that the check is real.
    const docs = [...(await build(DIR)), ...(await build(join(DIR, 'cronjob')))];
    const modules: Record<string, string> = {
      v1: 'kubernetes-models/v1',
      'apps/v1': 'kubernetes-models/apps/v1',
      'batch/v1': 'kubernetes-models/batch/v1',
      'monitoring.coreos.com/v1': '@kubernetes-models/prometheus-operator/monitoring.coreos.com/v1',
    };
    const typo = structuredClone(raw(docs, 'Deployment')) as { spec: { template: { spec: { containers: object[] } } } };
    const [first] = typo.spec.template.spec.containers as Array<Record<string, unknown>>;
    first!.securityContext = { ...(first!.securityContext as object), readOnlyRootFileSystem: true };
    const checked = [...docs, { file: 'typo', doc: typo as unknown as Manifest }];
    const lines = checked.flatMap(({ file, doc }, i) => [
      `import type { I${doc.kind} as T${i} } from '${modules[doc.apiVersion]!}';`,
      `export const m${i}: T${i} = ${JSON.stringify(doc)}; // ${file}`,
    ]);
    const dir = await mkdtemp(join(tmpdir(), 'wrs-k8s-types-'));
    try {
      await symlink(join(ROOT, 'node_modules'), join(dir, 'node_modules'));
      await writeFile(join(dir, 'manifests.ts'), `${lines.join('\n')}\n`);
      const options = { strict: true, noEmit: true, module: 'nodenext', moduleResolution: 'nodenext', types: [] };
      await writeFile(
        join(dir, 'tsconfig.json'),
        JSON.stringify({ compilerOptions: options, files: ['manifests.ts'] }),
      );
      const tsc = spawnSync(process.execPath, [join(ROOT, 'node_modules', 'typescript', 'bin', 'tsc'), '-p', dir], {
        encoding: 'utf8',
        timeout: 120_000,
      });
      const errors = tsc.stdout.split('\n').filter((l) => l.includes('error TS'));
      expect(errors, tsc.stdout + tsc.stderr).toHaveLength(1);
      expect(errors[0]).toContain(`manifests.ts(${lines.length},`);
      expect(errors[0]).toMatch(/readOnlyRootFileSystem\W+ does not exist/);
    } finally {
      await rm(dir, { recursive: true, force: true });
    }
  }, 120_000);

  it('the Deployment: one daemon, replaced, probed on /healthz, hardened, sized, secrets as files', async () => {
    const docs = await build(DIR);
    const d = the(docs, 'Deployment', apps.Deployment);
    const pod = d.spec!.template.spec!;
    expect(pod.containers).toHaveLength(1);
    const c = pod.containers[0]!;
    expect(d.spec).toMatchObject({ replicas: 1, strategy: { type: 'Recreate' } });
    expect(c.args).toEqual(['schedule']);

    const port = c.ports!.find((p) => p.name === 'metrics')!;
    const config = the(docs, 'ConfigMap', core.ConfigMap).data!;
    expect(Number(config.SYNC_METRICS_PORT)).toBe(port.containerPort);
    for (const probe of PROBES) expect(c[probe]?.httpGet, probe).toEqual({ path: '/healthz', port: 'metrics' });

    const podSecurity = pod.securityContext!;
    expect(podSecurity).toMatchObject({ runAsNonRoot: true, seccompProfile: { type: 'RuntimeDefault' } });
    expect(podSecurity.runAsUser).toBeGreaterThan(0);
    expect(c.securityContext).toMatchObject({
      allowPrivilegeEscalation: false,
      readOnlyRootFilesystem: true,
      capabilities: { drop: ['ALL'] },
    });
    expect(String(c.resources?.requests?.memory)).toMatch(/^\d+Mi$/);
    expect(String(c.resources?.limits?.memory)).toMatch(/^\d+Mi$/);
    // The daemon exits within 10 s of SIGTERM (README, "Deploying the daemon").
    expect(pod.terminationGracePeriodSeconds).toBeGreaterThan(10);

    // No token, from the pod or from its account.
    expect(pod.automountServiceAccountToken).toBe(false);
    const account = the(docs, 'ServiceAccount', core.ServiceAccount);
    expect([pod.serviceAccountName, account.automountServiceAccountToken]).toEqual([account.metadata?.name, false]);

    // The Secret's keys as 0400 files, each read through a *_FILE variable; no password in the ConfigMap.
    const secretVolume = pod.volumes!.find((v) => v.secret)!;
    expect(secretVolume.secret!.defaultMode).toBe(0o400);
    const secretMount = c.volumeMounts!.find((m) => m.name === secretVolume.name)!;
    const env = Object.fromEntries(c.env!.map((e) => [e.name, e.value ?? '']));
    const secretFiles = secretVolume.secret!.items!.map((i) => join(secretMount.mountPath, i.path));
    expect(
      Object.entries(env)
        .filter(([n]) => n.endsWith('_FILE') && n !== 'SYNC_HEALTH_FILE')
        .map(([, v]) => v),
    ).toEqual(secretFiles);
    expect(Object.keys(config).filter((n) => /PASSWORD|TOKEN|API_KEY/.test(n))).toEqual([]);
    expect(config.DATABASE_URL).not.toMatch(/:\/\/[^/@]*:[^/@]*@/);

    // What the job writes goes to the emptyDir, which has a size limit.
    const work = pod.volumes!.find((v) => v.emptyDir)!;
    expect(String(work.emptyDir!.sizeLimit)).toMatch(/^\d+(Mi|Gi)$/);
    const workPath = c.volumeMounts!.find((m) => m.name === work.name)!.mountPath;
    expect(dirname(env.SYNC_HEALTH_FILE!)).toBe(workPath);
    expect(env.TMPDIR).toBe(workPath);

    // The Service reaches the pod's metrics port; the ServiceMonitor scrapes the Service.
    const service = the(docs, 'Service', core.Service);
    expect(d.spec!.template.metadata?.labels).toMatchObject(service.spec!.selector!);
    expect(service.spec!.ports).toEqual([expect.objectContaining({ name: 'metrics', targetPort: 'metrics' })]);
    const monitor = the(docs, 'ServiceMonitor', monitoring.ServiceMonitor);
    expect(service.metadata?.labels).toMatchObject(monitor.spec.selector.matchLabels!);
    expect(monitor.spec.endpoints?.[0]).toMatchObject({ port: 'metrics', path: '/metrics' });
  });

  it("the PrometheusRule holds deploy/prometheus/alerts.yml's groups, unchanged", async () => {
    const alerts = parse(await readFile(join(ROOT, 'deploy', 'prometheus', 'alerts.yml'), 'utf8')) as {
      groups: Array<{ rules: Array<{ expr: string }> }>;
    };
    const rule = the(await build(DIR), 'PrometheusRule', monitoring.PrometheusRule);
    expect(rule.spec.groups, 'copy deploy/prometheus/alerts.yml groups into prometheusrule.yaml').toEqual(
      alerts.groups,
    );
    // The rules select the job the ServiceMonitor's relabeling names.
    const monitor = the(await build(DIR), 'ServiceMonitor', monitoring.ServiceMonitor);
    const exprs = alerts.groups.flatMap((g) => g.rules.map((r) => r.expr));
    expect(exprs.join('\n')).toContain('job="wine_recon_sync"');
    expect(monitor.spec.endpoints?.[0]?.relabelings).toContainEqual(
      expect.objectContaining({ targetLabel: 'job', replacement: 'wine_recon_sync' }),
    );
  });

  it('the CronJob: `run`, one at a time, with a deadline, a time zone and the same security context', async () => {
    const cron = the(await build(join(DIR, 'cronjob')), 'CronJob', batch.CronJob);
    const deployment = the(await build(DIR), 'Deployment', apps.Deployment);
    expect(cron.spec).toMatchObject({ concurrencyPolicy: 'Forbid', timeZone: expect.any(String) });
    expect(cron.spec.startingDeadlineSeconds).toBeGreaterThan(0);
    const pod = cron.spec.jobTemplate.spec!.template.spec!;
    const dPod = deployment.spec!.template.spec!;
    expect(pod.containers[0]!.args).toEqual(['run']);
    expect(pod.securityContext).toEqual(dPod.securityContext);
    expect(pod.containers[0]!.securityContext).toEqual(dPod.containers[0]!.securityContext);
    expect(pod.volumes).toEqual(dPod.volumes);
    expect(pod.automountServiceAccountToken).toBe(false);
    expect(pod.terminationGracePeriodSeconds).toBeGreaterThan(10);
  });
});

describe('the container run the way the Deployment and the CronJob run it', () => {
  const fx = useSyncFixture('kubernetes', { simulator: { records: RECORDS } });

  /** ENV of the Dockerfile's runtime stage: the image's environment, under the pod's. */
  async function imageEnv(): Promise<Record<string, string>> {
    const dockerfile = await readFile(join(ROOT, 'Dockerfile'), 'utf8');
    const runtime = dockerfile.slice(dockerfile.indexOf(' AS runtime'));
    return Object.fromEntries([...runtime.matchAll(/^ENV (\w+)=(\S+)$/gm)].map((m) => [m[1]!, m[2]!]));
  }

  itAsRoot(
    'the daemon loads every record, its probe paths answer 200, SIGTERM ends it; then the CronJob`s run succeeds',
    async () => {
      const docs = await build(DIR);
      const pod = the(docs, 'Deployment', apps.Deployment).spec!.template.spec!;
      const config = { ...the(docs, 'ConfigMap', core.ConfigMap).data };
      const container = pod.containers[0]!;
      // The manifest's uid and groups, as kubelet gives them, but a uid that owns no file on this
      // machine, so that whatever it owns afterwards, the program wrote.
      const uid = unusedId();
      const fsGroup = pod.securityContext!.fsGroup!;
      const writable: string[] = [];
      // readOnlyRootFilesystem: everything read-only but the emptyDir.
      const who = { uid, gid: pod.securityContext!.runAsGroup!, groups: [fsGroup], writable };

      // The operator's edit of the ConfigMap for this site. The port stays the container's; the
      // interface is loopback here, not the pod's own network namespace.
      const port = await freePort();
      const url = new URL(fx.db.url);
      // A test database without a password (trust, as CI's PostgreSQL 15) still gets a file: an empty
      // one is a configuration error, and a server that trusts the client never asks for it.
      const dbPassword = decodeURIComponent(url.password) || 'trusted-without-password';
      url.password = '';
      Object.assign(config, {
        DATABASE_URL: url.toString(),
        SYNC_DB_SCHEMA: fx.db.schema,
        WINE_API_BASE_URL: fx.sim.url,
        WINE_API_EMAIL: fx.sim.email,
        SYNC_METRICS_PORT: String(port),
        SYNC_METRICS_HOST: '127.0.0.1',
      });

      // The volumes as kubelet makes them, in the pod's own directory: the Secret's files owned by
      // root, given the fsGroup with read for it; the emptyDir writable, also by the fsGroup.
      await chmod(fx.dir, 0o755);
      const mounts = new Map<string, string>();
      for (const volume of pod.volumes!) {
        const mount = container.volumeMounts!.find((m) => m.name === volume.name)!;
        const at = join(fx.dir, 'pod', volume.name);
        await mkdir(at, { recursive: true });
        mounts.set(mount.mountPath, at);
        if (volume.secret) {
          const values: Record<string, string> = { wine_api_password: fx.sim.password, database_password: dbPassword };
          for (const item of volume.secret.items!) {
            const file = join(at, item.path);
            await writeFile(file, values[item.key]!);
            await chown(file, 0, fsGroup);
            await chmod(file, volume.secret.defaultMode! | 0o040);
          }
          await chown(at, 0, fsGroup);
          await chmod(at, 0o750);
        } else {
          await chown(at, 0, fsGroup);
          await chmod(at, 0o2777);
          writable.push(at);
        }
      }
      const image = await imageEnv();
      const inPod = (value: string) => {
        for (const [path, at] of mounts)
          if (value === path || value.startsWith(`${path}/`)) return at + value.slice(path.length);
        return value;
      };
      const envOf = (c: core.IContainer, data: Record<string, string>) =>
        Object.fromEntries(
          Object.entries({
            PATH: '/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin',
            HOSTNAME: 'wine-recon-sync-0',
            ...image,
            ...data,
            // env: overrides envFrom: (kubelet).
            ...Object.fromEntries(c.env!.map((e) => [e.name, e.value ?? ''])),
          }).map(([k, v]) => [k, inPod(v)]),
        );
      // The image's ENTRYPOINT (/app/bin/wine-recon-sync, WORKDIR /app): this checkout.
      const bin = join(ROOT, 'bin', 'wine-recon-sync');

      const env = envOf(container, config);
      const daemon = startAs(who, bin, container.args!, env, ROOT);
      try {
        const finished = await daemon.waitForLog(/"sync finished"/, 120_000);
        expect(JSON.parse(finished)).toMatchObject({ status: 'succeeded' });
        const [count] = await fx.db.rows<{ n: string }>('SELECT count(*) AS n FROM bulk_wine_reconciliation');
        expect(Number(count?.n)).toBe(RECORDS);
        for (const probe of PROBES) {
          const answer = await fetch(`http://127.0.0.1:${port}${container[probe]!.httpGet!.path!}`);
          expect(answer.status, probe).toBe(200);
        }
        const health = await runAs(who, bin, ['healthcheck'], env, ROOT);
        expect(health.code, health.stderr).toBe(0);

        const graceBy = Date.now() + pod.terminationGracePeriodSeconds! * 1000;
        daemon.kill('SIGTERM');
        const exit = await daemon.result;
        expect(Date.now()).toBeLessThan(graceBy);
        expect(exit.code, exit.stderr).toBe(0);
      } finally {
        daemon.kill('SIGKILL');
        await daemon.result;
      }

      // The CronJob's container, with the same volumes and settings: one run, exit 0.
      const cron = the(await build(join(DIR, 'cronjob')), 'CronJob', batch.CronJob);
      const cronContainer = cron.spec.jobTemplate.spec!.template.spec!.containers[0]!;
      const run = await runAs(who, bin, cronContainer.args!, envOf(cronContainer, config), ROOT, 120_000);
      expect(run.code, run.stderr).toBe(0);
      const runs = await fx.db.rows<{ status: string }>('SELECT status FROM sync_runs ORDER BY id');
      expect(runs).toEqual([{ status: 'succeeded' }, { status: 'succeeded' }]);

      expect(await ownedOutside(uid, ['/tmp', '/var/tmp', '/dev/shm', ROOT, fx.dir], writable)).toEqual([]);
    },
    240_000,
  );
});
