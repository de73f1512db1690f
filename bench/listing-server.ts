/**
 * A minimal upstream for the benchmark, on 127.0.0.1: login returns a JWT, the listing endpoint
 * sends the current listing file, pre-compressed with gzip when the client offers it (as a real
 * server with gzip on does), so serving costs almost no CPU on this shared machine.
 */
import { createReadStream } from 'node:fs';
import { stat } from 'node:fs/promises';
import { createServer, type Server } from 'node:http';
import { JwtIssuer } from '../src/simulator/jwt.js';
import type { ListingFiles } from './listing-files.js';

export const BENCH_EMAIL = 'bench@example.com';
export const BENCH_PASSWORD = 'bench-password';

export interface ListingServer {
  url: string;
  serve(files: ListingFiles): void;
  /** Accept-Encoding of each listing request since the last call. */
  takeEncodings(): string[];
  token(): string;
  close(): Promise<void>;
}

export async function startListingServer(): Promise<ListingServer> {
  const jwt = new JwtIssuer();
  const sign = () => {
    const now = Math.floor(Date.now() / 1000);
    return jwt.sign({ sub: BENCH_EMAIL, iat: now, exp: now + 3600 });
  };
  let current: ListingFiles | undefined;
  const encodings: string[] = [];
  const server: Server = createServer((req, res) => {
    const url = new URL(req.url ?? '/', 'http://127.0.0.1');
    if (req.method === 'POST' && url.pathname === '/api/login') {
      req.resume();
      req.on('end', () => {
        res.writeHead(200, { 'content-type': 'application/json' });
        res.end(JSON.stringify({ data: { access_token: sign(), token_type: 'bearer' } }));
      });
      return;
    }
    if (req.method === 'GET' && url.pathname === '/api/bulk-wine-reconciliation-data' && current) {
      const auth = String(req.headers.authorization ?? '');
      if (!auth.startsWith('Bearer ') || !jwt.verify(auth.slice(7), Date.now()).ok) {
        res.writeHead(401, { 'content-type': 'application/json' }).end('{"message":"Unauthenticated."}');
        return;
      }
      const accept = String(req.headers['accept-encoding'] ?? '');
      encodings.push(accept);
      const gzip = /\bgzip\b/.test(accept);
      const path = gzip ? current.gzip : current.json;
      // Both outcomes answer the request; nothing else waits for it.
      void stat(path).then(
        ({ size }) => {
          res.writeHead(200, {
            'content-type': 'application/json',
            'content-length': size,
            ...(gzip ? { 'content-encoding': 'gzip' } : {}),
          });
          createReadStream(path, { highWaterMark: 1 << 20 }).pipe(res);
        },
        () => res.writeHead(500).end(),
      );
      return;
    }
    res.writeHead(404).end();
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const address = server.address();
  const port = typeof address === 'object' && address ? address.port : 0;
  return {
    url: `http://127.0.0.1:${port}`,
    serve: (files) => (current = files),
    takeEncodings: () => encodings.splice(0),
    token: sign,
    close: () =>
      new Promise((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
}
