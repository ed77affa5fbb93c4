//===- TestUtil.h - helpers for the decode dialect unit tests ---*- C++ -*-===//

#ifndef FDC_TEST_UNITTESTS_DIALECT_DECODE_TESTUTIL_H
#define FDC_TEST_UNITTESTS_DIALECT_DECODE_TESTUTIL_H

#include "mlir/IR/Diagnostics.h"
#include "mlir/IR/MLIRContext.h"
#include "llvm/Support/raw_ostream.h"

#include <gtest/gtest.h>

#include <string>
#include <vector>

namespace fdc::test {

/// A context with the decode dialect (and the dialects it builds on) loaded.
class DecodeTest : public ::testing::Test {
protected:
  DecodeTest();

  /// The messages of every diagnostic emitted since the last call.
  std::vector<std::string> takeDiagnostics();

  /// Succeeds if exactly one diagnostic was emitted since the last call and
  /// its message contains `expected`; clears the diagnostics.
  ::testing::AssertionResult oneDiagnostic(llvm::StringRef expected);

  /// Succeeds if no diagnostic was emitted since the last call.
  ::testing::AssertionResult noDiagnostics();

  /// An emitError callback for getChecked().
  mlir::InFlightDiagnostic emitError();

  mlir::MLIRContext ctx;

private:
  std::vector<std::string> diagnostics;
  mlir::ScopedDiagnosticHandler handler;
};

/// Prints anything with an operator<< for raw_ostream.
template <typename T> std::string print(const T &value) {
  std::string text;
  llvm::raw_string_ostream os(text);
  os << value;
  return text;
}

} // namespace fdc::test

#endif // FDC_TEST_UNITTESTS_DIALECT_DECODE_TESTUTIL_H
