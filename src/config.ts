// Reads and validates the service's configuration from the environment, once, at start-up.
import path from 'node:path';
import { z } from 'zod';

const booleanFlag = z.enum(['true', 'false', '1', '0']).transform((value) => value === 'true' || value === '1');
const seconds = (fallback: number) => z.coerce.number().int().positive().default(fallback);
const bytes = (fallback: number) => z.coerce.number().int().min(1024).default(fallback);

const environmentSchema = z.object({
  PORT: z.coerce.number().int().min(0).max(65535).default(8080),
  DATA_DIR: z.string().min(1).default('./data'),
  DATABASE_URL: z.url({ protocol: /^postgres(ql)?$/ }).optional(),
  CLICKHOUSE_URL: z.url({ protocol: /^https?$/ }).optional(),
  CLICKHOUSE_USER: z.string().default('default'),
  CLICKHOUSE_PASSWORD: z.string().default(''),
  CLICKHOUSE_DATABASE: z
    .string()
    .regex(/^[A-Za-z_][A-Za-z0-9_]*$/, 'must be a plain identifier')
    .default('default'),
  // A Postgres server that does not answer fails the call with 503 after these (docs/foundation.md#store-faults).
  DATABASE_CONNECT_TIMEOUT_MS: z.coerce.number().int().min(100).max(60_000).default(3000),
  DATABASE_QUERY_TIMEOUT_MS: z.coerce.number().int().min(100).max(600_000).default(5000),
  JWT_SECRET: z.string().min(32, 'must be at least 32 characters').optional(),
  SESSION_TTL_SECONDS: seconds(12 * 3600),
  BODY_LIMIT_BYTES: bytes(1024 * 1024),
  INGEST_BODY_LIMIT_BYTES: bytes(10 * 1024 * 1024),
  AUTH_RATE_LIMIT_PER_MINUTE: z.coerce.number().int().positive().default(30),
  LOGIN_FAILURES_PER_EMAIL: z.coerce.number().int().positive().default(10),
  LOG_LEVEL: z.enum(['fatal', 'error', 'warn', 'info', 'debug', 'trace', 'silent']).default('info'),
  LOG_PRETTY: booleanFlag.optional(),
  TRUST_PROXY: booleanFlag.default(false),
  // A run still running this long after its start is marked abandoned. Bounded by the live-run table's TTL.
  RUN_ABANDON_AFTER_SECONDS: z.coerce
    .number()
    .int()
    .min(60)
    .max(3 * 86400)
    .default(86400),
  ABANDON_CHECK_INTERVAL_SECONDS: seconds(60),
  REPORT_MAX_EXECUTION_SECONDS: seconds(10),
  REPORT_MAX_MEMORY_BYTES: z.coerce
    .number()
    .int()
    .positive()
    .default(2 * 1024 ** 3),
  // The ingest log (docs/ingest.md): on by default; off makes instances stateless, inserting with async_insert.
  INGEST_LOG: z.enum(['on', 'off']).default('on'),
  INGEST_LOG_DIR: z.string().min(1).optional(),
  INGEST_LOG_MAX_BYTES: z.coerce
    .number()
    .int()
    .min(1024 * 1024)
    .default(1024 ** 3),
  INGEST_FLUSH_MAX_ROWS: z.coerce.number().int().positive().default(150_000),
  INGEST_FLUSH_INTERVAL_MS: z.coerce.number().int().min(10).max(60_000).default(1000),
  // OpenTelemetry ingest (contract §8): how long spans of a trace wait for their agent span, and for late children.
  OTLP_ASSEMBLY_SECONDS: z.coerce.number().int().min(1).max(86400).default(300),
  // Worker threads that decode and map OTLP exports; 0 maps them on the event loop.
  OTLP_DECODE_WORKERS: z.coerce.number().int().min(0).max(16).default(1),
  // A JSON file of model prices that extends or overrides the shipped table (src/pricing/model-prices.json).
  PRICE_TABLE_FILE: z.string().min(1).optional(),
  LOOP_REPEAT_THRESHOLD: z.coerce.number().int().min(2).default(4),
  LOOP_ERROR_THRESHOLD: z.coerce.number().int().min(2).default(3),
  LOOP_CYCLE_REPEATS: z.coerce.number().int().min(2).default(3),
  LOOP_MONOLOGUE_THRESHOLD: z.coerce.number().int().min(2).default(3),
  ALERT_EVAL_INTERVAL: seconds(60),
  WEBHOOK_DENY_PRIVATE: booleanFlag.default(false),
  PUBLIC_URL: z.url().optional(),
  // How long a stop (SIGTERM, SIGINT) waits for requests in flight, background jobs and the ingest log's last flush.
  SHUTDOWN_GRACE_MS: z.coerce.number().int().min(0).max(60_000).default(2000),
});

export type Config = ReturnType<typeof toConfig>;

function toConfig(env: z.infer<typeof environmentSchema>) {
  const dataDir = path.resolve(env.DATA_DIR);
  return {
    port: env.PORT,
    dataDir,
    databaseUrl: env.DATABASE_URL,
    postgresTimeouts: { connectMs: env.DATABASE_CONNECT_TIMEOUT_MS, queryMs: env.DATABASE_QUERY_TIMEOUT_MS },
    clickhouse: env.CLICKHOUSE_URL
      ? {
          url: env.CLICKHOUSE_URL,
          username: env.CLICKHOUSE_USER,
          password: env.CLICKHOUSE_PASSWORD,
          database: env.CLICKHOUSE_DATABASE,
        }
      : undefined,
    jwtSecret: env.JWT_SECRET,
    sessionTtlSeconds: env.SESSION_TTL_SECONDS,
    bodyLimitBytes: env.BODY_LIMIT_BYTES,
    ingestBodyLimitBytes: env.INGEST_BODY_LIMIT_BYTES,
    authRateLimitPerMinute: env.AUTH_RATE_LIMIT_PER_MINUTE,
    loginFailuresPerEmail: env.LOGIN_FAILURES_PER_EMAIL,
    logLevel: env.LOG_LEVEL,
    logPretty: env.LOG_PRETTY ?? process.stdout.isTTY === true,
    trustProxy: env.TRUST_PROXY,
    runAbandonAfterSeconds: env.RUN_ABANDON_AFTER_SECONDS,
    abandonCheckIntervalSeconds: env.ABANDON_CHECK_INTERVAL_SECONDS,
    reportLimits: {
      maxExecutionSeconds: env.REPORT_MAX_EXECUTION_SECONDS,
      maxMemoryBytes: env.REPORT_MAX_MEMORY_BYTES,
    },
    ingestLog:
      env.INGEST_LOG === 'on'
        ? {
            directory: path.resolve(env.INGEST_LOG_DIR ?? path.join(dataDir, 'ingest-log')),
            maxBytes: env.INGEST_LOG_MAX_BYTES,
          }
        : undefined,
    ingestFlushMaxRows: env.INGEST_FLUSH_MAX_ROWS,
    ingestFlushIntervalMs: env.INGEST_FLUSH_INTERVAL_MS,
    // With ClickHouse a server, other instances may have acknowledged a start this one cannot see yet: a steps or
    // finish call that misses a run that young looks again for up to a flush interval before its 404.
    ingestMissRetryMs: env.CLICKHOUSE_URL ? env.INGEST_FLUSH_INTERVAL_MS : 0,
    otlpAssemblySeconds: env.OTLP_ASSEMBLY_SECONDS,
    otlpDecodeWorkers: env.OTLP_DECODE_WORKERS,
    priceTableFile: env.PRICE_TABLE_FILE,
    loopThresholds: {
      repeat: env.LOOP_REPEAT_THRESHOLD,
      repeatedErrors: env.LOOP_ERROR_THRESHOLD,
      cyclePeriods: [2, 3],
      cycleRepeats: env.LOOP_CYCLE_REPEATS,
      monologue: env.LOOP_MONOLOGUE_THRESHOLD,
    },
    alertEvalIntervalSeconds: env.ALERT_EVAL_INTERVAL,
    webhookDenyPrivate: env.WEBHOOK_DENY_PRIVATE,
    publicUrl: env.PUBLIC_URL,
    shutdownGraceMs: env.SHUTDOWN_GRACE_MS,
  };
}

export class ConfigError extends Error {}

/** Parses the environment; a bad value throws one line naming the variable. */
export function loadConfig(env: NodeJS.ProcessEnv = process.env): Config {
  const present = Object.fromEntries(Object.entries(env).filter(([, value]) => value !== undefined && value !== ''));
  const parsed = environmentSchema.safeParse(present);
  if (!parsed.success) {
    const issue = parsed.error.issues[0];
    const name = String(issue.path[0]);
    throw new ConfigError(`invalid configuration: ${name}=${JSON.stringify(env[name] ?? '')}: ${issue.message}`);
  }
  const config = toConfig(parsed.data);
  const usesRealServers = config.databaseUrl !== undefined || config.clickhouse !== undefined;
  if (usesRealServers && !config.jwtSecret) {
    throw new ConfigError('invalid configuration: JWT_SECRET is required when DATABASE_URL or CLICKHOUSE_URL is set');
  }
  return config;
}
