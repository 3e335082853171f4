// SHA-256 against the FIPS 180-4 example vectors (NIST "SHA256.pdf" and the long-message test).
#include <gtest/gtest.h>

#include <cstdio>
#include <fstream>
#include <string>

#include "errors.h"
#include "sha256.h"

using tmps::sha256_file_hex;
using tmps::sha256_hex;

TEST(Sha256, Empty) {
  EXPECT_EQ(sha256_hex(""), "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855");
}

TEST(Sha256, Abc) {
  EXPECT_EQ(sha256_hex("abc"), "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad");
}

TEST(Sha256, TwoBlockMessage448Bits) {
  EXPECT_EQ(sha256_hex("abcdbcdecdefdefgefghfghighijhijkijkljklmklmnlmnomnopnopq"),
            "248d6a61d20638b8e5c026930c3e6039a33ce45964ff2167f6ecedd419db06c1");
}

TEST(Sha256, OneMillionA) {
  std::string m(1000000, 'a');
  EXPECT_EQ(sha256_hex(m), "cdc76e5c9914fb9281a1c7e284d73e67f1809a48a497200e046d39ccc7112cd0");
}

// Lengths around the padding boundary (55/56/64 bytes) must all differ and be stable.
TEST(Sha256, PaddingBoundaries) {
  std::string a55(55, 'x'), a56(56, 'x'), a64(64, 'x');
  EXPECT_NE(sha256_hex(a55), sha256_hex(a56));
  EXPECT_NE(sha256_hex(a56), sha256_hex(a64));
  EXPECT_EQ(sha256_hex(a56), sha256_hex(std::string(56, 'x')));
  EXPECT_EQ(sha256_hex(a64).size(), 64u);
}

TEST(Sha256, FileMatchesMemory) {
  std::string path = ::testing::TempDir() + "tmps_sha256_test.bin";
  std::string content(200000, '\0');
  for (size_t i = 0; i < content.size(); ++i) content[i] = static_cast<char>(i * 7 + 3);
  {
    std::ofstream out(path, std::ios::binary);
    out.write(content.data(), static_cast<std::streamsize>(content.size()));
  }
  EXPECT_EQ(sha256_file_hex(path), sha256_hex(content));
  std::remove(path.c_str());
  EXPECT_THROW(sha256_file_hex(path), tmps::Error);
}
