// The pricing capability, assembled: the model price table that prices llm steps (the one shipped, extended or
// overridden by PRICE_TABLE_FILE), read once at start-up.
import type { Config } from '../config';
import { loadPriceTable } from './prices';

export function createPricing({ config }: { config: Pick<Config, 'priceTableFile'> }) {
  return { prices: loadPriceTable(config.priceTableFile) };
}
