// The page before Python is ready (about a second): sign in, and Enter searches with the one-line
// query. Results are text only (textContent). Once Python is ready (<html data-py="ready">) every
// handler here steps aside; Python reads window.aiSearchFallback to keep what was found.
const SESSION_KEY = "ai-search.session"; // the same key as py/ai_search_web/auth.py
const FIRST_PAGE = 5; // AI_SEARCH_PAGE_SIZE
const html = document.documentElement;
const $ = (id) => document.getElementById(id);
const python = () => html.dataset.py === "ready";
const state = (window.aiSearchFallback = { q: "", data: null });
const readSession = () => {
  try { return JSON.parse(sessionStorage.getItem(SESSION_KEY)); } catch { return null; }
};
const say = (text) => { $("status").textContent = text; };
html.dataset.auth = readSession()?.authToken ? "in" : "out";
const me = readSession();
if (me) $("whoami").textContent = `${me.name || me.username} (@${me.username})`;

// Sentences by HTTP status; the Python page has the full table (py/ai_search_web/messages.py).
const FAILURES = {
  0: "The server could not be reached. Check the connection and try again.",
  401: "That did not work: sign in (again).",
  429: "Too many requests in a short time. Wait a few seconds and try again.",
};
const failure = (status) => new Error(FAILURES[status] || "The server refused the request. Try again.");

async function call(path, init = {}) {
  const session = readSession();
  const headers = { Accept: "application/json", ...(init.body ? { "Content-Type": "application/json" } : {}) };
  if (session) Object.assign(headers, { "X-User-Id": session.userId, "X-Auth-Token": session.authToken });
  let response;
  try {
    response = await fetch(path, { ...init, headers, credentials: "omit", cache: "no-store" });
  } catch {
    throw failure(0);
  }
  if (!response.ok) throw failure(response.status);
  try {
    return await response.json();
  } catch {
    throw failure(-1);
  }
}

async function search(q) {
  if (!readSession()) return say("Sign in to search.");
  state.q = q;
  state.data = null;
  say("Searching…");
  try {
    const data = await call("/api/v1/ai.search?" + new URLSearchParams({ q, intelligentCount: "50" }));
    if (python() || state.q !== q) return;
    state.data = data;
    const found = Array.isArray(data.intelligent) ? data.intelligent : [];
    const items = found.slice(0, FIRST_PAGE).map((m) => {
      const li = document.createElement("li");
      li.textContent = `#${m.room?.fname || m.room?.name || ""} · ${m.u?.name || m.u?.username || ""}: ${m.text}`;
      return li;
    });
    $("fallback-results").replaceChildren(...items);
    say(`${found.length} results.`);
  } catch (error) {
    if (!python()) say(error.message);
  }
}

$("search-form").addEventListener("submit", (event) => {
  if (python()) return;
  event.preventDefault();
  const q = $("search-box").value.trim();
  if (!q) return;
  history.pushState(null, "", "?" + new URLSearchParams({ q }));
  search(q);
});

$("login-form").addEventListener("submit", async (event) => {
  if (python()) return;
  event.preventDefault();
  try {
    const user = $("login-user").value.trim();
    const { data } = await call("/api/v1/login", {
      method: "POST",
      body: JSON.stringify({ user, password: $("login-password").value }),
    });
    if (python()) return;
    const session = { userId: data.userId, authToken: data.authToken, username: data.me?.username || user, name: data.me?.name || "" };
    sessionStorage.setItem(SESSION_KEY, JSON.stringify(session));
    $("login-password").value = "";
    $("whoami").textContent = `${session.name || session.username} (@${session.username})`;
    html.dataset.auth = "in";
    say("Signed in.");
  } catch (error) {
    $("login-error").textContent = error.message === FAILURES[401] ? "That username and password do not match." : error.message;
  }
});

const initial = new URLSearchParams(location.search).get("q");
if (initial && !python()) {
  if (!$("search-box").value) $("search-box").value = initial;
  search(initial);
}
html.dataset.fallback = "ready";
performance.mark("ai-search:usable");
