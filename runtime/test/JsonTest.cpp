//===- JsonTest.cpp - Tests of the strict JSON parser ---------------------===//

#include "fdc/runtime/Json.h"

#include <gtest/gtest.h>

using namespace fdc::runtime;

namespace {

json::Value parseOk(std::string_view text) {
  Expected<json::Value> value = json::parse(text);
  EXPECT_TRUE(value) << text << ": " << value.error().message();
  return value ? *value : json::Value();
}

TEST(JsonTest, Scalars) {
  EXPECT_TRUE(parseOk("null").isNull());
  EXPECT_EQ(parseOk("true").getBool(), true);
  EXPECT_EQ(parseOk(" false ").getBool(), false);
  EXPECT_EQ(*parseOk("\"hi\"").getString(), "hi");
  EXPECT_EQ(parseOk("0").getInt64(), 0);
  EXPECT_EQ(parseOk("-17").getInt64(), -17);
  EXPECT_EQ(parseOk("1.5").getDouble(), 1.5);
  EXPECT_FALSE(parseOk("1.5").getInt64());
  EXPECT_EQ(parseOk("1e3").getInt64(), 1000);
  EXPECT_EQ(parseOk("2.0").getInt64(), 2);
  EXPECT_EQ(parseOk("-0").getInt64(), 0);
  EXPECT_DOUBLE_EQ(*parseOk("1E-2").getDouble(), 0.01);
  EXPECT_DOUBLE_EQ(*parseOk("9.99999974E-6").getDouble(), 9.99999974e-6);
}

TEST(JsonTest, Int64Exactness) {
  EXPECT_EQ(parseOk("9223372036854775807").getInt64(), INT64_MAX);
  EXPECT_EQ(parseOk("-9223372036854775808").getInt64(), INT64_MIN);
  // 2^53 + 1 is exact as an int64 although no double holds it.
  EXPECT_EQ(parseOk("9007199254740993").getInt64(), 9007199254740993LL);
  // Past int64: still a number, but no exact integer.
  json::Value big = parseOk("9223372036854775808");
  EXPECT_TRUE(big.isNumber());
  EXPECT_FALSE(big.getInt64());
  EXPECT_FALSE(parseOk("1e300").getInt64());
}

TEST(JsonTest, StringEscapes) {
  EXPECT_EQ(*parseOk(R"("a\"b\\c\/d\b\f\n\r\t")").getString(),
            "a\"b\\c/d\b\f\n\r\t");
  EXPECT_EQ(*parseOk(R"("\u0041\u00e9\u20AC")").getString(),
            "A\xc3\xa9\xe2\x82\xac");
  // A surrogate pair: U+1F600.
  EXPECT_EQ(*parseOk(R"("\ud83d\ude00")").getString(), "\xf0\x9f\x98\x80");
  // Raw UTF-8 passes through.
  EXPECT_EQ(*parseOk("\"\xc3\xa9\"").getString(), "\xc3\xa9");
  EXPECT_EQ(*parseOk(R"("\u0000")").getString(), std::string(1, '\0'));
}

TEST(JsonTest, Containers) {
  json::Value v = parseOk(R"( {"a": [1, 2, {"b": null}], "c": {}, "d": []} )");
  ASSERT_TRUE(v.isObject());
  EXPECT_EQ(v.getObject()->size(), 3u);
  const json::Array *a = v.get("a")->getArray();
  ASSERT_TRUE(a);
  ASSERT_EQ(a->size(), 3u);
  EXPECT_EQ((*a)[1].getInt64(), 2);
  EXPECT_TRUE((*a)[2].get("b")->isNull());
  EXPECT_TRUE(v.get("c")->getObject()->empty());
  EXPECT_TRUE(v.get("d")->getArray()->empty());
  EXPECT_EQ(v.get("missing"), nullptr);
  EXPECT_EQ((*a)[0].get("x"), nullptr);
}

TEST(JsonTest, DepthLimit) {
  std::string ok(64, '['), tooDeep(65, '[');
  ok += std::string(64, ']');
  tooDeep += std::string(65, ']');
  EXPECT_TRUE(json::parse(ok));
  Expected<json::Value> v = json::parse(tooDeep);
  ASSERT_FALSE(v);
  EXPECT_NE(v.error().message().find("nesting deeper than 64"),
            std::string::npos);
  json::ParseOptions shallow;
  shallow.maxDepth = 2;
  EXPECT_FALSE(json::parse("[[[1]]]", shallow));
  EXPECT_TRUE(json::parse("[[1]]", shallow));
}

TEST(JsonTest, ErrorNamesByteOffset) {
  Expected<json::Value> v = json::parse("[1, 2,]");
  ASSERT_FALSE(v);
  EXPECT_EQ(v.error().message().rfind("JSON error at byte 6: ", 0), 0u)
      << v.error().message();
  Expected<json::Value> dup = json::parse(R"({"a": 1, "a": 2})");
  ASSERT_FALSE(dup);
  EXPECT_NE(dup.error().message().find("byte 9: duplicate object key"),
            std::string::npos)
      << dup.error().message();
}

class JsonMalformedTest : public ::testing::TestWithParam<const char *> {};

TEST_P(JsonMalformedTest, IsRejected) {
  Expected<json::Value> v = json::parse(GetParam());
  ASSERT_FALSE(v) << "accepted: " << GetParam();
  EXPECT_EQ(v.error().message().rfind("JSON error at byte ", 0), 0u);
}

INSTANTIATE_TEST_SUITE_P(
    Malformed, JsonMalformedTest,
    ::testing::Values("", " ", "{", "}", "[", "]", "[1,]", "[,1]", "{\"a\":1,}",
                      "{,}", "{\"a\"}", "{\"a\" 1}", "{\"a\":}", "{1:2}",
                      "{a:1}", "{'a':1}", "{\"a\":1 \"b\":2}", "[1 2]", "01",
                      "-01", "1.", ".5", "+1", "-", "1e", "1e+", "1.e3", "0x10",
                      "NaN", "Infinity", "-Infinity", "1e400", "-1e400", "tru",
                      "nul", "fals", "True", "nulll", "\"abc", "\"\\x\"",
                      "\"\\u12\"", "\"\\u12g4\"", "\"\\ud800\"",
                      "\"\\ud800\\u0041\"", "\"\\udc00\"", "\"a\nb\"", "\"\t\"",
                      "\"\x01\"", "\"\xff\"", "\"\xc0\xaf\"",
                      "\"\xe0\x80\xaf\"", "\"\xed\xa0\x80\"",
                      "\"\xf4\x90\x80\x80\"", "\"\xc3\"", "1 2", "[] x", "{}{}",
                      "// c\n1", "/* c */ 1", "{\"a\":1,\"a\":1}"));

TEST(JsonTest, EmbeddedNulIsTrailingGarbage) {
  std::string text("[1]\0", 4);
  EXPECT_FALSE(json::parse(text));
}

} // namespace
