"""The one door to Numba: configuration, the :func:`kernel` decorator, and every private Numba
name schedlab uses (docs/decisions/0010-one-door-to-numba.md).

* Every compiled function of schedlab is declared with :func:`kernel` (``numba.njit`` with
  ``cache=True`` and ``nogil=True``). ``@kernel(wraparound=False)`` compiles the function's array
  indexing without negative-index wraparound (the engine and the policies' hot kernels); every
  other function keeps Python's meaning of ``a[-1]``, whatever was imported first.
* ``SCHEDLAB_JIT=0`` runs every compiled function of schedlab as plain Python (for debugging and
  for policies that are not Numba-compatible), as ``NUMBA_DISABLE_JIT=1`` does for all of Numba;
  it changes no Numba setting (:func:`jit_disabled`).
* Compiled code is cached on disk in a directory keyed by the Numba and llvmlite versions and by a
  hash of the sources that compiled code is built from (this module, the engine, the policies and
  the job generation's kernels in ``simulation``). Numba's cache only checks the timestamp of the
  file that defines a cached function, not of the functions it calls in other modules; keying the
  directory by those sources makes any edit to the engine or a policy invalidate every cached
  runner. See docs/decisions/0001-engine-architecture.md. The directory is given to schedlab's
  kernels only (their cache's locator, :class:`_KeyedLocator`); ``numba.config.CACHE_DIR`` is
  left as it is (when set, by ``NUMBA_CACHE_DIR`` or the caller, schedlab's kernels use it too).

Nothing here changes the process on import (docs/decisions/0020): the indexing without wraparound
is installed only while an opted-in kernel compiles and taken out after; the one process-wide
tuning, SciPy's BLAS module loaded alone (:func:`configure`), is for entry points to opt into
(the CLI, ``schedlab serve``, the workers of a sweep) or a caller through
``schedlab.configure()``.

Private Numba names (anything not exported by ``numba``, ``numba.extending``, ``numba.types``,
``numba.core.errors``, ``numba.config`` or the public names of ``numba.experimental.structref``)
are imported here only, each with its reason, and checked on Numba 0.68.1 / llvmlite 0.50.0 (the
pinned range, docs/testing.md). Importing this module does not import Numba: ``import schedlab``
stays light, and the private names load on first use (:func:`__getattr__`).
"""

from __future__ import annotations

import contextlib
import functools
import hashlib
import os
import sys
from collections.abc import Callable
from importlib import metadata
from pathlib import Path
from typing import Any

_PACKAGE_DIR = Path(__file__).resolve().parent
COMPILED_PACKAGES = ("engine", "measurement", "policy_api", "policies", "simulation")


def _source_hash() -> str:
    digest = hashlib.sha1()
    paths = [p for pkg in COMPILED_PACKAGES for p in (_PACKAGE_DIR / pkg).rglob("*.py")]
    for path in [Path(__file__).resolve(), *sorted(paths)]:
        digest.update(str(path.relative_to(_PACKAGE_DIR)).encode())
        digest.update(path.read_bytes())
    return digest.hexdigest()[:16]


@functools.cache
def code_hash() -> str:
    """Hash of the engine, policy and simulation sources and of this module: identifies the code
    that produced a result."""
    return _source_hash()


def _version(distribution: str) -> str:
    try:
        return metadata.version(distribution)
    except metadata.PackageNotFoundError:
        return "none"


def cache_dir() -> Path:
    """``$XDG_CACHE_HOME/schedlab/numba-<numba>-llvmlite-<llvmlite>-<code hash>``: code compiled
    by another Numba, llvmlite or schedlab source never mixes with this one's."""
    base = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    versions = f"numba-{_version('numba')}-llvmlite-{_version('llvmlite')}"
    return Path(base) / "schedlab" / f"{versions}-{code_hash()}"


def kernel_cache_dir() -> str:
    """Where schedlab's kernels are cached: ``numba.config.CACHE_DIR`` when set (by
    ``NUMBA_CACHE_DIR`` or the caller), else :func:`cache_dir`."""
    from numba.core import config

    return config.CACHE_DIR or str(cache_dir())


def jit_disabled() -> bool:
    """schedlab's kernels run as plain Python: ``SCHEDLAB_JIT=0`` (or ``false``, ``no``,
    ``off``), or Numba's own ``NUMBA_DISABLE_JIT`` (``numba.config.DISABLE_JIT``)."""
    if os.environ.get("SCHEDLAB_JIT", "1").strip().lower() in {"0", "false", "no", "off"}:
        return True
    from numba.core import config

    return bool(config.DISABLE_JIT)


_TUNED = False  # configure() was called: the BLAS module is loaded alone before the first kernel


def configure() -> None:
    """The process tuning of schedlab's entry points (``schedlab`` and ``schedlab serve``, the
    workers of a sweep), for a caller to opt into; ``import schedlab`` does not call it.

    * Numba's cache directory (``NUMBA_CACHE_DIR``, and ``numba.config.CACHE_DIR`` if Numba is
      imported) is :func:`cache_dir` unless ``NUMBA_CACHE_DIR`` is set: a plugin's functions
      declared with ``numba.njit(cache=True)`` rather than :func:`kernel` are then cached beside
      schedlab's own, in the directory keyed by the engine's sources (schedlab's kernels are
      cached there in any case, :func:`kernel_cache_dir`).
    * Before the first kernel is declared, SciPy's BLAS extension module is loaded alone, without
      the whole of ``scipy.linalg`` that Numba's BLAS check would import
      (:func:`_blas_without_scipy_linalg`: a module put in ``sys.modules`` and an import hook on
      ``sys.meta_path``).

    Computed results do not depend on either."""
    global _TUNED
    _TUNED = True
    if "NUMBA_CACHE_DIR" in os.environ:
        return
    directory = str(cache_dir())
    os.environ["NUMBA_CACHE_DIR"] = directory
    if "numba" in sys.modules:  # imported before: the live configuration too
        from numba.core import config

        config.CACHE_DIR = directory


# ------------------------------------------------------------------------------ the decorator

_NO_WRAPAROUND: set[str] = set()  # mangled-name prefixes of the functions that opted in


def kernel(func: Callable | None = None, /, *, wraparound: bool = True, **options: Any) -> Any:
    """``numba.njit(cache=True, nogil=True, **options)``. With ``wraparound=False`` a signed index
    computed at run time is used as it is (no ``i < 0 ? i + n : i``): the function must never
    index with a negative value, which then reads outside the array (``NUMBA_BOUNDSCHECK=1``
    raises IndexError instead). Constant indices (``a[-1]``, ``a[0, -1]``) keep Python's meaning.
    Usable bare (``@kernel``) or with options (``@kernel(wraparound=False, inline="always")``).

    A function outside schedlab (a plugin's) is compiled with ``boundscheck=True`` unless it
    says ``boundscheck=False`` (for speed): an index out of range raises IndexError naming the
    file and line of the indexing (:func:`_located_boundscheck`, in force only while it compiles)
    rather than reading or writing outside the array. schedlab's own functions are compiled
    without the checks.

    Called from Python, every kernel releases the interpreter lock while it runs (``nogil``,
    unless it says ``nogil=False``): ``schedlab serve`` decides on a thread of its own, and its
    event loop answers while a runner is in compiled code, even one that never returns
    (decision 0026); a kernel called from another kernel is unaffected."""
    if func is None:
        return functools.partial(kernel, wraparound=wraparound, **options)
    if jit_disabled():
        return func
    if _TUNED:
        _blas_without_scipy_linalg()
    import numba

    if not wraparound:
        _check_indexing()
        _NO_WRAPAROUND.add(_mangled_prefix(func))
    located = False
    if not func.__module__.startswith("schedlab."):  # a plugin's: bounds checked unless it opts out
        located = bool(options.setdefault("boundscheck", True))
    if not wraparound or located:
        options["pipeline_class"] = _compiler(wraparound=wraparound, located=located)
    options.setdefault("nogil", True)
    cache = options.pop("cache", True)
    compiled = numba.njit(**options)(func)
    if cache and hasattr(compiled, "enable_caching"):  # not plain Python (NUMBA_DISABLE_JIT)
        compiled._cache = _CacheOnFirstUse(func)
    return compiled


class _CacheOnFirstUse:
    """The disk cache of one compiled function (what ``cache=True`` gives), made when the
    function is first compiled or loaded. Private: the dispatcher's ``_cache`` attribute and
    ``numba.core.caching.FunctionCache``. Making a FunctionCache checks that the cache
    directory is writable by creating a file in it: half the cost of declaring a function, and a
    short run declares some 300 of which it calls five (issue 33 item 1). Loading skips
    Numba's registry refresh (:meth:`load_overload`)."""

    def __init__(self, func: Callable) -> None:
        self._func = func
        self._cache: Any = None

    def __getattr__(self, name: str) -> Any:  # the cache's public methods and cache_path
        if name.startswith("_"):
            raise AttributeError(name)
        return getattr(self._function_cache(), name)

    def _function_cache(self) -> Any:
        if self._cache is None:
            self._cache = _keyed_function_cache()(self._func)
        return self._cache

    def load_overload(self, sig: Any, target_context: Any) -> Any:
        """The compiled code of ``sig`` loaded from disk, or None, without first refreshing the
        target context as Numba's ``Cache.load_overload`` does. The refresh imports and
        installs every typing and lowering registry of Numba (0.1 s at a process's first
        compiled call, the largest part of a short run: issue 33 item 1), which only compiling
        reads, and every compile refreshes them itself (``CompilerBase``; a lowering that misses
        a definition refreshes too). Loaded code needs only Numba's runtime (NRT), whose
        functions it calls: initialised here as the refresh would. Private: ``rtsys`` and the
        cache's ``_load_overload`` and ``_guard_against_spurious_io_errors``."""
        from numba.core.runtime import rtsys

        rtsys.initialize(target_context)
        cache = self._function_cache()
        with cache._guard_against_spurious_io_errors():
            return cache._load_overload(sig, target_context)


@functools.cache
def _keyed_function_cache() -> type:
    """Numba's ``FunctionCache`` whose directory is :func:`kernel_cache_dir` (else Numba's own
    fallbacks: a zip file, IPython): the keyed directory for schedlab's kernels without setting
    ``numba.config.CACHE_DIR`` for the process. Private: ``numba.core.caching``'s
    ``FunctionCache``, ``CompileResultCacheImpl`` (its ``_locator_classes``) and
    ``UserProvidedCacheLocator`` (the locator of ``NUMBA_CACHE_DIR``, given another directory)."""
    from numba.core import caching

    class _KeyedLocator(caching.UserProvidedCacheLocator):
        def __init__(self, py_func: Any, py_file: str) -> None:
            self._py_file = py_file
            self._lineno = py_func.__code__.co_firstlineno
            subpath = self.get_suitable_cache_subpath(py_file)
            self._cache_path = os.path.join(kernel_cache_dir(), subpath)

        @classmethod
        def from_function(cls, py_func: Any, py_file: str) -> Any:
            # the source-file locator's checks (the file exists, the directory is writable),
            # without UserProvidedCacheLocator's "only when numba.config.CACHE_DIR is set"
            return super(caching.UserProvidedCacheLocator, cls).from_function(py_func, py_file)

    class _KeyedImpl(caching.CompileResultCacheImpl):
        _locator_classes = (_KeyedLocator, *caching.CompileResultCacheImpl._locator_classes[1:])

    class _KeyedFunctionCache(caching.FunctionCache):
        _impl_class = _KeyedImpl

    return _KeyedFunctionCache


BLAS_MODULE = "scipy.linalg.cython_blas"


@functools.cache
def _blas_without_scipy_linalg() -> None:
    """Load SciPy's BLAS extension module alone, before Numba asks for it. Numba imports
    ``scipy.linalg.cython_blas`` when it first loads its target's registries (before the first
    compiled call: ``numba.np.arraymath`` checks that BLAS exists), and importing a submodule runs
    its package first: the whole of ``scipy.linalg`` (0.3 s on an idle 2-core host, 1 s at load
    7; issue 33 items 1 and 2). The extension needs nothing of its package, so it is loaded from
    its file under its own name: Numba's import finds it, and BLAS in compiled code works as
    before; a later import of ``scipy.linalg`` gets it as its ``cython_blas`` attribute
    (:class:`_AttachBlas`). Nothing is done where ``scipy.linalg`` is already imported or the
    file is not found (Numba then imports it as usual)."""
    import importlib.machinery
    import importlib.util

    if "scipy.linalg" in sys.modules or BLAS_MODULE in sys.modules:
        return
    scipy = importlib.util.find_spec("scipy")  # finds the package, does not import it
    if scipy is None or not scipy.submodule_search_locations:
        return
    folders = [str(Path(p) / "linalg") for p in scipy.submodule_search_locations]
    spec = importlib.machinery.PathFinder.find_spec(BLAS_MODULE, folders)
    if spec is None or spec.loader is None:
        return
    module = importlib.util.module_from_spec(spec)
    sys.modules[BLAS_MODULE] = module
    try:
        spec.loader.exec_module(module)
    except Exception:
        del sys.modules[BLAS_MODULE]
        return
    sys.meta_path.insert(0, _AttachBlas())


class _AttachBlas:
    """Import hook for the first import of ``scipy.linalg`` after its BLAS module was loaded
    alone: the package gets the module as its ``cython_blas`` attribute, as a plain import gives
    it (an import of a submodule already in ``sys.modules`` does not set it). Then removes
    itself."""

    def find_spec(self, name: str, path: Any = None, target: Any = None) -> Any:
        if name != "scipy.linalg":
            return None
        import importlib.machinery

        sys.meta_path.remove(self)
        spec = importlib.machinery.PathFinder.find_spec(name, path)
        if spec is None or spec.loader is None:
            return spec
        run = spec.loader.exec_module

        def exec_module(module: Any) -> None:
            module.cython_blas = sys.modules[BLAS_MODULE]
            run(module)

        spec.loader.exec_module = exec_module  # this spec's own loader object
        return spec


def _mangled_prefix(func: Callable) -> str:
    """The start of the LLVM name of every specialisation of ``func``: ``_ZN`` and the
    length-prefixed parts of its module and qualified name (closures included:
    ``outer.<locals>.inner``). Numba appends the specialisation's ABI tags and argument types."""
    # private: Numba's own mangler, so that the prefix is what it names the function
    from numba.core.itanium_mangler import mangle_identifier

    return "_Z" + mangle_identifier(f"{func.__module__}.{func.__qualname__}")[:-1]


def _name_prefix(llvm_name: str) -> str:
    """The ``_ZN`` and length-prefixed parts at the start of a mangled LLVM function name."""
    if not llvm_name.startswith("_ZN"):
        return ""
    i = 3
    while i < len(llvm_name) and llvm_name[i].isdigit():
        j = i
        while j < len(llvm_name) and llvm_name[j].isdigit():
            j += 1
        i = j + int(llvm_name[i:j])
    return llvm_name[:i]


def opted_in(llvm_name: str) -> bool:
    """The function named ``llvm_name`` was declared with ``kernel(wraparound=False)``."""
    return _name_prefix(llvm_name) in _NO_WRAPAROUND


def _is_constant(value: Any) -> bool:
    """``value`` is known when compiling: a constant, or an element of a tuple of indices whose
    element was a constant (``a[0, -1]``; Numba passes each index as an ``extractvalue``)."""
    from llvmlite import ir

    while isinstance(value, ir.CastInstr):
        value = value.operands[0]
    if isinstance(value, ir.Constant):
        return True
    if not isinstance(value, ir.ExtractValue) or len(value.indices) != 1:
        return False
    (k,) = value.indices
    tuple_value = value.aggregate
    while isinstance(tuple_value, ir.InsertValue):
        if list(tuple_value.indices) == [k]:
            return _is_constant(tuple_value.value)
        tuple_value = tuple_value.aggregate
    return isinstance(tuple_value, ir.Constant)


def _check_indexing() -> None:
    """Raise when this Numba has no ``numba.np.arrayobj.fix_integer_index`` (private; the step
    every integer index of ``a[i]`` goes through when Numba lowers it; checked with this signature
    on Numba 0.68.1), when the first opted-in function is declared, rather than compile slower
    code silently."""
    import numba  # noqa: F401  (whole first: numba.np.arrayobj alone is a circular import)
    from numba.np import arrayobj

    arrayobj.fix_integer_index  # noqa: B018  (AttributeError on a Numba without it)


_indexing_depth = 0  # opted-in compiles under way (nested: a kernel's callee compiles within it)


@contextlib.contextmanager
def _indexing_without_wraparound() -> Any:
    """While an opted-in kernel compiles, ``numba.np.arrayobj.fix_integer_index`` is wrapped: a
    signed, non-constant index in a function that opted in (its LLVM name, :func:`opted_in`) is
    used as it is; every other function, compiled meanwhile (a callee, Numba's own overloads),
    keeps Numba's. Numba's own is put back when the outermost such compile ends (compiles run
    one at a time, under Numba's compiler lock)."""
    global _indexing_depth
    from numba.core import types
    from numba.np import arrayobj

    python_semantics = arrayobj.fix_integer_index
    if _indexing_depth == 0:

        def fix_integer_index(context, builder, idxty, idx, size):
            if idxty.signed and opted_in(builder.function.name) and not _is_constant(idx):
                return context.cast(builder, idx, idxty, types.intp)
            return python_semantics(context, builder, idxty, idx, size)

        fix_integer_index.schedlab = True
        arrayobj.fix_integer_index = fix_integer_index
    _indexing_depth += 1
    try:
        yield
    finally:
        _indexing_depth -= 1
        if _indexing_depth == 0:
            arrayobj.fix_integer_index = python_semantics


@functools.cache
def _compiler(wraparound: bool, located: bool) -> type:
    """The compiler pipeline of a kernel that opted out of wraparound or in to located bounds
    checks (``numba.njit``'s documented ``pipeline_class``): Numba's own, compiling within
    :func:`_indexing_without_wraparound` and/or :func:`_located_boundscheck`, so neither patch
    outlives the compile. Private: ``numba.core.compiler.Compiler``, its ``compile_extra`` and
    ``compile_ir``."""
    from numba.core.compiler import Compiler

    def scoped() -> contextlib.ExitStack:
        stack = contextlib.ExitStack()
        if not wraparound:
            stack.enter_context(_indexing_without_wraparound())
        if located:
            stack.enter_context(_located_boundscheck())
        return stack

    class ScopedCompiler(Compiler):
        def compile_extra(self, func: Any) -> Any:
            with scoped():
                return super().compile_extra(func)

        def compile_ir(self, func_ir: Any, lifted: Any = (), lifted_from: Any = None) -> Any:
            with scoped():
                return super().compile_ir(func_ir, lifted, lifted_from)

    return ScopedCompiler


_LOWERING: list[Any] = []  # the source location of each instruction being lowered, innermost last


_located_depth = 0  # located bounds-checked compiles under way (nested like the indexing's)


@contextlib.contextmanager
def _located_boundscheck() -> Any:
    """While a bounds-checked kernel compiles, an IndexError of a bounds check says where:
    ``index is out of bounds (FILE:LINE)``, the line of the indexing (Numba's says nothing of it,
    and has no location to give it). Private: ``numba.core.lowering.Lower.lower_inst`` is wrapped
    to note the location of the instruction being lowered (``inst.loc``), and
    ``numba.core.cgutils.do_boundscheck`` (looked up there and in ``numba.np.arrayobj`` at each
    use; checked with this signature on Numba 0.68.1) is replaced by the same check with that
    location in its message. Both are put back when the outermost such compile ends."""
    global _located_depth
    from numba.core import cgutils, lowering

    lower_inst, numba_boundscheck = lowering.Lower.lower_inst, cgutils.do_boundscheck
    if _located_depth == 0:

        def located_lower_inst(self: Any, inst: Any) -> Any:
            _LOWERING.append(getattr(inst, "loc", None))
            try:
                return lower_inst(self, inst)
            finally:
                _LOWERING.pop()

        def do_boundscheck(
            context: Any, builder: Any, ind: Any, dimlen: Any, axis: Any = None
        ) -> None:
            loc = _LOWERING[-1] if _LOWERING else None
            where = f" ({loc.filename}:{loc.line})" if getattr(loc, "filename", None) else ""
            message = f"index is out of bounds{where}"
            for outside in (
                builder.icmp_signed(">=", ind, dimlen),
                builder.icmp_signed("<", ind, ind.type(0)),
            ):
                with cgutils.if_unlikely(builder, outside):
                    context.call_conv.return_user_exc(builder, IndexError, (message,))

        lowering.Lower.lower_inst = located_lower_inst
        cgutils.do_boundscheck = do_boundscheck
    _located_depth += 1
    try:
        yield
    finally:
        _located_depth -= 1
        if _located_depth == 0:
            lowering.Lower.lower_inst, cgutils.do_boundscheck = lower_inst, numba_boundscheck


# ------------------------------------------------------------------- other private Numba names


def struct_data(context: Any, builder: Any, struct_type: Any, value: Any) -> Any:
    """The field proxy of a structref ``value`` (engine/borrowed_structs.py, decision 0004):
    ``numba.experimental.structref._Utils`` is private; Numba's own structref lowering uses it."""
    from numba.experimental import structref

    return structref._Utils(context, builder, struct_type).get_data_struct(value)


def struct_data_pointer(context: Any, builder: Any, struct_type: Any, value: Any) -> Any:
    """The typed pointer to the fields of a structref ``value`` (``structref._Utils``, private)."""
    from numba.experimental import structref

    return structref._Utils(context, builder, struct_type).get_data_pointer(value)


def member_pointer(fields: Any, attr: str) -> Any:
    """Pointer to member ``attr`` of a ``cgutils`` struct proxy, and (below) the value of that
    member from what was loaded through it: the proxy's ``_datamodel``, ``_get_ptr_by_index`` and
    ``_cast_member_to_value`` are private; engine/borrowed_structs.py loads array fields with
    ``!invariant.load`` through them (decision 0008, point 2)."""
    return fields._get_ptr_by_index(fields._datamodel.get_field_position(attr))


def member_value(fields: Any, attr: str, raw: Any) -> Any:
    return fields._cast_member_to_value(fields._datamodel.get_field_position(attr), raw)


def compile_for(function: Callable, *args: Any) -> None:
    """Compile ``function`` for the types of ``args`` (or load that code from the disk cache)
    without calling it, so that a timed call runs compiled code only; nothing for plain Python
    (SCHEDLAB_JIT=0). Numba's ``Dispatcher.compile``, as a first call would do it."""
    if not hasattr(function, "compile"):
        return
    import numba

    function.compile(tuple(numba.typeof(a) for a in args))


def without_dispatch(function: Callable) -> Callable:
    """The compiled code of ``function`` called without Numba's dispatch, which looks up the
    arguments' types on every call (2-4 µs for a function of two struct pairs, the online
    scheduler's copy before each event): the entry point of its one compiled signature. Private:
    a dispatcher's ``overloads`` and a compile result's ``entry_point``. The entry point unboxes
    its arguments as the types it was compiled for without checking them: only for a caller whose
    argument types never change. ``function`` itself when it is plain Python (SCHEDLAB_JIT=0)
    or not compiled for exactly one signature."""
    overloads = getattr(function, "overloads", None)
    if not overloads or len(overloads) != 1:
        return function
    return next(iter(overloads.values())).entry_point


_PRIVATE_MODULE_NAMES = {
    # numba.core.cgutils: LLVM helpers of Numba's lowering (create_struct_proxy, null values),
    # not in the documented extension API; engine/borrowed_structs.py builds struct views with them.
    "cgutils": ("numba.core", "cgutils"),
    # numba.core.imputils: impl_ret_borrowed / impl_ret_untracked tell Numba's reference counting
    # how a lowered value is owned (engine/borrowed_structs.py, decision 0004).
    "imputils": ("numba.core", "imputils"),
    # AttributeTemplate: the typing template behind numba.extending.infer_getattr (structs.py).
    "AttributeTemplate": ("numba.core.typing.templates", "AttributeTemplate"),
    # NumPy's ziggurat tables for the exponential draw, which Numba ships identically in
    # numba.np.random._constants (private; simulation/compiled_streams.py draws bit for bit as
    # NumPy 2.x does, tests/simulation/test_compiled_units.py checks it).
    "ke_double": ("numba.np.random._constants", "ke_double"),
    "we_double": ("numba.np.random._constants", "we_double"),
    "fe_double": ("numba.np.random._constants", "fe_double"),
    "ziggurat_exp_r": ("numba.np.random._constants", "ziggurat_exp_r"),
}


def __getattr__(name: str) -> Any:
    """The private Numba names of :data:`_PRIVATE_MODULE_NAMES`, imported on first use."""
    if name not in _PRIVATE_MODULE_NAMES:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    import importlib

    module, attr = _PRIVATE_MODULE_NAMES[name]
    value = getattr(importlib.import_module(module), attr)
    globals()[name] = value
    return value
