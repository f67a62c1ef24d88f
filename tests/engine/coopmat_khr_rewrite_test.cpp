// The build rewrites matmul_cm2's SPIR-V from NV to KHR cooperative matrices
// (shaders/coopmat_khr_rewrite.py): lavapipe cannot run that kernel, so these checks on the
// embedded module are what CI has to catch a rewrite that would hand a driver a module it
// rejects or misreads. Decoded from the words; no SPIR-V tools needed.
#include <gtest/gtest.h>

#include <cstdint>
#include <cstring>
#include <map>
#include <set>
#include <string>
#include <vector>

#include "shaders/embedded_spirv.h"

namespace vkllm {
namespace {

struct Instruction {
  uint32_t opcode;
  std::vector<uint32_t> operands;
};

std::vector<Instruction> decode(const char* name) {
  for (const auto& f : shaders::embedded_files()) {
    if (std::string(f.name) != name) continue;
    std::vector<uint32_t> words(f.size / 4);
    std::memcpy(words.data(), f.data, words.size() * 4);
    EXPECT_EQ(words.at(0), 0x07230203u);
    std::vector<Instruction> out;
    for (size_t i = 5; i < words.size();) {
      const uint32_t count = words[i] >> 16;
      EXPECT_GT(count, 0u);
      EXPECT_LE(i + count, words.size());
      if (count == 0 || i + count > words.size()) break;
      out.push_back({words[i] & 0xFFFFu, {words.begin() + i + 1, words.begin() + i + count}});
      i += count;
    }
    return out;
  }
  ADD_FAILURE() << name << " is not embedded";
  return {};
}

constexpr uint32_t kOpCapability = 17, kOpConstant = 43, kOpConstantTrue = 41,
                   kOpConstantFalse = 42, kOpSpecConstant = 50;
constexpr uint32_t kTypeMatrixKhr = 4456, kMulAddKhr = 4459, kTypeTensorLayout = 5370,
                   kTypeTensorView = 5371, kLoadTensor = 5367, kStoreTensor = 5368;

TEST(CoopMatKhrRewrite, Cm2GemmUsesOnlyKhrMatricesWithConsistentUses) {
  const std::vector<Instruction> module = decode("matmul_cm2.spv");
  ASSERT_FALSE(module.empty());
  std::map<uint32_t, uint32_t> constants;  // id -> value (plain and specialization)
  std::set<uint32_t> bool_constants;
  std::set<uint32_t> capabilities;
  std::map<uint32_t, uint32_t> matrix_use;  // KHR matrix type id -> use constant value
  std::map<uint32_t, uint32_t> value_type;
  int layouts = 0, views = 0, tensor_loads = 0, tensor_stores = 0, mul_adds = 0;
  for (const Instruction& in : module) {
    const auto& o = in.operands;
    // No NV cooperative-matrix instruction or type survives (5358..5362).
    EXPECT_FALSE(in.opcode >= 5358 && in.opcode <= 5362) << "NV opcode " << in.opcode;
    if (in.opcode == kOpCapability) capabilities.insert(o.at(0));
    if (in.opcode == kOpConstant || in.opcode == kOpSpecConstant) constants[o.at(1)] = o.at(2);
    if (in.opcode == kOpConstantTrue || in.opcode == kOpConstantFalse)
      bool_constants.insert(o.at(1));
    if (in.opcode == kTypeMatrixKhr) {
      ASSERT_EQ(o.size(), 6u);
      // Scope, rows, columns and use are ids of constants defined before the type.
      for (int i = 2; i < 6; ++i) EXPECT_TRUE(constants.count(o[i])) << "operand " << i;
      EXPECT_EQ(constants[o[2]], 2u) << "workgroup scope";
      EXPECT_LE(constants[o[5]], 2u) << "use A, B or accumulator";
      matrix_use[o[0]] = constants[o[5]];
    }
    if (in.opcode == kTypeTensorLayout) {
      ++layouts;
      ASSERT_EQ(o.size(), 3u);
      EXPECT_EQ(constants.at(o[1]), 2u) << "two dimensions";
      EXPECT_LE(constants.at(o[2]), 1u) << "clamp mode undefined or constant";
    }
    if (in.opcode == kTypeTensorView) {
      ++views;
      ASSERT_EQ(o.size(), 5u);
      EXPECT_EQ(constants.at(o[1]), 2u);
      EXPECT_TRUE(bool_constants.count(o[2])) << "HasDimensions is a bool constant";
      EXPECT_EQ(constants.at(o[3]), 1u) << "transposed: (1, 0)";
      EXPECT_EQ(constants.at(o[4]), 0u);
    }
    if (in.opcode == kLoadTensor) {
      ++tensor_loads;
      value_type[o.at(1)] = o.at(0);
      EXPECT_TRUE(matrix_use.count(o[0])) << "loads a KHR matrix";
    }
    if (in.opcode == kStoreTensor) ++tensor_stores;
    if (in.opcode == kMulAddKhr) {
      ++mul_adds;
      EXPECT_EQ(matrix_use.at(o.at(0)), 2u) << "the result is an accumulator";
    }
  }
  EXPECT_TRUE(capabilities.count(6022)) << "CooperativeMatrixKHR";
  EXPECT_FALSE(capabilities.count(5357)) << "CooperativeMatrixNV";
  EXPECT_TRUE(capabilities.count(5433)) << "CooperativeMatrixTensorAddressingNV";
  EXPECT_TRUE(capabilities.count(5439)) << "TensorAddressingNV";
  EXPECT_EQ(layouts, 2);  // clamped and unclamped
  EXPECT_EQ(views, 1);
  EXPECT_GE(tensor_loads, 5);  // A and B on both paths, the accumulated y
  EXPECT_EQ(tensor_stores, 1);
  EXPECT_GE(mul_adds, 3);
  // Exactly one matrix type per use: A (weights), B (activations), accumulator.
  std::multiset<uint32_t> uses;
  for (const auto& [type, use] : matrix_use) uses.insert(use);
  EXPECT_EQ(uses, (std::multiset<uint32_t>{0, 1, 2}));
}

}  // namespace
}  // namespace vkllm
