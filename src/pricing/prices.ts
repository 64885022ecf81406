// The model price table (contract §4): what a model's tokens cost, for llm steps that report tokens but no cost.
// The table ships with the service (model-prices.json, each entry with its source and date); PRICE_TABLE_FILE adds
// entries or overrides them by model name.
import fs from 'node:fs';
import { z } from 'zod';
import shipped from './model-prices.json';

const perMillion = z.number().min(0);

const priceEntry = z.strictObject({
  model: z.string().trim().min(1).toLowerCase(),
  provider: z.string().optional(),
  input: perMillion,
  output: perMillion,
  /** Input tokens read from the provider's prompt cache; priced as input when the provider has no such price. */
  cached_input: perMillion.optional(),
  source: z.string().optional(),
  date: z.string().optional(),
  note: z.string().optional(),
});
const priceFile = z.strictObject({ unit: z.string().optional(), models: z.array(priceEntry) });
type PriceEntry = z.infer<typeof priceEntry>;

/** The tokens of one model call. Cached input tokens are part of the input tokens, as providers count them. */
export interface TokenUsage {
  inputTokens: number;
  outputTokens: number;
  cachedInputTokens?: number;
}

// A name as providers and SDKs spell it (`openai/gpt-4o-2024-08-06`, `us.anthropic.claude-3-5-sonnet-20241022-v2:0`,
// `models/gemini-2.5-pro`, `claude-3-5-sonnet@20241022`) to the table's (`gpt-4o`, `claude-3-5-sonnet`, …):
// without a path, a Bedrock region and vendor, a version tag, a date or `-latest`.
const NAME_DECORATIONS = [
  /^.*\//,
  /^(?:(?:us|eu|apac|global)\.)?(?:anthropic|openai|meta|mistral|cohere|amazon|google|deepseek)\./,
  /-v\d+(?::\d+)?$/,
  /:.*$/,
  /[-@](?:\d{4}-\d{2}-\d{2}|\d{8}|\d{4})$/,
  /-latest$/,
];

export function canonicalModelName(name: string): string {
  let canonical = name.trim().toLowerCase();
  for (const decoration of NAME_DECORATIONS) canonical = canonical.replace(decoration, '');
  return canonical;
}

const MAX_MEMOISED_NAMES = 10_000;

export interface PriceTable {
  /** The cost in US dollars of a call to `model`; 0 for a model the table does not know. */
  costOf(model: string, usage: TokenUsage): number;
}

/** The shipped table, extended or overridden by the entries of `overridesFile` (same format) when given. */
export function loadPriceTable(overridesFile?: string): PriceTable {
  const entries = new Map<string, PriceEntry>();
  const add = (file: unknown, where: string) => {
    const parsed = priceFile.safeParse(file);
    if (!parsed.success)
      throw new Error(`${where}: ${parsed.error.issues[0].path.join('.')}: ${parsed.error.issues[0].message}`);
    for (const entry of parsed.data.models) entries.set(canonicalModelName(entry.model), entry);
  };
  add(shipped, 'model-prices.json');
  if (overridesFile) add(JSON.parse(fs.readFileSync(overridesFile, 'utf8')), overridesFile);
  // Longest names first: `gpt-4o-mini-…` is priced as gpt-4o-mini, not as gpt-4o.
  const names = [...entries.keys()].sort((a, b) => b.length - a.length);
  // Model names as sent, matched once each; clients send any text, so the memo is bounded.
  const matches = new Map<string, PriceEntry | undefined>();

  function entryFor(model: string): PriceEntry | undefined {
    if (matches.has(model)) return matches.get(model);
    const canonical = canonicalModelName(model);
    const name = entries.has(canonical) ? canonical : names.find((known) => canonical.startsWith(`${known}-`));
    const entry = name === undefined ? undefined : entries.get(name);
    if (matches.size < MAX_MEMOISED_NAMES) matches.set(model, entry);
    return entry;
  }

  return {
    costOf(model, { inputTokens, outputTokens, cachedInputTokens = 0 }) {
      const entry = entryFor(model);
      if (!entry) return 0;
      const cached = Math.min(cachedInputTokens, inputTokens);
      const dollars =
        (inputTokens - cached) * entry.input +
        cached * (entry.cached_input ?? entry.input) +
        outputTokens * entry.output;
      return dollars / 1_000_000;
    },
  };
}
