// The frame of every signed-in page: organization and project switchers, the project's pages, the user.
import type { ComponentChildren } from 'preact';
import { get, post } from '../api';
import { useLoad, useProjectsVersion } from '../hooks';
import { href, navigate, type Location } from '../router';
import type { Profile, Project } from '../types';
import { Options } from './form';

/**
 * The tabs of a project, in order: the path under the project and the label. A page of the project added later
 * (sessions, say) is a row here and a route in main.tsx. `keepWindow`: the tab keeps the window and agent filter.
 */
const PROJECT_PAGES: { page: string; label: string; keepWindow: boolean }[] = [
  { page: 'overview', label: 'Overview', keepWindow: true },
  { page: 'agents', label: 'Agents', keepWindow: true },
  { page: 'runs', label: 'Runs', keepWindow: true },
  { page: 'sessions', label: 'Sessions', keepWindow: true },
  { page: 'costs', label: 'Costs', keepWindow: true },
  { page: 'alerts', label: 'Alerts', keepWindow: false },
  { page: 'keys', label: 'API keys', keepWindow: false },
  { page: 'members', label: 'Members', keepWindow: false },
  { page: 'settings', label: 'Settings', keepWindow: false },
];

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
  // Reloaded when a project is created, renamed or deleted, so that the switcher shows it at once.
  const projectsVersion = useProjectsVersion();
  const projects = useLoad(
    () => (orgID ? get<Project[]>(`/admin/orgs/${orgID}/projects`) : Promise.resolve([])),
    [orgID, projectsVersion],
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
        <div class="switchers">
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
        </div>
        <div class="user">
          {orgID && !projectID && <a href={href(`/orgs/${orgID}/members`)}>Members</a>}
          <span class="email" title={profile.user.email}>
            {profile.user.name}
          </span>
          <button type="button" class="link" onClick={signOut}>
            Sign out
          </button>
        </div>
      </header>
      {projectID && (
        <nav class="tabs" aria-label="Project pages">
          {PROJECT_PAGES.map(({ page, label, keepWindow }) => (
            <a
              key={page}
              class={section === page ? 'active' : ''}
              aria-current={section === page ? 'page' : undefined}
              href={href(`/orgs/${orgID}/projects/${projectID}/${page}`, keepWindow ? kept : {})}
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
