/**
 * The WINE_API_ALLOW_INSECURE_HTTP rule, in one place: config.ts applies it to the configured
 * URLs, and the API client to every redirect hop, which a load balancer writing `Location: http://…`
 * could otherwise use to take the password or token past it.
 */
const LOOPBACK = /^(localhost|127(?:\.\d{1,3}){3}|\[::1\])$/i;

/** Why an http:// URL may not carry credentials here; undefined when it may (https, loopback, or allowed). */
export function insecureHttpProblem(url: URL, allowInsecure: boolean): string | undefined {
  if (url.protocol !== 'http:' || LOOPBACK.test(url.hostname) || allowInsecure) return undefined;
  return (
    `http:// to ${url.hostname} would send credentials in clear text; use https:// or set ` +
    `WINE_API_ALLOW_INSECURE_HTTP=true`
  );
}
