//===- LaunchChecks.cpp - checking the buffers of a launch ----------------===//
//
// Kernel::launch checks every buffer against the operation (presence,
// element type, row length, row stride), that no output shares a byte with
// another buffer, and the alignment the chosen variant needs, then
// launches. Nothing here allocates: launches are capturable in CUDA graphs.
//
//===----------------------------------------------------------------------===//

#include "runtime/ContextImpl.h"

#include "runtime/Exceptions.h"

#include <algorithm>

using namespace norm;
using namespace norm::jit;

//===----------------------------------------------------------------------===//
// Kernel
//===----------------------------------------------------------------------===//

static Status invalidLaunch(const OpSpec &spec, const std::string &message) {
  return Status::error(ErrorCode::InvalidArgument,
                       "launch of " + describeOpSpec(spec) + ": " + message);
}

namespace {
/// The bytes a buffer of a launch covers: `rows` runs of `width` bytes,
/// `stride` bytes apart (one run for 1-D buffers).
struct Footprint {
  uintptr_t start = 0;
  int64_t width = 0;
  int64_t stride = 0;
  int64_t rows = 1;

  uintptr_t end() const { return start + (rows - 1) * stride + width; }
};
} // namespace

static int64_t floorDiv(int64_t a, int64_t b) {
  return a / b - (a % b != 0 && a < 0);
}

/// Whether two footprints share a byte: exactly for rows of the same stride
/// (so that buffers interleaved in one allocation, such as the halves of a
/// packed tensor, pass), else by their address ranges.
static bool overlap(const Footprint &a, const Footprint &b) {
  if (a.start >= b.end() || b.start >= a.end())
    return false;
  if (a.rows == 1 || a.rows != b.rows || a.stride != b.stride)
    return true;
  // Row i of `a` and row i + k of `b` share a byte iff
  // -b.width < d + k * stride < a.width, with d = b.start - a.start (|d| is
  // below the spans here, so nothing overflows). Try the smallest such k.
  int64_t d = static_cast<int64_t>(b.start - a.start);
  int64_t k = std::max(floorDiv(-b.width - d, a.stride) + 1, 1 - a.rows);
  return k <= a.rows - 1 && d + k * a.stride < a.width;
}

Status Kernel::check(const LaunchArgs &args, int64_t rows,
                     const LoadedKernel *&variant,
                     DecodeLaunch *decode) const {
  for (int slot = 0; slot < kNumBufferSlots; ++slot) {
    const TensorArg &tensor = args.tensors[slot];
    const ExpectedBuffer &want = expected[slot];
    std::string_view name = getBufferSlotName(static_cast<BufferSlot>(slot));
    if (want.scratch) {
      if (tensor.data)
        return invalidLaunch(
            spec, "buffer '" + std::string(name) +
                      "' is the library's own (decode's workspace and "
                      "semaphores and backward kernels' gradient partials "
                      "are allocated per context and stream): leave it "
                      "empty");
      continue;
    }
    if (tensor.rows != 0 && !want.ownRows)
      return invalidLaunch(
          spec, "buffer '" + std::string(name) +
                    "' has rows of its own (" + std::to_string(tensor.rows) +
                    "), but only decode's k_cache and v_cache (cache_rows) "
                    "and the rope table (rope_table_rows) do; its rows are "
                    "the launch's");
    if (!want.present) {
      if (!tensor.data)
        continue;
      std::string message =
          "the operation has no '" + std::string(name) + "' buffer";
      if (static_cast<BufferSlot>(slot) == BufferSlot::Lse &&
          spec.kind == OpKind::Attention)
        message += " (it writes no log-sum-exp: OpSpec::writeLse, "
                   "NORMJIT_OP_WRITE_LSE)";
      return invalidLaunch(spec, message);
    }
    if (!tensor.data)
      return invalidLaunch(spec, "buffer '" + std::string(name) + "' is null");
    if (tensor.type != want.type)
      return invalidLaunch(spec,
                           "buffer '" + std::string(name) + "' is " +
                               std::string(getElementTypeName(tensor.type)) +
                               ", the operation expects " +
                               std::string(getElementTypeName(want.type)));
    // A length that comes with the launch: attention's sequence offsets,
    // decode's cache lengths (one per sequence: cu_seqlens comes first),
    // rotary positions (one per token).
    if (want.cols == 0 &&
        static_cast<BufferSlot>(slot) == BufferSlot::Positions) {
      int64_t length = getLaunchLength(spec, BufferSlot::Positions, 1,
                                       DecodeShape{rows, 0, 0, 1});
      if (tensor.cols != length)
        return invalidLaunch(
            spec, "buffer 'positions' has " + std::to_string(tensor.cols) +
                      " elements, the operation expects " +
                      std::to_string(length) + ": one per token (rows)");
    } else if (want.cols == 0 && static_cast<BufferSlot>(slot) ==
                                     BufferSlot::CacheSeqlens) {
      int64_t batch = getBatchOfOffsets(args[BufferSlot::CuSeqlens].cols);
      int64_t length = getLaunchLength(spec, BufferSlot::CacheSeqlens, 1,
                                       DecodeShape{rows, batch, 0, 1});
      if (tensor.cols != length)
        return invalidLaunch(
            spec, "buffer 'cache_seqlens' has " + std::to_string(tensor.cols) +
                      " elements, the operation expects " +
                      std::to_string(length) +
                      ": one cache length per sequence of cu_seqlens (" +
                      std::to_string(batch) + " sequences)");
    } else if (want.cols == 0 && spec.pageIndptr &&
               static_cast<BufferSlot>(slot) == BufferSlot::BlockTables) {
      // FlashInfer's kv_indices: any number of pages (page_indptr says
      // whose), at least one element to point at.
      if (tensor.cols <= 0)
        return invalidLaunch(spec, "buffer 'block_tables' (kv_indices) has " +
                                       std::to_string(tensor.cols) +
                                       " entries, the operation expects at "
                                       "least 1");
    } else if (want.cols == 0 &&
               static_cast<BufferSlot>(slot) == BufferSlot::PageIndptr) {
      int64_t batch = getBatchOfOffsets(args[BufferSlot::CuSeqlens].cols);
      if (tensor.cols != batch + 1)
        return invalidLaunch(spec, "buffer 'page_indptr' has " +
                                       std::to_string(tensor.cols) +
                                       " elements, the operation expects " +
                                       std::to_string(batch + 1) +
                                       ": one offset per sequence "
                                       "of cu_seqlens (" +
                                       std::to_string(batch) +
                                       " sequences) and the end (kv_indptr)");
    } else if (want.cols == 0 &&
               static_cast<BufferSlot>(slot) == BufferSlot::BlockTables) {
      // Its length gives the capacity (getDecodeLaunch): a whole row of
      // max_blocks entries per sequence.
      int64_t batch = getBatchOfOffsets(args[BufferSlot::CuSeqlens].cols);
      if (tensor.cols <= 0 || batch < 1 || tensor.cols % batch != 0)
        return invalidLaunch(
            spec, "buffer 'block_tables' has " + std::to_string(tensor.cols) +
                      " entries, the operation expects batch x max_blocks (" +
                      std::to_string(batch) +
                      " sequences of cu_seqlens, each a row of the same "
                      "positive number of pages, contiguous)");
    } else if (want.cols == 0) {
      if (Status status = verifySequenceOffsetCount(tensor.cols); !status)
        return invalidLaunch(spec, status.message());
    } else if (tensor.cols != want.cols)
      return invalidLaunch(spec, "buffer '" + std::string(name) + "' has " +
                                     std::to_string(tensor.cols) +
                                     " elements per row, the operation "
                                     "expects " +
                                     std::to_string(want.cols));
    if (!want.rows2D) {
      if (tensor.rowStride != 0)
        return invalidLaunch(spec, "1-D buffer '" + std::string(name) +
                                       "' takes no row stride");
      continue;
    }
    // Decode's caches (batch x capacity) and the rope table have rows of
    // their own.
    int64_t bufferRows = want.ownRows ? tensor.rows : rows;
    if (want.ownRows && bufferRows < 1)
      return invalidLaunch(
          spec,
          "buffer '" + std::string(name) + "' has no rows: give " +
              (static_cast<BufferSlot>(slot) == BufferSlot::RopeTable
                   ? "the table's positions (normjit_launch_args."
                     "rope_table_rows, LaunchArgs::setRopeTable)"
                   : "the cache's rows, batch x capacity "
                     "(normjit_launch_args.cache_rows, "
                     "LaunchArgs::setCache)"));
    if (static_cast<BufferSlot>(slot) == BufferSlot::RopeTable &&
        bufferRows > kMaxRopeTableRows)
      return invalidLaunch(spec, "the rope table has " +
                                     std::to_string(bufferRows) +
                                     " rows; positions are i32, so at most " +
                                     std::to_string(kMaxRopeTableRows));
    int64_t stride = tensor.rowStride ? tensor.rowStride : tensor.cols;
    if (stride < tensor.cols)
      return invalidLaunch(spec, "row stride of '" + std::string(name) + "' (" +
                                     std::to_string(tensor.rowStride) +
                                     ") is shorter than its rows");
    // The last element must be addressable: (rows - 1) * stride + cols.
    if ((bufferRows - 1) > (INT64_MAX / 8 - tensor.cols) / stride)
      return invalidLaunch(spec, "buffer '" + std::string(name) +
                                     "' would span more than 2^60 bytes");
  }
  const Plan &plan = plans[static_cast<int>(getRowBucket(rows))];
  const LoadedKernel *chosen = nullptr;
  if (plan.fast->isAligned(args, rows))
    chosen = plan.fast.get();
  else if (!refuseMisaligned && plan.scalar &&
           plan.scalar->isAligned(args, rows))
    chosen = plan.scalar.get();
  if (chosen) {
    DecodeLaunch decodeLaunch;
    if (hasKvCache(spec))
      if (Status status = getDecodeLaunch(args, rows, *chosen, decodeLaunch);
          !status)
        return status;
    if (decode)
      *decode = decodeLaunch;
    if (Status status = chosen->checkRows(args, rows, decodeLaunch.splits);
        !status)
      return status;
    if (Status status = checkOverlap(args, rows); !status)
      return status;
    variant = chosen;
    return Status::success();
  }
  std::string message = "launch of " + describeOpSpec(spec) + ": " +
                        plan.fast->describeMisalignment(args, rows);
  if (refuseMisaligned)
    message += " (the kernel refuses misaligned buffers)";
  else if (!plan.scalar && isAttention(spec.kind))
    message += "; attention has no scalar variant: " +
               plan.fast->describeAlignment();
  else if (!plan.scalar)
    message += ", and there is no scalar variant";
  else
    message += "; the scalar variant needs: " +
               plan.scalar->describeMisalignment(args, rows);
  return Status::error(ErrorCode::Misaligned, message);
}

/// The end of the message refusing `output` over `input`: how to write it
/// in place where a forward row kernel can.
static std::string describeInPlaceKernel(const OpSpec &spec, BufferSlot output,
                                         BufferSlot input) {
  bool outputs = output == BufferSlot::Output ||
                 output == BufferSlot::ResidualOut;
  bool inputs = input == BufferSlot::Input || input == BufferSlot::Addend;
  if (!isFusedRow(spec) || spec.backward || !outputs || !inputs)
    return ", so an in-place update needs a separate output buffer";
  return std::string("; a kernel built with ") +
         (output == BufferSlot::Output ? "NORMJIT_OP_OUTPUT_OVER_"
                                       : "NORMJIT_OP_RESIDUAL_OVER_") +
         (input == BufferSlot::Input ? "INPUT" : "ADDEND") +
         " writes it in place";
}

Status Kernel::checkOverlap(const LaunchArgs &args, int64_t rows) const {
  // On the stack: launches allocate nothing.
  std::array<Footprint, kNumBufferSlots> footprints;
  for (int slot = 0; slot < kNumBufferSlots; ++slot) {
    const TensorArg &tensor = args.tensors[slot];
    const ExpectedBuffer &want = expected[slot];
    // The library's own scratch overlaps nothing of the caller's.
    if (!want.present || want.scratch)
      continue;
    int64_t bytes = getElementBytes(want.type);
    Footprint &footprint = footprints[slot];
    footprint.start = reinterpret_cast<uintptr_t>(tensor.data);
    footprint.width = tensor.cols * bytes;
    if (want.rows2D) {
      footprint.rows = want.ownRows ? tensor.rows : rows;
      footprint.stride = (tensor.rowStride ? tensor.rowStride : tensor.cols) *
                         bytes;
    }
  }
  for (int a = 0; a < kNumBufferSlots; ++a) {
    if (!expected[a].present || expected[a].scratch)
      continue;
    for (int b = a + 1; b < kNumBufferSlots; ++b) {
      if (!expected[b].present || expected[b].scratch ||
          !(expected[a].written || expected[b].written) ||
          !overlap(footprints[a], footprints[b]))
        continue;
      // Name the output first.
      int written = expected[a].written ? a : b, other = a + b - written;
      auto name = [](int slot) {
        return std::string(getBufferSlotName(static_cast<BufferSlot>(slot)));
      };
      std::optional<BufferSlot> over = expected[written].over;
      bool inPlace = over && static_cast<int>(*over) == other;
      // In place means the very same rows: same start, row length and
      // stride (the element types are the same: norm::verifyInPlace).
      if (inPlace && footprints[written].start == footprints[other].start &&
          footprints[written].width == footprints[other].width &&
          footprints[written].stride == footprints[other].stride)
        continue;
      if (inPlace)
        return invalidLaunch(
            spec, "output '" + name(written) + "' overlaps buffer '" +
                      name(other) +
                      "' without being exactly it: an in-place output "
                      "takes the same address and row stride as the input "
                      "it overwrites");
      return invalidLaunch(
          spec, "output '" + name(written) + "' overlaps buffer '" +
                    name(other) +
                    "': kernels assume buffers do not alias" +
                    describeInPlaceKernel(spec, static_cast<BufferSlot>(written),
                                          static_cast<BufferSlot>(other)));
    }
  }
  return Status::success();
}

Status Kernel::launch(const LaunchArgs &args, int64_t rows,
                      void *stream) const {
  // Messages of failed launches allocate; successful ones allocate nothing.
  return catchExceptions("Kernel::launch", [&] {
    return launchChecked(args, rows, stream);
  });
}

Status Kernel::launchChecked(const LaunchArgs &args, int64_t rows,
                             void *stream) const {
  if (rows < 0)
    return invalidLaunch(spec, "negative row count " + std::to_string(rows));
  // Empty tensors often have null data: zero rows launch nothing, checked
  // or not, but the gradients of a backward launch, sums over no rows.
  if (rows == 0)
    return spec.backward ? zeroGradients(args, stream) : Status::success();
  const LoadedKernel *variant = nullptr;
  DecodeLaunch decode;
  if (Status status = check(args, rows, variant, &decode); !status)
    return status;
  auto cuStream = static_cast<cu::Stream>(stream);
  if (spec.backward)
    return launchBackward(args, rows, *variant, stream);
  if (spec.kind != OpKind::AttentionDecode)
    return variant->launch(args, rows, cuStream,
                           spec.writeCache ? &decode : nullptr);
  std::shared_ptr<StreamScratch> scratch = streamScratch.lock();
  if (!scratch)
    return invalidLaunch(spec, "the context of this decode kernel is gone, "
                               "and with it the workspace and semaphores "
                               "of its launches: launch it while its "
                               "context lives");
  int64_t rowsPerCta = variant->getSignature().launch.rowsPerCta;
  DecodeShape shape{rows, variant->getBatch(args), decode.capacity,
                    decode.splits};
  int64_t workspace =
      getLaunchLength(spec, BufferSlot::Workspace, rowsPerCta, shape);
  int64_t semaphores =
      getLaunchLength(spec, BufferSlot::Semaphores, rowsPerCta, shape);
  LaunchArgs full = args;
  return scratch->run(
      cuStream, workspace, semaphores,
      [&](void *workspaceData, void *semaphoreData) {
        full.set(BufferSlot::Workspace, workspaceData, ElementType::f32,
                 workspace);
        full.set(BufferSlot::Semaphores, semaphoreData, ElementType::i32,
                 semaphores);
        return variant->launch(full, rows, cuStream, &decode);
      });
}

const LoadedKernel *
Kernel::GradientSumKernel::getVariant(const LaunchArgs &sumArgs,
                                      int64_t partialRows) const {
  const Plan &plan = kernel->plans[static_cast<int>(getRowBucket(partialRows))];
  if (plan.fast->isAligned(sumArgs, partialRows))
    return plan.fast.get();
  if (!kernel->refuseMisaligned && plan.scalar &&
      plan.scalar->isAligned(sumArgs, partialRows))
    return plan.scalar.get();
  return nullptr;
}

Status Kernel::checkGradients(const LaunchArgs &args,
                              int64_t partialRows) const {
  for (int slot = 0; slot < kNumBufferSlots; ++slot)
    if (expected[slot].scratch && args.tensors[slot].data)
      return invalidLaunch(
          spec, "buffer '" +
                    std::string(getBufferSlotName(static_cast<BufferSlot>(slot))) +
                    "' is the library's own (backward kernels' gradient "
                    "partials are allocated per context and stream): leave "
                    "it empty");
  std::array<Footprint, 2> footprints;
  for (size_t i = 0; i < gradientSums.size(); ++i) {
    const GradientSumKernel &sum = gradientSums[i];
    const TensorArg &gradient = args[sum.gradient];
    const ExpectedBuffer &want = expected[static_cast<int>(sum.gradient)];
    std::string name(getBufferSlotName(sum.gradient));
    if (!gradient.data)
      return invalidLaunch(spec, "buffer '" + name + "' is null");
    if (gradient.type != want.type || gradient.cols != want.cols ||
        gradient.rowStride != 0)
      return invalidLaunch(spec, "buffer '" + name + "' is not " +
                                     std::to_string(want.cols) + " " +
                                     std::string(getElementTypeName(
                                         want.type)) +
                                     " elements");
    // The partials are the library's, aligned for every variant.
    LaunchArgs sumArgs;
    sumArgs.set(BufferSlot::Output, gradient.data, gradient.type,
                gradient.cols);
    if (!sum.getVariant(sumArgs, partialRows)) {
      const Plan &plan =
          sum.kernel->plans[static_cast<int>(getRowBucket(partialRows))];
      return Status::error(
          ErrorCode::Misaligned,
          "launch of " + describeOpSpec(spec) + ": the gradient sum into '" +
              name + "': " +
              plan.fast->describeMisalignment(sumArgs, partialRows) +
              (refuseMisaligned ? " (the kernel refuses misaligned buffers)"
                                : ""));
    }
    footprints[i].start = reinterpret_cast<uintptr_t>(gradient.data);
    footprints[i].width = gradient.cols * getElementBytes(gradient.type);
  }
  if (gradientSums.size() == 2 && overlap(footprints[0], footprints[1]))
    return invalidLaunch(spec, "output '" +
                                   std::string(getBufferSlotName(
                                       gradientSums[0].gradient)) +
                                   "' overlaps buffer '" +
                                   std::string(getBufferSlotName(
                                       gradientSums[1].gradient)) +
                                   "': kernels assume buffers do not alias");
  return Status::success();
}

Status Kernel::zeroGradients(const LaunchArgs &args, void *stream) const {
  if (Status status = checkGradients(args, 0); !status)
    return status;
  // A column sum of no rows writes zeros; it reads no input.
  for (const GradientSumKernel &sum : gradientSums) {
    const TensorArg &gradient = args[sum.gradient];
    LaunchArgs sumArgs;
    sumArgs.set(BufferSlot::Output, gradient.data, gradient.type,
                gradient.cols);
    if (Status status = sum.getVariant(sumArgs, 0)->launch(
            sumArgs, 0, static_cast<cu::Stream>(stream));
        !status)
      return status;
  }
  return Status::success();
}

Status Kernel::launchBackward(const LaunchArgs &args, int64_t rows,
                              const LoadedKernel &variant,
                              void *stream) const {
  auto cuStream = static_cast<cu::Stream>(stream);
  if (gradientSums.empty())
    return variant.launch(args, rows, cuStream);
  std::shared_ptr<StreamScratch> scratch = streamScratch.lock();
  if (!scratch)
    return invalidLaunch(spec, "the context of this backward kernel is gone, "
                               "and with it the gradient partials of its "
                               "launches: launch it while its context lives");
  // One workspace holds each gradient's partials, every row 16-byte
  // aligned (the widest access of any variant).
  int64_t partialRows =
      getGradPartialRows(spec, variant.getSignature().launch, rows);
  std::array<int64_t, 2> offsets{}, strides{};
  int64_t elements = 0;
  for (size_t i = 0; i < gradientSums.size(); ++i) {
    int64_t cols = expected[static_cast<int>(gradientSums[i].gradient)].cols;
    offsets[i] = elements;
    strides[i] = (cols + 3) / 4 * 4;
    if (partialRows > (INT64_MAX / 8 - elements) / strides[i])
      return invalidLaunch(spec, "too many rows for the gradient partials: " +
                                     std::to_string(rows));
    elements += partialRows * strides[i];
  }
  // Every column sum must be able to run before the row kernel is enqueued.
  if (Status status = checkGradients(args, partialRows); !status)
    return status;
  LaunchArgs full = args;
  return scratch->run(cuStream, elements, 0, [&](void *workspace, void *) {
    auto *base = static_cast<float *>(workspace);
    for (size_t i = 0; i < gradientSums.size(); ++i) {
      const GradientSumKernel &sum = gradientSums[i];
      full.set(sum.partials, base + offsets[i], ElementType::f32,
               args[sum.gradient].cols, strides[i]);
      full.tensors[static_cast<int>(sum.partials)].rows = partialRows;
    }
    if (Status status = variant.launch(full, rows, cuStream); !status)
      return status;
    for (size_t i = 0; i < gradientSums.size(); ++i) {
      const GradientSumKernel &sum = gradientSums[i];
      if (Status status = sum.launch(base + offsets[i], strides[i],
                                     args[sum.gradient], partialRows, stream);
          !status)
        return status;
    }
    return Status::success();
  });
}

Status Kernel::GradientSumKernel::launch(const void *data, int64_t stride,
                                         const TensorArg &output,
                                         int64_t partialRows,
                                         void *stream) const {
  LaunchArgs sumArgs;
  sumArgs.set(BufferSlot::Input, data, ElementType::f32, output.cols, stride);
  sumArgs.set(BufferSlot::Output, output.data, output.type, output.cols);
  Status status = kernel->launchChecked(sumArgs, partialRows, stream);
  if (!status)
    return status.withContext("the gradient sum into '" +
                              std::string(getBufferSlotName(gradient)) + "'");
  return status;
}

Status Kernel::getDecodeLaunch(const LaunchArgs &args, int64_t rows,
                               const LoadedKernel &variant,
                               DecodeLaunch &decode) const {
  int64_t batch = variant.getBatch(args);
  int64_t cacheRows = args[BufferSlot::KCache].rows;
  if (args[BufferSlot::VCache].rows != cacheRows)
    return invalidLaunch(spec, "'k_cache' has " + std::to_string(cacheRows) +
                                   " rows and 'v_cache' " +
                                   std::to_string(
                                       args[BufferSlot::VCache].rows) +
                                   ": one capacity for both");
  if (int64_t blockSize = spec.cacheBlockSize) {
    // Pages of blockSize rows; each sequence up to a table row of them.
    if (cacheRows % blockSize != 0)
      return invalidLaunch(spec,
                           "the paged caches' " + std::to_string(cacheRows) +
                               " rows are not whole pages of " +
                               std::to_string(blockSize) +
                               " rows (cache_rows = num_blocks x block_size)");
    decode.blocks = cacheRows / blockSize;
    // A ragged table: no sequence holds more than every page (the bound
    // the splits take; the kernel reads each sequence's from page_indptr).
    int64_t maxBlocks = spec.pageIndptr
                            ? decode.blocks
                            : args[BufferSlot::BlockTables].cols / batch;
    if (maxBlocks > INT32_MAX / blockSize)
      return invalidLaunch(spec, "a block table row of " +
                                     std::to_string(maxBlocks) + " pages of " +
                                     std::to_string(blockSize) +
                                     " rows is past 2^31 positions");
    decode.capacity = maxBlocks * blockSize;
  } else if (batch < 1 || cacheRows % batch != 0) {
    return invalidLaunch(
        spec, "the caches' " + std::to_string(cacheRows) +
                  " rows are not a multiple of the batch (" +
                  std::to_string(batch) +
                  " sequences of cu_seqlens): each sequence owns capacity = "
                  "cache rows / batch rows, so the cache rows must be batch "
                  "x capacity");
  } else {
    decode.capacity = cacheRows / batch;
  }
  const LaunchConfig &launch = variant.getSignature().launch;
  if (spec.kind != OpKind::AttentionDecode)
    return Status::success();
  decode.splits = getDecodeSplits(
      spec, launch.rowsPerCta, DecodeShape{rows, batch, decode.capacity, 1},
      smCount, launch.blockN);
  // The workspace's f32 elements stay countable (rows bounded by q's 2^60
  // bytes, but not times the splits).
  int64_t perRow = decode.splits * spec.numQHeads * (spec.hidden + 1);
  if (rows > INT64_MAX / 8 / perRow)
    return invalidLaunch(spec, "too many rows for the decode workspace: " +
                                   std::to_string(rows));
  return Status::success();
}

Status Kernel::getLaunchFor(const LaunchArgs &args, int64_t rows,
                            LaunchConfig &launch) const {
  return catchExceptions("Kernel::getLaunchFor", [&] {
    if (rows <= 0)
      return invalidLaunch(spec, "the row count must be positive, got " +
                                     std::to_string(rows));
    const LoadedKernel *variant = nullptr;
    if (Status status = check(args, rows, variant); !status)
      return status;
    launch = variant->getSignature().launch;
    return Status::success();
  });
}
