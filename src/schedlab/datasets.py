"""Where the shared data (real traces too large for the repository) lives: the one place that says.

The data folder is, in order:

1. the ``--data-dir DIR`` option of ``schedlab reproduce`` (:func:`use_data_dir` passes it on as
   the environment variable, so worker processes see it too);
2. the environment variable ``SCHEDLAB_DATA``;
3. else ``shared/data`` beside the git checkout that holds the current directory: for a clone
   ``DIR/schedlab`` run from anywhere inside it, ``DIR/shared/data``, i.e. ``../shared/data`` from
   the checkout's top (outside a git checkout: ``../shared/data`` from the current directory).

It is never computed from where the source code is installed. A file that is missing is one line
naming the path looked for and how to point elsewhere (:class:`DataMissing`), never a traceback.
The folder's layout: ``swf/*.swf.gz`` (Parallel Workloads Archive logs) and
``alibaba/batch_task_v2017.csv.gz``; see docs/traces.md.
"""

from __future__ import annotations

import os
from pathlib import Path

from schedlab.errors import SchedlabError

ENV = "SCHEDLAB_DATA"


class DataMissing(SchedlabError):
    """A shared data file is not where the data folder says (one line: path and how to set it)."""


def _git_root(start: Path) -> Path | None:
    for folder in (start, *start.parents):
        if (folder / ".git").exists():
            return folder
    return None


def default_data_dir(cwd: Path | None = None) -> Path:
    """``shared/data`` beside the git checkout holding ``cwd`` (or beside ``cwd`` itself)."""
    here = (cwd or Path.cwd()).resolve()
    root = _git_root(here) or here
    return root.parent / "shared" / "data"


def data_dir() -> Path:
    """The data folder: ``$SCHEDLAB_DATA`` (also set by ``--data-dir``), else the default."""
    env = os.environ.get(ENV)
    return Path(env).expanduser() if env else default_data_dir()


def data_dir_origin() -> str:
    """How :func:`data_dir` was chosen, for messages."""
    if os.environ.get(ENV):
        return f"--data-dir or ${ENV}"
    return "default: shared/data beside the git checkout of the current directory"


def use_data_dir(path: Path | None) -> None:
    """Make ``path`` (a ``--data-dir`` option) the data folder of this process and its workers."""
    if path is not None:
        os.environ[ENV] = str(Path(path).expanduser().resolve())


def data_file(relative: str, what: str) -> Path:
    """The data file ``relative`` (e.g. ``swf/KTH-SP2-1996-2.1-cln.swf.gz``); raises
    :class:`DataMissing` naming where it looked if it is not there."""
    path = data_dir() / relative
    if not path.is_file():
        raise DataMissing(
            f"{what} is missing: looked for {path} (data folder from {data_dir_origin()}); "
            f"give the folder with --data-dir DIR or {ENV}=DIR"
        )
    return path
