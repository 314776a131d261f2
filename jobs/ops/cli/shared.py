"""What every ``errand`` command shares: one-line errors and their exit codes, the bounds of what
a person types, the engine a one-shot command runs against, the answer it prints, and the console
script that runs them all (:class:`Cli`).

Bad input (unknown id, bad params, an illegal transition) exits with code 2 and one line on
stderr, and changes nothing; a database that cannot be reached, or refuses, exits with code 1.
"""

from __future__ import annotations

import asyncio
import json
import sys
from collections.abc import Awaitable, Callable
from typing import TYPE_CHECKING, Annotated, Any, NoReturn, TypeVar, cast
from urllib.parse import parse_qsl, urlsplit

import asyncpg
import typer

import jobs.limits as limits
from jobs.engine.db import UNAVAILABLE
from jobs.errors import DatabaseUnavailable, ErrandError, Refused, UnknownKind
from jobs.secrets import scrub

if TYPE_CHECKING:
    from jobs.ops.app import Engine
    from jobs.runtime.registry import Registry
    from jobs.settings import Settings

T = TypeVar("T")

JsonOpt = Annotated[bool, typer.Option("--json", help="Print one JSON object.")]


def fail(message: str, code: int = 2) -> NoReturn:
    """One clear line on stderr, exit code 2 (bad input) unless told otherwise."""
    typer.echo(f"error: {' '.join(message.split())}", err=True)
    raise typer.Exit(code)


def with_engine(fn: Callable[[Engine], Awaitable[T]], *, kinds: bool = False) -> T:
    """Run ``fn`` against a migrated engine; engine errors become exit code 2.

    A database that cannot be reached, or one that refuses the request, is one line naming it
    (exit code 1), never a traceback. ``kinds``: load the registry of kinds (submit, resolve);
    other commands skip importing them.
    """
    from jobs.ops.app import load_settings, open_engine

    settings = load_settings(quiet=True)
    registry = None if kinds else cast("Registry", _NoKinds())

    async def main() -> T:
        # One-shot commands do not wait for a database that is down: they say so at once.
        async with open_engine(settings, registry=registry, pool_max=2, wait=0) as engine:
            return await fn(engine)

    try:
        return asyncio.run(main())
    except (Refused, ValueError) as exc:
        fail(str(exc))
    except _UNREACHABLE as exc:
        cause = exc.__cause__ if isinstance(exc, DatabaseUnavailable) and exc.__cause__ else exc
        fail(
            f"cannot reach the database ({database_name(settings)}): "
            f"{type(cause).__name__}: {one_line(cause)}",
            code=1,
        )
    except asyncpg.PostgresError as exc:
        fail(f"the database refused the request ({type(exc).__name__}): {one_line(exc)}", code=1)


_UNREACHABLE: tuple[type[BaseException], ...] = (DatabaseUnavailable, *UNAVAILABLE)


def one_line(exc: BaseException) -> str:
    """An error's message on one short line, secrets masked."""
    return scrub(" ".join(str(exc).split()))[:300] or type(exc).__name__


def database_name(settings: Settings) -> str:
    """Where the database is, without its password."""
    if settings.db.url is None:
        return f"embedded PostgreSQL in {settings.db.data_dir}"
    dsn = settings.db.url.get_secret_value()
    try:
        parts = urlsplit(dsn)
        host = parts.hostname or dict(parse_qsl(parts.query)).get("host", "localhost")
        port = f":{parts.port}" if parts.port else ""
        user = f"{parts.username}@" if parts.username else ""
        return f"{parts.scheme}://{user}{host}{port}{parts.path}"
    except ValueError:
        return "DATABASE_URL (unparsable)"


def checked(thunk: Callable[[], T]) -> T:
    """The value of a bounds check (jobs.limits); a refusal is one line and exit code 2."""
    try:
        return thunk()
    except ErrandError as exc:
        fail(str(exc))


def text_arg(name: str, value: str, limit: int = limits.MAX_NAME) -> str:
    """A text input within its bounds (no NUL, at most ``limit``), else exit code 2."""
    return checked(lambda: limits.text(name, value, limit))


def job_id_arg(value: str) -> str:
    return text_arg("job id", value, limits.MAX_JOB_ID)


class _NoKinds:
    """The registry of a command that never looks a kind up (status, list, cancel, show...):
    the kinds and the handler runtime they import are never loaded."""

    def get(self, name: str) -> NoReturn:
        raise UnknownKind(name, [])

    def find(self, name: str) -> None:
        """No kind is known here: a kind's declared limits are not read (``job status`` shows
        the limit an operator set; ``errand kind list`` loads the kinds and shows both)."""

    def names(self) -> list[str]:
        return []


def emit(obj: dict[str, Any], as_json: bool, text: str) -> None:
    """Print the answer; a registered secret never reaches the terminal, whatever it holds."""
    out = json.dumps(obj, default=str) if as_json else text
    typer.echo(scrub(out, patterns=False))


class Cli(typer.Typer):
    """A console script: a typer app that :meth:`run` runs as Errand's commands run."""

    def run(self, *, fast_exit: bool = False) -> NoReturn:
        """Run the command line; a usage error (bad option, missing argument) is one line and
        exit 2, and so is an :class:`~jobs.errors.ErrandError` a command raises (a bad token,
        options that do not fit together): its message is written for the person.

        ``fast_exit``: end the process through :func:`~jobs.exits.exit_now` (an entry point's
        own ``main``); otherwise through ``SystemExit``, so a caller's cleanup and
        ``pytest.raises`` still work.
        """
        from typer.exceptions import TyperException

        from jobs.exits import exit_now

        def end(code: int) -> NoReturn:
            if fast_exit:
                exit_now(code)
            sys.exit(code)

        try:
            code = self(standalone_mode=False)
        except TyperException as exc:  # typer's (vendored click's) usage and parameter errors
            message = " ".join(exc.format_message().split())
            if message:  # empty when the help was shown (no arguments at all)
                typer.echo(f"error: {message} (see --help)", err=True)
            end(exc.exit_code or 2)
        except (KeyboardInterrupt, typer.Abort):
            sys.exit(130)
        except Exception as exc:  # never a traceback: one line, and the log has the details
            if isinstance(exc, ErrandError) and not isinstance(exc, DatabaseUnavailable):
                typer.echo(f"error: {one_line(exc)}", err=True)
                end(2)
            typer.echo(f"error: internal error: {type(exc).__name__}: {one_line(exc)}", err=True)
            end(1)
        end(code if isinstance(code, int) else 0)
