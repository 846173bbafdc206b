"""The layers of the settings, merged CLI > YAML profile > ini > defaults and validated once.

Every setting has one flat name: the CLI option ``--osworld-<name>`` (underscores as dashes), the ini key
``osworld_<name>`` and the profile key ``<name>``; a profile may also write a group nested
(``judge: {url: ...}``, the group's own field names or the flat ones). Settings marked ``profile_only`` take
structured values and are set in the profile only. An error names the key as the user wrote it and where
its value came from.
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Any

import yaml
from pydantic import TypeAdapter, ValidationError
from pydantic.fields import FieldInfo

from pytest_osworld.errors import SettingsError
from pytest_osworld.settings.groups import OLD_NAMES, current_name
from pytest_osworld.settings.schema import FLAT, GROUPS, OSWORLD_LOOP, Settings

CLI_PREFIX = "--osworld-"
INI_PREFIX = "osworld_"
# The groups a profile may write nested: not those whose name is also a flat key taking a mapping
# (``services:`` is the services' declarations).
NESTABLE = tuple(group for group in GROUPS if group not in ("services",))


def field_info(flat: str) -> FieldInfo:
    group, field = FLAT[flat]
    return GROUPS[group].model_fields[field]


def _is_profile_only(name: str) -> bool:
    extra = field_info(name).json_schema_extra
    return isinstance(extra, dict) and bool(extra.get("profile_only"))


def _is_bool(name: str) -> bool:
    return field_info(name).annotation is bool


def _is_list(name: str) -> bool:
    return name in ("docker_host", "service_presets")


def _is_path(name: str) -> bool:
    annotation = field_info(name).annotation
    return annotation is Path or annotation == (Path | None)


def cli_names() -> list[str]:
    return [n for n in FLAT if not _is_profile_only(n)]


def add_options(parser: Any) -> None:
    """Register ``--osworld-*`` options, in one titled group per settings group, and ``osworld_*`` ini keys."""
    general = parser.getgroup(
        "osworld", "pytest-osworld: OSWorld tasks as tests (every setting: docs/settings.md; CLI > profile > ini)"
    )
    general.addoption(
        f"{CLI_PREFIX}profile",
        dest="osworld_profile",
        default=None,
        metavar="FILE",
        help="a YAML profile of settings (CLI > profile > ini > defaults)",
    )
    parser.addini("osworld_profile", "a YAML profile of settings", default=None)
    for group_name, model in GROUPS.items():
        group = parser.getgroup(f"osworld-{group_name}", f"osworld {group_name}: {model.title}")
        for name in cli_names():
            if FLAT[name][0] == group_name:
                _add_option(parser, group, name)


def old_names(name: str) -> list[str]:
    """The old spellings of a setting (flat names it had before a rename), still taken."""
    return [old for old, new in OLD_NAMES.items() if new == name]


def _add_option(parser: Any, group: Any, name: str) -> None:
    spellings = [name, *old_names(name)]
    flags = [CLI_PREFIX + n.replace("_", "-") for n in spellings]
    dest = INI_PREFIX + name
    help_text = field_info(name).description or name
    if _is_bool(name):
        group.addoption(*flags, dest=dest, action="store_true", default=None, help=help_text)
        group.addoption(
            *(CLI_PREFIX + "no-" + n.replace("_", "-") for n in spellings),
            dest=dest,
            action="store_false",
            default=None,
            help=f"do not: {help_text}",
        )
    elif _is_list(name):
        group.addoption(*flags, dest=dest, action="append", default=None, metavar="VALUE", help=help_text)
    else:
        group.addoption(*flags, dest=dest, default=None, metavar="VALUE", help=help_text)
    kind = "linelist" if _is_list(name) else "string"
    parser.addini(dest, help_text, type=kind, default=None)
    for old in old_names(name):
        parser.addini(INI_PREFIX + old, f"old name of {dest}: {help_text}", type=kind, default=None)


def _source_label(source: str, key: str) -> str:
    if source == "cli":
        return CLI_PREFIX + key.replace("_", "-")
    if source == "ini":
        return f"ini key {INI_PREFIX}{key}"
    return f"{source}: {key}"


def _resolve_paths(values: dict[str, Any], base: Path) -> None:
    for key, value in values.items():
        if _is_path(key) and isinstance(value, str | Path) and value != "":
            path = Path(value).expanduser()
            values[key] = path if path.is_absolute() else base / path


class ProfileValues(dict[str, Any]):
    """A profile's settings by flat name; ``spelled`` keeps how the profile wrote a nested one
    (``model_url`` written as ``model: {url: ...}`` is spelled ``model.url``), for its errors."""

    def __init__(self, values: Mapping[str, Any] = {}, spelled: Mapping[str, str] = {}) -> None:
        super().__init__(values)
        self.spelled = dict(spelled)


def read_profile(path: Path) -> ProfileValues:
    """The settings of a YAML profile by flat name, keys checked against the known settings."""
    try:
        data = yaml.safe_load(path.read_text(encoding="utf-8"))
    except OSError as exc:
        raise SettingsError(f"profile {path}: cannot read it: {exc.strerror or exc}") from None
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        where = f"{path}:{mark.line + 1}" if mark else str(path)
        raise SettingsError(f"profile {where}: not valid YAML: {getattr(exc, 'problem', exc)}") from None
    if data is None:
        return ProfileValues()
    if not isinstance(data, dict):
        raise SettingsError(f"profile {path}: expected a mapping of settings, got {type(data).__name__}")
    values = ProfileValues()
    # Profiles may write keys with dashes, as on the command line.
    for key, value in ((str(k).replace("-", "_"), v) for k, v in data.items()):
        # model, sandbox and gate are flat keys of strings too: a mapping there is the group nested.
        pairs = _nested(path, key, value) if key in NESTABLE and isinstance(value, dict) else [(key, key, value)]
        for spelled, written, inner in pairs:
            name = current_name(written)
            if name not in FLAT:
                raise SettingsError(
                    f"profile {path}: unknown setting {spelled!r}"
                    + (f"; did you mean {close!r}?" if (close := _closest(name)) else "")
                )
            if name in values:
                earlier = values.spelled.get(name, name)
                raise SettingsError(f"profile {path}: {spelled} and {earlier} are the same setting; give it once")
            values[name] = inner
            if spelled != name:
                values.spelled[name] = spelled  # a nested key or an old spelling: errors name it as written
    return values


def _nested(path: Path, group: str, entries: dict[Any, Any]) -> list[tuple[str, str, Any]]:
    """A group written nested, as (spelled, flat name, value): its fields by their own names or flat ones."""
    fields = GROUPS[group].model_fields
    pairs = []
    for key, value in entries.items():
        written = str(key).replace("-", "_")
        key = current_name(written)
        if key in fields:
            name = fields[key].alias or key
        elif key in FLAT and FLAT[key][0] == group:
            name = key
        else:
            known = ", ".join(fields)
            raise SettingsError(f"profile {path}: unknown setting {group}.{written} (the {group} group has: {known})")
        pairs.append((f"{group}.{written}", name, value))
    return pairs


def _closest(key: str) -> str | None:
    import difflib

    found = difflib.get_close_matches(key, list(FLAT), n=1)
    return found[0] if found else None


def merge(
    *,
    cli: Mapping[str, Any],
    profile: Mapping[str, Any] | None = None,
    profile_path: Path | None = None,
    ini: Mapping[str, Any] | None = None,
    ini_dir: Path | None = None,
    invocation_dir: Path | None = None,
) -> Settings:
    """Merge the layers (each maps setting name -> raw value) and validate once.

    Relative paths are taken from where they were written: the CLI's from the invocation folder,
    a profile's from the profile's folder, the ini file's from its folder.
    """
    layers: list[tuple[str, dict[str, Any]]] = []
    for source, values, base in (
        ("ini", dict(ini or {}), ini_dir),
        (
            f"profile {profile_path}" if profile_path else "profile",
            dict(profile or {}),
            profile_path.parent if profile_path else None,
        ),
        ("cli", dict(cli), invocation_dir),
    ):
        values = {current_name(key): value for key, value in values.items()}
        if base is not None:
            _resolve_paths(values, base)
        layers.append((source, values))
    merged: dict[str, Any] = {}
    origin: dict[str, str] = {}
    spelled = getattr(profile, "spelled", {})
    level: dict[str, int] = {}
    for rank, (source, values) in enumerate(layers):
        for key, value in values.items():
            merged[key] = value
            origin[key] = source
            level[key] = rank
    if _is_true(merged.get("compat")):
        # compat is a layer of its own just above the one that set it: it overrides the knobs of the
        # layers below (an ini file's max_steps), and one set beside or above it must agree with it.
        for key in [k for k in OSWORLD_LOOP if k in merged and level[k] < level["compat"]]:
            del merged[key]
    try:
        return Settings.model_validate(merged)
    except ValidationError as exc:
        problems = []
        for err in exc.errors(include_url=False):
            if err["type"] == "compat_conflict":
                keys = (err.get("ctx") or {}).get("keys", [])
                where = ", ".join(_source_label(origin.get(k, "default"), k) for k in keys)
                problems.append(f"{_source_label(origin['compat'], 'compat')}: {err['msg']} (given by {where})")
                continue
            key = _flat_key(err["loc"])
            source = origin.get(key, "default")
            label = _source_label(source, spelled.get(key, key) if source.startswith("profile") else key)
            message = err["msg"].removeprefix("Value error, ")
            problems.append(
                f"{label}: {message} (got {err.get('input')!r})"
                if err["type"] != "value_error"
                else f"{label}: {message}"
            )
        raise SettingsError("invalid settings:\n  " + "\n  ".join(problems)) from None


def _flat_key(loc: tuple[int | str, ...]) -> str:
    """The flat name an error is about: a group's field is located (group, flat name, ...)."""
    if len(loc) > 1 and loc[0] in GROUPS:
        return str(loc[1])
    return str(loc[0]) if loc else "?"


def _is_true(value: Any) -> bool:
    """A raw setting value read as pydantic reads a bool ("yes", "1", True); an invalid one as false
    (validation then names it)."""
    try:
        return TypeAdapter(bool).validate_python(value) if value is not None else False
    except ValidationError:
        return False


def from_pytest_config(config: Any) -> Settings:
    """Build the settings from a pytest ``Config``: its options, its ini file and the profile."""
    cli = {
        name: config.getoption(INI_PREFIX + name)
        for name in cli_names()
        if config.getoption(INI_PREFIX + name) is not None
    }
    ini: dict[str, Any] = {}
    for name in cli_names():
        for spelling in (name, *old_names(name)):  # the current name first: it wins over an old spelling
            value = config.getini(INI_PREFIX + spelling)
            if value not in (None, "", []):  # an empty ini value is the same as none
                ini[name] = value
                break
    ini_dir = Path(config.inipath).parent if config.inipath else Path(config.rootpath)
    invocation_dir = Path(config.invocation_params.dir)
    profile_arg = config.getoption("osworld_profile")
    profile_path: Path | None = None
    if profile_arg:
        profile_path = Path(profile_arg).expanduser()
        if not profile_path.is_absolute():
            profile_path = invocation_dir / profile_path
    elif config.getini("osworld_profile"):
        profile_path = ini_dir / Path(config.getini("osworld_profile")).expanduser()
    profile = read_profile(profile_path) if profile_path else None
    return merge(
        cli=cli, profile=profile, profile_path=profile_path, ini=ini, ini_dir=ini_dir, invocation_dir=invocation_dir
    )
