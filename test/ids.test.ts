// UUIDv7 ids: the format, uniqueness across blocks of random bytes, and order by creation time.
import { uuidv7 } from '../src/ids';

const UUID_V7 = /^[0-9a-f]{8}-[0-9a-f]{4}-7[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/;

it('is a version 7, RFC 4122 variant UUID carrying its millisecond in the first 48 bits', () => {
  const at = Date.UTC(2026, 10, 21, 8, 0, 0, 123);
  const id = uuidv7(at);
  expect(id).toMatch(UUID_V7);
  expect(parseInt(id.replace(/-/g, '').slice(0, 12), 16)).toBe(at);
});

it('draws fresh random bytes for every id, across several blocks', () => {
  const at = Date.now();
  const ids = Array.from({ length: 1000 }, () => uuidv7(at));
  expect(new Set(ids).size).toBe(1000);
  for (const id of ids) expect(id).toMatch(UUID_V7);
});

it('sorts by creation time', () => {
  const ids = [3, 1, 2].map((offset) => uuidv7(1_700_000_000_000 + offset));
  expect([...ids].sort()).toEqual([ids[1], ids[2], ids[0]]);
});
