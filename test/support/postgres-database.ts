// A Postgres database of its own on the suite's server, for services started as processes that share it. A service
// runs the deployment's jobs over its whole database: its alert evaluator evaluates every rule (by the real clock)
// and its notifier claims every delivery, so on the suite's shared database it would take up the rules and
// deliveries of the test files running beside it (a rule evaluated by another clock, a delivery sent elsewhere).
import { randomUUID } from 'node:crypto';
import { Client } from 'pg';

async function onServer(serverUrl: string, statement: string): Promise<void> {
  const client = new Client({ connectionString: serverUrl });
  await client.connect();
  try {
    await client.query(statement);
  } finally {
    await client.end();
  }
}

/** A new, empty database on the server of `serverUrl`: its URL, and the drop of it (its connections cut). */
async function ownDatabase(serverUrl: string): Promise<{ url: string; drop(): Promise<void> }> {
  // A name of letters, digits and underscores alone: it is written into the statements as it is.
  const name = `test_${randomUUID().replaceAll('-', '')}`;
  await onServer(serverUrl, `CREATE DATABASE ${name}`);
  const url = new URL(serverUrl);
  url.pathname = `/${name}`;
  return { url: url.toString(), drop: () => onServer(serverUrl, `DROP DATABASE IF EXISTS ${name} WITH (FORCE)`) };
}

/**
 * The settings that give a test's child services a database of their own when the suite runs on a Postgres server
 * (without one, each child has its PGlite under its data directory already), and the drop of it.
 */
export async function childPostgres(): Promise<{ environment: Record<string, string>; drop(): Promise<void> }> {
  if (!process.env.DATABASE_URL) return { environment: {}, drop: async () => undefined };
  const database = await ownDatabase(process.env.DATABASE_URL);
  return { environment: { DATABASE_URL: database.url }, drop: database.drop };
}
