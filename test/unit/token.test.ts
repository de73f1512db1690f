import { describe, expect, it } from 'vitest';
import { findToken, jwtExpiryMs } from '../../src/extract/http/token.js';

const jwt = (claims: object) =>
  `${Buffer.from('{"alg":"HS256","typ":"JWT"}').toString('base64url')}` +
  `.${Buffer.from(JSON.stringify(claims)).toString('base64url')}.c2lnbmF0dXJl`;
const T = jwt({ sub: 1, exp: 1_900_000_000 });

describe('findToken', () => {
  it.each([
    ['token', { token: T }],
    ['access_token', { access_token: T }],
    ['accessToken', { accessToken: T }],
    ['jwt', { jwt: T }],
    ['data.access_token', { message: 'ok', data: { user: { id: 1 }, access_token: T } }],
    ['data.token', { data: { token: T } }],
  ])('finds the usual name %s', (foundAt, body) => {
    expect(findToken(JSON.stringify(body))).toEqual({ ok: true, token: T, foundAt });
  });

  it('uses WINE_API_TOKEN_FIELD when given, even for a name it would not guess', () => {
    expect(findToken(JSON.stringify({ auth: { bearer: 'opaque-not-a-jwt' } }), 'auth.bearer')).toEqual({
      ok: true,
      token: 'opaque-not-a-jwt',
      foundAt: 'auth.bearer',
    });
  });

  it('finds a JWT-shaped string under an unknown key', () => {
    expect(findToken(JSON.stringify({ result: { auth: [{ value: T }] } }))).toEqual({
      ok: true,
      token: T,
      foundAt: 'result.auth[0].value',
    });
  });

  it('accepts a body that is itself a JWT, bare or as a JSON string', () => {
    expect(findToken(`${T}\n`)).toMatchObject({ ok: true, token: T });
    expect(findToken(JSON.stringify(T))).toMatchObject({ ok: true, token: T });
  });

  it('lists the keys it saw, never the values, when there is no token', () => {
    const result = findToken(JSON.stringify({ message: 'secret-value-xyz', data: { user: { email: 'a@b.c' } } }));
    expect(result).toEqual({ ok: false, keysSeen: ['message', 'data', 'data.user', 'data.user.email'] });
    expect(JSON.stringify(result)).not.toContain('secret-value-xyz');
  });

  it('reports a configured field that is missing', () => {
    expect(findToken(JSON.stringify({ token: T }), 'data.access_token')).toEqual({ ok: false, keysSeen: ['token'] });
  });
});

describe('jwtExpiryMs', () => {
  it('reads exp without verifying the signature', () => {
    expect(jwtExpiryMs(T)).toBe(1_900_000_000_000);
  });
  it('is undefined without exp or for a non-JWT', () => {
    expect(jwtExpiryMs(jwt({ sub: 1 }))).toBeUndefined();
    expect(jwtExpiryMs('opaque')).toBeUndefined();
  });
});
