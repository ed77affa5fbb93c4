//===- TestUtil.cpp - helpers for the decode dialect unit tests -----------===//

#include "TestUtil.h"

#include "fdc/Dialect/Decode/IR/Decode.h"

using namespace mlir;

namespace fdc::test {

DecodeTest::DecodeTest()
    : handler(&ctx, [this](Diagnostic &diag) {
        diagnostics.push_back(diag.str());
        return success();
      }) {
  ctx.loadDialect<decode::DecodeDialect, func::FuncDialect,
                  tensor::TensorDialect, arith::ArithDialect>();
}

std::vector<std::string> DecodeTest::takeDiagnostics() {
  std::vector<std::string> result;
  result.swap(diagnostics);
  return result;
}

static std::string join(const std::vector<std::string> &messages) {
  std::string text;
  for (const std::string &message : messages)
    text += "\n  " + message;
  return text;
}

::testing::AssertionResult DecodeTest::oneDiagnostic(llvm::StringRef expected) {
  std::vector<std::string> messages = takeDiagnostics();
  if (messages.size() == 1 && llvm::StringRef(messages[0]).contains(expected))
    return ::testing::AssertionSuccess();
  return ::testing::AssertionFailure()
         << "expected one diagnostic containing \"" << expected.str()
         << "\", got " << messages.size() << ":" << join(messages);
}

::testing::AssertionResult DecodeTest::noDiagnostics() {
  std::vector<std::string> messages = takeDiagnostics();
  if (messages.empty())
    return ::testing::AssertionSuccess();
  return ::testing::AssertionFailure()
         << "expected no diagnostics, got " << messages.size() << ":"
         << join(messages);
}

InFlightDiagnostic DecodeTest::emitError() {
  return mlir::emitError(UnknownLoc::get(&ctx));
}

} // namespace fdc::test
