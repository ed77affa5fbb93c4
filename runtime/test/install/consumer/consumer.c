/* Uses the installed C API from C: a missing model library is refused with a
 * message naming it. */
#include "fdc_runtime.h"

#include <stdio.h>
#include <string.h>

int main(void) {
  char *error = NULL;
  fdc_model *model = fdc_model_load("/nonexistent/fdc-model.so",
                                    "/nonexistent/weights", 0, 1, &error);
  if (model || !error || !strstr(error, "/nonexistent/")) {
    fprintf(stderr, "consumer-c: expected a load error, got %s\n",
            error ? error : "(none)");
    return 1;
  }
  printf("consumer-c: api %d, load error: %s\n", FDC_RUNTIME_API_VERSION,
         error);
  fdc_string_free(error);
  return 0;
}
