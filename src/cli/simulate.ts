/** `simulate`: serves the simulated upstream on its own (docker-compose, manual tries, the benchmark). */
import { readFile } from 'node:fs/promises';
import { defineCommand, parseCommand } from './command-line.js';
import type { Io } from './io.js';
import { UsageError } from '../errors.js';
import { readSetting } from '../settings/read.js';
import { DEFAULT_EMAIL, DEFAULT_PASSWORD, startSimulator } from '../simulator/server.js';

export const SIMULATE = defineCommand({
  name: 'simulate',
  summary: 'serve the simulated upstream API on its own (docker-compose, manual tries, the benchmark)',
  flags: {
    port: {
      type: 'string',
      value: 'P',
      default: '8080',
      integer: { min: 0, max: 65_535 },
      help: 'port to listen on (0: any free port)',
    },
    host: { type: 'string', value: 'H', default: '127.0.0.1', help: 'address to listen on' },
    records: {
      type: 'string',
      value: 'N',
      default: '1000',
      integer: { min: 0, max: 100_000_000 },
      help: 'generated records',
    },
    seed: {
      type: 'string',
      value: 'S',
      default: '1',
      integer: { min: 0, max: 2_147_483_647 },
      help: 'dataset seed (same seed, same records)',
    },
    change: {
      type: 'string',
      value: 'N',
      default: '0',
      integer: { min: 0, max: 100_000_000 },
      help: 'start with N records changed, deterministically',
    },
    'tls-cert': { type: 'string', value: 'FILE', help: 'serve HTTPS with this certificate (PEM; needs --tls-key)' },
    'tls-key': { type: 'string', value: 'FILE', help: "the certificate's private key (PEM)" },
  },
  env: { needs: [], reads: ['SIMULATOR_EMAIL', 'SIMULATOR_PASSWORD'] },
  notes: `credentials: ${DEFAULT_EMAIL} / ${DEFAULT_PASSWORD}, or SIMULATOR_EMAIL / SIMULATOR_PASSWORD`,
});

export async function simulateCommand(args: string[], io: Io): Promise<number> {
  const flags = parseCommand(SIMULATE, args);
  if ((flags['tls-cert'] === undefined) !== (flags['tls-key'] === undefined))
    throw new UsageError('--tls-cert and --tls-key go together');
  const tls =
    flags['tls-cert'] !== undefined && flags['tls-key'] !== undefined
      ? { cert: await readFile(flags['tls-cert']), key: await readFile(flags['tls-key']) }
      : undefined;
  const simulator = await startSimulator({
    tls,
    port: Number(flags.port),
    host: flags.host,
    records: Number(flags.records),
    seed: Number(flags.seed),
    email: readSetting(io.env, 'SIMULATOR_EMAIL', []),
    password: readSetting(io.env, 'SIMULATOR_PASSWORD', []),
  });
  // A changed upstream for re-sync benchmarks: deterministic from the seed.
  const change = Number(flags.change);
  if (change > 0) simulator.mutate({ change });
  // A line that works when pasted: the demo password is no secret and is printed; a password the
  // user chose is, so the line refers to the variable that holds it instead.
  const password = readSetting(io.env, 'SIMULATOR_PASSWORD', [])
    ? '"$SIMULATOR_PASSWORD"'
    : shellQuote(DEFAULT_PASSWORD);
  io.stdout.write(
    `simulated upstream listening on ${simulator.url} with ${simulator.recordCount()} records\n` +
      `  WINE_API_BASE_URL=${shellQuote(simulator.url)} WINE_API_EMAIL=${shellQuote(simulator.email)} ` +
      `WINE_API_PASSWORD=${password}\n`,
  );
  await new Promise<void>((resolve) => {
    process.once('SIGTERM', resolve);
    process.once('SIGINT', resolve);
  });
  await simulator.close();
  return 0;
}

/** A word for a POSIX shell: as is when it is plain, else in single quotes. */
function shellQuote(value: string): string {
  return /^[\w@%+=:,./-]+$/.test(value) ? value : `'${value.replaceAll("'", "'\\''")}'`;
}
