// Group commit (src/ingest/batcher.ts): concurrent callers share calls, each gets its own answers, failures are shared.
import { Batcher } from '../../src/ingest/batcher';

function recordingBatcher(maxItems: number, fail = false) {
  const calls: number[][] = [];
  const batcher = new Batcher<number, number>(async (items) => {
    calls.push(items);
    await new Promise((resolve) => setTimeout(resolve, 5));
    if (fail) throw new Error('store down');
    return items.map((item) => item * 10);
  }, maxItems);
  return { batcher, calls };
}

it('callers of the same moment share one call and each gets the answers to its own items, in order', async () => {
  const { batcher, calls } = recordingBatcher(100);
  const answers = await Promise.all([batcher.submit([1, 2]), batcher.submit([3]), batcher.submit([4, 5, 6])]);
  expect(answers).toEqual([[10, 20], [30], [40, 50, 60]]);
  expect(calls).toEqual([[1, 2, 3, 4, 5, 6]]);
});

it('callers arriving while a call is under way go together in the next one', async () => {
  const { batcher, calls } = recordingBatcher(100);
  const first = batcher.submit([1]);
  await new Promise((resolve) => setImmediate(resolve));
  const later = [batcher.submit([2]), batcher.submit([3])];
  await Promise.all([first, ...later]);
  expect(calls).toEqual([[1], [2, 3]]);
});

it('a call holds at most maxItems, never splitting one caller', async () => {
  const { batcher, calls } = recordingBatcher(3);
  await Promise.all([
    batcher.submit([1, 2]),
    batcher.submit([3, 4]),
    batcher.submit([5]),
    batcher.submit([6, 7, 8, 9]),
  ]);
  expect(calls).toEqual([
    [1, 2],
    [3, 4, 5],
    [6, 7, 8, 9],
  ]);
});

it('a failed call rejects every caller in it, and no caller is answered', async () => {
  const { batcher } = recordingBatcher(100, true);
  const results = await Promise.allSettled([batcher.submit([1]), batcher.submit([2])]);
  expect(results.map((result) => result.status)).toEqual(['rejected', 'rejected']);
});

it('an empty submit answers at once without a call, and drain waits for calls under way', async () => {
  const { batcher, calls } = recordingBatcher(100);
  expect(await batcher.submit([])).toEqual([]);
  let done = false;
  void batcher.submit([1]).then(() => (done = true));
  await batcher.drain();
  expect(done).toBe(true);
  expect(calls).toEqual([[1]]);
});
