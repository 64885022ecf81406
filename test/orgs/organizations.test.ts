// Organizations (contract section 3): create, list, get, rename; roles; other organizations are invisible (404).
import { startTestApp, type TestApp } from '../support/app';
import { expectError, refusal, TIMESTAMP, UNKNOWN, UUID } from '../support/assertions';
import { addMember, bearer, registerUser } from '../support/fixtures';

let app: TestApp;
beforeAll(async () => {
  app = await startTestApp();
});
afterAll(() => app.close());
// This file registers more users than AUTH_RATE_LIMIT_PER_MINUTE allows in one minute (the limit has its own
// tests); the service's clock stands still, so each test moves it on to a fresh rate-limit minute.
beforeEach(() => app.clock.advance(60));

describe('POST /admin/orgs', () => {
  it('→ 201 Organization; the caller becomes its admin', async () => {
    const { token, user } = await registerUser(app);
    const res = await app.http.post('/admin/orgs').set(bearer(token)).send({ name: 'Acme Research' }).expect(201);
    expect(res.body).toEqual({
      id: expect.stringMatching(UUID),
      name: 'Acme Research',
      created_at: expect.stringMatching(TIMESTAMP),
    });
    const members = await app.http.get(`/admin/orgs/${res.body.id}/members`).set(bearer(token)).expect(200);
    expect(members.body).toEqual([expect.objectContaining({ user_id: user.id, role: 'admin' })]);
  });

  it('trims the name; names of 1 and 100 characters are fine; names need not be unique', async () => {
    const { token } = await registerUser(app);
    expect(
      (await app.http.post('/admin/orgs').set(bearer(token)).send({ name: '  Spaced  ' }).expect(201)).body.name,
    ).toBe('Spaced');
    await app.http.post('/admin/orgs').set(bearer(token)).send({ name: 'x' }).expect(201);
    await app.http
      .post('/admin/orgs')
      .set(bearer(token))
      .send({ name: 'n'.repeat(100) })
      .expect(201);
    const first = await app.http.post('/admin/orgs').set(bearer(token)).send({ name: 'Twin' }).expect(201);
    const second = await app.http.post('/admin/orgs').set(bearer(token)).send({ name: 'Twin' }).expect(201);
    expect(second.body.id).not.toBe(first.body.id);
  });

  it.each([
    ['no name', {}, ['name']],
    ['an empty name', { name: '' }, ['name']],
    ['a blank name', { name: '  ' }, ['name']],
    ['a name of 101 characters', { name: 'n'.repeat(101) }, ['name']],
    ['a name that is not a string', { name: ['Acme'] }, ['name']],
    ['an unknown field', { name: 'Acme', plan: 'enterprise' }, ['plan']],
  ])('%s → 400 validation_failed', async (_label, body, paths) => {
    const { token } = await registerUser(app);
    const res = await app.http.post('/admin/orgs').set(bearer(token)).send(body);
    expectError(res, 400, 'validation_failed');
    expect(res.body.error.details.map((detail: { path: string }) => detail.path)).toEqual(paths);
  });

  it('malformed JSON → 400 malformed_json; text → 415', async () => {
    const { token } = await registerUser(app);
    expectError(
      await app.http.post('/admin/orgs').set(bearer(token)).set('Content-Type', 'application/json').send('{"name":'),
      400,
      'malformed_json',
    );
    expectError(
      await app.http.post('/admin/orgs').set(bearer(token)).set('Content-Type', 'text/plain').send('Acme'),
      415,
      'unsupported_media_type',
    );
  });

  it('without a session → 401', async () => {
    expectError(await app.http.post('/admin/orgs').send({ name: 'Acme' }), 401, 'unauthenticated');
  });
});

describe('GET /admin/orgs', () => {
  it('→ 200 the organizations the caller belongs to, in any role, and no others', async () => {
    const caller = await registerUser(app);
    const stranger = await registerUser(app);
    const created = await app.http.post('/admin/orgs').set(bearer(caller.token)).send({ name: 'Second' }).expect(201);
    await app.http
      .post(`/admin/orgs/${stranger.org.id}/members`)
      .set(bearer(stranger.token))
      .send({ email: caller.user.email, role: 'viewer' })
      .expect(201);
    const res = await app.http.get('/admin/orgs').set(bearer(caller.token)).expect(200);
    // The stranger's organization is older than "Second", so it sorts before it.
    expect(res.body).toEqual([caller.org, stranger.org, created.body]);
    const strangers = await app.http.get('/admin/orgs').set(bearer(stranger.token)).expect(200);
    expect(strangers.body).toEqual([stranger.org]);
  });

  it('is ordered by created_at, then id', async () => {
    const { token, org } = await registerUser(app);
    const names = ['b-second', 'c-tie-1', 'd-tie-2', 'a-oldest'];
    const byName: Record<string, { id: string }> = {};
    for (const name of names)
      byName[name] = (await app.http.post('/admin/orgs').set(bearer(token)).send({ name }).expect(201)).body;
    // Give two organizations the same created_at (a tie the id must break) and one an older one than the first.
    const tie = new Date('2030-01-01T00:00:00.000Z');
    await app.stores.pg.query('UPDATE organizations SET created_at = $2 WHERE id = ANY($1::uuid[])', [
      [byName['c-tie-1'].id, byName['d-tie-2'].id],
      tie,
    ]);
    await app.stores.pg.query('UPDATE organizations SET created_at = $2 WHERE id = $1', [
      byName['a-oldest'].id,
      new Date('2000-01-01T00:00:00.000Z'),
    ]);
    const [firstTie, secondTie] = [byName['c-tie-1'].id, byName['d-tie-2'].id].sort();
    const expected = [byName['a-oldest'].id, org.id, byName['b-second'].id, firstTie, secondTie];
    const res = await app.http.get('/admin/orgs').set(bearer(token)).expect(200);
    expect(res.body.map((o: { id: string }) => o.id)).toEqual(expected);
    // /auth/me uses the same order.
    const me = await app.http.get('/auth/me').set(bearer(token)).expect(200);
    expect(me.body.organizations.map((o: { id: string }) => o.id)).toEqual(expected);
  });

  it('without a session → 401', async () => {
    expectError(await app.http.get('/admin/orgs'), 401, 'unauthenticated');
  });
});

describe('one organization, seen by each role and by outsiders', () => {
  let admin: Awaited<ReturnType<typeof registerUser>>;
  let member: Awaited<ReturnType<typeof registerUser>>;
  let viewer: Awaited<ReturnType<typeof registerUser>>;
  let outsider: Awaited<ReturnType<typeof registerUser>>;
  let orgId: string;
  beforeAll(async () => {
    admin = await registerUser(app, { name: 'Org Admin' });
    orgId = admin.org.id;
    member = await addMember(app, admin.token, orgId, 'member');
    viewer = await addMember(app, admin.token, orgId, 'viewer');
    outsider = await registerUser(app);
  });

  describe('GET /admin/orgs/{orgID}', () => {
    it('→ 200 for every role', async () => {
      for (const user of [admin, member, viewer]) {
        const res = await app.http.get(`/admin/orgs/${orgId}`).set(bearer(user.token)).expect(200);
        expect(res.body).toEqual({ id: orgId, name: expect.any(String), created_at: admin.org.created_at });
      }
    });

    it('an outsider → 404, exactly like an organization that does not exist', async () => {
      const theirs = await app.http.get(`/admin/orgs/${orgId}`).set(bearer(outsider.token));
      const none = await app.http.get(`/admin/orgs/${UNKNOWN}`).set(bearer(outsider.token));
      expectError(theirs, 404, 'not_found');
      expect(refusal(theirs)).toEqual(refusal(none));
      expect(JSON.stringify(theirs.body)).not.toContain(admin.org.name);
    });

    it('without a session → 401; a malformed id → 400 invalid_id', async () => {
      expectError(await app.http.get(`/admin/orgs/${orgId}`), 401, 'unauthenticated');
      expectError(await app.http.get('/admin/orgs/acme').set(bearer(admin.token)), 400, 'invalid_id');
    });
  });

  describe('PATCH /admin/orgs/{orgID}', () => {
    it('an admin renames → 200 the renamed Organization; everyone sees the new name', async () => {
      const res = await app.http
        .patch(`/admin/orgs/${orgId}`)
        .set(bearer(admin.token))
        .send({ name: '  Renamed Org ' })
        .expect(200);
      expect(res.body).toEqual({ id: orgId, name: 'Renamed Org', created_at: admin.org.created_at });
      const seen = await app.http.get(`/admin/orgs/${orgId}`).set(bearer(viewer.token)).expect(200);
      expect(seen.body.name).toBe('Renamed Org');
      const listed = await app.http.get('/admin/orgs').set(bearer(member.token)).expect(200);
      expect(listed.body).toContainEqual(res.body);
    });

    it('a member or a viewer → 403 forbidden, and nothing changes', async () => {
      const before = (await app.http.get(`/admin/orgs/${orgId}`).set(bearer(admin.token))).body;
      for (const user of [member, viewer]) {
        expectError(
          await app.http.patch(`/admin/orgs/${orgId}`).set(bearer(user.token)).send({ name: 'Hijacked' }),
          403,
          'forbidden',
        );
      }
      expect((await app.http.get(`/admin/orgs/${orgId}`).set(bearer(admin.token))).body).toEqual(before);
    });

    it('an outsider → 404 (never 403), and nothing changes', async () => {
      const before = (await app.http.get(`/admin/orgs/${orgId}`).set(bearer(admin.token))).body;
      const res = await app.http.patch(`/admin/orgs/${orgId}`).set(bearer(outsider.token)).send({ name: 'Hijacked' });
      expectError(res, 404, 'not_found');
      expect(refusal(res)).toEqual(
        refusal(await app.http.patch(`/admin/orgs/${UNKNOWN}`).set(bearer(outsider.token)).send({ name: 'x' })),
      );
      expect((await app.http.get(`/admin/orgs/${orgId}`).set(bearer(admin.token))).body).toEqual(before);
    });

    it.each([
      ['no name', {}, ['name']],
      ['an empty name', { name: '' }, ['name']],
      ['a name of 101 characters', { name: 'n'.repeat(101) }, ['name']],
      ['an unknown field', { name: 'ok', id: UNKNOWN }, ['id']],
    ])('%s → 400 validation_failed', async (_label, body, paths) => {
      const res = await app.http.patch(`/admin/orgs/${orgId}`).set(bearer(admin.token)).send(body);
      expectError(res, 400, 'validation_failed');
      expect(res.body.error.details.map((detail: { path: string }) => detail.path)).toEqual(paths);
    });

    it('malformed JSON → 400; text → 415; no session → 401; malformed id → 400 invalid_id', async () => {
      expectError(
        await app.http
          .patch(`/admin/orgs/${orgId}`)
          .set(bearer(admin.token))
          .set('Content-Type', 'application/json')
          .send('{'),
        400,
        'malformed_json',
      );
      expectError(
        await app.http
          .patch(`/admin/orgs/${orgId}`)
          .set(bearer(admin.token))
          .set('Content-Type', 'text/plain')
          .send('x'),
        415,
        'unsupported_media_type',
      );
      expectError(await app.http.patch(`/admin/orgs/${orgId}`).send({ name: 'x' }), 401, 'unauthenticated');
      expectError(
        await app.http.patch('/admin/orgs/42').set(bearer(admin.token)).send({ name: 'x' }),
        400,
        'invalid_id',
      );
    });
  });

  describe('an outsider learns nothing from any endpoint under the organization', () => {
    it.each([
      ['get', ''],
      ['patch', ''],
      ['get', '/members'],
      ['post', '/members'],
      ['patch', '/members/{ADMIN}'],
      ['delete', '/members/{ADMIN}'],
      ['get', '/projects'],
      ['post', '/projects'],
    ] as const)('%s /admin/orgs/{orgID}%s → 404', async (method, suffix) => {
      const path = suffix.replace('{ADMIN}', admin.user.id);
      const body =
        method === 'post' && suffix === '/members'
          ? { email: outsider.user.email, role: 'admin' }
          : suffix.startsWith('/members/')
            ? { role: 'viewer' }
            : { name: 'x' };
      const theirs = await app.http[method](`/admin/orgs/${orgId}${path}`)
        .set(bearer(outsider.token))
        .send(method === 'get' || method === 'delete' ? undefined : body);
      expectError(theirs, 404, 'not_found');
      const none = await app.http[method](`/admin/orgs/${UNKNOWN}${path}`)
        .set(bearer(outsider.token))
        .send(method === 'get' || method === 'delete' ? undefined : body);
      expect(refusal(theirs)).toEqual(refusal(none));
    });

    it('…and nothing was changed by those attempts', async () => {
      const members = await app.http.get(`/admin/orgs/${orgId}/members`).set(bearer(admin.token)).expect(200);
      expect(members.body.map((m: { user_id: string; role: string }) => [m.user_id, m.role])).toEqual([
        [admin.user.id, 'admin'],
        [member.user.id, 'member'],
        [viewer.user.id, 'viewer'],
      ]);
      expect((await app.http.get(`/admin/orgs/${orgId}/projects`).set(bearer(admin.token)).expect(200)).body).toEqual(
        [],
      );
    });
  });
});
