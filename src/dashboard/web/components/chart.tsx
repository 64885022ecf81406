// A time-series chart on uPlot: time on x, one or more series sharing a y axis, the values under the cursor in its
// legend, a crosshair shared by the charts of a page, and the page's alert firings marked.
import { useEffect, useRef } from 'preact/hooks';
import uPlot from 'uplot';
import 'uplot/dist/uPlot.min.css';
import * as f from '../format';

export interface Series {
  label: string;
  /** null: no value in that bucket (drawn as a gap). */
  values: (number | null)[];
  color: string;
}

/** An instant marked on every chart of a page: an alert's firing, its resolution, a per-run alert. */
export interface Marker {
  atMs: number;
  kind: 'firing' | 'resolved' | 'triggered';
  label: string;
}

const HEIGHT = 180;
const MARKER_COLORS: Record<Marker['kind'], string> = {
  firing: '#dc2626',
  resolved: '#059669',
  triggered: '#d97706',
};
const DAY_SECONDS = 86_400;

/**
 * The value axis from zero (every chart here is of counts, rates, durations or costs, none below zero) to a little
 * over the highest value, 1 when none is above zero. uPlot's own range pads a flat series by its magnitude both ways:
 * one bucket's 0% loop rate read on an axis to 10,000%, one bucket's 88.9% completion on an axis to 150%.
 */
const valueRange = (_plot: uPlot, min: number | null, max: number | null): uPlot.Range.MinMax =>
  max !== null && max > 0 ? uPlot.rangeNum(Math.min(0, min ?? 0), max, 0.1, true) : [0, 1];

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

/**
 * Time ticks in the dashboard's one date format: `06:00`, with the day under the first tick and each new day's;
 * ticks a day or more apart read as the day alone.
 */
const timeAxisValues = (_plot: uPlot, splits: number[], _axis: number, space: number): string[] => {
  const daily = splits.length > 1 && splits[1] - splits[0] >= DAY_SECONDS && space > 0;
  return splits.map((seconds, i) => {
    const ms = seconds * 1000;
    if (daily) return f.day(ms);
    const newDay = i === 0 || f.day(ms) !== f.day(splits[i - 1] * 1000);
    return newDay ? `${f.time(ms)}\n${f.day(ms)}` : f.time(ms);
  });
};

/**
 * The least room between time ticks, in CSS pixels: a day label (`2026-10-29`) needs more than uPlot's default 50,
 * or the labels of a month's daily ticks run into each other.
 */
const timeAxisSpace = (_plot: uPlot, _axis: number, min: number, max: number) =>
  max - min > 2 * DAY_SECONDS ? 90 : 50;

/**
 * The points to draw where the line cannot show a value: a bucket with values on neither side (an isolated bucket
 * of a sparse hour) would otherwise not show at all. When uPlot shows every point (few buckets), all of them.
 */
function isolatedPoints(plot: uPlot, seriesIndex: number, show: boolean): number[] | null {
  if (show) return null;
  const values = plot.data[seriesIndex];
  const isolated: number[] = [];
  values.forEach((value, i) => {
    if (value !== null && value !== undefined && values[i - 1] == null && values[i + 1] == null) isolated.push(i);
  });
  return isolated;
}

/** Draws the markers as dashed vertical lines across the plot. */
function drawMarkers(markers: readonly Marker[]) {
  return (plot: uPlot) => {
    const { ctx, bbox } = plot;
    ctx.save();
    ctx.lineWidth = Math.max(1, devicePixelRatio);
    ctx.setLineDash([4 * devicePixelRatio, 3 * devicePixelRatio]);
    for (const marker of markers) {
      const x = plot.valToPos(marker.atMs / 1000, 'x', true);
      if (x < bbox.left || x > bbox.left + bbox.width) continue;
      ctx.strokeStyle = MARKER_COLORS[marker.kind];
      ctx.beginPath();
      ctx.moveTo(x, bbox.top);
      ctx.lineTo(x, bbox.top + bbox.height);
      ctx.stroke();
    }
    ctx.restore();
  };
}

export function Chart({
  title,
  times,
  series,
  format,
  markers = [],
  sync = 'page',
  range,
}: {
  title: string;
  times: number[];
  series: Series[];
  format: (value: number) => string;
  markers?: readonly Marker[];
  /** Charts with the same key share their crosshair. */
  sync?: string;
  /** The window shown, in ms: from its start to its end (past the last bucket's start, where the last alerts are). */
  range?: readonly [number, number];
}) {
  const box = useRef<HTMLDivElement>(null);
  useEffect(() => {
    const element = box.current!;
    const options: uPlot.Options = {
      width: element.clientWidth || 400,
      height: HEIGHT,
      // The legend is where the values under the cursor read, on every chart.
      legend: { show: true, live: true },
      cursor: { drag: { x: false, y: false }, sync: { key: sync, setSeries: false } },
      scales: {
        x: range ? { time: true, range: () => [range[0] / 1000, range[1] / 1000] } : { time: true },
        y: { range: valueRange },
      },
      // Buckets are UTC-aligned (contract §9): the axis reads in UTC, so that a day bucket starts at 00:00.
      tzDate: (seconds) => uPlot.tzDate(new Date(seconds * 1000), 'Etc/UTC'),
      axes: [
        { stroke: '#6b7280', grid: { stroke: '#eef0f3' }, values: timeAxisValues, space: timeAxisSpace },
        {
          stroke: '#6b7280',
          grid: { stroke: '#eef0f3' },
          size: valueAxisSize,
          values: (_, ticks) => ticks.map(format),
        },
      ],
      series: [
        {
          label: 'UTC',
          value: (_: uPlot, seconds: number | null) => (seconds === null ? '—' : f.dateTime(seconds * 1000, 'minutes')),
        },
        ...series.map(({ label, color }) => ({
          label,
          stroke: color,
          width: 2,
          spanGaps: false,
          fill: series.length === 1 ? `${color}22` : undefined,
          points: { filter: isolatedPoints, size: 6, fill: color },
          value: (_: uPlot, v: number | null) => (v === null || v === undefined ? '—' : format(v)),
        })),
      ],
      hooks: { draw: [drawMarkers(markers)] },
    };
    const plot = new uPlot(
      options,
      [times.map((t) => t / 1000), ...series.map((s) => s.values)] as uPlot.AlignedData,
      element,
    );
    // The instance, for the browser test (and devtools): where a value is drawn, what the cursor is on.
    (element as HTMLDivElement & { uplot?: uPlot }).uplot = plot;
    const resize = new ResizeObserver(() => plot.setSize({ width: element.clientWidth, height: HEIGHT }));
    resize.observe(element);
    return () => {
      resize.disconnect();
      plot.destroy();
    };
  }, [times, series, format, markers, sync, range]);
  return (
    <figure class="chart" data-markers={markers.length}>
      <figcaption>{title}</figcaption>
      <div ref={box} class="chart-plot" />
    </figure>
  );
}
