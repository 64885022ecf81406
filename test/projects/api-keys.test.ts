// Project API keys (contract section 3): create, list, revoke; format and storage; roles; use and revocation.
import { createHash } from 'node:crypto';
import type { Response } from 'supertest';
import { startTestApp, type TestApp } from '../support/app';
import { detailPaths, expectError, KEY, refusal, TIMESTAMP, UNKNOWN, UUID } from '../support/assertions';
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
type Project = Awaited<ReturnType<typeof createProject>>;
const keysUrl = (orgId: string, projectId: string) => `/admin/orgs/${orgId}/projects/${projectId}/api-keys`;
const listKeys = async (user: User, projectId: string) =>
  (await app.http.get(keysUrl(user.org.id, projectId)).set(bearer(user.token)).expect(200)).body as Record<
    string,
    unknown
  >[];
/** An API-key-authenticated call: starting a run (the ingest path). */
const startRun = (key: string) =>
  app.http.post('/ingest/agent/runs').set(bearer(key)).send({ agent_name: 'api-key-test' });

describe('POST …/api-keys', () => {
  let admin: User;
  let project: Project;
  beforeAll(async () => {
    admin = await registerUser(app);
    project = await createProject(app, admin.token, admin.org.id);
  });

  it('→ 201 { id, name, key, prefix, created_at, last_used_at }; key rw_ + 40 base62, prefix its first 8', async () => {
    const res = await app.http
      .post(keysUrl(admin.org.id, project.id))
      .set(bearer(admin.token))
      .send({ name: '  CI pipeline ' })
      .expect(201);
    expect(res.body).toEqual({
      id: expect.stringMatching(UUID),
      name: 'CI pipeline',
      key: expect.stringMatching(KEY),
      prefix: res.body.key.slice(0, 8),
      created_at: expect.stringMatching(TIMESTAMP),
      last_used_at: null,
    });
    expect(res.body.prefix).toMatch(/^rw_[0-9A-Za-z]{5}$/);
  });

  it('names the key "default" when no name is sent: no body, or an empty object', async () => {
    const noBody = await app.http.post(keysUrl(admin.org.id, project.id)).set(bearer(admin.token)).expect(201);
    expect(noBody.body.name).toBe('default');
    const emptyObject = await app.http
      .post(keysUrl(admin.org.id, project.id))
      .set(bearer(admin.token))
      .send({})
      .expect(201);
    expect(emptyObject.body.name).toBe('default');
  });

  it('gives every key its own random value', async () => {
    const keys = new Set<string>();
    for (let i = 0; i < 5; i += 1) keys.add((await createApiKey(app, admin.token, admin.org.id, project.id)).key);
    expect(keys.size).toBe(5);
  });

  it('stores only the SHA-256 of the key and its prefix, never the key', async () => {
    const created = await createApiKey(app, admin.token, admin.org.id, project.id);
    const [row] = await app.stores.pg.query<Record<string, unknown>>('SELECT * FROM api_keys WHERE id = $1', [
      created.id,
    ]);
    expect(row.key_hash).toBe(createHash('sha256').update(created.key).digest('hex'));
    expect(row.prefix).toBe(created.prefix);
    expect(JSON.stringify(row)).not.toContain(created.key);
  });

  it.each([
    ['an empty name', { name: '' }, ['name']],
    ['a name of 101 characters', { name: 'k'.repeat(101) }, ['name']],
    ['a null name', { name: null }, ['name']],
    ['an unknown field', { name: 'ok', key: `rw_${'a'.repeat(40)}` }, ['key']],
    ['a chosen prefix', { prefix: 'rw_mine' }, ['prefix']],
  ])('%s → 400 validation_failed', async (_label, body, paths) => {
    const res = await app.http.post(keysUrl(admin.org.id, project.id)).set(bearer(admin.token)).send(body);
    expectError(res, 400, 'validation_failed');
    expect(detailPaths(res)).toEqual(paths);
  });

  it('malformed JSON → 400; text → 415; malformed ids → 400 invalid_id', async () => {
    const url = keysUrl(admin.org.id, project.id);
    expectError(
      await app.http.post(url).set(bearer(admin.token)).set('Content-Type', 'application/json').send('{"name":}'),
      400,
      'malformed_json',
    );
    expectError(
      await app.http.post(url).set(bearer(admin.token)).set('Content-Type', 'text/plain').send('ci'),
      415,
      'unsupported_media_type',
    );
    expectError(await app.http.post(keysUrl(admin.org.id, 'x')).set(bearer(admin.token)).send({}), 400, 'invalid_id');
    expectError(await app.http.post(keysUrl('x', project.id)).set(bearer(admin.token)).send({}), 400, 'invalid_id');
  });

  it('a project that does not exist → 404; no session → 401', async () => {
    expectError(
      await app.http.post(keysUrl(admin.org.id, UNKNOWN)).set(bearer(admin.token)).send({}),
      404,
      'not_found',
    );
    expectError(await app.http.post(keysUrl(admin.org.id, project.id)).send({}), 401, 'unauthenticated');
  });
});

describe('GET …/api-keys', () => {
  it('→ 200 the active keys, without `key`, oldest first', async () => {
    const admin = await registerUser(app);
    const project = await createProject(app, admin.token, admin.org.id);
    const first = (
      await app.http
        .post(keysUrl(admin.org.id, project.id))
        .set(bearer(admin.token))
        .send({ name: 'first' })
        .expect(201)
    ).body;
    const second = (
      await app.http
        .post(keysUrl(admin.org.id, project.id))
        .set(bearer(admin.token))
        .send({ name: 'second' })
        .expect(201)
    ).body;
    const listed = await listKeys(admin, project.id);
    const withoutKey = ({ key: _key, ...rest }: Record<string, unknown>) => rest;
    expect(listed).toEqual([withoutKey(first), withoutKey(second)]);
    for (const entry of listed) {
      expect(Object.keys(entry).sort()).toEqual(['created_at', 'id', 'last_used_at', 'name', 'prefix']);
    }
    // The secret appears nowhere in the listing.
    const raw = JSON.stringify(listed);
    expect(raw).not.toContain(first.key);
    expect(raw).not.toContain(second.key);
  });

  it("lists only that project's keys", async () => {
    const admin = await registerUser(app);
    const one = await createProject(app, admin.token, admin.org.id);
    const two = await createProject(app, admin.token, admin.org.id);
    const keyOfOne = await createApiKey(app, admin.token, admin.org.id, one.id);
    expect(await listKeys(admin, two.id)).toEqual([]);
    expect((await listKeys(admin, one.id)).map((k) => k.id)).toEqual([keyOfOne.id]);
  });

  it('shows last_used_at once the key has been used', async () => {
    const admin = await registerUser(app);
    const project = await createProject(app, admin.token, admin.org.id);
    const { key, id } = await createApiKey(app, admin.token, admin.org.id, project.id);
    expect((await listKeys(admin, project.id))[0].last_used_at).toBeNull();
    await startRun(key).expect(201);
    const [listed] = await listKeys(admin, project.id);
    expect(listed.id).toBe(id);
    expect(listed.last_used_at).toMatch(TIMESTAMP);
  });
});

describe('DELETE …/api-keys/{keyID}', () => {
  let admin: User;
  let project: Project;
  beforeAll(async () => {
    admin = await registerUser(app);
    project = await createProject(app, admin.token, admin.org.id);
  });

  it('→ 204; the key is refused at once (401), drops out of the list, and a second delete → 404', async () => {
    const revoked = await createApiKey(app, admin.token, admin.org.id, project.id);
    const kept = await createApiKey(app, admin.token, admin.org.id, project.id);
    // Used once before, so the service holds it in its key cache.
    await startRun(revoked.key).expect(201);
    const res = await app.http
      .delete(`${keysUrl(admin.org.id, project.id)}/${revoked.id}`)
      .set(bearer(admin.token))
      .expect(204);
    expect(res.text).toBe('');
    expectError(await startRun(revoked.key), 401, 'unauthenticated');
    // The project's other key keeps working.
    await startRun(kept.key).expect(201);
    expect((await listKeys(admin, project.id)).map((k) => k.id)).toEqual([kept.id]);
    expectError(
      await app.http.delete(`${keysUrl(admin.org.id, project.id)}/${revoked.id}`).set(bearer(admin.token)),
      404,
      'not_found',
    );
  });

  it('a key that does not exist → 404; a malformed key id → 400 invalid_id', async () => {
    expectError(
      await app.http.delete(`${keysUrl(admin.org.id, project.id)}/${UNKNOWN}`).set(bearer(admin.token)),
      404,
      'not_found',
    );
    expectError(
      await app.http.delete(`${keysUrl(admin.org.id, project.id)}/rw_abc`).set(bearer(admin.token)),
      400,
      'invalid_id',
    );
  });

  it("a key of project P1 addressed under project P2's path → 404, and the key keeps working", async () => {
    const other = await createProject(app, admin.token, admin.org.id);
    const key = await createApiKey(app, admin.token, admin.org.id, project.id);
    expectError(
      await app.http.delete(`${keysUrl(admin.org.id, other.id)}/${key.id}`).set(bearer(admin.token)),
      404,
      'not_found',
    );
    await startRun(key.key).expect(201);
  });

  it('no session → 401 on create, list and revoke', async () => {
    const key = await createApiKey(app, admin.token, admin.org.id, project.id);
    expectError(await app.http.post(keysUrl(admin.org.id, project.id)).send({}), 401, 'unauthenticated');
    expectError(await app.http.get(keysUrl(admin.org.id, project.id)), 401, 'unauthenticated');
    expectError(await app.http.delete(`${keysUrl(admin.org.id, project.id)}/${key.id}`), 401, 'unauthenticated');
    // Nor can a key revoke itself: the admin endpoints take sessions only.
    expectError(
      await app.http.delete(`${keysUrl(admin.org.id, project.id)}/${key.id}`).set(bearer(key.key)),
      401,
      'unauthenticated',
    );
    await startRun(key.key).expect(201);
  });
});

describe('roles and organizations', () => {
  let admin: User;
  let member: User;
  let viewer: User;
  let outsider: User;
  let project: Project;
  beforeAll(async () => {
    ({ admin, member, viewer, outsider } = await setUpTeam(app));
    project = await createProject(app, admin.token, admin.org.id);
  });

  it('a member creates, lists and revokes keys (the engineers who instrument agents)', async () => {
    const created = await app.http
      .post(keysUrl(admin.org.id, project.id))
      .set(bearer(member.token))
      .send({ name: 'by member' })
      .expect(201);
    expect(created.body.key).toMatch(KEY);
    const listed = await app.http.get(keysUrl(admin.org.id, project.id)).set(bearer(member.token)).expect(200);
    expect(listed.body.map((k: { id: string }) => k.id)).toContain(created.body.id);
    await app.http
      .delete(`${keysUrl(admin.org.id, project.id)}/${created.body.id}`)
      .set(bearer(member.token))
      .expect(204);
    expectError(await startRun(created.body.key), 401, 'unauthenticated');
  });

  it('a member may revoke a key an admin created, and the reverse', async () => {
    const byAdmin = await createApiKey(app, admin.token, admin.org.id, project.id);
    const byMember = await createApiKey(app, member.token, admin.org.id, project.id);
    await app.http
      .delete(`${keysUrl(admin.org.id, project.id)}/${byAdmin.id}`)
      .set(bearer(member.token))
      .expect(204);
    await app.http
      .delete(`${keysUrl(admin.org.id, project.id)}/${byMember.id}`)
      .set(bearer(admin.token))
      .expect(204);
  });

  it('a viewer → 403 on create, list and revoke; the key survives', async () => {
    const key = await createApiKey(app, admin.token, admin.org.id, project.id);
    expectError(
      await app.http.post(keysUrl(admin.org.id, project.id)).set(bearer(viewer.token)).send({}),
      403,
      'forbidden',
    );
    expectError(await app.http.get(keysUrl(admin.org.id, project.id)).set(bearer(viewer.token)), 403, 'forbidden');
    expectError(
      await app.http.delete(`${keysUrl(admin.org.id, project.id)}/${key.id}`).set(bearer(viewer.token)),
      403,
      'forbidden',
    );
    await startRun(key.key).expect(201);
  });

  it('an outsider → 404 on create, list and revoke, like a missing project; no key data leaks', async () => {
    const key = await createApiKey(app, admin.token, admin.org.id, project.id);
    const attempts: [Response, Response][] = [
      [
        await app.http.post(keysUrl(admin.org.id, project.id)).set(bearer(outsider.token)).send({}),
        await app.http.post(keysUrl(UNKNOWN, UNKNOWN)).set(bearer(outsider.token)).send({}),
      ],
      [
        await app.http.get(keysUrl(admin.org.id, project.id)).set(bearer(outsider.token)),
        await app.http.get(keysUrl(UNKNOWN, UNKNOWN)).set(bearer(outsider.token)),
      ],
      [
        await app.http.delete(`${keysUrl(admin.org.id, project.id)}/${key.id}`).set(bearer(outsider.token)),
        await app.http.delete(`${keysUrl(UNKNOWN, UNKNOWN)}/${UNKNOWN}`).set(bearer(outsider.token)),
      ],
    ];
    for (const [theirs, none] of attempts) {
      expectError(theirs, 404, 'not_found');
      expect(refusal(theirs)).toEqual(refusal(none));
      expect(JSON.stringify(theirs.body)).not.toContain(key.prefix);
    }
    await startRun(key.key).expect(201);
  });

  it("the outsider's own org path with this project's id → 404 on create, list and revoke", async () => {
    const key = await createApiKey(app, admin.token, admin.org.id, project.id);
    expectError(
      await app.http.post(keysUrl(outsider.org.id, project.id)).set(bearer(outsider.token)).send({}),
      404,
      'not_found',
    );
    expectError(await app.http.get(keysUrl(outsider.org.id, project.id)).set(bearer(outsider.token)), 404, 'not_found');
    expectError(
      await app.http.delete(`${keysUrl(outsider.org.id, project.id)}/${key.id}`).set(bearer(outsider.token)),
      404,
      'not_found',
    );
    expect((await listKeys(admin, project.id)).map((k) => k.id)).toContain(key.id);
    await startRun(key.key).expect(201);
  });
});

describe('using a key', () => {
  let admin: User;
  let project: Project;
  let key: string;
  beforeAll(async () => {
    admin = await registerUser(app);
    project = await createProject(app, admin.token, admin.org.id);
    key = (await createApiKey(app, admin.token, admin.org.id, project.id)).key;
  });

  it('is sent as Authorization: Bearer rw_…', async () => {
    await startRun(key).expect(201);
  });

  it.each([
    ['no credentials', undefined],
    ['a key of the right shape that was never issued', `Bearer rw_${'A'.repeat(40)}`],
    ['a key one character short', 'Bearer KEY_SHORT'],
    ['a key with a character changed', 'Bearer KEY_CHANGED'],
    ['the key without the Bearer scheme', 'KEY_BARE'],
  ])('%s → 401', async (_label, header) => {
    const authorization = header
      ?.replace('KEY_SHORT', key.slice(0, -1))
      .replace('KEY_CHANGED', `${key.slice(0, -1)}${key.endsWith('a') ? 'b' : 'a'}`)
      .replace('KEY_BARE', key);
    const req = app.http.post('/ingest/agent/runs');
    if (authorization) req.set('Authorization', authorization);
    expectError(await req.send({ agent_name: 'x' }), 401, 'unauthenticated');
  });

  it('a session token is not an API key → 401', async () => {
    expectError(
      await app.http.post('/ingest/agent/runs').set(bearer(admin.token)).send({ agent_name: 'x' }),
      401,
      'unauthenticated',
    );
  });

  it("a key used on another project's path → 403", async () => {
    const other = await createProject(app, admin.token, admin.org.id);
    const res = await app.http
      .get(`/projects/${other.id}/agent/runs/${UNKNOWN}/steps`)
      .set(bearer(key))
      .query({ timestamp: new Date().toISOString() });
    expectError(res, 403, 'forbidden');
  });
});
