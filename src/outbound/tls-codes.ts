/**
 * Node's (OpenSSL's) codes for a peer certificate it refused, grouped by what a person must change:
 * shared by the upstream's errors (extract/http/connection-errors.ts) and the database's
 * (db/connection-errors.ts), which each say it in their own settings.
 */

/** No CA we were given (or the system's) signed this chain. */
export const UNTRUSTED_CERT = new Set([
  'SELF_SIGNED_CERT_IN_CHAIN',
  'DEPTH_ZERO_SELF_SIGNED_CERT',
  'UNABLE_TO_VERIFY_LEAF_SIGNATURE',
  'UNABLE_TO_GET_ISSUER_CERT',
  'UNABLE_TO_GET_ISSUER_CERT_LOCALLY',
  'CERT_UNTRUSTED',
  'CERT_CHAIN_TOO_LONG',
  'INVALID_CA',
]);
/** Outside its validity period. */
export const EXPIRED_CERT = new Set(['CERT_HAS_EXPIRED', 'CERT_NOT_YET_VALID']);
/** Refused for another reason. */
export const OTHER_CERT = new Set([
  'CERT_REVOKED',
  'CERT_SIGNATURE_FAILURE',
  'CERT_REJECTED',
  'INVALID_PURPOSE',
  'UNABLE_TO_DECRYPT_CERT_SIGNATURE',
]);
/** Issued for another host name. */
export const WRONG_HOST_CERT = 'ERR_TLS_CERT_ALTNAME_INVALID';
