// Projects of an organization (contract section 3): create, list, rename, delete; roles; cross-organization → 404.
import { startTestApp, type TestApp } from '../support/app';
import { detailPaths, expectError, refusal, TIMESTAMP, UNKNOWN, UUID } from '../support/assertions';
import { bearer, createApiKey, createProject, registerUser, setUpTeam } from '../support/fixtures';

let app: TestApp;
beforeAll(async () => {
  app = await startTestApp();
});
afterAll(() => app.close());
// This file registers more users than AUTH_RATE_LIMIT_PER_MINUTE allows in one minute (the limit has its own
// tests); the service's clock stands still, so each test moves it on to a fresh rate-limit minute.
beforeEach(() => app.clock.advance(60));

type User = Awaited<ReturnType<typeof registerUser>>;
const projectsOf = async (orgId: string, token: string) =>
  (await app.http.get(`/admin/orgs/${orgId}/projects`).set(bearer(token)).expect(200)).body as {
    id: string;
    name: string;
  }[];

describe('roles', () => {
  let admin: User;
  let member: User;
  let viewer: User;
  let outsider: User;
  let projectId: string;
  beforeAll(async () => {
    ({ admin, member, viewer, outsider } = await setUpTeam(app));
    projectId = (await createProject(app, admin.token, admin.org.id, 'role-check')).id;
  });

  it('every role lists the projects', async () => {
    for (const user of [admin, member, viewer])
      expect((await projectsOf(admin.org.id, user.token)).map((p) => p.id)).toEqual([projectId]);
  });

  it.each([
    ['post', '', { name: 'by a non-admin' }],
    ['patch', '/{PROJECT}', { name: 'renamed by a non-admin' }],
    ['delete', '/{PROJECT}', undefined],
  ] as const)('a member or a viewer: %s /projects%s → 403, nothing changes', async (method, suffix, body) => {
    for (const user of [member, viewer]) {
      const res = await app.http[method](
        `/admin/orgs/${admin.org.id}/projects${suffix.replace('{PROJECT}', projectId)}`,
      )
        .set(bearer(user.token))
        .send(body);
      expectError(res, 403, 'forbidden');
    }
    expect(await projectsOf(admin.org.id, admin.token)).toEqual([
      expect.objectContaining({ id: projectId, name: 'role-check' }),
    ]);
  });

  it.each([
    ['get', '', undefined],
    ['post', '', { name: 'by an outsider' }],
    ['patch', '/{PROJECT}', { name: 'renamed by an outsider' }],
    ['delete', '/{PROJECT}', undefined],
  ] as const)(
    'an outsider: %s /projects%s → 404, like an organization that does not exist',
    async (method, suffix, body) => {
      const path = `/projects${suffix.replace('{PROJECT}', projectId)}`;
      const theirs = await app.http[method](`/admin/orgs/${admin.org.id}${path}`)
        .set(bearer(outsider.token))
        .send(body);
      expectError(theirs, 404, 'not_found');
      expect(JSON.stringify(theirs.body)).not.toContain('role-check');
      const none = await app.http[method](`/admin/orgs/${UNKNOWN}${path}`).set(bearer(outsider.token)).send(body);
      expect(refusal(theirs)).toEqual(refusal(none));
    },
  );

  it.each([
    ['get', ''],
    ['post', ''],
    ['patch', '/{PROJECT}'],
    ['delete', '/{PROJECT}'],
  ] as const)('no session: %s /projects%s → 401', async (method, suffix) => {
    const res = await app.http[method](
      `/admin/orgs/${admin.org.id}/projects${suffix.replace('{PROJECT}', projectId)}`,
    ).send(method === 'post' || method === 'patch' ? { name: 'x' } : undefined);
    expectError(res, 401, 'unauthenticated');
  });
});

describe('POST /admin/orgs/{orgID}/projects', () => {
  let admin: User;
  beforeAll(async () => {
    admin = await registerUser(app);
  });

  it('→ 201 Project { id, org_id, name, retention_days, created_at }', async () => {
    const res = await app.http
      .post(`/admin/orgs/${admin.org.id}/projects`)
      .set(bearer(admin.token))
      .send({ name: '  Checkout Agent ' })
      .expect(201);
    expect(res.body).toEqual({
      id: expect.stringMatching(UUID),
      org_id: admin.org.id,
      name: 'Checkout Agent',
      retention_days: 400,
      created_at: expect.stringMatching(TIMESTAMP),
    });
  });

  it('a name already used in the organization → 409 conflict', async () => {
    await createProject(app, admin.token, admin.org.id, 'Billing');
    expectError(
      await app.http.post(`/admin/orgs/${admin.org.id}/projects`).set(bearer(admin.token)).send({ name: 'Billing' }),
      409,
      'conflict',
    );
    // After trimming it is the same name too.
    expectError(
      await app.http.post(`/admin/orgs/${admin.org.id}/projects`).set(bearer(admin.token)).send({ name: ' Billing ' }),
      409,
      'conflict',
    );
    expect((await projectsOf(admin.org.id, admin.token)).filter((p) => p.name === 'Billing')).toHaveLength(1);
  });

  it('the same name in another organization is fine', async () => {
    const other = await registerUser(app);
    await createProject(app, admin.token, admin.org.id, 'Shared Name');
    await createProject(app, other.token, other.org.id, 'Shared Name');
  });

  it.each([
    ['no name', {}, ['name']],
    ['an empty name', { name: '' }, ['name']],
    ['a name of 101 characters', { name: 'p'.repeat(101) }, ['name']],
    ['a number as name', { name: 7 }, ['name']],
    ['an unknown field', { name: 'ok', org_id: UNKNOWN }, ['org_id']],
  ])('%s → 400 validation_failed', async (_label, body, paths) => {
    const res = await app.http.post(`/admin/orgs/${admin.org.id}/projects`).set(bearer(admin.token)).send(body);
    expectError(res, 400, 'validation_failed');
    expect(detailPaths(res)).toEqual(paths);
  });

  it('malformed JSON → 400; text → 415; malformed org id → 400 invalid_id', async () => {
    const url = `/admin/orgs/${admin.org.id}/projects`;
    expectError(
      await app.http.post(url).set(bearer(admin.token)).set('Content-Type', 'application/json').send('{"name": "x"'),
      400,
      'malformed_json',
    );
    expectError(
      await app.http.post(url).set(bearer(admin.token)).set('Content-Type', 'text/csv').send('name\nx'),
      415,
      'unsupported_media_type',
    );
    expectError(
      await app.http.post('/admin/orgs/org-1/projects').set(bearer(admin.token)).send({ name: 'x' }),
      400,
      'invalid_id',
    );
  });
});

describe('GET /admin/orgs/{orgID}/projects', () => {
  it("→ 200 the organization's projects (only), ordered by created_at then id", async () => {
    const admin = await registerUser(app);
    const other = await registerUser(app);
    const created = [];
    for (const name of ['zulu', 'alpha', 'mike'])
      created.push(await createProject(app, admin.token, admin.org.id, name));
    await createProject(app, other.token, other.org.id, 'not mine');
    const listed = await projectsOf(admin.org.id, admin.token);
    expect(listed).toEqual(created);
  });

  it('an organization without projects → 200 []', async () => {
    const admin = await registerUser(app);
    expect(await projectsOf(admin.org.id, admin.token)).toEqual([]);
  });
});

describe('PATCH /admin/orgs/{orgID}/projects/{projectID}', () => {
  let admin: User;
  beforeAll(async () => {
    admin = await registerUser(app);
  });

  it('→ 200 the renamed Project', async () => {
    const project = await createProject(app, admin.token, admin.org.id, 'old name');
    const res = await app.http
      .patch(`/admin/orgs/${admin.org.id}/projects/${project.id}`)
      .set(bearer(admin.token))
      .send({ name: 'new name' })
      .expect(200);
    expect(res.body).toEqual({ ...project, name: 'new name' });
    expect(await projectsOf(admin.org.id, admin.token)).toContainEqual(res.body);
  });

  it("renaming to another project's name → 409; to its own name → 200", async () => {
    const first = await createProject(app, admin.token, admin.org.id, 'taken');
    const second = await createProject(app, admin.token, admin.org.id, 'free');
    expectError(
      await app.http
        .patch(`/admin/orgs/${admin.org.id}/projects/${second.id}`)
        .set(bearer(admin.token))
        .send({ name: 'taken' }),
      409,
      'conflict',
    );
    await app.http
      .patch(`/admin/orgs/${admin.org.id}/projects/${first.id}`)
      .set(bearer(admin.token))
      .send({ name: 'taken' })
      .expect(200);
    expect((await projectsOf(admin.org.id, admin.token)).find((p) => p.id === second.id)?.name).toBe('free');
  });

  it('a project that does not exist → 404', async () => {
    expectError(
      await app.http
        .patch(`/admin/orgs/${admin.org.id}/projects/${UNKNOWN}`)
        .set(bearer(admin.token))
        .send({ name: 'x' }),
      404,
      'not_found',
    );
  });

  it("a project of org A addressed under org B's path → 404, even for an admin of both; nothing changes", async () => {
    const orgB = (await app.http.post('/admin/orgs').set(bearer(admin.token)).send({ name: 'Org B' }).expect(201)).body;
    const projectOfA = await createProject(app, admin.token, admin.org.id, 'lives in A');
    const stranger = await registerUser(app);
    const projectOfStranger = await createProject(app, stranger.token, stranger.org.id, 'lives elsewhere');
    for (const projectId of [projectOfA.id, projectOfStranger.id]) {
      const res = await app.http
        .patch(`/admin/orgs/${orgB.id}/projects/${projectId}`)
        .set(bearer(admin.token))
        .send({ name: 'moved?' });
      expectError(res, 404, 'not_found');
      expect(refusal(res)).toEqual(
        refusal(
          await app.http
            .patch(`/admin/orgs/${orgB.id}/projects/${UNKNOWN}`)
            .set(bearer(admin.token))
            .send({ name: 'moved?' }),
        ),
      );
    }
    expect((await projectsOf(admin.org.id, admin.token)).find((p) => p.id === projectOfA.id)?.name).toBe('lives in A');
    expect((await projectsOf(stranger.org.id, stranger.token))[0].name).toBe('lives elsewhere');
  });

  it.each([
    ['no name', {}, ['name']],
    ['an empty name', { name: '' }, ['name']],
    ['a name of 101 characters', { name: 'p'.repeat(101) }, ['name']],
    ['an unknown field', { name: 'ok', org_id: UNKNOWN }, ['org_id']],
  ])('%s → 400 validation_failed', async (_label, body, paths) => {
    const project = await createProject(app, admin.token, admin.org.id);
    const res = await app.http
      .patch(`/admin/orgs/${admin.org.id}/projects/${project.id}`)
      .set(bearer(admin.token))
      .send(body);
    expectError(res, 400, 'validation_failed');
    expect(detailPaths(res)).toEqual(paths);
  });

  it('malformed JSON → 400; text → 415; malformed project id → 400 invalid_id', async () => {
    const project = await createProject(app, admin.token, admin.org.id);
    const url = `/admin/orgs/${admin.org.id}/projects/${project.id}`;
    expectError(
      await app.http.patch(url).set(bearer(admin.token)).set('Content-Type', 'application/json').send('name=x'),
      400,
      'malformed_json',
    );
    expectError(
      await app.http.patch(url).set(bearer(admin.token)).set('Content-Type', 'text/plain').send('x'),
      415,
      'unsupported_media_type',
    );
    expectError(
      await app.http.patch(`/admin/orgs/${admin.org.id}/projects/p1`).set(bearer(admin.token)).send({ name: 'x' }),
      400,
      'invalid_id',
    );
  });
});

describe('DELETE /admin/orgs/{orgID}/projects/{projectID}', () => {
  let admin: User;
  beforeAll(async () => {
    admin = await registerUser(app);
  });

  it('→ 204; the project is gone from the list and a second delete → 404', async () => {
    const keep = await createProject(app, admin.token, admin.org.id);
    const project = await createProject(app, admin.token, admin.org.id);
    const res = await app.http
      .delete(`/admin/orgs/${admin.org.id}/projects/${project.id}`)
      .set(bearer(admin.token))
      .expect(204);
    expect(res.text).toBe('');
    expect((await projectsOf(admin.org.id, admin.token)).map((p) => p.id)).toEqual([keep.id]);
    expectError(
      await app.http.delete(`/admin/orgs/${admin.org.id}/projects/${project.id}`).set(bearer(admin.token)),
      404,
      'not_found',
    );
    expectError(
      await app.http
        .patch(`/admin/orgs/${admin.org.id}/projects/${project.id}`)
        .set(bearer(admin.token))
        .send({ name: 'x' }),
      404,
      'not_found',
    );
  });

  it('frees the name for a new project', async () => {
    const project = await createProject(app, admin.token, admin.org.id, 'reused name');
    await app.http.delete(`/admin/orgs/${admin.org.id}/projects/${project.id}`).set(bearer(admin.token)).expect(204);
    const again = await createProject(app, admin.token, admin.org.id, 'reused name');
    expect(again.id).not.toBe(project.id);
  });

  it('takes its API keys with it: a key of the deleted project stops working at once', async () => {
    const project = await createProject(app, admin.token, admin.org.id);
    const { key } = await createApiKey(app, admin.token, admin.org.id, project.id);
    // The key works (and is now in the service's key cache) …
    await app.http.post('/ingest/agent/runs').set(bearer(key)).send({ agent_name: 'planner' }).expect(201);
    await app.http.delete(`/admin/orgs/${admin.org.id}/projects/${project.id}`).set(bearer(admin.token)).expect(204);
    // … and is refused right after the project is deleted.
    expectError(
      await app.http.post('/ingest/agent/runs').set(bearer(key)).send({ agent_name: 'planner' }),
      401,
      'unauthenticated',
    );
    expectError(
      await app.http.get(`/admin/orgs/${admin.org.id}/projects/${project.id}/api-keys`).set(bearer(admin.token)),
      404,
      'not_found',
    );
    expect(await app.stores.pg.query('SELECT id FROM api_keys WHERE project_id = $1', [project.id])).toEqual([]);
  });

  it("a project of org A addressed under org B's path → 404 and the project survives", async () => {
    const orgB = (
      await app.http.post('/admin/orgs').set(bearer(admin.token)).send({ name: 'Org B for delete' }).expect(201)
    ).body;
    const projectOfA = await createProject(app, admin.token, admin.org.id);
    expectError(
      await app.http.delete(`/admin/orgs/${orgB.id}/projects/${projectOfA.id}`).set(bearer(admin.token)),
      404,
      'not_found',
    );
    expect((await projectsOf(admin.org.id, admin.token)).map((p) => p.id)).toContain(projectOfA.id);
  });

  it('a project that does not exist → 404; a malformed id → 400 invalid_id', async () => {
    expectError(
      await app.http.delete(`/admin/orgs/${admin.org.id}/projects/${UNKNOWN}`).set(bearer(admin.token)),
      404,
      'not_found',
    );
    expectError(
      await app.http.delete(`/admin/orgs/${admin.org.id}/projects/all`).set(bearer(admin.token)),
      400,
      'invalid_id',
    );
  });
});
