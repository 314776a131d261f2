"""Errand's built-in kinds (``noop``, ``sleep``, ``demo``, ``command``, ``agent``) and the registry
every process starts from: the built-ins, the installed ``errand.kinds`` entry points, and the
modules named in ``ERRAND_EXTRA_KINDS``.

The registry (:mod:`jobs.runtime.registry`) knows nothing of these modules; they register
themselves with its ``@kind`` decorator when imported here.
"""

from __future__ import annotations

import importlib
from collections.abc import Sequence

from jobs.kinds import agent, basic, command, demo
from jobs.runtime.registry import Registry, registry

BUILTIN = (basic, demo, command, agent)
"""The modules whose ``@kind`` decorators registered Errand's built-in kinds."""


def default_registry(extra: str | Sequence[str] = ()) -> Registry:
    """The registry with Errand's built-in kinds, every installed entry point, and ``extra``.

    Args:
        extra: modules to import for their ``@kind`` decorators (``ERRAND_EXTRA_KINDS``, comma
            separated), e.g. a test suite's kinds loaded into a worker subprocess.
    """
    registry.load_entry_points()
    names = extra.split(",") if isinstance(extra, str) else extra
    for module in (n.strip() for n in names):
        if module:
            importlib.import_module(module)
    return registry
