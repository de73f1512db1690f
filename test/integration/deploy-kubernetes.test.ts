/**
 * deploy/kubernetes: every manifest valid against the Kubernetes API schema of its apiVersion and
 * kind (the kubernetes-models validators; the Prometheus Operator's for its kinds), the
 * kustomizations listing only files that exist, the settings the deployment relies on, and the
 * container's command run the way the Deployment (then the CronJob) runs it: its args, its env
 * from the ConfigMap and its own list, the Secret's files at the mount path, a non-root user and
 * only the emptyDir writable, against the test PostgreSQL and the simulator.
 */
import { chmod, chown, mkdir, readdir, readFile, stat, writeFile } from 'node:fs/promises';
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

// eslint-disable-next-line @typescript-eslint/no-explicit-any -- manifests are read as untyped YAML
type Doc = Record<string, any>;

/** The manifests a kustomization applies, each with the file it came from, following directories. */
async function build(dir: string): Promise<Array<{ file: string; doc: Doc }>> {
  const kustomization = parse(await readFile(join(dir, 'kustomization.yaml'), 'utf8')) as Doc;
  const out: Array<{ file: string; doc: Doc }> = [];
  for (const entry of kustomization.resources as string[]) {
    const path = join(dir, entry);
    if ((await stat(path)).isDirectory()) out.push(...(await build(path)));
    else out.push({ file: relative(DIR, path), doc: parse(await readFile(path, 'utf8')) as Doc });
  }
  return out;
}

const kind = (docs: Array<{ doc: Doc }>, k: string): Doc => {
  const found = docs.filter((d) => d.doc.kind === k);
  expect(found, k).toHaveLength(1);
  return found[0]!.doc;
};

type Model = new (doc: Doc) => { validate(): void };

/** kubernetes-models' classes (and its Prometheus Operator package's) by apiVersion. */
const MODELS: Record<string, Record<string, unknown>> = {
  v1: core,
  'apps/v1': apps,
  'batch/v1': batch,
  'monitoring.coreos.com/v1': monitoring,
};

function model(apiVersion: string, k: string): Model {
  const found = MODELS[apiVersion]?.[k];
  expect(found, `${apiVersion} ${k} in kubernetes-models`).toBeDefined();
  return found as Model;
}

describe('the Kubernetes manifests', () => {
  it('each kustomization lists only files that exist, and every manifest is in one', async () => {
    const listed = new Set<string>();
    const check = async (dir: string) => {
      const k = parse(await readFile(join(dir, 'kustomization.yaml'), 'utf8')) as Doc;
      expect(k).toMatchObject({ apiVersion: 'kustomize.config.k8s.io/v1beta1', kind: 'Kustomization' });
      for (const entry of k.resources as string[]) {
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
      const Model = model(doc.apiVersion as string, doc.kind as string);
      expect(() => new Model(doc).validate(), file).not.toThrow();
    }
    // The validators are real: a wrong type and a missing required field are errors.
    const Deployment = model('apps/v1', 'Deployment');
    const deployment = kind(docs, 'Deployment');
    expect(() => new Deployment({ ...deployment, spec: { ...deployment.spec, replicas: 'one' } }).validate()).toThrow(
      /replicas/,
    );
    const CronJob = model('batch/v1', 'CronJob');
    const cron = kind(docs, 'CronJob');
    expect(() => new CronJob({ ...cron, spec: { ...cron.spec, schedule: undefined } }).validate()).toThrow(/schedule/);
  });

  it('the Deployment: one daemon, replaced, probed on /healthz, hardened, sized, secrets as files', async () => {
    const docs = await build(DIR);
    const d = kind(docs, 'Deployment');
    const pod = d.spec.template.spec;
    const [c] = pod.containers as Doc[];
    expect(pod.containers).toHaveLength(1);
    expect(d.spec).toMatchObject({ replicas: 1, strategy: { type: 'Recreate' } });
    expect(c!.args).toEqual(['schedule']);

    const port = (c!.ports as Doc[]).find((p) => p.name === 'metrics')!;
    const config = kind(docs, 'ConfigMap').data as Record<string, string>;
    expect(Number(config.SYNC_METRICS_PORT)).toBe(port.containerPort);
    for (const probe of ['startupProbe', 'livenessProbe', 'readinessProbe'])
      expect(c![probe].httpGet, probe).toEqual({ path: '/healthz', port: 'metrics' });

    expect(pod.securityContext).toMatchObject({ runAsNonRoot: true, seccompProfile: { type: 'RuntimeDefault' } });
    expect(pod.securityContext.runAsUser).toBeGreaterThan(0);
    expect(c!.securityContext).toMatchObject({
      allowPrivilegeEscalation: false,
      readOnlyRootFilesystem: true,
      capabilities: { drop: ['ALL'] },
    });
    expect(c!.resources.requests.memory).toMatch(/^\d+Mi$/);
    expect(c!.resources.limits.memory).toMatch(/^\d+Mi$/);
    // The daemon exits within 10 s of SIGTERM (README, "Deploying the daemon").
    expect(pod.terminationGracePeriodSeconds).toBeGreaterThan(10);

    // No token, from the pod or from its account.
    expect(pod.automountServiceAccountToken).toBe(false);
    const account = kind(docs, 'ServiceAccount');
    expect([pod.serviceAccountName, account.automountServiceAccountToken]).toEqual([account.metadata.name, false]);

    // The Secret's keys as 0400 files, each read through a *_FILE variable; no password in the ConfigMap.
    const secretVolume = (pod.volumes as Doc[]).find((v) => v.secret)!;
    expect(secretVolume.secret.defaultMode).toBe(0o400);
    const secretMount = (c!.volumeMounts as Doc[]).find((m) => m.name === secretVolume.name)!;
    const env = Object.fromEntries((c!.env as Doc[]).map((e) => [e.name as string, e.value as string]));
    const secretFiles = (secretVolume.secret.items as Doc[]).map((i) => join(secretMount.mountPath as string, i.path));
    expect(
      Object.entries(env)
        .filter(([n]) => n.endsWith('_FILE') && n !== 'SYNC_HEALTH_FILE')
        .map(([, v]) => v),
    ).toEqual(secretFiles);
    expect(Object.keys(config).filter((n) => /PASSWORD|TOKEN|API_KEY/.test(n))).toEqual([]);
    expect(config.DATABASE_URL).not.toMatch(/:\/\/[^/@]*:[^/@]*@/);

    // What the job writes goes to the emptyDir, which has a size limit.
    const work = (pod.volumes as Doc[]).find((v) => v.emptyDir)!;
    expect(work.emptyDir.sizeLimit).toMatch(/^\d+(Mi|Gi)$/);
    const workPath = (c!.volumeMounts as Doc[]).find((m) => m.name === work.name)!.mountPath as string;
    expect(dirname(env.SYNC_HEALTH_FILE!)).toBe(workPath);
    expect(env.TMPDIR).toBe(workPath);

    // The Service reaches the pod's metrics port; the ServiceMonitor scrapes the Service.
    const service = kind(docs, 'Service');
    expect(d.spec.template.metadata.labels).toMatchObject(service.spec.selector);
    expect(service.spec.ports).toEqual([expect.objectContaining({ name: 'metrics', targetPort: 'metrics' })]);
    const monitor = kind(docs, 'ServiceMonitor');
    expect(service.metadata.labels).toMatchObject(monitor.spec.selector.matchLabels);
    expect(monitor.spec.endpoints[0]).toMatchObject({ port: 'metrics', path: '/metrics' });
  });

  it("the PrometheusRule holds deploy/prometheus/alerts.yml's groups, unchanged", async () => {
    const alerts = parse(await readFile(join(ROOT, 'deploy', 'prometheus', 'alerts.yml'), 'utf8')) as Doc;
    const rule = kind(await build(DIR), 'PrometheusRule');
    expect(rule.spec.groups, 'copy deploy/prometheus/alerts.yml groups into prometheusrule.yaml').toEqual(
      alerts.groups,
    );
    // The rules select the job the ServiceMonitor's relabeling names.
    const monitor = kind(await build(DIR), 'ServiceMonitor');
    const exprs = (alerts.groups as Doc[]).flatMap((g) => (g.rules as Doc[]).map((r) => r.expr as string));
    expect(exprs.join('\n')).toContain('job="wine_recon_sync"');
    expect(monitor.spec.endpoints[0].relabelings).toContainEqual(
      expect.objectContaining({ targetLabel: 'job', replacement: 'wine_recon_sync' }),
    );
  });

  it('the CronJob: `run`, one at a time, with a deadline, a time zone and the same security context', async () => {
    const docs = await build(join(DIR, 'cronjob'));
    const cron = kind(docs, 'CronJob');
    const deployment = kind(await build(DIR), 'Deployment');
    expect(cron.spec).toMatchObject({ concurrencyPolicy: 'Forbid', timeZone: expect.any(String) });
    expect(cron.spec.startingDeadlineSeconds).toBeGreaterThan(0);
    const pod = cron.spec.jobTemplate.spec.template.spec;
    const dPod = deployment.spec.template.spec;
    expect(pod.containers[0].args).toEqual(['run']);
    expect(pod.securityContext).toEqual(dPod.securityContext);
    expect(pod.containers[0].securityContext).toEqual(dPod.containers[0].securityContext);
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
      const pod = kind(docs, 'Deployment').spec.template.spec;
      const config = { ...(kind(docs, 'ConfigMap').data as Record<string, string>) };
      const container = pod.containers[0] as Doc;
      // The manifest's uid and groups, as kubelet gives them, but a uid that owns no file on this
      // machine, so that whatever it owns afterwards, the program wrote.
      const uid = unusedId();
      const fsGroup = pod.securityContext.fsGroup as number;
      const writable: string[] = [];
      // readOnlyRootFilesystem: everything read-only but the emptyDir.
      const who = { uid, gid: pod.securityContext.runAsGroup as number, groups: [fsGroup], writable };

      // The operator's edit of the ConfigMap for this site. The port stays the container's; the
      // interface is loopback here, not the pod's own network namespace.
      const port = await freePort();
      const url = new URL(fx.db.url);
      const dbPassword = decodeURIComponent(url.password);
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
      for (const volume of pod.volumes as Doc[]) {
        const mount = (container.volumeMounts as Doc[]).find((m) => m.name === volume.name)!;
        const at = join(fx.dir, 'pod', volume.name as string);
        await mkdir(at, { recursive: true });
        mounts.set(mount.mountPath as string, at);
        if (volume.secret) {
          const values: Record<string, string> = { wine_api_password: fx.sim.password, database_password: dbPassword };
          for (const item of volume.secret.items as Doc[]) {
            const file = join(at, item.path as string);
            await writeFile(file, values[item.key as string]!);
            await chown(file, 0, fsGroup);
            await chmod(file, (volume.secret.defaultMode as number) | 0o040);
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
      const envOf = (c: Doc, data: Record<string, string>) =>
        Object.fromEntries(
          Object.entries({
            PATH: '/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin',
            HOSTNAME: 'wine-recon-sync-0',
            ...image,
            ...data,
            // env: overrides envFrom: (kubelet).
            ...Object.fromEntries((c.env as Doc[]).map((e) => [e.name as string, e.value as string])),
          }).map(([k, v]) => [k, inPod(v)]),
        );
      // The image's ENTRYPOINT (/app/bin/wine-recon-sync, WORKDIR /app): this checkout.
      const bin = join(ROOT, 'bin', 'wine-recon-sync');

      const env = envOf(container, config);
      const daemon = startAs(who, bin, container.args as string[], env, ROOT);
      try {
        const finished = await daemon.waitForLog(/"sync finished"/, 120_000);
        expect(JSON.parse(finished)).toMatchObject({ status: 'succeeded' });
        const [count] = await fx.db.rows<{ n: string }>('SELECT count(*) AS n FROM bulk_wine_reconciliation');
        expect(Number(count?.n)).toBe(RECORDS);
        for (const probe of ['startupProbe', 'livenessProbe', 'readinessProbe']) {
          const answer = await fetch(`http://127.0.0.1:${port}${container[probe].httpGet.path as string}`);
          expect(answer.status, probe).toBe(200);
        }
        const health = await runAs(who, bin, ['healthcheck'], env, ROOT);
        expect(health.code, health.stderr).toBe(0);

        const graceBy = Date.now() + (pod.terminationGracePeriodSeconds as number) * 1000;
        daemon.kill('SIGTERM');
        const exit = await daemon.result;
        expect(Date.now()).toBeLessThan(graceBy);
        expect(exit.code, exit.stderr).toBe(0);
      } finally {
        daemon.kill('SIGKILL');
        await daemon.result;
      }

      // The CronJob's container, with the same volumes and settings: one run, exit 0.
      const cronPod = kind(await build(join(DIR, 'cronjob')), 'CronJob').spec.jobTemplate.spec.template.spec;
      const cronContainer = cronPod.containers[0] as Doc;
      const run = await runAs(who, bin, cronContainer.args as string[], envOf(cronContainer, config), ROOT, 120_000);
      expect(run.code, run.stderr).toBe(0);
      const runs = await fx.db.rows<{ status: string }>('SELECT status FROM sync_runs ORDER BY id');
      expect(runs).toEqual([{ status: 'succeeded' }, { status: 'succeeded' }]);

      expect(await ownedOutside(uid, ['/tmp', '/var/tmp', '/dev/shm', ROOT, fx.dir], writable)).toEqual([]);
    },
    240_000,
  );
});
