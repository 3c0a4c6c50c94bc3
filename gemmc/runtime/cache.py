"""gemmc's caches on disk: where they live, and how an entry is written and read so that processes running at
once never lose each other's entries or read half of one.

The folder is `$GEMMC_CACHE_DIR`, else the platform's user cache folder for gemmc (platformdirs:
`~/.cache/gemmc` on Linux, or `$XDG_CACHE_HOME/gemmc`; `~/Library/Caches/gemmc` on macOS;
`%LOCALAPPDATA%\\gemmc\\Cache` on Windows). Each cache is a subfolder (`tuning/`, `cubin/`) holding one file per
entry, named by the SHA-256 of the entry's key.

One file per entry, each written whole to a temporary file in the same folder and renamed over its name
(`os.replace`, atomic on POSIX and Windows), needs no lock: writers of different entries touch different files,
writers of one entry each put a whole, valid file in place (the last one stays), and a reader sees the old file or
the new one, never a mixture. A single file of all entries would need a lock around every read-modify-write, and
a lock on a network home folder or one left by a killed process stalls every later run. An entry that cannot be
read as what it should be (a disk filled up, a file edited by hand) is reported with a `CacheWarning` naming the
file, ignored, and rewritten by the next result computed for that key.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
import tempfile
import warnings
from pathlib import Path
from typing import Any

ENVIRONMENT = "GEMMC_CACHE_DIR"


class CacheWarning(UserWarning):
    """A cache entry on disk was unreadable or malformed and is ignored (it is recomputed and rewritten)."""


def cache_dir() -> Path:
    """The root of gemmc's caches: $GEMMC_CACHE_DIR, else the platform's user cache folder."""
    override = os.environ.get(ENVIRONMENT)
    if override:
        return Path(override)
    import platformdirs

    return Path(platformdirs.user_cache_dir("gemmc", appauthor=False))


def entry_path(cache: str, key: str, suffix: str) -> Path:
    """The file that holds `key` in the cache `cache` (a subfolder of cache_dir())."""
    return cache_dir() / cache / (hashlib.sha256(key.encode()).hexdigest() + suffix)


def read(path: Path) -> bytes | None:
    """The entry's bytes; None when there is none, or (with a warning) when it cannot be read."""
    try:
        return path.read_bytes()
    except (FileNotFoundError, NotADirectoryError):
        return None
    except OSError as err:
        ignore(path, f"it cannot be read: {err.strerror or err}")
        return None


def read_json(cache: str, key: str, what: str) -> tuple[Path, dict[str, Any] | None]:
    """The JSON entry of `key` in `cache` and its file: None when there is none, and (with a warning naming the
    file) when it is not JSON or is not a `what` for this key; the caller validates the rest of its fields."""
    path = entry_path(cache, key, ".json")
    data = read(path)
    if data is None:
        return path, None
    try:
        entry = json.loads(data)
    except ValueError as err:  # not UTF-8 or not JSON (a truncated write, an edit by hand)
        ignore(path, f"it is not JSON ({err})")
        return path, None
    if not isinstance(entry, dict) or entry.get("key") != key:
        ignore(path, f"it is not a {what} for this key")
        return path, None
    return path, entry


def write_json(cache: str, key: str, entry: dict[str, Any]) -> bool:
    """Write `entry` (with its key) as the JSON entry of `key` in `cache`, atomically."""
    return write(entry_path(cache, key, ".json"), json.dumps({**entry, "key": key}, indent=1, sort_keys=True).encode())


def write(path: Path, data: bytes) -> bool:
    """Put `data` in place as the entry at `path` atomically; False when the cache folder cannot be written (the
    result is then only kept in the process)."""
    tmp = None
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=".gemmc-", suffix=".tmp")
        with os.fdopen(fd, "wb") as f:
            f.write(data)
        os.replace(tmp, path)
        return True
    except OSError:
        if tmp is not None:
            with contextlib.suppress(OSError):
                os.unlink(tmp)
        return False


def ignore(path: Path, why: str) -> None:
    """Report an entry that is ignored (and rewritten once its result is computed again)."""
    warnings.warn(f"gemmc: ignoring the cache entry {path}: {why}; it is recomputed and rewritten", CacheWarning,
                  stacklevel=3)
