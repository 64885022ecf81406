// HTTP declarations of accounts and sessions (contract section 2).
import type { IncomingMessage, ServerResponse } from 'node:http';
import { z } from 'zod';
import type { Clock } from '../clock';
import { tooManyRequests } from '../errors';
import { clearCookie, setCookie } from '../http/cookies';
import type { TrustedProxies } from '../http/proxies';
import { RateLimiter } from '../http/rate-limit';
import { defineRoute } from '../http/route';
import { displayName, email, text, timestampOut, uuid } from '../http/schemas';
import { organizationSchema } from '../orgs/routes';
import { SESSION_COOKIE } from './authenticator';
import { MAX_PASSWORD_LENGTH, MIN_PASSWORD_LENGTH, passwordRefusal } from './password-policy';
import type { authService } from './service';

const userSchema = z
  .object({
    id: uuid,
    email: z.string(),
    name: z.string(),
    is_verified: z.boolean(),
    verified_at: timestampOut.nullable(),
    created_at: timestampOut,
  })
  .meta({ id: 'User' });
export const profileSchema = z
  .object({ user: userSchema, organizations: z.array(organizationSchema) })
  .meta({ id: 'Profile' });
const authResultSchema = profileSchema
  .extend({ token: z.string(), expires_at: timestampOut })
  .meta({ id: 'AuthResult' });
/** A new password: its length, and what the policy refuses (password-policy.ts), checked with the e-mail below. */
const password = text()
  .min(MIN_PASSWORD_LENGTH, `must be at least ${MIN_PASSWORD_LENGTH} characters`)
  .max(MAX_PASSWORD_LENGTH, `must be at most ${MAX_PASSWORD_LENGTH} characters`)
  .describe('not a common or breached password, one character repeated, or the e-mail, its local part or the name');
const registration = z.strictObject({ email, password, name: displayName.optional() }).superRefine((body, context) => {
  // A password refused for its length already has its issue.
  if (body.password.length < MIN_PASSWORD_LENGTH || body.password.length > MAX_PASSWORD_LENGTH) return;
  const refusal = passwordRefusal(body.password, body);
  if (refusal) context.addIssue({ code: 'custom', path: ['password'], message: refusal });
});
const tag = 'Auth';
const setsSession = {
  'Set-Cookie': z
    .string()
    .describe(`${SESSION_COOKIE}=<token>; HttpOnly; SameSite=Lax; Path=/; Expires=…; Secure over HTTPS`),
};
const clearsSession = {
  'Set-Cookie': z
    .string()
    .describe(`${SESSION_COOKIE}=; Path=/; Expires=Thu, 01 Jan 1970 00:00:00 GMT: the cookie cleared`),
};

/** Answers with a new session: its token in the body and in the session cookie (for browsers; Secure over HTTPS). */
async function withSessionCookie<T extends { token: string; expires_at: string }>(
  res: ServerResponse,
  secure: boolean,
  session: Promise<T>,
): Promise<T> {
  const result = await session;
  setCookie(res, SESSION_COOKIE, result.token, {
    httpOnly: true,
    sameSite: 'lax',
    secure,
    expires: new Date(result.expires_at),
  });
  return result;
}

export function authRoutes(auth: ReturnType<typeof authService>, clock: Clock, perMinute: number) {
  const perClient = new RateLimiter(perMinute, 60_000, () => clock.now().getTime());
  // Login and register share one budget per client address.
  const addressOf = (req: IncomingMessage, proxies: TrustedProxies) => proxies.clientAddress(req) ?? 'unknown';
  const limitClient = (req: IncomingMessage, proxies: TrustedProxies) => {
    const wait = perClient.hit(addressOf(req, proxies));
    if (wait > 0) throw tooManyRequests(wait);
  };

  // Route declarations are a table: the route, then its checks and schemas, then its handler, a line or two each.
  // prettier-ignore
  return [
    defineRoute({
      method: 'post', path: '/auth/register', operationId: 'register', tag,
      summary: 'Register; also creates the first organization',
      auth: { kind: 'public' }, guard: limitClient, status: 201, errors: [409, 503],
      body: registration, response: authResultSchema,
      responseHeaders: setsSession,
      handler: ({ body, req, res, proxies }) => withSessionCookie(res, proxies.isHttps(req), auth.register(body)),
    }),
    defineRoute({
      method: 'post', path: '/auth/login', operationId: 'login', tag, summary: 'Log in with e-mail and password',
      auth: { kind: 'public' }, guard: limitClient, errors: [401, 503],
      body: z.strictObject({ email, password: text().max(256) }), response: authResultSchema,
      responseHeaders: setsSession,
      handler: ({ body, req, res, proxies }) =>
        withSessionCookie(res, proxies.isHttps(req), auth.login(body, addressOf(req, proxies))),
    }),
    defineRoute({
      method: 'post', path: '/auth/logout', operationId: 'logout', tag,
      summary: 'Log out; the session stops working at once',
      auth: { kind: 'session' }, status: 204, responseHeaders: clearsSession,
      handler: async ({ caller, res }) => {
        await auth.logout(caller.sessionId);
        clearCookie(res, SESSION_COOKIE);
      },
    }),
    defineRoute({
      method: 'get', path: '/auth/me', operationId: 'getProfile', tag,
      summary: 'The signed-in user and their organizations',
      auth: { kind: 'session' }, response: profileSchema,
      handler: ({ caller }) => auth.me(caller.userId),
    }),
  ];
}
