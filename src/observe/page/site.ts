/**
 * What the status page's routes share: the page's options, its queries, the CSRF tokens and the
 * count of wrong tokens; and how every answer is sent (security headers, the secrets scrubbed).
 */
import type { IncomingMessage, ServerResponse } from 'node:http';
import type { Pool } from '../../db/pool.js';
import type { Logger, SecretRegistry } from '../../log.js';
import type { StaleRule } from './freshness.js';
import { layout } from './layout.js';
import type { PageQueries } from './queries.js';
import { securityHeaders, type CsrfTokens, type TokenAttempts } from './security.js';

/** What only the daemon knows: its schedule, the progress of its run, and how to start one. */
export interface DaemonView {
  nextRunAt(): string | null;
  progress(): { received: number; bytes: number } | undefined;
  /** Starts a run as the schedule would: false when one is going (or the daemon is stopping). */
  runNow(): boolean;
}

export interface PageOptions {
  pool: Pool;
  schema: string;
  timezone: string;
  token: string | undefined;
  /** The address the server listens on (`serve --host`, SYNC_METRICS_HOST): a name the page answers to. */
  boundHost: string;
  /** SYNC_UI_ALLOWED_HOSTS: more names (`name` or `name:port`) the page answers to, behind a reverse proxy. */
  allowedHosts: readonly string[];
  staleRule: () => StaleRule;
  /**
   * SYNC_RUN_TIMEOUT_MS: a `running` row older than this (and a minute) was most likely left by a
   * process that died.
   */
  runTimeoutMs?: number | undefined;
  daemon?: DaemonView | undefined;
  /** Attempts a chain may have (1 + SYNC_RUN_RETRY_DELAYS), for "attempt 2 of 4": read by the daemon and `serve`. */
  attempts?: number | undefined;
  log: Logger;
  /** The process's secrets (passwords, tokens): removed from every page should one ever reach the database's text. */
  secrets?: SecretRegistry | undefined;
}

export type PageHandler = (req: IncomingMessage, res: ServerResponse) => void;

/** One page server's state, shared by its routes. */
export interface Site {
  options: PageOptions;
  queries: PageQueries;
  /**
   * Run-now exists only in the daemon, and only behind a token: without one, anyone reaching the
   * port could start runs.
   */
  csrf: CsrfTokens | undefined;
  /** Wrong tokens, per address. */
  attempts: TokenAttempts;
}

/** Where an answer goes. */
export interface Reply {
  site: Site;
  res: ServerResponse;
}

/** One request being answered by a route: its URL, and the groups of the route's path pattern. */
export interface Exchange extends Reply {
  req: IncomingMessage;
  url: URL;
  match: RegExpExecArray;
}

export function send(r: Reply, status: number, type: string, body: string, extra: Record<string, string> = {}): void {
  const { secrets } = r.site.options;
  r.res
    .writeHead(status, { ...securityHeaders(), 'content-type': type, ...extra })
    .end(secrets ? secrets.scrub(body) : body);
}

export function sendPage(
  r: Reply,
  title: string,
  body: Parameters<typeof layout>[0]['body'],
  refreshSeconds?: number,
): void {
  send(r, 200, 'text/html; charset=utf-8', layout({ title, body, refreshSeconds }));
}

export function sendJson(r: Reply, value: unknown): void {
  send(r, 200, 'application/json; charset=utf-8', JSON.stringify(value));
}

export function notFound(r: Reply, what: string): void {
  send(r, 404, 'text/plain; charset=utf-8', `not found: ${what}\n`);
}
