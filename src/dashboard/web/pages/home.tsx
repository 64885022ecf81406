// Where a signed-in user lands: the first project of their first organization, or the way to create one.
import { useEffect, useState } from 'preact/hooks';
import type { PageProps } from '../main';
import { get, post } from '../api';
import { InlineForm, TextField } from '../components/form';
import { ErrorNote, Show } from '../components/ui';
import { projectsChanged, useAction, useLoad } from '../hooks';
import { href, navigate } from '../router';
import type { Project } from '../types';

export function HomePage({ profile }: PageProps) {
  const org = profile.organizations[0];
  const [error, setError] = useState<Error>();
  useEffect(() => {
    if (!org) return;
    get<Project[]>(`/admin/orgs/${org.id}/projects`).then(
      (projects) =>
        navigate(
          projects.length > 0 ? `/orgs/${org.id}/projects/${projects[0].id}/overview` : `/orgs/${org.id}/projects`,
          {},
          true,
        ),
      setError,
    );
  }, [org?.id]);
  if (!org) return <p>You belong to no organization yet: ask an admin to add you, or create one through the API.</p>;
  return error ? <ErrorNote error={error} /> : null;
}

export function ProjectsPage({ params }: PageProps) {
  const { orgID } = params;
  const projects = useLoad(() => get<Project[]>(`/admin/orgs/${orgID}/projects`), [orgID]);
  const [name, setName] = useState('');
  const [error, act] = useAction();
  const create = () =>
    act(async () => {
      const project = await post<Project>(`/admin/orgs/${orgID}/projects`, { name });
      projectsChanged();
      navigate(`/orgs/${orgID}/projects/${project.id}/keys`);
    });
  return (
    <>
      <h1>Projects</h1>
      <Show loaded={projects}>
        {(list) =>
          list.length === 0 ? (
            <p>A project holds one product's agents: its runs, reports and alert rules. Create the first one.</p>
          ) : (
            <ul class="list">
              {list.map((project) => (
                <li key={project.id}>
                  <a href={href(`/orgs/${orgID}/projects/${project.id}/overview`)}>{project.name}</a>
                </li>
              ))}
            </ul>
          )
        }
      </Show>
      <InlineForm submit="Create project" onSubmit={create} error={error}>
        <TextField
          label="New project"
          required
          maxLength={100}
          value={name}
          placeholder="support-bot"
          onValue={setName}
        />
      </InlineForm>
    </>
  );
}
