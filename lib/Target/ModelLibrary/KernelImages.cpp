//===- KernelImages.cpp - the kernel images' globals ----------------------===//

#include "fdc/Target/ModelLibrary.h"

#include "mlir/Dialect/LLVMIR/LLVMDialect.h"
#include "mlir/IR/Builders.h"

using namespace mlir;
using namespace fdc;

void target::addKernelImageGlobals(ModuleOp module,
                                   ArrayRef<KernelImage> images) {
  OpBuilder b = OpBuilder::atBlockBegin(module.getBody());
  Location loc = module.getLoc();
  for (const KernelImage &image : images) {
    std::string data = image.bytes;
    if (image.isText)
      data.push_back('\0');
    auto type = LLVM::LLVMArrayType::get(b.getI8Type(), data.size());
    LLVM::GlobalOp::create(b, loc, type, /*isConstant=*/true,
                           LLVM::Linkage::External, image.symbol,
                           b.getStringAttr(data));
    if (image.isText)
      continue;
    LLVM::GlobalOp::create(b, loc, b.getI64Type(), /*isConstant=*/true,
                           LLVM::Linkage::External, image.symbol + "_size",
                           b.getI64IntegerAttr(image.bytes.size()));
  }
}
