// The dashboard: signs in with the session cookie, then shows one project's runs, trends, agents and alerts.
import { render } from 'preact';
import { useEffect, useState } from 'preact/hooks';
import { ApiError, get, whenUnauthorized } from './api';
import { Layout } from './components/layout';
import { ErrorNote, Loading } from './components/ui';
import { AgentsPage } from './pages/agents';
import { AlertsPage, RulePage } from './pages/alerts';
import { CostsPage } from './pages/costs';
import { HomePage, ProjectsPage } from './pages/home';
import { MembersPage } from './pages/members';
import { KeysPage, ProjectSettingsPage } from './pages/settings';
import { OverviewPage } from './pages/overview';
import { RunPage } from './pages/run';
import { SessionPage, SessionsPage } from './pages/sessions';
import { RunsPage } from './pages/runs';
import { SignInPage } from './pages/sign-in';
import { match, navigate, useLocation, type Location } from './router';
import type { Profile } from './types';
import './styles.css';

export interface PageProps {
  params: Record<string, string>;
  here: Location;
  profile: Profile;
  reloadProfile: () => void;
}

const PROJECT = '/orgs/:orgID/projects/:projectID';
/** Every page: its path pattern and its view. A project's page is also a tab (components/layout.tsx). */
const PAGES: [string, (props: PageProps) => preact.JSX.Element | null][] = [
  ['/', HomePage],
  ['/orgs/:orgID/projects', ProjectsPage],
  ['/orgs/:orgID/members', MembersPage],
  [`${PROJECT}/overview`, OverviewPage],
  [`${PROJECT}/agents`, AgentsPage],
  [`${PROJECT}/runs`, RunsPage],
  [`${PROJECT}/runs/:runID`, RunPage],
  [`${PROJECT}/sessions`, SessionsPage],
  [`${PROJECT}/sessions/:sessionID`, SessionPage],
  [`${PROJECT}/costs`, CostsPage],
  [`${PROJECT}/alerts`, AlertsPage],
  [`${PROJECT}/alerts/:ruleID`, RulePage],
  [`${PROJECT}/keys`, KeysPage],
  // The organization's members, within the project's tabs: the switcher and tabs stay.
  [`${PROJECT}/members`, MembersPage],
  [`${PROJECT}/settings`, ProjectSettingsPage],
];

function App() {
  const here = useLocation();
  const [profile, setProfile] = useState<Profile | null | undefined>(undefined);
  const [error, setError] = useState<Error>();
  const loadProfile = () =>
    get<Profile>('/auth/me').then(setProfile, (failure: Error) =>
      failure instanceof ApiError && failure.status === 401 ? setProfile(null) : setError(failure),
    );
  useEffect(() => {
    whenUnauthorized(() => setProfile(null));
    // The server tells the page whether its session cookie is live: a visitor without one signs in first.
    if (document.body.dataset.session === 'none') setProfile(null);
    else void loadProfile();
  }, []);

  if (error)
    return (
      <main class="center">
        <ErrorNote error={error} retry={() => location.reload()} />
      </main>
    );
  if (profile === undefined)
    return (
      <main class="center">
        <Loading />
      </main>
    );
  if (profile === null)
    return (
      <SignInPage
        signedIn={(signedIn) => {
          setProfile(signedIn);
          navigate('/');
        }}
      />
    );
  for (const [pattern, Page] of PAGES) {
    const params = match(pattern, here.path);
    if (params) {
      return (
        <Layout params={params} here={here} profile={profile} signedOut={() => setProfile(null)}>
          <Page params={params} here={here} profile={profile} reloadProfile={loadProfile} />
        </Layout>
      );
    }
  }
  return (
    <Layout params={{}} here={here} profile={profile} signedOut={() => setProfile(null)}>
      <h1>Not found</h1>
      <p>
        There is no page at this address. <a href="#/">Go to your projects</a>.
      </p>
    </Layout>
  );
}

render(<App />, document.getElementById('app')!);
