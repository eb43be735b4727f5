"""The browser's global scope as the page uses it (Pyodide's ``js`` module).

Every global the page touches is listed, so a misspelt one is a type error. Objects are
:class:`~pyodide.ffi.JsProxy` (their properties are ``Any``: JavaScript decides); the calls that can
answer ``null`` say ``JsNull``, which the page turns into ``None`` with ``dom.present``.
"""

from collections.abc import Iterable
from typing import Any

from pyodide.ffi import JsIterable, JsNull, JsPromise, JsProxy

class _Document(JsProxy):
    @property
    def activeElement(self) -> JsProxy | JsNull: ...
    @property
    def body(self) -> JsProxy: ...
    @property
    def documentElement(self) -> JsProxy: ...
    def getElementById(self, element_id: str, /) -> JsProxy | JsNull: ...
    def querySelector(self, selectors: str, /) -> JsProxy | JsNull: ...
    def querySelectorAll(self, selectors: str, /) -> JsIterable[JsProxy]: ...
    def createElement(self, tag: str, /) -> JsProxy: ...
    def createElementNS(self, namespace: str, tag: str, /) -> JsProxy: ...
    def createTextNode(self, data: str, /) -> JsProxy: ...
    def createDocumentFragment(self) -> JsProxy: ...

class _Storage(JsProxy):
    """``sessionStorage``/``localStorage``: every call throws (``JsException``) when storage is off."""

    def getItem(self, key: str, /) -> str | JsNull: ...
    def setItem(self, key: str, value: str, /) -> None: ...
    def removeItem(self, key: str, /) -> None: ...

class _Console(JsProxy):
    def error(self, *data: object) -> None: ...

class _ObjectConstructor(JsProxy):
    def fromEntries(self, entries: Iterable[object], /) -> JsProxy: ...

class _PromiseConstructor(JsProxy):
    def all(self, values: JsProxy, /) -> JsPromise[JsProxy]: ...

document: _Document
window: JsProxy
location: JsProxy
history: JsProxy
navigator: JsProxy
performance: JsProxy
console: _Console
sessionStorage: _Storage
localStorage: _Storage
# JavaScript's undefined reads as None in Python.
undefined: None

def fetch(resource: str, options: Any = ..., /) -> JsPromise[JsProxy]: ...

# Constructors and namespaces (``URL.new(...)``, ``Object.fromEntries``): used through JsProxy.
AbortController: JsProxy
AbortSignal: JsProxy
Date: JsProxy
Intl: JsProxy
JSON: JsProxy
MutationObserver: JsProxy
Number: JsProxy
Object: _ObjectConstructor
Promise: _PromiseConstructor
URL: JsProxy
URLSearchParams: JsProxy
