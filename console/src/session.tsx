// Sign-in state: the token lives in sessionStorage (this tab only) and is forgotten on sign-out.
import { createContext, useContext, useEffect, useMemo, useRef, useState, type ReactNode } from 'react';
import { useQueryClient } from '@tanstack/react-query';
import { api, ApiError, setApiToken, type Role } from './api';
import { liveStore, LiveStore, setLiveStore, type Frame } from './live';

const KEY = 'organism.console.token';

export interface Session {
  name: string;
  role: Role;
  signOut: () => void;
}

const SessionContext = createContext<Session | null>(null);

export function useSession(): Session {
  const s = useContext(SessionContext);
  if (!s) throw new Error('no session');
  return s;
}

export function useIsOperator(): boolean {
  return useSession().role === 'operator';
}

/** May answer and reject inbox items: an approver or an operator (a viewer reads them). */
export function useCanAnswer(): boolean {
  return useSession().role !== 'viewer';
}

/** Why an operator control is disabled for a viewer or an approver (shown on hover and to screen readers). */
export function readOnlyReason(role: Role): string {
  return role === 'approver'
    ? 'Not allowed: your token has the approver role (it answers and rejects inbox items; operator role required)'
    : `Read-only: your token has the ${role} role (operator role required)`;
}

/** The reason for this session's role. */
export function useReadOnlyReason(): string {
  return readOnlyReason(useSession().role);
}

export function SessionGate({ children, signIn }: { children: ReactNode; signIn: (onSignedIn: (token: string, who: { name: string; role: Role }) => void) => ReactNode }) {
  const queryClient = useQueryClient();
  const [who, setWho] = useState<{ token: string; name: string; role: Role } | null>(null);
  const [checking, setChecking] = useState(() => sessionStorage.getItem(KEY) !== null);

  const signOut = useRef(() => {});
  signOut.current = () => {
    sessionStorage.removeItem(KEY);
    setApiToken(null);
    liveStore()?.stop();
    setLiveStore(null);
    queryClient.clear();
    setWho(null);
  };

  // A token kept from earlier in this tab: check it is still good before showing anything.
  useEffect(() => {
    const token = sessionStorage.getItem(KEY);
    if (!token) return;
    api
      .whoami(token)
      .then((w) => {
        setApiToken(token);
        setWho({ token, ...w });
      })
      .catch(() => sessionStorage.removeItem(KEY))
      .finally(() => setChecking(false));
  }, []);

  // The live socket lives as long as the session.
  useEffect(() => {
    if (!who) return;
    const store = new LiveStore(
      who.token,
      () => {
        // The socket keeps being refused: if the token is no longer accepted, sign out.
        api.whoami(who.token).catch((err: unknown) => {
          if (err instanceof ApiError && err.status === 401) signOut.current();
        });
      },
      () => void queryClient.invalidateQueries(),
    );
    setLiveStore(store);
    store.start();
    return () => {
      store.stop();
      setLiveStore(null);
    };
  }, [who, queryClient]);

  const session = useMemo<Session | null>(() => (who ? { name: who.name, role: who.role, signOut: () => signOut.current() } : null), [who]);

  if (checking) return null;
  if (!session)
    return signIn((token, w) => {
      sessionStorage.setItem(KEY, token);
      setApiToken(token);
      setWho({ token, ...w });
    });
  return <SessionContext.Provider value={session}>{children}</SessionContext.Provider>;
}

/** Calls `handler` for every live frame while mounted. */
export function useLiveEvents(handler: (frame: Frame) => void): void {
  const ref = useRef(handler);
  ref.current = handler;
  const store = liveStore();
  useEffect(() => store?.onEvent((f) => ref.current(f)), [store]);
}

/**
 * Refetches the given queries when matching live events arrive, at most once per `ms`: the
 * views stay current from events, with no polling while the socket is up.
 */
export function useRefetchOn(match: (frame: Frame) => boolean, keys: unknown[][], ms = 1000): void {
  const queryClient = useQueryClient();
  const timer = useRef<ReturnType<typeof setTimeout> | null>(null);
  const keysRef = useRef(keys);
  keysRef.current = keys;
  useEffect(() => () => (timer.current ? clearTimeout(timer.current) : undefined), []);
  useLiveEvents((f) => {
    if (!match(f) || timer.current) return;
    timer.current = setTimeout(() => {
      timer.current = null;
      for (const k of keysRef.current) void queryClient.invalidateQueries({ queryKey: k });
    }, ms);
  });
}
