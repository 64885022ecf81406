// Session numbers (schema/postgres/0010, src/sessions/numbers.ts) against the real Postgres: a session keeps its
// number whoever asks and however often, two projects' sessions of the same id are two sessions, any id is a key, the
// flush writes the number with the run's rows, and a deleted project's numbers go with it.
import { randomUUID } from 'node:crypto';
import { sessionNumbers, type SessionOf } from '../../src/sessions/numbers';
import { startTestApp, type TestApp } from '../support/app';
import { bearer, setUpProject } from '../support/fixtures';

let app: TestApp;
beforeAll(async () => {
  app = await startTestApp();
});
afterAll(() => app.close());

const asked = (sessions: SessionOf[]) => new Map(sessions.map((session, i) => [String(i), session]));
const numbersOf = async (sessions: SessionOf[]) => [...(await sessionNumbers(app.stores.pg)(asked(sessions))).values()];

it('a session keeps its number; another project or another id is another session', async () => {
  const [one, two] = [randomUUID(), randomUUID()];
  const first = await numbersOf([
    { projectId: one, sessionId: 'conversation' },
    { projectId: two, sessionId: 'conversation' },
    { projectId: one, sessionId: 'Conversation' },
  ]);
  expect(new Set(first).size).toBe(3);
  for (const number of first) expect(number).toBeGreaterThan(0);
  // Asked again, in another order, with a project id in capitals and the same session twice.
  const again = await numbersOf([
    { projectId: one, sessionId: 'Conversation' },
    { projectId: two.toUpperCase(), sessionId: 'conversation' },
    { projectId: one, sessionId: 'conversation' },
    { projectId: one, sessionId: 'conversation' },
  ]);
  expect(again).toEqual([first[2], first[1], first[0], first[0]]);
});

it('any id is a key: NUL, lone surrogates, emoji and 200 characters', async () => {
  const projectId = randomUUID();
  const ids = ['a\u0000b', 'a', '\ud800x', '🦜 chat', 'x'.repeat(200)];
  const numbers = await numbersOf(ids.map((sessionId) => ({ projectId, sessionId })));
  expect(new Set(numbers).size).toBe(ids.length);
  expect(await numbersOf(ids.map((sessionId) => ({ projectId, sessionId })))).toEqual(numbers);
});

it('instances numbering the same new sessions at once get the same numbers', async () => {
  const projectId = randomUUID();
  const sessions = Array.from({ length: 300 }, (_, i) => ({ projectId, sessionId: `s-${i}` }));
  const answers = await Promise.all(
    Array.from({ length: 4 }, (_, k) => numbersOf(k % 2 ? sessions : [...sessions].reverse())),
  );
  const byId = (numbers: number[], reversed: boolean) => (reversed ? [...numbers].reverse() : numbers);
  for (const [k, numbers] of answers.entries()) expect(byId(numbers, k % 2 === 0)).toEqual(byId(answers[1], false));
  expect(new Set(answers[1]).size).toBe(sessions.length);
});

it("a run's session is numbered by the flush, and a deleted project's numbers go with it", async () => {
  const { admin, project, key } = await setUpProject(app);
  await app.http
    .post('/ingest/agent/runs')
    .set(bearer(key))
    .send({ agent_name: 'planner', session_id: 'numbered' })
    .expect(201);
  await app.writer.flushed(project.id);
  const [stored] = await app.stores.ch.query<{ session_number: string }>({
    name: 'test.number',
    sql: 'SELECT session_number FROM live_runs WHERE project_id = {project:UUID}',
    params: { project: project.id },
  });
  const [numbered] = await numbersOf([{ projectId: project.id, sessionId: 'numbered' }]);
  expect(Number(stored.session_number)).toBe(numbered);
  const rows = () => app.stores.pg.query('SELECT 1 FROM session_numbers WHERE project_id = $1', [project.id]);
  expect(await rows()).toHaveLength(1);
  await app.http.delete(`/admin/orgs/${admin.org.id}/projects/${project.id}`).set(bearer(admin.token)).expect(204);
  expect(await rows()).toHaveLength(0);
});
