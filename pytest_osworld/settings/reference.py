"""docs/settings.md, the reference of every setting, rendered from the schema.

``python -m pytest_osworld.settings.reference docs/settings.md`` writes it; tests/settings checks that
the committed page is what this renders. It lives beside the schema so that the page cannot describe
another schema than the installed one.
"""

from __future__ import annotations

import sys
import types
import typing
from pathlib import Path
from typing import Any

from pydantic.fields import FieldInfo
from pydantic_core import PydanticUndefined

from pytest_osworld.settings.layers import (
    CLI_PREFIX,
    INI_PREFIX,
    NESTABLE,
    _is_bool,
    _is_list,
    _is_profile_only,
    old_names,
)
from pytest_osworld.settings.schema import FLAT, GROUPS

COMMAND = "python -m pytest_osworld.settings.reference docs/settings.md"
# Defaults that depend on the machine: shown as a rule, not as this machine's value.
DEFAULT_SHOWN = {"asset_cache": "`$XDG_CACHE_HOME/pytest-osworld/assets` (`~/.cache/...` without it)"}

INTRO = f"""# Settings

Every setting of pytest-osworld, grouped as in `pytest --help`. This page is generated from the
schema (`pytest_osworld/settings/`): after changing a setting, run `{COMMAND}`
(a test fails while the page differs).

Each setting has one flat name, given three ways:

- on the command line, `--osworld-<name>` (underscores as dashes; a yes/no setting also has
  `--osworld-no-<name>`, a repeatable one is given once per value);
- in the ini file (`pytest.ini`, `[tool.pytest.ini_options]`, ...), `osworld_<name> = value`;
- in a YAML profile (`--osworld-profile FILE` or the ini key `osworld_profile`), `<name>: value`
  (dashes allowed). Settings marked *profile only* take structured values and are set there only.

The command line wins over the profile, the profile over the ini file, the ini file over the defaults.
A relative path is taken from where it was written (the invocation folder, the profile's, the ini
file's). An error names the setting as it was written.

A profile may also write a group nested, by the names of the "field" column or by the flat names:

```yaml
model:
  url: http://gpu:8000/v1
  name: my-model
judge: {{url: http://gpu:8000/v1, timeout: 60}}
max_steps: 30        # the flat form, as before
```

The groups {", ".join(f"`{g}`" for g in NESTABLE)} can be nested so. `services:` stays the shared
services' declarations (profile only, [services.md](services.md)): the services group is written flat
(`service_presets`, `service_host_suffix`, ...). `model:`, `sandbox:` and `gate:` with a plain value are
the flat settings (the model's name, the sandbox's, the gate's mode); with a mapping, the group. A
setting given both ways in one profile is an error.

A setting that was renamed keeps its old name as a second spelling, noted in its row: the old option,
ini key and profile key still set it.

In the code a setting is `settings.<group>.<field>` (`settings.model.url`); `Settings(model_url=...)`
and every merge layer take the flat names.

There is no group of the simulated user's own: a V2 task's simulated user asks the judge's model unless
the task's spec or `OSWORLD_USER_SIM_*` say otherwise ([v2-tasks.md](v2-tasks.md)).
"""


def type_name(annotation: Any) -> str:
    """A field's type as a user reads it."""
    if typing.get_origin(annotation) is typing.Annotated:
        base = typing.get_args(annotation)[0]
        return "size (bytes; 4g, 512m)" if getattr(base, "__name__", "") == "int" else type_name(base)
    origin = typing.get_origin(annotation)
    args = typing.get_args(annotation)
    if origin in (typing.Union, types.UnionType):
        kinds = [type_name(a) for a in args if a is not type(None)]
        return " or ".join(kinds) + (" or none" if type(None) in args else "")
    if origin is typing.Literal:
        return "one of " + ", ".join(f"`{a}`" for a in args)
    if origin is list:
        return "list (repeatable)"
    if origin is dict:
        return "mapping"
    names = {bool: "yes/no", int: "integer", float: "number", str: "text", Path: "path"}
    if annotation in names:
        return names[annotation]
    return getattr(annotation, "__name__", str(annotation)).lower()


def default_text(flat: str, info: FieldInfo) -> str:
    if flat in DEFAULT_SHOWN:
        return DEFAULT_SHOWN[flat]
    value = info.default_factory() if info.default_factory is not None else info.default  # type: ignore[call-arg]
    if value is PydanticUndefined or value is None:
        return "none"
    if isinstance(value, bool):
        return "yes" if value else "no"
    if value in ({}, []):
        return "empty"
    return f"`{value}`"


def cell(text: str) -> str:
    return text.replace("|", "\\|").replace("\n", " ")


def render() -> str:
    out = [INTRO]
    out.append("## Groups\n")
    out += [f"- [{group}](#{group}): {model.title}" for group, model in GROUPS.items()]
    for group, model in GROUPS.items():
        out.append(f"\n## {group}\n\n{model.title[0].upper()}{model.title[1:]}.\n")
        out.append("| setting (profile key) | field | option | ini key | type | default | description |")
        out.append("|---|---|---|---|---|---|---|")
        for flat, (in_group, field) in FLAT.items():
            if in_group != group:
                continue
            info = model.model_fields[field]
            if _is_profile_only(flat):
                option, ini = "*profile only*", ""
            else:
                dashed = CLI_PREFIX + flat.replace("_", "-")
                option = f"`{dashed}`" + (f", `{CLI_PREFIX}no-{flat.replace('_', '-')}`" if _is_bool(flat) else "")
                option += " (repeatable)" if _is_list(flat) else ""
                ini = f"`{INI_PREFIX}{flat}`"
            row = [f"`{flat}`", f"`{group}.{field}`", option, ini, type_name(info.annotation)]
            description = info.description or ""
            if old := old_names(flat):
                spelled = ", ".join(f"`{name}`" for name in old)
                description += f" (old name {spelled}: still taken as option, ini key and profile key)"
            row += [default_text(flat, info), description]
            out.append("| " + " | ".join(cell(c) for c in row) + " |")
    return "\n".join(out) + "\n"


def main(argv: list[str]) -> int:
    if len(argv) != 1:
        print(f"usage: {COMMAND}", file=sys.stderr)
        return 2
    Path(argv[0]).write_text(render(), encoding="utf-8")
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
