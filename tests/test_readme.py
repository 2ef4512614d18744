"""The README's op table is generated (tools/op_table.py): it must be what the registry and the op database
say today, so the table stays true as ops are added."""
import os
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(ROOT, "tools"))

import op_table  # noqa: E402


def test_the_op_table_in_the_readme_is_up_to_date():
    with open(os.path.join(ROOT, "README.md")) as f:
        content = f.read()
    i, j = content.index(op_table.BEGIN), content.index(op_table.END)
    assert content[i + len(op_table.BEGIN):j].strip() == op_table.table().strip(), \
        "README.md's op table is stale: run `python tools/op_table.py --write`"
