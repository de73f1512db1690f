/**
 * The simulator's listing exactly as it goes over the wire: fetch() would decode a coded body,
 * and the archive tests compare the bytes the upstream sent.
 */
import { request } from 'node:http';
import { LISTING_PATH, LOGIN_PATH, type Simulator } from '../../src/simulator/server.js';

export interface RawListing {
  status: number;
  headers: Record<string, string | string[] | undefined>;
  body: Buffer;
  /** The connection dropped before the body ended. */
  cut: boolean;
}

export async function rawListing(sim: Simulator, acceptEncoding: string): Promise<RawListing> {
  const login = await fetch(`${sim.url}${LOGIN_PATH}`, {
    method: 'POST',
    headers: { 'content-type': 'application/json', 'x-requested-with': 'XMLHttpRequest', service_app: 'mobile' },
    body: JSON.stringify({ email: sim.email, password: sim.password }),
  });
  const token = ((await login.json()) as { data: { access_token: string } }).data.access_token;
  return new Promise((resolve, reject) => {
    const headers = { serviceapp: 'mobile', authorization: `Bearer ${token}`, 'accept-encoding': acceptEncoding };
    request(`${sim.url}${LISTING_PATH}?for_reporting=1`, { headers }, (res) => {
      const parts: Buffer[] = [];
      const done = (cut: boolean) =>
        resolve({ status: res.statusCode!, headers: res.headers, body: Buffer.concat(parts), cut });
      res.on('data', (part: Buffer) => parts.push(part));
      res.on('end', () => done(false));
      res.on('error', () => done(true));
    })
      .on('error', reject)
      .end();
  });
}
