// A trend in a table cell: a small line of a measure's buckets, gaps where a bucket has no value.
const WIDTH = 80;
const HEIGHT = 20;

export function Sparkline({ values, label }: { values: (number | null)[]; label: string }) {
  const known = values.filter((value): value is number => value !== null);
  if (known.length < 2) return null;
  const [low, high] = [Math.min(...known), Math.max(...known)];
  const x = (i: number) => (i / (values.length - 1)) * WIDTH;
  const y = (value: number) => HEIGHT - 2 - (high === low ? 0.5 : (value - low) / (high - low)) * (HEIGHT - 4);
  // One path, with a move (not a line) after each gap.
  let path = '';
  values.forEach((value, i) => {
    if (value === null) return;
    path += `${path && values[i - 1] !== null ? 'L' : 'M'}${x(i).toFixed(1)},${y(value).toFixed(1)}`;
  });
  return (
    <svg
      class="sparkline"
      width={WIDTH}
      height={HEIGHT}
      viewBox={`0 0 ${WIDTH} ${HEIGHT}`}
      role="img"
      aria-label={label}
    >
      <path d={path} />
    </svg>
  );
}
