// The in-process lock behind a run's read-modify-write and an export's traces (src/ingest/run-lock.ts).
import { KeyedLock } from '../../src/ingest/run-lock';

const tick = () => new Promise((resolve) => setImmediate(resolve));

/** Work that records its start and end in `events`, and ends when `release` is called. */
function gatedWork(name: string, events: string[]) {
  let release!: () => void;
  const gate = new Promise<void>((resolve) => (release = resolve));
  return {
    release,
    work: async () => {
      events.push(`${name} start`);
      await gate;
      events.push(`${name} end`);
      return name;
    },
  };
}

describe('KeyedLock', () => {
  it('runs the holders of one key one after the other, in the order they came', async () => {
    const lock = new KeyedLock();
    const events: string[] = [];
    const [a, b] = [gatedWork('a', events), gatedWork('b', events)];
    const done = [lock.run('k', a.work), lock.run('k', b.work)];
    await tick();
    expect(events).toEqual(['a start']);
    a.release();
    b.release();
    await expect(Promise.all(done)).resolves.toEqual(['a', 'b']);
    expect(events).toEqual(['a start', 'a end', 'b start', 'b end']);
  });

  it('lets holders of other keys run at once', async () => {
    const lock = new KeyedLock();
    const events: string[] = [];
    const [a, b] = [gatedWork('a', events), gatedWork('b', events)];
    const done = [lock.runAll(['x', 'y'], a.work), lock.runAll(['z'], b.work)];
    await tick();
    expect(events).toEqual(['a start', 'b start']);
    a.release();
    b.release();
    await Promise.all(done);
  });

  it('makes a holder of several keys wait for the holders of each, and later holders wait for it', async () => {
    const lock = new KeyedLock();
    const events: string[] = [];
    const [a, b, c, d] = ['a', 'b', 'c', 'd'].map((name) => gatedWork(name, events));
    const done = [
      lock.run('x', a.work),
      lock.run('y', b.work),
      lock.runAll(['y', 'x', 'x'], c.work),
      lock.run('y', d.work),
    ];
    await tick();
    expect(events).toEqual(['a start', 'b start']);
    a.release();
    await tick();
    expect(events).toEqual(['a start', 'b start', 'a end']);
    b.release();
    await tick();
    expect(events).toEqual(['a start', 'b start', 'a end', 'b end', 'c start']);
    c.release();
    d.release();
    await Promise.all(done);
    expect(events.slice(-3)).toEqual(['c end', 'd start', 'd end']);
  });

  it('never deadlocks holders of overlapping sets taken in opposite orders', async () => {
    const lock = new KeyedLock();
    const order: string[] = [];
    const hold = (name: string, keys: string[]) =>
      lock.runAll(keys, async () => {
        order.push(name);
        await tick();
      });
    await Promise.all([hold('first', ['a', 'b']), hold('second', ['b', 'a']), hold('third', ['a'])]);
    expect(order).toEqual(['first', 'second', 'third']);
  });

  it('passes a key on when its holder fails, and gives that holder its failure', async () => {
    const lock = new KeyedLock();
    const failed = lock.runAll(['k', 'l'], () => Promise.reject(new Error('store down')));
    const next = lock.run('l', async () => 'next');
    await expect(failed).rejects.toThrow('store down');
    await expect(next).resolves.toBe('next');
  });
});
