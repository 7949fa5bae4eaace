// Column blocks (gguf_layout.h): the packing puts every element where the layout says and
// unpacking restores the rows; GgufFile stores exactly the tensors a loader asks for in them, in
// an owned copy (FromBytes, Open kRead) but never in a mapping, and refuses them for a tensor they
// do not fit.
#include "gguf/gguf_layout.h"

#include <gtest/gtest.h>

#include <cstring>
#include <filesystem>
#include <numeric>
#include <string>
#include <utility>
#include <vector>

#include "gguf/gguf_reader.h"
#include "gguf/gguf_writer.h"

namespace kvengine {
namespace {

TEST(GgufLayoutTest, PackPutsEachElementInItsBlockAndUnpackRestores) {
  for (const size_t elem : {size_t{2}, size_t{4}}) {
    for (const auto& [rows, cols, block] :
         {std::tuple<int64_t, int64_t, int64_t>{3, 10, 4}, {5, 8, 4}, {1, 7, 3}, {4, 9, 9}}) {
      SCOPED_TRACE(std::to_string(rows) + " x " + std::to_string(cols) + " / " +
                   std::to_string(block) + ", " + std::to_string(elem) + " bytes");
      std::vector<uint8_t> src(static_cast<size_t>(rows * cols) * elem);
      std::iota(src.begin(), src.end(), uint8_t{1});
      std::vector<uint8_t> packed(src.size()), back(src.size());
      PackColumnBlocks(src.data(), rows, cols, elem, block, packed.data());
      for (int64_t r = 0; r < rows; ++r) {
        for (int64_t c = 0; c < cols; ++c) {
          const int64_t j = c / block;
          const size_t at =
              ColumnBlockOffset(rows, block, j, elem) +
              static_cast<size_t>((r * ColumnBlockWidth(cols, block, j) + c - j * block)) * elem;
          EXPECT_EQ(std::memcmp(packed.data() + at, src.data() + (r * cols + c) * elem, elem), 0)
              << "row " << r << ", column " << c;
        }
      }
      UnpackColumnBlocks(packed.data(), rows, cols, elem, block, back.data());
      EXPECT_EQ(back, src);
    }
  }
  EXPECT_EQ(ColumnBlocks(5632, 1920), 3);
  EXPECT_EQ(ColumnBlockWidth(5632, 1920, 2), 1792);
  EXPECT_EQ(ColumnBlockOffset(2048, 1920, 2, 2), size_t{2} * 1920 * 2048 * 2);
}

// A file with a 3 x 200 f16 matrix "wide", a 3 x 512 q8_0 one "quant" (16 blocks of 34 bytes a
// row, each block's bytes distinct) and a 1-D f32 "norm".
std::vector<uint8_t> LayoutFile(std::vector<uint8_t>* wide_bytes) {
  GgufWriter w;
  wide_bytes->resize(3 * 200 * 2);
  for (size_t i = 0; i < wide_bytes->size(); ++i) (*wide_bytes)[i] = static_cast<uint8_t>(i * 7);
  EXPECT_TRUE(w.AddTensor("wide", GgmlType::kF16, std::vector<int64_t>{200, 3}, *wide_bytes).ok());
  std::vector<uint8_t> quant(3 * 16 * 34);
  for (size_t i = 0; i < quant.size(); ++i) quant[i] = static_cast<uint8_t>(i * 13 + 5);
  EXPECT_TRUE(w.AddTensor("quant", GgmlType::kQ8_0, std::vector<int64_t>{512, 3}, quant).ok());
  EXPECT_TRUE(
      w.AddTensor("norm", GgmlType::kF32, std::vector<int64_t>{4}, std::vector<uint8_t>(16, 1))
          .ok());
  Result<std::vector<uint8_t>> bytes = w.WriteToBytes();
  EXPECT_TRUE(bytes.ok());
  return *bytes;
}

// Load options that ask for column blocks of `block` for `tensor`, none for the other tensors.
GgufLoadOptions ColumnBlockOf(std::string tensor, int64_t block) {
  GgufLoadOptions options;
  options.column_block = [tensor = std::move(tensor), block](const GgufTensor& x) -> int64_t {
    return x.name == tensor ? block : 0;
  };
  return options;
}

TEST(GgufLayoutTest, OwnedCopiesStoreWhatTheLoaderAsksFor) {
  std::vector<uint8_t> wide;
  const std::vector<uint8_t> file = LayoutFile(&wide);
  GgufLoadOptions options = ColumnBlockOf("wide", 64);
  Result<std::unique_ptr<GgufFile>> f = GgufFile::FromBytes(file, options);
  ASSERT_TRUE(f.ok()) << f.status().ToString();
  const GgufTensor* t = (*f)->FindTensor("wide");
  EXPECT_EQ(t->column_block, 64);
  std::vector<uint8_t> want(wide.size());
  PackColumnBlocks(wide.data(), 3, 200, 2, 64, want.data());
  EXPECT_TRUE(std::equal(t->data.begin(), t->data.end(), want.begin(), want.end()));
  EXPECT_EQ((*f)->FindTensor("quant")->column_block, 0);
  EXPECT_EQ((*f)->FindTensor("norm")->column_block, 0);

  // A width of at least the columns is the file's layout.
  options = ColumnBlockOf("wide", 200);
  f = GgufFile::FromBytes(file, options);
  ASSERT_TRUE(f.ok());
  EXPECT_EQ((*f)->FindTensor("wide")->column_block, 0);
  EXPECT_TRUE(std::equal(wide.begin(), wide.end(), (*f)->FindTensor("wide")->data.begin()));

  // Read into huge pages: packed; mapped: the file's layout whatever is asked.
  const std::string path = ::testing::TempDir() + "/gguf_layout_test.gguf";
  {
    FILE* out = std::fopen(path.c_str(), "wb");
    ASSERT_NE(out, nullptr);
    ASSERT_EQ(std::fwrite(file.data(), 1, file.size(), out), file.size());
    std::fclose(out);
  }
  options = ColumnBlockOf("wide", 64);
  Result<std::unique_ptr<GgufFile>> read = GgufFile::Open(path, GgufFile::LoadMode::kRead, options);
  ASSERT_TRUE(read.ok()) << read.status().ToString();
  t = (*read)->FindTensor("wide");
  EXPECT_EQ(t->column_block, 64);
  EXPECT_TRUE(std::equal(t->data.begin(), t->data.end(), want.begin(), want.end()));
  Result<std::unique_ptr<GgufFile>> mapped =
      GgufFile::Open(path, GgufFile::LoadMode::kMap, options);
  ASSERT_TRUE(mapped.ok());
  EXPECT_EQ((*mapped)->FindTensor("wide")->column_block, 0);
  EXPECT_TRUE(std::equal(wide.begin(), wide.end(), (*mapped)->FindTensor("wide")->data.begin()));
  std::filesystem::remove(path);
}

// A quantized matrix is packed in units of its blocks: 256 columns are 8 blocks of 34 bytes.
TEST(GgufLayoutTest, QuantizedTensorsPackInUnitsOfTheirBlocks) {
  std::vector<uint8_t> wide;
  const std::vector<uint8_t> file = LayoutFile(&wide);
  Result<std::unique_ptr<GgufFile>> rows = GgufFile::FromBytes(file, {});
  ASSERT_TRUE(rows.ok());
  const GgufTensor* q = (*rows)->FindTensor("quant");
  std::vector<uint8_t> want(q->data.size());
  PackColumnBlocks(q->data.data(), 3, 16, 34, 8, want.data());
  Result<std::unique_ptr<GgufFile>> f = GgufFile::FromBytes(file, ColumnBlockOf("quant", 256));
  ASSERT_TRUE(f.ok()) << f.status().ToString();
  const GgufTensor* t = (*f)->FindTensor("quant");
  EXPECT_EQ(t->column_block, 256);
  EXPECT_TRUE(std::equal(t->data.begin(), t->data.end(), want.begin(), want.end()));
}

// Refused, naming the tensor: a quantized width that is not a multiple of 256 (64 is one for the
// float types), and any width for a 1-D tensor.
TEST(GgufLayoutTest, RefusesColumnBlocksItCannotStore) {
  std::vector<uint8_t> wide;
  const std::vector<uint8_t> file = LayoutFile(&wide);
  for (const std::string name : {"quant", "norm"}) {
    GgufLoadOptions options;
    options.column_block = [name](const GgufTensor& t) -> int64_t {
      return t.name != name ? 0 : name == "quant" ? 64 : 2;
    };
    const Result<std::unique_ptr<GgufFile>> f = GgufFile::FromBytes(file, options);
    ASSERT_FALSE(f.ok()) << name;
    EXPECT_NE(f.status().message().find("'" + name + "'"), std::string::npos)
        << f.status().message();
    EXPECT_NE(f.status().message().find("column blocks"), std::string::npos);
  }
}

}  // namespace
}  // namespace kvengine
