// The benchmarks' HTTP client: the service's API over fetch, as a dashboard or an SDK calls it.

export interface CallInit {
  method?: string;
  body?: unknown;
  token?: string;
}

/** Calls answered 503 (a full read lane) and asked again, since the process started. */
let refusals = 0;
export const refusalCount = () => refusals;

/**
 * How many times a call answered 503 is asked again: a full lane clears in seconds, while a read past the service's
 * READ_TIMEOUT_MS is 503 every time (a rare `q` at 100 M runs), and asking it again for ever would stall the bench.
 */
const MAX_RETRIES = 2;

/** One call; a 503 of a full read lane is asked again after its Retry-After, as the dashboard does. */
export async function call(url: string, init: CallInit = {}) {
  for (let retries = 0; ; retries += 1) {
    const answer = await callOnce(url, init);
    if (answer.status !== 503 || retries === MAX_RETRIES) return answer;
    refusals += 1;
    await new Promise((resume) => setTimeout(resume, 1000 * (Number(answer.headers.get('retry-after')) || 1)));
  }
}

async function callOnce(url: string, init: CallInit) {
  const res = await fetch(url, {
    method: init.method ?? 'GET',
    headers: {
      ...(init.body ? { 'content-type': 'application/json' } : {}),
      ...(init.token ? { authorization: `Bearer ${init.token}` } : {}),
    },
    body: init.body ? JSON.stringify(init.body) : undefined,
  });
  const text = await res.text();
  if (!res.ok && res.status !== 503)
    throw new Error(`${init.method ?? 'GET'} ${url}: ${res.status} ${text.slice(0, 300)}`);
  return { status: res.status, body: text ? JSON.parse(text) : undefined, headers: res.headers };
}

/** A new user, their organization and a project named `name`: what a benchmark's data set belongs to. */
export async function registerProject(baseUrl: string, name: string) {
  const email = `bench-${Date.now()}@example.com`;
  const password = 'benchmark-password';
  const auth = (await call(`${baseUrl}/auth/register`, { method: 'POST', body: { email, password } })).body;
  const orgId = auth.organizations[0].id as string;
  const project = (
    await call(`${baseUrl}/admin/orgs/${orgId}/projects`, { method: 'POST', body: { name }, token: auth.token })
  ).body as { id: string };
  return { email, password, orgId, projectId: project.id, token: auth.token as string };
}
