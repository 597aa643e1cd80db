//===- Ptxsim.cpp - the generated PTX run on GPGPU-Sim --------------------===//

#include "tools/norm-cpu-check/Ptxsim.h"

#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <regex>
#include <sstream>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

using namespace norm;
using namespace norm::check;

static bool isExecutable(const std::string &path) {
  return ::access(path.c_str(), X_OK) == 0;
}

std::string norm::check::findPtxsim(const std::string &sourceDir) {
  if (const char *env = std::getenv("NORM_PTXSIM"); env && *env)
    return isExecutable(std::string(env) + "/bin/ptxsim-run") ? env : "";
  std::string beside = sourceDir + "/../shared/tools/ptxsim";
  return isExecutable(beside + "/bin/ptxsim-run") ? beside : "";
}

namespace {
/// A run directory, removed with its files at the end of the scope.
class RunDir {
public:
  RunDir() {
    const char *base = std::getenv("TMPDIR");
    std::string pattern =
        std::string(base && *base ? base : "/tmp") + "/norm-ptxsim-XXXXXX";
    std::vector<char> buffer(pattern.begin(), pattern.end());
    buffer.push_back('\0');
    if (::mkdtemp(buffer.data()))
      path = buffer.data();
  }
  ~RunDir() {
    if (path.empty())
      return;
    for (const std::string &file : files)
      ::unlink(file.c_str());
    ::rmdir(path.c_str());
  }
  bool ok() const { return !path.empty(); }
  const std::string &get() const { return path; }
  std::string file(const std::string &name) {
    files.push_back(path + "/" + name);
    return files.back();
  }

private:
  std::string path;
  std::vector<std::string> files;
};
} // namespace

static bool writeBytes(const std::string &path, const void *data,
                       int64_t bytes) {
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  out.write(static_cast<const char *>(data), bytes);
  return static_cast<bool>(out);
}

static bool readBytes(const std::string &path, void *data, int64_t bytes) {
  std::ifstream in(path, std::ios::binary);
  in.read(static_cast<char *>(data), bytes);
  return in && in.gcount() == bytes;
}

/// `text` quoted for the shell.
static std::string quote(const std::string &text) {
  std::string quoted = "'";
  for (char c : text)
    quoted += c == '\'' ? std::string("'\\''") : std::string(1, c);
  return quoted + "'";
}

std::string norm::check::rewriteForPtxsim(const std::string &ptx) {
  // cvt.rn.f16x2.f32 d, a, b puts a in the upper half and b in the lower;
  // GPGPU-Sim writes a to the lower half and zeros the upper.
  static const std::regex f16x2(
      R"(cvt\.rn\.f16x2\.f32\s+(%\w+),\s*(%\w+),\s*(%\w+);)");
  // cvt.rn.f32.{u64,s64} gives 0 on GPGPU-Sim: the halves through f64
  // (exact below 2^53), rounded once to f32.
  std::string out = std::regex_replace(
      ptx, f16x2,
      "{ .reg .b16 %ptxsim_h<2>; cvt.rn.f16.f32 %ptxsim_h0, $2; "
      "cvt.rn.f16.f32 %ptxsim_h1, $3; mov.b32 $1, {%ptxsim_h1, %ptxsim_h0}; }");
  // {add,sub,mul}.rn.f16x2 computes the lower half alone and zeros the
  // upper (as above): half by half in f16, which rounds the same.
  static const std::regex f16x2Arithmetic(
      R"((add|sub|mul)(\.rn)?\.f16x2\s+(%\w+),\s*(%\w+),\s*(%\w+);)");
  out = std::regex_replace(
      out, f16x2Arithmetic,
      "{ .reg .b16 %ptxsim_a<2>, %ptxsim_b<2>, %ptxsim_d<2>; "
      "mov.b32 {%ptxsim_a0, %ptxsim_a1}, $4; "
      "mov.b32 {%ptxsim_b0, %ptxsim_b1}, $5; "
      "$1.rn.f16 %ptxsim_d0, %ptxsim_a0, %ptxsim_b0; "
      "$1.rn.f16 %ptxsim_d1, %ptxsim_a1, %ptxsim_b1; "
      "mov.b32 $3, {%ptxsim_d0, %ptxsim_d1}; }");
  for (const char *sign : {"u", "s"}) {
    std::regex int64ToF32(std::string(R"(cvt\.rn\.f32\.)") + sign +
                          R"(64\s+(%\w+),\s*(%\w+);)");
    out = std::regex_replace(
        out, int64ToF32,
        std::string("{ .reg .b32 %ptxsim_lo, %ptxsim_hi; "
                    ".reg .f64 %ptxsim_dl, %ptxsim_dh; "
                    "mov.b64 {%ptxsim_lo, %ptxsim_hi}, $2; "
                    "cvt.rn.f64.u32 %ptxsim_dl, %ptxsim_lo; cvt.rn.f64.") +
            sign +
            "32 %ptxsim_dh, %ptxsim_hi; "
            "fma.rn.f64 %ptxsim_dl, %ptxsim_dh, 0d41F0000000000000, "
            "%ptxsim_dl; cvt.rn.f32.f64 $1, %ptxsim_dl; }");
  }
  static const std::regex trap(R"(\btrap;)");
  out = std::regex_replace(
      out, trap,
      "{ .reg .b32 %ptxsim_t<2>; mov.u32 %ptxsim_t0, 1; "
      "ldmatrix.sync.aligned.m8n8.x1.shared.b16 {%ptxsim_t1}, "
      "[%ptxsim_t0]; }");
  return out;
}

Status norm::check::runOnPtxsim(const PtxsimOptions &options,
                                const std::string &ptx,
                                const KernelSignature &signature,
                                const std::vector<SimBuffer> &buffers,
                                const std::vector<int64_t> &integers,
                                int64_t gridX) {
  // A launch of no CTAs runs nothing (and the driver refuses it).
  if (gridX == 0)
    return Status::success();
  RunDir dir;
  if (!dir.ok())
    return Status::error(ErrorCode::IoError, "cannot create a run directory");
  std::string ptxPath = dir.file("kernel.ptx");
  std::string simulated = rewriteForPtxsim(ptx);
  if (!writeBytes(ptxPath, simulated.data(), simulated.size()))
    return Status::error(ErrorCode::IoError, "cannot write " + ptxPath);

  // The simulator loads libcudart.so.11.0 from its lib folder (RUNPATH),
  // where a copy of the package may hold that link as a plain file: a link
  // in the run directory, found first through LD_LIBRARY_PATH.
  std::string library = dir.file("libcudart.so.11.0");
  if (::symlink((options.root + "/lib/libcudart.so").c_str(),
                library.c_str()) != 0)
    return Status::error(ErrorCode::IoError, "cannot link " + library);
  std::ostringstream command;
  command << "LD_LIBRARY_PATH=" << quote(dir.get()) << " "
          << quote(options.root + "/bin/ptxsim-run") << " -q --grid " << gridX
          << " --block " << signature.blockThreads << " --smem "
          << signature.sharedBytes << " --timeout 600";
  if (options.warpShuffle)
    command << " --warp-shuffle " << options.warpShuffle;
  if (options.cpAsyncDefer)
    command << " --cp-async-defer";
  command << " " << quote(ptxPath) << " " << quote(signature.name);
  std::vector<std::string> outFiles(buffers.size());
  std::vector<int> argumentOf(buffers.size());
  size_t nextBuffer = 0, nextInteger = 0;
  int argument = 0;
  for (const KernelParam &param : signature.params) {
    if (param.kind == KernelParam::Kind::TensorMap)
      return Status::error(ErrorCode::Unsupported,
                           signature.name +
                               " reads through TMA tensor maps, which the "
                               "simulator does not copy yet (its README)");
    if (param.kind == KernelParam::Kind::Buffer) {
      if (nextBuffer == buffers.size())
        return Status::invalid("too few buffers for " + signature.name);
      const SimBuffer &buffer = buffers[nextBuffer];
      argumentOf[nextBuffer] = argument;
      if (buffer.aliasOf >= 0) {
        command << " alias=" << argumentOf[buffer.aliasOf];
      } else {
        std::string in = dir.file("arg" + std::to_string(argument) + ".in");
        outFiles[nextBuffer] =
            dir.file("arg" + std::to_string(argument) + ".out");
        if (!writeBytes(in, buffer.data, buffer.bytes))
          return Status::error(ErrorCode::IoError, "cannot write " + in);
        command << " buf=" << quote(in + ",out=" + outFiles[nextBuffer]);
      }
      ++nextBuffer;
    } else {
      if (nextInteger == integers.size())
        return Status::invalid("too few integers for " + signature.name);
      command << " i64=" << integers[nextInteger++];
    }
    ++argument;
  }
  std::string log = dir.file("sim.log");
  command << " > " << quote(log) << " 2>&1";
  int status = std::system(command.str().c_str());
  if (status != 0) {
    std::ifstream in(log);
    std::stringstream text;
    text << in.rdbuf();
    std::string tail = text.str();
    if (tail.size() > 2000)
      tail = "..." + tail.substr(tail.size() - 2000);
    return Status::error(ErrorCode::DriverError,
                         "ptxsim-run failed (status " +
                             std::to_string(WEXITSTATUS(status)) +
                             "): " + tail);
  }
  for (size_t i = 0; i < buffers.size(); ++i)
    if (!outFiles[i].empty() &&
        !readBytes(outFiles[i], buffers[i].data, buffers[i].bytes))
      return Status::error(ErrorCode::IoError,
                           "cannot read back " + outFiles[i]);
  return Status::success();
}
