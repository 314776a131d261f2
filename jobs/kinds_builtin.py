"""Registers the runtime's built-in kinds: ``demo``, ``command`` and ``agent``."""

from __future__ import annotations

import jobs.agent
import jobs.command
import jobs.demo

__all__ = ["jobs"]
