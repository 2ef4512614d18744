"""bfloat16 samples of the op database (tests/test_ops.py::test_forward_bf16) where ember differs from PyTorch.

Every entry of the op database that runs in float32 runs in bfloat16 too, against torch: values bit for bit,
dtypes, and PyTorch's exception type where it refuses bfloat16. The cases below differ, grouped by why:
``BF16_DIFFERS[op name] = (reason, sample indices or None for all)``; each is a strict xfail.
"""
from __future__ import annotations

REASONS = {
    'ties': "rounding to bfloat16 makes ties; PyTorch's sort orders tied values by its own algorithm",
    'empty': 'an empty input: PyTorch returns before its kernel refuses bfloat16; ember refuses it',
    'errors': 'argument checks: PyTorch checks these arguments (shapes, modes, indices, dtypes of other operands) before its kernel refuses or takes bfloat16; ember refuses bfloat16 (or meets the float32 operand of the sample) first',
    'composite': "a composite of several bfloat16 ops (matmuls, softmax, scaling) or a matmul chain: ember's steps each round once from float32 sums, PyTorch's bfloat16 matmul is oneDNN's (its own summation order): an ulp apart (not matched yet)",
    'accumulate': "scatter/index_add/embedding_bag/nansum/nanmean: ember sums in float32 and rounds once; PyTorch's bfloat16 kernels round some partial sums (not matched yet)",
    'linalg_norm': "the matrix norms that take singular values: PyTorch's matrix_norm refuses bfloat16 ('Low precision dtypes') before the SVD's NotImplementedError that ember raises",
    'spatial': "interpolation/pooling/grid sampling: ember applies float32 weights to the float32 input and rounds once; PyTorch's kernels round some weights or partial sums to bfloat16: an ulp apart (not matched yet)",
    'affine': "affine_grid: PyTorch's base grid is made with linspace, its own bfloat16 steps (and an empty size reaches a kernel with no bfloat16)",
    'nan_sign': "signbit of a NaN: PyTorch's float32-to-bfloat16 conversion (Vectorized cvtfp32_bf16) writes every NaN as 0xFFFF, sign bit set (its scalar c10::BFloat16(float) writes 0x7FC0); ember's (ml_dtypes') keeps the float32 NaN's sign",
}

BF16_DIFFERS: dict[str, tuple[str, tuple | None]] = {
    # the ATen spellings of affine_grid and grid_sample (the same kernels: see their entries below)
    'affine_grid_generator': ('affine', None),
    'grid_sampler': ('composite', (0, 2)),
    # nan_sign
    'predicates': ('nan_sign', (0, 1)),
    # ties
    'argsort_ties': ('ties', (1, 3)),
    'kthvalue_ties': ('ties', (5, 7)),
    'nanmedian_ties': ('ties', (4, 5)),
    'sort_ties': ('ties', (4, 5, 7, 8)),
    'topk_ties': ('ties', (5,)),
    # empty
    'cdist': ('empty', (8,)),
    'linalg_cholesky_ex': ('empty', (3,)),
    'linalg_ldl_factor_ex': ('empty', (3,)),
    'linalg_lu': ('empty', (6, 7)),
    'linalg_lu_factor': ('empty', (6, 7)),
    'linalg_lu_solve': ('empty', (8,)),
    'nn_local_response_norm': ('empty', (1, 3)),
    'nn_pdist': ('empty', (5,)),
    # errors
    'cdist_errors': ('errors', (3,)),
    'index_put_errors': ('errors', (5, 6)),
    'int_scalar_wrap': ('errors', (4, 5)),
    'ldl_solve_errors': ('errors', None),
    'lu_solve_errors': ('errors', (1, 2, 3, 4, 6)),
    'qr_errors': ('errors', None),
    'solve_errors': ('errors', (0, 2)),
    'solve_ex_errors': ('errors', (1,)),
    'take_put_errors': ('errors', (6, 7)),
    # composite
    'chain_matmul': ('composite', (0,)),
    'einsum': ('composite', (9,)),
    'matrix_exp': ('composite', (0, 1, 2)),
    'matrix_exp_method': ('composite', None),
    'multi_dot': ('composite', (1,)),
    'nn.functional.grid_sample3d_bilinear': ('composite', None),
    'nn.functional.grid_sample_bilinear': ('composite', None),
    'nn.functional.interpolate_bilinear': ('composite', (0, 1, 2, 4, 6)),
    'nn.functional.upsample_bilinear': ('composite', None),
    'nn_bilinear': ('composite', (0, 1, 3)),
    'nn_multi_head_attention_forward': ('composite', None),
    'nn_scaled_dot_product_attention': ('composite', None),
    'torch_bilinear': ('composite', None),
    'trace': ('composite', (1,)),
    # accumulate
    'index_add': ('accumulate', (0,)),
    'index_add_': ('accumulate', (0,)),
    'nanmean': ('accumulate', (4,)),
    'nanmean_nan': ('accumulate', (2,)),
    'nansum': ('accumulate', (4,)),
    'nn_embedding_bag': ('accumulate', (0, 1, 6, 9)),
    'nn_embedding_bag_psw': ('accumulate', None),
    'embedding_bag_aten': ('accumulate', (0, 1, 3, 4, 7, 9)),   # output 0: nn_embedding_bag's sums
    'scatter_add': ('accumulate', (1,)),
    'scatter_add_': ('accumulate', None),
    'scatter_legacy_reduce': ('accumulate', None),
    'scatter_reduce': ('accumulate', (0, 2, 3, 4, 10)),
    # linalg_norm
    # spatial
    'nn.functional.adaptive_avg_pool1d': ('spatial', (0,)),
    'nn.functional.adaptive_avg_pool2d': ('spatial', (0, 2)),
    'nn.functional.adaptive_avg_pool3d': ('spatial', (0,)),
    'nn.functional.avg_pool1d': ('spatial', None),
    'nn.functional.avg_pool2d': ('spatial', (1, 2, 3)),
    'nn.functional.grid_sample3d_nearest': ('spatial', (5,)),
    'nn.functional.grid_sample_bicubic': ('spatial', None),
    'nn.functional.grid_sample_nearest': ('spatial', (0, 1)),
    'nn.functional.interpolate_area': ('spatial', None),
    'nn.functional.interpolate_bicubic': ('spatial', (0, 1, 2, 3, 4, 6)),
    'nn.functional.interpolate_linear': ('spatial', (0, 1, 2, 4, 6)),
    'nn.functional.interpolate_trilinear': ('spatial', (0, 1, 2, 4, 6)),
    'nn.functional.lp_pool1d': ('spatial', (0,)),
    'nn.functional.lp_pool2d': ('spatial', (1,)),
    # affine
    'nn.functional.affine_grid': ('affine', (0, 2, 3)),
}

# Entries left out in bfloat16: their values depend on the global random state at the time the test runs.
BF16_SKIP = {"nn_gumbel_softmax_sum": "gumbel noise: the sum of the bfloat16 softmax depends on the draw"}
