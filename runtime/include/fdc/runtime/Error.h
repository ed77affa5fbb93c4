//===- Error.h - Error and Expected for the fdc runtime ---------*- C++ -*-===//
//
// A small, LLVM-free take on llvm::Error / llvm::Expected: an Error is either
// success or a human-readable message; an Expected<T> holds a T or an Error.
//
//===----------------------------------------------------------------------===//

#ifndef FDC_RUNTIME_ERROR_H
#define FDC_RUNTIME_ERROR_H

#include <cassert>
#include <optional>
#include <sstream>
#include <string>
#include <utility>

namespace fdc::runtime {

/// Success, or a failure that carries a message for the user.
class [[nodiscard]] Error {
public:
  static Error success() { return Error(); }
  static Error failure(std::string message) {
    Error err;
    err.failed = true;
    err.msg = std::move(message);
    return err;
  }

  /// True on failure, as with llvm::Error.
  explicit operator bool() const { return failed; }
  const std::string &message() const { return msg; }

private:
  Error() = default;
  bool failed = false;
  std::string msg;
};

/// Concatenates the streamed form of every argument into one string.
template <typename... Args> std::string concat(const Args &...args) {
  std::ostringstream os;
  (os << ... << args);
  return os.str();
}

/// A failure whose message is the concatenation of the arguments.
template <typename... Args> Error createError(const Args &...args) {
  return Error::failure(concat(args...));
}

/// A value of type T or a failure.
template <typename T> class [[nodiscard]] Expected {
public:
  // Rvalue-reference overloads let `return local;` move in C++17.
  Expected(T &&value) : value(std::move(value)), err(Error::success()) {}
  Expected(const T &value) : value(value), err(Error::success()) {}
  Expected(Error &&error) : err(std::move(error)) {
    assert(err && "an Expected needs a failure or a value");
  }

  /// True when a value is held.
  explicit operator bool() const { return value.has_value(); }
  T &operator*() { return *value; }
  const T &operator*() const { return *value; }
  T *operator->() { return &*value; }
  const T *operator->() const { return &*value; }

  const Error &error() const { return err; }
  Error takeError() { return std::move(err); }

private:
  std::optional<T> value;
  Error err;
};

} // namespace fdc::runtime

#endif // FDC_RUNTIME_ERROR_H
