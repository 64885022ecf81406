// The README's walkthrough, run as written in one bash process against a real service: it must never rot.
import { execFile } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { promisify } from 'node:util';
import { startChildService, type ChildService } from '../support/child-service';

const README = path.resolve(__dirname, '..', '..', 'README.md');
const SECTION_HEADING = '## Walkthrough';
// The step that waits for the first alert evaluation polls every 2 s; the rest takes a few seconds.
const SCRIPT_TIMEOUT_MS = 60_000;
const SERVICE_START_TIMEOUT_MS = 60_000;
// Printed before each command, so that the script's output can be cut back into one output per command.
const COMMAND_MARK = '--- walkthrough command ---';

const runBash = promisify(execFile);
type BashFailure = { code?: number; killed?: boolean; stdout: string; stderr: string };

/** The walkthrough: from its heading to the next section's. */
function walkthroughSection(readme: string): string {
  const start = readme.indexOf(SECTION_HEADING);
  if (start < 0) throw new Error(`README.md has no "${SECTION_HEADING}" section`);
  const end = readme.indexOf('\n## ', start + SECTION_HEADING.length);
  return readme.slice(start, end < 0 ? undefined : end);
}

/** The contents of the section's fenced ```sh blocks. */
function shellBlocks(section: string): string[] {
  return [...section.matchAll(/^```sh\n([\s\S]*?)^```$/gm)].map((match) => match[1]);
}

/** Whether bash would read on: after a trailing backslash, or with a single quote still open (a multi-line body). */
function continuesOnNextLine(command: string): boolean {
  return command.endsWith('\\') || (command.match(/'/g) ?? []).length % 2 === 1;
}

/** The commands of a block: each `$ ` line with its continuation lines. Output and comment lines are skipped. */
function commandsOf(block: string): string[] {
  const commands: string[] = [];
  let reading = false;
  for (const line of block.split('\n')) {
    if (reading && continuesOnNextLine(commands[commands.length - 1])) {
      commands[commands.length - 1] += `\n${line}`;
    } else {
      reading = line.startsWith('$ ');
      if (reading) commands.push(line.slice(2));
    }
  }
  return commands;
}

/**
 * A command as the test runs it: against the test's service, and with an HTTP error status failing curl (and so
 * the script, at that command) rather than passing an error body on to the next step.
 */
function forTestService(command: string, address: string): string {
  return command.replaceAll('localhost:8080', address).replaceAll('curl -s ', 'curl -sS --fail-with-body ');
}

/** Runs the commands in one bash process, so variables carry over; resolves to each command's output. */
async function runCommands(commands: string[], address: string): Promise<string[]> {
  const script = [
    'set -euo pipefail',
    `trap 'echo "walkthrough command failed with $?: $BASH_COMMAND" >&2' ERR`,
    // A newline first: curl prints no newline after a body.
    ...commands.flatMap((command) => [`printf '\\n%s\\n' '${COMMAND_MARK}'`, forTestService(command, address)]),
  ].join('\n');
  const { stdout } = await runBash('bash', ['-c', script], { timeout: SCRIPT_TIMEOUT_MS }).catch(
    (error: BashFailure) => {
      // execFile's own message repeats the whole script: say what failed, and what the walkthrough printed before.
      const how = error.killed
        ? `timed out after ${SCRIPT_TIMEOUT_MS / 1000} s`
        : `failed with exit code ${error.code}`;
      throw new Error(`the walkthrough ${how}:\n${error.stderr}\nits output:\n${error.stdout}`);
    },
  );
  return stdout
    .split(`\n${COMMAND_MARK}\n`)
    .slice(1)
    .map((output) => output.trim());
}

describe('README walkthrough', () => {
  const commands = shellBlocks(walkthroughSection(fs.readFileSync(README, 'utf8'))).flatMap(commandsOf);

  it('reads commands with their continuation lines, and no output lines', () => {
    const block = [
      '# a comment',
      "$ curl -s -X POST localhost:8080/runs -H 'Content-Type: application/json' \\",
      `    -d '{"steps":[`,
      `      {"index":0}]}'`,
      '{"id":"01a2…"}',
      '$ echo done',
      'done',
    ].join('\n');
    expect(commandsOf(block)).toEqual([
      "curl -s -X POST localhost:8080/runs -H 'Content-Type: application/json' \\\n" +
        `    -d '{"steps":[\n      {"index":0}]}'`,
      'echo done',
    ]);
  });

  it('has commands that paste as they stand: no "…" in any of them', () => {
    expect(commands.length).toBeGreaterThan(0);
    expect(commands.filter((command) => command.includes('…'))).toEqual([]);
  });

  describe('run against a real service', () => {
    let dataDir: string;
    let service: ChildService;
    let outputs: string[];

    beforeAll(async () => {
      dataDir = fs.mkdtempSync(path.join(os.tmpdir(), 'runwatch-readme-'));
      service = await startChildService(dataDir, {
        // Embedded stores in a fresh directory, as `npm start` has them: the walkthrough's fixed e-mail registers
        // on every run, and no other instance's evaluator (on a shared Postgres) takes the rule's rounds.
        DATABASE_URL: '',
        // The events step waits for the first evaluation: one second rather than a minute.
        ALERT_EVAL_INTERVAL: '1',
      });
      outputs = await runCommands(commands, new URL(service.url).host);
    }, SERVICE_START_TIMEOUT_MS + SCRIPT_TIMEOUT_MS);

    afterAll(async () => {
      await service?.stop();
      fs.rmSync(dataDir, { recursive: true, force: true });
    });

    /** The JSON printed by the curl command that contains `fragment`, of the shape the caller reads. */
    function outputOf<Output = unknown>(fragment: string): Output {
      const index = commands.findIndex((command) => command.startsWith('curl ') && command.includes(fragment));
      expect(index).toBeGreaterThanOrEqual(0);
      return JSON.parse(outputs[index]) as Output;
    }

    it('records the batch: one run, one validation error', () => {
      const { results } = outputOf<{ results: unknown[] }>('/ingest/agent/runs/batch');
      expect(results).toEqual([
        { id: expect.any(String), timestamp: expect.any(String) },
        { error: expect.objectContaining({ code: 'validation_failed' }) },
      ]);
    });

    it('reports both runs, the looping one among them', () => {
      const { current } = outputOf<{ current: object }>('/agent/summary');
      expect(current).toMatchObject({ total_runs: 2, completed_runs: 1, loop_runs: 1 });
    });

    it('previews the draft rule as breached', () => {
      expect(outputOf('/alert-rules/preview')).toMatchObject({ would_breach: true, sample_count: 2 });
    });

    it('lists the firing event of the rule', () => {
      const events = outputOf<object[]>('$EVENTS');
      expect(events.length).toBeGreaterThan(0);
      expect(events[0]).toMatchObject({ kind: 'firing', state_to: 'firing' });
    });
  });
});
