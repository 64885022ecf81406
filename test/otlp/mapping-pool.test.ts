// The pool that decodes and maps OTLP exports in worker threads: answers, errors as the HTTP errors they are, and a
// worker that dies failing only what it held (retryable) before it is replaced; one left with a big heap is ended.
import pino from 'pino';
import { AppError } from '../../src/errors';
import { SPANS_PER_PART, type MappedExport } from '../../src/otlp/mapping';
import { MappingPool } from '../../src/otlp/mapping-pool';

const log = pino({ level: 'silent' });
const json = (value: unknown) => Buffer.from(JSON.stringify(value));
const chatSpan = {
  traceId: '5b8efff798038103d269b633813fc60c',
  spanId: 'eee19b7ec3c1b174',
  name: 'chat',
  startTimeUnixNano: String(BigInt(Date.now() - 1000) * 1_000_000n),
  endTimeUnixNano: String(BigInt(Date.now()) * 1_000_000n),
  attributes: [{ key: 'gen_ai.operation.name', value: { stringValue: 'chat' } }],
};
const exportOf = (...spans: unknown[]) => json({ resourceSpans: [{ scopeSpans: [{ spans }] }] });
/** The traces of a mapped export, its parts taken in order. */
const tracesOf = (mapped: MappedExport) => [...mapped.parts].flat();

describe.each([[0], [1], [2]])('with %i workers', (workers) => {
  let pool: MappingPool;
  beforeAll(() => {
    pool = new MappingPool(workers, log);
  });
  afterAll(() => pool.close());

  it('maps an export, its spans by trace, and counts refusals', async () => {
    const mapped = await pool.map(exportOf(chatSpan, { ...chatSpan, spanId: 'zz' }), 'application/json', Date.now());
    expect(mapped.rejections).toHaveLength(1);
    const traces = tracesOf(mapped);
    expect(traces).toMatchObject([
      { traceId: chatSpan.traceId, genAi: true, spans: [{ spanId: chatSpan.spanId, role: 'step' }] },
    ]);
    // A Date still (a worker's serialized part is decoded in the main realm; jest's tests run in their own, hence no
    // instanceof).
    expect(Object.prototype.toString.call(traces[0].spans[0].step!.started_at)).toBe('[object Date]');
  });

  it('hands a big export over in parts of whole traces, in the order they came', async () => {
    const traceIds = Array.from({ length: 2 * SPANS_PER_PART + 2 }, (_, i) => (i + 1).toString(16).padStart(32, '0'));
    // The first trace has two spans, the others one: the first part holds one trace fewer than it has spans.
    const spans = traceIds.map((traceId, i) => ({
      ...chatSpan,
      traceId,
      spanId: (i + 1).toString(16).padStart(16, '0'),
    }));
    const mapped = await pool.map(
      exportOf({ ...chatSpan, traceId: traceIds[0], spanId: 'c'.repeat(16) }, ...spans),
      'application/json',
      Date.now(),
    );
    const parts = [...mapped.parts];
    expect(parts.map((part) => part.reduce((sum, trace) => sum + trace.spans.length, 0))).toEqual([
      SPANS_PER_PART,
      SPANS_PER_PART,
      3,
    ]);
    expect(parts.flat().map((trace) => trace.traceId)).toEqual(traceIds);
    expect(parts[0][0].spans.map((span) => span.spanId)).toEqual(['c'.repeat(16), spans[0].spanId]);
  });

  it('a body that does not decode is the 400 it is answered with', async () => {
    await expect(pool.map(Buffer.from('{"resourceSpans": ['), 'application/json', Date.now())).rejects.toMatchObject({
      status: 400,
      code: 'malformed_json',
    });
    await expect(pool.map(json({ resourceSpans: 'many' }), 'application/json', Date.now())).rejects.toMatchObject({
      status: 400,
      code: 'validation_failed',
    });
  });
});

it('a dying worker fails its export with a retryable 503; exports queued behind go to its replacement', async () => {
  const pool = new MappingPool(1, log);
  try {
    await pool.map(exportOf(chatSpan), 'application/json', Date.now());
    // An export that takes the worker a while (tens of thousands of spans), so that it dies on it.
    const large = exportOf(
      ...Array.from({ length: 50_000 }, (_, i) => ({ ...chatSpan, spanId: i.toString(16).padStart(16, '1') })),
    );
    const current = pool.map(large, 'application/json', Date.now());
    const queued = pool.map(exportOf(chatSpan), 'application/json', Date.now());
    await (pool as unknown as { slots: { worker: { terminate(): Promise<number> } }[] }).slots[0].worker.terminate();
    const error = await current.then(
      () => undefined,
      (caught: unknown) => caught,
    );
    expect(error).toBeInstanceOf(AppError);
    expect(error).toMatchObject({ status: 503, headers: { 'Retry-After': '1' } });
    expect(tracesOf(await queued)).toHaveLength(1);
    expect(tracesOf(await pool.map(exportOf(chatSpan), 'application/json', Date.now()))).toHaveLength(1);
  } finally {
    await pool.close();
  }
});

it('once closed, it answers 503 and starts no worker', async () => {
  const pool = new MappingPool(1, log);
  await pool.map(exportOf(chatSpan), 'application/json', Date.now());
  await pool.close();
  await expect(pool.map(exportOf(chatSpan), 'application/json', Date.now())).rejects.toMatchObject({ status: 503 });
  expect((pool as unknown as { slots: unknown[] }).slots).toEqual([undefined]);
});

it('retires a worker idle past its time with its heap past the limit; the next export starts another', async () => {
  const slotsOf = (pool: MappingPool) => (pool as unknown as { slots: unknown[] }).slots;
  const idleMs = 50;
  const afterIdle = () => new Promise((resolve) => setTimeout(resolve, 4 * idleMs));
  // The default limit, which a small export's heap stays under; and a limit of one byte, which every heap is past.
  const small = new MappingPool(1, log, undefined, { heapBytes: 64 * 1024 * 1024, idleMs });
  const retiring = new MappingPool(1, log, undefined, { heapBytes: 1, idleMs });
  try {
    expect(tracesOf(await small.map(exportOf(chatSpan), 'application/json', Date.now()))).toHaveLength(1);
    expect(tracesOf(await retiring.map(exportOf(chatSpan), 'application/json', Date.now()))).toHaveLength(1);
    // Not at once: a stream whose exports come closer than idleMs keeps its worker.
    expect(slotsOf(retiring)[0]).toBeDefined();
    await afterIdle();
    expect(slotsOf(small)[0]).toBeDefined();
    expect(slotsOf(retiring)).toEqual([undefined]);
    expect(tracesOf(await retiring.map(exportOf(chatSpan), 'application/json', Date.now()))).toHaveLength(1);
    expect(slotsOf(retiring)[0]).toBeDefined();
  } finally {
    await Promise.all([small.close(), retiring.close()]);
  }
});
