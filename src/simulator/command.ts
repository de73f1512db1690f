/** `simulate`: serves the simulated upstream on its own (docker-compose, manual tries, the benchmark). */
import { parseFlags, type Io } from '../context.js';
import { UsageError } from '../errors.js';
import { startSimulator } from './server.js';

export async function simulateCommand(args: string[], io: Io): Promise<number> {
  const flags = parseFlags(args, {
    port: { type: 'string', default: '8080' },
    host: { type: 'string', default: '127.0.0.1' },
    records: { type: 'string', default: '1000' },
    seed: { type: 'string', default: '1' },
    change: { type: 'string', default: '0' },
  });
  const number = (name: string, value: string, min: number) => {
    if (!/^\d+$/.test(value) || Number(value) < min) throw new UsageError(`--${name} must be a whole number >= ${min}`);
    return Number(value);
  };
  const simulator = await startSimulator({
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
