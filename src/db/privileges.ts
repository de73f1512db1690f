/**
 * A statement refused for a missing privilege (SQLSTATE 42501) while the job set up its schemas,
 * as one sentence: what it tried, as which role, and the SQL that fixes it. The job's role needs
 * to own SYNC_DB_SCHEMA and SYNC_BI_SCHEMA, or to be allowed to create them (sql/sync_role.sql).
 */
import { ConfigError } from '../errors.js';
import { quoteIdent, type Pool } from './pool.js';
import { loadStatements } from './statements.js';

const SQL = loadStatements('db/privileges.sql', ['standing']);
const INSUFFICIENT_PRIVILEGE = '42501';

interface Standing {
  role: string;
  database: string;
  may_create_schemas: boolean;
  data_owner: string | null;
  data_create: boolean | null;
  bi_owner: string | null;
  bi_create: boolean | null;
}

/** The sentence for `error` when a privilege was missing; undefined for any other error. */
export async function explainMissingPrivilege(
  pool: Pool,
  error: unknown,
  schema: string,
  biSchema: string | undefined,
): Promise<ConfigError | undefined> {
  const denied = deniedPrivilege(error);
  if (denied === undefined) return undefined;
  let s: Standing;
  try {
    s = (await pool.query<Standing>(SQL.standing, [schema, biSchema ?? null])).rows[0]!;
  } catch {
    return undefined;
  }
  const role = quoteIdent(s.role);
  const see = 'see sql/sync_role.sql';
  const schemas = [
    { name: schema, setting: 'SYNC_DB_SCHEMA', owner: s.data_owner, mayCreate: s.data_create },
    ...(biSchema === undefined
      ? []
      : [{ name: biSchema, setting: 'SYNC_BI_SCHEMA', owner: s.bi_owner, mayCreate: s.bi_create }]),
  ];
  for (const t of schemas) {
    const name = quoteIdent(t.name);
    if (t.owner === null && !s.may_create_schemas) {
      return new ConfigError(
        `cannot create schema ${name} (${t.setting}) as role ${role}, which may not create schemas in ` +
          `database ${quoteIdent(s.database)}: as a superuser or the database owner, run CREATE SCHEMA ` +
          `${name} AUTHORIZATION ${role}; or GRANT CREATE ON DATABASE ${quoteIdent(s.database)} TO ${role}; (${see})`,
      );
    }
    if (t.owner !== null && t.owner !== s.role && t.mayCreate === false) {
      return new ConfigError(
        `cannot create tables and views in schema ${name} (${t.setting}) as role ${role}: the schema ` +
          `belongs to ${quoteIdent(t.owner)}; as a superuser or its owner, run ALTER SCHEMA ${name} OWNER ` +
          `TO ${role}; (${see})`,
      );
    }
  }
  return new ConfigError(
    `setting up schema ${quoteIdent(schema)} as role ${role} was refused (${denied.message}): the job's ` +
      `role must own SYNC_DB_SCHEMA and SYNC_BI_SCHEMA and everything in them, e.g. ALTER TABLE … OWNER TO ` +
      `${role}; (${see})`,
  );
}

/** The 42501 error in `error` or its causes (migrate wraps a failed migration's error). */
function deniedPrivilege(error: unknown): Error | undefined {
  for (let e = error; e instanceof Error; e = e.cause) {
    if ((e as { code?: unknown }).code === INSUFFICIENT_PRIVILEGE) return e;
  }
  return undefined;
}
