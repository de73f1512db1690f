/**
 * got's `agent` option for one request: a proxy agent when HTTPS_PROXY/HTTP_PROXY apply to the
 * target and NO_PROXY does not exempt it, nothing (got's default agents) otherwise. As curl does:
 * an https:// target goes through a CONNECT tunnel (hpagent), so the proxy sees only host and port
 * and TLS stays end to end; an http:// target is a plain request forwarded in absolute form
 * (forwarding-agent.ts), which stock proxies allow where they refuse a tunnel to port 80 or 8080.
 * Every call to the outside (login, listing, the notification webhook, the Pushgateway push)
 * takes its agent from here.
 */
import type { Socket } from 'node:net';
import type { Agents } from 'got';
import { HttpsProxyAgent } from 'hpagent';
import { proxyFor, type ProxyConfig, type ProxySetting } from '../../outbound/proxy-env.js';
import { ForwardingProxyAgent } from './forwarding-agent.js';

export interface ProxyRoute {
  agent: Agents | undefined;
  /** The proxy used, or undefined for a direct connection (its URL holds credentials: log it through redactUrl). */
  via: ProxySetting | undefined;
}

/** The agents for a request to `targetUrl` under `proxy` (undefined config: direct). */
export function agentFor(proxy: ProxyConfig | undefined, targetUrl: string): Agents | undefined {
  return proxyRoute(proxy, targetUrl).agent;
}

export function proxyRoute(proxy: ProxyConfig | undefined, targetUrl: string): ProxyRoute {
  const via = proxy === undefined ? undefined : proxyFor(proxy, targetUrl);
  if (via === undefined) return { agent: undefined, via: undefined };
  // One agent per request and no keep-alive: a run makes two requests, and an idle pooled socket
  // to the proxy would only hold the process open.
  const agent: Agents =
    new URL(targetUrl).protocol === 'https:'
      ? { https: withProxyStatus(new HttpsProxyAgent({ proxy: via.url, keepAlive: false }), via) }
      : { http: new ForwardingProxyAgent(via.url, { keepAlive: false }) };
  return { agent, via };
}

/** The proxy answered CONNECT with this status instead of 200. */
export class ProxyRefusedError extends Error {
  readonly code = 'ERR_PROXY_REFUSED';
  constructor(
    readonly status: number,
    readonly proxyVariable: string,
  ) {
    super(`the proxy (${proxyVariable}) answered CONNECT with HTTP ${status}`);
    this.name = 'ProxyRefusedError';
  }
}

type CreateConnection = (options: object, callback: (error: Error | null, socket: Socket | null) => void) => void;

/**
 * hpagent reports a refused CONNECT as a plain Error("Bad response: 407"); give it a class and the
 * status, so that callers can say what to fix (407: credentials) without reading message text later.
 */
function withProxyStatus(agent: HttpsProxyAgent, via: ProxySetting): HttpsProxyAgent {
  const target = agent as unknown as { createConnection: CreateConnection };
  const original = target.createConnection.bind(agent);
  target.createConnection = (options, callback) =>
    original(options, (error, socket) => {
      const status = error ? /^Bad response: (\d{3})$/.exec(error.message)?.[1] : undefined;
      callback(status === undefined ? error : new ProxyRefusedError(Number(status), via.from), socket);
    });
  return agent;
}
