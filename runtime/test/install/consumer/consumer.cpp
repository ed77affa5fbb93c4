// Uses the installed runtime from C++: the C++ API (the JSON parser), the C
// API's error path, and, given a model library and its weights, a real
// generation through the C API:
//   consumer [MODEL.so WEIGHTS PROMPT_ID...]
#include "fdc/runtime/Json.h"
#include "fdc_runtime.h"

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <vector>

namespace json = fdc::runtime::json;

int main(int argc, char **argv) {
  // C++ API.
  auto value = json::parse(R"({"ids": [3, 1, 4]})");
  if (!value || !value->get("ids") || !value->get("ids")->getArray() ||
      value->get("ids")->getArray()->size() != 3) {
    std::fprintf(stderr, "consumer: JSON parse failed\n");
    return 1;
  }
  auto bad = json::parse("[1,]");
  if (bad || bad.error().message().find("JSON error at byte") ==
                 std::string::npos) {
    std::fprintf(stderr, "consumer: a bad JSON text was accepted\n");
    return 1;
  }

  // C API, error path.
  char *error = nullptr;
  if (fdc_model_load("/nonexistent/fdc-model.so", "/nonexistent/weights", 0,
                     1, &error) ||
      !error || !std::strstr(error, "/nonexistent/")) {
    std::fprintf(stderr, "consumer: expected a load error\n");
    return 1;
  }
  fdc_string_free(error);
  std::printf("consumer: ok\n");
  if (argc < 4)
    return 0;

  // C API, a real model.
  fdc_model *model = fdc_model_load(argv[1], argv[2], 0, 1, &error);
  if (!model) {
    std::fprintf(stderr, "consumer: %s\n", error);
    fdc_string_free(error);
    return 1;
  }
  std::vector<int32_t> prompt;
  for (int i = 3; i < argc; ++i)
    prompt.push_back(std::atoi(argv[i]));
  std::vector<int32_t> ids(8);
  int64_t len = 0;
  if (fdc_generate(model, prompt.data(), prompt.size(), ids.size(), nullptr,
                   ids.data(), &len, nullptr)) {
    std::fprintf(stderr, "consumer: %s\n", fdc_last_error());
    fdc_model_free(model);
    return 1;
  }
  std::printf("ids: ");
  for (int64_t i = 0; i < len; ++i)
    std::printf(i ? ",%d" : "%d", ids[i]);
  std::printf("\n");
  fdc_model_free(model);
  return 0;
}
