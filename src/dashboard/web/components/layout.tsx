// The frame of every signed-in page: organization and project switchers, the project's pages, the user.
import type { ComponentChildren } from 'preact';
import { get, post } from '../api';
import { useLoad } from '../hooks';
import { href, navigate, type Location } from '../router';
import type { Profile, Project } from '../types';
import { Options } from './form';

const PROJECT_PAGES = [
  ['overview', 'Overview'],
  ['agents', 'Agents'],
  ['runs', 'Runs'],
  ['alerts', 'Alerts'],
  ['keys', 'API keys'],
] as const;

export function Layout({
  params,
  here,
  profile,
  signedOut,
  children,
}: {
  params: Record<string, string>;
  here: Location;
  profile: Profile;
  signedOut: () => void;
  children: ComponentChildren;
}) {
  const { orgID, projectID } = params;
  const projects = useLoad(
    () => (orgID ? get<Project[]>(`/admin/orgs/${orgID}/projects`) : Promise.resolve([])),
    [orgID],
  );
  const section = here.path.split('/')[5];
  // The window and agent filter follow the user from page to page; page-specific filters do not.
  const kept = {
    window: here.query.get('window'),
    from: here.query.get('from'),
    to: here.query.get('to'),
    agent: here.query.get('agent'),
  };
  const signOut = async () => {
    await post('/auth/logout').catch(() => undefined);
    signedOut();
  };
  return (
    <div class="shell">
      <header class="top">
        <a class="brand" href="#/">
          runwatch
        </a>
        {orgID && (
          <select
            aria-label="Organization"
            value={orgID}
            onChange={(event) => navigate(`/orgs/${event.currentTarget.value}/projects`)}
          >
            <Options choices={profile.organizations.map(({ id, name }) => ({ value: id, label: name }))} />
          </select>
        )}
        {orgID && projects.data && (
          <select
            aria-label="Project"
            value={projectID ?? ''}
            onChange={(event) => {
              const value = event.currentTarget.value;
              navigate(
                value ? `/orgs/${orgID}/projects/${value}/overview` : `/orgs/${orgID}/projects`,
                value ? kept : {},
              );
            }}
          >
            {!projectID && <option value="">Choose a project…</option>}
            <Options choices={projects.data.map(({ id, name }) => ({ value: id, label: name }))} />
            <option value="">Manage projects…</option>
          </select>
        )}
        <span class="spacer" />
        {orgID && <a href={href(`/orgs/${orgID}/members`)}>Members</a>}
        <span class="muted">{profile.user.email}</span>
        <button type="button" class="link" onClick={signOut}>
          Sign out
        </button>
      </header>
      {projectID && (
        <nav class="tabs">
          {PROJECT_PAGES.map(([page, label]) => (
            <a
              key={page}
              class={section === page ? 'active' : ''}
              aria-current={section === page ? 'page' : undefined}
              href={href(`/orgs/${orgID}/projects/${projectID}/${page}`, page === 'keys' ? {} : kept)}
            >
              {label}
            </a>
          ))}
        </nav>
      )}
      <main>{children}</main>
    </div>
  );
}
