// The page before Python is ready (about a second on a first visit): sign in, suggestions for the
// filter being typed, and Enter searches with the one-line query. Results are text only
// (textContent). Once Python is ready (<html data-py="ready">) every handler here steps aside;
// Python reads window.aiSearchFallback to keep what was found and the rooms and people looked up.
// The keystroke stage (static/keys-boot.mjs, the core's grammar on MicroPython, <html
// data-keys="ready"> a few hundred milliseconds in) takes the suggestions over from this script
// and makes chips; a search here then sends its chips too (window.aiSearchKeys.filters).
//
// The suggestions are a subset of Python's (py/ai_search_web/search_box.py): the token right before
// the caret, rooms and people from one lookup of each made at load, today/yesterday/7 days ago for
// dates. The grammar itself stays Python's; this only has to be right until Python takes over.
const SESSION_KEY = "ai-search.session"; // the same key as py/ai_search_web/auth.py
const FIRST_PAGE = 5; // AI_SEARCH_PAGE_SIZE
const MAX_RESULTS = 50; // MAX_INTELLIGENT_SEARCH_RESULTS: a full page means "50+"
const SUGGESTIONS_SHOWN = 8;
const html = document.documentElement;
const $ = (id) => document.getElementById(id);
const box = $("search-box");
const list = $("suggestions");
const python = () => html.dataset.py === "ready";
const keys = () => html.dataset.keys === "ready"; // the keystroke stage suggests, not this script
// The keystroke stage's chips as a query line ("" without the stage).
const chipLine = () => (window.aiSearchKeys && window.aiSearchKeys.filters) || "";
// Told to the stage once the rooms and people below are in.
const LOOKED_UP = "ai-search:looked-up";
const state = (window.aiSearchFallback = { q: "", data: null, rooms: null, people: null, lookup: null });
const readSession = () => {
  try { return JSON.parse(sessionStorage.getItem(SESSION_KEY)); } catch { return null; }
};
const say = (text) => { $("status").textContent = text; };
html.dataset.auth = readSession()?.authToken ? "in" : "out";
const me = readSession();
if (me) $("whoami").textContent = `${me.name || me.username} (@${me.username})`;
else say("Sign in to search.");

// Sentences by HTTP status; the Python page has the full table (py/ai_search_web/messages.py).
const FAILURES = {
  0: "The server could not be reached. Check the connection and try again.",
  401: "That did not work: sign in (again).",
  429: "Too many requests in a short time. Wait a few seconds and try again.",
};
const seconds = (n) => (n >= 60 ? `${Math.ceil(n / 60)} minute${n > 60 ? "s" : ""}` : `${n} second${n === 1 ? "" : "s"}`);
function failure(status, retryAfter) {
  const error = new Error(FAILURES[status] || "The server refused the request. Try again.");
  error.status = status;
  if (status === 429 && retryAfter > 0) error.message = `Too many requests in a short time. Try again in ${seconds(retryAfter)}.`;
  error.retryAfter = retryAfter;
  return error;
}

const LOGIN_PATH = "/api/v1/login";

async function call(path, init = {}) {
  const session = readSession();
  const headers = { Accept: "application/json", ...(init.body ? { "Content-Type": "application/json" } : {}) };
  if (session) Object.assign(headers, { "X-User-Id": session.userId, "X-Auth-Token": session.authToken });
  let response;
  try {
    // Cookies only for the login: its device cookie (HttpOnly, path /api/v1/login) lets this browser
    // skip the wait that others' failed sign-ins start for an account. Every other call sends none.
    const credentials = path === LOGIN_PATH ? "same-origin" : "omit";
    response = await fetch(path, { ...init, headers, credentials, cache: "no-store" });
  } catch {
    throw failure(0);
  }
  if (!response.ok) throw failure(response.status, Number(response.headers.get("retry-after")) || 0);
  try {
    return await response.json();
  } catch {
    throw failure(-1);
  }
}

// -- suggestions --------------------------------------------------------------------------------

// The filter token ending at the caret (bare values only): {key, value, start}.
function activeToken() {
  const before = box.value.slice(0, box.selectionStart ?? box.value.length);
  const match = /(?:^|\s)(in|from|after|before):([^\s"]*)$/i.exec(before);
  return match && { key: match[1].toLowerCase(), value: match[2], start: before.length - match[1].length - 1 - match[2].length };
}

function matching(items, fields, needle) {
  const name = (item) => String(item[fields[0]] || "");
  return (items || [])
    .filter((item) => fields.some((f) => String(item[f] || "").toLowerCase().includes(needle)))
    .sort((a, b) => Number(!name(a).toLowerCase().startsWith(needle)) - Number(!name(b).toLowerCase().startsWith(needle)))
    .slice(0, SUGGESTIONS_SHOWN);
}

function suggestions(token) {
  const needle = token.value.replace(/^[#@]/, "").toLowerCase();
  if (token.key === "in") {
    return matching(state.rooms, ["name", "fname"], needle).map((r) => [r.fname || r.name, "Search in this room", r.name]);
  }
  if (token.key === "from") {
    return matching(state.people, ["username", "name"], needle).map((u) => [`@${u.username}`, u.name || "", u.username]);
  }
  const day = (ago) => new Date(Date.now() - ago * 86400000).toLocaleDateString("sv"); // YYYY-MM-DD, local
  return [[0, "Today"], [1, "Yesterday"], [7, "Last 7 days"]].map(([ago, label]) => [`${token.key}:${day(ago)}`, label, day(ago)]);
}

let offered = [];
let active = -1;
function show(options) {
  offered = options;
  active = -1;
  list.replaceChildren(...options.map(([title, description], i) => {
    const li = document.createElement("li");
    Object.assign(li, { id: `suggestion-${i}`, className: "option" });
    li.setAttribute("role", "option");
    li.setAttribute("aria-selected", "false");
    for (const [text, cls] of [["", "option-icon"], [title, "option-title"], [description, "option-description"]]) {
      const span = document.createElement("span");
      span.className = cls;
      span.textContent = text;
      span.dir = "auto";
      li.append(span);
    }
    return li;
  }));
  list.dataset.by = "fallback";
  list.hidden = !options.length;
  box.setAttribute("aria-expanded", String(Boolean(options.length)));
  box.removeAttribute("aria-activedescendant");
}

function accept(index) {
  const token = activeToken();
  if (!token || !offered[index]) return;
  const value = offered[index][2];
  const text = /[\s,"]/.test(value) ? `"${value.replace(/"/g, "")}"` : value;
  const before = box.value.slice(0, token.start) + `${token.key}:${text} `;
  box.value = before + box.value.slice(box.selectionStart).replace(/^ /, "");
  box.setSelectionRange(before.length, before.length);
  show([]);
}

// Until Python is ready the status line says nothing about loading: the box searches and suggests
// already. It speaks only when a person meets what is still missing, a finished filter that Python
// would turn into a chip, and Python's own status replaces the sentence once it is ready.
const CHIPS_LATER = "Filters become chips once the page has finished loading; Enter searches with them already.";
const FINISHED_FILTER = /(?:^|\s)(in|from|after|before):(?:"[^"]+"|[^\s"]+)\s/i;
box.addEventListener("input", () => {
  if (python() || keys()) return;
  const token = activeToken();
  show(token && (token.key === "after" || token.key === "before" || readSession()) ? suggestions(token) : []);
  if (readSession() && FINISHED_FILTER.test(box.value) && !$("status").textContent.trim()) say(CHIPS_LATER);
});
box.addEventListener("keydown", (event) => {
  if (python() || keys() || list.hidden || event.isComposing || event.keyCode === 229) return;
  if (event.key === "ArrowDown" || event.key === "ArrowUp") {
    active = (active + (event.key === "ArrowDown" ? 1 : offered.length - 1 + (active < 0 ? 1 : 0))) % offered.length;
    [...list.children].forEach((li, i) => li.setAttribute("aria-selected", String(i === active)));
    box.setAttribute("aria-activedescendant", `suggestion-${active}`);
  } else if ((event.key === "Enter" || event.key === "Tab") && active >= 0) {
    accept(active);
  } else if (event.key === "Escape") {
    show([]);
  } else {
    return;
  }
  event.preventDefault();
});
box.addEventListener("blur", () => { if (!python() && !keys()) show([]); });
list.addEventListener("mousedown", (event) => event.preventDefault());
list.addEventListener("click", (event) => {
  const option = event.target instanceof Element ? event.target.closest("[role=option]") : null;
  if (!python() && !keys() && option) accept(Number(option.id.replace("suggestion-", "")));
});

// The caller's rooms and people, once: what the box suggests from, and what Python starts with.
// While they are on their way, state.lookup is their promise (it never rejects): a page's Python
// that takes over before they are in waits for them instead of asking again.
function lookUp() {
  if (!readSession()) return;
  const get = (route, selector) =>
    call(`/api/v1/${route}?` + new URLSearchParams({ selector: JSON.stringify(selector) })).then((d) => d.items, () => null);
  const lookup = Promise.all([
    get("rooms.autocomplete.channelAndPrivate", { name: "" }),
    get("users.autocomplete", { term: "" }),
  ]).then(([rooms, people]) => {
    [state.rooms, state.people] = [rooms, people];
    if (state.lookup === lookup) state.lookup = null;
    document.dispatchEvent(new Event(LOOKED_UP));
  });
  state.lookup = lookup;
}

// -- searching ----------------------------------------------------------------------------------

// The status after a search, as Python says it (py/ai_search_web/wording.py, bands_text and
// count_text): with bands, how many are strong and how many only related; without, up to the cap.
function countText(found, bands) {
  if (!bands && !found.some((m) => m && typeof m === "object" && "band" in m)) {
    return found.length >= MAX_RESULTS ? `${MAX_RESULTS}+ results.` : `${found.length} result${found.length === 1 ? "" : "s"}.`;
  }
  const related = found.filter((m) => m && m.band === "related").length;
  const strong = found.length - related;
  if (!found.length) return "No results.";
  const said = strong ? `${strong} strong ${strong === 1 ? "match" : "matches"}` : "No strong match";
  return related ? `${said} · ${related} related.` : `${said}.`;
}

async function search(q) {
  if (!readSession()) return say("Sign in to search.");
  // The words, without the filters, against the server's limit (the box's maxlength, which the
  // server writes into the page); Python says the same (py/ai_search_web/wording.py).
  const words = q.replace(/(^|\s)(in|from|after|before):("[^"]*"|\S*)/gi, " ").replace(/\s+/g, " ").trim();
  if (box.maxLength > 0 && words.length > box.maxLength) {
    return say(`This search is ${words.length} characters long; a search holds at most ${box.maxLength}. Shorten it, then press Enter.`);
  }
  state.q = q;
  state.data = null;
  say("Searching…");
  try {
    const data = await call("/api/v1/ai.search?" + new URLSearchParams({ q, intelligentCount: String(MAX_RESULTS) }));
    if (python() || state.q !== q) return;
    state.data = data;
    const found = Array.isArray(data.intelligent) ? data.intelligent : [];
    // The strong results (Python lists the related ones apart, behind a button), or the related
    // ones when nothing is strong, as Python opens them then.
    const strong = found.filter((m) => m?.band !== "related");
    const items = (strong.length ? strong : found).slice(0, FIRST_PAGE).map((m) => {
      const li = document.createElement("li");
      li.dir = "auto";
      li.textContent = `#${m.room?.fname || m.room?.name || ""} · ${m.u?.name || m.u?.username || ""}: ${m.text}`;
      return li;
    });
    $("fallback-results").replaceChildren(...items);
    say(countText(found, data.meta?.retrieval?.bands));
  } catch (error) {
    if (!python()) say(error.message);
  }
}

$("search-form").addEventListener("submit", (event) => {
  if (python()) return;
  event.preventDefault();
  if (!keys()) show([]);
  // A filter key with no value yet (in:, in:#, from:@) is not a word to search for. The stage's
  // chips come first, as Python's query line has them.
  const q = `${chipLine()} ${box.value}`.replace(/(^|\s)(in|from|after|before):(?:[#@]|"")?(?=\s|$)/gi, " ").replace(/\s+/g, " ").trim();
  if (!q) return;
  history.pushState(null, "", "?" + new URLSearchParams({ q }));
  search(q);
});

$("login-form").addEventListener("submit", async (event) => {
  if (python()) return;
  event.preventDefault();
  const password = $("login-password");
  try {
    const user = $("login-user").value.trim();
    const { data } = await call(LOGIN_PATH, { method: "POST", body: JSON.stringify({ user, password: password.value }) });
    password.value = "";
    if (python()) return;
    const session = { userId: data.userId, authToken: data.authToken, username: data.me?.username || user, name: data.me?.name || "" };
    try { sessionStorage.setItem(SESSION_KEY, JSON.stringify(session)); } catch { /* storage off: this page only */ }
    $("whoami").textContent = `${session.name || session.username} (@${session.username})`;
    html.dataset.auth = "in";
    say("Signed in.");
    lookUp();
  } catch (error) {
    password.value = "";
    $("login-error").textContent =
      error.status === 401 ? "That username and password do not match."
        : error.status === 429 && error.retryAfter ? `Too many sign-in attempts. Try again in ${seconds(error.retryAfter)}.`
          : error.message;
  }
});

lookUp();
const initial = new URLSearchParams(location.search).get("q");
if (initial && !python()) {
  if (!box.value) box.value = initial;
  search(initial);
}
html.dataset.fallback = "ready";
performance.mark("ai-search:usable");
