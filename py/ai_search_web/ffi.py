"""The bridge to JavaScript, the same names on Pyodide (the page) and on MicroPython (the keystroke
stage, :mod:`.keys`): the glue modules the stage shares with the page import these, never
``pyodide.ffi`` or ``jsffi`` themselves.

The two runtimes disagree on what is missing. Pyodide turns JavaScript's ``undefined`` into
``None`` and ``null`` into a ``JsNull`` proxy (false, but not None); MicroPython turns ``null``
into ``None`` and ``undefined`` into an object of its own ``undefined`` type, which is *true*.
:func:`is_missing` is the one test for both, on both (``dom.present`` uses it).

Portable (MicroPython 1.28 and CPython 3.11+; see HELPERS' convention): no ``typing`` at run time.
"""

import sys

TYPE_CHECKING = False

__all__ = ["RUNTIME", "JsException", "JsProxy", "create_proxy", "is_missing", "js_object"]

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
    from typing_extensions import TypeIs

if TYPE_CHECKING or RUNTIME != "micropython":
    from pyodide.ffi import JsException, JsNull, JsProxy, create_proxy

    def is_missing(value: object) -> "TypeIs[JsNull | None]":
        """Whether ``value`` is JavaScript's ``null`` or ``undefined`` as this runtime gives them."""
        return value is None or isinstance(value, JsNull)

else:
    import js
    from jsffi import JsException, JsProxy, create_proxy

    _UNDEFINED = type(js.undefined)

    def is_missing(value):
        return value is None or type(value) is _UNDEFINED
