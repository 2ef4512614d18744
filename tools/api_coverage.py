"""Which public names of PyTorch ember has, which it leaves out on purpose (and why), and which are missing.

    python tools/api_coverage.py            # counts per namespace, then every missing name
    python tools/api_coverage.py --all      # also the omitted, planned and not-yet-built names with their reasons
    python tools/api_coverage.py --check    # exit 1 if a name is neither built, omitted, planned nor not-yet
    python tools/api_coverage.py --write    # replace README.md's coverage table (tests/test_api_coverage.py checks it)

Compares torch 2.13 (installed) with ember, namespace by namespace (``NAMESPACES`` below: ``torch``,
``torch.Tensor``, ``torch.nn.functional``, ``torch.linalg``, ..., ``torch.distributions``, ``torch.profiler``,
``torch.onnx``). A public name is a non-underscore attribute that is PyTorch's own object: submodules, the typing and
builtin re-exports (``TYPE_CHECKING``, ``Optional``), a submodule's imports from the standard library, the TorchScript helpers that ``nn.functional`` imports
(``boolean_dispatch``, ``BroadcastingList2``, ``handle_torch_function``) and documentation strings are not counted.

Every name ember lacks is in one of three tables below, with a one-line reason:
``OMITTED`` (deliberately left out: quantization, sparse layouts, TorchScript, vendor kernels, storage classes,
dispatcher and tracing plumbing, ...), ``PLANNED`` (other work of issue 18 builds it) and ``NOT_YET`` (a program may
touch it; nobody builds it yet). ``--check`` (run by tests/test_api_coverage.py) fails on a name in none of them, so
a change that removes a name fails; it also fails when a table names something ember has (delete the line).
"""
from __future__ import annotations

import argparse
import importlib
import inspect
import os
import sys
import warnings

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path[:0] = [ROOT]

import torch  # noqa: E402
import ember  # noqa: E402

# ----------------------------------------------------------------------------------------------------------------
# The tables. A key is a bare name (it applies in every namespace: ``q_scale`` is torch.q_scale and
# Tensor.q_scale) or ``namespace:name`` for one namespace only.


def _same(reason: str, names: str) -> dict[str, str]:
    return {name: reason for name in names.split()}


_QUANT = "quantization (quantized dtypes, tensors and kernels) is not built"
_SPARSE = "sparse layouts (COO, CSR, CSC, BSR, BSC) are not built: ember tensors are strided"
_JIT = "TorchScript/JIT internals: ember runs eagerly, there is no TorchScript"
_VENDOR = "a vendor kernel (fbgemm, mkldnn/oneDNN, cuDNN, MIOpen, Vulkan) that ember does not have"
_STORAGE = "legacy typed Storage class: ember tensors own device arrays, not Storage objects"
_DISPATCH = "dispatcher, torch-function or tracing plumbing of PyTorch's C++ core"
_SYM = "symbolic shapes (torch.compile's SymInt machinery); ember's shapes are always concrete ints"
_DEVICE = "a device backend ember does not have (XPU, IPU, MTIA, MAIA, XLA, HPU, Vulkan, MPS)"
_BITS = "bit/sub-byte shell dtypes with no arithmetic kernels in PyTorch"
_NESTED = "nested (jagged) tensors are not built"
_SHARE = "shared memory and pinned memory belong to torch.multiprocessing and CUDA; not built"
_BUILD = "a fact about PyTorch's build or an internal helper of its package"
_FP8_MM = "scaled/grouped fp8 matrix products: CUDA-only kernels"

OMITTED: dict[str, str] = {
    **_same(_QUANT, """qint8 qint32 quint8 quint4x2 quint2x4 qscheme per_channel_affine per_channel_affine_float_qparams
        per_channel_symmetric per_tensor_affine per_tensor_symmetric quantize_per_tensor quantize_per_channel
        quantize_per_tensor_dynamic dequantize int_repr q_scale q_zero_point q_per_channel_axis q_per_channel_scales
        q_per_channel_zero_points is_quantized empty_quantized choose_qparams_optimized fake_quantize_per_channel_affine
        fake_quantize_per_tensor_affine fused_moving_avg_obs_fake_quant quantized_batch_norm quantized_gru
        quantized_gru_cell quantized_lstm quantized_lstm_cell quantized_max_pool1d quantized_max_pool2d
        quantized_max_pool3d quantized_rnn_relu_cell quantized_rnn_tanh_cell QInt32Storage QInt8Storage
        QUInt2x4Storage QUInt4x2Storage QUInt8Storage"""),
    **_same(_SPARSE, """sparse_coo_tensor sparse_csr_tensor sparse_csc_tensor sparse_bsr_tensor sparse_bsc_tensor
        sparse_compressed_tensor to_sparse to_sparse_coo to_sparse_csr to_sparse_csc to_sparse_bsr to_sparse_bsc
        to_dense crow_indices col_indices ccol_indices row_indices indices values coalesce is_coalesced sparse_dim
        dense_dim sparse_mask sparse_resize_ sparse_resize_and_clear_ is_sparse is_sparse_csr resize_as_sparse_
        smm sspaddmm dsmm hsmm hspmm saddmm spmm crow_indices_copy col_indices_copy ccol_indices_copy
        row_indices_copy indices_copy values_copy"""),
    **_same(_JIT, """ScriptModule ScriptFunction ScriptMethod ScriptObject ScriptObjectProperty ScriptClass
        ScriptClassFunction ScriptDict ScriptDictIterator ScriptDictKeyIterator ScriptList ScriptListIterator
        ScriptModuleSerializer LiteScriptModule CompilationUnit ConcreteModuleType ConcreteModuleTypeBuilder
        Graph Node Block Value Use Code Gradient GraphExecutorState ExecutionPlan ArgumentSpec CompleteArgumentSpec
        AliasDb FileCheck ErrorReport CallStack JITException TracingState StaticModule DeepCopyMemoTable
        parse_ir parse_schema parse_type_comment import_ir_module import_ir_module_from_buffer
        merge_type_from_type_comment unify_type_list fork wait Future Await
        AnyType AwaitType BoolType ClassType ComplexType DeviceObjType DictType EnumType FloatType FutureType
        InferredType IntType InterfaceType ListType NoneType NumberType OptionalType PyObjectType RRefType
        StreamObjType StringType SymBoolType SymIntType TensorType TupleType Type UnionType
        torch:ModuleDict torch:ParameterDict BufferDict Capsule FunctionSchema Argument OperatorInfo IODescriptor
        LoggerBase LockingLogger NoopLogger BenchmarkConfig BenchmarkExecutionStats ThroughputBenchmark
        SerializationStorageContext DeserializationStorageContext PyTorchFileReader PyTorchFileWriter
        AggregationType AVG SUM"""),
    **_same(_VENDOR, """fbgemm_linear_fp16_weight fbgemm_linear_fp16_weight_fp32_activation fbgemm_linear_int8_weight
        fbgemm_linear_int8_weight_fp32_activation fbgemm_linear_quantize_weight fbgemm_pack_gemm_matrix_fp16
        fbgemm_pack_quantized_matrix mkldnn_adaptive_avg_pool2d mkldnn_convolution mkldnn_linear_backward_weights
        mkldnn_max_pool2d mkldnn_max_pool3d mkldnn_rnn_layer to_mkldnn is_mkldnn cudnn_affine_grid_generator
        cudnn_batch_norm cudnn_convolution cudnn_convolution_add_relu cudnn_convolution_relu
        cudnn_convolution_transpose cudnn_grid_sampler cudnn_is_acceptable miopen_batch_norm miopen_convolution
        miopen_convolution_add_relu miopen_convolution_relu miopen_convolution_transpose miopen_ctc_loss
        miopen_depthwise_convolution miopen_rnn is_vulkan_available is_vulkan
        batch_norm_backward_elemt batch_norm_backward_reduce batch_norm_elemt batch_norm_gather_stats
        batch_norm_gather_stats_with_counts batch_norm_stats batch_norm_update_stats"""),
    **_same(_STORAGE, """Storage StorageBase  BoolStorage ByteStorage CharStorage ShortStorage IntStorage
        LongStorage HalfStorage FloatStorage DoubleStorage BFloat16Storage ComplexFloatStorage ComplexDoubleStorage
         """),
    **_same(_DISPATCH, """DispatchKey DispatchKeySet ExcludeDispatchKeyGuard DisableTorchFunction
        DisableTorchFunctionSubclass Tag PRIVATE_OPS as_subclass reinforce module_load get_device_module
        classproperty thread_safe_generator   
        nn.functional:has_torch_function nn.functional:handle_torch_function"""),
    **_same(_SYM, """SymInt SymFloat SymBool sym_float sym_int sym_ite sym_max sym_min sym_not sym_sqrt sym_sum
        sym_fresh_size sym_constrain_range sym_constrain_range_for_size"""),
    **_same(_DEVICE, """ipu is_ipu xpu is_xpu mtia is_mtia is_maia is_xla is_mps
           
           """),
    **_same(_BITS, """bit bits8 bits16 bits1x8 bits2x4 bits4x2 int1 int2 int3 int4 int5 int6 int7
        uint1 uint2 uint3 uint4 uint5 uint6 uint7 float4_e2m1fn_x2"""),
    **_same(_NESTED, "jagged is_nested to_padded_tensor"),
    **_same(_SHARE, "    record_stream Stream Event"),
    **_same(_BUILD, """USE_GLOBAL_DEPS USE_RTLD_GLOBAL_WITH_LIBTORCH get_file_path prepare_multiprocessing_environment
        profiler_allow_cudagraph_cupti_lazy_reinit_cuda12 nn.functional:assert_int_or_pair"""),
    **_same(_FP8_MM, """nn.functional:scaled_mm nn.functional:scaled_grouped_mm nn.functional:grouped_mm
        nn.functional:ScalingType nn.functional:SwizzleType"""),
    "legacy_contiguous_format": "an internal memory format of PyTorch's (TorchScript serialisation), not for programs",
    "volatile": "removed in PyTorch 0.4 (always False, with a warning); use torch.no_grad",
    "name": "named tensors (prototype) are not built",
    "is_distributed": "torch.distributed is not built",
    "AcceleratorError": "raised by CUDA/accelerator runtimes only",
    "OutOfMemoryError": "raised by the CUDA allocator only (torch.cuda.OutOfMemoryError)",
    "FatalError": "an internal error of PyTorch's C++ core",
    "set_default_tensor_type": "deprecated since PyTorch 2.1 (use set_default_dtype / set_default_device)",
    "native_norm": "PyTorch has only a sparse kernel for it (a dense CPU tensor raises NotImplementedError)",
    "Tensor:index": "first-class dimensions (functorch.dim, a prototype) are not built",
    "onnx:register_custom_op_symbolic": "TorchScript-based (a symbolic function over TorchScript graph values); "
                                        "ember's exporter translates its own recorded ops, it has no TorchScript",
    "onnx:unregister_custom_op_symbolic": "TorchScript-based, as register_custom_op_symbolic",
    "onnx:InputObserver": "records inputs to infer torch.export dynamic shapes; ember has no torch.export "
                          "(export takes dynamic_axes)",
    **_same(_STORAGE, "serialization:normalize_storage_type serialization:storage_to_tensor_type"),
    "serialization:register_package": "ember saves every storage from the cpu (location tag 'cpu'); devices register "
                                      "through ember.devices, not through location taggers",
    "serialization:validate_hpu_device": _DEVICE,
    "serialization:get_source_lines_and_file": _JIT,
    "profiler:ExecutionTraceObserver": "PyTorch Execution Traces (the op graph with tensor ids that Meta's Chakra/"
                                       "PARAM replay tools read) are not built; profile() records a trace",
    "autograd.profiler:load_nvprof": "reads NVIDIA nvprof output (a vendor tool for CUDA)",
    "autograd.profiler:parse_nvprof_trace": "reads NVIDIA nvprof output (a vendor tool for CUDA)",
}

# Names that other work of issue 18 builds (a PLANNED line may stay until that work lands).
_COMPLEX = "complex32 (chalf) tensors: the dtype exists, its tensors are refused (NumPy has no complex32)"

PLANNED: dict[str, str] = {
    **_same(_COMPLEX, """chalf complex32"""),
}

# A program may touch these; nobody builds them yet.
NOT_YET: dict[str, str] = {
    "func:rearrange": "einops-style rearrange, built in PyTorch on first-class dimensions (functorch.dim): not built",
    **_same("fractional max pooling: ember has no F.fractional_max_pool2d/3d yet",
            """nn:FractionalMaxPool2d nn:FractionalMaxPool3d nn.modules:FractionalMaxPool2d
            nn.modules:FractionalMaxPool3d"""),
    **_same("PyTorch's fused Linear + cross-entropy loss (new in 2.12) is not built yet",
            """nn:LinearCrossEntropyLoss nn:LinearCrossEntropyOptions nn.modules:LinearCrossEntropyLoss
            nn.modules:LinearCrossEntropyOptions"""),
    **_same("needs process groups: the distributed issue (22) builds them; ember.distributed.is_available() is False",
            """nn.parallel:DistributedDataParallelCPU nn.parallel:gather
            nn.parallel:parallel_apply nn.parallel:replicate nn.parallel:scatter"""),
    **_same("ember's Lazy* modules keep ordinary empty tensors awaiting their shapes (names in _lazy_pending), not "
            "uninitialized tensor classes", "nn:UninitializedBuffer nn:UninitializedParameter"),
}

# ----------------------------------------------------------------------------------------------------------------
# What counts as a public name.

_FOREIGN_MODULES = ("typing", "typing_extensions", "builtins", "collections.abc", "abc")
# nn.functional imports TorchScript and torch-function helpers and re-exports torch.Tensor; they are not its API.
_HELPER_MODULES = ("torch._jit_internal", "torch.overrides", "torch._C")

NAMESPACES = (  # (label, torch module path, ember attribute path)
    ("torch", "torch", ""),
    ("Tensor", "torch.Tensor", "Tensor"),
    ("nn.functional", "torch.nn.functional", "nn.functional"),
    ("linalg", "torch.linalg", "linalg"),
    ("special", "torch.special", "special"),
    ("fft", "torch.fft", "fft"),
    ("signal.windows", "torch.signal.windows", "signal.windows"),
    ("amp", "torch.amp", "amp"),
    ("nn", "torch.nn", "nn"),
    ("nn.modules", "torch.nn.modules", "nn.modules"),
    ("nn.parallel", "torch.nn.parallel", "nn.parallel"),
    ("nn.utils.prune", "torch.nn.utils.prune", "nn.utils.prune"),
    ("nn.attention", "torch.nn.attention", "nn.attention"),
    ("serialization", "torch.serialization", "serialization"),
    ("distributions", "torch.distributions", "distributions"),
    ("distributions.constraints", "torch.distributions.constraints", "distributions.constraints"),
    ("distributions.transforms", "torch.distributions.transforms", "distributions.transforms"),
    ("testing", "torch.testing", "testing"),
    ("profiler", "torch.profiler", "profiler"),
    ("autograd.profiler", "torch.autograd.profiler", "autograd.profiler"),
    ("onnx", "torch.onnx", "onnx"),
    ("utils.tensorboard", "torch.utils.tensorboard", "utils.tensorboard"),
    ("func", "torch.func", "func"),
)


def _resolve(root, dotted: str):
    obj = root
    for part in filter(None, dotted.split(".")):
        obj = getattr(obj, part, None)
        if obj is None:
            return None
    return obj


def public_names(label: str, obj) -> list[str]:
    """PyTorch's public names in one namespace (see the module docstring)."""
    out = []
    for name in dir(obj):
        if name.startswith("_") or name == "TYPE_CHECKING":
            continue
        value = getattr(obj, name)
        if inspect.ismodule(value):
            continue
        module = getattr(value, "__module__", None) or ""
        if module in _FOREIGN_MODULES:
            continue
        if label not in ("torch", "Tensor"):
            # submodules: their own functions and classes only (no re-exports, constants or documentation texts)
            if not callable(value) or module in _HELPER_MODULES or (name == "Tensor" and value is torch.Tensor):
                continue
            if not module.startswith("torch"):  # an import from the standard library (dataclass, warn, ...)
                continue
        out.append(name)
    return out


def _lookup(table: dict[str, str], label: str, name: str) -> str | None:
    return table.get(f"{label}:{name}", table.get(name))


def survey() -> list[dict]:
    """One row per namespace: the torch names, and which ember has, omits, plans, has not yet, or misses."""
    rows = []
    for label, torch_path, ember_path in NAMESPACES:
        tmod = importlib.import_module(torch_path) if label != "Tensor" else torch.Tensor
        emod = _resolve(ember, ember_path) if ember_path else ember
        row = {"label": label, "present": emod is not None, "total": 0, "built": [], "omitted": [], "planned": [],
               "not_yet": [], "missing": [], "stale": []}
        for name in public_names(label, tmod):
            row["total"] += 1
            has = emod is not None and hasattr(emod, name)
            tables = (("omitted", OMITTED), ("planned", PLANNED), ("not_yet", NOT_YET))
            listed = [(kind, _lookup(table, label, name)) for kind, table in tables]
            listed = [(kind, why) for kind, why in listed if why is not None]
            if has:
                row["built"].append(name)
                # a name built since it was listed: its line must go (PLANNED lines may stay until merged)
                row["stale"] += [f"{name} ({kind})" for kind, _ in listed if kind != "planned"]
            elif listed:
                row[listed[0][0]].append(name)
            else:
                row["missing"].append(name)
        rows.append(row)
    return rows


def _print(rows: list[dict], show_all: bool) -> None:
    print(f"{'namespace':16} {'torch':>6} {'built':>6} {'omitted':>8} {'planned':>8} {'not yet':>8} {'missing':>8}")
    for r in rows:
        print(f"{r['label']:16} {r['total']:6} {len(r['built']):6} {len(r['omitted']):8} {len(r['planned']):8} "
              f"{len(r['not_yet']):8} {len(r['missing']):8}" + ("" if r["present"] else "   (no ember module)"))
    for r in rows:
        if r["missing"]:
            print(f"\nmissing in {r['label']}: " + " ".join(r["missing"]))
        if r["stale"]:
            print(f"\nbuilt but still listed in {r['label']}: " + " ".join(r["stale"]))
        if show_all:
            for kind, table in (("omitted", OMITTED), ("planned", PLANNED), ("not_yet", NOT_YET)):
                for name in r[kind]:
                    print(f"  {r['label']}.{name}: {kind}: {_lookup(table, r['label'], name)}")


BEGIN, END = "<!-- api-coverage:begin -->", "<!-- api-coverage:end -->"


def markdown(rows: list[dict]) -> str:
    """README.md's coverage table."""
    lines = ["| namespace | torch | built | omitted | planned | not yet |", "|---|---|---|---|---|---|"]
    lines += [f"| `{r['label']}` | {r['total']} | {len(r['built'])} | {len(r['omitted'])} | {len(r['planned'])} | "
              f"{len(r['not_yet'])} |" for r in rows]
    return "\n".join(lines)


def readme_with(table: str) -> tuple[str, str]:
    """(README.md as it is, README.md with ``table`` between the markers)."""
    with open(os.path.join(ROOT, "README.md")) as f:
        content = f.read()
    i, j = content.index(BEGIN), content.index(END)
    return content, content[:i + len(BEGIN)] + "\n" + table + "\n" + content[j:]


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--check", action="store_true", help="exit 1 on a missing name or a stale table line")
    parser.add_argument("--all", action="store_true", help="also list omitted, planned and not-yet names")
    parser.add_argument("--write", action="store_true", help="replace the coverage table in README.md")
    args = parser.parse_args(argv)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        rows = survey()
    _print(rows, args.all)
    if args.write:
        _, new = readme_with(markdown(rows))
        with open(os.path.join(ROOT, "README.md"), "w") as f:
            f.write(new)
    if args.check and any(r["missing"] or r["stale"] for r in rows):
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
