// A time-series chart on uPlot: time on x, one or more series sharing a y axis.
import { useEffect, useRef } from 'preact/hooks';
import uPlot from 'uplot';
import 'uplot/dist/uPlot.min.css';

export interface Series {
  label: string;
  /** null: no value in that bucket (drawn as a gap). */
  values: (number | null)[];
  color: string;
}

const HEIGHT = 180;

/**
 * The value axis as wide as its longest label ("1 min 30 s" needs more room than "0.5%"), as uPlot's own
 * axis-autosize example measures it; at least the 64 px every chart had, so that charts side by side line up.
 */
const valueAxisSize: uPlot.Axis.Size = (plot, values, axisIndex, cycle) => {
  const axis = plot.axes[axisIndex];
  if (cycle > 1) return (axis as uPlot.Axis & { _size: number })._size;
  const longest = (values ?? []).reduce((widest, value) => (value.length > widest.length ? value : widest), '');
  plot.ctx.font = axis.font![0] as unknown as string;
  const labelWidth = plot.ctx.measureText(longest).width / devicePixelRatio;
  return Math.max(64, Math.ceil(labelWidth + (axis.ticks?.size ?? 10) + (axis.gap ?? 5) + 4));
};

export function Chart({
  title,
  times,
  series,
  format,
}: {
  title: string;
  times: number[];
  series: Series[];
  format: (value: number) => string;
}) {
  const box = useRef<HTMLDivElement>(null);
  useEffect(() => {
    const element = box.current!;
    const options: uPlot.Options = {
      width: element.clientWidth || 400,
      height: HEIGHT,
      legend: { show: series.length > 1 },
      cursor: { drag: { x: false, y: false } },
      scales: { x: { time: true } },
      // Buckets are UTC-aligned (contract §9): the axis reads in UTC, so that a day bucket starts at 00:00.
      tzDate: (seconds) => uPlot.tzDate(new Date(seconds * 1000), 'Etc/UTC'),
      axes: [
        { stroke: '#6b7280', grid: { stroke: '#eef0f3' } },
        {
          stroke: '#6b7280',
          grid: { stroke: '#eef0f3' },
          size: valueAxisSize,
          values: (_, ticks) => ticks.map(format),
        },
      ],
      series: [
        {},
        ...series.map(({ label, color }) => ({
          label,
          stroke: color,
          width: 2,
          spanGaps: false,
          fill: series.length === 1 ? `${color}22` : undefined,
          value: (_: uPlot, v: number | null) => (v === null ? '—' : format(v)),
        })),
      ],
    };
    const plot = new uPlot(
      options,
      [times.map((t) => t / 1000), ...series.map((s) => s.values)] as uPlot.AlignedData,
      element,
    );
    const resize = new ResizeObserver(() => plot.setSize({ width: element.clientWidth, height: HEIGHT }));
    resize.observe(element);
    return () => {
      resize.disconnect();
      plot.destroy();
    };
  }, [times, series, format]);
  return (
    <figure class="chart">
      <figcaption>
        {title} <span class="muted">(UTC)</span>
      </figcaption>
      <div ref={box} />
    </figure>
  );
}
