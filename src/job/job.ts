/**
 * The Job: what one copy of the listing into one schema runs with (configuration, logger, secret
 * registry, pool, API client), built here and nowhere else, and handed to the commands and the
 * daemon. Two upstream accounts in one process would be two Jobs (docs/internals.md).
 */
import { readFileSync } from 'node:fs';
import { loadConfig, type Config, type ConfigNeeds } from '../config.js';
import { createPool, type Pool } from '../db/pool.js';
import type { WineApi, WineApiOptions } from '../extract/http/api.js';
import { createLogger, type Logger } from '../log.js';
import { SecretRegistry, urlSecrets } from '../text/secret-registry.js';
import { proxySecrets } from '../outbound/proxy-env.js';
import { readSetting } from '../settings/read.js';

/** Where a Job reads its settings and writes its log. */
export interface JobIo {
  env: Record<string, string | undefined>;
  stderr: NodeJS.WritableStream;
  /** Where the log goes instead of stderr (the demo's file, so that it never mixes with its summaries). */
  log?: NodeJS.WritableStream;
}

export interface Job {
  config: Config;
  log: Logger;
  secrets: SecretRegistry;
  pool: Pool;
  /**
   * The API client, made on the first call and the same one after (the daemon reuses its token
   * between runs); undefined when the command has no API settings. got and its dependencies are
   * loaded only then, not by `run --from-file` or `replay`.
   */
  api(options?: Pick<WineApiOptions, 'onDownloadProgress'>): Promise<WineApi | undefined>;
  close(): Promise<void>;
}

/** The Job of a command; throws ConfigError (exit 2) naming each bad variable. */
export function openJob(io: JobIo, needs: ConfigNeeds, overrides: Partial<Config> = {}): Job {
  const config = { ...loadConfig(io.env, needs), ...overrides };
  const secrets = new SecretRegistry();
  secrets.add(config.api?.password);
  for (const value of urlSecrets(config.databaseUrl)) secrets.add(value);
  // As read at start; a rotated one never reaches a message either (neither pg's nor ours carry it).
  secrets.add(config.database?.libpq?.password);
  if (config.database?.passwordFile) secrets.add(readSecret(config.database.passwordFile));
  for (const value of proxySecrets(config.proxy)) secrets.add(value);
  secrets.add(config.ui.token);
  secrets.add(config.openLineage?.apiKey);
  const log = createLogger({
    level: config.logLevel,
    secrets,
    debug: readSetting(io.env, 'DEBUG', []),
    color: !config.noColor,
    destination: io.log,
  });
  const pool = createPool({
    databaseUrl: config.databaseUrl!,
    connection: config.database,
    schema: config.schema,
    lockTimeoutMs: config.lockTimeoutMs,
    onError: (err) => log.warn({ err }, 'idle database connection failed'),
  });
  let api: Promise<WineApi | undefined> | undefined;
  return {
    config,
    log,
    secrets,
    pool,
    api: (options = {}) => (api ??= newApi(config, log, secrets, options)),
    close: () => pool.end(),
  };
}

async function newApi(
  config: Config,
  log: Logger,
  secrets: SecretRegistry,
  options: Pick<WineApiOptions, 'onDownloadProgress'>,
): Promise<WineApi | undefined> {
  if (!config.api) return undefined;
  const { WineApi } = await import('../extract/http/api.js');
  return new WineApi(config.api, log.child({ step: 'extract' }), secrets, {
    retryBaseMs: config.retryBaseMs,
    proxy: config.proxy,
    ...options,
  });
}

function readSecret(file: string): string | undefined {
  try {
    return readFileSync(file, 'utf8').replace(/\r?\n$/, '') || undefined;
  } catch {
    return undefined;
  }
}
