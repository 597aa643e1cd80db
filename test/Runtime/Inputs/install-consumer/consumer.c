/* A C host program against an installed libnormjit (install.test): prints
 * the library's versions, checks that the library it runs with implements
 * the API of the header it was compiled with, and checks that a context without a CUDA driver
 * fails cleanly, with NORMJIT_ERROR_NO_DRIVER and a message. Exit 0 then.
 *
 *   consumer-c [driver library]   (default: a path that does not exist) */
#include <normjit/normjit.h>

#include <stdio.h>

int main(int argc, char **argv) {
  const char *driver = argc > 1 ? argv[1] : "/nonexistent/libcuda.so.1";
  normjit_context_options options;
  normjit_context *context = NULL;
  normjit_status status;
  const char *message;
  uint32_t major, minor, patch, api;

  printf("normjit API version %d, package %s\n", NORMJIT_API_VERSION,
         NORMJIT_PACKAGE_VERSION);
  if (NORMJIT_API_VERSION != NORMJIT_PACKAGE_API) {
    fprintf(stderr, "error: normjit.h has API version %d, the package %d\n",
            NORMJIT_API_VERSION, NORMJIT_PACKAGE_API);
    return 1;
  }

  normjit_get_version(&major, &minor, &patch, &api);
  printf("library %u.%u.%u, API version %u\n", (unsigned)major,
         (unsigned)minor, (unsigned)patch, (unsigned)api);
  if (api < NORMJIT_API_VERSION) {
    fprintf(stderr, "error: the library implements API %u, older than the "
                    "header's %d\n", (unsigned)api, NORMJIT_API_VERSION);
    return 1;
  }

  normjit_context_options_init(&options);
  options.driver_library = driver;
  status = normjit_context_create(&options, &context);
  message = normjit_last_error();
  printf("context: %s (%d): %s\n", normjit_status_name(status), (int)status,
         message);
  if (status != NORMJIT_ERROR_NO_DRIVER || context != NULL || !message[0]) {
    fprintf(stderr, "error: expected NORMJIT_ERROR_NO_DRIVER, no context and "
                    "a message\n");
    normjit_context_destroy(context);
    return 1;
  }
  puts("consumer-c: ok");
  return 0;
}
