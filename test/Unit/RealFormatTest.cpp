//===- RealFormatTest.cpp - reals printed by the norm dialect -------------===//
//
// formatReal must print the shortest decimal that parses back to the same
// double, and norm ops must print and parse their real attributes through
// it without losing a bit, NaN and infinities included.
//
//===----------------------------------------------------------------------===//

#include "compiler/model/RealFormat.h"
#include "dialects/NormOps.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/BuiltinOps.h"
#include "mlir/IR/MLIRContext.h"
#include "mlir/Parser/Parser.h"
#include "llvm/ADT/bit.h"
#include "llvm/Support/raw_ostream.h"

#include <gtest/gtest.h>

#include <cfloat>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <limits>
#include <random>
#include <string>

using namespace mlir;
using namespace mlir::norm;
using ::norm::formatReal;

namespace {

uint64_t bitsOf(double value) { return llvm::bit_cast<uint64_t>(value); }

TEST(RealFormat, ShortestForms) {
  EXPECT_EQ(formatReal(1e-6), "1.0e-06");
  EXPECT_EQ(formatReal(1e-5), "1.0e-05");
  EXPECT_EQ(formatReal(2.0), "2.0");
  EXPECT_EQ(formatReal(0.5), "0.5");
  EXPECT_EQ(formatReal(0.1), "0.1");
  EXPECT_EQ(formatReal(-1.5), "-1.5");
  EXPECT_EQ(formatReal(0.0), "0.0");
  EXPECT_EQ(formatReal(-0.0), "-0.0");
  EXPECT_EQ(formatReal(123456.0), "123456.0");
  EXPECT_EQ(formatReal(1e20), "1.0e+20");
  EXPECT_EQ(formatReal(0.1 + 0.2), "0.30000000000000004");
  EXPECT_EQ(formatReal(std::pow(1024.0, 0.25)), "5.656854249492381");
  EXPECT_EQ(formatReal(DBL_MAX), "1.7976931348623157e+308");
  EXPECT_EQ(formatReal(std::numeric_limits<double>::denorm_min()), "5.0e-324");
}

TEST(RealFormat, NonFiniteValuesAsBitPatterns) {
  EXPECT_EQ(formatReal(std::numeric_limits<double>::quiet_NaN()),
            "0x7FF8000000000000");
  EXPECT_EQ(formatReal(std::numeric_limits<double>::infinity()),
            "0x7FF0000000000000");
  EXPECT_EQ(formatReal(-std::numeric_limits<double>::infinity()),
            "0xFFF0000000000000");
  EXPECT_EQ(formatReal(llvm::bit_cast<double>(uint64_t{0xFFF8000000000123})),
            "0xFFF8000000000123");
}

/// Random doubles of every magnitude: random bit patterns, finite ones.
std::vector<double> randomFiniteDoubles(unsigned count) {
  std::mt19937_64 rng(20261101);
  std::vector<double> values;
  while (values.size() < count) {
    double value = llvm::bit_cast<double>(rng());
    if (std::isfinite(value))
      values.push_back(value);
  }
  return values;
}

/// The significant digits of a decimal spelling: no sign, no leading or
/// trailing zeros ("1.0e-06" has one, "0.30000000000000004" seventeen).
int significantDigits(const std::string &text) {
  std::string digits;
  for (char c : text.substr(0, text.find('e')))
    if (c >= '0' && c <= '9')
      digits += c;
  size_t first = digits.find_first_not_of('0');
  if (first == std::string::npos)
    return 0;
  return digits.find_last_not_of('0') - first + 1;
}

TEST(RealFormat, RoundTripsAndIsShortest) {
  for (double value : randomFiniteDoubles(20000)) {
    std::string text = formatReal(value);
    ASSERT_EQ(bitsOf(std::strtod(text.c_str(), nullptr)), bitsOf(value))
        << text;
    // Rounded to one significant digit fewer, it would not parse back.
    int digits = significantDigits(text);
    if (digits < 2)
      continue;
    char shorter[400]; // %g of a double may take 300+ characters
    std::snprintf(shorter, sizeof(shorter), "%.*g", digits - 1, value);
    EXPECT_NE(bitsOf(std::strtod(shorter, nullptr)), bitsOf(value))
        << text << " vs " << shorter;
  }
}

/// Parses `source` into a module, verified or not.
OwningOpRef<ModuleOp> parse(MLIRContext &context, StringRef source,
                            bool verify) {
  return parseSourceString<ModuleOp>(source, ParserConfig(&context, verify));
}

/// Prints `module` in the custom form, as verified (the printer would
/// otherwise fall back to the generic form for invalid ops).
std::string print(ModuleOp module) {
  std::string text;
  llvm::raw_string_ostream os(text);
  module->print(os, OpPrintingFlags().assumeVerified());
  return text;
}

std::string rmsNormWithOffset(StringRef offset) {
  return ("func.func @f(%x: tensor<?x8xf32>, %w: tensor<8xf32>) {\n"
          "  %0 = norm.rms_norm %x weight(%w : tensor<8xf32>) eps(1.0e-06) "
          "offset(" +
          offset + ") : tensor<?x8xf32> -> tensor<?x8xf32>\n  return\n}\n")
      .str();
}

double parsedOffset(ModuleOp module) {
  double offset = std::nan("");
  module.walk(
      [&](RMSNormOp op) { offset = op.getWeightOffset().convertToDouble(); });
  return offset;
}

TEST(RealFormat, OpsPrintAndParseEveryDouble) {
  MLIRContext context;
  context.loadDialect<NormDialect, func::FuncDialect>();
  std::vector<double> values = randomFiniteDoubles(500);
  values.insert(values.end(), {-0.0, 1.0, DBL_MIN, -DBL_MAX,
                               std::numeric_limits<double>::quiet_NaN(),
                               std::numeric_limits<double>::infinity(),
                               -std::numeric_limits<double>::infinity()});
  for (double value : values) {
    std::string source = rmsNormWithOffset(formatReal(value));
    // Non-finite offsets are invalid IR, but must still print and parse.
    bool verify = std::isfinite(value);
    OwningOpRef<ModuleOp> module = parse(context, source, verify);
    ASSERT_TRUE(module) << source;
    ASSERT_EQ(bitsOf(parsedOffset(*module)), bitsOf(value)) << source;

    std::string printed = print(*module);
    if (value != 0.0 || std::signbit(value)) {
      EXPECT_NE(printed.find("offset(" + formatReal(value) + ")"),
                std::string::npos)
          << printed;
    }
    OwningOpRef<ModuleOp> reparsed = parse(context, printed, verify);
    ASSERT_TRUE(reparsed) << printed;
    EXPECT_EQ(bitsOf(parsedOffset(*reparsed)), bitsOf(value)) << printed;
  }
}

} // namespace
