//===- CommandLineTest.cpp - Tests of the tools' option parser ------------===//

#include "../lib/CommandLine.h"

#include <gtest/gtest.h>

using namespace fdc::runtime;

namespace {

void printUsage(FILE *out, const char *program) {
  std::fprintf(out, "usage: %s LIB [--weights W] [-o OUT] [--flag]\n", program);
}

/// What parse() did: its result and what it printed.
struct Parsed {
  std::optional<int> exitCode;
  std::string out, err;
};

/// Parses `args` (argv[0] is "tool") with the options `declare` adds.
Parsed parse(std::vector<std::string> args,
             const std::function<void(CommandLine &)> &declare,
             CommandLine::Syntax syntax = {}) {
  args.insert(args.begin(), "tool");
  std::vector<char *> argv;
  for (std::string &arg : args)
    argv.push_back(arg.data());
  argv.push_back(nullptr);
  CommandLine cl(static_cast<int>(args.size()), argv.data(), "default",
                 printUsage, syntax);
  declare(cl);
  testing::internal::CaptureStdout();
  testing::internal::CaptureStderr();
  Parsed parsed;
  parsed.exitCode = cl.parse();
  parsed.out = testing::internal::GetCapturedStdout();
  parsed.err = testing::internal::GetCapturedStderr();
  return parsed;
}

const char *kUsage = "usage: tool LIB [--weights W] [-o OUT] [--flag]\n";

/// A tool with a positional argument, two options with values and a flag.
struct Tool {
  std::string library, weights, output;
  bool flag = false;
  void declare(CommandLine &cl) {
    cl.option("--weights", weights)
        .option("-o", output)
        .flag("--flag", flag)
        .positional(library);
  }
  Parsed parse(std::vector<std::string> args, CommandLine::Syntax syntax = {}) {
    return ::parse(
        std::move(args), [&](CommandLine &cl) { declare(cl); }, syntax);
  }
};

CommandLine::Syntax equalsSyntax() {
  CommandLine::Syntax syntax;
  syntax.equalsValues = true;
  return syntax;
}

TEST(CommandLineTest, ValuesFlagsAndThePositionalArgument) {
  Tool tool;
  Parsed parsed = tool.parse({"--weights", "w", "lib.so", "-o", "out"});
  EXPECT_EQ(parsed.exitCode, std::nullopt);
  EXPECT_EQ(parsed.out + parsed.err, "");
  EXPECT_EQ(tool.library, "lib.so");
  EXPECT_EQ(tool.weights, "w");
  EXPECT_EQ(tool.output, "out");
  EXPECT_FALSE(tool.flag);

  // A value is the next argument whatever it looks like; the last one wins.
  Tool dashes;
  parsed = dashes.parse(
      {"-o", "--flag", "--weights", "-h", "--weights", "x", "--flag", "lib"});
  EXPECT_EQ(parsed.exitCode, std::nullopt) << parsed.err;
  EXPECT_EQ(dashes.output, "--flag");
  EXPECT_EQ(dashes.weights, "x");
  EXPECT_TRUE(dashes.flag);
  EXPECT_EQ(dashes.library, "lib");

  Tool none;
  EXPECT_EQ(none.parse({}).exitCode, std::nullopt);
  EXPECT_EQ(none.library, "");
}

TEST(CommandLineTest, EqualsValues) {
  Tool tool;
  Parsed parsed =
      tool.parse({"--weights=a=b", "lib", "-o", "out"}, equalsSyntax());
  EXPECT_EQ(parsed.exitCode, std::nullopt) << parsed.err;
  EXPECT_EQ(tool.weights, "a=b");
  Tool empty;
  EXPECT_EQ(empty.parse({"--weights=", "lib"}, equalsSyntax()).exitCode,
            std::nullopt);
  EXPECT_EQ(empty.weights, "");

  // Only for "--NAME" options that take a value, and only when asked for.
  parsed = Tool().parse({"-o=out"}, equalsSyntax());
  EXPECT_EQ(parsed.exitCode, 2);
  EXPECT_EQ(parsed.err,
            std::string("tool: error: unexpected argument '-o=out'\n") +
                kUsage);
  parsed = Tool().parse({"--flag=1"}, equalsSyntax());
  EXPECT_EQ(parsed.err.substr(0, parsed.err.find('\n')),
            "tool: error: unexpected argument '--flag=1'");
  parsed = Tool().parse({"--weights=w"});
  EXPECT_EQ(parsed.exitCode, 2);
  EXPECT_EQ(parsed.err.substr(0, parsed.err.find('\n')),
            "tool: error: unexpected argument '--weights=w'");
}

TEST(CommandLineTest, MissingValue) {
  Parsed parsed = Tool().parse({"lib", "--weights"});
  EXPECT_EQ(parsed.exitCode, 2);
  EXPECT_EQ(parsed.out, "");
  EXPECT_EQ(parsed.err,
            std::string("tool: error: option --weights needs a value\n") +
                kUsage);

  CommandLine::Syntax bare;
  bare.sayOption = false;
  bare.usageExitCode = 1;
  parsed = Tool().parse({"-o"}, bare);
  EXPECT_EQ(parsed.exitCode, 1);
  EXPECT_EQ(parsed.err,
            std::string("tool: error: -o needs a value\n") + kUsage);
}

TEST(CommandLineTest, UnexpectedArguments) {
  for (const char *arg : {"--bogus", "-x", "-", "--weight"}) {
    Tool tool;
    Parsed parsed = tool.parse({"lib", arg, "--weights", "w"});
    EXPECT_EQ(parsed.exitCode, 2) << arg;
    EXPECT_EQ(parsed.err, "tool: error: unexpected argument '" +
                              std::string(arg) + "'\n" + kUsage);
    // Parsing stops at the first error.
    EXPECT_EQ(tool.weights, "") << arg;
  }
  Parsed parsed = Tool().parse({"a.so", "b.so"});
  EXPECT_EQ(parsed.exitCode, 2);
  EXPECT_EQ(parsed.err,
            std::string("tool: error: unexpected argument 'b.so'\n") + kUsage);

  // Without positional(), every positional argument is unexpected.
  parsed = parse({"lib"}, [](CommandLine &) {});
  EXPECT_EQ(parsed.exitCode, 2);
  EXPECT_EQ(parsed.err,
            std::string("tool: error: unexpected argument 'lib'\n") + kUsage);
}

TEST(CommandLineTest, Help) {
  for (const char *help : {"-h", "--help"}) {
    Tool tool;
    Parsed parsed = tool.parse({"--weights", "w", help, "--bogus", "-o", "x"});
    EXPECT_EQ(parsed.exitCode, 0) << help;
    EXPECT_EQ(parsed.out, kUsage);
    EXPECT_EQ(parsed.err, "");
    // Read up to the help, not after it.
    EXPECT_EQ(tool.weights, "w");
    EXPECT_EQ(tool.output, "");
  }
  // An error before it is reported; a value "--help" is no help.
  Parsed parsed = Tool().parse({"--bogus", "--help"});
  EXPECT_EQ(parsed.exitCode, 2);
  EXPECT_EQ(parsed.out, "");
  Tool tool;
  EXPECT_EQ(tool.parse({"-o", "--help"}).exitCode, std::nullopt);
  EXPECT_EQ(tool.output, "--help");
  EXPECT_EQ(Tool().parse({"--help=1"}, equalsSyntax()).exitCode, 2);
}

TEST(CommandLineTest, HandlerErrorsAreUsageErrors) {
  std::vector<std::string> seen;
  auto declare = [&](CommandLine &cl) {
    cl.option("--n", [&](const std::string &value) -> Error {
      int64_t n;
      if (!parseInteger(value, 1, 10, n))
        return createError("--n '", value, "' is not in [1, 10]");
      seen.push_back(value);
      return Error::success();
    });
  };
  CommandLine::Syntax syntax = equalsSyntax();
  syntax.usageExitCode = 1;
  Parsed parsed = parse({"--n", "3", "--n=11", "--n", "4"}, declare, syntax);
  EXPECT_EQ(parsed.exitCode, 1);
  EXPECT_EQ(parsed.err,
            std::string("tool: error: --n '11' is not in [1, 10]\n") + kUsage);
  EXPECT_EQ(seen, std::vector<std::string>{"3"});
}

TEST(CommandLineTest, OtherArguments) {
  // fdc-run's way: only "--" arguments are options; unknown ones are named
  // without their value.
  std::vector<std::string> positional;
  std::string weights;
  auto declare = [&](CommandLine &cl) {
    cl.option("--weights", weights)
        .otherArguments([&](const std::string &arg) -> Error {
          if (arg.rfind("--", 0) == 0)
            return createError("unknown option '", arg.substr(0, arg.find('=')),
                               "'");
          positional.push_back(arg);
          return Error::success();
        });
  };
  Parsed parsed =
      parse({"a", "-x", "--weights=w", "-"}, declare, equalsSyntax());
  EXPECT_EQ(parsed.exitCode, std::nullopt) << parsed.err;
  EXPECT_EQ(positional, (std::vector<std::string>{"a", "-x", "-"}));
  EXPECT_EQ(weights, "w");
  parsed = parse({"--top=1"}, declare, equalsSyntax());
  EXPECT_EQ(parsed.err,
            std::string("tool: error: unknown option '--top'\n") + kUsage);
}

TEST(CommandLineTest, ProgramAndMessages) {
  char name[] = "fdc pack";
  char *argv[] = {name, nullptr};
  CommandLine cl(1, argv, "fdc-pack", printUsage);
  EXPECT_STREQ(cl.program(), "fdc pack");
  testing::internal::CaptureStderr();
  EXPECT_EQ(cl.fail("no such file"), 1);
  EXPECT_EQ(testing::internal::GetCapturedStderr(),
            "fdc pack: error: no such file\n");
  testing::internal::CaptureStderr();
  EXPECT_EQ(cl.usageError("-o is required"), 2);
  EXPECT_EQ(testing::internal::GetCapturedStderr(),
            "fdc pack: error: -o is required\n"
            "usage: fdc pack LIB [--weights W] [-o OUT] [--flag]\n");
  testing::internal::CaptureStderr();
  EXPECT_EQ(cl.usageError(), 2);
  EXPECT_EQ(testing::internal::GetCapturedStderr(),
            "usage: fdc pack LIB [--weights W] [-o OUT] [--flag]\n");

  // No argv[0]: the default name.
  char *noName[] = {nullptr};
  EXPECT_STREQ(CommandLine(0, noName, "fdc-pack", printUsage).program(),
               "fdc-pack");
  EXPECT_STREQ(CommandLine(1, noName, "fdc-pack", printUsage).program(),
               "fdc-pack");
}

TEST(CommandLineTest, ParseInteger) {
  int64_t out = -7;
  EXPECT_TRUE(parseInteger("42", 0, 100, out));
  EXPECT_EQ(out, 42);
  EXPECT_TRUE(parseInteger("-1", -1, 0, out));
  EXPECT_EQ(out, -1);
  EXPECT_TRUE(parseInteger("9223372036854775807", 0, INT64_MAX, out));
  EXPECT_EQ(out, INT64_MAX);
  out = -7;
  for (const char *bad :
       {"", "x", "1x", "1.5", "0x10", "101", "-2", "99999999999999999999"})
    EXPECT_FALSE(parseInteger(bad, -1, 100, out)) << bad;
  EXPECT_EQ(out, -7);
}

TEST(CommandLineTest, SplitList) {
  using List = std::vector<std::string>;
  EXPECT_EQ(splitList("1,2,4"), (List{"1", "2", "4"}));
  EXPECT_EQ(splitList("8"), (List{"8"}));
  EXPECT_EQ(splitList(""), (List{""}));
  EXPECT_EQ(splitList("1,"), (List{"1", ""}));
  EXPECT_EQ(splitList(",,"), (List{"", "", ""}));
}

} // namespace
