# The pyodide package: the page imports only pyodide.ffi (see ffi/__init__.pyi).
