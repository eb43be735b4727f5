"""pyodide.ffi as the page uses it: JavaScript objects seen from Python (Pyodide 314.0.2)."""

from collections.abc import Callable, Generator, Iterable, Iterator, Mapping
from typing import Any, Generic, Literal, TypeVar, overload

_T_co = TypeVar("_T_co", covariant=True)

class JsProxy:
    """A JavaScript object. Reading, setting or calling a property goes to JavaScript, so the
    property's value is ``Any``: the browser decides what is there, and the page checks it."""

    @property
    def typeof(self) -> str: ...
    @property
    def js_id(self) -> int: ...
    def __getattr__(self, name: str) -> Any: ...
    def __setattr__(self, name: str, value: Any) -> None: ...
    def new(self, *args: Any, **kwargs: Any) -> JsProxy: ...
    def to_py(self, *, depth: int = -1) -> Any: ...

class JsIterable(JsProxy, Generic[_T_co]):
    """A JavaScript iterable (a ``NodeList``, an ``Array``...)."""

    def __iter__(self) -> Iterator[_T_co]: ...

class JsPromise(JsProxy, Generic[_T_co]):
    """A JavaScript promise: awaiting it gives its value (a rejection raises ``JsException``)."""

    def __await__(self) -> Generator[Any, Any, _T_co]: ...

class JsCallableDoubleProxy(JsProxy):
    """A Python callable handed to JavaScript, kept alive until destroyed."""

    def __call__(self, *args: Any) -> Any: ...
    def destroy(self) -> None: ...

class JsException(JsProxy, Exception):
    """A JavaScript error thrown into Python."""

    name: str
    message: str

class JsNull:
    """JavaScript's ``null`` (``undefined`` becomes ``None``); always false."""

    def __bool__(self) -> Literal[False]: ...

jsnull: JsNull

def create_proxy(
    obj: Callable[..., Any], /, *, capture_this: bool = False, roundtrip: bool = True
) -> JsCallableDoubleProxy: ...

# The conversions the page makes: an object (through Object.fromEntries) or an array. A str, number
# or bool crosses to JavaScript by itself and needs no to_js.
@overload
def to_js(
    obj: Mapping[Any, Any],
    /,
    *,
    depth: int = -1,
    dict_converter: Callable[[Iterable[Any]], JsProxy],
) -> JsProxy: ...
@overload
def to_js(
    obj: list[Any] | tuple[Any, ...],
    /,
    *,
    depth: int = -1,
    dict_converter: Callable[[Iterable[Any]], JsProxy] | None = None,
) -> JsProxy: ...
