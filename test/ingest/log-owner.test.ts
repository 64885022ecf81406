// One ingest log, one instance (src/ingest/log-owner.ts): a directory whose log another live process writes is
// refused with an error that says what to do; once that process is gone, the directory is taken over.
import { spawn } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import pino from 'pino';
import { IngestLog } from '../../src/ingest/log';

const ROOT = path.resolve(__dirname, '..', '..');
const open = (directory: string) =>
  IngestLog.open({ directory, maxBytes: 1024 ** 3, log: pino({ level: 'silent' }), rowsOf: () => 1 });

it('refuses a log directory that another live instance owns, and takes it over once that one is killed', async () => {
  const directory = fs.mkdtempSync(path.join(os.tmpdir(), 'log-owner-'));
  // Another process opens the log and keeps running, as an instance would.
  const script = `require('./src/ingest/log').IngestLog.open({ directory: ${JSON.stringify(directory)},
    maxBytes: 1e9, log: { warn() {} }, rowsOf: () => 1 }); console.log('open'); setInterval(() => {}, 1000);`;
  const other = spawn(process.execPath, ['--import', 'tsx', '-e', script], {
    cwd: ROOT,
    stdio: ['ignore', 'pipe', 'inherit'],
  });
  await new Promise<void>((resolve) => other.stdout!.once('data', () => resolve()));

  expect(() => open(directory)).toThrow(
    new RegExp(
      `belongs to another instance \\(process ${other.pid} on .*\\): give each instance its own INGEST_LOG_DIR`,
    ),
  );

  other.kill('SIGKILL');
  await new Promise((resolve) => other.once('exit', resolve));
  other.stdout!.destroy();
  expect(() => open(directory)).not.toThrow();
  expect(JSON.parse(fs.readFileSync(path.join(directory, 'OWNER'), 'utf8'))).toEqual({
    host: os.hostname(),
    pid: process.pid,
  });
});

it('takes over an owner file another host stopped refreshing, and refuses one it still refreshes', () => {
  const directory = fs.mkdtempSync(path.join(os.tmpdir(), 'log-owner-'));
  const owner = path.join(directory, 'OWNER');
  fs.writeFileSync(owner, JSON.stringify({ host: 'another-host', pid: 1 }));
  expect(() => open(directory)).toThrow(/process 1 on another-host/);
  const stale = new Date(Date.now() - 60_000);
  fs.utimesSync(owner, stale, stale);
  expect(() => open(directory)).not.toThrow();
});
