"""Imports only go down: every module of service/ belongs to one layer of LAYERS (top
first) and may import from its own layer and the layers below, never from one above; a
handler never imports another handler. The table is docs/architecture.md's ("Layout"),
read from the file: there is no other copy."""

from __future__ import annotations

import ast
import re
from pathlib import Path

SERVICE = Path(__file__).resolve().parent.parent / "service"
ARCHITECTURE = SERVICE.parent / "docs" / "architecture.md"


def read_layers(text: str) -> list[tuple[str, tuple[str, ...]]]:
    """(layer, module prefixes), top first, from the "layer (top first)" table: each
    backticked path of the modules column, relative to service/, names a module (`x.py`)
    or a whole package (`x/`)."""
    lines = text.splitlines()
    start = next(i for i, line in enumerate(lines) if line.startswith("| layer (top first) |"))
    layers: list[tuple[str, tuple[str, ...]]] = []
    for line in lines[start + 2 :]:
        if not line.startswith("|"):
            break
        cells = [cell.strip() for cell in line.strip().strip("|").split("|")]
        prefixes = []
        for path in re.findall(r"`([^`]+)`", cells[1]):
            path = path.removesuffix("/").removesuffix(".py").removesuffix("/__init__")
            prefixes.append("service." + path.replace("/", "."))
        layers.append((cells[0], tuple(prefixes)))
    return layers


LAYERS = read_layers(ARCHITECTURE.read_text(encoding="utf-8"))


def layer_of(module: str) -> int:
    """The index of the layer of the longest prefix that names `module` or a parent."""
    best: tuple[int, int] | None = None  # (prefix length, layer)
    for index, (_, prefixes) in enumerate(LAYERS):
        for prefix in prefixes:
            if (module == prefix or module.startswith(prefix + ".")) and (
                best is None or len(prefix) > best[0]
            ):
                best = (len(prefix), index)
    if best is None:
        raise LookupError(f"{module} belongs to no layer: add it to LAYERS and the docs")
    return best[1]


def module_name(path: Path) -> str:
    parts = path.relative_to(SERVICE.parent).with_suffix("").parts
    if parts[-1] == "__init__":
        parts = parts[:-1]
    return ".".join(parts)


def imported(tree: ast.AST) -> list[str]:
    """Every service module a file imports, anywhere in it (function-level included)."""
    found: list[str] = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            found += [a.name for a in node.names if a.name.split(".")[0] == "service"]
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            if node.module == "service":
                found += [f"service.{a.name}" for a in node.names]
            elif node.module.startswith("service."):
                found.append(node.module)
    return found


def modules() -> dict[str, list[str]]:
    return {
        module_name(path): imported(ast.parse(path.read_text(), str(path)))
        for path in sorted(SERVICE.rglob("*.py"))
    }


def test_every_module_has_a_layer() -> None:
    unplaced = []
    for module in modules():
        try:
            layer_of(module)
        except LookupError:
            unplaced.append(module)
    assert unplaced == []


def test_imports_only_go_down() -> None:
    upward = [
        f"{module} ({LAYERS[layer_of(module)][0]}) imports {target} ({LAYERS[layer_of(target)][0]})"
        for module, targets in modules().items()
        for target in targets
        if layer_of(target) < layer_of(module)
    ]
    assert upward == []


def test_handlers_do_not_import_handlers() -> None:
    crossing = [
        f"{module} imports {target}"
        for module, targets in modules().items()
        if module.startswith("service.handlers.")
        for target in targets
        if target.startswith("service.handlers")
    ]
    assert crossing == []


def test_no_relative_imports() -> None:
    """The check above reads absolute names only; keep it that way."""
    relative = [
        str(path)
        for path in sorted(SERVICE.rglob("*.py"))
        for node in ast.walk(ast.parse(path.read_text()))
        if isinstance(node, ast.ImportFrom) and node.level > 0
    ]
    assert relative == []


def test_the_check_catches_an_upward_import() -> None:
    tree = ast.parse("from service.usecases.tenants.queries import TenantQueries")
    [target] = imported(tree)
    assert layer_of(target) < layer_of("service.auth.authenticator")
    assert layer_of("service.handlers.tenants") < layer_of("service.http.requests")


def test_the_table_is_read_from_the_docs() -> None:
    names = [name for name, _ in LAYERS]
    assert names[0] == "entry points"
    assert names[-1] == "base"
    assert "service.usecases.registry" in dict(LAYERS)["use case registry"]
    assert "service.usecases" in dict(LAYERS)["use case plumbing"]
