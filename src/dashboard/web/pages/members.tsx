// An organization's members: add a registered user, change a role, remove one. The last admin can be neither
// demoted nor removed (the API refuses it), so the page offers neither.
import { useState } from 'preact/hooks';
import type { PageProps } from '../main';
import { del, get, patch, post } from '../api';
import { ConfirmButton, InlineForm, Options, SelectField, TextField } from '../components/form';
import { LoadedTable } from '../components/table';
import * as f from '../format';
import { useAction, useLoad } from '../hooks';
import type { Member } from '../types';

const ROLES: Member['role'][] = ['admin', 'member', 'viewer'];

export function MembersPage({ params, profile }: PageProps) {
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
  const list = members.data ?? [];
  const admins = list.filter((member) => member.role === 'admin').length;
  const me = list.find((member) => member.user_id === profile.user.id);
  const isAdmin = me?.role === 'admin';
  /** The only admin: the organization must keep one, so it cannot lose this one. */
  const onlyAdmin = (member: Member) => member.role === 'admin' && admins === 1;
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
            cell: (member) =>
              isAdmin && !onlyAdmin(member) ? (
                <select
                  aria-label={`Role of ${member.email}`}
                  value={member.role}
                  onChange={(e) => act(() => patch(`${path}/${member.user_id}`, { role: e.currentTarget.value }))}
                >
                  <Options choices={ROLES} />
                </select>
              ) : (
                <span title={onlyAdmin(member) ? 'the only admin: an organization keeps one' : undefined}>
                  {member.role}
                  {onlyAdmin(member) && <span class="muted"> (only admin)</span>}
                </span>
              ),
          },
          { label: 'Since (UTC)', cell: (member) => f.dateTime(member.created_at) },
          {
            label: '',
            cell: (member) =>
              isAdmin &&
              !onlyAdmin(member) && (
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
      {isAdmin && (
        <InlineForm submit="Add member" onSubmit={add} error={error}>
          <TextField label="Add a registered user by e-mail" type="email" required value={email} onValue={setEmail} />
          <SelectField label="Role" value={role} choices={ROLES} onValue={setRole} />
        </InlineForm>
      )}
      {!isAdmin && error && <p class="error">{error.message}</p>}
    </>
  );
}
