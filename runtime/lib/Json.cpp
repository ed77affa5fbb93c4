//===- Json.cpp - Strict, bounds-checked JSON parser ----------------------===//

#include "fdc/runtime/Json.h"

#include <charconv>
#include <cmath>
#include <cstdio>

using namespace fdc::runtime;
using namespace fdc::runtime::json;

std::optional<bool> Value::getBool() const {
  if (auto *b = std::get_if<bool>(&data))
    return *b;
  return std::nullopt;
}

std::optional<double> Value::getDouble() const {
  if (auto *n = std::get_if<Number>(&data))
    return n->asDouble;
  return std::nullopt;
}

std::optional<int64_t> Value::getInt64() const {
  if (auto *n = std::get_if<Number>(&data))
    return n->asInt64;
  return std::nullopt;
}

const std::string *Value::getString() const {
  return std::get_if<std::string>(&data);
}

const Array *Value::getArray() const { return std::get_if<Array>(&data); }

const Object *Value::getObject() const { return std::get_if<Object>(&data); }

const Value *Value::get(std::string_view key) const {
  const Object *object = getObject();
  if (!object)
    return nullptr;
  auto it = object->find(key);
  return it == object->end() ? nullptr : &it->second;
}

const char *json::kindName(Kind kind) {
  switch (kind) {
  case Kind::Null:
    return "null";
  case Kind::Bool:
    return "bool";
  case Kind::Number:
    return "number";
  case Kind::String:
    return "string";
  case Kind::Array:
    return "array";
  case Kind::Object:
    return "object";
  }
  return "?";
}

namespace {

/// Recursive-descent parser over a byte range. Every read is bounds-checked
/// against `end`; the first error wins and stops the parse.
class Parser {
public:
  Parser(std::string_view text, ParseOptions options)
      : begin(text.data()), cur(text.data()), end(text.data() + text.size()),
        options(options) {}

  Expected<Value> parseDocument() {
    skipWhitespace();
    Value value;
    if (!parseValue(value, 0))
      return std::move(error);
    skipWhitespace();
    if (cur != end)
      return fail("unexpected trailing characters after the JSON value");
    return value;
  }

private:
  bool atEnd() const { return cur == end; }

  Error fail(const std::string &message) {
    return createError("JSON error at byte ", cur - begin, ": ", message);
  }

  bool setError(const std::string &message) {
    error = fail(message);
    return false;
  }

  void skipWhitespace() {
    while (cur != end &&
           (*cur == ' ' || *cur == '\t' || *cur == '\n' || *cur == '\r'))
      ++cur;
  }

  bool consumeLiteral(std::string_view literal) {
    if (static_cast<size_t>(end - cur) < literal.size() ||
        std::string_view(cur, literal.size()) != literal)
      return setError("invalid literal");
    cur += literal.size();
    return true;
  }

  bool parseValue(Value &out, unsigned depth) {
    if (atEnd())
      return setError("unexpected end of input, expected a value");
    switch (*cur) {
    case '{':
      return parseObject(out, depth + 1);
    case '[':
      return parseArray(out, depth + 1);
    case '"': {
      std::string s;
      if (!parseString(s))
        return false;
      out = Value(std::move(s));
      return true;
    }
    case 't':
      if (!consumeLiteral("true"))
        return false;
      out = Value(true);
      return true;
    case 'f':
      if (!consumeLiteral("false"))
        return false;
      out = Value(false);
      return true;
    case 'n':
      if (!consumeLiteral("null"))
        return false;
      out = Value();
      return true;
    default:
      if (*cur == '-' || (*cur >= '0' && *cur <= '9'))
        return parseNumber(out);
      return setError(concat("unexpected character '", printable(*cur), "'"));
    }
  }

  static std::string printable(char c) {
    unsigned char u = static_cast<unsigned char>(c);
    if (u >= 0x20 && u < 0x7f)
      return std::string(1, c);
    static const char *hex = "0123456789abcdef";
    return std::string("\\x") + hex[u >> 4] + hex[u & 15];
  }

  bool checkDepth(unsigned depth) {
    if (depth > options.maxDepth)
      return setError(concat("nesting deeper than ", options.maxDepth));
    return true;
  }

  bool parseObject(Value &out, unsigned depth) {
    if (!checkDepth(depth))
      return false;
    ++cur; // '{'
    Object object;
    skipWhitespace();
    if (!atEnd() && *cur == '}') {
      ++cur;
      out = Value(std::move(object));
      return true;
    }
    while (true) {
      skipWhitespace();
      if (atEnd() || *cur != '"')
        return setError("expected a string key");
      const char *keyStart = cur;
      std::string key;
      if (!parseString(key))
        return false;
      skipWhitespace();
      if (atEnd() || *cur != ':')
        return setError("expected ':' after an object key");
      ++cur;
      skipWhitespace();
      Value member;
      if (!parseValue(member, depth))
        return false;
      if (!object.emplace(std::move(key), std::move(member)).second) {
        cur = keyStart;
        return setError("duplicate object key");
      }
      skipWhitespace();
      if (atEnd())
        return setError("unexpected end of input in an object");
      if (*cur == ',') {
        ++cur;
        continue;
      }
      if (*cur == '}') {
        ++cur;
        out = Value(std::move(object));
        return true;
      }
      return setError("expected ',' or '}' in an object");
    }
  }

  bool parseArray(Value &out, unsigned depth) {
    if (!checkDepth(depth))
      return false;
    ++cur; // '['
    Array array;
    skipWhitespace();
    if (!atEnd() && *cur == ']') {
      ++cur;
      out = Value(std::move(array));
      return true;
    }
    while (true) {
      skipWhitespace();
      Value element;
      if (!parseValue(element, depth))
        return false;
      array.push_back(std::move(element));
      skipWhitespace();
      if (atEnd())
        return setError("unexpected end of input in an array");
      if (*cur == ',') {
        ++cur;
        continue;
      }
      if (*cur == ']') {
        ++cur;
        out = Value(std::move(array));
        return true;
      }
      return setError("expected ',' or ']' in an array");
    }
  }

  bool parseHex4(uint32_t &out) {
    if (end - cur < 4)
      return setError("truncated \\u escape");
    out = 0;
    for (int i = 0; i < 4; ++i) {
      char c = cur[i];
      uint32_t digit;
      if (c >= '0' && c <= '9')
        digit = c - '0';
      else if (c >= 'a' && c <= 'f')
        digit = c - 'a' + 10;
      else if (c >= 'A' && c <= 'F')
        digit = c - 'A' + 10;
      else
        return setError("invalid hex digit in \\u escape");
      out = out * 16 + digit;
    }
    cur += 4;
    return true;
  }

  static void appendUtf8(std::string &s, uint32_t cp) {
    if (cp < 0x80) {
      s += static_cast<char>(cp);
    } else if (cp < 0x800) {
      s += static_cast<char>(0xc0 | (cp >> 6));
      s += static_cast<char>(0x80 | (cp & 0x3f));
    } else if (cp < 0x10000) {
      s += static_cast<char>(0xe0 | (cp >> 12));
      s += static_cast<char>(0x80 | ((cp >> 6) & 0x3f));
      s += static_cast<char>(0x80 | (cp & 0x3f));
    } else {
      s += static_cast<char>(0xf0 | (cp >> 18));
      s += static_cast<char>(0x80 | ((cp >> 12) & 0x3f));
      s += static_cast<char>(0x80 | ((cp >> 6) & 0x3f));
      s += static_cast<char>(0x80 | (cp & 0x3f));
    }
  }

  bool parseEscape(std::string &s) {
    ++cur; // '\\'
    if (atEnd())
      return setError("truncated escape sequence");
    char c = *cur++;
    switch (c) {
    case '"':
    case '\\':
    case '/':
      s += c;
      return true;
    case 'b':
      s += '\b';
      return true;
    case 'f':
      s += '\f';
      return true;
    case 'n':
      s += '\n';
      return true;
    case 'r':
      s += '\r';
      return true;
    case 't':
      s += '\t';
      return true;
    case 'u': {
      uint32_t cp;
      if (!parseHex4(cp))
        return false;
      if (cp >= 0xdc00 && cp <= 0xdfff)
        return setError("unpaired low surrogate in \\u escape");
      if (cp >= 0xd800 && cp <= 0xdbff) {
        if (end - cur < 2 || cur[0] != '\\' || cur[1] != 'u')
          return setError("unpaired high surrogate in \\u escape");
        cur += 2;
        uint32_t low;
        if (!parseHex4(low))
          return false;
        if (low < 0xdc00 || low > 0xdfff)
          return setError("invalid low surrogate in \\u escape");
        cp = 0x10000 + ((cp - 0xd800) << 10) + (low - 0xdc00);
      }
      appendUtf8(s, cp);
      return true;
    }
    default:
      --cur;
      return setError("invalid escape sequence");
    }
  }

  /// Validates one UTF-8 encoded code point starting at `cur` and appends it.
  bool parseUtf8(std::string &s) {
    unsigned char lead = static_cast<unsigned char>(*cur);
    int length;
    uint32_t cp;
    if (lead >= 0xc2 && lead <= 0xdf) {
      length = 2;
      cp = lead & 0x1f;
    } else if (lead >= 0xe0 && lead <= 0xef) {
      length = 3;
      cp = lead & 0x0f;
    } else if (lead >= 0xf0 && lead <= 0xf4) {
      length = 4;
      cp = lead & 0x07;
    } else {
      return setError("invalid UTF-8 in a string");
    }
    if (end - cur < length)
      return setError("truncated UTF-8 sequence in a string");
    for (int i = 1; i < length; ++i) {
      unsigned char c = static_cast<unsigned char>(cur[i]);
      if ((c & 0xc0) != 0x80)
        return setError("invalid UTF-8 in a string");
      cp = (cp << 6) | (c & 0x3f);
    }
    if ((length == 3 && cp < 0x800) || (length == 4 && cp < 0x10000) ||
        cp > 0x10ffff || (cp >= 0xd800 && cp <= 0xdfff))
      return setError("invalid UTF-8 in a string");
    s.append(cur, length);
    cur += length;
    return true;
  }

  bool parseString(std::string &s) {
    ++cur; // opening quote
    while (true) {
      if (atEnd())
        return setError("unterminated string");
      unsigned char c = static_cast<unsigned char>(*cur);
      if (c == '"') {
        ++cur;
        return true;
      }
      if (c == '\\') {
        if (!parseEscape(s))
          return false;
      } else if (c < 0x20) {
        return setError("control character in a string");
      } else if (c < 0x80) {
        s += static_cast<char>(c);
        ++cur;
      } else if (!parseUtf8(s)) {
        return false;
      }
    }
  }

  static bool isDigit(char c) { return c >= '0' && c <= '9'; }

  bool parseNumber(Value &out) {
    const char *start = cur;
    bool negative = false;
    if (*cur == '-') {
      negative = true;
      ++cur;
    }
    if (atEnd() || !isDigit(*cur))
      return setError("expected a digit");
    if (*cur == '0') {
      ++cur;
      if (!atEnd() && isDigit(*cur))
        return setError("leading zeros are not allowed");
    } else {
      while (!atEnd() && isDigit(*cur))
        ++cur;
    }
    bool integral = true;
    if (!atEnd() && *cur == '.') {
      integral = false;
      ++cur;
      if (atEnd() || !isDigit(*cur))
        return setError("expected a digit after '.'");
      while (!atEnd() && isDigit(*cur))
        ++cur;
    }
    if (!atEnd() && (*cur == 'e' || *cur == 'E')) {
      integral = false;
      ++cur;
      if (!atEnd() && (*cur == '+' || *cur == '-'))
        ++cur;
      if (atEnd() || !isDigit(*cur))
        return setError("expected a digit in the exponent");
      while (!atEnd() && isDigit(*cur))
        ++cur;
    }

    Number number;
    auto [ptr, ec] = std::from_chars(start, cur, number.asDouble);
    if (ec == std::errc::result_out_of_range) {
      cur = start;
      return setError("number out of range for a double");
    }
    if (ec != std::errc() || ptr != cur) {
      cur = start;
      return setError("invalid number");
    }

    if (integral) {
      // Exact int64 from the digits, overflow-checked.
      uint64_t magnitude = 0;
      bool overflow = false;
      for (const char *p = start + (negative ? 1 : 0); p != cur; ++p) {
        uint64_t digit = *p - '0';
        if (magnitude > (UINT64_MAX - digit) / 10) {
          overflow = true;
          break;
        }
        magnitude = magnitude * 10 + digit;
      }
      if (!overflow) {
        if (!negative && magnitude <= static_cast<uint64_t>(INT64_MAX))
          number.asInt64 = static_cast<int64_t>(magnitude);
        else if (negative && magnitude <= static_cast<uint64_t>(INT64_MAX) + 1)
          number.asInt64 = static_cast<int64_t>(0 - magnitude);
      }
    } else if (std::isfinite(number.asDouble) &&
               std::fabs(number.asDouble) <= 9007199254740992.0 &&
               number.asDouble == std::trunc(number.asDouble)) {
      number.asInt64 = static_cast<int64_t>(number.asDouble);
    }
    out = Value(number);
    return true;
  }

  const char *begin;
  const char *cur;
  const char *end;
  ParseOptions options;
  Error error = Error::success();
};

} // namespace

Expected<Value> json::parse(std::string_view text, ParseOptions options) {
  return Parser(text, options).parseDocument();
}

std::string json::quote(std::string_view text) {
  std::string out = "\"";
  for (unsigned char c : text) {
    if (c == '"' || c == '\\') {
      out += '\\';
      out += static_cast<char>(c);
    } else if (c < 0x20) {
      char escape[8];
      std::snprintf(escape, sizeof(escape), "\\u%04x", c);
      out += escape;
    } else {
      out += static_cast<char>(c);
    }
  }
  return out + "\"";
}
