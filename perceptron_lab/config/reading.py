"""Config files: strict YAML reading under a size cap, ``extends`` resolution with the origin of
every key (so a problem names the file that set it)."""

from __future__ import annotations

import os
import stat
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import yaml

from perceptron_lab import constants as C
from perceptron_lab.config.checks import INVALID, _show
from perceptron_lab.config.schema import MAX_CONFIG_BYTES, PACKAGE_CONFIG_DIR, SECTIONS


# =========================================================================== YAML and extends

#: What ``extends`` does, as ``plab config docs`` and the configuration reference say it (the key is
#: resolved here, before the schema sees the config, so it has no row of its own in the schema).
EXTENDS_DOC = ("Base configs merged before this file's own keys: a file name or a list of them, paths relative "
               "to this file, '" + C.PACKAGE_CONFIG_PREFIX + "NAME.yaml' for a config shipped with plab (plab configs "
               "lists them). Mappings merge key by key, this file winning; any other value, lists included, is "
               "replaced whole; a later base in the list wins over an earlier one. A base's name and paper are "
               "never inherited.")
EXTENDS_TYPE = "a file name or a list of file names"


class _StrictLoader(yaml.SafeLoader):
    """SafeLoader that records every duplicate key of a mapping instead of keeping the last."""

    def __init__(self, stream):
        super().__init__(stream)
        self.duplicates: list[tuple[Any, Any, Any]] = []

    def construct_mapping(self, node, deep=False):
        if isinstance(node, yaml.MappingNode):
            seen: dict[Any, Any] = {}
            for key_node, _ in node.value:
                if key_node.tag == "tag:yaml.org,2002:merge":
                    continue
                key = self.construct_object(key_node, deep=True)
                try:
                    first = seen.setdefault(key, key_node.start_mark)
                except TypeError:  # unhashable; SafeLoader reports it below
                    continue
                if first is not key_node.start_mark:
                    self.duplicates.append((key, key_node.start_mark, first))
        return super().construct_mapping(node, deep=deep)


@dataclass(frozen=True)
class _Source:
    label: str  # how messages name the file
    path: Path


def _one_line(text: Any) -> str:
    return " ".join(str(text).split())


def _read_yaml(src: _Source, problems: list[str]) -> Any:
    """The parsed content of ``src``; records a problem and returns INVALID when it has none."""
    def fail(text: str) -> Any:
        problems.append(f"{src.label}: {text}")
        return INVALID

    try:
        st = src.path.stat()
        if stat.S_ISDIR(st.st_mode):
            return fail("is a directory, not a config file")
        if not stat.S_ISREG(st.st_mode):
            return fail("is not a regular file (a device, FIFO or socket); a config is a YAML text file")
        if st.st_size > MAX_CONFIG_BYTES:
            return fail(f"is {st.st_size} bytes; a config is at most {MAX_CONFIG_BYTES} bytes")
        with open(src.path, "rb") as fh:
            raw = fh.read(MAX_CONFIG_BYTES + 1)
        if len(raw) > MAX_CONFIG_BYTES:
            return fail(f"is larger than {MAX_CONFIG_BYTES} bytes; a config is at most that")
    except FileNotFoundError:
        return fail("file not found")
    except IsADirectoryError:
        return fail("is a directory, not a config file")
    except (OSError, ValueError) as e:  # ValueError: a NUL character in the path
        return fail(f"cannot read file ({_one_line(getattr(e, 'strerror', None) or e)})")
    try:
        text = raw.decode("utf-8-sig")
    except UnicodeDecodeError as e:
        line = raw[: e.start].count(b"\n") + 1
        return fail(f"line {line}: not UTF-8 text (byte 0x{raw[e.start]:02x}); a config is a YAML text file")
    loader = None
    try:
        loader = _StrictLoader(text)  # the reader checks every character here
        data = loader.get_single_data()
    except yaml.MarkedYAMLError as e:
        mark = e.problem_mark or e.context_mark
        where = f"line {mark.line + 1}, column {mark.column + 1}: " if mark else ""
        what = e.problem or e.context
        if e.problem and e.context and not e.context.startswith("while "):
            what = f"{e.context}, {e.problem}"  # e.g. "expected a single document ..., but found another"
        return fail(f"{where}invalid YAML: {_one_line(what)}")
    except yaml.reader.ReaderError as e:
        line = text[: e.position].count("\n") + 1
        return fail(f"line {line}: not a text file (character {chr(e.character)!r} cannot appear in YAML)"
                    if isinstance(e.character, int) else f"line {line}: {_one_line(e.reason)}")
    except yaml.YAMLError as e:
        return fail(f"invalid YAML: {_one_line(e)}")
    except (ValueError, TypeError, AttributeError, OverflowError) as e:
        # e.g. '!!int abc' or '!!timestamp foo': SafeLoader converts the tagged value and fails
        return fail(f"invalid YAML value ({_one_line(e) or type(e).__name__})")
    finally:
        if loader is not None:
            loader.dispose()
    if loader.duplicates:
        for key, mark, first in sorted(loader.duplicates, key=lambda d: (d[1].line, d[1].column)):
            problems.append(f"{src.label}: line {mark.line + 1}: duplicate key {_show(key)} "
                            f"(first given on line {first.line + 1})")
        return INVALID
    if data is None:
        return fail("file is empty; a config needs at least a dataset section, e.g. dataset: {name: sonar}")
    if not isinstance(data, dict):
        return fail(f"top level must be a mapping of sections ({', '.join(SECTIONS)}), "
                    f"got {_show(data)} ({type(data).__name__})")
    return data


def _package_source(name: str) -> _Source | None:
    rel = name[len(C.PACKAGE_CONFIG_PREFIX):]
    parts = Path(rel).parts
    if not rel or Path(rel).is_absolute() or ".." in parts or rel.startswith(("/", "\\")):
        return None
    return _Source(f"{C.PACKAGE_CONFIG_PREFIX}{Path(rel).as_posix()}", PACKAGE_CONFIG_DIR / rel)


def _base_source(name: str, child: _Source) -> _Source | None:
    if name.startswith(C.PACKAGE_CONFIG_PREFIX):
        return _package_source(name)
    path = child.path.parent / name
    try:
        rel = path.resolve().relative_to(PACKAGE_CONFIG_DIR)
        label = f"{C.PACKAGE_CONFIG_PREFIX}{rel.as_posix()}"
    except ValueError:
        label = os.path.normpath(os.path.join(os.path.dirname(child.label), name)) \
            if not child.label.startswith(C.PACKAGE_CONFIG_PREFIX) else os.path.normpath(path)
    return _Source(label, path)


def _origins(data: Mapping, label: str, prefix: tuple = ()) -> dict[tuple, str]:
    out = {}
    for key, value in data.items():
        path = prefix + (str(key),)
        out[path] = label
        if isinstance(value, Mapping):
            out.update(_origins(value, label, path))
    return out


def _merge(base: dict, base_o: dict, child: Mapping, child_o: dict, prefix: tuple = ()) -> tuple[dict, dict]:
    """Deep-merge ``child`` over ``base`` (mappings merge, anything else is replaced)."""
    out, origins = dict(base), base_o if prefix else dict(base_o)
    for key, value in child.items():
        path = prefix + (str(key),)
        if isinstance(out.get(key), Mapping) and isinstance(value, Mapping):
            out[key], _ = _merge(out[key], origins, value, child_o, path)
            origins[path] = child_o.get(path, origins.get(path))
        else:
            out[key] = value
            for p in [p for p in origins if p[: len(path)] == path]:
                del origins[p]
            origins.update({p: f for p, f in child_o.items() if p[: len(path)] == path})
    return out, origins


def _resolve(data: dict, src: _Source, chain: tuple, problems: list[str]) -> Any:
    """``data`` with its ``extends`` merged in, or INVALID after recording why not."""
    data = dict(data)
    origins = _origins(data, src.label)
    if "extends" not in data:
        return data, origins
    extends = data.pop("extends")
    origins.pop(("extends",), None)
    names = [extends] if isinstance(extends, str) else extends
    if not isinstance(names, list) or not all(isinstance(n, str) and n.strip() for n in names):
        kind = "" if isinstance(extends, (str, list)) or extends is None else f" ({type(extends).__name__})"
        problems.append(f"{src.label}: extends must be a file name or a list of file names, "
                        f"got {_show(extends)}{kind}")
        return INVALID
    merged: dict = {}
    merged_o: dict = {}
    ok = True
    for name in names:
        base = _base_source(name, src)
        if base is None:
            problems.append(f"{src.label}: extends {name!r}: a packaged config is named like "
                            f"'{C.PACKAGE_CONFIG_PREFIX}quickstart.yaml'")
            ok = False
            continue
        try:
            key, exists = base.path.resolve(), base.path.exists()
        except (OSError, ValueError) as e:
            problems.append(f"{src.label}: extends {name!r}: cannot read {base.label} ({_one_line(e)})")
            ok = False
            continue
        if key in [k for k, _ in chain]:
            cycle = " -> ".join([label for _, label in chain] + [base.label])
            problems.append(f"{src.label}: extends {name!r} makes a cycle: {cycle}")
            ok = False
            continue
        if not exists:
            problems.append(f"{src.label}: extends {name!r}, but {base.label} does not exist")
            ok = False
            continue
        content = _read_yaml(base, problems)
        result = INVALID if content is INVALID else \
            _resolve(content, base, chain + ((key, base.label),), problems)
        if result is INVALID:
            ok = False
            continue
        base_data, base_o = result
        for own in ("name", "paper"):  # a config's name, and the paper table it reproduces, are its own
            base_data.pop(own, None)
            base_o.pop((own,), None)
        merged, merged_o = _merge(merged, merged_o, base_data, base_o)
    if not ok:
        return INVALID
    return _merge(merged, merged_o, data, origins)


