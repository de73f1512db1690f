/**
 * Finding the JWT in a login response whose shape the upstream does not document, and reading
 * its expiry. Pure functions: no I/O, and no token value ever goes into an error message.
 */
const JWT_SHAPE = /^[A-Za-z0-9_-]{2,}\.[A-Za-z0-9_-]{2,}\.[A-Za-z0-9_-]*$/;
const USUAL_NAMES = ['token', 'access_token', 'accessToken', 'jwt'];

export type TokenSearch = { ok: true; token: string; foundAt: string } | { ok: false; keysSeen: string[] };

export function looksLikeJwt(value: unknown): value is string {
  return typeof value === 'string' && JWT_SHAPE.test(value.trim());
}

/**
 * `field` (WINE_API_TOKEN_FIELD) wins; else the usual names at the top or under `data`; else
 * any JWT-shaped string anywhere; else a body that is itself a JWT.
 */
export function findToken(bodyText: string, field?: string): TokenSearch {
  let body: unknown;
  try {
    body = JSON.parse(bodyText);
  } catch {
    const bare = bodyText.trim().replace(/^"(.*)"$/, '$1');
    return looksLikeJwt(bare) ? { ok: true, token: bare, foundAt: '(body)' } : { ok: false, keysSeen: [] };
  }
  if (typeof body === 'string') {
    return looksLikeJwt(body) ? { ok: true, token: body.trim(), foundAt: '(body)' } : { ok: false, keysSeen: [] };
  }
  if (field !== undefined) {
    const value = field.split('.').reduce<unknown>((node, key) => (isObject(node) ? node[key] : undefined), body);
    return typeof value === 'string' && value.trim() !== ''
      ? { ok: true, token: value.trim(), foundAt: field }
      : { ok: false, keysSeen: keyPaths(body) };
  }
  for (const prefix of ['', 'data.']) {
    const node = prefix === '' ? body : isObject(body) ? body.data : undefined;
    if (!isObject(node)) continue;
    for (const name of USUAL_NAMES) {
      const value = node[name];
      if (typeof value === 'string' && value.trim() !== '')
        return { ok: true, token: value.trim(), foundAt: prefix + name };
    }
  }
  const anywhere = findJwtString(body, '');
  return anywhere ?? { ok: false, keysSeen: keyPaths(body) };
}

function findJwtString(node: unknown, path: string): { ok: true; token: string; foundAt: string } | undefined {
  if (looksLikeJwt(node)) return { ok: true, token: node.trim(), foundAt: path || '(body)' };
  if (Array.isArray(node)) {
    for (let i = 0; i < node.length; i++) {
      const found = findJwtString(node[i], `${path}[${i}]`);
      if (found) return found;
    }
  } else if (isObject(node)) {
    for (const [key, value] of Object.entries(node)) {
      const found = findJwtString(value, path ? `${path}.${key}` : key);
      if (found) return found;
    }
  }
  return undefined;
}

/** Dot paths of the keys in a JSON value (names only, never values), for error messages. */
export function keyPaths(node: unknown, prefix = '', out: string[] = []): string[] {
  if (!isObject(node) || out.length >= 50) return out;
  for (const [key, value] of Object.entries(node)) {
    const path = prefix ? `${prefix}.${key}` : key;
    out.push(path);
    keyPaths(value, path, out);
  }
  return out;
}

/** The `exp` claim in milliseconds since the epoch, decoded without verifying; undefined when absent. */
export function jwtExpiryMs(token: string): number | undefined {
  const payload = token.split('.')[1];
  if (payload === undefined) return undefined;
  try {
    const claims: unknown = JSON.parse(Buffer.from(payload, 'base64url').toString('utf8'));
    const exp = isObject(claims) ? claims.exp : undefined;
    return typeof exp === 'number' && Number.isFinite(exp) ? exp * 1000 : undefined;
  } catch {
    return undefined;
  }
}

function isObject(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}
