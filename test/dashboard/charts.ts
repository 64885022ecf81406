// Reading the dashboard's charts in the browser: where a bucket is drawn, what the cursor is on, what the legend
// says, and the colour of a pixel. Each chart's plot element holds its uPlot instance (components/chart.tsx).
import type { Locator, Page } from 'playwright-core';

/** The chart of a title, as a locator. */
export const chart = (page: Page, title: string) =>
  page.locator('figure.chart', { has: page.locator('figcaption', { hasText: new RegExp(`^${title}$`) }) });

/** What these functions use of a chart's plot element in the browser (tests are compiled without the DOM's types). */
interface PlotElement {
  uplot: {
    data: (number | null)[][];
    cursor: { idx: number | null };
    valToPos(value: number, scale: string, canvas?: boolean): number;
    scales: { y: { min: number; max: number } };
  };
  querySelector(selector: '.u-over'): { getBoundingClientRect(): { left: number; top: number; height: number } };
  querySelector(selector: 'canvas'): {
    getContext(kind: '2d'): { getImageData(x: number, y: number, width: number, height: number): { data: number[] } };
  };
}

/** Where on the page the bucket `index` of the chart's series `series` is drawn (its x, and its value's y). */
export function pointOf(figure: Locator, series: number, index: number): Promise<{ x: number; y: number }> {
  return figure.locator('.chart-plot').evaluate(
    (element, [seriesIndex, dataIndex]) => {
      const plot = (element as unknown as PlotElement).uplot;
      const over = (element as unknown as PlotElement).querySelector('.u-over').getBoundingClientRect();
      const value = plot.data[seriesIndex][dataIndex];
      return {
        x: over.left + plot.valToPos(plot.data[0][dataIndex]!, 'x'),
        y: over.top + (value === null ? over.height / 2 : plot.valToPos(value, 'y')),
      };
    },
    [series, index],
  );
}

/** The chart's data: its times and each series' values. */
export const dataOf = (figure: Locator) =>
  figure.locator('.chart-plot').evaluate((element) => (element as unknown as PlotElement).uplot.data);

/** The value axis' range: [min, max]. */
export const valueAxisOf = (figure: Locator) =>
  figure.locator('.chart-plot').evaluate((element) => {
    const { min, max } = (element as unknown as PlotElement).uplot.scales.y;
    return [min, max];
  });

/** The bucket the chart's cursor is on (null: none). */
export const cursorOf = (figure: Locator) =>
  figure.locator('.chart-plot').evaluate((element) => (element as unknown as PlotElement).uplot.cursor.idx);

/** The legend's value of a series (1: the first after time), as shown. */
export const legendValue = (figure: Locator, series: number) =>
  figure.locator('.u-legend .u-series').nth(series).locator('.u-value').textContent();

/** The colour of the canvas where the bucket `index` of series `series` is drawn: [r, g, b, a]. */
export function pixelOf(figure: Locator, series: number, index: number): Promise<number[]> {
  return figure.locator('.chart-plot').evaluate(
    (element, [seriesIndex, dataIndex]) => {
      const plot = (element as unknown as PlotElement).uplot;
      const canvas = (element as unknown as PlotElement).querySelector('canvas');
      const x = plot.valToPos(plot.data[0][dataIndex]!, 'x', true);
      const y = plot.valToPos(plot.data[seriesIndex][dataIndex]!, 'y', true);
      return [...canvas.getContext('2d').getImageData(Math.round(x), Math.round(y), 1, 1).data];
    },
    [series, index],
  );
}

/** Whether a colour is near another (the canvas blends the edges of what it draws). */
export const near = (rgba: number[], hex: string, tolerance = 40) =>
  rgba[3] > 200 && [1, 3, 5].every((at, i) => Math.abs(parseInt(hex.slice(at, at + 2), 16) - rgba[i]) <= tolerance);

/** Waits until the chart shows at least `buckets` buckets (a new window's data, after the old one's). */
export async function waitForBuckets(figure: Locator, buckets: number, timeoutMs = 10_000): Promise<void> {
  for (const deadline = Date.now() + timeoutMs; Date.now() < deadline;) {
    if ((await figure.count()) > 0 && (await dataOf(figure))[0].length >= buckets) return;
    await new Promise((resolve) => setTimeout(resolve, 100));
  }
  throw new Error(`the chart did not show ${buckets} buckets within ${timeoutMs} ms`);
}
