"""The table of options: each field of Settings (service/settings/options.py) that the
environment sets is declared once, on the field, with one of the functions below. The
declaration holds the environment name, the default, the bounds, the reader kind and
whether the value is secret; Settings.from_env reads every declared field in one loop.

An option marked `derived` is read by from_env's own code because its default or its
check depends on another option (secrets, regions, algorithms...); that code still takes
the name, default and bounds from here (`option_of`).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field, fields
from pathlib import Path
from typing import Any, Literal, TypeVar

from service.base.durations import parse_duration
from service.settings.reader import EnvironmentReader, IPNetwork

Kind = Literal[
    "integer", "number", "boolean", "text", "optional", "path", "duration", "choice",
    "subset", "cidrs", "names", "keys", "derived",
]  # fmt: skip
_S = TypeVar("_S", bound=str)
_T = TypeVar("_T")


@dataclass(frozen=True, slots=True)
class Option:
    """One row of the table."""

    env: str
    kind: Kind
    # What an unset variable gives, as the environment would write it for durations
    # and lists (the field's own default is that text read).
    default: Any
    low: float = 0
    high: float = 0
    allowed: tuple[str, ...] = ()
    lower: bool = False
    # The default under SERVICE_ENV=production, when it differs (None: the same).
    production: Any = None
    # Never shown: the field is left out of the repr of Settings.
    secret: bool = False

    def read(self, reader: EnvironmentReader, *, production: bool = False) -> object:
        default = self.production if production and self.production is not None else self.default
        match self.kind:
            case "integer":
                return reader.integer(self.env, default, int(self.low), int(self.high))
            case "number":
                return reader.number(self.env, default, self.low, self.high)
            case "boolean":
                return reader.boolean(self.env, default)
            case "text":
                return reader.text(self.env, default)
            case "optional":
                return reader.optional(self.env)
            case "path":
                return Path(reader.text(self.env, default))
            case "duration":
                return reader.duration(self.env, default)
            case "choice":
                return reader.choice(self.env, self.allowed, default, lower=self.lower)
            case "subset":
                return reader.subset(self.env, self.allowed, default)
            case "cidrs":
                return reader.cidrs(self.env)
            case "names":
                return split_names(reader.text(self.env, default))
            case "keys":
                return reader.previous_keys(self.env)
        raise TypeError(f"{self.env} is read by Settings.from_env's own code ({self.kind})")


def split_names(value: str) -> tuple[str, ...]:
    """A comma-separated list, each part stripped, empty parts dropped."""
    return tuple(part.strip() for part in value.split(",") if part.strip())


# The key of a declared field's metadata that holds its Option.
_METADATA_KEY = "option"


def _declare(value: _T, option: Option) -> _T:
    return field(default=value, repr=not option.secret, metadata={_METADATA_KEY: option})


def integer(env: str, default: int, low: int, high: int) -> int:
    return _declare(default, Option(env, "integer", default, low, high))


def number(env: str, default: float, low: float, high: float) -> float:
    return _declare(default, Option(env, "number", default, low, high))


def boolean(env: str, default: bool, *, production: bool | None = None) -> bool:
    return _declare(default, Option(env, "boolean", default, production=production))


def text(env: str, default: str) -> str:
    return _declare(default, Option(env, "text", default))


def optional(env: str, *, secret: bool = False) -> str | None:
    return _declare(None, Option(env, "optional", None, secret=secret))


def path(env: str, default: str) -> Path:
    return _declare(Path(default), Option(env, "path", default))


def duration(env: str, default: str) -> int:
    """Duration text (`90`, `30s`, `1 minute`, `2 hours`) read as seconds."""
    return _declare(parse_duration(default), Option(env, "duration", default))


def choice(env: str, allowed: tuple[_S, ...], default: _S, *, lower: bool = False) -> _S:
    return _declare(default, Option(env, "choice", default, allowed=allowed, lower=lower))


def subset(
    env: str, allowed: tuple[str, ...], default: tuple[str, ...], *, production: tuple[str, ...]
) -> tuple[str, ...]:
    """A comma-separated, non-empty subset of allowed."""
    option = Option(env, "subset", default, allowed=allowed, production=production)
    return _declare(default, option)


def cidrs(env: str) -> tuple[IPNetwork, ...]:
    return _declare((), Option(env, "cidrs", ""))


def names(env: str, default: str, *, secret: bool = False) -> tuple[str, ...]:
    """A comma-separated list of names (or URLs)."""
    return _declare(split_names(default), Option(env, "names", default, secret=secret))


def keys(env: str) -> tuple[bytes, ...]:
    """Comma-separated base64 encryption keys: always secret."""
    return _declare((), Option(env, "keys", "", secret=True))


def derived(env: str, default: _T, *, low: float = 0, high: float = 0, secret: bool = False) -> _T:
    """Read by Settings.from_env's own code, which takes the name, default and bounds from
    here."""
    return _declare(default, Option(env, "derived", default, low, high, secret=secret))


def options_of(settings_class: type) -> Mapping[str, Option]:
    """Field name -> Option, in field order, for every declared field."""
    return {
        f.name: f.metadata[_METADATA_KEY]
        for f in fields(settings_class)
        if _METADATA_KEY in f.metadata
    }


def option_of(settings: object, name: str) -> Option:
    """The declaration of one field of a Settings object."""
    return options_of(type(settings))[name]


def read_options(
    reader: EnvironmentReader, options: Mapping[str, Option], *, production: bool
) -> dict[str, object]:
    """Every option that is not derived, read by its kind."""
    return {
        name: option.read(reader, production=production)
        for name, option in options.items()
        if option.kind != "derived"
    }
