"""Writing the files dflash-check produces (reports, shims, results): the one helper every command uses.

An output path is the user's, but what is there may not be: a symlink to a model's config.json, a
FIFO, someone else's file. So an output is written only to a plain name outside every model folder,
never through a symlink, never over a file that is not a previous output of ours unless the user
passes --force, and atomically (a temporary file in the same folder, then os.replace): a crash
leaves the old file or the new one, never half of either.
"""

from __future__ import annotations

import os
import stat
import tempfile
from pathlib import Path
from typing import Callable, Iterable, Optional, Union

from dflash_compat.exceptions import InputError
from dflash_compat.files.safe_read import file_kind

__all__ = ["check_output", "check_output_folder", "make_output_folder", "write_output", "model_folders",
           "HEAD_BYTES"]

HEAD_BYTES = 64 * 1024  # how much of an existing file `is_ours` sees
PathLike = Union[str, "os.PathLike[str]"]
IsOurs = Callable[[bytes], bool]


def _head(path: Path) -> bytes:
    """The first HEAD_BYTES of a regular file (O_NONBLOCK: never waits on a FIFO swapped in meanwhile)."""
    try:
        fd = os.open(path, os.O_RDONLY | getattr(os, "O_NONBLOCK", 0) | getattr(os, "O_NOFOLLOW", 0))
    except OSError:
        return b""
    with os.fdopen(fd, "rb") as fh:
        if not stat.S_ISREG(os.fstat(fd).st_mode):
            return b""
        return fh.read(HEAD_BYTES)


def _inside(folder: Path, protected: Iterable[Path]) -> Optional[Path]:
    real = folder.resolve()
    for root in protected:
        root = Path(root).resolve()
        if real == root or root in real.parents:
            return root
    return None


def _lstat(p: Path, shown: str) -> Optional[os.stat_result]:
    """The output path's own status (a link is not followed), None when nothing is there yet; its parent
    folder must exist."""
    try:
        info = os.lstat(p)
    except FileNotFoundError:
        info = None
    except (OSError, ValueError) as exc:
        raise InputError(f"{shown}: cannot use this path ({getattr(exc, 'strerror', None) or exc})") from None
    if not p.parent.is_dir():
        raise InputError(f"{shown}: folder {p.parent} does not exist")
    return info


def _refuse_link(p: Path, shown: str, force: bool) -> None:
    """A symlink in the output's place is replaced itself with --force, never written through."""
    if not force:
        raise InputError(f"{shown}: is a symlink (to {os.readlink(p)}); outputs are never written through "
                         "a link: choose another name, or pass --force to replace the link itself")


def check_output(path: PathLike, *, force: bool = False, option: str = "-o", is_ours: Optional[IsOurs] = None,
                 protected: Iterable[Path] = ()) -> Path:
    """The output path, validated before any work is done (and again by write_output): InputError in
    one line for a folder, a FIFO or device, a missing parent folder, a parent inside a `protected`
    (model) folder, and, unless `force`, a symlink or an existing file `is_ours` does not recognise."""
    p = Path(path).expanduser()
    shown = f"{option} {path}"
    info = _lstat(p, shown)
    root = _inside(p.parent, protected)
    if root is not None:
        raise InputError(f"{shown}: inside the model folder {root}; dflash-check never writes into a model "
                         "folder, choose a path outside it")
    if info is None:
        return p
    if stat.S_ISLNK(info.st_mode):
        _refuse_link(p, shown, force)
        return p
    if not stat.S_ISREG(info.st_mode):
        raise InputError(f"{shown}: is {file_kind(info.st_mode)}; pass the name of a file to write")
    if not force and not (is_ours is not None and is_ours(_head(p))):
        raise InputError(f"{shown}: already exists and is not a previous dflash-check output; "
                         "pass --force to overwrite it")
    return p


def check_output_folder(path: PathLike, *, force: bool = False, option: str = "-o",
                        protected: Iterable[Path] = (), fill: bool = False,
                        hint: str = "pass --force to write into it") -> Path:
    """A folder output, validated before any work: the same rules as check_output for a folder. InputError
    in one line for a missing parent, a path inside, equal to or containing a `protected` (model) folder,
    an existing file that is not a folder, and, unless `force`, any symlink and any existing folder
    (`convert -o OUT`, which renames a complete new folder into place). With `fill` (init-draft, train:
    the command writes its files into the folder, see make_output_folder) an existing empty folder is
    used as it is; a non-empty one is refused with `hint` unless `force`. Returns the path as given
    (made absolute, never resolved): a symlink is replaced itself, never the folder it points to."""
    p = Path(os.path.abspath(Path(path).expanduser()))
    shown = f"{option} {path}"
    info = _lstat(p, shown)
    real = p.parent.resolve() / p.name  # the link itself, in its real parent folder
    for root in (Path(r).resolve() for r in protected):
        if real == root or root in real.parents:
            raise InputError(f"{shown}: inside the model folder {root}; dflash-check never writes into a model "
                             "folder, choose a path outside it")
        if real in root.parents:
            raise InputError(f"{shown}: contains the model folder {root}; choose a path outside it")
    if info is None:
        return p
    if stat.S_ISLNK(info.st_mode):
        _refuse_link(p, shown, force)
        return p
    if not stat.S_ISDIR(info.st_mode):
        kind = "a file" if stat.S_ISREG(info.st_mode) else file_kind(info.st_mode)
        raise InputError(f"{shown}: exists and is {kind}, not a folder; remove it yourself or choose another name")
    if force:
        return p
    if not fill:
        raise InputError(f"{shown}: exists; pass --force to replace it")
    try:
        present = sorted(os.listdir(p))
    except OSError as exc:
        raise InputError(f"{shown}: cannot list this folder ({exc.strerror or exc})") from None
    if present:
        names = ", ".join(repr(n[:60]) for n in present[:3]) + (", ..." if len(present) > 3 else "")
        raise InputError(f"{shown}: folder is not empty ({names}); {hint}")
    return p


def make_output_folder(path: Path, *, option: str = "-o") -> Path:
    """Create the folder check_output_folder(fill=True) accepted, or keep it: a symlink in its place (only
    accepted with --force) is removed itself, never followed, and a real folder made instead. Files go in
    with write_output; InputError in one line when the folder cannot be made."""
    try:
        if os.path.islink(path):
            os.unlink(path)
        os.mkdir(path)
    except FileExistsError:
        pass
    except OSError as exc:
        raise InputError(f"{option} {path}: cannot create this folder ({exc.strerror or exc})") from None
    info = os.lstat(path)
    if not stat.S_ISDIR(info.st_mode):  # swapped for a link or a file since the check: never written through
        kind = "a symlink" if stat.S_ISLNK(info.st_mode) else "a file" if stat.S_ISREG(info.st_mode) \
            else file_kind(info.st_mode)
        raise InputError(f"{option} {path}: is {kind}, not a folder; choose another name")
    return path


def _mode_for(path: Path) -> int:
    """The new file's permissions: the replaced file's, else what open() would give (0o666 less the umask)."""
    try:
        info = os.lstat(path)
        if stat.S_ISREG(info.st_mode):
            return stat.S_IMODE(info.st_mode)
    except OSError:
        pass
    umask = os.umask(0)
    os.umask(umask)
    return 0o666 & ~umask


def write_output(path: PathLike, data: Union[str, bytes], *, force: bool = False, option: str = "-o",
                 is_ours: Optional[IsOurs] = None, protected: Iterable[Path] = ()) -> Path:
    """Write `data` (str: UTF-8) to `path` after check_output's checks, atomically: a temporary file
    beside it, then os.replace (which replaces a symlink itself, never its target). Returns the path."""
    protected = tuple(protected)
    p = check_output(path, force=force, option=option, is_ours=is_ours, protected=protected)
    raw = data.encode("utf-8") if isinstance(data, str) else data
    mode = _mode_for(p)
    tmp = None
    try:
        fd, tmp = tempfile.mkstemp(dir=p.parent, prefix=f".{p.name[:100]}.", suffix=".tmp")
        with os.fdopen(fd, "wb") as fh:
            fh.write(raw)
            fh.flush()
            os.fsync(fh.fileno())
        os.chmod(tmp, mode)
        os.replace(tmp, p)
        tmp = None
    except OSError as exc:
        raise InputError(f"{option} {path}: cannot write ({exc.strerror or exc})") from None
    finally:
        if tmp is not None:
            try:
                os.unlink(tmp)
            except OSError:
                pass
    return p


def model_folders(*refs: Optional[str]) -> tuple[Path, ...]:
    """The folders outputs must stay out of: each ref that names a local model (its folder, or the folder
    of its config.json), and the Hugging Face cache, where Hub models live."""
    found: list[Path] = []
    for ref in refs:
        if not ref:
            continue
        try:
            p = Path(ref).expanduser()
            if p.is_file():
                p = p.parent
            if p.is_dir():
                found.append(p)
        except (OSError, RuntimeError, ValueError):  # a name too long, an unknown ~user, a NUL byte
            continue
    try:
        from huggingface_hub import constants

        found.append(Path(constants.HF_HUB_CACHE))
    except ImportError:  # pragma: no cover - a core dependency
        pass
    return tuple(found)
