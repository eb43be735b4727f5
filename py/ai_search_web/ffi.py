"""The bridge to JavaScript, the same names on Pyodide (the page) and on MicroPython (the keystroke
stage, :mod:`.keys`): the glue modules the stage shares with the page import these, never
``pyodide.ffi`` or ``jsffi`` themselves.

The two runtimes disagree on what is missing. Pyodide turns JavaScript's ``undefined`` into
``None`` and ``null`` into a ``JsNull`` proxy (false, but not None); MicroPython turns ``null``
into ``None`` and ``undefined`` into an object of its own ``undefined`` type, which is *true*.
:func:`is_present` is the one test for both, on both (``dom.present`` uses it).

They disagree on a JavaScript exception too. Pyodide raises ``JsException`` wherever one is thrown;
MicroPython 1.28 only where an awaited promise rejects. A *synchronous* throw (a blocked
``sessionStorage`` getter, a ``setItem`` over its quota) unwinds through MicroPython's C stack
unconverted: no ``except`` sees it, and the interpreter's exception state is left pointing at
frames that are gone (the next Python exception reaches JavaScript as ``Infinity``). A call that may
throw goes through :func:`try_get` or :func:`try_call`, which on MicroPython make it from
JavaScript's own frames.

Portable (MicroPython 1.28 and CPython 3.11+, the convention of ``ai_search/_portable.py``): no
``typing`` at run time.
"""

import sys

TYPE_CHECKING = False

__all__ = [
    "RUNTIME",
    "JsException",
    "JsProxy",
    "create_proxy",
    "is_present",
    "js_object",
    "settled",
    "to_bytes",
    "to_js",
    "to_py",
    "try_call",
    "try_get",
]

# "micropython" for the keystroke stage, "cpython" for Pyodide.
RUNTIME = sys.implementation.name


def js_object(**fields: "object") -> "JsProxy":
    """A plain JavaScript object of ``fields`` (the options of a DOM call): neither runtime turns
    keyword arguments or a dict into one by itself in the same way."""
    import js

    made = js.Object.new()
    for name, value in fields.items():  # portable: an options object's fields have no order
        setattr(made, name, value)
    return made


if TYPE_CHECKING:
    from typing import Any, TypeGuard, TypeVar

    _Value = TypeVar("_Value")

if TYPE_CHECKING or RUNTIME != "micropython":
    from pyodide.ffi import JsException, JsNull, JsProxy, create_proxy

    def is_present(value: "_Value | JsNull | None") -> "TypeGuard[_Value]":
        """Whether ``value`` is neither JavaScript's ``null`` nor ``undefined`` as this runtime gives them."""
        return value is not None and not isinstance(value, JsNull)

    def to_js(value: "Any") -> "JsProxy":
        """``value`` (dicts, lists, strings, numbers, booleans, None, JS objects inside) as JavaScript:
        a dict becomes a plain object, as both runtimes' DOM and ``fetch`` calls want it (Pyodide's
        own default would make a ``Map``)."""
        import js
        from pyodide.ffi import to_js as _to_js

        made: JsProxy = _to_js(value, dict_converter=js.Object.fromEntries)
        return made

    def to_py(value: "object") -> "object":
        """A JSON-shaped JavaScript value (a parsed response body, ``event.data``, ``history.state``) as
        Python dicts, lists and scalars; a Python value is returned as it is."""
        convert = getattr(value, "to_py", None)
        return value if convert is None else convert()

    async def settled(promise: "Any") -> "Any":
        """What ``promise`` fulfils with (a rejection raises :class:`JsException`): ``await promise``,
        here; on MicroPython it also makes sure the promise did settle (its ``settled``)."""
        return await promise

    def to_bytes(value: "JsProxy") -> bytes:
        """A ``Uint8Array`` (a chunk of a streamed response body) as bytes."""
        made: bytes = value.to_bytes()
        return made

    def try_get(target: "Any", name: str) -> "tuple[bool, Any]":
        """``(True, target[name])``, or ``(False, None)`` when reading it throws."""
        try:
            return True, getattr(target, name)
        except JsException:
            return False, None

    def try_call(target: "Any", method: str, *args: "Any") -> "tuple[bool, Any]":
        """``(True, target[method](*args))``, or ``(False, None)`` when the call throws."""
        try:
            return True, getattr(target, method)(*args)
        except JsException:
            return False, None

else:
    import js
    from jsffi import JsException, JsProxy, create_proxy

    _UNDEFINED = type(js.undefined)

    def is_present(value):
        return value is not None and type(value) is not _UNDEFINED

    from jsffi import to_js

    def to_py(value):
        # MicroPython's proxies convert nothing themselves: JSON is the one lossless path for the
        # JSON-shaped values the page reads (it never reads functions or DOM nodes this way).
        if isinstance(value, JsProxy):
            import json

            return json.loads(js.JSON.stringify(value))
        return value

    def to_bytes(value):
        # MicroPython's proxy of a Uint8Array has the buffer protocol; it has no `to_bytes`.
        return bytes(value)

    async def settled(promise):
        # MicroPython 1.28's asyncio can resume a task waiting on a JavaScript promise before the
        # promise settles, with None as its value (seen in the page's long click-through sweeps:
        # a search "answered" None and its request never ended). So the promise's outcome is written
        # by JavaScript itself into `state` (Reflect.set, no Python frame), and the task waits again
        # until it is there; a rejection is then raised by awaiting the rejected promise itself.
        state = js.Object.new()
        outcome = promise.then(
            js.Reflect.set.bind(None, state, "value"), js.Reflect.set.bind(None, state, "error")
        )
        while True:
            await outcome
            if js.Object.prototype.hasOwnProperty.call(state, "value"):
                return state.value
            if js.Object.prototype.hasOwnProperty.call(state, "error"):
                await promise  # raises its JsException (resumed early, it waits again)

    def _from_javascript(trap):
        # `trap()` (a bound JavaScript function) run by JavaScript alone, never through a Python
        # frame: a Promise's executor is the one built-in that catches synchronously, and CSP allows
        # no `new Function`. The executor is `Object.assign(box, source)`, `source` a Proxy that
        # shows one enumerable key, "value", whose read is `trap()`: the result lands in `box`, a
        # throw rejects the promise (its rejection handled by `Function.prototype`, a no-op).
        box = js.Object.new()
        template = js.Object.new()
        template.value = 0
        handler = js.Object.new()
        handler.ownKeys = js.Array.prototype.slice.bind(js.Array.of("value"), 0, 1)
        handler.getOwnPropertyDescriptor = js.Object.getOwnPropertyDescriptor.bind(None, template, "value")
        handler.get = trap
        source = js.Proxy.new(js.Object.new(), handler)
        js.Promise.new(js.Object.assign.bind(None, box, source)).catch(js.Function.prototype)
        if js.Object.prototype.hasOwnProperty.call(box, "value"):
            return True, box.value
        return False, None

    def try_get(target, name):
        return _from_javascript(js.Reflect.get.bind(None, target, name, target))

    def try_call(target, method, *args):
        # The function read by Reflect.get: a method read as a Python attribute is MicroPython's
        # own bound wrapper, which JavaScript would call back through Python.
        function = js.Reflect.get(target, method)
        return _from_javascript(js.Reflect.apply.bind(None, function, target, js.Array.of(*args)))
