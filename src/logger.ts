// Builds the service's structured logger (pino): JSON in production, pretty on a terminal.
import pino, { type Logger } from 'pino';
import type { Config } from './config';

export type { Logger };

export function createLogger(config: Pick<Config, 'logLevel' | 'logPretty'>): Logger {
  return pino({
    level: config.logLevel,
    base: { service: 'runwatch' },
    redact: ['req.headers.authorization', 'req.headers.cookie', 'res.headers["set-cookie"]'],
    ...(config.logPretty ? { transport: { target: 'pino-pretty', options: { singleLine: true } } } : {}),
  });
}
