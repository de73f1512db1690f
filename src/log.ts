/**
 * The pino root logger. Logs go to stderr (stdout is for what the user asked for): JSON lines,
 * pretty when stderr is a terminal. Secrets are removed twice: by field path (`redact`) and, as a
 * last line of defence for errors from libraries, by value in every written line (secret-registry.ts).
 */
import { createRequire } from 'node:module';
import { pino, type Logger } from 'pino';
import type PinoPretty from 'pino-pretty';
import type { SecretRegistry } from './text/secret-registry.js';
import { stripJsonControls } from './text/safe-text.js';
import { terminalLine } from './text/terminal-line.js';

export type { Logger };
export { SecretRegistry } from './text/secret-registry.js';

const REDACT_PATHS = [
  'password',
  'token',
  'authorization',
  'Authorization',
  'headers.authorization',
  'headers.Authorization',
  '*.password',
  '*.token',
  '*.authorization',
  '*.headers.authorization',
  'api.password',
  'config.api.password',
  'databaseUrl',
  'config.databaseUrl',
];

const CENSOR = '[Redacted]';

export interface LoggerOptions {
  level: string;
  secrets: SecretRegistry;
  /** Defaults to stderr; tests pass a stream to read the lines back. */
  destination?: NodeJS.WritableStream;
  pretty?: boolean;
  /** Include stacks in logged errors. */
  debug?: boolean;
  /** Colours in pretty output (off for NO_COLOR); default on. */
  color?: boolean;
}

/**
 * pino-pretty, loaded only for a terminal: a run whose stderr is a pipe or a file (cron, a
 * container, the benchmark) does not pay for its loading at start-up. `require`, not `import()`:
 * the logger is made synchronously, and pino-pretty is CommonJS.
 */
function pretty(options: PinoPretty.PrettyOptions): PinoPretty.PrettyStream {
  return (createRequire(import.meta.url)('pino-pretty') as typeof PinoPretty)(options);
}

export function createLogger(options: LoggerOptions): Logger {
  const usePretty = options.pretty ?? (options.destination === undefined && process.stderr.isTTY === true);
  const destination =
    options.destination ??
    (usePretty
      ? pretty({
          destination: 2,
          sync: true,
          colorize: options.color ?? true,
          translateTime: 'SYS:HH:MM:ss.l',
          ignore: 'pid,hostname,app',
          singleLine: true,
        })
      : pino.destination({ fd: 2, sync: true }));
  return pino(
    {
      level: options.level,
      base: { app: 'wine-recon-sync' },
      redact: { paths: REDACT_PATHS, censor: CENSOR },
      serializers: { err: (e: unknown) => serializeError(e, options.debug === true) },
      hooks: {
        streamWrite: (line) => {
          terminalLine.clear(); // a progress line on the terminal goes first, or the log line is glued onto it
          // A terminal shows pretty values unescaped: upstream text (field names, error bodies) loses its control
          // characters.
          const scrubbed = options.secrets.scrub(line);
          return usePretty ? stripJsonControls(scrubbed) : scrubbed;
        },
      },
    },
    destination,
  );
}

/**
 * Errors are logged by type, code, message and the chain of causes: never their other fields (a got error carries
 * request options).
 */
export function serializeError(error: unknown, withStack = false): Record<string, unknown> {
  if (!(error instanceof Error)) return { message: String(error) };
  const out: Record<string, unknown> = { type: error.name, message: error.message };
  const code = (error as { code?: unknown }).code;
  if (typeof code === 'string') out.code = code;
  if (withStack) out.stack = error.stack;
  if (error.cause !== undefined) out.cause = serializeError(error.cause, withStack);
  return out;
}
