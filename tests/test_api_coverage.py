"""tools/api_coverage.py --check: every public name of the namespaces it surveys (torch, torch.Tensor, nn.functional, ...,
distributions, profiler, onnx) is built, or listed (omitted, planned or not yet built) with its reason; so a change that
removes a name, or builds one and leaves its line in a table, fails here."""
from __future__ import annotations

import os
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "tools"))
import api_coverage  # noqa: E402


def test_every_public_name_is_built_or_listed():
    rows = api_coverage.survey()
    missing = {r["label"]: r["missing"] for r in rows if r["missing"]}
    stale = {r["label"]: r["stale"] for r in rows if r["stale"]}
    assert not missing, f"neither built nor listed in tools/api_coverage.py: {missing}"
    assert not stale, f"built, so delete their lines from tools/api_coverage.py's tables: {stale}"


def test_tables_have_reasons():
    for table in (api_coverage.OMITTED, api_coverage.PLANNED, api_coverage.NOT_YET):
        for name, reason in table.items():
            assert isinstance(reason, str) and len(reason) > 10, name


def test_readme_table_is_up_to_date():
    with api_coverage.warnings.catch_warnings():
        api_coverage.warnings.simplefilter("ignore")
        content, new = api_coverage.readme_with(api_coverage.markdown(api_coverage.survey()))
    assert content == new, "README.md's API coverage table is stale: run `python tools/api_coverage.py --write`"
