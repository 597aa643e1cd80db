//===- Ptxsim.cpp - the generated PTX run on GPGPU-Sim --------------------===//

#include "tools/norm-cpu-check/Ptxsim.h"

#include <cstdio>
#include <cstdlib>
#include <fstream>
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

Status norm::check::runOnPtxsim(const PtxsimOptions &options,
                                const std::string &ptx,
                                const KernelSignature &signature,
                                const std::vector<SimBuffer> &buffers,
                                const std::vector<int64_t> &integers,
                                int64_t rows) {
  int64_t gridX = signature.getGridX(rows);
  // A launch of no CTAs runs nothing (and the driver refuses it).
  if (gridX == 0)
    return Status::success();
  RunDir dir;
  if (!dir.ok())
    return Status::error(ErrorCode::IoError, "cannot create a run directory");
  std::string ptxPath = dir.file("kernel.ptx");
  if (!writeBytes(ptxPath, ptx.data(), ptx.size()))
    return Status::error(ErrorCode::IoError, "cannot write " + ptxPath);

  std::ostringstream command;
  command << quote(options.root + "/bin/ptxsim-run") << " -q --grid " << gridX
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
