import { useState } from "preact/hooks";
import { signIn } from "./api.js";
import { navigate } from "./router.jsx";
import { ErrorBox } from "./ui.jsx";

// Only a path of this console: never another origin ("//host", "https:...").
function safeNext(next) {
  return next && next.startsWith("/") && !next.startsWith("//") && !next.startsWith("/signin") ? next : "/";
}

export function SignIn({ query }) {
  const [token, setToken] = useState("");
  const [error, setError] = useState(null);
  const [busy, setBusy] = useState(false);

  const go = async (withToken) => {
    setBusy(true);
    setError(null);
    try {
      await signIn(withToken ? token : "");
      setToken("");
      navigate(safeNext(query.get("next")), { replace: true });
    } catch (e) {
      setError(e);
    } finally {
      setBusy(false);
    }
  };

  return (
    <main id="main" class="signin">
      <h1>Sign in to smbfleet</h1>
      <form
        onSubmit={(e) => {
          e.preventDefault();
          go(true);
        }}
      >
        <label for="token">API token</label>
        <input
          id="token"
          name="token"
          type="password"
          autocomplete="off"
          spellcheck={false}
          placeholder="sft_…"
          value={token}
          onInput={(e) => setToken(e.currentTarget.value)}
          required
        />
        <button type="submit" disabled={busy}>
          Sign in with token
        </button>
      </form>
      <p class="or">or</p>
      <button type="button" onClick={() => go(false)} disabled={busy}>
        Use my certificate
      </button>
      <p class="muted">
        The certificate is the operator certificate your browser presents to the collector. The token is
        sent once to open a session and is not kept.
      </p>
      <ErrorBox error={error} />
    </main>
  );
}
