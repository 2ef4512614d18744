"""torch.func: composable function transforms (vmap, grad, vjp, jvp, jacrev, jacfwd, hessian, linearize) and the
functional use of modules (functional_call, stack_module_state)."""
from __future__ import annotations

from . import _autograd_function  # noqa: F401  (Function.apply's rules under vmap)
from ._eager import grad, grad_and_value, hessian, jacfwd, jacrev, jvp, linearize, vjp
from ._functional_call import functional_call, stack_module_state
from ._vmap import vmap

__all__ = ["debug_unwrap", "functional_call", "functionalize", "grad", "grad_and_value", "hessian", "jacfwd", "jacrev", "jvp",
           "linearize", "replace_all_batch_norm_modules_", "stack_module_state", "vjp", "vmap"]


def debug_unwrap(tensor, *, recurse: bool = True):
    """The physical tensor of a batched tensor seen inside vmap (every level's wrapper removed with ``recurse``,
    the outermost only without); other values come back as they are. For debugging."""
    from ..autograd._batching import BatchedTensor
    if type(tensor) is not BatchedTensor:
        return tensor
    if not recurse:
        return tensor._phys
    while type(tensor) is BatchedTensor:
        tensor = tensor._phys
    return tensor


def functionalize(func, *, remove: str = "mutations"):
    """``func`` with its mutations removed (PyTorch rewrites in-place ops as out-of-place ones for graph
    capture). ember runs eagerly and has no graph capture to serve, so this returns a function computing the same
    values as ``func`` (it checks ``remove`` as PyTorch does)."""
    if remove not in ("mutations", "mutations_and_views"):
        raise RuntimeError(f"functionalize(f, remove='mutations'): received invalid argument for remove={remove}. "
                           "Valid options are:\n     remove='mutations': all inplace and out= operators will be "
                           "removed from the program, and replaced with their out-of-place equivalents.\n     "
                           "remove='mutations_and_views': In addition to the above, all aliasing operators {view} "
                           "will be replaced with their non-aliasing counterparts, {view}_copy.\n")
    import functools

    @functools.wraps(func)
    def wrapped(*args, **kwargs):
        return func(*args, **kwargs)
    return wrapped


def replace_all_batch_norm_modules_(root):
    """In place: every batch-norm module under ``root`` stops tracking running statistics (so that vmap over it
    needs no in-place update of unbatched buffers); returns ``root``."""
    from ..nn.modules.batchnorm import _BatchNorm
    for m in root.modules():
        if isinstance(m, _BatchNorm):
            m.running_mean = None
            m.running_var = None
            m.num_batches_tracked = None
            m.track_running_stats = False
    return root
