/** What every command needs: validated config, the logger with its secrets, the pool. */
import { readFileSync } from 'node:fs';
import { loadConfig, type Config, type ConfigNeeds } from '../config.js';
import { createPool, type Pool } from '../db/pool.js';
import type { WineApi, WineApiOptions } from '../extract/http/api.js';
import { createLogger, type Logger } from '../log.js';
import { SecretRegistry, urlSecrets } from '../text/secret-registry.js';
import { proxySecrets } from '../outbound/proxy-env.js';

export interface Io {
  env: Record<string, string | undefined>;
  stdout: NodeJS.WritableStream;
  stderr: NodeJS.WritableStream;
  /** Where the log goes instead of stderr (the demo's file, so that it never mixes with its summaries). */
  log?: NodeJS.WritableStream;
}

export interface Context {
  config: Config;
  log: Logger;
  secrets: SecretRegistry;
  pool: Pool;
  close(): Promise<void>;
}

/** Config, logger and pool for a command; throws ConfigError (exit 2) naming each bad variable. */
export function openContext(io: Io, needs: ConfigNeeds, overrides: Partial<Config> = {}): Context {
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
    debug: Boolean(io.env.DEBUG),
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
  return { config, log, secrets, pool, close: () => pool.end() };
}

/**
 * The API client; loaded (got and its dependencies) only by commands that call the API, not by `run --from-file` or
 * `replay`.
 */
export async function newApi(
  ctx: Context,
  options: Pick<WineApiOptions, 'onDownloadProgress'> = {},
): Promise<WineApi | undefined> {
  if (!ctx.config.api) return undefined;
  const { WineApi } = await import('../extract/http/api.js');
  return new WineApi(ctx.config.api, ctx.log.child({ step: 'extract' }), ctx.secrets, {
    retryBaseMs: ctx.config.retryBaseMs,
    proxy: ctx.config.proxy,
    ...options,
  });
}

/** If cleanup hangs after a signal, exit anyway: an orchestrator expects the process gone. */
export function forceExitLater(ms: number): void {
  setTimeout(() => {
    process.stderr.write(`Error: shutdown took longer than ${ms / 1000} s; exiting\n`);
    process.exit(1);
  }, ms).unref();
}

function readSecret(file: string): string | undefined {
  try {
    return readFileSync(file, 'utf8').replace(/\r?\n$/, '') || undefined;
  } catch {
    return undefined;
  }
}
