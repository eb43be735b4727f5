"""Hostile texts the rendering tests put into messages, room names and answers."""

from __future__ import annotations

WORD = "quokkaxss"
PAYLOADS = (
    f'{WORD} <img src=x onerror="window.__xss = 1">',
    f'{WORD} <script type="py">import js; js.window.__pyxss = 1</script>',
    f'{WORD} <button py-click="print" id="pyclick">press</button> <div mpy-click="print">x</div>',
    f"{WORD} <mark>forged</mark> &lt;img src=x onerror=window.__xss=2&gt;",
    f"{WORD} [link](javascript:window.__xss=3) ![x](http://evil.example/x.png)",
    f'{WORD} <svg onload="window.__xss = 4"></svg><iframe srcdoc="<script>parent.__xss=5</script>">',
)
HOSTILE_ROOM = "quokka<img/src=x/onerror=window.__xss=6>"
HOSTILE_ANSWER = (
    '<img src=x onerror="window.__xss = 7"> See [1]. <script type="py">import js; js.window.__pyxss = 2</script>'
    ' ![p](http://evil.example/a.png) <b py-click="print">bold</b>'
)
