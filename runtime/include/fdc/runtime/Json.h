//===- Json.h - Strict, bounds-checked JSON parser --------------*- C++ -*-===//
//
// Parses RFC 8259 JSON: no comments, no trailing commas, no duplicate keys,
// valid UTF-8 only, nesting bounded by a depth limit, numbers outside the
// range of a double refused. Errors name the byte offset at which parsing
// failed.
//
//===----------------------------------------------------------------------===//

#ifndef FDC_RUNTIME_JSON_H
#define FDC_RUNTIME_JSON_H

#include "fdc/runtime/Error.h"

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <variant>
#include <vector>

namespace fdc::runtime::json {

class Value;
using Array = std::vector<Value>;
using Object = std::map<std::string, Value, std::less<>>;

/// A JSON number: always a double; also an exact int64 when the literal is an
/// integer that fits, or a double that is integral and exactly representable.
struct Number {
  double asDouble = 0;
  std::optional<int64_t> asInt64;
};

enum class Kind { Null, Bool, Number, String, Array, Object };

/// One JSON value.
class Value {
public:
  Value() = default;
  explicit Value(bool b) : data(b) {}
  explicit Value(Number n) : data(n) {}
  explicit Value(std::string s) : data(std::move(s)) {}
  explicit Value(Array a) : data(std::move(a)) {}
  explicit Value(Object o) : data(std::move(o)) {}

  Kind kind() const { return static_cast<Kind>(data.index()); }
  bool isNull() const { return kind() == Kind::Null; }
  bool isBool() const { return kind() == Kind::Bool; }
  bool isNumber() const { return kind() == Kind::Number; }
  bool isString() const { return kind() == Kind::String; }
  bool isArray() const { return kind() == Kind::Array; }
  bool isObject() const { return kind() == Kind::Object; }

  /// Accessors return nullptr / nullopt when the kind differs.
  std::optional<bool> getBool() const;
  std::optional<double> getDouble() const;
  std::optional<int64_t> getInt64() const;
  const std::string *getString() const;
  const Array *getArray() const;
  const Object *getObject() const;

  /// Member `key` of an object, or nullptr.
  const Value *get(std::string_view key) const;

private:
  std::variant<std::monostate, bool, Number, std::string, Array, Object> data;
};

/// Name of a kind ("null", "bool", "number", "string", "array", "object").
const char *kindName(Kind kind);

struct ParseOptions {
  unsigned maxDepth = 64;
};

/// Parses a complete JSON text (surrounding whitespace allowed). On failure
/// the message reads "JSON error at byte N: ...".
Expected<Value> parse(std::string_view text, ParseOptions options = {});

/// `text` as a JSON string literal: quotes, with `"` and `\` escaped and
/// control characters written as \u00XX (other bytes are copied).
std::string quote(std::string_view text);

} // namespace fdc::runtime::json

#endif // FDC_RUNTIME_JSON_H
