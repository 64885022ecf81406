// A project's API keys (a new key is shown once) and an organization's members.
import { useState } from 'preact/hooks';
import type { PageProps } from '../main';
import { del, get, patch, post } from '../api';
import { ErrorNote, Field, Show } from '../components/ui';
import * as f from '../format';
import { useLoad } from '../hooks';
import type { ApiKey, Member, NewApiKey } from '../types';

/** Runs an action and shows its error, if any, under the form. */
function useAction(): [Error | undefined, (action: () => Promise<unknown>) => Promise<void>] {
  const [error, setError] = useState<Error>();
  const run = async (action: () => Promise<unknown>) => {
    setError(undefined);
    await action().catch(setError);
  };
  return [error, run];
}

export function KeysPage({ params }: PageProps) {
  const { orgID, projectID } = params;
  const path = `/admin/orgs/${orgID}/projects/${projectID}/api-keys`;
  const keys = useLoad(() => get<ApiKey[]>(path), [path]);
  const [name, setName] = useState('');
  const [created, setCreated] = useState<NewApiKey>();
  const [error, act] = useAction();
  const create = (event: Event) => {
    event.preventDefault();
    return act(async () => {
      setCreated(await post<NewApiKey>(path, name ? { name } : {}));
      setName('');
      keys.reload();
    });
  };
  return (
    <>
      <h1>API keys</h1>
      <p class="muted">
        Agents report runs with a project API key (<code>Authorization: Bearer …</code>), over the REST API or
        OpenTelemetry.
      </p>
      {created && (
        <div class="panel new-key" role="status">
          <strong>Your new key — copy it now, it is shown only this once:</strong>
          <pre data-testid="new-key">{created.key}</pre>
        </div>
      )}
      <form class="panel inline" onSubmit={create}>
        <Field label="Key name">
          <input
            maxLength={100}
            value={name}
            placeholder="production"
            onInput={(e) => setName(e.currentTarget.value)}
          />
        </Field>
        <button type="submit" class="primary">
          Create key
        </button>
      </form>
      {error && <ErrorNote error={error} />}
      <Show loaded={keys}>
        {(list) =>
          list.length === 0 ? (
            <p class="muted">No keys yet.</p>
          ) : (
            <table class="table">
              <thead>
                <tr>
                  <th>Name</th>
                  <th>Key</th>
                  <th>Created</th>
                  <th>Last used</th>
                  <th />
                </tr>
              </thead>
              <tbody>
                {list.map((key) => (
                  <tr key={key.id}>
                    <td>{key.name}</td>
                    <td>
                      <code>{key.prefix}…</code>
                    </td>
                    <td>{f.dateTime(key.created_at)}</td>
                    <td>{f.dateTime(key.last_used_at)}</td>
                    <td>
                      <button
                        type="button"
                        class="danger"
                        onClick={() =>
                          confirm(`Revoke ${key.name}? Agents using it stop reporting.`) &&
                          act(async () => {
                            await del(`${path}/${key.id}`);
                            keys.reload();
                          })
                        }
                      >
                        Revoke
                      </button>
                    </td>
                  </tr>
                ))}
              </tbody>
            </table>
          )
        }
      </Show>
    </>
  );
}

const ROLES: Member['role'][] = ['admin', 'member', 'viewer'];

export function MembersPage({ params }: PageProps) {
  const { orgID } = params;
  const path = `/admin/orgs/${orgID}/members`;
  const members = useLoad(() => get<Member[]>(path), [path]);
  const [email, setEmail] = useState('');
  const [role, setRole] = useState<Member['role']>('member');
  const [error, act] = useAction();
  const add = (event: Event) => {
    event.preventDefault();
    return act(async () => {
      await post(path, { email, role });
      setEmail('');
      members.reload();
    });
  };
  return (
    <>
      <h1>Members</h1>
      <Show loaded={members}>
        {(list) => (
          <table class="table">
            <thead>
              <tr>
                <th>Name</th>
                <th>E-mail</th>
                <th>Role</th>
                <th>Since</th>
                <th />
              </tr>
            </thead>
            <tbody>
              {list.map((member) => (
                <tr key={member.user_id}>
                  <td>{member.name}</td>
                  <td>{member.email}</td>
                  <td>
                    <select
                      aria-label={`Role of ${member.email}`}
                      value={member.role}
                      onChange={(e) =>
                        act(async () => {
                          await patch(`${path}/${member.user_id}`, { role: e.currentTarget.value });
                          members.reload();
                        })
                      }
                    >
                      {ROLES.map((r) => (
                        <option key={r} value={r}>
                          {r}
                        </option>
                      ))}
                    </select>
                  </td>
                  <td>{f.dateTime(member.created_at)}</td>
                  <td>
                    <button
                      type="button"
                      class="danger"
                      onClick={() =>
                        confirm(`Remove ${member.email}?`) &&
                        act(async () => {
                          await del(`${path}/${member.user_id}`);
                          members.reload();
                        })
                      }
                    >
                      Remove
                    </button>
                  </td>
                </tr>
              ))}
            </tbody>
          </table>
        )}
      </Show>
      <form class="panel inline" onSubmit={add}>
        <Field label="Add a registered user by e-mail">
          <input type="email" required value={email} onInput={(e) => setEmail(e.currentTarget.value)} />
        </Field>
        <Field label="Role">
          <select value={role} onChange={(e) => setRole(e.currentTarget.value as Member['role'])}>
            {ROLES.map((r) => (
              <option key={r} value={r}>
                {r}
              </option>
            ))}
          </select>
        </Field>
        <button type="submit" class="primary">
          Add member
        </button>
      </form>
      {error && <ErrorNote error={error} />}
    </>
  );
}
