//===- CommandLine.cpp - Option parsing of the runtime's tools ------------===//

#include "CommandLine.h"

#include <cerrno>
#include <cstdlib>
#include <utility>

using namespace fdc::runtime;

CommandLine::CommandLine(int argc, char **argv, const char *defaultProgram,
                         UsageFn usage)
    : CommandLine(argc, argv, defaultProgram, usage, Syntax()) {}

CommandLine::CommandLine(int argc, char **argv, const char *defaultProgram,
                         UsageFn usage, Syntax syntax)
    : argc(argc), argv(argv),
      programName(argc > 0 && argv[0] ? argv[0] : defaultProgram), usage(usage),
      syntax(syntax) {}

CommandLine &CommandLine::option(std::string name, Handler handler) {
  options.push_back({std::move(name), true, std::move(handler)});
  return *this;
}

CommandLine &CommandLine::option(std::string name, std::string &value) {
  return option(std::move(name), [&value](const std::string &text) {
    value = text;
    return Error::success();
  });
}

CommandLine &CommandLine::flag(std::string name, bool &seen) {
  options.push_back({std::move(name), false, [&seen](const std::string &) {
                       seen = true;
                       return Error::success();
                     }});
  return *this;
}

CommandLine &CommandLine::positional(std::string &value) {
  return otherArguments([&value](const std::string &arg) {
    if (arg.rfind('-', 0) == 0 || !value.empty())
      return createError("unexpected argument '", arg, "'");
    value = arg;
    return Error::success();
  });
}

CommandLine &CommandLine::otherArguments(Handler handler) {
  others = std::move(handler);
  return *this;
}

const CommandLine::Option *CommandLine::find(const std::string &name,
                                             bool needsValue) const {
  for (const Option &option : options)
    if (option.name == name && (option.takesValue || !needsValue))
      return &option;
  return nullptr;
}

std::optional<int> CommandLine::parse() {
  for (int i = 1; i < argc; ++i) {
    std::string arg = argv[i];
    if (arg == "-h" || arg == "--help") {
      usage(stdout, programName);
      return 0;
    }
    const Option *option = find(arg, /*needsValue=*/false);
    std::optional<std::string> value;
    size_t equals = arg.find('=');
    if (!option && syntax.equalsValues && arg.rfind("--", 0) == 0 &&
        equals != std::string::npos) {
      option = find(arg.substr(0, equals), /*needsValue=*/true);
      if (option)
        value = arg.substr(equals + 1);
    }
    Error err = Error::success();
    if (!option) {
      err =
          others ? others(arg) : createError("unexpected argument '", arg, "'");
    } else if (!option->takesValue) {
      err = option->handler("");
    } else if (value) {
      err = option->handler(*value);
    } else if (i + 1 < argc) {
      err = option->handler(argv[++i]);
    } else {
      err =
          createError(syntax.sayOption ? "option " : "", arg, " needs a value");
    }
    if (err)
      return usageError(err.message());
  }
  return std::nullopt;
}

int CommandLine::usageError(const std::string &message) const {
  std::fprintf(stderr, "%s: error: %s\n", programName, message.c_str());
  return usageError();
}

int CommandLine::usageError() const {
  usage(stderr, programName);
  return syntax.usageExitCode;
}

int CommandLine::fail(const std::string &message) const {
  std::fprintf(stderr, "%s: error: %s\n", programName, message.c_str());
  return 1;
}

bool fdc::runtime::parseInteger(const std::string &text, int64_t min,
                                int64_t max, int64_t &out) {
  if (text.empty())
    return false;
  errno = 0;
  char *end = nullptr;
  long long value = std::strtoll(text.c_str(), &end, 10);
  if (errno != 0 || *end != '\0' || value < min || value > max)
    return false;
  out = value;
  return true;
}

std::vector<std::string> fdc::runtime::splitList(const std::string &text) {
  std::vector<std::string> items;
  size_t begin = 0;
  while (true) {
    size_t comma = text.find(',', begin);
    if (comma == std::string::npos) {
      items.push_back(text.substr(begin));
      return items;
    }
    items.push_back(text.substr(begin, comma - begin));
    begin = comma + 1;
  }
}
