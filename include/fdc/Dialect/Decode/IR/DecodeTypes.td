//===- DecodeTypes.td - decode dialect types ---------------*- tablegen -*-===//

#ifndef FDC_DIALECT_DECODE_IR_DECODETYPES_TD
#define FDC_DIALECT_DECODE_IR_DECODETYPES_TD

include "fdc/Dialect/Decode/IR/DecodeBase.td"
include "mlir/IR/AttrTypeBase.td"
include "mlir/IR/BuiltinTypeInterfaces.td"

class Decode_Type<string name, string typeMnemonic, list<Trait> traits = []>
    : TypeDef<Decode_Dialect, name, traits> {
  let mnemonic = typeMnemonic;
}

def Decode_Int4Type : Decode_Type<"Int4", "int4"> {
  let summary = "group-wise quantised 4-bit element";
  let description = [{
    Element type of an INT4 KV cache. Each head vector of `head_dim` values is
    split into `groups` equal groups; each group stores an fp16 scale and an
    fp16 minimum, and every value is `min + scale * q` with `q` in [0, 15].
    A row is laid out as the `groups` (scale, min) pairs followed by the
    `head_dim / 2` bytes of packed nibbles (element 2j in the low nibble).

    Example: `!decode.int4<groups = 4>` (80 bytes per 128-wide row).
  }];
  let parameters = (ins "int64_t":$groups);
  let assemblyFormat = "`<` `groups` `=` $groups `>`";
  let genVerifyDecl = 1;
  let extraClassDeclaration = [{
    /// Bytes of a row's (scale, min) f16 pairs, before its nibbles.
    int64_t getHeaderBytes() const { return getGroups() * 4; }
  }];
}

def Decode_KVCacheType : Decode_Type<"KVCache", "kv_cache"> {
  let summary = "the KV cache of every layer, for every request slot";
  let description = [{
    The key and value cache of all `layers`, `kv_heads` heads of width
    `head_dim`, stored as `elementType` (f32, f16, bf16 or
    `!decode.int4<groups = G>`). The number of request slots and the
    capacity of a slot in tokens are run-time properties of the buffer, not of
    the type: one compiled step serves any cache size. The buffer is indexed
    `[slot][layer][k|v][kv_head][position]`, each entry one head vector.

    Example: `!decode.kv_cache<layers = 32, kv_heads = 8, head_dim = 128, bf16>`
  }];
  let parameters = (ins "int64_t":$layers, "int64_t":$kvHeads,
                        "int64_t":$headDim, "::mlir::Type":$elementType);
  let assemblyFormat = [{
    `<` `layers` `=` $layers `,` `kv_heads` `=` $kvHeads `,`
        `head_dim` `=` $headDim `,` $elementType `>`
  }];
  let genVerifyDecl = 1;
  let extraClassDeclaration = [{
    /// Bytes of one cached head vector (one row).
    int64_t getRowBytes() const;
  }];
}

def Decode_QuantTensorType : Decode_Type<"QuantTensor", "qtensor"> {
  let summary = "INT4 weight matrix with group-wise scales";
  let description = [{
    A 2-D weight [N, K] stored as 4-bit integers with one scale and one
    minimum of `scaleType` per `groupSize` consecutive elements along K.

    Example: `!decode.qtensor<4096x4096xi4, group_size = 128, scale = f16>`
  }];
  let parameters = (ins ArrayRefParameter<"int64_t">:$shape,
                        "int64_t":$groupSize, "::mlir::Type":$scaleType);
  let hasCustomAssemblyFormat = 1;
  let genVerifyDecl = 1;
}

def Decode_TiledCSLType : Decode_Type<"TiledCSL", "tiled_csl"> {
  let summary = "unstructured-sparse weight in Tiled-CSL format";
  let description = [{
    A 2-D weight [N, K] pruned to unstructured sparsity and stored in
    Flash-LLM's Tiled-CSL format (version 3, docs/model-library.md): the
    matrix is cut into `tile`s (default 128x64; the last tile row and column
    may be partial), and each tile keeps a run of 32-bit words (16-bit value |
    16-bit location within the tile) padded to four words, after a
    `TileOffsets` header padded to 16 bytes. A run's words are in an order
    that spreads the GPU kernels' shared-memory stores of them over 32 banks
    of 4 bytes (part of the format; a GPU with other banks reads the same
    words with more bank conflicts).

    Example: `!decode.tiled_csl<4096x4096xf16, tile = 128x64>`
  }];
  let parameters = (ins ArrayRefParameter<"int64_t">:$shape,
                        "::mlir::Type":$elementType,
                        ArrayRefParameter<"int64_t">:$tile);
  let hasCustomAssemblyFormat = 1;
  let genVerifyDecl = 1;
  let extraClassDeclaration = [{
    /// The layout's version, recorded in the manifest.
    static constexpr int64_t kVersion = 3;
    /// Words per 16-byte vector: the header and every tile's run are padded
    /// to a multiple of it.
    static constexpr int64_t kWordsPerVector = 4;
    /// The shared-memory banks the packed word order spreads each store
    /// instruction of the Flash-LLM kernels' scatter over: kOrderBanks banks
    /// of kOrderBankBytes bytes (the runtime packer's kTiledCSLOrderBanks).
    /// A format constant, fixed by the version, not a fact of the GPU that
    /// reads the weight.
    static constexpr int64_t kOrderBanks = 32;
    static constexpr int64_t kOrderBankBytes = 4;
    /// Tile rows (ceil(N / TN)) and tiles per tile row (ceil(K / TK)).
    int64_t getTileRows() const {
      return (getShape()[0] + getTile()[0] - 1) / getTile()[0];
    }
    int64_t getTilesPerRow() const {
      return (getShape()[1] + getTile()[1] - 1) / getTile()[1];
    }
    int64_t getTileCount() const { return getTileRows() * getTilesPerRow(); }
    /// Words of the header (TileOffsets padded to a whole vector): tile t's
    /// words are [header + TileOffsets[t], header + TileOffsets[t + 1]).
    int64_t getHeaderWords() const {
      return (getTileCount() + kWordsPerVector) / kWordsPerVector *
             kWordsPerVector;
    }
  }];
}

#endif // FDC_DIALECT_DECODE_IR_DECODETYPES_TD
