// Session tokens: HS256 JWTs whose `jti` names a row of the sessions table.
import jwt from 'jsonwebtoken';

export interface SessionClaims {
  userId: string;
  sessionId: string;
}

export function signSessionToken(secret: string, claims: SessionClaims, issuedAt: Date, expiresAt: Date): string {
  return jwt.sign(
    {
      sub: claims.userId,
      jti: claims.sessionId,
      iat: Math.floor(issuedAt.getTime() / 1000),
      exp: Math.floor(expiresAt.getTime() / 1000),
    },
    secret,
    { algorithm: 'HS256', noTimestamp: true },
  );
}

/** Returns the claims of a valid, unexpired token signed by us, else undefined. */
export function verifySessionToken(secret: string, token: string, now: Date): SessionClaims | undefined {
  try {
    const payload = jwt.verify(token, secret, {
      algorithms: ['HS256'],
      clockTimestamp: Math.floor(now.getTime() / 1000),
    });
    if (typeof payload !== 'object' || typeof payload.sub !== 'string' || typeof payload.jti !== 'string')
      return undefined;
    return { userId: payload.sub, sessionId: payload.jti };
  } catch {
    return undefined;
  }
}
