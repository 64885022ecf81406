// Hash routing: `#/orgs/…/overview?window=24h&agent=planner`. The whole view — page, window, filters — is in the
// URL, so any view can be shared or reloaded, and the server serves one page at `/` for all of them.
import { useEffect, useState } from 'preact/hooks';
import { searchOf, type Query } from './api';

export interface Location {
  path: string;
  query: URLSearchParams;
}

function current(): Location {
  const [path, search = ''] = location.hash.replace(/^#/, '').split('?', 2);
  return { path: path || '/', query: new URLSearchParams(search) };
}

export function useLocation(): Location {
  const [here, setHere] = useState(current);
  useEffect(() => {
    const changed = () => setHere(current());
    addEventListener('hashchange', changed);
    return () => removeEventListener('hashchange', changed);
  }, []);
  return here;
}

/** `#/path?query`, with the query's empty values left out. */
export const href = (path: string, query: Query = {}): string => `#${path}${searchOf(query)}`;

export function navigate(path: string, query: Query = {}, replace = false): void {
  const target = href(path, query);
  if (replace) history.replaceState(null, '', target);
  else history.pushState(null, '', target);
  dispatchEvent(new HashChangeEvent('hashchange'));
}

/** Goes to a path with a query given whole: one that repeats a parameter (a search's tags). */
export function navigateSearch(path: string, query: URLSearchParams): void {
  const search = query.toString();
  history.pushState(null, '', `#${path}${search ? `?${search}` : ''}`);
  dispatchEvent(new HashChangeEvent('hashchange'));
}

/** The current query with some values changed (undefined or '' removes one). */
export function withChanges(query: URLSearchParams, changes: Query): Query {
  return { ...Object.fromEntries(query), ...changes };
}

/** The parameters of a path matched against a pattern such as `/orgs/:orgID/members`, or undefined. */
export function match(pattern: string, path: string): Record<string, string> | undefined {
  const names: string[] = [];
  const source = pattern.replace(/:(\w+)/g, (_, name: string) => {
    names.push(name);
    return '([^/]+)';
  });
  const found = new RegExp(`^${source}$`).exec(path);
  if (!found) return undefined;
  try {
    return Object.fromEntries(names.map((name, i) => [name, decodeURIComponent(found[i + 1])]));
  } catch {
    // A hand-edited address that is not valid percent-encoding matches no page.
    return undefined;
  }
}
