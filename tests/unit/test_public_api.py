"""The public API (``jobs/__init__.py``): every exported name is the object its module defines,
however the modules were imported before."""

from __future__ import annotations

import importlib
import subprocess
import sys

import jobs


def test_every_public_name_is_the_object_its_module_defines() -> None:
    """After every defining module has been imported directly (which sets a submodule such as
    ``jobs.supervise`` as an attribute of the package), each name in ``jobs.__all__`` is still
    the class, function or constant, never a module."""
    wrong = {}
    for name in jobs.__all__:
        module = importlib.import_module(jobs._EXPORTS[name])
        expected = getattr(module, jobs._RENAMED.get(name, name))
        if getattr(jobs, name) is not expected:
            wrong[name] = getattr(jobs, name)
    assert wrong == {}
    assert sorted(jobs.__all__) == sorted(jobs._EXPORTS)


def test_a_name_shared_with_its_module_means_the_function_in_a_fresh_process() -> None:
    """In a new interpreter, importing ``jobs.supervise`` and ``jobs.backoff`` first (as the
    worker does) leaves ``from jobs import supervise, backoff`` meaning the functions."""
    code = (
        "import jobs.supervise, jobs.backoff, jobs.runtime.worker\n"
        "from jobs import backoff, supervise\n"
        "print(callable(backoff), callable(supervise), type(supervise).__name__)\n"
    )
    ran = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert ran.stdout.split() == ["True", "True", "function"]
