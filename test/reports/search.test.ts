// Finding runs (contract §11), through the real HTTP server: every filter of the runs list, their combinations, and
// the text search `q` in each field it searches (a run's input, output and termination_detail; its steps' input,
// output and error), never across projects.
import { startTestApp, type TestApp } from '../support/app';
import { expectFieldError, keyAuth, postBatch, TEST_ENV } from '../ingest/run-helpers';
import { hourWindowParams } from '../../src/reports/rollups';
import { selectWholeHourCountsByRows } from '../../src/reports/run-list';
import { setUpProject } from '../support/fixtures';
import { searchProject } from './search-data';

const HOUR = 3_600_000;

let app: TestApp;
// Starting the service migrates a fresh data directory: on a busy machine that takes longer than a test.
beforeAll(async () => {
  app = await startTestApp(TEST_ENV);
}, 120_000);
afterAll(() => app.close());

describe('the runs list, filtered', () => {
  let project: Awaited<ReturnType<typeof searchProject>>;
  beforeAll(async () => {
    project = await searchProject(app);
  });

  // Newest first: running (now), memo (30 min ago), failure (40), booking (50).
  it.each<[string, Record<string, string | number | string[]>, string[]]>([
    ['no filter', {}, ['running', 'memo', 'failure', 'booking']],
    ['one tag', { tag: 'eu' }, ['memo', 'booking']],
    ['every tag given', { tag: ['prod', 'eu'] }, ['booking']],
    ['session_id', { session_id: 's-2' }, ['failure']],
    ['user_id', { user_id: 'alice' }, ['memo', 'booking']],
    ['model', { model: 'gpt-4o' }, ['memo', 'booking']],
    ['tool_name', { tool_name: 'search' }, ['running', 'memo', 'booking']],
    ['min_duration_ms (running runs have none)', { min_duration_ms: 1000 }, ['failure', 'booking']],
    ['max_duration_ms', { max_duration_ms: 999 }, ['memo']],
    ['a duration range', { min_duration_ms: 500, max_duration_ms: 1000 }, ['booking']],
    ['min_cost_usd', { min_cost_usd: '0.5' }, ['memo', 'booking']],
    ['max_cost_usd', { max_cost_usd: '0.25' }, ['running', 'failure']],
    ['a cost range', { min_cost_usd: '0.02', max_cost_usd: '1' }, ['booking']],
    ['tag and model', { tag: 'prod', model: 'gpt-4o' }, ['booking']],
    ['tool_name and user_id', { tool_name: 'search', user_id: 'carol' }, ['running']],
    ['tag, status and agent', { tag: 'prod', status: 'failed', agent_name: 'writer' }, ['failure']],
    ['model and a cost range', { model: 'gpt-4o', min_cost_usd: '1' }, ['memo']],
    ['q and a filter', { q: 'search', tool_name: 'search' }, []],
    ['q and a tag', { q: 'tool', tag: 'prod' }, ['booking']],
    ['q and a status', { q: 'results', status: 'completed' }, ['booking']],
    ['filters that exclude each other', { tag: 'eu', user_id: 'bob' }, []],
  ])('%s', async (_, query, expected) => {
    const res = await project.list(query);
    expect(res.status).toBe(200);
    expect(res.body.map((run: { id: string }) => run.id)).toEqual(expected.map((name) => project.ids[name]));
    expect(res.headers['x-total-count']).toBe(String(expected.length));
  });

  it.each<[string, string, string[]]>([
    ["a run's input, in another case", 'table FOR', ['booking']],
    ["a run's output", '8PM', ['booking']],
    ["a run's termination_detail", 'retries', ['failure']],
    ["a step's output", 'weather tool', ['booking']],
    ["a step's input", 'restaurants', ['booking']],
    ["a step's error", '503 from', ['failure']],
    ["a step's input, of a tool step", 'zebra', ['memo']],
    ["a running run's input", 'unicorn', ['running']],
    ["a running run's step", 'pending look', ['running']],
    ['non-ASCII text, in another case', 'übersetzt', ['memo']],
    ['text in two fields of one run', 'for', ['booking']],
    ['text nowhere', 'nothing like this', []],
    ['text spanning two fields', 'two booked', []],
    ['LIKE wildcards, as text', '%a%', []],
  ])('q finds %s', async (_, q, expected) => {
    const res = await project.list({ q });
    expect(res.status).toBe(200);
    expect(res.body.map((run: { id: string }) => run.id)).toEqual(expected.map((name) => project.ids[name]));
    expect(res.headers['x-total-count']).toBe(String(expected.length));
  });

  it('pages through matches as through the list: X-Total-Count counts them all', async () => {
    const first = await project.list({ tag: 'prod', limit: 2 });
    const second = await project.list({ tag: 'prod', limit: 2, offset: 2 });
    expect(first.headers['x-total-count']).toBe('3');
    expect([...first.body, ...second.body].map((run: { id: string }) => run.id)).toEqual(
      ['running', 'failure', 'booking'].map((name) => project.ids[name]),
    );
  });

  // A filtered page within the newest 1,000 runs is looked for in the window's newest 6 hours beside the counts; with
  // fewer matches there than the page's end, it is read from the hours the counts name.
  it.each<[string, number, number, number[]]>([
    ['a first page in the newest hours alone', 2, 0, [1, 2]],
    ['a first page from the newest hours and older ones', 5, 0, [1, 2, 3, 10, 11]],
    ['a first page from every hour of the window', 10, 0, [1, 2, 3, 10, 11, 12, 30]],
    ['a later page in the newest hours alone', 2, 1, [2, 3]],
    ['a later page from the newest hours and older ones', 2, 2, [3, 10]],
    ['a later page past the newest hours', 2, 4, [11, 12]],
  ])('finds %s', async (_, limit, offset, hoursAgo) => {
    const { key, project: other } = await setUpProject(app);
    const now = app.clock.now().getTime();
    const iso = (ms: number) => new Date(ms).toISOString();
    const items = [1, 2, 3, 10, 11, 12, 30].flatMap((hours) =>
      [['deep'], ['shallow']].map((tags) => ({
        agent_name: 'planner',
        status: 'completed',
        timestamp: iso(now - hours * HOUR),
        finished_at: iso(now - hours * HOUR + 1000),
        tags,
        input: `${tags[0]} ${hours}`,
      })),
    );
    expect((await postBatch(app, key, items)).status).toBe(200);
    const res = await app.http
      .get(`/projects/${other.id}/agent/runs`)
      .query({ from: iso(now - 48 * HOUR), to: iso(now), limit, offset, tag: 'deep' })
      .set(keyAuth(key));
    expect(res.status).toBe(200);
    expect(res.body.map((run: { input: string }) => run.input)).toEqual(hoursAgo.map((hours) => `deep ${hours}`));
    expect(res.headers['x-total-count']).toBe('7');
  });

  // A page found among the newest runs takes its total from selectFinishedTotal, which picks the window's granules
  // by the primary key alone and takes off the rows of those granules outside the window: here one granule holds
  // them all, another project's runs and this project's just outside the window's edges.
  it('counts the matches of the window alone, not the rows beside them in its granules', async () => {
    const [mine, theirs] = [await setUpProject(app), await setUpProject(app)];
    const to = Math.floor(app.clock.now().getTime() / HOUR) * HOUR - HOUR;
    // A window within the newest 6 hours: its newest runs are all of it, so a page is always found among them.
    const from = to - 4 * HOUR;
    const iso = (ms: number) => new Date(ms).toISOString();
    const run = (start: number, cost: number) => ({
      agent_name: 'planner',
      status: 'completed',
      timestamp: iso(start),
      finished_at: iso(start + 1000),
      total_cost_usd: cost,
    });
    const edges = [from - 1, from, from + 1, to - 1, to, to + 1];
    // Both projects' batches go to ClickHouse in one insert: one part, one granule.
    const posted = await Promise.all(
      [mine, theirs].map(({ key }) =>
        postBatch(
          app,
          key,
          edges.map((start) => run(start, 2)),
        ),
      ),
    );
    expect(posted.map((res) => res.status)).toEqual([200, 200]);
    const list = (query: Record<string, string | number>) =>
      app.http
        .get(`/projects/${mine.project.id}/agent/runs`)
        .query({ from: iso(from), to: iso(to), ...query })
        .set(keyAuth(mine.key));
    const pages: Record<string, string | number>[] = [
      { min_cost_usd: '1' },
      { min_cost_usd: '1', limit: 1, offset: 2 },
    ];
    for (const query of pages) {
      const res = await list(query);
      expect(res.status).toBe(200);
      expect(res.headers['x-total-count']).toBe('3');
    }
    expect((await list({ min_cost_usd: '1' })).body.map((r: { timestamp: string }) => r.timestamp)).toEqual(
      [to - 1, from + 1, from].map(iso),
    );
    expect((await list({ min_cost_usd: '3' })).headers['x-total-count']).toBe('0');
  });

  // schema/clickhouse/0012: the whole hours' count of a list filtered by array values reads their text indexes.
  it('counts runs by tag, model and tool name through their text indexes', async () => {
    // A read stores the project's writes first.
    expect((await project.list({})).status).toBe(200);
    const window = {
      from: new Date(app.clock.now().getTime() - 48 * HOUR),
      to: new Date(app.clock.now().getTime() + 48 * HOUR),
    };
    const plan = await app.stores.ch.query<{ explain: string }>({
      name: 'test.explain',
      sql: `EXPLAIN indexes = 1 ${selectWholeHourCountsByRows(['tag', 'model', 'tool_name'])}`,
      params: {
        ...hourWindowParams(project.project.id, window, app.clock.now()),
        tag: ['prod'],
        model: 'gpt-4o',
        tool_name: 'search',
      },
    });
    const read = plan.map((row) => row.explain).join('\n');
    for (const index of ['tags_text', 'models_text', 'tool_names_text']) expect(read).toContain(`Name: ${index}`);
  });

  it("never finds another project's runs", async () => {
    const other = await searchProject(app);
    for (const q of ['table for', 'weather', '503 from', 'unicorn']) {
      const mine = await project.list({ q });
      expect(mine.body).toHaveLength(1);
      expect(mine.body[0].project_id).toBe(project.project.id);
      const theirs = await other.list({ q });
      expect(theirs.body.map((run: { id: string }) => run.id)).not.toContain(mine.body[0].id);
    }
  });

  it.each<[string, Record<string, string | string[]>, string]>([
    ['q shorter than 3 characters', { q: 'ab' }, 'q'],
    ['q longer than 200 characters', { q: 'x'.repeat(201) }, 'q'],
    ['a cost that is not a decimal number', { min_cost_usd: '1e3' }, 'min_cost_usd'],
    ['a negative duration', { max_duration_ms: '-1' }, 'max_duration_ms'],
    ['an empty tag', { tag: '' }, 'tag'],
    ['an empty model', { model: '' }, 'model'],
    ['more than 50 tags', { tag: Array.from({ length: 51 }, (_, i) => `t${i}`) }, 'tag'],
  ])('refuses %s (400, the field named)', async (_, query, field) => {
    expectFieldError(await project.list(query), field);
  });
});
