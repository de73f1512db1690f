/**
 * An http:// request through an HTTP proxy in absolute form, as curl and wget send it, instead of
 * hpagent's CONNECT tunnel. Rule: only the request line and proxy header are ours; the rest is Node's.
 */
import { Agent, type AgentOptions, type ClientRequest, type RequestOptions } from 'node:http';
import { connect as netConnect, type Socket } from 'node:net';
import { connect as tlsConnect } from 'node:tls';

/** `Basic …` for the user and password in a proxy URL, or undefined when it has none. */
export function proxyAuthorization(proxy: URL): string | undefined {
  if (proxy.username === '' && proxy.password === '') return undefined;
  const pair = `${decodeURIComponent(proxy.username)}:${decodeURIComponent(proxy.password)}`;
  return `Basic ${Buffer.from(pair).toString('base64')}`;
}

export class ForwardingProxyAgent extends Agent {
  private readonly proxy: URL;

  constructor(proxyUrl: string, options: AgentOptions = {}) {
    super(options);
    this.proxy = new URL(proxyUrl);
  }

  /** Called by ClientRequest's constructor, before the request line is written. */
  addRequest(req: ClientRequest, options: RequestOptions): void {
    // Headers already serialized (an `Expect` header or raw header arrays do that early) would go
    // out in origin form to the proxy: refuse rather than send a request the proxy cannot route.
    if (req.headersSent) {
      req.destroy(
        new Error(
          'cannot send this request through the proxy: its headers were written before the proxy could set the target',
        ),
      );
      return;
    }
    req.path = absoluteTarget(req.path, options);
    const authorization = proxyAuthorization(this.proxy);
    if (authorization !== undefined) req.setHeader('proxy-authorization', authorization);
    // `addRequest` is Node's public-but-undocumented Agent hook (http-proxy-agent and global-agent
    // use it too); @types/node does not declare it.
    (Agent.prototype as unknown as { addRequest(req: ClientRequest, options: RequestOptions): void }).addRequest.call(
      this,
      req,
      options,
    );
  }

  /** The socket goes to the proxy, never to the target. */
  override createConnection(): Socket {
    const port = Number(this.proxy.port || (this.proxy.protocol === 'https:' ? 443 : 80));
    const host = this.proxy.hostname.replace(/^\[|\]$/g, '');
    return this.proxy.protocol === 'https:' ? tlsConnect({ host, port, servername: host }) : netConnect({ host, port });
  }
}

/** `http://host:port/path?query`, the request-target a proxy needs (RFC 9112 §3.2.2). */
function absoluteTarget(path: string, options: RequestOptions): string {
  if (/^[a-z][a-z0-9+.-]*:\/\//i.test(path)) return path;
  const host = String(options.host ?? options.hostname ?? 'localhost');
  const bracketed = host.includes(':') && !host.startsWith('[') ? `[${host}]` : host;
  const port = Number(options.port ?? 80);
  return `http://${bracketed}${port === 80 ? '' : `:${port}`}${path.startsWith('/') ? path : `/${path}`}`;
}
