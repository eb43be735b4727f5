// ai-search widget loader: one tag adds a search button and a Ctrl/Cmd+K overlay to any page.
//
//   <script src="(your ai-search server)/static/embed.js" data-filters="in:#support" async></script>
//
// The search itself runs in an iframe of our server (GET /embed, Python on Pyodide), so the host's
// CSS and scripts cannot reach it and the host's CSP needs only script-src and frame-src for us.
// This file stays small and dependency-free: a button in a shadow root, and on idle a hidden iframe
// that warms Python up. Every data-* attribute and the message protocol: docs/widget.md.
(() => {
  "use strict";
  const LOG = "ai-search:";
  const script = document.currentScript;
  if (!script || !script.src) {
    console.error(`${LOG} load embed.js with a classic <script src="…/static/embed.js"> tag`);
    return;
  }
  const ONCE = Symbol.for("ai-search.widget");
  if (window[ONCE]) {
    console.warn(`${LOG} embed.js is on this page twice; the second copy does nothing`);
    return;
  }
  window[ONCE] = true;

  const SERVER = new URL(script.src).origin;
  const PROTOCOL = 1; // the "aiSearch" field of every message (py/ai_search_web/embed_protocol.py)
  // Milliseconds after the iframe's load event within which the widget page must say hello; a page
  // refused by frame-ancestors never does (the browser shows an error page instead).
  const HELLO_GRACE_MS = 3000;
  // Milliseconds the browser may wait for an idle moment before the iframe warms up anyway.
  const IDLE_TIMEOUT_MS = 4000;
  const MAX_TEXT_CHARS = 500; // placeholder, filters: the search route's query limit
  const MAX_FRAME_HEIGHT_PX = 4000; // a resize asking for more is capped (the overlay scrolls)
  const LENGTH = /^\d{1,4}(?:\.\d{1,3})?(?:px|rem|em|vh|vw|dvh|svh|%)$/;
  const CHOICES = {
    theme: ["auto", "light", "dark"],
    position: ["bottom-right", "bottom-left", "inline", "none"],
    // intent first (the default): a host page whose visitors never reach for the widget pays for the
    // loader alone, not for the Python runtime (about 6 MB on a first visit; docs/widget.md).
    preload: ["intent", "idle", "none"],
  };
  const MAC = /Mac|iPhone|iPad/.test(navigator.userAgentData?.platform || navigator.platform || "");
  const data = script.dataset;

  function setting(name, valid, fallback) {
    const value = data[name];
    if (value === undefined || valid(value)) return value ?? fallback;
    console.warn(`${LOG} data-${name}="${value}" is not valid here; using "${fallback}" (see docs/widget.md)`);
    return fallback;
  }
  const choice = (name) => setting(name, (v) => CHOICES[name].includes(v), CHOICES[name][0]);
  const config = {
    theme: choice("theme"),
    position: choice("position"),
    preload: choice("preload"),
    accent: setting("accent", (v) => /^#(?:[0-9a-f]{3}|[0-9a-f]{6})$/i.test(v), ""),
    width: setting("width", (v) => LENGTH.test(v), "680px"),
    height: setting("height", (v) => LENGTH.test(v), "600px"),
    label: (data.label || "Search").slice(0, 40),
    placeholder: (data.placeholder || "").slice(0, MAX_TEXT_CHARS),
    filters: (data.filters || "").slice(0, MAX_TEXT_CHARS),
    shortcuts: parseShortcuts(data.shortcut ?? "mod+k"),
  };

  // "mod+k", "ctrl+shift+f", "/", several separated by commas, or "none". mod is Cmd on Apple, else Ctrl.
  function parseShortcuts(text) {
    if (text.trim().toLowerCase() === "none") return [];
    const shortcuts = [];
    for (const spec of text.toLowerCase().split(",")) {
      const parts = spec.trim().split("+");
      const key = parts.pop();
      const mods = new Set(parts);
      if (!key || [...mods].some((m) => !["mod", "ctrl", "meta", "alt", "shift"].includes(m))) {
        console.warn(`${LOG} data-shortcut "${spec.trim()}" is not a shortcut like mod+k; ignored`);
        continue;
      }
      const mod = mods.has("mod");
      shortcuts.push({ key, ctrl: mods.has("ctrl") || (mod && !MAC), meta: mods.has("meta") || (mod && MAC),
                       alt: mods.has("alt"), shift: mods.has("shift") });
    }
    return shortcuts;
  }
  function matches(s, event) {
    const letter = /^[a-z]$/.test(s.key);
    // Punctuation such as "/" needs Shift on some layouts, so Shift only counts for letters and digits.
    const shiftOk = /^[a-z0-9]$/.test(s.key) ? event.shiftKey === s.shift : true;
    const keyOk = event.key.toLowerCase() === s.key || (letter && event.code === `Key${s.key.toUpperCase()}`);
    return keyOk && shiftOk && event.ctrlKey === s.ctrl && event.metaKey === s.meta && event.altKey === s.alt;
  }
  function shortcutLabel(s) {
    const names = [s.ctrl && "Ctrl", s.meta && (MAC ? "⌘" : "Meta"), s.alt && (MAC ? "⌥" : "Alt"), s.shift && "Shift"];
    return [...names.filter(Boolean), s.key.toUpperCase()].join(MAC ? "" : "+");
  }
  // The host's own typing wins: no shortcut while focus is in a field or an editor (there, Ctrl/Cmd+K
  // often means "insert link"), nor one the host already handled, nor a key of an IME composition.
  function editing(event) {
    const target = event.composedPath()[0];
    if (!(target instanceof Element)) return false;
    if (target.isContentEditable || target.tagName === "TEXTAREA" || target.tagName === "SELECT") return true;
    return target.tagName === "INPUT" && !/^(?:button|checkbox|radio|submit|reset|range|color|file|image)$/.test(target.type);
  }

  const CSS = `
:host { all: initial; --accent: #0b62d6; --accent-fg: #fff; --bg: #fff; --fg: #1b1f24; --line: #d0d7de; }
:host([data-position="bottom-right"]) { position: fixed; right: 16px; bottom: 16px; z-index: 2147483000; }
:host([data-position="bottom-left"]) { position: fixed; left: 16px; bottom: 16px; z-index: 2147483000; }
:host([data-position="inline"]) { display: inline-block; }
:host([data-theme="dark"]) { --bg: #0f1419; --fg: #e6edf3; --line: #30363d; }
@media (prefers-color-scheme: dark) { :host([data-theme="auto"]) { --bg: #0f1419; --fg: #e6edf3; --line: #30363d; } }
button { display: inline-flex; align-items: center; gap: 0.5em; margin: 0; padding: 0.45em 0.8em;
  font: 500 14px/1.2 system-ui, -apple-system, "Segoe UI", Roboto, sans-serif; color: var(--fg);
  background: var(--bg); border: 1px solid var(--line); border-radius: 999px; cursor: pointer;
  box-shadow: 0 2px 10px rgb(0 0 0 / 0.15); }
button:hover { border-color: var(--accent); }
button:focus-visible { outline: 2px solid var(--accent); outline-offset: 2px; }
svg { width: 1.1em; height: 1.1em; fill: none; stroke: currentColor; stroke-width: 2.2; }
kbd { font: 12px/1 ui-monospace, monospace; color: inherit; opacity: 0.75; border: 1px solid var(--line);
  border-radius: 4px; padding: 0.2em 0.35em; }
dialog { box-sizing: border-box; width: min(var(--width), calc(100vw - 32px)); max-width: none; padding: 0;
  margin: 8vh auto auto; border: 1px solid var(--line); border-radius: 12px; background: var(--bg);
  color: var(--fg); overflow: hidden; box-shadow: 0 24px 64px rgb(0 0 0 / 0.35); }
dialog::backdrop { background: rgb(15 20 25 / 0.45); }
iframe { display: block; width: 100%; height: 160px; max-height: min(var(--height), calc(100dvh - 10vh - 32px));
  border: 0; color-scheme: normal; }
@media (max-width: 640px) {
  dialog { width: 100vw; height: 100dvh; max-height: none; margin: 0; border: 0; border-radius: 0; }
  iframe { height: 100% !important; max-height: none; }
}`;

  const make = (tag, attributes = {}, ...children) => {
    const node = document.createElement(tag);
    for (const [name, value] of Object.entries(attributes)) node.setAttribute(name, value);
    node.append(...children);
    return node;
  };
  const host = make("ai-search-widget", { "data-position": config.position, "data-theme": config.theme });
  const shadow = host.attachShadow({ mode: "open" });
  if ("adoptedStyleSheets" in shadow) {
    // A constructed sheet is CSSOM: a host CSP without style-src 'unsafe-inline' still applies it.
    const sheet = new CSSStyleSheet();
    sheet.replaceSync(CSS);
    shadow.adoptedStyleSheets = [sheet];
  } else {
    shadow.append(make("style", {}, CSS));
  }
  if (config.accent) host.style.setProperty("--accent", config.accent);
  const dialog = make("dialog", { part: "dialog", "aria-label": config.label });
  dialog.style.setProperty("--width", config.width);
  dialog.style.setProperty("--height", config.height);
  shadow.append(dialog);

  if (config.position !== "none") {
    const icon = document.createElementNS("http://www.w3.org/2000/svg", "svg");
    icon.setAttribute("viewBox", "0 0 24 24");
    icon.setAttribute("aria-hidden", "true");
    const lens = document.createElementNS("http://www.w3.org/2000/svg", "path");
    lens.setAttribute("d", "M10.5 3a7.5 7.5 0 1 1 0 15 7.5 7.5 0 0 1 0-15zm5.3 12.8L21 21");
    icon.append(lens);
    const first = config.shortcuts[0];
    const button = make("button", { type: "button", part: "button", "aria-haspopup": "dialog" },
      icon, make("span", {}, config.label), ...(first ? [make("kbd", {}, shortcutLabel(first))] : []));
    if (first) button.setAttribute("aria-keyshortcuts", shortcutLabel(first).replace("Ctrl", "Control"));
    button.addEventListener("click", () => open());
    if (config.preload === "intent") {
      for (const name of ["pointerenter", "focus", "touchstart"]) button.addEventListener(name, frame, { once: true, passive: true });
    }
    shadow.prepend(button);
  }
  if (config.position === "inline" && script.parentElement && script.parentElement !== document.head) {
    script.after(host);
  } else {
    if (config.position === "inline") host.dataset.position = "bottom-right";
    const mount = () => document.body.append(host);
    if (document.body) mount();
    else document.addEventListener("DOMContentLoaded", mount, { once: true });
  }

  // -- the iframe ---------------------------------------------------------------------------------
  let iframe = null;
  let state = "none"; // none -> loading -> hello (page up) -> ready (Python up); or refused
  let pending = null; // an "open" sent before the page said hello
  let returnFocus = null;

  function frame() {
    if (iframe) return;
    // intercept=1: this loader replies to every open-message (for the page's ai-search:open-message).
    const params = new URLSearchParams({ host: location.origin, intercept: "1" });
    for (const name of ["theme", "accent", "placeholder", "filters"]) if (config[name]) params.set(name, config[name]);
    iframe = make("iframe", { title: config.label, src: `${SERVER}/embed?${params}`, allow: "clipboard-write",
                              sandbox: "allow-scripts allow-same-origin allow-forms" });
    iframe.addEventListener("load", () => setTimeout(() => state === "loading" && refused(), HELLO_GRACE_MS));
    state = "loading";
    dialog.append(iframe);
  }
  function refused() {
    state = "refused";
    if (dialog.open) dialog.close();
    host.style.display = "none"; // a button that cannot open anything helps no visitor
    console.error(`${LOG} this site (${location.origin}) is not on the embed allow-list of ${SERVER}; ` +
                  "add it with AI_SEARCH_EMBED_ALLOWED_ORIGINS");
  }
  const send = (message) => iframe.contentWindow.postMessage({ aiSearch: PROTOCOL, ...message }, SERVER);
  const emit = (name, detail = {}) => document.dispatchEvent(new CustomEvent(`ai-search:${name}`, { detail }));

  function open(query) {
    if (state === "refused") return refused();
    frame();
    if (!dialog.open) {
      returnFocus = document.activeElement;
      while (returnFocus?.shadowRoot?.activeElement) returnFocus = returnFocus.shadowRoot.activeElement;
      dialog.showModal();
    }
    iframe.focus();
    const message = { type: "open", ...(typeof query === "string" && query ? { query: query.slice(0, MAX_TEXT_CHARS) } : {}) };
    if (state === "loading") pending = message;
    else send(message);
  }
  function close() {
    if (dialog.open) dialog.close();
  }
  dialog.addEventListener("close", () => {
    if (state === "hello" || state === "ready") send({ type: "close" });
    returnFocus?.focus?.({ preventScroll: true });
    emit("closed");
  });
  dialog.addEventListener("click", (event) => event.target === dialog && close()); // the backdrop

  const fields = {
    opened: (m) => ({ python: m.python === true }),
    "result-selected": (m) => typeof m.msgId === "string" && typeof m.rid === "string" &&
      { msgId: m.msgId, rid: m.rid, position: Number(m.position) || 0 },
    "answer-shown": (m) => ({ provider: String(m.provider ?? ""), citations: Number(m.citations) || 0 }),
  };
  window.addEventListener("message", (event) => {
    // Only our iframe, from our server, speaking our protocol; everything else is someone else's.
    if (!iframe || event.source !== iframe.contentWindow || event.origin !== SERVER) return;
    const m = event.data;
    if (!m || typeof m !== "object" || m.aiSearch !== PROTOCOL) return;
    if (m.type === "hello" || m.type === "ready") {
      state = m.type === "ready" || state === "ready" ? "ready" : "hello";
      if (pending) send(pending);
      pending = null;
      if (m.type === "ready") emit("ready");
    } else if (m.type === "resize" && Number.isFinite(m.height) && m.height > 0) {
      iframe.style.height = `${Math.min(Math.ceil(m.height), MAX_FRAME_HEIGHT_PX)}px`;
    } else if (m.type === "close") {
      close();
    } else if (m.type === "open-message" && Number.isSafeInteger(m.id) && typeof m.msgId === "string") {
      // Cancellable: a host that calls preventDefault() shows the message itself; the widget does not.
      const detail = { msgId: m.msgId, rid: String(m.rid ?? ""), tmid: String(m.tmid ?? ""),
                       position: Number(m.position) || 0, via: String(m.via ?? "") };
      const event = new CustomEvent("ai-search:open-message", { detail, cancelable: true });
      document.dispatchEvent(event);
      send({ type: "open-message-reply", id: m.id, taken: event.defaultPrevented });
    } else if (fields[m.type]) {
      const detail = fields[m.type](m);
      if (detail) emit(m.type, detail);
    }
  });

  // -- the host's ways in -------------------------------------------------------------------------
  window.addEventListener("keydown", (event) => {
    if (event.defaultPrevented || event.repeat || event.isComposing || event.keyCode === 229 || editing(event)) return;
    if (!config.shortcuts.some((s) => matches(s, event))) return;
    event.preventDefault();
    open();
  });
  document.addEventListener("ai-search:open", (event) => open(event.detail?.query));
  document.addEventListener("ai-search:close", close);

  const warm = () => (window.requestIdleCallback || ((fn) => setTimeout(fn, 1)))(frame, { timeout: IDLE_TIMEOUT_MS });
  if (config.preload === "idle" && !navigator.connection?.saveData) {
    if (document.readyState === "complete") warm();
    else window.addEventListener("load", warm, { once: true });
  }
})();
