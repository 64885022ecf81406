// Sign in, or register (which also creates the user's first organization).
import { useState } from 'preact/hooks';
import { describeFailure, post } from '../api';
import { TextField } from '../components/form';
import { ErrorNote } from '../components/ui';
import type { Profile } from '../types';

export function SignInPage({ signedIn }: { signedIn: (profile: Profile) => void }) {
  const [mode, setMode] = useState<'login' | 'register'>('login');
  const [email, setEmail] = useState('');
  const [password, setPassword] = useState('');
  const [error, setError] = useState<Error>();
  const [busy, setBusy] = useState(false);
  const submit = async (event: Event) => {
    event.preventDefault();
    setBusy(true);
    setError(undefined);
    try {
      const result = await post<Profile>(`/auth/${mode}`, { email, password });
      signedIn({ user: result.user, organizations: result.organizations });
    } catch (failure) {
      setError(describeFailure(failure));
    } finally {
      setBusy(false);
    }
  };
  return (
    <main class="center">
      <form class="panel sign-in" onSubmit={submit}>
        <h1>runwatch</h1>
        <p class="muted">
          {mode === 'login'
            ? 'Sign in to see your agents.'
            : 'Create an account; your first organization comes with it.'}
        </p>
        <TextField label="E-mail" type="email" autoComplete="email" required value={email} onValue={setEmail} />
        <TextField
          label="Password"
          type="password"
          autoComplete={mode === 'login' ? 'current-password' : 'new-password'}
          required
          minLength={8}
          value={password}
          onValue={setPassword}
        />
        {error && <ErrorNote error={error} />}
        <button type="submit" class="primary" disabled={busy}>
          {mode === 'login' ? 'Sign in' : 'Register'}
        </button>
        <button type="button" class="link" onClick={() => setMode(mode === 'login' ? 'register' : 'login')}>
          {mode === 'login' ? 'No account yet? Register' : 'Have an account? Sign in'}
        </button>
      </form>
    </main>
  );
}
