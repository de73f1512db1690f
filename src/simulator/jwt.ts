/**
 * HS256 JSON Web Tokens for the simulated upstream: signed with a random secret that lives only
 * in memory. Rotating the secret revokes every token issued so far.
 */
import { createHmac, randomBytes, timingSafeEqual } from 'node:crypto';

export interface JwtClaims {
  sub: string;
  iat: number;
  exp: number;
}

export type JwtCheck = { ok: true; claims: JwtClaims } | { ok: false; reason: 'malformed' | 'signature' | 'expired' };

const HEADER = Buffer.from(JSON.stringify({ alg: 'HS256', typ: 'JWT' })).toString('base64url');
const PART = /^[A-Za-z0-9_-]+$/;

export class JwtIssuer {
  private secret = randomBytes(32);

  /** A new secret: every token signed before this call stops verifying. */
  rotate(): void {
    this.secret = randomBytes(32);
  }

  sign(claims: JwtClaims): string {
    const payload = Buffer.from(JSON.stringify(claims)).toString('base64url');
    return `${HEADER}.${payload}.${this.signature(`${HEADER}.${payload}`).toString('base64url')}`;
  }

  verify(token: string, nowMs: number): JwtCheck {
    const parts = token.split('.');
    if (parts.length !== 3 || !parts.every((p) => PART.test(p))) return { ok: false, reason: 'malformed' };
    const [header, payload, signature] = parts as [string, string, string];
    const given = Buffer.from(signature, 'base64url');
    const expected = this.signature(`${header}.${payload}`);
    if (given.length !== expected.length || !timingSafeEqual(given, expected))
      return { ok: false, reason: 'signature' };
    let claims: unknown;
    try {
      const head: unknown = JSON.parse(Buffer.from(header, 'base64url').toString('utf8'));
      if (typeof head !== 'object' || head === null || (head as { alg?: unknown }).alg !== 'HS256')
        return { ok: false, reason: 'malformed' };
      claims = JSON.parse(Buffer.from(payload, 'base64url').toString('utf8'));
    } catch {
      return { ok: false, reason: 'malformed' };
    }
    if (typeof claims !== 'object' || claims === null) return { ok: false, reason: 'malformed' };
    const { sub, iat, exp } = claims as Record<string, unknown>;
    if (typeof sub !== 'string' || typeof iat !== 'number' || typeof exp !== 'number')
      return { ok: false, reason: 'malformed' };
    if (exp * 1000 <= nowMs) return { ok: false, reason: 'expired' };
    return { ok: true, claims: { sub, iat, exp } };
  }

  private signature(input: string): Buffer {
    return createHmac('sha256', this.secret).update(input).digest();
  }
}
