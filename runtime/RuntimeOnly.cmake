# NORM_RUNTIME_ONLY: libnormjit for deployments that must not carry LLVM.
# No compiler: plans and kernels come from bundles written by norm-tune.
# Tests run with ctest (lit comes with LLVM).
set(CMAKE_POSITION_INDEPENDENT_CODE ON)
set(CMAKE_RUNTIME_OUTPUT_DIRECTORY ${PROJECT_BINARY_DIR}/bin)
include_directories(${PROJECT_SOURCE_DIR} ${PROJECT_BINARY_DIR})
add_compile_options(-Wall -Wextra)
find_path(NORM_CUDA_INCLUDE cuda.h HINTS /usr/local/cuda/include ENV CUDA_HOME
          PATH_SUFFIXES include)

# The kernel model is plain C++ (the rest of compiler/ needs MLIR).
add_subdirectory(compiler/model)

add_subdirectory(runtime)
add_subdirectory(tools/normjit-example)

find_package(GTest)
if(GTest_FOUND)
  enable_testing()
  add_subdirectory(test/Unit/Runtime)
  add_subdirectory(test/Runtime)
  add_subdirectory(test/GPU)
  # The point of this build: nothing of LLVM or MLIR in the library.
  add_test(NAME NoLLVMInLibnormjit
           COMMAND sh -c "! ldd \"$<TARGET_FILE:normjit>\" | grep -Ei 'llvm|mlir'")
else()
  message(STATUS "GoogleTest not found: runtime tests are not built")
endif()
