// The dashboard's tables: columns that say their header and how a row's cell reads, and headers that sort.
import type { ComponentChildren } from 'preact';
import type { Loaded } from '../hooks';
import { Show } from './ui';

export interface Column<Row> {
  /** The header; it also names the column, so it is unique in its table. */
  label: string;
  cell: (row: Row) => ComponentChildren;
  /** What the column sorts by, in a table that sorts. */
  value?: (row: Row) => string | number;
}

/** A table's sort order: the label of the column it sorts by, and the direction. */
export interface Sort {
  label: string;
  descending: boolean;
}

/** Sorting is stable: rows of equal value keep the order the API gave them. */
function sortRows<Row>(rows: Row[], value: (row: Row) => string | number, descending: boolean): Row[] {
  return [...rows].sort((a, b) => {
    const order = value(a) < value(b) ? -1 : value(a) > value(b) ? 1 : 0;
    return descending ? -order : order;
  });
}

/** A header that sorts by its column: a second click reverses; a first sorts names A→Z and numbers largest first. */
function SortingHeader<Row>({
  column,
  firstRow,
  sort,
  onSort,
}: {
  column: Column<Row>;
  firstRow: Row | undefined;
  sort: Sort;
  onSort: (sort: Sort) => void;
}) {
  const sorted = sort.label === column.label;
  const isName = firstRow !== undefined && typeof column.value!(firstRow) === 'string';
  return (
    <th aria-sort={sorted ? (sort.descending ? 'descending' : 'ascending') : 'none'}>
      <button
        type="button"
        class="link"
        onClick={() => onSort({ label: column.label, descending: sorted ? !sort.descending : !isName })}
      >
        {column.label}
        {sorted ? (sort.descending ? ' ↓' : ' ↑') : ''}
      </button>
    </th>
  );
}

interface TableProps<Row> {
  columns: Column<Row>[];
  rows: Row[];
  rowKey: (row: Row) => string;
  rowClass?: (row: Row) => string;
  /** What shows instead of a table without rows; without it, such a table shows its headers alone. */
  empty?: ComponentChildren;
  /** A class besides `table`, for a table that looks different. */
  class?: string;
  /** The sort order, kept by the page so that it outlives a reload of the rows; with it, headers sort. */
  sort?: Sort;
  onSort?: (sort: Sort) => void;
}

export function Table<Row>({ columns, rows, rowKey, rowClass, empty, class: variant, sort, onSort }: TableProps<Row>) {
  if (rows.length === 0 && empty !== undefined) return <p class="muted">{empty}</p>;
  const sortValue = sort && columns.find((column) => column.label === sort.label)?.value;
  const shown = sort && sortValue ? sortRows(rows, sortValue, sort.descending) : rows;
  return (
    <table class={variant ? `table ${variant}` : 'table'}>
      <thead>
        <tr>
          {columns.map((column) =>
            sort && onSort && column.value ? (
              <SortingHeader key={column.label} column={column} firstRow={rows[0]} sort={sort} onSort={onSort} />
            ) : (
              <th key={column.label}>{column.label}</th>
            ),
          )}
        </tr>
      </thead>
      <tbody>
        {shown.map((row) => (
          <tr key={rowKey(row)} class={rowClass?.(row)}>
            {columns.map((column) => (
              // The label goes with each cell: at phone width a row reads as a card of labelled values.
              <td key={column.label} data-label={column.label}>
                {column.cell(row)}
              </td>
            ))}
          </tr>
        ))}
      </tbody>
    </table>
  );
}

/** The table of rows being loaded: the loading state or the error until they are there. */
export function LoadedTable<Row>({ loaded, ...table }: { loaded: Loaded<Row[]> } & Omit<TableProps<Row>, 'rows'>) {
  return <Show loaded={loaded}>{(rows) => <Table rows={rows} {...table} />}</Show>;
}
