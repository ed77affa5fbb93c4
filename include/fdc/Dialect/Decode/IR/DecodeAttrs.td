//===- DecodeAttrs.td - decode dialect attributes ----------*- tablegen -*-===//

#ifndef FDC_DIALECT_DECODE_IR_DECODEATTRS_TD
#define FDC_DIALECT_DECODE_IR_DECODEATTRS_TD

include "fdc/Dialect/Decode/IR/DecodeBase.td"
include "mlir/IR/AttrTypeBase.td"
include "mlir/IR/EnumAttr.td"

def Decode_ActivationNone : I32EnumAttrCase<"none", 0>;
def Decode_ActivationSiluGateUp : I32EnumAttrCase<"silu_gate_up", 1>;
def Decode_Activation : I32EnumAttr<"Activation",
    "epilogue activation of decode.linear",
    [Decode_ActivationNone, Decode_ActivationSiluGateUp]> {
  let cppNamespace = "::fdc::decode";
  let genSpecializedAttr = 0;
}
def Decode_ActivationAttr
    : EnumAttr<Decode_Dialect, Decode_Activation, "activation">;

def Decode_ReductionSum : I32EnumAttrCase<"sum", 0>;
def Decode_ReductionMax : I32EnumAttrCase<"max", 1>;
def Decode_Reduction : I32EnumAttr<"Reduction", "all-reduce combiner",
    [Decode_ReductionSum, Decode_ReductionMax]> {
  let cppNamespace = "::fdc::decode";
  let genSpecializedAttr = 0;
}
def Decode_ReductionAttr
    : EnumAttr<Decode_Dialect, Decode_Reduction, "reduction"> {
  let assemblyFormat = "$value";
}

def Decode_SoftmaxOnline : I32EnumAttrCase<"online", 0>;
def Decode_SoftmaxUnifiedMax : I32EnumAttrCase<"unified_max", 1>;
def Decode_SoftmaxScheme : I32EnumAttr<"SoftmaxScheme",
    "how attention splits agree on the softmax maximum",
    [Decode_SoftmaxOnline, Decode_SoftmaxUnifiedMax]> {
  let cppNamespace = "::fdc::decode";
  let genSpecializedAttr = 0;
}

def Decode_SoftmaxAttr : AttrDef<Decode_Dialect, "Softmax"> {
  let mnemonic = "softmax";
  let summary = "softmax scheme of decode.attention";
  let description = [{
    `#decode.softmax<online>`: the synchronized scheme. Every KV split keeps a
    running maximum and rescales its partial sums; the final reduction
    rescales the splits to the global maximum.

    `#decode.softmax<unified_max, phi = P, lo = L, hi = H>`: FlashDecoding++'s
    asynchronized scheme. Every split computes sum(exp(x - P) * v) and
    sum(exp(x - P)) with the one shared `phi`, so splits never rescale each
    other and the final reduction only adds and divides. If any score `x`
    has `x - phi` outside [`lo`, `hi`] the row is flagged and recomputed with
    the online scheme, so the result is always right; `phi` is chosen per
    model from observed score statistics. `hi` must keep exp() finite in f32
    (hi <= 88).
  }];
  let parameters = (ins
    EnumParameter<Decode_SoftmaxScheme>:$scheme,
    OptionalParameter<"::mlir::FloatAttr">:$phi,
    OptionalParameter<"::mlir::FloatAttr">:$lo,
    OptionalParameter<"::mlir::FloatAttr">:$hi);
  let hasCustomAssemblyFormat = 1;
  let genVerifyDecl = 1;
}


//===----------------------------------------------------------------------===//
// GPU target description
//===----------------------------------------------------------------------===//

def Decode_GpuVendorNvidia : I32EnumAttrCase<"nvidia", 0>;
def Decode_GpuVendorAmd : I32EnumAttrCase<"amd", 1>;
def Decode_GpuVendor : I32EnumAttr<"GpuVendor", "GPU vendor",
    [Decode_GpuVendorNvidia, Decode_GpuVendorAmd]> {
  let cppNamespace = "::fdc::decode";
  let genSpecializedAttr = 0;
}

def Decode_MmaShapeAttr : AttrDef<Decode_Dialect, "MmaShape"> {
  let mnemonic = "mma";
  let summary = "one matrix-multiply-accumulate shape a GPU executes";
  let description = [{
    `#decode.mma<m = 16, n = 8, k = 16, a = bf16, acc = f32>`: one subgroup
    computes an `m x n` accumulator of `acc` from an `m x k` and a `k x n`
    operand of `a` (NVIDIA `mma.sync`, AMD MFMA / WMMA).
  }];
  let parameters = (ins "int64_t":$m, "int64_t":$n, "int64_t":$k,
                        "::mlir::Type":$a, "::mlir::Type":$acc);
  let assemblyFormat = "`<` struct(params) `>`";
  let genVerifyDecl = 1;
}

def Decode_GroupMmaShapeAttr : AttrDef<Decode_Dialect, "GroupMmaShape"> {
  let mnemonic = "group_mma";
  let summary = "a matrix-multiply-accumulate that a group of subgroups "
                "issues on operands in shared memory";
  let description = [{
    `#decode.group_mma<subgroups = 4, m = 64, n_step = 8, max_n = 256, k = 16,
    a = bf16, acc = f32, row_bytes = 128>`: `subgroups` consecutive subgroups
    together compute an `m x n` accumulator of `acc`, held in their
    registers, for any `n` that is a multiple of `n_step` up to `max_n`, from
    an `m x k` and a `k x n` operand of `a` that the instruction reads from
    shared memory itself (NVIDIA sm_90a `wgmma.mma_async`). Both operands are
    K-major tiles whose rows hold `row_bytes` of K, laid out in shared memory
    as the vendor's primitives place them. The instruction runs
    asynchronously: issued, committed, then waited for.
  }];
  let parameters = (ins "int64_t":$subgroups, "int64_t":$m, "int64_t":$n_step,
                        "int64_t":$max_n, "int64_t":$k, "::mlir::Type":$a,
                        "::mlir::Type":$acc, "int64_t":$row_bytes);
  let assemblyFormat = "`<` struct(params) `>`";
  let genVerifyDecl = 1;
}

def Decode_GpuTargetAttr : AttrDef<Decode_Dialect, "GpuTarget"> {
  let mnemonic = "gpu_target";
  let summary = "the hardware facts kernel generators read";
  let description = [{
    The GPU a model's kernels are generated for, as data: the generators ask
    it for the subgroup (warp / wavefront) size, the number of compute units
    (SMs / CUs) a grid should fill, the shared memory (LDS) one workgroup may
    use, the widest vector load, and the matrix-multiply shapes, instead of
    naming a vendor. `fdc compile` fills it from the known-targets table
    (`decode::lookupGpuTarget`); a test can write one by hand. `group_mma`
    (optional, none by default) lists the matrix-multiply shapes a group of
    subgroups issues on shared-memory operands (`#decode.group_mma`, sm_90a's
    wgmma). `dependent_launch` (optional, false by default) says that a
    kernel may be launched while the kernel before it on the stream still
    runs: every kernel waits at its start until the one before it has ended
    and its writes are visible (NVIDIA sm_90+ programmatic dependent launch,
    `griddepcontrol.wait`); the model library's manifest then asks the
    runtime to launch its kernels that way, which overlaps each kernel's
    launch with the end of the one before it. `cluster_workgroups`
    (optional, 0 by default: none) is the most workgroups a kernel may group
    into a cluster, whose workgroups run at once and read each other's shared
    memory (NVIDIA sm_90+ thread block clusters; 8 is the portable size): a
    GEMM split in K then adds its splits' sums inside the cluster instead of
    in a second kernel. `shared_memory_banks` (optional, 32 by default) and
    `shared_memory_bank_bytes` (optional, 4 by default) describe the banks
    of shared memory (LDS) that one access of a subgroup meets: the byte at
    address a lies in bank (a / shared_memory_bank_bytes) mod
    shared_memory_banks, and lanes that reach different addresses of one
    bank are served one after another (a bank conflict). Generators lay out
    shared memory for these banks (the padding of the split-K sums added in
    a cluster; the Tiled-CSL word order's 32 banks of 4 bytes are a format
    constant the lowering compares with them); a layout made for other banks
    is as correct, only slower. Every known target has 32 banks of 4 bytes:
    NVIDIA sm_70 and later, CDNA (64 KiB of LDS in 32 banks) and RDNA3, whose
    128 KiB of LDS per WGP is 64 banks in two sets of 32, each affiliated
    with a pair of its SIMDs (RDNA3 ISA guide, 12.1): one wave's access is
    taken to meet one set.

    ```mlir
    #decode.gpu_target<vendor = nvidia, arch = "sm_90", subgroup = 32,
                       units = 132, shared_memory = 232448, vector_bytes = 16,
                       max_workgroup_size = 1024,
                       mma = [#decode.mma<m = 16, n = 8, k = 16, a = bf16, acc = f32>]>
    ```
  }];
  let parameters = (ins
    EnumParameter<Decode_GpuVendor>:$vendor,
    "::mlir::StringAttr":$arch,
    "int64_t":$subgroup,
    "int64_t":$units,
    "int64_t":$shared_memory,
    "int64_t":$vector_bytes,
    "int64_t":$max_workgroup_size,
    "::mlir::ArrayAttr":$mma,
    OptionalParameter<"::mlir::ArrayAttr">:$group_mma,
    OptionalParameter<"::mlir::BoolAttr">:$dependent_launch,
    DefaultValuedParameter<"int64_t", "0">:$cluster_workgroups,
    DefaultValuedParameter<"int64_t", "32">:$shared_memory_banks,
    DefaultValuedParameter<"int64_t", "4">:$shared_memory_bank_bytes);
  let assemblyFormat = "`<` struct(params) `>`";
  let genVerifyDecl = 1;
  let extraClassDeclaration = [{
    /// The name of the attribute that carries the target on a module.
    static llvm::StringRef getModuleAttrName() { return "decode.gpu_target"; }
    /// The MMA shapes (every element of `mma` is a #decode.mma).
    llvm::SmallVector<MmaShapeAttr> getMmaShapes() const;
    /// The group MMA shapes (`group_mma`, empty when absent).
    llvm::SmallVector<GroupMmaShapeAttr> getGroupMmaShapes() const;
    /// Whether kernels wait for the one before them at their start and may
    /// be launched before it ends (`dependent_launch`).
    bool hasDependentLaunch() const {
      return getDependentLaunch() && getDependentLaunch().getValue();
    }
    /// Whether `workgroups` workgroups may form a cluster.
    bool canCluster(int64_t workgroups) const {
      return workgroups > 1 && workgroups <= getClusterWorkgroups();
    }
  }];
}

def Decode_KernelAttr : AttrDef<Decode_Dialect, "Kernel"> {
  let mnemonic = "kernel";
  let summary = "the GPU kernel family and config chosen for an op";
  let description = [{
    `#decode.kernel<"gemv", {rows_per_block = 4 : i64}>` on an op (attribute
    name `decode.kernel`) names the kernel family of fdc's registry that
    lowers it and the family's config. `decode-select-kernels` writes one on
    every op that becomes a kernel; a kernel written by hand is kept (and
    checked), so a test can pin one. Config entries a family does not name
    are refused; entries left out take the family's defaults for the target.
  }];
  let parameters = (ins "::mlir::StringAttr":$family,
                        "::mlir::DictionaryAttr":$config);
  let assemblyFormat = "`<` $family `,` $config `>`";
  let extraClassDeclaration = [{
    /// The name of the attribute that carries the kernel on an op.
    static llvm::StringRef getOpAttrName() { return "decode.kernel"; }
  }];
}

def Decode_ShardAttr : AttrDef<Decode_Dialect, "Shard"> {
  let mnemonic = "shard";
  let summary = "one rank's slice of a tensor-parallel weight";
  let description = [{
    On a `decode.weight` of a tensor-parallel model (`tensor_parallel = N`
    on the `decode.model`): the declared type is one rank's slice, and rank
    r holds, of every source tensor, the r-th of `ranks` equal parts along
    dimension `dim` (0: rows, a column-parallel linear's output features or
    the LM head's vocabulary; 1: columns, a row-parallel linear's input
    features). `source_rows` are the whole sources' row counts, in `concat`
    order (one entry for a weight of one source): with `dim = 0` each source
    is split on its own, so gate and up stay paired in a fused gate-up
    weight. `decode-shard-tensor-parallel` writes it; the model library's
    manifest names each rank's slices from it.

    ```mlir
    decode.weight @"w.gate_up" = concat ["w.gate", "w.up"]
        shard #decode.shard<dim = 0, ranks = 2, source_rows = [11008, 11008]>
        : tensor<11008x4096xbf16>
    ```
  }];
  let parameters = (ins "int64_t":$dim, "int64_t":$ranks,
                        "::mlir::DenseI64ArrayAttr":$source_rows);
  let assemblyFormat = "`<` struct(params) `>`";
  let genVerifyDecl = 1;
}

def Decode_KernelDispatchAttr : AttrDef<Decode_Dialect, "KernelDispatch"> {
  let mnemonic = "dispatch";
  let summary = "the GPU kernel of an op as a function of the batch size";
  let description = [{
    A dispatch table on an op (attribute name `decode.kernel`, in place of a
    single `#decode.kernel`): `kernels[i]` runs when the step's batch M is at
    most `max_batch[i]` and above the bounds before it; the last kernel,
    which has no bound, runs for every larger M. The step picks the kernel
    each time it runs, from the live M.

    ```mlir
    decode.kernel = #decode.dispatch<max_batch = [1, 16],
        kernels = [#decode.kernel<"gemv", {}>,
                   #decode.kernel<"flat_gemm", {batch_tiles = 2}>,
                   #decode.kernel<"flat_gemm", {batch_tiles = 8}>]>
    ```

    `decode-select-kernels` writes one on every `decode.linear` that a flat
    GEMM can lower (FlashDecoding++'s heuristic dataflow: GEMV for the
    smallest M, flat GEMM above it); a table written by hand is kept, each
    kernel checked and completed like a single one. Only `decode.linear` and
    `decode.sparse_linear` take a table; another op's is refused by name.
  }];
  let parameters = (ins "::mlir::DenseI64ArrayAttr":$max_batch,
                        "::mlir::ArrayAttr":$kernels);
  let assemblyFormat = "`<` struct(params) `>`";
  let genVerifyDecl = 1;
  let extraClassDeclaration = [{
    /// The kernels, as #decode.kernel attributes (the verifier checks it).
    llvm::SmallVector<KernelAttr> getKernelList() const;
  }];
}

#endif // FDC_DIALECT_DECODE_IR_DECODEATTRS_TD
