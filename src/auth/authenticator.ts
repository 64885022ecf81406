// Recognises callers: session tokens (Bearer or cookie) and project API keys, with their roles.
import type { IncomingMessage } from 'node:http';
import type { Clock } from '../clock';
import type { PostgresStore } from '../db/postgres';
import { forbidden, notFound, unauthenticated } from '../errors';
import type { Authenticator, KeyCaller, Role, UserCaller } from '../http/route';
import { API_KEY_PATTERN, hashApiKey } from './api-keys';
import * as q from './queries';
import { verifySessionToken } from './tokens';

export const SESSION_COOKIE = 'runwatch_session';
const ROLE_RANK: Record<Role, number> = { viewer: 0, member: 1, admin: 2 };
// The contract lets a revoked key keep working for at most 5 seconds; this is that window.
const KEY_CACHE_MS = 5000;

function bearerToken(req: IncomingMessage): string | undefined {
  const header = req.headers.authorization;
  const match = header && /^Bearer\s+(\S+)\s*$/i.exec(header);
  return match ? match[1] : undefined;
}

function cookieToken(req: IncomingMessage): string | undefined {
  for (const part of (req.headers.cookie ?? '').split(';')) {
    const [name, ...value] = part.trim().split('=');
    if (name !== SESSION_COOKIE) continue;
    // A cookie that is not valid percent-encoding is no session (401), not a malformed path (400).
    try {
      return decodeURIComponent(value.join('='));
    } catch {
      return undefined;
    }
  }
  return undefined;
}

export function createAuthenticator(pg: PostgresStore, clock: Clock, jwtSecret: string) {
  // By the key as sent: a hit costs no SHA-256 (on starts, hashing every request's key was ~5% of the thread).
  const keyCache = new Map<string, { caller: KeyCaller; keyHash: string; expiresAt: number }>();

  async function session(req: IncomingMessage): Promise<UserCaller> {
    const bearer = bearerToken(req);
    const token = bearer && !bearer.startsWith('rw_') ? bearer : cookieToken(req);
    const now = clock.now();
    const claims = token ? verifySessionToken(jwtSecret, token, now) : undefined;
    if (!claims) throw unauthenticated(token ? 'invalid or expired session' : 'authentication required');
    const live = await pg.query(q.SELECT_LIVE_SESSION, [claims.sessionId, claims.userId, now]);
    if (live.length === 0) throw unauthenticated('invalid or expired session');
    return { type: 'user', userId: claims.userId, sessionId: claims.sessionId };
  }

  async function apiKey(req: IncomingMessage): Promise<KeyCaller> {
    const key = bearerToken(req);
    if (!key || !API_KEY_PATTERN.test(key)) throw unauthenticated('a project API key is required');
    const cached = keyCache.get(key);
    if (cached && cached.expiresAt > Date.now()) return cached.caller;
    const hash = hashApiKey(key);
    const [row] = await pg.query<{ id: string; project_id: string; org_id: string }>(q.USE_API_KEY, [hash]);
    if (!row) throw unauthenticated('invalid or revoked API key');
    const caller: KeyCaller = { type: 'apiKey', keyId: row.id, projectId: row.project_id, orgId: row.org_id };
    keyCache.set(key, { caller, keyHash: hash, expiresAt: Date.now() + KEY_CACHE_MS });
    return caller;
  }

  const authenticator: Authenticator = {
    session,
    apiKey,
    async member(req, orgId, minimumRole) {
      const user = await session(req);
      const [membership] = await pg.query<{ role: Role }>(q.SELECT_ROLE, [orgId, user.userId]);
      if (!membership) throw notFound('organization');
      if (ROLE_RANK[membership.role] < ROLE_RANK[minimumRole]) throw forbidden(`this requires the ${minimumRole} role`);
      return { ...user, orgId, role: membership.role };
    },
    async projectReader(req, projectId) {
      if (bearerToken(req)?.startsWith('rw_')) {
        const key = await apiKey(req);
        if (key.projectId !== projectId) throw forbidden('this API key belongs to another project');
        return key;
      }
      const user = await session(req);
      const [row] = await pg.query<{ org_id: string; role: Role }>(q.SELECT_PROJECT_ROLE, [projectId, user.userId]);
      if (!row) throw notFound('project');
      return { ...user, orgId: row.org_id, role: row.role, projectId };
    },
  };

  /** A revoked key stops working at once on this instance (others' caches expire within KEY_CACHE_MS). */
  const forgetApiKey = (keyHash: string) => {
    for (const [key, entry] of keyCache) if (entry.keyHash === keyHash) keyCache.delete(key);
  };
  return { authenticator, forgetApiKey };
}
