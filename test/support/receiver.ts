/**
 * A real HTTP receiver on 127.0.0.1 that records what is POSTed to it (a chat webhook's or a lineage catalogue's
 * stand-in).
 */
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';

export interface Received {
  path: string;
  contentType: string | undefined;
  authorization: string | undefined;
  body: Record<string, unknown>;
  /** The body as sent, before JSON.parse turned its numbers into floats. */
  text: string;
}

export interface Receiver {
  url: string;
  posts: Received[];
  /** The next `n` requests are answered with `status`. */
  failNext(n: number, status: number): void;
  /** Requests are read and never answered (a receiver that hangs), until `false`. */
  hang(on: boolean): void;
  close(): Promise<void>;
}

/** `host`: where it listens (a proxy test needs an address other than loopback, which is never proxied). */
export async function startReceiver(
  path = '/hooks/T000/B000/webhook-secret-token-42',
  host = '127.0.0.1',
): Promise<Receiver> {
  const posts: Received[] = [];
  let failing = { n: 0, status: 200 };
  let hanging = false;
  const server: Server = createServer((req, res) => {
    let text = '';
    req.on('data', (d: Buffer) => (text += d.toString()));
    req.on('end', () => {
      if (hanging) return;
      if (failing.n > 0) {
        failing.n--;
        res.writeHead(failing.status).end('try later');
        return;
      }
      posts.push({
        path: req.url ?? '',
        contentType: req.headers['content-type'],
        authorization: req.headers.authorization,
        body: JSON.parse(text),
        text,
      });
      res.writeHead(200, { 'content-type': 'text/plain' }).end('ok');
    });
  });
  await new Promise<void>((resolve) => server.listen(0, host, resolve));
  const { port } = server.address() as AddressInfo;
  return {
    url: `http://${host}:${port}${path}`,
    posts,
    failNext: (n, status) => (failing = { n, status }),
    hang: (on) => (hanging = on),
    close: () =>
      new Promise((resolve) => {
        server.close(() => resolve());
        server.closeAllConnections();
      }),
  };
}
