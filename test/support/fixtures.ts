// Builds the accounts a test needs through the real API: a fresh user, organization, project and key per test.
import { randomUUID } from 'node:crypto';
import type { TestApp } from './app';

export const uniqueEmail = (label = 'user') => `${label}-${randomUUID()}@example.com`;
export const bearer = (token: string) => ({ Authorization: `Bearer ${token}` });

export async function registerUser(app: TestApp, fields: { email?: string; password?: string; name?: string } = {}) {
  const body = {
    email: fields.email ?? uniqueEmail(),
    password: fields.password ?? 'correct horse battery',
    ...(fields.name ? { name: fields.name } : {}),
  };
  const res = await app.http.post('/auth/register').send(body).expect(201);
  return {
    token: res.body.token as string,
    user: res.body.user,
    org: res.body.organizations[0],
    password: body.password,
  };
}

export async function createProject(app: TestApp, token: string, orgId: string, name = `project-${randomUUID()}`) {
  const res = await app.http.post(`/admin/orgs/${orgId}/projects`).set(bearer(token)).send({ name }).expect(201);
  return res.body as { id: string; org_id: string; name: string; created_at: string };
}

export async function createApiKey(app: TestApp, token: string, orgId: string, projectId: string) {
  const res = await app.http
    .post(`/admin/orgs/${orgId}/projects/${projectId}/api-keys`)
    .set(bearer(token))
    .send({ name: 'test' })
    .expect(201);
  return res.body as { id: string; key: string; prefix: string };
}

/** An admin with an organization, a project and an API key for it. */
export async function setUpProject(app: TestApp) {
  const admin = await registerUser(app);
  const project = await createProject(app, admin.token, admin.org.id);
  const apiKey = await createApiKey(app, admin.token, admin.org.id, project.id);
  return { admin, org: admin.org, project, apiKey, key: apiKey.key };
}

/** Adds a registered user to the organization with a role. */
export async function addMember(app: TestApp, adminToken: string, orgId: string, role: 'admin' | 'member' | 'viewer') {
  const member = await registerUser(app);
  await app.http
    .post(`/admin/orgs/${orgId}/members`)
    .set(bearer(adminToken))
    .send({ email: member.user.email, role })
    .expect(201);
  return member;
}

/** An organization with one user of each role, and an outsider who belongs to another organization. */
export async function setUpTeam(app: TestApp) {
  const admin = await registerUser(app);
  const member = await addMember(app, admin.token, admin.org.id, 'member');
  const viewer = await addMember(app, admin.token, admin.org.id, 'viewer');
  const outsider = await registerUser(app);
  return { admin, member, viewer, outsider };
}
