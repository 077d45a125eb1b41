"""The privacy-path rule's OS-randomness criterion: every module that draws the OS's randomness
(keys, nonces, challenges, salts, tokens, temporary names) is on the list; ``federated.deploy``
(starting Flower's processes for users) is not, because it draws none: its process marker needs
to be unique, not secret."""

from __future__ import annotations

import ast
import os
from pathlib import Path

import pytest

from ldp_plugin.federated import deploy
from ldp_plugin.verification.privacy_paths import SOURCES, _VERIFIER, _module_name, privacy_path_modules

ROOT = Path(__file__).resolve().parents[2]
#: modules known to draw the OS's randomness (what for): the scan below must find them all
DRAWS = {
    "ldp_plugin.federated.device": "device keys without a keystore",
    "ldp_plugin.federated.work": "user keys",
    "ldp_plugin.federated.nonces": "the nonce table's salt",
    "ldp_plugin.federated.envelope": "report nonces",
    "ldp_plugin.federated.keystore": "the keystore's master key",
    "ldp_plugin.federated.ingest": "bearer tokens",
    "ldp_plugin.federated.app": "registration challenges",
    "ldp_plugin.federated.shuffler": "batch ids",
    "ldp_plugin.federated.analyzer": "staging names",
    "ldp_plugin.federated.atomic": "temporary names",
    "ldp_plugin.accountant.ledger": "temporary names",
}


@pytest.fixture(scope="module")
def selected():
    return privacy_path_modules()


def _draws(path: Path) -> bool:
    """Whether the source calls ``os.urandom`` or uses the ``secrets`` module."""
    text = path.read_text(encoding="utf-8")
    if "urandom" not in text and "secrets" not in text:  # neither name: nothing to parse
        return False
    tree = ast.parse(text)
    return any((isinstance(n, ast.Attribute) and n.attr == "urandom") or (isinstance(n, ast.Name) and n.id == "secrets") for n in ast.walk(tree))


def test_every_module_drawing_os_randomness_is_on_the_list(selected):
    drawing = set()
    for src in SOURCES:
        for path in (ROOT / src).rglob("*.py"):
            mod = _module_name(src, path.relative_to(ROOT / src))
            if not mod.startswith(_VERIFIER) and _draws(path):
                drawing.add(mod)
    assert set(DRAWS) <= drawing
    assert drawing <= set(selected)


def test_deploy_draws_no_randomness_and_is_not_on_the_list(selected):
    assert "ldp_plugin.federated.deploy" not in selected
    assert not _draws(Path(deploy.__file__))


def test_the_process_marker_is_unique_per_spawn():
    markers = {deploy._new_marker() for _ in range(1000)}
    assert len(markers) == 1000 and all(m.startswith(f"{os.getpid()}-") for m in markers)


def test_a_module_drawing_a_short_hex_name_is_still_selected(tmp_path):
    (tmp_path / "ldp_plugin").mkdir()
    (tmp_path / "ldp_plugin" / "marker.py").write_text("import os\n\n\ndef marker():\n    return os.urandom(12).hex()\n")
    assert "ldp_plugin.marker" in privacy_path_modules(tmp_path)
