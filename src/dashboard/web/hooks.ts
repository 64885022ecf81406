// Loading data for a view (its state while loading, its error, a way to load it again), and the user's actions.
import { useCallback, useEffect, useMemo, useRef, useState } from 'preact/hooks';
import { windowOf, type Window } from './window';

export interface Loaded<T> {
  data?: T;
  error?: Error;
  loading: boolean;
  reload: () => void;
}

/** Runs `load` whenever a dependency changes; an answer to an older call is dropped. */
export function useLoad<T>(load: () => Promise<T>, dependencies: unknown[]): Loaded<T> {
  const [state, setState] = useState<{ data?: T; error?: Error; loading: boolean }>({ loading: true });
  const generation = useRef(0);
  const run = useCallback(() => {
    const mine = ++generation.current;
    setState((before) => ({ ...before, loading: true }));
    load().then(
      (data) => mine === generation.current && setState({ data, loading: false }),
      (error: Error) => mine === generation.current && setState({ error, loading: false }),
    );
  }, dependencies);
  useEffect(run, [run]);
  return { ...state, reload: run };
}

/**
 * Runs the user's actions (a form's submit, a click) and keeps the last one's error to show; `done` follows every
 * action that succeeds (the reload of the list it changed, say).
 */
export function useAction(done?: () => void): [Error | undefined, (action: () => Promise<unknown>) => Promise<void>] {
  const [error, setError] = useState<Error>();
  const act = async (action: () => Promise<unknown>) => {
    setError(undefined);
    try {
      await action();
    } catch (failure) {
      setError(failure as Error);
      return;
    }
    done?.();
  };
  return [error, act];
}

/** The value, once it has stopped changing for `ms`. */
export function useDebounced<T>(value: T, ms: number): T {
  const [settled, setSettled] = useState(value);
  useEffect(() => {
    const timer = setTimeout(() => setSettled(value), ms);
    return () => clearTimeout(timer);
  }, [JSON.stringify(value), ms]);
  return settled;
}

const PROJECTS_CHANGED = 'runwatch:projects-changed';

/** Tells every view that an organization's projects changed (one created, renamed or deleted). */
export const projectsChanged = () => dispatchEvent(new Event(PROJECTS_CHANGED));

/** A number that changes whenever projects change: a dependency that reloads what lists them (the switcher). */
export function useProjectsVersion(): number {
  const [version, setVersion] = useState(0);
  useEffect(() => {
    const bump = () => setVersion((before) => before + 1);
    addEventListener(PROJECTS_CHANGED, bump);
    return () => removeEventListener(PROJECTS_CHANGED, bump);
  }, []);
  return version;
}

/** The view's window, fixed while the URL stays the same (a preset's "now" does not move on every render). */
export const useWindow = (query: URLSearchParams): Window => useMemo(() => windowOf(query), [query]);
