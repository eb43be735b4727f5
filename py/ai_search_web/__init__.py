"""ai_search_web: the search page's browser glue (PyScript on Pyodide, main thread).

Modules, one noun each (only ``dom`` creates DOM nodes, and only as text):

- ``main``: the entry script PyScript runs (``<script type="py" src=...>``).
- ``page``: the page controller: state and wiring.
- ``search_box``: the box with its chips, suggestions and lookups (everything a keystroke does).
- ``dom``: safe, text-only element builders, highlights as ``<mark>``, event listeners.
- ``api``: the REST client (awaited ``fetch``, streamed answers).
- ``auth``: the session in ``sessionStorage``, sign-in and sign-out.
- ``chips``, ``combobox``, ``results``, ``answer``: the four views.
- ``url_state``: the query line in ``?q=``; back/forward.
- ``lookups``: room and people lookups, answered locally when possible.
- ``caret``, ``sse``, ``messages``, ``highlights``: pure helpers (UTF-16 carets, event-stream parsing,
  error texts, highlight spans cut into runs).
- ``embed_bridge``: the widget page's postMessage bridge to its host (only on ``/embed``).
- ``embed_protocol``: the widget's messages and origin checks (pure, tested under CPython).

Importing this package imports nothing; ``ai_search`` is the pure core it builds on.
"""
