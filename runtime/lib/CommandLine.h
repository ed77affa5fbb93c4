//===- CommandLine.h - Option parsing of the runtime's tools ----*- C++ -*-===//
//
// The one option parser of fdc-run, fdc-inspect, fdc-tune and fdc-pack (and
// so of `fdc run`, `fdc inspect`, `fdc tune` and `fdc pack`): arguments read
// left to right, -h / --help, "NAME VALUE" (and "--NAME=VALUE" where a tool
// takes it), and how a usage error is reported. Private to the runtime's
// command-line library; needs nothing beyond the C++ library and Error.h.
//
//===----------------------------------------------------------------------===//

#ifndef FDC_RUNTIME_LIB_COMMANDLINE_H
#define FDC_RUNTIME_LIB_COMMANDLINE_H

#include "fdc/runtime/Error.h"

#include <cstdint>
#include <cstdio>
#include <functional>
#include <optional>
#include <string>
#include <vector>

namespace fdc::runtime {

/// A tool's command line. Declare the options, then parse():
///
///   CommandLine cl(argc, argv, "fdc-pack", printUsage);
///   cl.option("--weights", weights).option("-o", output).positional(library);
///   if (std::optional<int> exitCode = cl.parse())
///     return *exitCode;
class CommandLine {
public:
  /// Prints the tool's help ("usage: PROGRAM ...") to `out`.
  using UsageFn = void (*)(FILE *out, const char *program);
  /// Takes an option's value or an argument; a failure is a usage error.
  /// The CommandLine keeps its handlers: what they (or option(name,
  /// value), flag and positional) refer to must outlive it.
  using Handler = std::function<Error(const std::string &)>;

  /// Where the tools' command lines differ (each keeps its own).
  struct Syntax {
    /// The exit code of a usage error.
    int usageExitCode = 2;
    /// An option named "--NAME" that takes a value also reads "--NAME=VALUE".
    bool equalsValues = false;
    /// A missing value reads "option NAME needs a value" (else "NAME needs
    /// a value").
    bool sayOption = true;
  };

  /// argv[0] names the tool in messages (`defaultProgram` without one).
  CommandLine(int argc, char **argv, const char *defaultProgram, UsageFn usage);
  CommandLine(int argc, char **argv, const char *defaultProgram, UsageFn usage,
              Syntax syntax);

  const char *program() const { return programName; }

  /// An option that takes a value ("NAME VALUE"), handed to `handler`.
  CommandLine &option(std::string name, Handler handler);
  /// An option whose value is stored in `value`.
  CommandLine &option(std::string name, std::string &value);
  /// An option without a value; `seen` is set when given.
  CommandLine &flag(std::string name, bool &seen);
  /// The one positional argument, stored in `value`. A second one, or an
  /// argument that starts with '-' and is no option, is refused:
  /// "unexpected argument 'ARG'" (also the default without this call).
  CommandLine &positional(std::string &value);
  /// Instead of positional(): every argument that is neither -h, --help nor
  /// an option goes to `handler`, which takes it (positional arguments) or
  /// refuses it (unknown options).
  CommandLine &otherArguments(Handler handler);

  /// Reads the arguments in order, calling the handlers. Returns nothing
  /// when the tool should go on; else the exit code, after printing the help
  /// to stdout (-h, --help: 0) or the first usage error (usageError()).
  std::optional<int> parse();

  /// Prints "PROGRAM: error: MESSAGE" and the help to stderr; returns the
  /// usage error's exit code.
  int usageError(const std::string &message) const;
  /// Prints the help to stderr; returns the usage error's exit code.
  int usageError() const;
  /// Prints "PROGRAM: error: MESSAGE" to stderr; returns 1.
  int fail(const std::string &message) const;

private:
  struct Option {
    std::string name;
    bool takesValue;
    Handler handler;
  };
  const Option *find(const std::string &name, bool needsValue) const;

  int argc;
  char **argv;
  const char *programName;
  UsageFn usage;
  Syntax syntax;
  std::vector<Option> options;
  Handler others;
};

/// Parses a base-10 integer in [min, max] (the whole of `text`).
bool parseInteger(const std::string &text, int64_t min, int64_t max,
                  int64_t &out);

/// Splits a comma-separated list: "1,2" is {"1", "2"}, "" is {""}.
std::vector<std::string> splitList(const std::string &text);

} // namespace fdc::runtime

#endif // FDC_RUNTIME_LIB_COMMANDLINE_H
