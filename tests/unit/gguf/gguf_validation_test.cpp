// Each malformed-file case the reader must reject, with an error naming the field and offset.
#include <gtest/gtest.h>

#include <initializer_list>
#include <string>

#include "engine/gguf/gguf_file.h"
#include "engine/gguf/gguf_writer.h"
#include "tests/unit/gguf/gguf_raw_builder.h"

namespace vkllm::gguf {
namespace {

using testing::RawGguf;

// Parses bytes expecting GgufError whose message contains every fragment.
void expect_rejected(const std::vector<uint8_t>& bytes, std::initializer_list<std::string> parts) {
  try {
    GgufFile::parse(bytes);
    ADD_FAILURE() << "expected GgufError";
  } catch (const GgufError& e) {
    const std::string msg = e.what();
    for (const auto& p : parts)
      EXPECT_NE(msg.find(p), std::string::npos) << msg << "\nlacks: " << p;
  }
}

std::string at(size_t offset) {
  return "offset " + std::to_string(offset);
}

TEST(GgufValidation, AcceptsMinimalFiles) {
  RawGguf empty;
  empty.header(0, 0);
  auto f = GgufFile::parse(empty.bytes());
  EXPECT_EQ(f.version(), 3u);
  EXPECT_TRUE(f.metadata().empty());
  EXPECT_TRUE(f.tensors().empty());

  RawGguf v2;
  v2.header(1, 1, 2).kv_u32("k", 1).tensor("t", {2}, 0, 0).pad().zeros(8);
  auto g = GgufFile::parse(v2.bytes());
  EXPECT_EQ(g.version(), 2u);
  EXPECT_EQ(g.tensors().at(0).byte_size, 8u);
}

TEST(GgufValidation, BadMagic) {
  std::vector<uint8_t> b{'G', 'G', 'M', 'L', 3, 0, 0, 0};
  b.resize(24, 0);
  expect_rejected(b, {"magic", at(0), "GGML", "not a GGUF file"});
  expect_rejected({}, {"magic", at(0), "truncated"});
}

TEST(GgufValidation, VersionOneIsRejectedClearly) {
  RawGguf r;
  r.header(0, 0, 1);
  expect_rejected(r.bytes(), {"version", at(4), "v1", "not supported"});
}

TEST(GgufValidation, UnknownVersions) {
  for (uint32_t v : {0u, 4u, 1000u}) {
    RawGguf r;
    r.header(0, 0, v);
    expect_rejected(r.bytes(), {"version", at(4), std::to_string(v)});
  }
  RawGguf be;
  be.header(0, 0, 0x03000000);
  expect_rejected(be.bytes(), {"version", "big-endian"});
}

TEST(GgufValidation, TruncatedHeader) {
  RawGguf r;
  r.header(0, 0);
  auto b = r.bytes();
  b.resize(20);
  expect_rejected(b, {"metadata_kv_count", at(16), "truncated"});
}

TEST(GgufValidation, CountsThatCannotFitTheFile) {
  RawGguf kv;
  kv.header(0, 1000).kv_u32("a", 1);
  expect_rejected(kv.bytes(), {"metadata_kv_count", at(16), "1000"});
  RawGguf tensors;
  tensors.header(0xffffffffffffull, 0);
  expect_rejected(tensors.bytes(), {"tensor_count", at(8)});
}

TEST(GgufValidation, StringLengthPastEndOfFile) {
  RawGguf r;
  r.header(0, 2).kv_u32("first", 1);
  const size_t key_at = r.size();
  r.put<uint64_t>(1ull << 40).zeros(20);
  expect_rejected(r.bytes(), {"metadata entry 1", at(key_at), "string length 1099511627776"});

  RawGguf v;
  v.header(0, 1).str("general.name").put<uint32_t>(8);
  const size_t value_at = v.size();
  v.put<uint64_t>(100).zeros(10);
  expect_rejected(v.bytes(), {"'general.name'", at(value_at), "string length 100"});
}

TEST(GgufValidation, ArrayLengthPastEndOfFile) {
  RawGguf r;
  r.header(0, 1).str("tokenizer.ggml.scores").put<uint32_t>(9);
  const size_t count_at = r.size() + 4;
  r.put<uint32_t>(6).put<uint64_t>(32000).zeros(400);
  expect_rejected(r.bytes(), {"'tokenizer.ggml.scores'", at(count_at), "32000 f32 items"});
}

TEST(GgufValidation, StringItemPastEndOfFileNamesTheItem) {
  RawGguf r;
  r.header(0, 1).str("tokens").put<uint32_t>(9).put<uint32_t>(8).put<uint64_t>(2).str("ok");
  const size_t item_at = r.size();
  r.put<uint64_t>(5000);
  expect_rejected(r.bytes(), {"'tokens'[1]", at(item_at)});
}

TEST(GgufValidation, UnknownValueType) {
  RawGguf r;
  r.header(0, 1).str("weird");
  const size_t type_at = r.size();
  r.put<uint32_t>(13).put<uint32_t>(0);
  expect_rejected(r.bytes(), {"'weird'", at(type_at), "unknown value type 13"});
}

TEST(GgufValidation, UnknownArrayElementType) {
  RawGguf r;
  r.header(0, 1).str("arr").put<uint32_t>(9);
  const size_t array_at = r.size();
  r.put<uint32_t>(77).put<uint64_t>(0);
  expect_rejected(r.bytes(), {"'arr'", at(array_at), "unknown array element type 77"});
}

TEST(GgufValidation, BoolOutOfRange) {
  RawGguf r;
  r.header(0, 1).str("flag").put<uint32_t>(7);
  const size_t value_at = r.size();
  r.put<uint8_t>(2);
  expect_rejected(r.bytes(), {"'flag'", at(value_at), "bool value 2"});
}

TEST(GgufValidation, DuplicateKeys) {
  RawGguf r;
  r.header(0, 2).kv_u32("llama.block_count", 1);
  const size_t second_at = r.size();
  r.kv_u32("llama.block_count", 2);
  expect_rejected(r.bytes(), {"'llama.block_count'", at(second_at), "duplicate metadata key"});
}

TEST(GgufValidation, ArrayNestingDepthLimit) {
  auto nest = [](int depth) {
    RawGguf r;
    r.header(0, 1).str("deep").put<uint32_t>(9);
    for (int i = 1; i < depth; ++i) r.put<uint32_t>(9).put<uint64_t>(1);
    r.put<uint32_t>(4).put<uint64_t>(1).put<uint32_t>(42);
    return r.bytes();
  };
  auto ok = GgufFile::parse(nest(8));  // eight levels of arrays are allowed
  const Value* v = ok.find("deep");
  for (int i = 0; i < 8; ++i) {
    ASSERT_EQ(v->type(), ValueType::ARRAY);
    v = &std::get<std::shared_ptr<Array>>(v->v)->items.at(0);
  }
  EXPECT_EQ(std::get<uint32_t>(v->v), 42u);
  expect_rejected(nest(9), {"'deep'[0][0][0][0][0][0][0][0]", "nested deeper than 8"});
  // A hostile file nesting far deeper must not exhaust the stack either.
  expect_rejected(nest(100000), {"nested deeper"});
}

TEST(GgufValidation, AlignmentMustBeANonzeroPowerOfTwo) {
  for (uint32_t a : {0u, 3u, 48u}) {
    RawGguf r;
    r.header(0, 1).kv_u32("general.alignment", a);
    expect_rejected(r.bytes(), {"general.alignment", std::to_string(a), "power of two"});
  }
  RawGguf s;
  s.header(0, 1).kv_string("general.alignment", "32");
  expect_rejected(s.bytes(), {"general.alignment", "string"});
  RawGguf ok;
  ok.header(1, 1).kv_u32("general.alignment", 8).tensor("t", {1}, 0, 0).pad(8).zeros(8);
  EXPECT_EQ(GgufFile::parse(ok.bytes()).alignment(), 8u);
}

TEST(GgufValidation, UnknownTensorType) {
  RawGguf r;
  r.header(1, 0).str("t").put<uint32_t>(1).put<uint64_t>(32);
  const size_t type_at = r.size();
  r.put<uint32_t>(4).put<uint64_t>(0).pad().zeros(64);  // 4 was Q4_2, removed from ggml
  expect_rejected(r.bytes(), {"tensor 't' type", at(type_at), "unknown tensor type id 4"});
}

TEST(GgufValidation, TooManyOrNoDimensions) {
  for (uint32_t n : {0u, 5u}) {
    RawGguf r;
    r.header(1, 0).str("t");
    const size_t dims_at = r.size();
    r.put<uint32_t>(n);
    for (uint32_t i = 0; i < n; ++i) r.put<uint64_t>(1);
    r.put<uint32_t>(0).put<uint64_t>(0).pad().zeros(32);
    expect_rejected(r.bytes(), {"tensor 't' n_dims", at(dims_at), std::to_string(n) + " dim"});
  }
}

TEST(GgufValidation, ZeroDimension) {
  RawGguf r;
  r.header(1, 0).str("t").put<uint32_t>(2).put<uint64_t>(4);
  const size_t dim_at = r.size();
  r.put<uint64_t>(0).put<uint32_t>(0).put<uint64_t>(0).pad().zeros(32);
  expect_rejected(r.bytes(), {"tensor 't' shape[1]", at(dim_at), "zero"});
}

TEST(GgufValidation, ElementCountOverflow) {
  RawGguf r;
  r.header(1, 0).str("t").put<uint32_t>(3).put<uint64_t>(1ull << 32).put<uint64_t>(1ull << 30);
  const size_t dim_at = r.size();
  r.put<uint64_t>(4).put<uint32_t>(0).put<uint64_t>(0).pad().zeros(32);
  expect_rejected(r.bytes(), {"tensor 't' shape[2]", at(dim_at), "overflows"});
}

TEST(GgufValidation, ByteSizeOverflow) {
  // 2^62 f64 elements is a valid element count but 2^65 bytes.
  RawGguf r;
  r.header(1, 0).tensor("t", {1ull << 62}, 28, 0).pad().zeros(32);
  expect_rejected(r.bytes(), {"tensor 't'", "byte size overflows"});
}

TEST(GgufValidation, RowNotAMultipleOfTheBlockSize) {
  RawGguf r;
  r.header(1, 0).str("q").put<uint32_t>(2);
  const size_t shape_at = r.size();
  r.put<uint64_t>(48).put<uint64_t>(2).put<uint32_t>(2).put<uint64_t>(0).pad().zeros(128);
  expect_rejected(r.bytes(), {"tensor 'q' shape[0]", at(shape_at), "48", "block size 32"});
}

TEST(GgufValidation, MisalignedTensorOffset) {
  RawGguf r;
  r.header(2, 0).tensor("a", {4}, 0, 0).str("b").put<uint32_t>(1).put<uint64_t>(4).put<uint32_t>(0);
  const size_t offset_at = r.size();
  r.put<uint64_t>(16).pad().zeros(64);
  expect_rejected(r.bytes(), {"tensor 'b' offset", at(offset_at), "16", "alignment 32"});
}

TEST(GgufValidation, TensorDataOutsideTheFile) {
  RawGguf r;
  r.header(2, 0).tensor("a", {4}, 0, 0);
  const size_t b_at = r.size();
  r.tensor("b", {16}, 0, 32).pad().zeros(95);  // b needs bytes [32, 96) of 95
  expect_rejected(r.bytes(), {"tensor 'b' data", at(b_at), "outside"});

  RawGguf far;
  far.header(1, 0).tensor("a", {4}, 0, 1ull << 62).pad().zeros(32);
  expect_rejected(far.bytes(), {"tensor 'a' data", "outside"});
}

TEST(GgufValidation, DataSectionPastEndOfFile) {
  RawGguf r;
  r.header(1, 0).tensor("a", {4}, 0, 0);
  const size_t infos_end = r.size();
  expect_rejected(r.bytes(), {"data section", at(infos_end), "past the end"});
}

TEST(GgufValidation, OverlappingTensors) {
  RawGguf r;
  r.header(2, 0).tensor("a", {16}, 0, 0);  // bytes [0, 64)
  const size_t b_at = r.size();
  r.tensor("b", {8}, 0, 32).pad().zeros(128);
  expect_rejected(r.bytes(), {"tensor 'b' data", at(b_at), "overlap tensor 'a'"});
  // Listed in the other order, the later-starting tensor is still the one reported.
  RawGguf s;
  s.header(2, 0).tensor("b", {8}, 0, 32).tensor("a", {16}, 0, 0).pad().zeros(128);
  expect_rejected(s.bytes(), {"tensor 'b' data", at(24), "overlap tensor 'a'"});
}

TEST(GgufValidation, DuplicateTensorNames) {
  RawGguf r;
  r.header(2, 0).tensor("w", {8}, 0, 0);
  const size_t second_at = r.size();
  r.tensor("w", {8}, 0, 32).pad().zeros(64);
  expect_rejected(r.bytes(), {"tensor 'w'", at(second_at), "duplicate tensor name"});
}

TEST(GgufValidation, TensorNameLongerThanTheSpecLimit) {
  const std::string name(65, 'n');
  RawGguf r;
  r.header(1, 0);
  const size_t info_at = r.size();
  r.tensor(name, {4}, 0, 0).pad().zeros(32);
  expect_rejected(r.bytes(), {"tensor info 0 name", at(info_at), "65 bytes exceeds the 64"});
  RawGguf ok;
  ok.header(1, 0).tensor(std::string(64, 'n'), {4}, 0, 0).pad().zeros(32);
  EXPECT_EQ(GgufFile::parse(ok.bytes()).tensors().at(0).name.size(), 64u);
}

TEST(GgufValidation, EveryTruncationOfAValidFileIsRejected) {
  GgufWriter w;
  w.set_string("general.architecture", "llama");
  w.set_strings("tokenizer.ggml.tokens", {"<s>", "</s>", "hello"});
  w.set_f32s("tokenizer.ggml.scores", {0.f, -1.f, -2.f});
  w.add_tensor("a", TensorType::F32, {3}, std::vector<uint8_t>(12, 1));
  w.add_tensor("b", TensorType::Q8_0, {32, 2}, std::vector<uint8_t>(68, 2));
  const auto full = w.serialize();
  ASSERT_NO_THROW(GgufFile::parse(full));
  auto f = GgufFile::parse(full);
  const uint64_t data_end = f.data_offset() + f.find_tensor("b")->offset + 68;
  for (size_t n = 0; n < data_end; ++n) {
    std::vector<uint8_t> cut(full.begin(), full.begin() + n);
    EXPECT_THROW(GgufFile::parse(cut), GgufError) << "prefix of " << n << " bytes";
  }
}

TEST(GgufValidation, AccessorsReportTypeMismatches) {
  GgufWriter w;
  w.set_u32("n", 300);
  w.set("neg", Value{int32_t{-1}});
  w.set_string("s", "x");
  w.set_f32s("floats", {1.f});
  w.set_i32s("ints", {1, -5});
  auto f = GgufFile::parse(w.serialize());
  EXPECT_EQ(f.get<uint16_t>("n"), 300);
  EXPECT_EQ(f.get<int64_t>("neg"), -1);
  auto message = [](auto&& fn) {
    try {
      fn();
    } catch (const GgufError& e) {
      return std::string(e.what());
    }
    return std::string("no error");
  };
  EXPECT_NE(message([&] { f.get<uint8_t>("n"); }).find("300 does not fit in u8"),
            std::string::npos);
  EXPECT_NE(message([&] { f.get<uint32_t>("neg"); }).find("-1 does not fit in u32"),
            std::string::npos);
  EXPECT_NE(message([&] { f.get<uint32_t>("s"); }).find("'s' is string, not u32"),
            std::string::npos);
  EXPECT_NE(message([&] { f.get<std::string>("missing"); }).find("'missing' is missing"),
            std::string::npos);
  EXPECT_NE(message([&] { f.get_array<std::string>("floats"); }).find("not string"),
            std::string::npos);
  EXPECT_NE(message([&] { f.get_array<uint32_t>("ints"); }).find("item 1"), std::string::npos);
  EXPECT_NE(message([&] { f.get_array<float>("n"); }).find("not an array"), std::string::npos);
  EXPECT_FALSE(f.get_optional<uint32_t>("missing").has_value());
  EXPECT_THROW(f.get_optional<std::string>("n"), GgufError);
  EXPECT_EQ(f.get_array<int64_t>("ints"), (std::vector<int64_t>{1, -5}));
  EXPECT_EQ(f.get_array<double>("floats"), (std::vector<double>{1.0}));
}

}  // namespace
}  // namespace vkllm::gguf
