/** `simulate`: serves the simulated upstream on its own (docker-compose, manual tries, the benchmark). */
import { readFile } from 'node:fs/promises';
import { defineCommand, parseCommand } from '../command-line.js';
import type { Io } from '../context.js';
import { UsageError } from '../errors.js';
import { startSimulator } from './server.js';

export const SIMULATE = defineCommand({
  name: 'simulate',
  summary: 'serve the simulated upstream API on its own (docker-compose, manual tries, the benchmark)',
  flags: {
    port: { type: 'string', value: 'P', default: '8080', help: 'port to listen on (0: any free port)' },
    host: { type: 'string', value: 'H', default: '127.0.0.1', help: 'address to listen on' },
    records: { type: 'string', value: 'N', default: '1000', help: 'generated records' },
    seed: { type: 'string', value: 'S', default: '1', help: 'dataset seed (same seed, same records)' },
    change: { type: 'string', value: 'N', default: '0', help: 'start with N records changed, deterministically' },
    'tls-cert': { type: 'string', value: 'FILE', help: 'serve HTTPS with this certificate (PEM; needs --tls-key)' },
    'tls-key': { type: 'string', value: 'FILE', help: "the certificate's private key (PEM)" },
  },
  notes: 'credentials: demo@example.com / demo-password, or SIMULATOR_EMAIL / SIMULATOR_PASSWORD',
});

export async function simulateCommand(args: string[], io: Io): Promise<number> {
  const flags = parseCommand(SIMULATE, args);
  const number = (name: string, value: string, min: number) => {
    if (!/^\d+$/.test(value) || Number(value) < min) throw new UsageError(`--${name} must be a whole number >= ${min}`);
    return Number(value);
  };
  if ((flags['tls-cert'] === undefined) !== (flags['tls-key'] === undefined)) throw new UsageError('--tls-cert and --tls-key go together');
  const tls = flags['tls-cert'] !== undefined && flags['tls-key'] !== undefined
    ? { cert: await readFile(flags['tls-cert']), key: await readFile(flags['tls-key']) }
    : undefined;
  const simulator = await startSimulator({
    tls,
    port: number('port', flags.port, 0),
    host: flags.host,
    records: number('records', flags.records, 0),
    seed: number('seed', flags.seed, 0),
    email: io.env.SIMULATOR_EMAIL || undefined,
    password: io.env.SIMULATOR_PASSWORD || undefined,
  });
  // A changed upstream for re-sync benchmarks: deterministic from the seed.
  const change = number('change', flags.change, 0);
  if (change > 0) simulator.mutate({ change });
  io.stdout.write(
    `simulated upstream listening on ${simulator.url} with ${simulator.recordCount()} records\n` +
      `  WINE_API_BASE_URL=${simulator.url} WINE_API_EMAIL=${simulator.email} WINE_API_PASSWORD=<the simulator password>\n`,
  );
  await new Promise<void>((resolve) => {
    process.once('SIGTERM', resolve);
    process.once('SIGINT', resolve);
  });
  await simulator.close();
  return 0;
}
