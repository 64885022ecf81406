// What a process used over a measured span: its cores (JavaScript thread, other threads) and its engine's inserted
// parts.
import os from 'node:os';
import { blocksNumbered } from './engine-parts';

export interface Usage {
  seconds: number;
  /** Cores used by the process's JavaScript thread and by all its other threads (the engine's above all). */
  mainCores: number;
  otherCores: number;
  /** Parts the embedded engine inserted, per minute; undefined for a process without one. */
  partsPerMinute: number | undefined;
  /** The machine's 1-minute load average when the span began: anything else running shows here. */
  loadBefore: number;
}

export interface Probe {
  elapsedSeconds(): number;
  stop(): Usage;
}

/** Starts a span now; `cpuSeconds` reads the process's CPU so far, `engineDir` is its embedded engine's directory. */
export function startProbe(cpuSeconds: () => { main: number; others: number }, engineDir: string | undefined): Probe {
  const loadBefore = os.loadavg()[0];
  const blocksBefore = engineDir === undefined ? 0 : blocksNumbered(engineDir);
  const cpuBefore = cpuSeconds();
  const started = performance.now();
  return {
    elapsedSeconds: () => (performance.now() - started) / 1000,
    stop() {
      const cpuAfter = cpuSeconds();
      const seconds = (performance.now() - started) / 1000;
      const parts = engineDir === undefined ? undefined : blocksNumbered(engineDir) - blocksBefore;
      return {
        seconds,
        mainCores: (cpuAfter.main - cpuBefore.main) / seconds,
        otherCores: (cpuAfter.others - cpuBefore.others) / seconds,
        partsPerMinute: parts === undefined ? undefined : (parts * 60) / seconds,
        loadBefore,
      };
    },
  };
}
