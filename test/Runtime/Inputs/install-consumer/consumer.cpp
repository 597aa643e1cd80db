// A C++ host program against an installed libnormjit (install.test), through
// the header-only wrapper <normjit/normjit.hpp>: a context without a CUDA
// driver throws normjit::Error with NORMJIT_ERROR_NO_DRIVER and a message;
// the C API's argument checks arrive as Error too. Exit 0 then.
//
//   consumer-cxx [driver library]   (default: a path that does not exist)
#include <normjit/normjit.hpp>

#include <cstdio>
#include <string>
#include <utility>

namespace {

int failures = 0;

// Runs `call`, which must throw normjit::Error with `expected`.
template <typename Call>
void expectError(const char *what, normjit_status expected, Call call) {
  try {
    call();
    std::printf("%s: no error\n", what);
  } catch (const normjit::Error &error) {
    std::printf("%s: %s\n", what, error.what());
    if (error.status() == expected && !error.message().empty())
      return;
  }
  std::fprintf(stderr, "error: %s: expected %s\n", what,
               normjit_status_name(expected));
  ++failures;
}

} // namespace

int main(int argc, char **argv) {
  std::printf("normjit API version %d, package %s (C++)\n",
              NORMJIT_API_VERSION, NORMJIT_PACKAGE_VERSION);
  if (NORMJIT_API_VERSION != NORMJIT_PACKAGE_API) {
    std::fprintf(stderr, "error: normjit.h has API version %d, the package "
                         "%d\n", NORMJIT_API_VERSION, NORMJIT_PACKAGE_API);
    return 1;
  }

  normjit_context_options options = normjit::contextOptions();
  options.driver_library = argc > 1 ? argv[1] : "/nonexistent/libcuda.so.1";
  expectError("context", NORMJIT_ERROR_NO_DRIVER,
              [&] { normjit::Context context(options); });

  normjit::LaunchArgs args;
  expectError("unknown buffer", NORMJIT_ERROR_INVALID_ARGUMENT, [&] {
    args.set(NORMJIT_NUM_BUFFERS, nullptr, NORMJIT_BF16, 4096);
  });
  args.set(NORMJIT_INPUT, nullptr, NORMJIT_BF16, 4096);

  normjit::Kernel kernel;
  normjit::Kernel moved = std::move(kernel);
  expectError("empty kernel", NORMJIT_ERROR_INVALID_ARGUMENT,
              [&] { moved.launch(args, 1); });

  if (failures)
    return 1;
  std::puts("consumer-cxx: ok");
  return 0;
}
