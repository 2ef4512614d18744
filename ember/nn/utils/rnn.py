"""torch.nn.utils.rnn: padding and packing variable-length sequences.

A ``PackedSequence`` holds the time steps of a batch of sequences sorted by decreasing length, step after step:
``data`` is ``(sum(lengths), *)`` and ``batch_sizes[t]`` says how many sequences are still running at step ``t``.
Packing and unpacking are single gathers (index tensors built with ember's ops), so gradients flow through them.
"""
from __future__ import annotations

from collections.abc import Iterable
from typing import Any, NamedTuple

from ...ops import creation as _creation
from ... import _dtype as D
from ..._tensor import Tensor
from ...ops.reduction import cumsum
from ...ops.shape import broadcast_shapes, cat, stack
from ...ops.sorting import sort

__all__ = ["PackedSequence", "invert_permutation", "pack_padded_sequence", "pad_packed_sequence", "pad_sequence",
           "unpad_sequence", "pack_sequence", "unpack_sequence"]


class PackedSequence_(NamedTuple):
    data: Tensor
    batch_sizes: Tensor
    sorted_indices: Tensor | None
    unsorted_indices: Tensor | None


class PackedSequence(PackedSequence_):
    """The packed form of a batch of sequences (made by ``pack_padded_sequence`` / ``pack_sequence``)."""

    def __new__(cls, data: Tensor, batch_sizes: Tensor | None = None, sorted_indices: Tensor | None = None,
                unsorted_indices: Tensor | None = None) -> PackedSequence:
        if unsorted_indices is None:
            unsorted_indices = invert_permutation(sorted_indices)
        if batch_sizes is None:
            if not (isinstance(data, (list, tuple)) and len(data) == 2):
                raise AssertionError("Expected data to be a list or tuple of length 2")
            data, batch_sizes = data[0], data[1]
        return super().__new__(cls, data, batch_sizes, sorted_indices, unsorted_indices)

    def to(self, *args: Any, **kwargs: Any) -> PackedSequence:
        data = self.data.to(*args, **kwargs)
        if data is self.data:
            return self
        # indices stay int64: only follow the data's device
        move = (lambda t: None if t is None else t.to(data.device))
        return type(self)(data, self.batch_sizes, move(self.sorted_indices), move(self.unsorted_indices))

    def cpu(self, *args: Any, **kwargs: Any) -> PackedSequence:
        return self.to("cpu")

    def pin_memory(self) -> PackedSequence:
        return self

    def double(self) -> PackedSequence:
        return self.to(dtype=D.float64)

    def float(self) -> PackedSequence:
        return self.to(dtype=D.float32)

    def half(self) -> PackedSequence:
        return self.to(dtype=D.float16)

    def long(self) -> PackedSequence:
        return self.to(dtype=D.int64)

    def int(self) -> PackedSequence:
        return self.to(dtype=D.int32)

    def short(self) -> PackedSequence:
        return self.to(dtype=D.int16)

    def char(self) -> PackedSequence:
        return self.to(dtype=D.int8)

    def byte(self) -> PackedSequence:
        return self.to(dtype=D.uint8)

    @property
    def is_cuda(self) -> bool:
        return self.data.is_cuda

    def is_pinned(self) -> bool:
        return False


def invert_permutation(permutation: Tensor | None) -> Tensor | None:
    """The permutation that undoes ``permutation`` (``None`` stays ``None``)."""
    if permutation is None:
        return None
    p = permutation.detach()
    inv = _creation.empty_like(p)
    inv[p] = _creation.arange(p.numel(), dtype=p.dtype, device=p.device)
    return inv


def _int_list(t: Tensor) -> list[int]:
    return [int(v) for v in t.detach().reshape(-1).tolist()]


def pack_padded_sequence(input: Tensor, lengths: Tensor | list[int], batch_first: bool = False,
                         enforce_sorted: bool = True) -> PackedSequence:
    """Packs a padded batch ``(T, B, *)`` (``(B, T, *)`` if ``batch_first``) of sequences of the given lengths."""
    if not isinstance(input, Tensor):
        raise TypeError(f"_pack_padded_sequence(): argument 'input' (position 1) must be Tensor, not "
                        f"{type(input).__name__}")
    if lengths is None:
        raise TypeError("'NoneType' object cannot be interpreted as an integer")
    if not isinstance(lengths, Tensor):
        lengths = _creation.as_tensor(lengths, dtype=D.int64)
    else:
        lengths = lengths.to(dtype=D.int64)
    sorted_indices = None
    if not enforce_sorted:
        lengths, sorted_indices = sort(lengths, descending=True)
        input = input.index_select(0 if batch_first else 1, sorted_indices)
    if lengths.dim() != 1:
        raise RuntimeError(f"'lengths' argument should be a 1D CPU int64 tensor, but got {lengths.dim()}D cpu Long "
                           "tensor")
    if input.numel() == 0:
        raise RuntimeError("Cannot pack empty tensors.")
    lens = _int_list(lengths)
    batch = input.shape[0] if batch_first else input.shape[1]
    if len(lens) != batch:
        raise RuntimeError(f"Expected `len(lengths)` to be equal to batch_size, but got {len(lens)} "
                           f"(batch_size={batch})")
    if lens[-1] <= 0:
        raise RuntimeError("Length of all samples has to be greater than 0, but found an element in 'lengths' "
                           "that is <= 0")
    if any(b > a for a, b in zip(lens, lens[1:])):
        raise RuntimeError("`lengths` array must be sorted in decreasing order when `enforce_sorted` is True. You "
                           "can pass `enforce_sorted=False` to pack_padded_sequence and/or pack_sequence to "
                           "sidestep this requirement if you do not need ONNX exportability.")
    steps = input.shape[1] if batch_first else input.shape[0]
    if lens[0] > steps:
        raise RuntimeError(f"pack_padded_sequence: the longest length {int(lens[0])} exceeds the padded "
                           f"sequence length {steps}")
    # running[t, b]: sequence b still runs at step t; its nonzero entries, step-major, are the packed rows
    running = _creation.arange(lens[0]).unsqueeze(1) < _creation.tensor(lens).unsqueeze(0)
    t_idx, b_idx = running.nonzero(as_tuple=True)
    data = input[(b_idx, t_idx) if batch_first else (t_idx, b_idx)]
    return PackedSequence(data, running.sum(1), sorted_indices, None)


def _running(batch_sizes: list[int]) -> Tensor:
    """(len(batch_sizes), B) booleans: sequence b still runs at step t (``b < batch_sizes[t]``)."""
    sizes = _creation.tensor(batch_sizes, dtype=D.int64)
    return _creation.arange(batch_sizes[0] if batch_sizes else 0).unsqueeze(0) < sizes.unsqueeze(1)


def _padded_index(batch_sizes: list[int], steps: int) -> Tensor:
    """(steps, B): the packed row of each (step, sequence), or the row after the last (the padding row)."""
    n = sum(batch_sizes)
    running = _running(batch_sizes)
    sizes = _creation.tensor(batch_sizes, dtype=D.int64)
    rows = (cumsum(sizes, 0) - sizes).unsqueeze(1) + _creation.arange(running.shape[1]).unsqueeze(0)
    idx = rows.masked_fill(~running, n)
    if steps > len(batch_sizes):   # total_length beyond the longest sequence: padding rows only
        idx = cat([idx, _creation.full((steps - len(batch_sizes), running.shape[1]), n, dtype=D.int64)])
    return idx


def pad_packed_sequence(sequence: PackedSequence, batch_first: bool = False, padding_value: float = 0.0,
                        total_length: int | None = None) -> tuple[Tensor, Tensor]:
    """The inverse of ``pack_padded_sequence``: ``(padded, lengths)`` in the batch's original order."""
    sizes = _int_list(sequence.batch_sizes)
    max_len = len(sizes)
    if total_length is not None:
        if total_length < max_len:
            raise ValueError(f"Expected total_length to be at least the length of the longest sequence in input, "
                             f"but got total_length={total_length} and max sequence length being {max_len}")
        max_len = total_length
    data = sequence.data
    idx = _padded_index(sizes, max_len)
    if batch_first:
        idx = idx.T
    pad_row = data.new_full((1,) + tuple(data.shape[1:]), padding_value)
    padded = cat([data, pad_row])[idx]
    lengths = _running(sizes).sum(0)
    if sequence.unsorted_indices is not None:
        return (padded.index_select(0 if batch_first else 1, sequence.unsorted_indices),
                lengths[sequence.unsorted_indices])
    return padded, lengths


def pad_sequence(sequences: Tensor | list[Tensor], batch_first: bool = False, padding_value: float = 0.0,
                 padding_side: str = "right") -> Tensor:
    """Stacks sequences ``(L_i, *)`` into ``(T, B, *)`` (``(B, T, *)`` if ``batch_first``), padding each to the
    longest on the ``padding_side``."""
    if not isinstance(sequences, Iterable):
        raise RuntimeError(f"pad_sequence: Expected iterable for input sequences, but got arg of type: "
                           f"{type(sequences)}")
    sequences = tuple(sequences)
    for i, s in enumerate(sequences):
        if not isinstance(s, Tensor):
            raise TypeError(f"expected Tensor as element {i} in argument 0, but got {type(s).__name__}")
    if not sequences:
        raise RuntimeError("received an empty list of sequences")
    if padding_side not in ("left", "right"):
        raise RuntimeError(f"Expected padding_side to be one of left or right, but got {padding_side}.")
    if any(s.dim() == 0 for s in sequences):
        raise RuntimeError("ArrayRef: invalid slice, N = 1; size = 0")
    max_len = max(s.shape[0] for s in sequences)
    trailing = tuple(sequences[0].shape[1:])
    first = sequences[0]
    rows = []
    for s in sequences:
        if tuple(s.shape[1:]) != trailing:
            # PyTorch copies each sequence into its slot, broadcasting as a copy does
            s = s.expand(*_copy_shape(tuple(s.shape), (s.shape[0],) + trailing))
        s = s.to(first.dtype)
        gap = max_len - s.shape[0]
        if gap:
            pad = first.new_full((gap,) + trailing, padding_value)
            s = cat([s, pad] if padding_side == "right" else [pad, s])
        rows.append(s)
    return stack(rows, 0 if batch_first else 1)


def _copy_shape(src: tuple, dst: tuple) -> tuple:
    """``dst`` if ``src`` broadcasts to it, else PyTorch's size-mismatch error (dimensions compared from the last)."""
    if len(src) <= len(dst):
        for i in range(1, len(src) + 1):
            if src[-i] not in (1, dst[-i]):
                raise RuntimeError(f"The size of tensor a ({dst[-i]}) must match the size of tensor b ({src[-i]}) "
                                   f"at non-singleton dimension {len(dst) - i}")
        return dst
    try:
        wide = list(broadcast_shapes(src, dst))
    except RuntimeError:
        return _copy_shape(src[len(src) - len(dst):], dst)
    raise RuntimeError(f"output with shape {list(dst)} doesn't match the broadcast shape {wide}")


def unpad_sequence(padded_sequences: Tensor, lengths: Tensor, batch_first: bool = False) -> list[Tensor]:
    """The sequences of a padded batch, each cut to its length. (PyTorch transposes its argument in place when
    ``batch_first`` is False; ember leaves it untouched.)"""
    if not batch_first:
        padded_sequences = padded_sequences.transpose(0, 1)
    return [padded_sequences[i, :n] for i, n in enumerate(_int_list(lengths) if isinstance(lengths, Tensor)
                                                            else [int(v) for v in lengths])]


def pack_sequence(sequences: list[Tensor], enforce_sorted: bool = True) -> PackedSequence:
    """Packs a list of sequences ``(L_i, *)``."""
    lengths = _creation.as_tensor([v.size(0) for v in sequences])
    return pack_padded_sequence(pad_sequence(sequences), lengths, enforce_sorted=enforce_sorted)


def unpack_sequence(packed_sequences: PackedSequence) -> list[Tensor]:
    """The list of sequences a ``PackedSequence`` holds, in their original order."""
    padded, lengths = pad_packed_sequence(packed_sequences, batch_first=True)
    return unpad_sequence(padded, lengths, batch_first=True)
