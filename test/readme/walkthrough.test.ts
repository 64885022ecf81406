// The README's walkthrough and its OpenTelemetry steps, pasted as they stand, block by block, into a shell against a
// fresh `npm start` — and pasted again into a new shell, as a reader who comes back does: it must never rot.
import { execFile } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { promisify } from 'node:util';
import { startChildService, type ChildService } from '../support/child-service';

const ROOT = path.resolve(__dirname, '..', '..');
const README = fs.readFileSync(path.join(ROOT, 'README.md'), 'utf8');
const PASTED_SECTIONS = ['## Walkthrough', '## Send OpenTelemetry traces'];
// The alert step polls every 2 s for the first evaluation; npx starts tsx for the OpenTelemetry example.
const PASTE_TIMEOUT_MS = 60_000;
const BUILD_TIMEOUT_MS = 240_000;
// Printed before each block, so that the shell's output can be cut back into one output per block.
const BLOCK_MARK = '--- pasted block ---';
const FAILURE = 'pasted command failed';

const run = promisify(execFile);
type ShellFailure = { code?: number; killed?: boolean; stdout: string; stderr: string };

/** A section of the README: from its heading to the next section's. */
function section(heading: string): string {
  const start = README.indexOf(heading);
  if (start < 0) throw new Error(`README.md has no "${heading}" section`);
  const end = README.indexOf('\n## ', start + heading.length);
  return README.slice(start, end < 0 ? undefined : end);
}

/** The contents of the fenced ```sh blocks of a text, as they stand. */
const shellBlocks = (text: string): string[] => [...text.matchAll(/^```sh\n([\s\S]*?)^```$/gm)].map((m) => m[1]);

/**
 * Pastes the blocks into one new shell, as they stand, and answers each block's output. The shell only reports
 * a command that fails (its status is not 0, a pipe's included), which a reader's terminal would show too.
 */
async function paste(blocks: readonly string[], service: string): Promise<{ outputs: string[]; stderr: string }> {
  const script = [
    'set -o pipefail',
    `trap 'echo "${FAILURE} ($?): $BASH_COMMAND" >&2' ERR`,
    ...blocks.flatMap((block) => [`echo '${BLOCK_MARK}'`, block]),
  ].join('\n');
  const { stdout, stderr } = await run('bash', ['-c', script], {
    cwd: ROOT,
    timeout: PASTE_TIMEOUT_MS,
    env: { PATH: process.env.PATH, HOME: process.env.HOME, RUNWATCH: service },
  }).catch((error: ShellFailure) => {
    const how = error.killed ? `timed out after ${PASTE_TIMEOUT_MS / 1000} s` : `failed with ${error.code}`;
    throw new Error(`the pasted walkthrough ${how}:\n${error.stderr}\nits output:\n${error.stdout}`);
  });
  return { outputs: stdout.split(`${BLOCK_MARK}\n`).slice(1), stderr };
}

/** The JSON values a block printed, one a line (the walkthrough prints them with `jq -c`). */
const jsonLines = (output: string): Record<string, unknown>[] =>
  output
    .split('\n')
    .filter((line) => line.startsWith('{') || line.startsWith('['))
    .map((line) => JSON.parse(line) as Record<string, unknown>);

const blocks = PASTED_SECTIONS.flatMap((heading) => shellBlocks(section(heading)));

describe('the README', () => {
  it('has no block with a "$ " prompt or a "…" to fill in: every block pastes as it stands', () => {
    const everyBlock = shellBlocks(README);
    expect(everyBlock.length).toBeGreaterThan(blocks.length);
    expect(everyBlock.filter((block) => /^\$ /m.test(block))).toEqual([]);
    expect(blocks.filter((block) => block.includes('…'))).toEqual([]);
  });
});

describe('the walkthrough, pasted into a shell against a fresh npm start', () => {
  let dataDir: string;
  let service: ChildService;
  let first: Awaited<ReturnType<typeof paste>>;
  let again: Awaited<ReturnType<typeof paste>>;

  beforeAll(
    async () => {
      // `npm start` runs the build: built from the code under test.
      await run('npm', ['run', 'build'], { cwd: ROOT, timeout: BUILD_TIMEOUT_MS });
      dataDir = fs.mkdtempSync(path.join(os.tmpdir(), 'runwatch-readme-'));
      service = await startChildService(
        dataDir,
        // Embedded stores in a fresh directory, as `npm start` has them on a laptop (the walkthrough's fixed e-mail
        // registers on a new database); the first evaluation within a second rather than a minute.
        { DATABASE_URL: '', ALERT_EVAL_INTERVAL: '1' },
        { npmStart: true },
      );
      first = await paste(blocks, service.url);
      again = await paste(blocks, service.url);
    },
    BUILD_TIMEOUT_MS + 30_000 + 2 * PASTE_TIMEOUT_MS,
  );

  afterAll(async () => {
    await service?.stop();
    if (dataDir) fs.rmSync(dataDir, { recursive: true, force: true });
  });

  it('runs every command without a failure, both times', () => {
    expect(first.outputs).toHaveLength(blocks.length);
    expect(first.stderr).not.toContain(FAILURE);
    expect(again.stderr).not.toContain(FAILURE);
  });

  it('registers the first time; the second time it signs in (registering answers 409)', () => {
    expect(first.outputs[0]).toMatch(/^register: 201\n/);
    expect(again.outputs[0]).toMatch(/^register: 409\n/);
    for (const { outputs } of [first, again])
      expect(jsonLines(outputs[0])).toEqual([
        { user: 'ada@example.com', organization: "ada's organization", expires_at: expect.any(String) },
      ]);
  });

  it('makes a key each time (the project, once: the reports below count both pastes in it)', () => {
    for (const { outputs } of [first, again]) expect(jsonLines(outputs[1])[0].key).toMatch(/^rw_[0-9A-Za-z]{40}$/);
  });

  it('records a run through start, steps and finish', () => {
    const [start, steps, finished] = jsonLines(first.outputs[2]);
    expect(steps).toMatchObject({ id: start.id, total_steps: 2, loop_detected: false });
    expect(finished).toMatchObject({ id: start.id, status: 'completed', total_tokens: 812, total_cost_usd: 0.0041 });
  });

  it('records the batch: one run, one validation error', () => {
    expect(jsonLines(first.outputs[3])).toEqual([
      {
        results: [
          { id: expect.any(String), timestamp: expect.any(String) },
          { error: expect.objectContaining({ code: 'validation_failed' }) },
        ],
      },
    ]);
  });

  it('reports both runs, the looping one among them; the second paste counts all of the same project', () => {
    const [summary, health] = jsonLines(first.outputs[4]);
    expect((summary as { current: object }).current).toMatchObject({ total_runs: 2, completed_runs: 1, loop_runs: 1 });
    expect(health).toMatchObject([{ agent_name: 'planner', total_runs: 2 }]);
    expect(first.outputs[4]).toContain('X-Total-Count: 1\n');
    // The first paste's two runs and its OpenTelemetry run (completed), and the second paste's two.
    expect((jsonLines(again.outputs[4])[0] as { current: object }).current).toMatchObject({ total_runs: 5 });
    expect(again.outputs[4]).toContain('X-Total-Count: 3\n');
  });

  it('previews the draft rule as breached, creates it, and lists its firing event', () => {
    const [preview, rule, events] = jsonLines(first.outputs[5]);
    expect(preview).toMatchObject({ would_breach: true, sample_count: 2 });
    expect(rule).toMatchObject({ comparator: 'lt', threshold: 0.9, secret: expect.stringMatching(/^whsec_/) });
    expect((events as unknown as object[])[0]).toMatchObject({ kind: 'firing', state_to: 'firing' });
  });

  it('sends the OpenTelemetry example, a run of two steps', () => {
    const output = first.outputs.at(-1)!;
    expect(output).toMatch(/^sent trace [0-9a-f]{32}$/m);
    expect(jsonLines(output)).toEqual([
      expect.objectContaining({ agent_name: 'support-bot', status: 'completed', total_steps: 2, total_tokens: 450 }),
    ]);
  });
});
