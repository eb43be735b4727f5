// The widget page's first script (embed.html), before Python: what must hold from the first paint.
//
// - The look the host asked for (iframe URL: theme, accent, placeholder) and its default filters,
//   typed into the box so that fallback.js searches with them and Python turns them into chips.
// - The handshake: "hello" tells static/embed.js that the page loaded (a frame-ancestors refusal
//   never says it), and an "open" before Python focuses the box; once Python is ready
//   (<html data-py=ready>), py/ai_search_web/embed_bridge.py answers the host instead.
// - From first paint on: Escape and the × button ask the host to close; "resize" reports the
//   page's height so that the host fits the iframe to it.
// - No history entries: an iframe's pushState adds entries to the host tab's history, so Back on
//   the host would step through widget searches. Here pushState replaces, keeping the config.
//
// Messages go only to the host origin of the iframe URL, and only when that origin is on the
// allow-list the server wrote into <html data-embed-origins> and (where the browser says) is the
// parent's origin. Messages are accepted only from that parent and that origin.
const PROTOCOL = 1; // the "aiSearch" field of every message (embed_protocol.py, embed.js)
const CONFIG_KEYS = ["host", "theme", "accent", "placeholder", "filters", "intercept"];
const MAX_PLACEHOLDER_CHARS = 200;
const html = document.documentElement;
const params = new URLSearchParams(location.search);
const box = document.getElementById("search-box");
// The server writes its query limit (MAX_SEARCH_QUERY_LENGTH) into the box's maxlength.
const MAX_QUERY_CHARS = box.maxLength > 0 ? box.maxLength : Infinity;
const python = () => html.dataset.py === "ready";

function hostOrigin() {
  const host = params.get("host") || "";
  const allowed = (html.dataset.embedOrigins || "").split(/\s+/).filter(Boolean);
  const parentOrigin = location.ancestorOrigins?.[0]; // Chromium and Safari; Firefox relies on targetOrigin
  if (window.parent === window || !allowed.includes(host)) return null;
  return parentOrigin === undefined || parentOrigin === host ? host : null;
}
const host = hostOrigin();
const post = (type, fields = {}) => host && window.parent.postMessage({ aiSearch: PROTOCOL, type, ...fields }, host);

// The accent's text colour: black or white, whichever contrasts more (WCAG relative luminance).
function textOn(hex) {
  const full = hex.length === 4 ? hex.replace(/[0-9a-f]/gi, "$&$&") : hex;
  const [r, g, b] = [1, 3, 5].map((i) => {
    const c = parseInt(full.slice(i, i + 2), 16) / 255;
    return c <= 0.04045 ? c / 12.92 : ((c + 0.055) / 1.055) ** 2.4;
  });
  const luminance = 0.2126 * r + 0.7152 * g + 0.0722 * b;
  return (luminance + 0.05) / 0.05 > 1.05 / (luminance + 0.05) ? "#000000" : "#ffffff";
}

const theme = params.get("theme");
if (theme === "light" || theme === "dark") html.dataset.theme = theme;
const accent = params.get("accent") || "";
if (/^#(?:[0-9a-f]{3}|[0-9a-f]{6})$/i.test(accent)) {
  // CSSOM, which the page's CSP (style-src 'self') allows; a style attribute would not be.
  html.style.setProperty("--accent", accent);
  html.style.setProperty("--focus", accent);
  html.style.setProperty("--accent-fg", textOn(accent));
}
const placeholder = (params.get("placeholder") || "").slice(0, MAX_PLACEHOLDER_CHARS);
if (placeholder) box.placeholder = placeholder;
const filters = (params.get("filters") || "").trim().slice(0, MAX_QUERY_CHARS);
if (filters && !box.value && !params.get("q")) box.value = filters + " ";

const replace = history.replaceState.bind(history);
history.pushState = (state, unused, url) => {
  const next = new URL(url ?? location.href, location.href);
  for (const key of CONFIG_KEYS) {
    if (params.has(key) && !next.searchParams.has(key)) next.searchParams.set(key, params.get(key));
  }
  replace(state, unused, next);
};

if (host) {
  html.dataset.embedHost = host;
  const close = document.getElementById("embed-close");
  close.hidden = false;
  close.addEventListener("click", () => post("close"));
  document.addEventListener("keydown", (event) => {
    // A key of an IME composition, or an Escape the box used (closing its list), is not for us.
    if (event.key !== "Escape" || event.defaultPrevented || event.isComposing || event.keyCode === 229) return;
    event.preventDefault(); // a search box would clear itself on Escape; the text stays for next time
    post("close");
  });
  window.addEventListener("message", (event) => {
    if (python() || event.source !== window.parent || event.origin !== host) return;
    if (event.data?.aiSearch !== PROTOCOL || event.data.type !== "open") return;
    const query = typeof event.data.query === "string" ? event.data.query.slice(0, MAX_QUERY_CHARS) : "";
    if (query) {
      box.value = (filters ? filters + " " : "") + query;
      box.form.requestSubmit();
    }
    (html.dataset.auth === "out" ? document.getElementById("login-user") : box).focus();
    post("opened", { python: false });
  });
  post("hello");
  let height = 0;
  new ResizeObserver(() => {
    const now = Math.ceil(document.body.getBoundingClientRect().height);
    if (now !== height) post("resize", { height: (height = now) });
  }).observe(document.body);
}
