// A project's API keys (a new key is shown once) and an organization's members.
import { useState } from 'preact/hooks';
import type { PageProps } from '../main';
import { del, get, patch, post } from '../api';
import { ConfirmButton, InlineForm, Options, SelectField, TextField } from '../components/form';
import { LoadedTable } from '../components/table';
import * as f from '../format';
import { useAction, useLoad } from '../hooks';
import type { ApiKey, Member, NewApiKey } from '../types';

export function KeysPage({ params }: PageProps) {
  const { orgID, projectID } = params;
  const path = `/admin/orgs/${orgID}/projects/${projectID}/api-keys`;
  const keys = useLoad(() => get<ApiKey[]>(path), [path]);
  const [name, setName] = useState('');
  const [created, setCreated] = useState<NewApiKey>();
  const [error, act] = useAction(keys.reload);
  const create = () =>
    act(async () => {
      setCreated(await post<NewApiKey>(path, name ? { name } : {}));
      setName('');
    });
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
      <InlineForm submit="Create key" onSubmit={create} error={error}>
        <TextField label="Key name" maxLength={100} value={name} placeholder="production" onValue={setName} />
      </InlineForm>
      <LoadedTable
        loaded={keys}
        rowKey={(key) => key.id}
        empty="No keys yet."
        columns={[
          { label: 'Name', cell: (key) => key.name },
          { label: 'Key', cell: (key) => <code>{key.prefix}…</code> },
          { label: 'Created', cell: (key) => f.dateTime(key.created_at) },
          { label: 'Last used', cell: (key) => f.dateTime(key.last_used_at) },
          {
            label: '',
            cell: (key) => (
              <ConfirmButton
                question={`Revoke ${key.name}? Agents using it stop reporting.`}
                onConfirm={() => act(() => del(`${path}/${key.id}`))}
              >
                Revoke
              </ConfirmButton>
            ),
          },
        ]}
      />
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
  const [error, act] = useAction(members.reload);
  const add = () =>
    act(async () => {
      await post(path, { email, role });
      setEmail('');
    });
  return (
    <>
      <h1>Members</h1>
      <LoadedTable
        loaded={members}
        rowKey={(member) => member.user_id}
        columns={[
          { label: 'Name', cell: (member) => member.name },
          { label: 'E-mail', cell: (member) => member.email },
          {
            label: 'Role',
            cell: (member) => (
              <select
                aria-label={`Role of ${member.email}`}
                value={member.role}
                onChange={(e) => act(() => patch(`${path}/${member.user_id}`, { role: e.currentTarget.value }))}
              >
                <Options choices={ROLES} />
              </select>
            ),
          },
          { label: 'Since', cell: (member) => f.dateTime(member.created_at) },
          {
            label: '',
            cell: (member) => (
              <ConfirmButton
                question={`Remove ${member.email}?`}
                onConfirm={() => act(() => del(`${path}/${member.user_id}`))}
              >
                Remove
              </ConfirmButton>
            ),
          },
        ]}
      />
      <InlineForm submit="Add member" onSubmit={add} error={error}>
        <TextField label="Add a registered user by e-mail" type="email" required value={email} onValue={setEmail} />
        <SelectField label="Role" value={role} choices={ROLES} onValue={setRole} />
      </InlineForm>
    </>
  );
}
