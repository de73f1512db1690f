/** The HTTPS and proxy tests' outside parts: a test PKI made with openssl, and Debian's tinyproxy. */
import { execFile, spawn, type ChildProcess } from 'node:child_process';
import { existsSync } from 'node:fs';
import { readFile, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { freePort } from './global-setup.js';

const run = promisify(execFile);

export interface TestPki {
  /** PEM file of the test certificate authority (for NODE_EXTRA_CA_CERTS). */
  caFile: string;
  /** Server key and certificates (PEM), all for 127.0.0.1 and localhost unless said otherwise. */
  valid: { key: Buffer; cert: Buffer };
  expired: { key: Buffer; cert: Buffer };
  /** Valid and signed by the CA, but for wrong.example.com only. */
  wrongHost: { key: Buffer; cert: Buffer };
}

/** A certificate authority and three server certificates, made with openssl in `dir`. */
export async function makeTestPki(openssl: string, dir: string): Promise<TestPki> {
  const file = (name: string) => join(dir, name);
  await writeFile(file('index.txt'), '');
  await writeFile(file('serial'), '1000\n');
  // `openssl ca` is the one openssl 3.0 command that sets arbitrary validity dates (the expired case).
  await writeFile(
    file('ca.cnf'),
    [
      '[ca]',
      'default_ca = test_ca',
      '[test_ca]',
      `database = ${file('index.txt')}`,
      `new_certs_dir = ${dir}`,
      `serial = ${file('serial')}`,
      'default_md = sha256',
      'policy = any_name',
      'copy_extensions = copy',
      'unique_subject = no',
      '[any_name]',
      'commonName = supplied',
      '',
    ].join('\n'),
  );
  await run(openssl, [
    'req',
    '-x509',
    '-newkey',
    'ec',
    '-pkeyopt',
    'ec_paramgen_curve:P-256',
    '-nodes',
    '-days',
    '30',
    '-subj',
    '/CN=wine-recon-sync test CA',
    '-keyout',
    file('ca.key'),
    '-out',
    file('ca.pem'),
    '-addext',
    'basicConstraints=critical,CA:TRUE',
    '-addext',
    'keyUsage=critical,keyCertSign,cRLSign',
  ]);
  const server = (name: string, cn: string, san: string, dates: string[]) =>
    issueServerCertificate(openssl, dir, name, cn, san, dates);
  const local = 'IP:127.0.0.1,DNS:localhost';
  return {
    caFile: file('ca.pem'),
    valid: await server('valid', 'localhost', local, ['-days', '30']),
    expired: await server('expired', 'localhost', local, [
      '-startdate',
      '20200101000000Z',
      '-enddate',
      '20210101000000Z',
    ]),
    wrongHost: await server('wrong-host', 'wrong.example.com', 'DNS:wrong.example.com', ['-days', '30']),
  };
}

/** A server key and certificate signed by the CA that makeTestPki made in `dir`. */
export async function issueServerCertificate(
  openssl: string,
  dir: string,
  name: string,
  cn: string,
  san: string,
  dates: string[] = ['-days', '30'],
): Promise<{ key: Buffer; cert: Buffer }> {
  const file = (f: string) => join(dir, f);
  await run(openssl, [
    'req',
    '-newkey',
    'ec',
    '-pkeyopt',
    'ec_paramgen_curve:P-256',
    '-nodes',
    '-subj',
    `/CN=${cn}`,
    '-keyout',
    file(`${name}.key`),
    '-out',
    file(`${name}.csr`),
    '-addext',
    `subjectAltName=${san}`,
    '-addext',
    'basicConstraints=critical,CA:FALSE',
    '-addext',
    'keyUsage=critical,digitalSignature',
    '-addext',
    'extendedKeyUsage=serverAuth',
  ]);
  await run(openssl, [
    'ca',
    '-batch',
    '-notext',
    '-config',
    file('ca.cnf'),
    '-cert',
    file('ca.pem'),
    '-keyfile',
    file('ca.key'),
    '-in',
    file(`${name}.csr`),
    '-out',
    file(`${name}.pem`),
    ...dates,
  ]);
  return { key: await readFile(file(`${name}.key`)), cert: await readFile(file(`${name}.pem`)) };
}

export interface Tinyproxy {
  url: string;
  /** Its log so far. */
  log(): Promise<string>;
  stop(): Promise<void>;
}

/** Debian's tinyproxy on a free loopback port, in the foreground, allowing CONNECT only to `connectPorts`. */
export async function startTinyproxy(
  binary: string,
  dir: string,
  options: { connectPorts: number[]; basicAuth?: { user: string; password: string } },
): Promise<Tinyproxy> {
  const port = await freePort();
  const logFile = join(dir, `tinyproxy-${port}.log`);
  const config = [
    `Port ${port}`,
    'Listen 127.0.0.1',
    'Timeout 60',
    'MaxClients 50',
    'Allow 127.0.0.1',
    `LogFile "${logFile}"`,
    // Connect level logs every request line, CONNECT host:port included: the proof that a request passed.
    'LogLevel Connect',
    ...options.connectPorts.map((p) => `ConnectPort ${p}`),
    ...(options.basicAuth ? [`BasicAuth ${options.basicAuth.user} ${options.basicAuth.password}`] : []),
    '',
  ].join('\n');
  const configFile = join(dir, `tinyproxy-${port}.conf`);
  await writeFile(configFile, config);
  const child: ChildProcess = spawn(binary, ['-d', '-c', configFile], { stdio: ['ignore', 'ignore', 'pipe'] });
  let stderr = '';
  child.stderr?.on('data', (d: Buffer) => (stderr += d.toString()));
  await waitForPort('tinyproxy', port, child, () => stderr);
  return {
    url: `http://127.0.0.1:${port}`,
    log: async () => (existsSync(logFile) ? readFile(logFile, 'utf8') : ''),
    stop: () =>
      new Promise<void>((resolve) => {
        if (child.exitCode !== null || child.signalCode !== null) return resolve();
        child.once('exit', () => resolve());
        child.kill('SIGTERM');
        setTimeout(() => child.kill('SIGKILL'), 5000).unref();
      }),
  };
}

/** Resolves once `port` on 127.0.0.1 accepts connections; fails if `child` exits first. */
export async function waitForPort(
  name: string,
  port: number,
  child: ChildProcess,
  stderr: () => string,
): Promise<void> {
  const { connect } = await import('node:net');
  const deadline = Date.now() + 30_000;
  for (;;) {
    if (child.exitCode !== null) throw new Error(`${name} exited with ${child.exitCode}: ${stderr()}`);
    const open = await new Promise<boolean>((resolve) => {
      const socket = connect(port, '127.0.0.1', () => {
        socket.destroy();
        resolve(true);
      });
      socket.once('error', () => resolve(false));
    });
    if (open) return;
    if (Date.now() > deadline) throw new Error(`${name} did not listen on ${port} within 30 s: ${stderr()}`);
    await new Promise((r) => setTimeout(r, 100));
  }
}
