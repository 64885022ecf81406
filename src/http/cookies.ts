// Sets and clears cookies on node's response, as express's res.cookie and res.clearCookie did (cookie's serialize).
import type { ServerResponse } from 'node:http';
import { serialize, type CookieSerializeOptions } from 'cookie';

/** Adds a Set-Cookie line to the response; the path is `/` unless given. */
export function setCookie(res: ServerResponse, name: string, value: string, options: CookieSerializeOptions): void {
  res.appendHeader('Set-Cookie', serialize(name, value, { path: '/', ...options }));
}

/** Tells the browser to drop the cookie: empty, and expired at the epoch. */
export function clearCookie(res: ServerResponse, name: string, options: CookieSerializeOptions = {}): void {
  setCookie(res, name, '', { ...options, expires: new Date(0) });
}
