// The console's one way to the collector: POST /api/v1/<Rpc> with the request in protobuf JSON.
// The session id lives in sessionStorage (gone with the tab), is sent as a bearer token and
// never as a cookie, so a cross-site page cannot make calls as the user.
import { navigate } from "./router.jsx";

const kSessionKey = "smbfleet.session";

export class ApiError extends Error {
  constructor(status, code, message, rpc) {
    super(message || code || `HTTP ${status}`);
    this.status = status;
    this.code = code || `HTTP_${status}`;
    this.rpc = rpc;
  }
}

export function currentSession() {
  try {
    const s = JSON.parse(sessionStorage.getItem(kSessionKey) || "null");
    return s && typeof s.session === "string" ? s : null;
  } catch {
    return null;
  }
}

function storeSession(s) {
  sessionStorage.setItem(kSessionKey, JSON.stringify(s));
  window.dispatchEvent(new Event("smbfleet-session"));
}

export function clearSession() {
  sessionStorage.removeItem(kSessionKey);
  window.dispatchEvent(new Event("smbfleet-session"));
}

async function errorOf(response, rpc) {
  let code = "";
  let message = "";
  try {
    const body = await response.json();
    code = typeof body.code === "string" ? body.code : "";
    message = typeof body.message === "string" ? body.message : "";
  } catch {
    // Not JSON (a proxy's page): the status says enough.
  }
  return new ApiError(response.status, code, message || response.statusText, rpc);
}

async function post(rpc, body, authorization) {
  const headers = { "Content-Type": "application/json", Accept: "application/json" };
  if (authorization) headers.Authorization = authorization;
  let response;
  try {
    response = await fetch(`/api/v1/${rpc}`, {
      method: "POST",
      headers,
      body: JSON.stringify(body || {}),
      cache: "no-store",
      redirect: "error",
    });
  } catch (e) {
    throw new ApiError(0, "UNAVAILABLE", `the collector did not answer (${e.message})`, rpc);
  }
  if (!response.ok) throw await errorOf(response, rpc);
  const text = await response.text();
  return text ? JSON.parse(text) : {};
}

// call("ListHosts", {pageSize: 50}) -> the response message. A 401 (session expired or signed
// out elsewhere) ends the session here and goes back to sign-in, keeping the view to return to.
export async function call(rpc, request = {}) {
  const s = currentSession();
  try {
    return await post(rpc, request, s ? `Bearer ${s.session}` : "");
  } catch (e) {
    if (e instanceof ApiError && e.status === 401) {
      clearSession();
      const here = location.pathname + location.search;
      if (!location.pathname.startsWith("/signin")) {
        navigate(`/signin?next=${encodeURIComponent(here)}`, { replace: true });
      }
    }
    throw e;
  }
}

// Signs in with an API token (sft_...) or, with no token, the client certificate the browser
// presented on the TLS connection.
export async function signIn(token) {
  const answer = await post("SignIn", {}, token ? `Bearer ${token.trim()}` : "");
  if (!answer.session) throw new ApiError(500, "INTERNAL", "the sign-in answer has no session", "SignIn");
  storeSession({ session: answer.session, expiresAt: answer.expiresAt || "", who: answer.who || {} });
  return answer;
}

export async function signOut() {
  const s = currentSession();
  clearSession();
  if (s) {
    try {
      await post("SignOut", {}, `Bearer ${s.session}`);
    } catch {
      // The session is forgotten here either way; the server expires it.
    }
  }
}

// What the signed-in person may do, from their roles (docs/roles.md). Only for what the page
// offers: the server checks every call.
export function rolesOf(session) {
  const roles = new Set((session && session.who && session.who.roles) || []);
  return {
    name: (session && session.who && session.who.name) || "",
    read: roles.has("viewer") || roles.has("proposer") || roles.has("approver") || roles.has("admin"),
    propose: roles.has("proposer") || roles.has("admin"),
    approve: roles.has("approver"),
    halt: roles.has("proposer") || roles.has("approver") || roles.has("admin"),
    report: roles.has("proposer") || roles.has("approver") || roles.has("admin"),
  };
}
