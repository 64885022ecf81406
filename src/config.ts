// Reads and validates the service's configuration from the environment, once, at start-up.
import path from 'node:path';
import { z } from 'zod';
import ipaddr from 'ipaddr.js';
import { TOPOLOGIES } from './db/topology';

const booleanFlag = z.enum(['true', 'false', '1', '0']).transform((value) => value === 'true' || value === '1');
const seconds = (fallback: number) => z.coerce.number().int().positive().default(fallback);
const bytes = (fallback: number) => z.coerce.number().int().min(1024).default(fallback);

/** An entry of WEBHOOK_ALLOW_HOSTS: a host name (`*.` for its subdomains), an address or a CIDR network. */
const isAllowListEntry = (entry: string) =>
  ipaddr.isValidCIDR(entry) || ipaddr.isValid(entry) || /^(\*\.)?[a-z0-9-]+(\.[a-z0-9-]+)*\.?$/i.test(entry);

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
  // The ClickHouse server's layout (docs/scale-out.md#clickhouse-topologies): how the migrations are rendered.
  CLICKHOUSE_TOPOLOGY: z.enum(TOPOLOGIES).default('single'),
  CLICKHOUSE_CLUSTER: z
    .string()
    .regex(/^[A-Za-z_][A-Za-z0-9_]*$/, 'must be a plain identifier')
    .default('runwatch'),
  // A Postgres server that does not answer fails the call with 503 after these (docs/foundation.md#store-faults).
  DATABASE_CONNECT_TIMEOUT_MS: z.coerce.number().int().min(100).max(60_000).default(3000),
  DATABASE_QUERY_TIMEOUT_MS: z.coerce.number().int().min(100).max(600_000).default(5000),
  JWT_SECRET: z.string().min(32, 'must be at least 32 characters').optional(),
  SESSION_TTL_SECONDS: seconds(12 * 3600),
  BODY_LIMIT_BYTES: bytes(1024 * 1024),
  INGEST_BODY_LIMIT_BYTES: bytes(10 * 1024 * 1024),
  AUTH_RATE_LIMIT_PER_MINUTE: z.coerce.number().int().positive().default(30),
  // Login throttling (docs/foundation.md#login-throttling): failures allowed per address + e-mail and per address,
  // then delays doubling up to the longest.
  LOGIN_FAILURES_PER_EMAIL: z.coerce.number().int().positive().default(10),
  LOGIN_FAILURES_PER_ADDRESS: z.coerce.number().int().positive().default(30),
  LOGIN_MAX_DELAY_SECONDS: z.coerce.number().int().min(1).max(86400).default(900),
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
  // A report whose windows hold at most this many runs reads raw rows; more, the rollups (docs/reports.md). 0: by
  // the windows' length alone.
  REPORT_RAW_MAX_RUNS: z.coerce.number().int().min(0).default(1_000_000),
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
  // The longest a flush asked for by reads side by side rests after the last one (docs/limits.md).
  INGEST_FLUSH_MAX_REST_MS: z.coerce.number().int().min(0).max(60_000).default(250),
  // /readyz answers 503 while the backlog not in ClickHouse is past either (docs/ingest.md#readiness).
  INGEST_READY_MAX_BACKLOG_SECONDS: z.coerce.number().int().min(1).default(60),
  INGEST_READY_MAX_BACKLOG_ROWS: z.coerce.number().int().positive().default(1_000_000),
  // OpenTelemetry ingest (contract §8): how long spans of a trace wait for their agent span, and for late children.
  OTLP_ASSEMBLY_SECONDS: z.coerce.number().int().min(1).max(86400).default(300),
  // Worker threads that decode and map OTLP exports; 0 maps them on the event loop.
  OTLP_DECODE_WORKERS: z.coerce.number().int().min(0).max(16).default(1),
  // The heap of each of those workers: an export that needs more is answered 503 (docs/limits.md).
  OTLP_WORKER_HEAP_MB: z.coerce.number().int().min(32).max(16_384).default(512),
  // A JSON file of model prices that extends or overrides the shipped table (src/pricing/model-prices.json).
  PRICE_TABLE_FILE: z.string().min(1).optional(),
  LOOP_REPEAT_THRESHOLD: z.coerce.number().int().min(2).default(4),
  LOOP_ERROR_THRESHOLD: z.coerce.number().int().min(2).default(3),
  LOOP_CYCLE_REPEATS: z.coerce.number().int().min(2).default(3),
  LOOP_MONOLOGUE_THRESHOLD: z.coerce.number().int().min(2).default(3),
  ALERT_EVAL_INTERVAL: seconds(60),
  // Where notifications may go (docs/notifications.md): internal addresses are refused unless listed here (host
  // names, `*.` subdomains, addresses, CIDR networks, comma-separated); WEBHOOK_DENY_PRIVATE=false allows them all.
  WEBHOOK_DENY_PRIVATE: booleanFlag.default(true),
  WEBHOOK_ALLOW_HOSTS: z
    .string()
    .transform((list) =>
      list
        .split(',')
        .map((entry) => entry.trim())
        .filter((entry) => entry !== ''),
    )
    .refine(
      (entries) => entries.every(isAllowListEntry),
      'each entry must be a host name, an address or a CIDR network',
    )
    .default([]),
  PUBLIC_URL: z.url().optional(),
  // Overload (docs/limits.md): request-body bytes held at once; lanes of reads and of ingest (requests at once, then
  // waiting, for at most a time); connections (in all, per client address) and their header, request and idle times.
  REQUEST_BYTES_IN_FLIGHT: bytes(16 * 1024 * 1024),
  READ_CONCURRENCY: z.coerce.number().int().min(1).max(1024).default(4),
  READ_QUEUE: z.coerce.number().int().min(0).default(64),
  INGEST_CONCURRENCY: z.coerce.number().int().min(1).max(4096).default(64),
  INGEST_QUEUE: z.coerce.number().int().min(0).default(512),
  LANE_QUEUE_TIMEOUT_MS: z.coerce.number().int().min(1).max(60_000).default(1000),
  READ_FLUSH_WAIT_MS: z.coerce.number().int().min(1).max(600_000).default(10_000),
  READ_TIMEOUT_MS: z.coerce.number().int().min(100).max(3_600_000).default(15_000),
  READ_THREAD_NICE: z.coerce.number().int().min(0).max(19).default(19),
  MAX_CONNECTIONS: z.coerce.number().int().min(1).default(4096),
  MAX_CONNECTIONS_PER_ADDRESS: z.coerce.number().int().min(0).default(512),
  HTTP_HEADERS_TIMEOUT_MS: z.coerce.number().int().min(100).max(600_000).default(10_000),
  HTTP_REQUEST_TIMEOUT_MS: z.coerce.number().int().min(100).max(3_600_000).default(60_000),
  HTTP_KEEP_ALIVE_TIMEOUT_MS: z.coerce.number().int().min(100).max(600_000).default(5000),
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
          layout: { topology: env.CLICKHOUSE_TOPOLOGY, cluster: env.CLICKHOUSE_CLUSTER },
        }
      : undefined,
    jwtSecret: env.JWT_SECRET,
    sessionTtlSeconds: env.SESSION_TTL_SECONDS,
    bodyLimitBytes: env.BODY_LIMIT_BYTES,
    ingestBodyLimitBytes: env.INGEST_BODY_LIMIT_BYTES,
    authRateLimitPerMinute: env.AUTH_RATE_LIMIT_PER_MINUTE,
    loginThrottle: {
      failuresPerEmail: env.LOGIN_FAILURES_PER_EMAIL,
      failuresPerAddress: env.LOGIN_FAILURES_PER_ADDRESS,
      maxDelaySeconds: env.LOGIN_MAX_DELAY_SECONDS,
    },
    logLevel: env.LOG_LEVEL,
    logPretty: env.LOG_PRETTY ?? process.stdout.isTTY === true,
    trustProxy: env.TRUST_PROXY,
    runAbandonAfterSeconds: env.RUN_ABANDON_AFTER_SECONDS,
    abandonCheckIntervalSeconds: env.ABANDON_CHECK_INTERVAL_SECONDS,
    reportLimits: {
      maxExecutionSeconds: env.REPORT_MAX_EXECUTION_SECONDS,
      maxMemoryBytes: env.REPORT_MAX_MEMORY_BYTES,
    },
    reportRawMaxRuns: env.REPORT_RAW_MAX_RUNS,
    ingestLog:
      env.INGEST_LOG === 'on'
        ? {
            directory: path.resolve(env.INGEST_LOG_DIR ?? path.join(dataDir, 'ingest-log')),
            maxBytes: env.INGEST_LOG_MAX_BYTES,
          }
        : undefined,
    ingestFlushMaxRows: env.INGEST_FLUSH_MAX_ROWS,
    ingestFlushIntervalMs: env.INGEST_FLUSH_INTERVAL_MS,
    ingestFlushMaxRestMs: env.INGEST_FLUSH_MAX_REST_MS,
    readyMaxBacklog: { rows: env.INGEST_READY_MAX_BACKLOG_ROWS, ageMs: env.INGEST_READY_MAX_BACKLOG_SECONDS * 1000 },
    // With ClickHouse a server, other instances may have acknowledged a start this one cannot see yet: a steps or
    // finish call that misses a run that young looks again for up to a flush interval before its 404.
    ingestMissRetryMs: env.CLICKHOUSE_URL ? env.INGEST_FLUSH_INTERVAL_MS : 0,
    otlpAssemblySeconds: env.OTLP_ASSEMBLY_SECONDS,
    otlpDecodeWorkers: env.OTLP_DECODE_WORKERS,
    otlpWorkerHeapMb: env.OTLP_WORKER_HEAP_MB,
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
    webhookAllowHosts: env.WEBHOOK_ALLOW_HOSTS,
    publicUrl: env.PUBLIC_URL,
    shutdownGraceMs: env.SHUTDOWN_GRACE_MS,
    requestBytesInFlight: env.REQUEST_BYTES_IN_FLIGHT,
    readFlushWaitMs: env.READ_FLUSH_WAIT_MS,
    read: { timeoutMs: env.READ_TIMEOUT_MS, threadNice: env.READ_THREAD_NICE },
    lanes: {
      read: { concurrency: env.READ_CONCURRENCY, queue: env.READ_QUEUE, queueTimeoutMs: env.LANE_QUEUE_TIMEOUT_MS },
      ingest: {
        concurrency: env.INGEST_CONCURRENCY,
        queue: env.INGEST_QUEUE,
        queueTimeoutMs: env.LANE_QUEUE_TIMEOUT_MS,
      },
    },
    connections: {
      max: env.MAX_CONNECTIONS,
      perAddress: env.MAX_CONNECTIONS_PER_ADDRESS,
      headersTimeoutMs: env.HTTP_HEADERS_TIMEOUT_MS,
      requestTimeoutMs: env.HTTP_REQUEST_TIMEOUT_MS,
      keepAliveTimeoutMs: env.HTTP_KEEP_ALIVE_TIMEOUT_MS,
    },
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
  if (parsed.data.CLICKHOUSE_TOPOLOGY !== 'single' && !parsed.data.CLICKHOUSE_URL) {
    throw new ConfigError('invalid configuration: CLICKHOUSE_TOPOLOGY other than single needs CLICKHOUSE_URL');
  }
  const config = toConfig(parsed.data);
  const usesRealServers = config.databaseUrl !== undefined || config.clickhouse !== undefined;
  if (usesRealServers && !config.jwtSecret) {
    throw new ConfigError('invalid configuration: JWT_SECRET is required when DATABASE_URL or CLICKHOUSE_URL is set');
  }
  return config;
}
