"""Policies from outside the package: plugin files and installed packages.

* A plugin file (``schedlab simulate --plugin my_policy.py``, :func:`load_plugin`) is an ordinary
  Python file that registers policies exactly as a built-in policy module does. It is imported
  under a module name derived from its resolved path, from the real file, so Numba's on-disk cache
  (``cache=True``) works for it as for a built-in policy (the cache is keyed by the file's path
  and modification time, and lives in schedlab's cache directory).
* An installed package declares an entry point in the group ``schedlab.policies``; the value
  names a module (imported: its ``register`` calls run) or a callable (called with no argument).
  Entry points are loaded with the built-in policies, the first time the registry is used.

A plugin's policies go through the same registry, the same spec validation (their ``params``
model) and the same compilation cache as the built-in ones. Local worker processes of a sweep load
the same plugin files (the paths travel with each task); Dask workers need the file at the same
path, or the policies installed as a package with an entry point.
"""

from __future__ import annotations

import hashlib
import importlib.util
import sys
import traceback
from pathlib import Path
from types import ModuleType

from schedlab.errors import PluginError, SchedlabError
from schedlab.policies import registry

_FILES: dict[Path, ModuleType] = {}


def _module_name(path: Path) -> str:
    digest = hashlib.sha1(str(path).encode()).hexdigest()[:10]
    stem = "".join(c if c.isalnum() else "_" for c in path.stem)
    return f"schedlab_plugin_{stem}_{digest}"


def _where(exc: BaseException, path: Path) -> str:
    """``line N`` of the plugin file where ``exc`` was raised (the innermost frame in it)."""
    if isinstance(exc, SyntaxError) and exc.lineno is not None:
        return f":{exc.lineno}"
    lines = [f.lineno for f in traceback.extract_tb(exc.__traceback__) if Path(f.filename) == path]
    return f":{lines[-1]}" if lines else ""


# The modules of the policy contract before decision 0027 (plugins of policy API v1 imported them);
# their names are all in schedlab.policy_api.
MOVED_TO_POLICY_API = frozenset(
    f"schedlab.policies.{m}" for m in ("contract", "context", "placement", "compat")
)


def load_plugin(path: str | Path) -> list[str]:
    """Import a plugin file (once per process) and return the names of the policies it registered.

    Errors (no such file, a syntax error, an exception or ``SystemExit`` while importing, a
    policy name that is already registered) raise :class:`PluginError` with one line naming the
    file and line.
    """
    resolved = Path(path).expanduser().resolve()
    if resolved in _FILES:
        return list(getattr(_FILES[resolved], "__schedlab_policies__", []))
    if not resolved.is_file():
        raise PluginError(f"{path}: no such plugin file")
    if resolved.suffix != ".py":
        raise PluginError(f"{path}: a plugin is a Python file (.py)")
    registry.all_policies()  # built-ins first, so that a clash names the built-in policy
    before = set(registry.registered_names())
    name = _module_name(resolved)
    spec = importlib.util.spec_from_file_location(name, resolved)
    if spec is None or spec.loader is None:
        raise PluginError(f"{path}: cannot be imported as a Python module")
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module
    try:
        spec.loader.exec_module(module)
    except SchedlabError as exc:
        sys.modules.pop(name, None)
        raise PluginError(f"{path}{_where(exc, resolved)}: {exc}") from None
    except (Exception, SystemExit) as exc:  # a plugin's sys.exit() does not end schedlab
        sys.modules.pop(name, None)
        text = exc.msg if isinstance(exc, SyntaxError) else str(exc)
        if isinstance(exc, ModuleNotFoundError) and exc.name in MOVED_TO_POLICY_API:
            text += "; a policy imports it from schedlab.policy_api (decision 0027)"
        raise PluginError(
            f"{path}{_where(exc, resolved)}: {type(exc).__name__}: {text}".rstrip(": ")
        ) from None
    added = sorted(set(registry.registered_names()) - before)
    module.__schedlab_policies__ = added  # type: ignore[attr-defined]
    _FILES[resolved] = module
    return added


def plugin_policies() -> frozenset[str]:
    """The names of the policies registered by the plugin files imported in this process."""
    return frozenset(p for m in _FILES.values() for p in getattr(m, "__schedlab_policies__", []))


def loaded_plugin_files() -> tuple[str, ...]:
    """The plugin files imported in this process (for worker processes to import them too)."""
    return tuple(str(p) for p in _FILES)
