import { QueryClient, QueryClientProvider } from '@tanstack/react-query';
import { createRootRoute, createRoute, createRouter, Link, Outlet, RouterProvider } from '@tanstack/react-router';
import { StrictMode, useState, type FormEvent } from 'react';
import { createRoot } from 'react-dom/client';
import { api, ApiError, type Role } from './api';
import { organismPhase, useLive } from './live';
import { SessionGate, useSession } from './session';
import './styles.css';
import { AgentDetailView, AgentsView } from './views/Agents';
import { ConfigView } from './views/Config';
import { InboxNavLink, InboxView } from './views/Inbox';
import { InjectView } from './views/Inject';
import { journalSearch, threadSearch } from './views/find/search';
import { JournalView } from './views/Journal';
import { MessagesView } from './views/Messages';
import { OverviewView } from './views/Overview';
import { ThreadDetailView, ThreadsView } from './views/Threads';
import { CompareView } from './views/thread/Fork';
import { TopologyView } from './views/Topology';
import { UsageView } from './views/Usage';
import { WorkersView } from './views/Workers';
import { SchedulesView } from './views/Schedules';

const queryClient = new QueryClient({
  defaultOptions: {
    // Fresh data comes from live events (see useRefetchOn); no polling, no focus refetch storms.
    queries: { staleTime: 10_000, refetchOnWindowFocus: false, retry: (n, err) => !(err instanceof ApiError && err.status > 0) && n < 2 },
  },
});

function SignIn({ onSignedIn }: { onSignedIn: (token: string, who: { name: string; role: Role }) => void }) {
  const [token, setToken] = useState('');
  const [error, setError] = useState<string | null>(null);
  const [busy, setBusy] = useState(false);
  const submit = async (e: FormEvent) => {
    e.preventDefault();
    setBusy(true);
    setError(null);
    try {
      const who = await api.whoami(token.trim());
      onSignedIn(token.trim(), who);
    } catch (err) {
      setError(err instanceof ApiError && err.status === 401 ? 'Wrong token: the server did not accept it.' : err instanceof ApiError ? err.detail : String(err));
    } finally {
      setBusy(false);
    }
  };
  return (
    <main className="signin">
      <form onSubmit={submit} aria-label="Sign in">
        <h1>organism console</h1>
        <p className="muted">Sign in with an API token (operator, approver or viewer). `organism serve` prints where its token is.</p>
        <label>
          Token
          {/* biome-ignore lint/a11y/noAutofocus: the sign-in page's only field; focusing it is what the page is for */}
          <input type="password" autoComplete="current-password" autoFocus value={token} onChange={(e) => setToken(e.target.value)} required />
        </label>
        {error && (
          <p className="error" role="alert">
            {error}
          </p>
        )}
        <button type="submit" disabled={busy || token.trim() === ''}>
          Sign in
        </button>
      </form>
    </main>
  );
}

const NAV: Array<[string, string]> = [
  ['/', 'Overview'],
  ['/topology', 'Topology'],
  ['/agents', 'Agents'],
  ['/threads', 'Threads'],
  ['/inbox', 'Inbox'],
  ['/messages', 'Messages'],
  ['/inject', 'Inject'],
  ['/journal', 'Journal'],
  ['/usage', 'Usage'],
  ['/workers', 'Workers'],
  ['/schedules', 'Schedules'],
  ['/config', 'Configuration'],
];

function ConnectionIndicator() {
  const live = useLive();
  // A server draining (stop or restart) still answers: Live would say all is well.
  const draining = live.connection === 'open' && organismPhase(live.organism?.status, live.connection) === 'draining';
  const label = draining ? 'Draining' : { connecting: 'Connecting', open: 'Live', reconnecting: 'Reconnecting', closed: 'Disconnected' }[live.connection];
  return (
    <span className={`conn conn-${draining ? 'draining' : live.connection}`} role="status" aria-label={`Connection: ${label}`} title={live.bootId ? `boot ${live.bootId}` : undefined}>
      <span className="dot" aria-hidden="true" /> {label}
    </span>
  );
}

function Shell() {
  const session = useSession();
  const live = useLive();
  return (
    <div className="shell">
      <header>
        <span className="brand">organism{live.organism ? ` · ${live.organism.name}` : ''}</span>
        <nav aria-label="Views">
          {NAV.map(([to, label]) =>
            to === '/inbox' ? (
              <InboxNavLink key={to} />
            ) : (
              <Link key={to} to={to} activeOptions={{ exact: to === '/' }} activeProps={{ className: 'active', 'aria-current': 'page' }}>
                {label}
              </Link>
            ),
          )}
        </nav>
        <ConnectionIndicator />
        <span className="who" title={`token ${session.name}`}>
          {session.name} ({session.role})
        </span>
        <button type="button" onClick={session.signOut}>
          Sign out
        </button>
      </header>
      <main>
        <Outlet />
      </main>
    </div>
  );
}

const root = createRootRoute({ component: Shell, notFoundComponent: () => <p>No such page.</p> });
const parent = { getParentRoute: () => root };
const journalRoute = createRoute({
  ...parent,
  path: '/journal',
  validateSearch: journalSearch,
  component: JournalView,
});
const routeTree = root.addChildren([
  createRoute({ ...parent, path: '/', component: OverviewView }),
  createRoute({ ...parent, path: '/topology', component: TopologyView }),
  createRoute({ ...parent, path: '/agents', component: AgentsView }),
  createRoute({ ...parent, path: '/agents/$name', component: AgentDetailView }),
  createRoute({ ...parent, path: '/threads', validateSearch: threadSearch, component: ThreadsView }),
  createRoute({ ...parent, path: '/threads/$threadId', component: ThreadDetailView }),
  createRoute({ ...parent, path: '/threads/$threadId/compare/$otherId', component: CompareView }),
  createRoute({ ...parent, path: '/inbox', component: InboxView }),
  createRoute({ ...parent, path: '/messages', component: MessagesView }),
  createRoute({ ...parent, path: '/inject', component: InjectView }),
  journalRoute,
  createRoute({ ...parent, path: '/usage', component: UsageView }),
  createRoute({ ...parent, path: '/config', component: ConfigView }),
  createRoute({ ...parent, path: '/workers', component: WorkersView }),
  createRoute({ ...parent, path: '/schedules', component: SchedulesView }),
]);
export const router = createRouter({ routeTree, defaultPreload: false });
declare module '@tanstack/react-router' {
  interface Register {
    router: typeof router;
  }
}

createRoot(document.getElementById('root')!).render(
  <StrictMode>
    <QueryClientProvider client={queryClient}>
      <SessionGate signIn={(done) => <SignIn onSignedIn={done} />}>
        <RouterProvider router={router} />
      </SessionGate>
    </QueryClientProvider>
  </StrictMode>,
);
