// The URL holds the view: history API, links that can be shared and reopened.
import { useEffect, useState } from "preact/hooks";

const listeners = new Set();

function current() {
  return { path: location.pathname, query: new URLSearchParams(location.search) };
}

export function navigate(url, { replace = false } = {}) {
  if (replace) history.replaceState(null, "", url);
  else history.pushState(null, "", url);
  window.scrollTo(0, 0);
  for (const l of listeners) l(current());
}

window.addEventListener("popstate", () => {
  for (const l of listeners) l(current());
});

export function useRoute() {
  const [route, setRoute] = useState(current);
  useEffect(() => {
    listeners.add(setRoute);
    return () => listeners.delete(setRoute);
  }, []);
  return route;
}

// A URL from a path and query values; empty values are left out.
export function urlOf(path, params = {}) {
  const q = new URLSearchParams();
  for (const [k, v] of Object.entries(params)) {
    if (Array.isArray(v)) v.filter((x) => x !== "" && x != null).forEach((x) => q.append(k, x));
    else if (v !== "" && v != null && v !== false) q.set(k, String(v));
  }
  const s = q.toString();
  return s ? `${path}?${s}` : path;
}

// A real link (middle click, copy link, open in a new tab work) that navigates in place.
export function Link({ href, children, ...rest }) {
  const onClick = (e) => {
    if (e.defaultPrevented || e.button !== 0 || e.metaKey || e.ctrlKey || e.shiftKey || e.altKey) return;
    e.preventDefault();
    navigate(href);
  };
  return (
    <a href={href} onClick={onClick} {...rest}>
      {children}
    </a>
  );
}
