// Cutting a list into consecutive chunks by weight: an OTLP export's traces into parts of at most so many spans
// (otlp/mapping.ts), a flush's rows into inserts of at most so many bytes (ingest/flusher.ts).

/**
 * Items in chunks, in order, each chunk's weights summing to at most `max` (an item heavier than that is a chunk
 * alone). A pure function of the items: the same items are always cut the same way.
 */
export function inChunks<T>(items: readonly T[], weightOf: (item: T) => number, max: number): T[][] {
  const chunks: T[][] = [];
  let chunk: T[] = [];
  let weight = 0;
  for (const item of items) {
    const itemWeight = weightOf(item);
    if (chunk.length > 0 && weight + itemWeight > max) {
      chunks.push(chunk);
      [chunk, weight] = [[], 0];
    }
    chunk.push(item);
    weight += itemWeight;
  }
  if (chunk.length > 0) chunks.push(chunk);
  return chunks;
}
