/**
 * How each new database connection is made. Rule: settings are read again for every connection, so
 * a rotated secret is used without a restart.
 */
import { readFileSync } from 'node:fs';
import type { ConnectionOptions } from 'node:tls';
import pg from 'pg';
import { ConfigError } from '../errors.js';
import {
  explainConnectFailure,
  failure,
  NoHostAccepted,
  PreferWithoutTls,
  type Attempt,
  type PassedOver,
} from './connection-errors.js';
import { checkRole, needsSearch, searchHosts } from './host-search.js';
import {
  resolveTarget,
  SettingsProblem,
  type DatabaseSettings,
  type Endpoint,
  type Target,
} from '../outbound/database-url.js';

export type { DatabaseSettings } from '../outbound/database-url.js';

type PgClientClass = new (config: pg.ClientConfig) => pg.Client;

/** How long each host of a several-host URL is given to answer when connect_timeout does not say. */
const HOST_TIMEOUT_MS = 10_000;

export class Connector {
  /** Under sslmode=prefer, the server refused TLS: later connections go without it, as libpq's retry does. */
  private preferPlain = false;
  /** For pg.Pool's `Client` option: pg.Pool constructs one per new connection. */
  readonly Client: PgClientClass;

  constructor(private readonly settings: DatabaseSettings) {
    const connector = this;
    this.Client = class SyncClient extends pg.Client {
      readonly #attempt: Attempt;
      readonly #poolConfig: pg.ClientConfig;

      constructor(poolConfig: pg.ClientConfig) {
        // pg.Pool calls this where a throw would escape its callbacks: a failure waits for connect().
        const attempt = connector.plan();
        super({ ...poolConfig, ...attempt.config });
        this.#attempt = attempt;
        this.#poolConfig = poolConfig;
      }

      override connect(): Promise<pg.Client>;
      override connect(callback: (err: Error) => void): void;
      override connect(callback?: (err: Error) => void): Promise<pg.Client> | void {
        if (callback === undefined) {
          return new Promise((resolve, reject) => this.connect((err) => (err ? reject(err) : resolve(this))));
        }
        const attempt = this.#attempt;
        if (attempt.failure) {
          process.nextTick(callback, attempt.failure);
          return;
        }
        if (!needsSearch(attempt.target!)) {
          super.connect((err: Error | null) => callback((err ? explainConnectFailure(err, attempt) : err) as Error));
          return;
        }
        this.#connectSearching(attempt).then(() => callback(null as unknown as Error), callback);
      }

      /** The first host that suits target_session_attrs, found with connections of their own, then this one to it. */
      async #connectSearching(attempt: Attempt): Promise<void> {
        const target = attempt.target!;
        const explain = (error: Error, endpoint: Endpoint) => explainConnectFailure(error, { ...attempt, endpoint });
        let endpoint = target.hosts[0]!;
        let passedOver: PassedOver[] = [];
        // With one host there is nothing to choose: this client checks it itself.
        if (target.hosts.length > 1) {
          ({ endpoint, passedOver } = await searchHosts(
            target,
            (e, wanted) => connector.probe(this.#poolConfig, attempt, e, wanted),
            explain,
          ));
        }
        this.host = endpoint.host ?? pg.defaults.host!;
        this.port = endpoint.port ?? pg.defaults.port!;
        const wanted = target.sessionAttrs === 'prefer-standby' ? 'any' : target.sessionAttrs;
        let reason: string | undefined;
        // Connected but not yet handed to the pool, this client has no 'error' listener of the pool's:
        // a server that dies during the role check must reject the check, not crash the process.
        const quiet = () => undefined;
        this.on('error', quiet);
        try {
          await new Promise<void>((resolve, reject) =>
            super.connect((err: Error | null) => (err ? reject(err) : resolve())),
          );
          // The roles may have changed since the search looked (a promotion in between).
          reason = await checkRole(this, wanted);
        } catch (error) {
          const explained = explain(error as Error, endpoint);
          if (explained instanceof PreferWithoutTls || target.hosts.length === 1) throw explained;
          await this.end().catch(() => undefined);
          throw new NoHostAccepted(target, [...passedOver, failure(endpoint, explained)]);
        } finally {
          this.off('error', quiet);
        }
        if (reason !== undefined) {
          await this.end().catch(() => undefined);
          throw new NoHostAccepted(target, [...passedOver, { endpoint, reason, code: undefined, configError: false }]);
        }
      }
    };
  }

  /** A client of `pool`; under sslmode=prefer, once more without TLS when the server refused it. */
  async connect(pool: pg.Pool): Promise<pg.PoolClient> {
    try {
      return await pool.connect();
    } catch (error) {
      if (!(error instanceof PreferWithoutTls)) throw error;
      this.preferPlain = true;
      try {
        return await pool.connect();
      } catch (plainError) {
        throw error.without(plainError);
      }
    }
  }

  /**
   * Whether `endpoint` suits `wanted`: the reason it is passed over, or undefined; a connection of
   * its own, closed again. Throws pg's error when it cannot connect.
   */
  async probe(
    poolConfig: pg.ClientConfig,
    attempt: Attempt,
    endpoint: Endpoint,
    wanted: Parameters<typeof checkRole>[1],
  ): Promise<string | undefined> {
    const timeoutMs = attempt.target!.connectTimeoutMs ?? HOST_TIMEOUT_MS;
    const client = new pg.Client({
      ...poolConfig,
      ...attempt.config,
      host: endpoint.host,
      port: endpoint.port,
      connectionTimeoutMillis: timeoutMs,
    });
    // Set before pg's own timer of the same length, so it has fired when pg reports the timeout.
    let timedOut = false;
    const timer = setTimeout(() => (timedOut = true), timeoutMs);
    client.on('error', () => undefined);
    try {
      await client.connect();
      return await checkRole(client, wanted);
    } catch (error) {
      if (timedOut) return `did not answer within ${timeoutMs / 1000} s (connect_timeout)`;
      throw error;
    } finally {
      clearTimeout(timer);
      await client.end().catch(() => undefined);
    }
  }

  /** This connection's pg settings, read afresh; never throws (see the constructor above). */
  plan(): Attempt {
    let target: Target | undefined;
    try {
      target = resolveTarget(this.currentUrl(), this.settings);
      const ssl = this.tlsOptions(target);
      const endpoint = target.hosts[0]!;
      const config: pg.ClientConfig = {
        host: endpoint.host,
        port: endpoint.port,
        user: target.user,
        database: target.database,
        ssl,
        // Asked for only when the server wants a password: read then, from the file when there is one.
        password: () => this.password(target!),
        ...(target.applicationName === undefined ? {} : { application_name: target.applicationName }),
        ...(target.options === undefined ? {} : { options: target.options }),
        ...(target.channelBinding ? { enableChannelBinding: true } : {}),
        ...(target.connectTimeoutMs === undefined ? {} : { connectionTimeoutMillis: target.connectTimeoutMs }),
      };
      return { target, endpoint, tls: ssl !== false, config, failure: undefined };
    } catch (error) {
      const failure =
        error instanceof ConfigError
          ? error
          : new ConfigError(error instanceof SettingsProblem ? error.message : String(error));
      return { target, endpoint: undefined, tls: false, config: { ssl: false }, failure };
    }
  }

  private currentUrl(): string {
    const file = this.settings.urlFile;
    return file === undefined ? this.settings.url : readSecretFile('DATABASE_URL_FILE', file);
  }

  private password(target: Target): string {
    const file = this.settings.passwordFile;
    const password =
      file === undefined
        ? (target.password ?? this.settings.libpq?.password)
        : readSecretFile('DATABASE_PASSWORD_FILE', file);
    if (password === undefined) {
      throw new ConfigError(
        `the database server at ${target.urlVariable} asks for a password and none is set: put it in ` +
          `${target.urlVariable}, DATABASE_PASSWORD_FILE or PGPASSWORD`,
      );
    }
    return password;
  }

  /** libpq's sslmode as Node's TLS options; false: no TLS. */
  private tlsOptions(target: Target): false | ConnectionOptions {
    const { mode, rootcert, cert, key } = target.ssl;
    if (mode === 'disable' || (mode === 'prefer' && this.preferPlain)) return false;
    const file = (setting: { value: string; from: string }, name: string) =>
      readSettingFile(name, setting, target.urlVariable);
    const ca = rootcert && rootcert.value !== 'system' ? file(rootcert, 'sslrootcert') : undefined;
    // libpq verifies the chain under require (and prefer) too when a root certificate is given.
    const verify = mode === 'verify-ca' || mode === 'verify-full' || rootcert !== undefined;
    return {
      rejectUnauthorized: verify,
      ...(ca === undefined ? {} : { ca }),
      ...(cert && key ? { cert: file(cert, 'sslcert'), key: file(key, 'sslkey') } : {}),
      // Only verify-full checks that the certificate names the host.
      ...(mode === 'verify-full' ? {} : { checkServerIdentity: () => undefined }),
    };
  }
}

/** A file holding a secret (the URL, the password): its content without the final newline. */
function readSecretFile(variable: string, file: string): string {
  let text: string;
  try {
    text = readFileSync(file, 'utf8').replace(/\r?\n$/, '');
  } catch (error) {
    throw new ConfigError(`${variable}: cannot read ${file} (${(error as NodeJS.ErrnoException).code ?? 'error'})`);
  }
  if (text === '') throw new ConfigError(`${variable}: the file ${file} is empty`);
  return text;
}

function readSettingFile(name: string, setting: { value: string; from: string }, urlVariable: string): string {
  try {
    return readFileSync(setting.value, 'utf8');
  } catch (error) {
    const where = setting.from === urlVariable ? `${name}= in ${urlVariable}` : setting.from;
    throw new ConfigError(
      `${where}: cannot read ${setting.value} (${(error as NodeJS.ErrnoException).code ?? 'error'})`,
    );
  }
}
