"""Sorting and searching: sort, argsort, topk, kthvalue, unique, nonzero, searchsorted, ... (see _primitive)."""
from __future__ import annotations
