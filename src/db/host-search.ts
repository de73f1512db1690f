/**
 * libpq's several hosts with target_session_attrs: each new connection takes the first suitable host.
 * Rule: nothing session-level is set, so the check is safe through a transaction pooler.
 */
import type pg from 'pg';
import type { Endpoint, SessionAttrs, Target } from '../outbound/database-url.js';
import { ConfigError } from '../errors.js';
import { failure, NoHostAccepted, PreferWithoutTls, type PassedOver } from './connection-errors.js';

/** What a host is: a standby in recovery, and whether its sessions are read-only by default. */
export const ROLE_QUERY = `SELECT pg_is_in_recovery() AS recovery,
  current_setting('transaction_read_only') = 'on' AS read_only`;

interface Role {
  recovery: boolean;
  read_only: boolean;
}

type Wanted = Exclude<SessionAttrs, 'prefer-standby'>;

/** A URL that needs the search: several hosts, or an attribute to check. */
export function needsSearch(target: Target): boolean {
  return target.hosts.length > 1 || target.sessionAttrs !== 'any';
}

/** Why a host with `role` is passed over for `wanted` (libpq's meanings), or undefined when it suits. */
export function mismatch(role: Role, wanted: Wanted): string | undefined {
  switch (wanted) {
    case 'any':
      return undefined;
    case 'read-write':
      if (role.recovery) return 'is a standby (in recovery, read-only)';
      return role.read_only ? 'is read-only (default_transaction_read_only is on)' : undefined;
    case 'read-only':
      return role.read_only || role.recovery ? undefined : 'accepts writes';
    case 'primary':
      return role.recovery ? 'is a standby (in recovery)' : undefined;
    case 'standby':
      return role.recovery ? undefined : 'is a primary (not in recovery)';
  }
}

/** Why `client`'s host does not suit `wanted`, or undefined. */
export async function checkRole(client: pg.Client, wanted: Wanted): Promise<string | undefined> {
  if (wanted === 'any') return undefined;
  const { rows } = await client.query<Role>(ROLE_QUERY);
  return mismatch(rows[0]!, wanted);
}

/**
 * Tries the hosts in order with `probe` (a connection to one host that resolves with the reason it
 * is passed over, or undefined when it suits, and is closed either way). `prefer-standby` makes a
 * second pass that takes any host, as libpq does. Throws NoHostAccepted naming every host tried.
 */
export async function searchHosts(
  target: Target,
  probe: (endpoint: Endpoint, wanted: Wanted) => Promise<string | undefined>,
  explain: (error: Error, endpoint: Endpoint) => Error,
): Promise<{ endpoint: Endpoint; passedOver: PassedOver[] }> {
  const passes: Wanted[] = target.sessionAttrs === 'prefer-standby' ? ['standby', 'any'] : [target.sessionAttrs];
  const passedOver: PassedOver[] = [];
  for (const wanted of passes) {
    for (const endpoint of target.hosts) {
      let reason: string | undefined;
      try {
        reason = await probe(endpoint, wanted);
      } catch (error) {
        const explained = explain(error as Error, endpoint);
        // sslmode=prefer: the whole connection is tried again without TLS (Connector.connect).
        if (explained instanceof PreferWithoutTls) throw explained;
        passedOver.push(failure(endpoint, explained));
        continue;
      }
      if (reason === undefined) return { endpoint, passedOver };
      passedOver.push({ endpoint, reason, code: undefined, configError: false });
    }
  }
  const error = new NoHostAccepted(target, passedOver);
  // The TLS settings or the login refused at every host: a setting to change, not a failover.
  throw passedOver.every((p) => p.configError) ? new ConfigError(error.message) : error;
}
