// A steady ingest load for the reports benchmark, in a process of its own: whole runs posted to the batch endpoint at a
// fixed rate (runs per second) into one project, until killed. Prints how many runs it has had acknowledged, once a
// second, as JSON lines. Usage: tsx bench/lib/steady-ingest.ts <base url> <API key> <runs per second> <now in ms>
import { batchBody, wholeRunItems } from './whole-runs';

const [baseUrl, key, rateText, nowText] = process.argv.slice(2);
const rate = Number(rateText);
// Ten batches a second: an SDK's background flush, many clients at once.
const TICKS_PER_SECOND = 10;
const perTick = Math.max(1, Math.round(rate / TICKS_PER_SECOND));
const body = batchBody(wholeRunItems(perTick, Number(nowText)));

let acknowledged = 0;
let refused = 0;
async function post() {
  try {
    const res = await fetch(`${baseUrl}/ingest/agent/runs/batch`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', authorization: `Bearer ${key}` },
      body,
    });
    await res.text();
    if (res.ok) acknowledged += perTick;
    else refused += perTick;
  } catch {
    refused += perTick;
  }
}

setInterval(() => void post(), 1000 / TICKS_PER_SECOND);
setInterval(() => process.stdout.write(`${JSON.stringify({ acknowledged, refused })}\n`), 1000);
