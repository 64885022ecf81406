// Members of an organization (contract section 3): list, add, change role, remove; roles; the last admin stays.
import { startTestApp, type TestApp } from '../support/app';
import { detailPaths, expectError, TIMESTAMP, UNKNOWN } from '../support/assertions';
import { addMember, bearer, registerUser, setUpTeam, uniqueEmail } from '../support/fixtures';

let app: TestApp;
beforeAll(async () => {
  app = await startTestApp();
});
afterAll(() => app.close());
// This file registers more users than AUTH_RATE_LIMIT_PER_MINUTE allows in one minute (the limit has its own
// tests); the service's clock stands still, so each test moves it on to a fresh rate-limit minute.
beforeEach(() => app.clock.advance(60));

type User = Awaited<ReturnType<typeof registerUser>>;
const membersOf = async (orgId: string, token: string) =>
  (await app.http.get(`/admin/orgs/${orgId}/members`).set(bearer(token)).expect(200)).body as {
    user_id: string;
    role: string;
  }[];
const rolesOf = async (orgId: string, token: string) => (await membersOf(orgId, token)).map((m) => [m.user_id, m.role]);

describe('GET /admin/orgs/{orgID}/members', () => {
  let admin: User;
  let member: User;
  let viewer: User;
  beforeAll(async () => {
    admin = await registerUser(app, { name: 'Admin A' });
    member = await addMember(app, admin.token, admin.org.id, 'member');
    viewer = await addMember(app, admin.token, admin.org.id, 'viewer');
  });

  it('→ 200 every member with user_id, email, name, role, created_at, for every role', async () => {
    for (const caller of [admin, member, viewer]) {
      const res = await app.http.get(`/admin/orgs/${admin.org.id}/members`).set(bearer(caller.token)).expect(200);
      expect(res.body).toEqual([
        {
          user_id: admin.user.id,
          email: admin.user.email,
          name: 'Admin A',
          role: 'admin',
          created_at: expect.stringMatching(TIMESTAMP),
        },
        {
          user_id: member.user.id,
          email: member.user.email,
          name: member.user.name,
          role: 'member',
          created_at: expect.stringMatching(TIMESTAMP),
        },
        {
          user_id: viewer.user.id,
          email: viewer.user.email,
          name: viewer.user.name,
          role: 'viewer',
          created_at: expect.stringMatching(TIMESTAMP),
        },
      ]);
    }
  });

  it('an outsider → 404; no session → 401', async () => {
    const outsider = await registerUser(app);
    expectError(
      await app.http.get(`/admin/orgs/${admin.org.id}/members`).set(bearer(outsider.token)),
      404,
      'not_found',
    );
    expectError(await app.http.get(`/admin/orgs/${admin.org.id}/members`), 401, 'unauthenticated');
  });
});

describe('POST /admin/orgs/{orgID}/members', () => {
  let admin: User;
  beforeAll(async () => {
    admin = await registerUser(app);
  });

  it.each(['admin', 'member', 'viewer'] as const)(
    'an admin adds a registered user as %s → 201 member object',
    async (role) => {
      const user = await registerUser(app, { name: `New ${role}` });
      const res = await app.http
        .post(`/admin/orgs/${admin.org.id}/members`)
        .set(bearer(admin.token))
        .send({ email: user.user.email, role })
        .expect(201);
      expect(res.body).toEqual({
        user_id: user.user.id,
        email: user.user.email,
        name: `New ${role}`,
        role,
        created_at: expect.stringMatching(TIMESTAMP),
      });
      // The new member now sees the organization, with that role's rights.
      const orgs = await app.http.get('/admin/orgs').set(bearer(user.token)).expect(200);
      expect(orgs.body.map((o: { id: string }) => o.id)).toContain(admin.org.id);
    },
  );

  it('finds the user by normalized e-mail (case, whitespace)', async () => {
    const user = await registerUser(app);
    const res = await app.http
      .post(`/admin/orgs/${admin.org.id}/members`)
      .set(bearer(admin.token))
      .send({ email: `  ${user.user.email.toUpperCase()} `, role: 'viewer' })
      .expect(201);
    expect(res.body.user_id).toBe(user.user.id);
  });

  it('an e-mail no one registered → 404 not_found', async () => {
    const res = await app.http
      .post(`/admin/orgs/${admin.org.id}/members`)
      .set(bearer(admin.token))
      .send({ email: uniqueEmail('nobody'), role: 'viewer' });
    expectError(res, 404, 'not_found');
  });

  it('a user who already is a member → 409 conflict, whatever the role asked; the role stays', async () => {
    const user = await addMember(app, admin.token, admin.org.id, 'viewer');
    expectError(
      await app.http
        .post(`/admin/orgs/${admin.org.id}/members`)
        .set(bearer(admin.token))
        .send({ email: user.user.email, role: 'admin' }),
      409,
      'conflict',
    );
    expectError(
      await app.http
        .post(`/admin/orgs/${admin.org.id}/members`)
        .set(bearer(admin.token))
        .send({ email: admin.user.email, role: 'viewer' }),
      409,
      'conflict',
    );
    const roles = await rolesOf(admin.org.id, admin.token);
    expect(roles).toContainEqual([user.user.id, 'viewer']);
    expect(roles).toContainEqual([admin.user.id, 'admin']);
  });

  it('a member or a viewer → 403; an outsider → 404; no session → 401', async () => {
    const member = await addMember(app, admin.token, admin.org.id, 'member');
    const viewer = await addMember(app, admin.token, admin.org.id, 'viewer');
    const candidate = await registerUser(app);
    const body = { email: candidate.user.email, role: 'viewer' };
    expectError(
      await app.http.post(`/admin/orgs/${admin.org.id}/members`).set(bearer(member.token)).send(body),
      403,
      'forbidden',
    );
    expectError(
      await app.http.post(`/admin/orgs/${admin.org.id}/members`).set(bearer(viewer.token)).send(body),
      403,
      'forbidden',
    );
    // An outsider cannot add themselves either.
    expectError(
      await app.http
        .post(`/admin/orgs/${admin.org.id}/members`)
        .set(bearer(candidate.token))
        .send({ email: candidate.user.email, role: 'admin' }),
      404,
      'not_found',
    );
    expectError(await app.http.post(`/admin/orgs/${admin.org.id}/members`).send(body), 401, 'unauthenticated');
    expect((await rolesOf(admin.org.id, admin.token)).map(([id]) => id)).not.toContain(candidate.user.id);
  });

  it.each([
    ['no role', { email: 'x@example.com' }, ['role']],
    ['an unknown role', { email: 'x@example.com', role: 'owner' }, ['role']],
    ['no e-mail', { role: 'viewer' }, ['email']],
    ['an invalid e-mail', { email: 'x', role: 'viewer' }, ['email']],
    ['an unknown field', { email: 'x@example.com', role: 'viewer', user_id: UNKNOWN }, ['user_id']],
    ['an empty body', {}, ['email', 'role']],
  ])('%s → 400 validation_failed', async (_label, body, paths) => {
    const res = await app.http.post(`/admin/orgs/${admin.org.id}/members`).set(bearer(admin.token)).send(body);
    expectError(res, 400, 'validation_failed');
    expect(detailPaths(res)).toEqual(paths);
  });

  it('malformed JSON → 400; text → 415; malformed org id → 400 invalid_id', async () => {
    const url = `/admin/orgs/${admin.org.id}/members`;
    expectError(
      await app.http.post(url).set(bearer(admin.token)).set('Content-Type', 'application/json').send('{"email"'),
      400,
      'malformed_json',
    );
    expectError(
      await app.http.post(url).set(bearer(admin.token)).set('Content-Type', 'text/plain').send('x'),
      415,
      'unsupported_media_type',
    );
    expectError(
      await app.http
        .post('/admin/orgs/nope/members')
        .set(bearer(admin.token))
        .send({ email: 'x@example.com', role: 'viewer' }),
      400,
      'invalid_id',
    );
  });
});

describe('PATCH /admin/orgs/{orgID}/members/{userID}', () => {
  it('an admin changes a role → 200 member object; the new role applies at once', async () => {
    const admin = await registerUser(app);
    const user = await addMember(app, admin.token, admin.org.id, 'viewer');
    // As a viewer the user may not rename the organization …
    expectError(
      await app.http.patch(`/admin/orgs/${admin.org.id}`).set(bearer(user.token)).send({ name: 'x' }),
      403,
      'forbidden',
    );
    const res = await app.http
      .patch(`/admin/orgs/${admin.org.id}/members/${user.user.id}`)
      .set(bearer(admin.token))
      .send({ role: 'admin' })
      .expect(200);
    expect(res.body).toEqual({
      user_id: user.user.id,
      email: user.user.email,
      name: user.user.name,
      role: 'admin',
      created_at: expect.stringMatching(TIMESTAMP),
    });
    // … as an admin, with the same session, they may.
    await app.http
      .patch(`/admin/orgs/${admin.org.id}`)
      .set(bearer(user.token))
      .send({ name: 'Renamed by promoted' })
      .expect(200);
    await app.http
      .patch(`/admin/orgs/${admin.org.id}/members/${user.user.id}`)
      .set(bearer(admin.token))
      .send({ role: 'member' })
      .expect(200);
    expectError(
      await app.http.patch(`/admin/orgs/${admin.org.id}`).set(bearer(user.token)).send({ name: 'x' }),
      403,
      'forbidden',
    );
    expect(await rolesOf(admin.org.id, admin.token)).toEqual([
      [admin.user.id, 'admin'],
      [user.user.id, 'member'],
    ]);
  });

  it('setting the role a member already has → 200, unchanged', async () => {
    const admin = await registerUser(app);
    const res = await app.http
      .patch(`/admin/orgs/${admin.org.id}/members/${admin.user.id}`)
      .set(bearer(admin.token))
      .send({ role: 'admin' })
      .expect(200);
    expect(res.body.role).toBe('admin');
  });

  it('a user who is not a member (or does not exist) → 404', async () => {
    const admin = await registerUser(app);
    const stranger = await registerUser(app);
    expectError(
      await app.http
        .patch(`/admin/orgs/${admin.org.id}/members/${stranger.user.id}`)
        .set(bearer(admin.token))
        .send({ role: 'viewer' }),
      404,
      'not_found',
    );
    expectError(
      await app.http
        .patch(`/admin/orgs/${admin.org.id}/members/${UNKNOWN}`)
        .set(bearer(admin.token))
        .send({ role: 'viewer' }),
      404,
      'not_found',
    );
    // The stranger did not become a member by it.
    expectError(await app.http.get(`/admin/orgs/${admin.org.id}`).set(bearer(stranger.token)), 404, 'not_found');
  });

  it('a member of another organization addressed under this one → 404, and their role there is untouched', async () => {
    const mine = await registerUser(app);
    const other = await registerUser(app);
    const theirMember = await addMember(app, other.token, other.org.id, 'viewer');
    expectError(
      await app.http
        .patch(`/admin/orgs/${mine.org.id}/members/${theirMember.user.id}`)
        .set(bearer(mine.token))
        .send({ role: 'admin' }),
      404,
      'not_found',
    );
    expectError(
      await app.http.delete(`/admin/orgs/${mine.org.id}/members/${theirMember.user.id}`).set(bearer(mine.token)),
      404,
      'not_found',
    );
    expect(await rolesOf(other.org.id, other.token)).toContainEqual([theirMember.user.id, 'viewer']);
  });

  it('a member or a viewer → 403 (also on themselves); an outsider → 404; no session → 401', async () => {
    const { admin, member, viewer, outsider } = await setUpTeam(app);
    const url = (userId: string) => `/admin/orgs/${admin.org.id}/members/${userId}`;
    expectError(
      await app.http.patch(url(member.user.id)).set(bearer(member.token)).send({ role: 'admin' }),
      403,
      'forbidden',
    );
    expectError(
      await app.http.patch(url(viewer.user.id)).set(bearer(viewer.token)).send({ role: 'admin' }),
      403,
      'forbidden',
    );
    expectError(
      await app.http.patch(url(admin.user.id)).set(bearer(member.token)).send({ role: 'viewer' }),
      403,
      'forbidden',
    );
    expectError(
      await app.http.patch(url(admin.user.id)).set(bearer(outsider.token)).send({ role: 'viewer' }),
      404,
      'not_found',
    );
    expectError(await app.http.patch(url(admin.user.id)).send({ role: 'viewer' }), 401, 'unauthenticated');
    expect(await rolesOf(admin.org.id, admin.token)).toEqual([
      [admin.user.id, 'admin'],
      [member.user.id, 'member'],
      [viewer.user.id, 'viewer'],
    ]);
  });

  it.each([
    ['no role', {}, ['role']],
    ['an unknown role', { role: 'superuser' }, ['role']],
    ['an unknown field', { role: 'viewer', email: 'x@example.com' }, ['email']],
  ])('%s → 400 validation_failed', async (_label, body, paths) => {
    const admin = await registerUser(app);
    const res = await app.http
      .patch(`/admin/orgs/${admin.org.id}/members/${admin.user.id}`)
      .set(bearer(admin.token))
      .send(body);
    expectError(res, 400, 'validation_failed');
    expect(detailPaths(res)).toEqual(paths);
  });

  it('a malformed user id → 400 invalid_id; malformed JSON → 400; text → 415', async () => {
    const admin = await registerUser(app);
    expectError(
      await app.http.patch(`/admin/orgs/${admin.org.id}/members/me`).set(bearer(admin.token)).send({ role: 'viewer' }),
      400,
      'invalid_id',
    );
    const url = `/admin/orgs/${admin.org.id}/members/${admin.user.id}`;
    expectError(
      await app.http.patch(url).set(bearer(admin.token)).set('Content-Type', 'application/json').send('{role}'),
      400,
      'malformed_json',
    );
    expectError(
      await app.http.patch(url).set(bearer(admin.token)).set('Content-Type', 'text/plain').send('viewer'),
      415,
      'unsupported_media_type',
    );
  });
});

describe('DELETE /admin/orgs/{orgID}/members/{userID}', () => {
  it('an admin removes a member → 204; the user loses access at once', async () => {
    const admin = await registerUser(app);
    const user = await addMember(app, admin.token, admin.org.id, 'member');
    await app.http.get(`/admin/orgs/${admin.org.id}`).set(bearer(user.token)).expect(200);
    const res = await app.http
      .delete(`/admin/orgs/${admin.org.id}/members/${user.user.id}`)
      .set(bearer(admin.token))
      .expect(204);
    expect(res.text).toBe('');
    expectError(await app.http.get(`/admin/orgs/${admin.org.id}`).set(bearer(user.token)), 404, 'not_found');
    expect(await rolesOf(admin.org.id, admin.token)).toEqual([[admin.user.id, 'admin']]);
    // Their own organization and their session are unaffected.
    await app.http.get(`/admin/orgs/${user.org.id}`).set(bearer(user.token)).expect(200);
  });

  it('removing someone who is not a member (any more) → 404', async () => {
    const admin = await registerUser(app);
    const user = await addMember(app, admin.token, admin.org.id, 'viewer');
    await app.http.delete(`/admin/orgs/${admin.org.id}/members/${user.user.id}`).set(bearer(admin.token)).expect(204);
    expectError(
      await app.http.delete(`/admin/orgs/${admin.org.id}/members/${user.user.id}`).set(bearer(admin.token)),
      404,
      'not_found',
    );
    expectError(
      await app.http.delete(`/admin/orgs/${admin.org.id}/members/${UNKNOWN}`).set(bearer(admin.token)),
      404,
      'not_found',
    );
  });

  it('a member or a viewer → 403 (also on themselves); an outsider → 404; no session → 401', async () => {
    const { admin, member, viewer, outsider } = await setUpTeam(app);
    const url = (userId: string) => `/admin/orgs/${admin.org.id}/members/${userId}`;
    expectError(await app.http.delete(url(viewer.user.id)).set(bearer(member.token)), 403, 'forbidden');
    expectError(await app.http.delete(url(viewer.user.id)).set(bearer(viewer.token)), 403, 'forbidden');
    expectError(await app.http.delete(url(member.user.id)).set(bearer(member.token)), 403, 'forbidden');
    expectError(await app.http.delete(url(admin.user.id)).set(bearer(outsider.token)), 404, 'not_found');
    expectError(await app.http.delete(url(admin.user.id)), 401, 'unauthenticated');
    expectError(
      await app.http.delete(`/admin/orgs/${admin.org.id}/members/0`).set(bearer(admin.token)),
      400,
      'invalid_id',
    );
    expect(await rolesOf(admin.org.id, admin.token)).toEqual([
      [admin.user.id, 'admin'],
      [member.user.id, 'member'],
      [viewer.user.id, 'viewer'],
    ]);
  });
});

describe('an organization always keeps at least one admin', () => {
  it('the only admin cannot demote themselves → 409, nor remove themselves → 409', async () => {
    const admin = await registerUser(app);
    await addMember(app, admin.token, admin.org.id, 'member');
    for (const role of ['member', 'viewer']) {
      expectError(
        await app.http
          .patch(`/admin/orgs/${admin.org.id}/members/${admin.user.id}`)
          .set(bearer(admin.token))
          .send({ role }),
        409,
        'conflict',
      );
    }
    expectError(
      await app.http.delete(`/admin/orgs/${admin.org.id}/members/${admin.user.id}`).set(bearer(admin.token)),
      409,
      'conflict',
    );
    expect((await rolesOf(admin.org.id, admin.token))[0]).toEqual([admin.user.id, 'admin']);
  });

  it('with two admins, one may be demoted and the other removed … until one is left', async () => {
    const first = await registerUser(app);
    const second = await addMember(app, first.token, first.org.id, 'admin');
    const third = await addMember(app, first.token, first.org.id, 'admin');
    // Demote an admin (by another admin) → 200.
    await app.http
      .patch(`/admin/orgs/${first.org.id}/members/${third.user.id}`)
      .set(bearer(second.token))
      .send({ role: 'viewer' })
      .expect(200);
    // An admin removes themselves while another admin remains → 204.
    await app.http.delete(`/admin/orgs/${first.org.id}/members/${first.user.id}`).set(bearer(first.token)).expect(204);
    expect(await rolesOf(first.org.id, second.token)).toEqual([
      [second.user.id, 'admin'],
      [third.user.id, 'viewer'],
    ]);
    // Now `second` is the only admin.
    expectError(
      await app.http
        .patch(`/admin/orgs/${first.org.id}/members/${second.user.id}`)
        .set(bearer(second.token))
        .send({ role: 'member' }),
      409,
      'conflict',
    );
    expectError(
      await app.http.delete(`/admin/orgs/${first.org.id}/members/${second.user.id}`).set(bearer(second.token)),
      409,
      'conflict',
    );
    // Promoting someone else first makes it possible again.
    await app.http
      .patch(`/admin/orgs/${first.org.id}/members/${third.user.id}`)
      .set(bearer(second.token))
      .send({ role: 'admin' })
      .expect(200);
    await app.http
      .patch(`/admin/orgs/${first.org.id}/members/${second.user.id}`)
      .set(bearer(second.token))
      .send({ role: 'viewer' })
      .expect(200);
    expect(await rolesOf(first.org.id, third.token)).toEqual([
      [second.user.id, 'viewer'],
      [third.user.id, 'admin'],
    ]);
  });

  it('two admins demoting each other at once: one wins, the other is refused, an admin remains', async () => {
    const first = await registerUser(app);
    const second = await addMember(app, first.token, first.org.id, 'admin');
    const results = await Promise.all([
      app.http
        .patch(`/admin/orgs/${first.org.id}/members/${second.user.id}`)
        .set(bearer(first.token))
        .send({ role: 'member' }),
      app.http
        .patch(`/admin/orgs/${first.org.id}/members/${first.user.id}`)
        .set(bearer(second.token))
        .send({ role: 'member' }),
    ]);
    // The loser gets 409 when both passed the role check before either committed, else 403 (no longer an admin).
    const statuses = results.map((res) => res.status).sort();
    expect([
      [200, 403],
      [200, 409],
    ]).toContainEqual(statuses);
    const admins = (
      await app.stores.pg.query<{ role: string }>('SELECT role FROM memberships WHERE org_id = $1', [first.org.id])
    ).filter((m) => m.role === 'admin');
    expect(admins).toHaveLength(1);
  });
});
