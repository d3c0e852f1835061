// The smbfleet console: a single-page app whose URL holds the view.
import { render } from "preact";
import { useEffect, useState } from "preact/hooks";
import "uplot/dist/uPlot.min.css";
import "./style.css";
import { currentSession, rolesOf, signOut } from "./api.js";
import { Link, navigate, useRoute } from "./router.jsx";
import { SignIn } from "./signin.jsx";
import { Overview } from "./pages/overview.jsx";
import { Hosts } from "./pages/hosts.jsx";
import { Host } from "./pages/host.jsx";
import { Readiness } from "./pages/readiness.jsx";
import { Changes, ChangeDetail } from "./pages/changes.jsx";
import { Audit } from "./pages/audit.jsx";

function useSession() {
  const [session, setSession] = useState(currentSession);
  useEffect(() => {
    const update = () => setSession(currentSession());
    window.addEventListener("smbfleet-session", update);
    return () => window.removeEventListener("smbfleet-session", update);
  }, []);
  return session;
}

const kNav = [
  ["/", "Overview"],
  ["/hosts", "Hosts"],
  ["/changes", "Changes"],
  ["/readiness", "Readiness"],
  ["/audit", "Audit log"],
];

function Header({ session, path }) {
  const who = session.who || {};
  return (
    <header class="top">
      <a class="skip" href="#main">
        Skip to content
      </a>
      <span class="brand">smbfleet</span>
      <nav aria-label="Main">
        {kNav.map(([href, text]) => {
          const here = href === "/" ? path === "/" : path === href || path.startsWith(href + "/");
          return (
            <Link key={href} href={href} aria-current={here ? "page" : undefined}>
              {text}
            </Link>
          );
        })}
      </nav>
      <span class="who" data-testid="who">
        <span data-testid="who-name">{who.name || "?"}</span>
        <span class="roles" data-testid="who-roles">
          {(who.roles || []).join(", ") || "no role"}
        </span>
        {who.credential ? <span class="muted"> via {who.credential}</span> : null}
      </span>
      <button
        type="button"
        class="link"
        onClick={async () => {
          await signOut();
          navigate("/signin", { replace: true });
        }}
      >
        Sign out
      </button>
    </header>
  );
}

function Page({ route, session }) {
  const { path, query } = route;
  const can = rolesOf(session);
  let m;
  if (path === "/" || path === "/overview") return <Overview can={can} />;
  if (path === "/hosts") return <Hosts query={query} />;
  if ((m = path.match(/^\/hosts\/([^/]+)$/))) return <Host name={decodeURIComponent(m[1])} can={can} />;
  if (path === "/readiness") return <Readiness query={query} />;
  if (path === "/changes") return <Changes query={query} can={can} />;
  if ((m = path.match(/^\/changes\/([^/]+)$/))) return <ChangeDetail id={decodeURIComponent(m[1])} can={can} />;
  if (path === "/audit") return <Audit query={query} />;
  return (
    <main id="main">
      <h1>Not found</h1>
      <p>
        There is no page at {path}. <Link href="/">Go to the overview</Link>.
      </p>
    </main>
  );
}

function App() {
  const route = useRoute();
  const session = useSession();
  useEffect(() => {
    if (!session && route.path !== "/signin") {
      navigate(`/signin?next=${encodeURIComponent(route.path + location.search)}`, { replace: true });
    }
  }, [session, route.path]);
  if (!session || route.path === "/signin") return <SignIn query={route.query} />;
  return (
    <>
      <Header session={session} path={route.path} />
      <Page route={route} session={session} />
    </>
  );
}

render(<App />, document.getElementById("app"));
