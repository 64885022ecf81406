// The split of a report window into whole hours (read from the rollups) and the rest (read raw).
import { reportShape, wholeHours } from '../../src/reports/rollups';

const at = (text: string) => new Date(text);

describe('wholeHours', () => {
  it.each([
    [
      'a window on whole hours is all whole hours',
      '2026-11-20T10:00:00Z',
      '2026-11-20T13:00:00Z',
      '2026-11-20T10:00:00Z',
      '2026-11-20T13:00:00Z',
    ],
    [
      'partial hours at both edges are left out',
      '2026-11-20T10:00:00.001Z',
      '2026-11-20T12:59:59.999Z',
      '2026-11-20T11:00:00Z',
      '2026-11-20T12:00:00Z',
    ],
    [
      'exactly one hour',
      '2026-11-20T10:00:00Z',
      '2026-11-20T11:00:00Z',
      '2026-11-20T10:00:00Z',
      '2026-11-20T11:00:00Z',
    ],
    [
      'an hour boundary inside, no whole hour: empty, at the end',
      '2026-11-20T10:30:00Z',
      '2026-11-20T11:30:00Z',
      '2026-11-20T11:30:00Z',
      '2026-11-20T11:30:00Z',
    ],
    [
      'within one hour: empty, at the end',
      '2026-11-20T10:10:00Z',
      '2026-11-20T10:20:00Z',
      '2026-11-20T10:20:00Z',
      '2026-11-20T10:20:00Z',
    ],
    ['before 1970 too', '1969-12-31T21:30:00Z', '1969-12-31T23:59:00Z', '1969-12-31T22:00:00Z', '1969-12-31T23:00:00Z'],
  ])('%s', (_label, from, to, hoursFrom, hoursTo) => {
    expect(wholeHours({ from: at(from), to: at(to) })).toEqual({ from: at(hoursFrom), to: at(hoursTo) });
  });
});

describe('reportShape', () => {
  const window = (from: string, to: string) => ({ from: at(from), to: at(to) });
  it('reads rollups once the two windows hold a day of whole hours, else one raw pass', () => {
    expect(
      reportShape(
        window('2026-11-19T12:00:00Z', '2026-11-20T00:00:00Z'),
        window('2026-11-20T00:00:00Z', '2026-11-20T12:00:00Z'),
      ),
    ).toBe('rollups');
    expect(
      reportShape(
        window('2026-11-19T12:00:01Z', '2026-11-20T00:00:00Z'),
        window('2026-11-20T00:00:00Z', '2026-11-20T12:00:00Z'),
      ),
    ).toBe('raw');
    expect(
      reportShape(
        window('2026-11-20T09:55:00Z', '2026-11-20T10:00:00Z'),
        window('2026-11-20T10:00:00Z', '2026-11-20T10:05:00Z'),
      ),
    ).toBe('raw');
  });
});
