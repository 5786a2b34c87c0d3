"""Running ``async def`` tests without a plugin: each in a fresh event loop."""

from __future__ import annotations

import asyncio
import functools
from collections.abc import Callable, Coroutine
from typing import Any, ParamSpec

P = ParamSpec("P")


def run_async(test: Callable[P, Coroutine[Any, Any, None]]) -> Callable[P, None]:
    """``test`` as a plain test function that runs it with ``asyncio.run`` (pytest still
    sees its parameters, so fixtures reach it)."""

    @functools.wraps(test)
    def run(*args: P.args, **kwargs: P.kwargs) -> None:
        asyncio.run(test(*args, **kwargs))

    return run
