// Opening files from disk: mapping, and I/O errors that name the path.
#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cstring>
#include <fstream>
#include <span>
#include <vector>

#include "core/error.h"
#include "gguf/gguf_file.h"
#include "gguf/gguf_writer.h"

namespace fluoro::gguf {
namespace {

namespace fs = std::filesystem;

class GgufOpen : public ::testing::Test {
  protected:
    void SetUp() override {
        dir_ = fs::temp_directory_path() /
               ("fluoro_gguf_open_" + std::to_string(::getpid()) + "_" +
                ::testing::UnitTest::GetInstance()->current_test_info()->name());
        fs::create_directories(dir_);
    }
    void TearDown() override { fs::remove_all(dir_); }

    std::string error_of(const fs::path& p) {
        try {
            GgufFile::open(p);
        } catch (const Error& e) {
            return e.what();
        }
        ADD_FAILURE() << "open succeeded";
        return {};
    }

    fs::path dir_;
};

TEST_F(GgufOpen, MapsAWrittenFile) {
    GgufWriter w;
    w.add_string("general.architecture", "llama");
    const std::vector<float> x = {1, 2, 3, 4};
    w.add_tensor_f32("x", {4}, x);
    const fs::path p = dir_ / "m.gguf";
    w.write(p);
    const GgufFile f = GgufFile::open(p);
    EXPECT_EQ(f.name(), p.string());
    EXPECT_EQ(f.file_size(), fs::file_size(p));
    EXPECT_EQ(f.get_string("general.architecture"), "llama");
    const auto d = f.tensor_data(*f.find_tensor("x"));
    ASSERT_EQ(d.size(), 16u);
    EXPECT_EQ(reinterpret_cast<uintptr_t>(d.data()) % 32, 0u);  // mapping is page-aligned
}

// Dropping a tensor's pages (after a backend copied it) loses nothing: the bytes read back the
// same from the file. Parsed from memory, the call must not touch the image at all.
TEST_F(GgufOpen, DroppedPagesReadBackTheSame) {
    GgufWriter w;
    w.add_string("general.architecture", "llama");
    std::vector<float> x(64 * 1024);  // 256 KiB: many whole pages
    for (size_t i = 0; i < x.size(); ++i) x[i] = float(i) * 0.5f;
    w.add_tensor_f32("x", {uint64_t(x.size())}, x);
    const fs::path p = dir_ / "m.gguf";
    w.write(p);
    const GgufFile f = GgufFile::open(p);
    const auto d = f.tensor_data(*f.find_tensor("x"));
    ASSERT_EQ(d.size(), x.size() * sizeof(float));
    f.drop_pages(d);
    EXPECT_EQ(0, std::memcmp(d.data(), x.data(), d.size()));
    f.drop_pages(std::span<const std::byte>(d.data() - 1, 8));  // partial pages: ignored
    EXPECT_EQ(0, std::memcmp(d.data(), x.data(), d.size()));

    std::ifstream in(p, std::ios::binary);
    std::vector<std::byte> image(fs::file_size(p));
    in.read(reinterpret_cast<char*>(image.data()), std::streamsize(image.size()));
    const GgufFile mem = GgufFile::parse(image, "in memory");
    const auto m = mem.tensor_data(*mem.find_tensor("x"));
    mem.drop_pages(m);
    EXPECT_EQ(0, std::memcmp(m.data(), x.data(), m.size()));
}

TEST_F(GgufOpen, MissingFileNamesThePath) {
    const fs::path p = dir_ / "nope.gguf";
    const std::string e = error_of(p);
    EXPECT_NE(e.find(p.string()), std::string::npos) << e;
    EXPECT_NE(e.find("cannot open"), std::string::npos) << e;
}

TEST_F(GgufOpen, DirectoryIsRejected) {
    const std::string e = error_of(dir_);
    EXPECT_NE(e.find(dir_.string() + ": is a directory"), std::string::npos) << e;
}

TEST_F(GgufOpen, FifoIsRejectedWithoutBlocking) {
    const fs::path p = dir_ / "fifo";
    ASSERT_EQ(::mkfifo(p.c_str(), 0600), 0);
    const std::string e = error_of(p);
    EXPECT_NE(e.find("is not a regular file"), std::string::npos) << e;
}

TEST_F(GgufOpen, EmptyFileIsAFormatError) {
    const fs::path p = dir_ / "empty.gguf";
    std::ofstream(p).close();
    EXPECT_THROW(GgufFile::open(p), FormatError);
    EXPECT_NE(error_of(p).find(p.string() + ": byte 0: the file is empty"), std::string::npos);
}

TEST_F(GgufOpen, WriterReportsUnwritablePath) {
    EXPECT_THROW(GgufWriter().write(dir_ / "no" / "such" / "dir.gguf"), Error);
}

}  // namespace
}  // namespace fluoro::gguf
