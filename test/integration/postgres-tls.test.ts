/**
 * TLS to PostgreSQL as libpq means it, against Debian's PostgreSQL 15 with `ssl = on` and a private
 * CA, driven through the real CLI (`migrate`): every sslmode, libpq's PG* variables when the URL is
 * silent, client certificates, and the sentence a TLS failure gets (host, sslmode, setting).
 */
import { randomBytes } from 'node:crypto';
import { readFile, rm } from 'node:fs/promises';
import { join } from 'node:path';
import type pg from 'pg';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { runCli, tempDir, type CliResult } from '../support/harness.js';
import { describeWith, runs } from '../support/programs.js';
import { hasPg15, issueClientCertificate, startStockPostgres, type StockPostgres } from '../support/stock-postgres.js';
import { issueServerCertificate, makeTestPki } from '../support/tls-and-proxy.js';

const OPENSSL = 'openssl';

describeWith(
  'openssl and PostgreSQL 15 (/usr/lib/postgresql/15/bin)',
  runs(OPENSSL, ['version']) && hasPg15(),
  'sslmode as libpq means it',
  () => {
    /** ssl = on, its certificate for DNS:localhost only (not 127.0.0.1), TCP only over TLS. */
    let tlsServer: StockPostgres;
    /** ssl = off. */
    let plainServer: StockPostgres;
    let caFile: string;
    let otherCaFile: string;
    let client: { certFile: string; keyFile: string };
    const admins: pg.Client[] = [];
    const dirs: string[] = [];

    beforeAll(async () => {
      const dir = await tempDir();
      dirs.push(dir);
      const pki = await makeTestPki(OPENSSL, dir);
      caFile = pki.caFile;
      const server = await issueServerCertificate(OPENSSL, dir, 'pg-server', 'localhost', 'DNS:localhost');
      client = await issueClientCertificate(OPENSSL, dir, 'certuser');
      const otherDir = await tempDir();
      dirs.push(otherDir);
      otherCaFile = (await makeTestPki(OPENSSL, otherDir)).caFile;
      [tlsServer, plainServer] = await Promise.all([
        startStockPostgres({
          conf: ['ssl = on', "ssl_cert_file = 'server.crt'", "ssl_key_file = 'server.key'", "ssl_ca_file = 'ca.pem'"],
          hba: [
            'hostssl all certuser 127.0.0.1/32 cert',
            'hostssl all scramuser 127.0.0.1/32 scram-sha-256',
            'hostssl all all 127.0.0.1/32 trust',
          ],
          files: { 'server.crt': server.cert, 'server.key': server.key, 'ca.pem': await readFile(caFile) },
        }),
        startStockPostgres({ conf: ['ssl = off'] }),
      ]);
      const admin = await tlsServer.admin();
      admins.push(admin);
      await admin.query(
        "CREATE ROLE certuser LOGIN SUPERUSER; CREATE ROLE scramuser LOGIN SUPERUSER PASSWORD 'scram-pw-1'",
      );
    }, 120_000);

    afterAll(async () => {
      await Promise.all(admins.map((a) => a.end()));
      await Promise.all([tlsServer?.stop(), plainServer?.stop()]);
      await Promise.all(dirs.map((d) => rm(d, { recursive: true, force: true })));
    });

    /**
     * `wine-recon-sync migrate` with this environment, into a schema of its own; no driver warning on stderr, whatever
     * the outcome.
     */
    async function migrate(env: Record<string, string>): Promise<CliResult> {
      const result = await runCli(['migrate'], {
        SYNC_DB_SCHEMA: `tls_${randomBytes(3).toString('hex')}`,
        LOG_LEVEL: 'warn',
        ...env,
      });
      expect(result.stderr).not.toMatch(/warning|deprecat/i);
      return result;
    }

    function succeeded(result: CliResult): void {
      expect(result.stderr).toBe('');
      expect(result.code).toBe(0);
      expect(result.stdout).toMatch(/^applied 0001_init/);
    }

    it('disable: a server that accepts only TLS (hostssl) refuses, and the message says to use sslmode=require', async () => {
      const result = await migrate({ DATABASE_URL: tlsServer.url('postgres', { params: { sslmode: 'disable' } }) });
      expect(result.code).toBe(2);
      expect(result.stderr).toContain(
        `cannot connect to the database at DATABASE_URL (host 127.0.0.1:${tlsServer.port}` +
          `, sslmode=disable, from DATABASE_URL)`,
      );
      expect(result.stderr).toMatch(/no pg_hba\.conf entry .* no encryption/);
      expect(result.stderr).toContain(
        'if the server accepts only TLS connections (hostssl), set sslmode= in DATABASE_URL or PGSSLMODE to require or stronger',
      );
    });

    it("prefer (libpq's default, nothing said): TLS where the server offers it, none where it has none", async () => {
      succeeded(await migrate({ DATABASE_URL: tlsServer.url('postgres') }));
      succeeded(await migrate({ DATABASE_URL: plainServer.url('postgres') }));
      succeeded(await migrate({ DATABASE_URL: plainServer.url('postgres', { params: { sslmode: 'prefer' } }) }));
    });

    it('prefer: a TLS attempt that fails is made again without TLS, as libpq does; when that is refused too, both failures are told', async () => {
      succeeded(await migrate({ DATABASE_URL: plainServer.url('postgres'), PGSSLROOTCERT: otherCaFile }));
      const result = await migrate({ DATABASE_URL: tlsServer.url('postgres'), PGSSLROOTCERT: otherCaFile });
      expect(result.code).toBe(2);
      expect(result.stderr).toMatch(
        /^Error: cannot connect to the database at DATABASE_URL \(host 127\.0\.0\.1:\d+, sslmode=prefer, from libpq's default\): the server refused the connection \(no pg_hba\.conf entry .*no encryption\); if the server accepts only TLS connections \(hostssl\), set sslmode= in DATABASE_URL or PGSSLMODE to require or stronger \(sslmode=prefer tried TLS first: .* the server's certificate is not signed by the CA in .* \(PGSSLROOTCERT\)/,
      );
    });

    it('require: encrypts without verifying, as psql does (a CA nobody gave, a name the certificate lacks)', async () => {
      succeeded(await migrate({ DATABASE_URL: tlsServer.url('postgres', { params: { sslmode: 'require' } }) }));
    });

    it('require against a server without TLS fails, naming the host, the mode and what to change', async () => {
      const result = await migrate({
        DATABASE_URL: plainServer.url('postgres', { password: 'pw-never-shown', params: { sslmode: 'require' } }),
      });
      expect(result.code).toBe(2);
      expect(result.stderr).not.toContain('pw-never-shown');
      expect(result.stderr).toBe(
        `Error: cannot connect to the database at DATABASE_URL` +
          ` (host 127.0.0.1:${plainServer.port}, sslmode=require, from DATABASE_URL)` +
          `: the server does not accept TLS connections (its ssl setting is off), and sslmode=require requires TLS` +
          `; turn ssl on at the server` +
          `, or set sslmode= in DATABASE_URL or PGSSLMODE to disable if an unencrypted connection is acceptable\n`,
      );
    });

    it('require with a root certificate verifies the CA, as libpq does', async () => {
      succeeded(
        await migrate({
          DATABASE_URL: tlsServer.url('postgres', { params: { sslmode: 'require', sslrootcert: caFile } }),
        }),
      );
      const wrong = await migrate({
        DATABASE_URL: tlsServer.url('postgres', {
          password: 'pw-never-shown',
          params: { sslmode: 'require', sslrootcert: otherCaFile },
        }),
      });
      expect(wrong.code).toBe(2);
      expect(wrong.stderr).not.toContain('pw-never-shown');
      expect(wrong.stderr).toContain("the server's certificate is not signed by the CA in");
    });

    it('verify-ca: the right CA works by IP address (the name is not checked); a wrong CA fails with a sentence that says what to change', async () => {
      succeeded(
        await migrate({
          DATABASE_URL: tlsServer.url('postgres', { params: { sslmode: 'verify-ca', sslrootcert: caFile } }),
        }),
      );
      const result = await migrate({
        DATABASE_URL: tlsServer.url('postgres', { params: { sslmode: 'verify-ca', sslrootcert: otherCaFile } }),
      });
      expect(result.code).toBe(2);
      // OpenSSL's code depends on the chain the server sends (SELF_SIGNED_CERT_IN_CHAIN,
      // UNABLE_TO_VERIFY_LEAF_SIGNATURE).
      expect(result.stderr.replace(/\((SELF_SIGNED_CERT_IN_CHAIN|UNABLE_TO_VERIFY_LEAF_SIGNATURE)\)/, '(CODE)')).toBe(
        `Error: cannot connect to the database at DATABASE_URL` +
          ` (host 127.0.0.1:${tlsServer.port}, sslmode=verify-ca, from DATABASE_URL)` +
          `: the server's certificate is not signed by the CA in ${otherCaFile}` +
          ` (sslrootcert= in DATABASE_URL) (CODE)` +
          `; give the certificate of the CA that signed it with sslrootcert= in DATABASE_URL or PGSSLROOTCERT\n`,
      );
    });

    it('verify-full: a host name the certificate lacks fails and points to the name or verify-ca; the right name works', async () => {
      const mismatch = await migrate({
        DATABASE_URL: tlsServer.url('postgres', { params: { sslmode: 'verify-full', sslrootcert: caFile } }),
      });
      expect(mismatch.code).toBe(2);
      expect(mismatch.stderr).toContain(
        `(host 127.0.0.1:${tlsServer.port}, sslmode=verify-full, from DATABASE_URL)` +
          `: the server's certificate is not issued for 127.0.0.1 (it names DNS:localhost)` +
          `; use a host name the certificate names in DATABASE_URL, or set sslmode= in DATABASE_URL or PGSSLMODE to verify-ca`,
      );
      succeeded(
        await migrate({
          DATABASE_URL: tlsServer.url('postgres', {
            host: 'localhost',
            params: { sslmode: 'verify-full', sslrootcert: caFile },
          }),
        }),
      );
    });

    it('several hosts: the TLS settings apply to each, every host verified under its own name', async () => {
      const params = { sslmode: 'verify-full', sslrootcert: caFile };
      // The certificate names localhost only: 127.0.0.1 is passed over, localhost (the same server) taken.
      succeeded(
        await migrate({
          DATABASE_URL: tlsServer.url('postgres', { host: `127.0.0.1:${tlsServer.port},localhost`, params }),
        }),
      );
      const neither = await migrate({
        DATABASE_URL: tlsServer.url('postgres', { host: `127.0.0.1:${tlsServer.port},127.0.0.1`, params }),
      });
      expect(neither.code).toBe(2);
      const line =
        `(host 127.0.0.1:${tlsServer.port}, sslmode=verify-full, from DATABASE_URL)` +
        `: the server's certificate is not issued for 127.0.0.1`;
      expect(neither.stderr).toContain('cannot connect to the database at DATABASE_URL: no host accepted a connection');
      expect(neither.stderr.split(line).length - 1).toBe(2);
    });

    it('verify-full without a root certificate is a configuration error naming sslrootcert', async () => {
      const result = await migrate({
        DATABASE_URL: tlsServer.url('postgres', { host: 'localhost', params: { sslmode: 'verify-full' } }),
      });
      expect(result.code).toBe(2);
      expect(result.stderr).toContain(
        "sslmode= in DATABASE_URL: sslmode=verify-full verifies the server's certificate against a CA: give the CA certificate with sslrootcert=/path/ca.pem in DATABASE_URL or PGSSLROOTCERT",
      );
    });

    it("libpq's PGSSLMODE and PGSSLROOTCERT apply where the URL is silent, and the URL wins where it speaks", async () => {
      succeeded(
        await migrate({
          DATABASE_URL: tlsServer.url('postgres', { host: 'localhost' }),
          PGSSLMODE: 'verify-full',
          PGSSLROOTCERT: caFile,
        }),
      );
      const wrong = await migrate({
        DATABASE_URL: tlsServer.url('postgres', { host: 'localhost' }),
        PGSSLMODE: 'verify-full',
        PGSSLROOTCERT: otherCaFile,
      });
      expect(wrong.code).toBe(2);
      expect(wrong.stderr).toContain(
        `(host localhost:${tlsServer.port}, sslmode=verify-full, from PGSSLMODE)` +
          `: the server's certificate is not signed by the CA in ${otherCaFile} (PGSSLROOTCERT)`,
      );
      const disabled = await migrate({ DATABASE_URL: plainServer.url('postgres'), PGSSLMODE: 'require' });
      expect(disabled.code).toBe(2);
      expect(disabled.stderr).toContain('sslmode=require, from PGSSLMODE');
      succeeded(
        await migrate({
          DATABASE_URL: plainServer.url('postgres', { params: { sslmode: 'disable' } }),
          PGSSLMODE: 'require',
        }),
      );
      const bad = await migrate({ DATABASE_URL: plainServer.url('postgres'), PGSSLMODE: 'allow' });
      expect(bad.code).toBe(2);
      expect(bad.stderr).toContain(
        'PGSSLMODE: must be one of disable, prefer, require, verify-ca, verify-full (allow is not supported',
      );
    });

    it("a URL as Neon's console gives it (sslmode=require&channel_binding=require) logs in with SCRAM over TLS", async () => {
      succeeded(
        await migrate({
          DATABASE_URL: tlsServer.url('scramuser', {
            password: 'scram-pw-1',
            params: { sslmode: 'require', channel_binding: 'require' },
          }),
        }),
      );
    });

    it('client certificates: sslcert and sslkey from the URL or PGSSLCERT/PGSSLKEY log in a `cert` role; without them the server refuses', async () => {
      const url = (params: Record<string, string>) =>
        tlsServer.url('certuser', {
          host: 'localhost',
          params: { sslmode: 'verify-full', sslrootcert: caFile, ...params },
        });
      succeeded(await migrate({ DATABASE_URL: url({ sslcert: client.certFile, sslkey: client.keyFile }) }));
      succeeded(await migrate({ DATABASE_URL: url({}), PGSSLCERT: client.certFile, PGSSLKEY: client.keyFile }));
      const refused = await migrate({ DATABASE_URL: url({}) });
      expect(refused.code).toBe(2);
      expect(refused.stderr).toContain(
        `cannot connect to the database at DATABASE_URL (host localhost:${tlsServer.port}` +
          `, sslmode=verify-full, from DATABASE_URL): the server refused the connection`,
      );
      const missing = await migrate({
        DATABASE_URL: url({ sslcert: join(client.certFile, 'nope'), sslkey: client.keyFile }),
      });
      expect(missing.code).toBe(2);
      expect(missing.stderr).toContain(
        `sslcert= in DATABASE_URL: cannot read ${join(client.certFile, 'nope')} (ENOTDIR)`,
      );
    });
  },
);
