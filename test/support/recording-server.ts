/**
 * A real HTTP or HTTPS server on a loopback address that answers from a table of canned answers
 * and records every request it receives, headers and body included: the stand-in for an upstream
 * (or a load balancer, or a thief) whose side of a redirect a test asserts.
 */
import { createServer, type IncomingHttpHeaders, type IncomingMessage, type ServerResponse } from 'node:http';
import { createServer as createHttpsServer } from 'node:https';
import type { AddressInfo, Socket } from 'node:net';

export interface Recorded {
  method: string;
  /** Path and query string, as requested. */
  url: string;
  headers: IncomingHttpHeaders;
  body: string;
}

export interface Answer {
  status: number;
  headers?: Record<string, string>;
  body?: string | Buffer;
}

export interface RecordingServer {
  /** e.g. https://127.0.0.1:41234 */
  url: string;
  port: number;
  requests: Recorded[];
  /** Answers by `METHOD /path` (no query string); anything else gets a 404. */
  answers: Map<string, Answer | ((request: Recorded) => Answer)>;
  close(): Promise<void>;
}

export async function startRecordingServer(
  options: { host?: string; tls?: { key: Buffer; cert: Buffer } } = {},
): Promise<RecordingServer> {
  const requests: Recorded[] = [];
  const answers: RecordingServer['answers'] = new Map();
  const handler = (req: IncomingMessage, res: ServerResponse) => {
    const chunks: Buffer[] = [];
    req.on('data', (d: Buffer) => chunks.push(d));
    req.on('end', () => {
      const recorded: Recorded = {
        method: req.method ?? '',
        url: req.url ?? '',
        headers: req.headers,
        body: Buffer.concat(chunks).toString('utf8'),
      };
      requests.push(recorded);
      const found = answers.get(`${recorded.method} ${recorded.url.split('?')[0]}`);
      const answer = typeof found === 'function' ? found(recorded) : (found ?? { status: 404, body: 'not here' });
      res.writeHead(answer.status, answer.headers ?? {}).end(answer.body ?? '');
    });
  };
  const server = options.tls
    ? createHttpsServer({ key: options.tls.key, cert: options.tls.cert }, handler)
    : createServer(handler);
  const sockets = new Set<Socket>();
  server.on('connection', (socket: Socket) => {
    sockets.add(socket);
    socket.once('close', () => sockets.delete(socket));
  });
  server.on('tlsClientError', () => {});
  const host = options.host ?? '127.0.0.1';
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(0, host, resolve);
  });
  const { port } = server.address() as AddressInfo;
  return {
    url: `${options.tls ? 'https' : 'http'}://${host}:${port}`,
    port,
    requests,
    answers,
    close: () =>
      new Promise((resolve) => {
        server.close(() => resolve());
        for (const socket of sockets) socket.destroy();
      }),
  };
}
