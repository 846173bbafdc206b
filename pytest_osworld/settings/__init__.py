"""The run's settings: the schema in groups (``groups.py``, ``infrastructure.py``, ``schema.py``) and the
layers that set them (``layers.py``: options, ini keys, the profile, the merge). docs/settings.md lists
every setting."""

from pytest_osworld.settings.groups import TASK_OVERRIDABLE
from pytest_osworld.settings.infrastructure import OSWORLD_VM_IMAGE, ServiceRegistry, use_service_registry
from pytest_osworld.settings.layers import (
    CLI_PREFIX,
    INI_PREFIX,
    add_options,
    cli_names,
    from_pytest_config,
    merge,
    read_profile,
)
from pytest_osworld.settings.schema import FLAT, GROUPS, OSWORLD_LOOP, Settings

__all__ = [
    "CLI_PREFIX",
    "FLAT",
    "GROUPS",
    "INI_PREFIX",
    "OSWORLD_LOOP",
    "OSWORLD_VM_IMAGE",
    "TASK_OVERRIDABLE",
    "ServiceRegistry",
    "Settings",
    "add_options",
    "cli_names",
    "from_pytest_config",
    "merge",
    "read_profile",
    "use_service_registry",
]
