// Background jobs (src/background.ts): run now and after each interval, never overlapping; bounded concurrency.
import { mapLimited, runEvery } from '../src/background';

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

it('runs at once, then after each interval, never two at a time; a failure is reported and it goes on', async () => {
  let active = 0;
  let most = 0;
  let runs = 0;
  const failures: unknown[] = [];
  const stop = runEvery(
    5,
    async () => {
      active += 1;
      most = Math.max(most, active);
      runs += 1;
      await sleep(15);
      active -= 1;
      if (runs === 2) throw new Error('store down');
    },
    (error) => failures.push(error),
  );
  expect(runs).toBe(1);
  // Three runs take ~60 ms; a busy machine's timers may take far longer (CI once saw two in 120 ms).
  const deadline = Date.now() + 10_000;
  while (runs < 3 && Date.now() < deadline) await sleep(10);
  await stop();
  expect(runs).toBeGreaterThanOrEqual(3);
  expect(most).toBe(1);
  expect(failures).toHaveLength(1);
});

it('stopping waits for the run in progress and starts no other', async () => {
  let finished = 0;
  const stop = runEvery(
    1,
    async () => {
      await sleep(20);
      finished += 1;
    },
    () => undefined,
  );
  await stop();
  expect(finished).toBe(1);
  await sleep(30);
  expect(finished).toBe(1);
});

it('mapLimited keeps the order of the items and never runs more than the limit at once', async () => {
  let active = 0;
  let most = 0;
  const results = await mapLimited([30, 5, 20, 1, 10], 2, async (ms) => {
    active += 1;
    most = Math.max(most, active);
    await sleep(ms);
    active -= 1;
    return ms * 2;
  });
  expect(results).toEqual([60, 10, 40, 2, 20]);
  expect(most).toBe(2);
});
