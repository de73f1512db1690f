/**
 * POST /api/login as the upstream answers it: the three required headers, Laravel-style validation
 * errors, credentials compared in constant time, and a JWT in one of five response shapes (the
 * client must find the token whatever the shape). Also the HTML login page the upstream serves
 * where JSON was expected (the `html` fault).
 */
import { createHash, timingSafeEqual } from 'node:crypto';
import type { IncomingMessage, ServerResponse } from 'node:http';
import type { Faults } from './faults.js';
import type { JwtIssuer } from './jwt.js';
import { headerIs, mediaType, readBody, send, sendJson } from './respond.js';

export type TokenShape = 'data.access_token' | 'token' | 'jwt' | 'bare' | 'nested-unknown';

export const LOGIN_PATH = '/api/login';
const MAX_LOGIN_BODY = 64 * 1024;

export interface LoginSettings {
  email: string;
  password: string;
  tokenTtlSeconds: number;
  tokenShape: TokenShape;
}

export class LoginEndpoint {
  private readonly email: string;
  // Digests only: the simulator keeps no password it is sent, and compares in constant time.
  private readonly emailDigest: Buffer;
  private readonly passwordDigest: Buffer;
  private readonly tokenTtlSeconds: number;
  private readonly tokenShape: TokenShape;

  constructor(
    settings: LoginSettings,
    private readonly jwt: JwtIssuer,
    private readonly faults: Faults,
  ) {
    this.email = settings.email;
    this.emailDigest = digest(settings.email.toLowerCase());
    this.passwordDigest = digest(settings.password);
    this.tokenTtlSeconds = settings.tokenTtlSeconds;
    this.tokenShape = settings.tokenShape;
  }

  async handle(req: IncomingMessage, res: ServerResponse): Promise<void> {
    const failure = this.faults.take('login-error');
    if (failure) {
      req.resume();
      return sendJson(res, failure.status ?? 500, { message: 'Server Error' });
    }
    const missing: string[] = [];
    if (mediaType(req.headers['content-type']) !== 'application/json') missing.push('Content-Type: application/json');
    if (!headerIs(req.headers['x-requested-with'], 'xmlhttprequest')) missing.push('X-Requested-With: XMLHttpRequest');
    if (!headerIs(req.headers['service_app'], 'mobile')) missing.push('service_app: mobile');
    if (missing.length > 0) {
      req.resume();
      return sendJson(res, 400, { message: `Missing or invalid header: ${missing.join(', ')}` });
    }
    const raw = await readBody(req, MAX_LOGIN_BODY);
    if (raw === undefined) return sendJson(res, 413, { message: 'Request body too large.' });
    let body: unknown;
    try {
      body = JSON.parse(raw.toString('utf8'));
    } catch {
      return sendJson(res, 400, { message: 'The request body is not valid JSON.' });
    }
    const { email, password } = (typeof body === 'object' && body !== null ? body : {}) as Record<string, unknown>;
    const errors: Record<string, string[]> = {};
    if (typeof email !== 'string' || email === '') errors.email = ['The email field is required.'];
    if (typeof password !== 'string' || password === '') errors.password = ['The password field is required.'];
    if (Object.keys(errors).length > 0) {
      return sendJson(res, 422, {
        message: Object.values(errors)
          .map((e) => e[0])
          .join(' '),
        errors,
      });
    }
    // Both compared (no early exit), in constant time; the password is not kept.
    const emailOk = timingSafeEqual(digest((email as string).toLowerCase()), this.emailDigest);
    const passwordOk = timingSafeEqual(digest(password as string), this.passwordDigest);
    if (!emailOk || !passwordOk) return sendJson(res, 401, { message: 'Invalid credentials.' });
    this.issue(res);
  }

  /** A token valid for the TTL (or already expired, under the `expire-token` fault), in the configured shape. */
  private issue(res: ServerResponse): void {
    const nowSeconds = Math.floor(Date.now() / 1000);
    const expired = this.faults.take('expire-token') !== undefined;
    const exp = expired ? nowSeconds - 60 : nowSeconds + this.tokenTtlSeconds;
    const iat = expired ? exp - this.tokenTtlSeconds : nowSeconds;
    const token = this.jwt.sign({ sub: '1', iat, exp });
    const expiresIn = exp - nowSeconds;
    switch (this.tokenShape) {
      case 'bare':
        return send(res, 200, 'text/plain; charset=UTF-8', Buffer.from(token));
      case 'token':
        return sendJson(res, 200, { message: 'Login successful', token, expires_in: expiresIn });
      case 'jwt':
        return sendJson(res, 200, { status: 'success', jwt: token, user: { id: 1, email: this.email } });
      case 'nested-unknown':
        return sendJson(res, 200, {
          status: 'ok',
          result: { auth: { value: token, ttl: expiresIn }, user: { id: 1 } },
        });
      case 'data.access_token':
        return sendJson(res, 200, {
          message: 'Login successful',
          data: {
            user: { id: 1, email: this.email },
            access_token: token,
            token_type: 'bearer',
            expires_in: expiresIn,
          },
        });
    }
  }
}

function digest(text: string): Buffer {
  return createHash('sha256').update(text, 'utf8').digest();
}
