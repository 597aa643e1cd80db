/* A C host program against an installed libnormjit (install.test): prints
 * the library's versions and checks that a context without a CUDA driver
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

  printf("normjit API version %d, package %s\n", NORMJIT_API_VERSION,
         NORMJIT_PACKAGE_VERSION);
  if (NORMJIT_API_VERSION != NORMJIT_PACKAGE_API) {
    fprintf(stderr, "error: normjit.h has API version %d, the package %d\n",
            NORMJIT_API_VERSION, NORMJIT_PACKAGE_API);
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
