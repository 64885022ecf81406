// A project's API keys (a new key is shown once, with a button to copy it) and its settings: its name, how long its
// runs are kept, and deleting it.
import { useState } from 'preact/hooks';
import type { PageProps } from '../main';
import { del, get, patch, post } from '../api';
import { ConfirmButton, InlineForm, TextField } from '../components/form';
import { LoadedTable } from '../components/table';
import { CopyButton, ErrorNote, Show } from '../components/ui';
import * as f from '../format';
import { projectsChanged, useAction, useLoad } from '../hooks';
import { navigate } from '../router';
import type { ApiKey, Member, NewApiKey, Project } from '../types';

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
          <CopyButton text={created.key} label="Copy key" />
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
          { label: 'Created (UTC)', cell: (key) => f.dateTime(key.created_at) },
          { label: 'Last used (UTC)', cell: (key) => f.dateTime(key.last_used_at) },
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

/** The signed-in user's role in an organization, from its members. */
export async function roleIn(orgID: string, userID: string): Promise<Member['role'] | undefined> {
  const members = await get<Member[]>(`/admin/orgs/${orgID}/members`);
  return members.find((member) => member.user_id === userID)?.role;
}

function ProjectSettings({ orgID, project, admin }: { orgID: string; project: Project; admin: boolean }) {
  const path = `/admin/orgs/${orgID}/projects/${project.id}`;
  const [name, setName] = useState(project.name);
  const [days, setDays] = useState(String(project.retention_days));
  const [saved, setSaved] = useState<string>();
  const [error, act] = useAction();
  const save = (body: Partial<Pick<Project, 'name' | 'retention_days'>>, what: string) =>
    act(async () => {
      setSaved(undefined);
      await patch<Project>(path, body);
      projectsChanged();
      setSaved(what);
    });
  const remove = () =>
    act(async () => {
      await del(path);
      projectsChanged();
      navigate(`/orgs/${orgID}/projects`);
    });
  return (
    <>
      {!admin && <p class="muted">Only an admin of the organization can change a project.</p>}
      <h2>Name</h2>
      <InlineForm submit="Rename" onSubmit={() => save({ name }, 'The project is renamed.')} error={undefined}>
        <TextField label="Project name" required maxLength={100} disabled={!admin} value={name} onValue={setName} />
      </InlineForm>
      <h2>Retention</h2>
      <p class="muted">
        Runs and their steps are kept this many days after they start, then deleted (within a day); older runs are never
        listed or counted.
      </p>
      <InlineForm
        submit="Save retention"
        onSubmit={() => save({ retention_days: Number(days) }, `Runs are kept ${days} days.`)}
        error={undefined}
      >
        <TextField
          label="Keep runs for (days, 1–3650)"
          type="number"
          required
          min={1}
          max={3650}
          disabled={!admin}
          value={days}
          onValue={setDays}
        />
      </InlineForm>
      {saved && (
        <p class="saved" role="status">
          {saved}
        </p>
      )}
      {error && <ErrorNote error={error} />}
      <h2>Delete</h2>
      <div class="panel danger-zone">
        <p>Deleting the project deletes its runs, steps, keys and alert rules. It cannot be undone.</p>
        {admin && (
          <ConfirmButton question={`Delete ${project.name} and all its runs?`} onConfirm={remove}>
            Delete project
          </ConfirmButton>
        )}
      </div>
    </>
  );
}

export function ProjectSettingsPage({ params, profile }: PageProps) {
  const { orgID, projectID } = params;
  const loaded = useLoad(async () => {
    const [projects, role] = await Promise.all([
      get<Project[]>(`/admin/orgs/${orgID}/projects`),
      roleIn(orgID, profile.user.id),
    ]);
    const project = projects.find((candidate) => candidate.id === projectID);
    if (!project) throw new Error('This project does not exist any more.');
    return { project, admin: role === 'admin' };
  }, [orgID, projectID]);
  return (
    <>
      <h1>Project settings</h1>
      <Show loaded={loaded}>
        {({ project, admin }) => <ProjectSettings key={project.id} orgID={orgID} project={project} admin={admin} />}
      </Show>
    </>
  );
}
