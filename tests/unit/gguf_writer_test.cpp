// GgufWriter::write streams the file (header, then each tensor padded to 32 bytes) instead of building it in memory;
// what it writes must be bytes() exactly, and read back through GgufFile.
#include <gtest/gtest.h>

#include <fstream>
#include <iterator>
#include <unistd.h>

#include "formats/gguf_file.h"
#include "formats/gguf_writer.h"

namespace slimkv::test {
namespace {

TEST(GgufWriter, WriteStreamsExactlyItsBytes) {
  GgufWriter w;
  w.add_string("general.architecture", "llama");
  w.add_u32("llama.block_count", 1);
  const std::vector<float> a = {1, 2, 3}, b(40, 0.5f), c = {7};  // sizes that leave padding between tensors
  w.add_tensor("a", DType::F32, {3}, a.data(), a.size() * 4);
  w.add_tensor("b", DType::F32, {8, 5}, b.data(), b.size() * 4);
  w.add_tensor("c", DType::F32, {1}, c.data(), c.size() * 4);
  const std::string path = ::testing::TempDir() + "/writer_" + std::to_string(::getpid()) + ".gguf";
  w.write(path);
  std::ifstream f(path, std::ios::binary);
  const std::vector<uint8_t> on_disk((std::istreambuf_iterator<char>(f)), std::istreambuf_iterator<char>());
  EXPECT_EQ(on_disk, w.bytes());
  GgufFile g(path);
  ASSERT_EQ(g.tensors().size(), 3u);
  EXPECT_EQ(reinterpret_cast<const float*>(g.tensors()[2].data)[0], 7.0f);
  EXPECT_EQ(reinterpret_cast<const float*>(g.tensors()[1].data)[39], 0.5f);
  std::remove(path.c_str());
}

}  // namespace
}  // namespace slimkv::test
