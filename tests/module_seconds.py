"""The measured seconds of each test module, so that ``pytest -n 2 --dist loadscope`` hands the
longest modules out first (``conftest.pytest_collection_modifyitems``): a long module started last
would leave one worker alone at the end of the run.

Regenerate from a run's JUnit XML (the weights are relative; a loaded machine scales them all)::

    python3 -m pytest -n 2 --dist loadscope --junitxml=/tmp/run.xml
    python3 tests/module_seconds.py /tmp/run.xml
"""

from __future__ import annotations

import collections
import json
import sys
import xml.etree.ElementTree as ET
from pathlib import Path

#: the weights file beside this module
WEIGHTS = Path(__file__).with_name("module_seconds.json")


def module_of(classname: str, file_attr: str | None) -> str:
    """The test module's path (``tests/x/test_y.py``) of a JUnit test case."""
    if file_attr:
        return file_attr
    parts = classname.split(".")
    cut = next((i for i, p in enumerate(parts) if p.startswith("test_")), len(parts) - 1)
    return "/".join(parts[: cut + 1]) + ".py"


def weights_from_junit(path: str) -> dict:
    """Seconds per module (rounded, only modules of at least one second)."""
    seconds: collections.Counter = collections.Counter()
    for case in ET.parse(path).iter("testcase"):
        seconds[module_of(case.get("classname", ""), case.get("file"))] += float(case.get("time", 0))
    return {m: round(s) for m, s in sorted(seconds.items(), key=lambda kv: -kv[1]) if s >= 1}


def load() -> dict:
    """The checked-in weights (empty when the file is absent: file order then)."""
    return json.loads(WEIGHTS.read_text(encoding="utf-8")) if WEIGHTS.exists() else {}


if __name__ == "__main__":
    WEIGHTS.write_text(json.dumps(weights_from_junit(sys.argv[1]), indent=1) + "\n", encoding="utf-8")
