"""Op database entries of the 'shape' family (collected into op_db.OP_DB)."""
from __future__ import annotations

import numpy as np  # noqa: F401

from op_db import (ALL, BINARY, FLOAT, INT, UNARY, OpInfo, Sample, XFail, binary, draw,  # noqa: F401
                   scalar_samples, unary)

OPS: list = []
HYP_UNARY: list = []    # names of entries whose single input hypothesis draws shapes for
HYP_BINARY: list = []   # names of entries whose two broadcasting inputs hypothesis draws shapes for
