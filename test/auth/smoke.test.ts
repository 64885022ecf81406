import { startTestApp, type TestApp } from '../support/app';
import { bearer, setUpProject } from '../support/fixtures';

let app: TestApp;
beforeAll(async () => { app = await startTestApp(); });
afterAll(() => app.close());

it('registers, creates a project and a key', async () => {
  const { admin, project, key } = await setUpProject(app);
  expect(key).toMatch(/^rw_[0-9A-Za-z]{40}$/);
  const me = await app.http.get('/auth/me').set(bearer(admin.token)).expect(200);
  expect(me.body.organizations).toHaveLength(1);
  expect(project.org_id).toBe(admin.org.id);
});
