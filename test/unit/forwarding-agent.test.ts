/**
 * What an http:// request through HTTP_PROXY puts on the wire, read by a raw TCP listener standing
 * in for the proxy: the request line in absolute form and Proxy-Authorization, as curl sends them.
 */
import { createServer, type Server } from 'node:net';
import type { AddressInfo } from 'node:net';
import got from 'got';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { agentFor } from '../../src/extract/http/http-agents.js';
import { readProxyEnv } from '../../src/outbound/proxy-env.js';

let server: Server;
let port: number;
const heads: string[] = [];

beforeAll(async () => {
  server = createServer((socket) => {
    let text = '';
    socket.on('data', (chunk: Buffer) => {
      text += chunk.toString('latin1');
      if (!text.includes('\r\n\r\n')) return;
      heads.push(text.slice(0, text.indexOf('\r\n\r\n')));
      socket.end('HTTP/1.1 200 OK\r\nContent-Type: text/plain\r\nContent-Length: 2\r\nConnection: close\r\n\r\nok');
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  port = (server.address() as AddressInfo).port;
});

afterAll(() => new Promise<void>((resolve) => server.close(() => resolve())));

const proxied = (proxy: string) => readProxyEnv({ HTTP_PROXY: proxy }, []);

describe('an http:// target through HTTP_PROXY', () => {
  it('is sent to the proxy in absolute form, with no CONNECT, and the proxy login as Proxy-Authorization', async () => {
    const target = 'http://wine.example.invalid:8080/api/login?x=1';
    // The target's name is never resolved: the agent dials the proxy.
    const response = await got.post(target, {
      json: { a: 1 },
      agent: agentFor(proxied(`http://alice:p%40ss%3Aword@127.0.0.1:${port}`), target),
      retry: { limit: 0 },
    });
    expect(response.body).toBe('ok');
    const head = heads.at(-1)!.split('\r\n');
    expect(head[0]).toBe('POST http://wine.example.invalid:8080/api/login?x=1 HTTP/1.1');
    expect(head).toContain(`proxy-authorization: Basic ${Buffer.from('alice:p@ss:word').toString('base64')}`);
    expect(head.map((h) => h.toLowerCase())).toContain('host: wine.example.invalid:8080');
  });

  it('leaves out the default port, and sends no Proxy-Authorization without credentials', async () => {
    const target = 'http://wine.example.invalid/api/bulk-wine-reconciliation-data?for_reporting=1';
    await got(target, { agent: agentFor(proxied(`127.0.0.1:${port}`), target), retry: { limit: 0 } });
    const head = heads.at(-1)!.split('\r\n');
    expect(head[0]).toBe('GET http://wine.example.invalid/api/bulk-wine-reconciliation-data?for_reporting=1 HTTP/1.1');
    expect(head.some((h) => /^proxy-authorization:/i.test(h))).toBe(false);
  });

  it('is sent directly when NO_PROXY lists the host', async () => {
    const target = `http://127.0.0.1:${port}/direct`;
    const env = readProxyEnv({ HTTP_PROXY: 'http://127.0.0.1:1', NO_PROXY: '127.0.0.1' }, []);
    await got(target, { agent: agentFor(env, target), retry: { limit: 0 } });
    expect(heads.at(-1)!.split('\r\n')[0]).toBe('GET /direct HTTP/1.1');
  });
});
