"""ai_search_web: the search page's browser glue (Pyodide, main thread; PyScript runs it from
pyscript.toml, and static/pyscript-boot.mjs starts the interpreter; the keystroke stage runs a
portable part of it on MicroPython first, and with the page_python setting "micropython" the whole
of it runs there: static/keys-boot.mjs). Every module keeps the portable convention.

Modules, one noun each (only ``dom`` creates DOM nodes, and only as text):

- ``main``: the entry module (``import ai_search_web.main`` starts the page).
- ``page``: the page controller: state and wiring.
- ``boundary``: the one place an exception stops (console, and a plain sentence on the page).
- ``signin``: the sign-in form, the lockout countdown, who is signed in.
- ``search_box``: the box with its chips, suggestions and lookups (everything a keystroke does).
- ``dom``: safe, text-only element builders, highlights as ``<mark>``, event listeners.
- ``api``: the REST client (awaited ``fetch``, streamed answers).
- ``auth``: the session in ``sessionStorage``, sign-in and sign-out.
- ``storage``: ``sessionStorage``/``localStorage`` reads and writes that survive storage switched off.
- ``chips``, ``combobox``, ``results``, ``answer``, ``context``: the views (``message_view`` draws a
  message for the results and the context view; ``answer_actions``: an answer's thumbs and link).
- ``url_state``: the query line in ``?q=``, the message open (``&msg=``), a shared answer
  (``?answer=``); back/forward.
- ``clipboard``: copying a link, or showing it selected where the clipboard is refused.
- ``lookups``: room and people lookups, answered locally when possible.
- ``caret``, ``messages``, ``wording``, ``highlights``, ``conversations``, ``message_parts``,
  ``answer_text``: pure helpers (UTF-16 carets, error texts, counts/limits/reasons in words,
  highlight spans cut into runs, results grouped by thread, files and reactions, an answer cut at
  its checked sentences).
- ``embed_bridge``: the widget page's postMessage bridge to its host (only on ``/embed``).
- ``embed_protocol``: the widget's messages and origin checks (pure, tested under CPython).
- ``keys``: the keystroke stage, on MicroPython before Pyodide is ready (static/keys-boot.mjs runs
  it): chips and suggestions from the core's grammar with ``chips``, ``combobox`` and ``dom``.
- ``ffi``: the JavaScript bridge on both runtimes (``pyodide.ffi`` or MicroPython's ``jsffi``; what
  each makes of ``null`` and ``undefined``). The modules the stage runs are portable
  (``ai_search_server.static.KEYS_GLUE_MODULES``).

Importing this package imports nothing; ``ai_search`` is the pure core it builds on.
"""
