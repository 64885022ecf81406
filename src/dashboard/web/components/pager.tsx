// The pager under a list read a page at a time: where the page is among all that match, and newer or older pages.
import type { ComponentChildren } from 'preact';
import * as f from '../format';

export function Pager({
  offset,
  shown,
  total,
  pageSize,
  noun,
  move,
  children,
}: {
  offset: number;
  /** How many rows the page shows. */
  shown: number;
  total: number;
  pageSize: number;
  /** What the rows are, plural: `runs`, `sessions`. */
  noun: string;
  move: (offset: number) => void;
  /** What goes before the position: a note on the page's order, say. */
  children?: ComponentChildren;
}) {
  return (
    <div class="pager">
      {children}
      <span class="muted">
        {shown === 0
          ? `${f.count(total)} ${noun}`
          : `${f.count(offset + 1)}–${f.count(offset + shown)} of ${f.count(total)} ${noun}`}
      </span>
      <button type="button" disabled={offset === 0} onClick={() => move(Math.max(0, offset - pageSize))}>
        Newer
      </button>
      <button type="button" disabled={offset + shown >= total} onClick={() => move(offset + pageSize)}>
        Older
      </button>
    </div>
  );
}
