/**
 * Keeps slow and idle clients from starving the daemon's port, without a cap they could fill.
 * Rule: a new connection is always accepted; over a limit the OLDEST waiting one is closed.
 */
import type { Server } from 'node:http';
import type { Socket } from 'node:net';

export interface GuardLimits {
  /** Waiting connections one client address may hold before its oldest is closed. */
  perAddress: number;
  /** Waiting connections of all addresses before the oldest of all is closed. */
  total: number;
}

export function guardConnections(server: Server, limits: GuardLimits): void {
  // Insertion order is age order: a Set iterates oldest first.
  const all = new Set<Socket>();
  const byAddress = new Map<string, Set<Socket>>();

  const forget = (socket: Socket) => {
    all.delete(socket);
    const address = socket.remoteAddress ?? '';
    const mine = byAddress.get(address);
    if (mine === undefined) return;
    mine.delete(socket);
    if (mine.size === 0) byAddress.delete(address);
  };
  const oldest = (set: Set<Socket>) => set.values().next().value as Socket;
  const cut = (socket: Socket) => {
    forget(socket);
    socket.destroy();
  };
  const waiting = (socket: Socket) => {
    if (socket.destroyed) return;
    forget(socket); // re-entered at the end: idle from now
    const address = socket.remoteAddress ?? '';
    let mine = byAddress.get(address);
    if (mine === undefined) byAddress.set(address, (mine = new Set()));
    mine.add(socket);
    all.add(socket);
    if (mine.size > limits.perAddress) cut(oldest(mine));
    if (all.size > limits.total) cut(oldest(all));
  };

  server.on('connection', (socket: Socket) => {
    waiting(socket);
    socket.once('close', () => forget(socket));
  });
  server.on('request', (req, res) => {
    const socket = req.socket;
    forget(socket);
    // Back to waiting once answered, should the client keep the connection for another request.
    res.once('finish', () => waiting(socket));
  });
}
