/**
 * A database connection the TLS layer refused, as a sentence a person can act on: the host of
 * DATABASE_URL, the sslmode in force and where it came from, and the setting to change. The
 * password is never part of it (neither pg's nor Node's messages carry it).
 */
import { ConfigError, SyncError } from '../errors.js';
import type pg from 'pg';
import { endpointText, settingName, type Endpoint, type Target } from '../outbound/database-url.js';
import {
  EXPIRED_CERT as EXPIRED,
  UNTRUSTED_CERT as UNTRUSTED,
  WRONG_HOST_CERT as WRONG_HOST,
} from '../outbound/tls-codes.js';

/** One connection's plan (connection.ts): the pg config, or why there is none; its errors are explained against it. */
export interface Attempt {
  target: Target | undefined;
  /** The host this connection goes to (the first of the URL's until a search chose another). */
  endpoint: Endpoint | undefined;
  /** TLS was asked for on this connection. */
  tls: boolean;
  config: pg.ClientConfig;
  failure: ConfigError | undefined;
}

const REFUSED_LOGIN = '28000';

/**
 * Under sslmode=prefer the TLS attempt failed where libpq would try again without TLS (the server
 * has no TLS, its certificate failed the check, or pg_hba.conf refused a TLS connection).
 * Connector.connect does; `without` tells both failures when that fails too.
 */
export class PreferWithoutTls extends ConfigError {
  /**
   * `withTls`: what went wrong with TLS, when more than the server having none (worth telling if the retry fails too).
   */
  constructor(readonly withTls: string | undefined) {
    super(withTls ?? 'the server does not accept TLS connections');
  }

  without(plainError: unknown): unknown {
    if (this.withTls === undefined || !(plainError instanceof Error)) return plainError;
    return new ConfigError(`${plainError.message} (sslmode=prefer tried TLS first: ${this.withTls})`);
  }
}

/** The error to report for a connection that `attempt` planned and pg could not open. */
export function explainConnectFailure(error: Error, attempt: Attempt): Error {
  const { target, endpoint } = attempt;
  if (error instanceof SyncError || target === undefined || endpoint === undefined) return error;
  const code = (error as { code?: unknown }).code;
  const where =
    `cannot connect to the database at ${target.urlVariable} ` +
    `(host ${endpointText(endpoint)}, sslmode=${target.ssl.mode}, from ${origin(target)})`;
  const mode = target.ssl.mode;
  const prefer = mode === 'prefer' && attempt.tls;
  const modeSetting = `sslmode= in ${target.urlVariable} or PGSSLMODE`;

  let sentence: string | undefined;
  if (prefer && noTlsAtServer(error)) {
    return new PreferWithoutTls(undefined);
  } else if (attempt.tls && noTlsAtServer(error)) {
    sentence =
      `${where}: the server does not accept TLS connections (its ssl setting is off), and ` +
      `sslmode=${mode} requires TLS; turn ssl on at the server, or set ${modeSetting} to disable if an ` +
      `unencrypted connection is acceptable`;
  } else if (attempt.tls && typeof code === 'string' && UNTRUSTED.has(code)) {
    const given = target.ssl.rootcert;
    const trusted =
      given === undefined || given.value === 'system'
        ? 'the CAs Node.js trusts'
        : `the CA in ${given.value} (${settingName('sslrootcert', given.from, target.urlVariable)})`;
    sentence =
      `${where}: the server's certificate is not signed by ${trusted} (${code}); give the ` +
      `certificate of the CA that signed it with sslrootcert= in ${target.urlVariable} or ` +
      `PGSSLROOTCERT${
        mode === 'verify-full' || mode === 'verify-ca'
          ? ''
          : ', or leave sslrootcert out to encrypt without verifying (sslmode=require)'
      }`;
  } else if (attempt.tls && code === WRONG_HOST) {
    const names = (error as { cert?: { subjectaltname?: unknown } }).cert?.subjectaltname;
    const presented = typeof names === 'string' ? `it names ${names}` : error.message;
    sentence =
      `${where}: the server's certificate is not issued for ${endpoint.host ?? 'localhost'} ` +
      `(${presented}); use a host name the certificate names in ${target.urlVariable}, or set ` +
      `${modeSetting} to verify-ca to check the CA but not the name`;
  } else if (attempt.tls && typeof code === 'string' && EXPIRED.has(code)) {
    sentence =
      `${where}: the server's certificate is outside its validity period (${code}); it must be ` +
      `renewed at the server (or this machine's clock is wrong)`;
  } else if (attempt.tls && typeof code === 'string' && /^(ERR_SSL_|ERR_TLS_|CERT_|ERR_OSSL_)/.test(code)) {
    sentence =
      `${where}: the TLS handshake failed (${code}: ${error.message}); check the server's TLS ` +
      `setup and ${settingName('sslmode', target.ssl.modeFrom, target.urlVariable)}`;
  } else if (code === REFUSED_LOGIN && !prefer) {
    // pg_hba.conf refused this connection: with or without TLS may be what it wants (hostssl, hostnossl).
    const change = attempt.tls
      ? `if the server accepts this role only without TLS (hostnossl), set ${modeSetting} to prefer or disable`
      : `if the server accepts only TLS connections (hostssl), set ${modeSetting} to require or stronger`;
    return new ConfigError(`${where}: the server refused the connection (${error.message}); ${change}`);
  } else if (code === REFUSED_LOGIN) {
    return new PreferWithoutTls(`${where}: the server refused a TLS connection (${error.message})`);
  }
  if (sentence === undefined) return error;
  return prefer ? new PreferWithoutTls(sentence) : new ConfigError(sentence);
}

/**
 * pg's own error when the server answers the SSLRequest with 'N'. It has no code: its text is all
 * there is to tell it apart (pg/lib/connection.js).
 */
function noTlsAtServer(error: Error): boolean {
  return error.message === 'The server does not support SSL connections';
}

function origin(target: Target): string {
  return target.ssl.modeFrom === 'default' ? "libpq's default" : target.ssl.modeFrom;
}

/** One host passed over by a connection of several hosts, and why. */
export interface PassedOver {
  endpoint: Endpoint;
  /** A phrase after the host: "refused the connection …", "is a standby …". */
  reason: string;
  /** The failure's SQLSTATE or system error code, when the host could not be connected to. */
  code: string | undefined;
  configError: boolean;
}

/** A host that could not be connected to, as one entry of the list. */
export function failure(endpoint: Endpoint, error: Error): PassedOver {
  const code = (error as { code?: unknown }).code;
  const known = typeof code === 'string' && !(error instanceof ConfigError) ? code : undefined;
  const reason =
    known === 'ECONNREFUSED'
      ? 'refused the connection (nothing listens there)'
      : `failed: ${error.message}${known ? ` (${known})` : ''}`;
  return { endpoint, reason, code: known, configError: error instanceof ConfigError };
}

/** SQLSTATE sqlclient_unable_to_establish_sqlconnection: what libpq-based drivers report when no host would do. */
const UNABLE_TO_CONNECT = '08001';

/**
 * No host of a several-host DATABASE_URL (or the one host, under target_session_attrs) would do.
 * The message names every host tried and why it was passed over; never the password, which no
 * part of it holds. Its `code` is the one failure code every host shared (a password refused
 * everywhere stays 28P01), else 08001: a connection that may succeed later, as during a failover.
 */
export class NoHostAccepted extends Error {
  readonly code: string;
  constructor(
    target: Target,
    readonly passedOver: PassedOver[],
  ) {
    const wanted =
      target.sessionAttrs === 'any' ? 'accepted a connection' : `suits target_session_attrs=${target.sessionAttrs}`;
    const tried = passedOver.map((p) => `${endpointText(p.endpoint)} ${p.reason}`).join('; ');
    super(`cannot connect to the database at ${target.urlVariable}: no host ${wanted} (${tried})`);
    const codes = new Set(passedOver.map((p) => p.code));
    this.code = codes.size === 1 ? ([...codes][0] ?? UNABLE_TO_CONNECT) : UNABLE_TO_CONNECT;
  }
}
