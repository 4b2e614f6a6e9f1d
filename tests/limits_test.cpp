// Process limits: the thread-count maximum of a context, the bounded oneDNN
// primitive cache (its capacity, eviction, and results across it), and what
// a thread keeps, released while other threads run.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdint>
#include <string>
#include <thread>
#include <vector>

#include "posenc/attention.h"
#include "posenc/core.h"
#include "posenc/core.hpp"
#include "runtime/matmul.hpp"

namespace posenc::test {
namespace {

TEST(Limits, ContextThreadCountHasAMaximum) {
  posenc_context* context = nullptr;
  EXPECT_EQ(posenc_context_create(POSENC_ISA_AUTO, 100000, &context),
            POSENC_ERROR_INVALID_ARGUMENT);
  EXPECT_EQ(context, nullptr);
  const std::string message = posenc_last_error();
  EXPECT_NE(message.find("num_threads"), std::string::npos) << message;
  EXPECT_NE(message.find(std::to_string(POSENC_MAX_THREADS)), std::string::npos) << message;
  EXPECT_EQ(posenc_context_create(POSENC_ISA_AUTO, POSENC_MAX_THREADS + 1, &context),
            POSENC_ERROR_INVALID_ARGUMENT);
  ASSERT_EQ(posenc_context_create(POSENC_ISA_AUTO, POSENC_MAX_THREADS, &context), POSENC_OK);
  EXPECT_EQ(posenc_context_num_threads(context), POSENC_MAX_THREADS);
  posenc_context_destroy(context);
}

// Restores the cache's capacity when a test ends.
class CacheCapacity {
 public:
  explicit CacheCapacity(int64_t capacity) : saved_(posenc_primitive_cache_capacity()) {
    posenc::set_primitive_cache_capacity(capacity);
  }
  ~CacheCapacity() { posenc_set_primitive_cache_capacity(saved_); }

 private:
  int64_t saved_;
};

TEST(Limits, PrimitiveCacheCapacityIsValidated) {
  EXPECT_EQ(posenc_primitive_cache_capacity(), kDefaultPrimitiveCacheCapacity)
      << "POSENC_PRIMITIVE_CACHE_CAPACITY set in the test environment?";
  EXPECT_EQ(posenc_set_primitive_cache_capacity(0), POSENC_ERROR_INVALID_ARGUMENT);
  EXPECT_NE(std::string(posenc_last_error()).find("capacity"), std::string::npos);
  EXPECT_EQ(posenc_set_primitive_cache_capacity(-5), POSENC_ERROR_INVALID_ARGUMENT);
  EXPECT_EQ(posenc_primitive_cache_capacity(), kDefaultPrimitiveCacheCapacity);
}

// POSENC_PRIMITIVE_CACHE_CAPACITY: a positive decimal integer, anything
// else ignored.
TEST(Limits, PrimitiveCacheCapacityFromTheEnvironment) {
  EXPECT_EQ(primitive_cache_capacity_from("3"), 3);
  EXPECT_EQ(primitive_cache_capacity_from("0100"), 100);
  EXPECT_EQ(primitive_cache_capacity_from("9223372036854775807"), INT64_MAX);
  for (const char* ignored :
       {"", "0", "-3", "+3", " 3", "3 ", "3x", "0x10", "abc", "9223372036854775808"}) {
    EXPECT_EQ(primitive_cache_capacity_from(ignored), kDefaultPrimitiveCacheCapacity)
        << '"' << ignored << '"';
  }
  EXPECT_EQ(primitive_cache_capacity_from(nullptr), kDefaultPrimitiveCacheCapacity);
}

// C = A B^T of m x k and n x k small integers: exact in fp32, whatever the
// kernel.
std::vector<float> product(int64_t m, int64_t n, int64_t k) {
  const MatmulShape s = dense_a_bt(m, n, k);
  std::vector<float> a(size_t(m * k)), b(size_t(n * k)), c(size_t(m * n), -1.0f);
  for (size_t i = 0; i < a.size(); ++i) a[i] = float(int(i % 7) - 3);
  for (size_t i = 0; i < b.size(); ++i) b[i] = float(int(i % 5) - 2);
  matmul(s, a.data(), b.data(), c.data());
  for (int64_t i = 0; i < m; ++i) {
    for (int64_t j = 0; j < n; ++j) {
      double sum = 0.0;
      for (int64_t p = 0; p < k; ++p) sum += double(a[size_t(i * k + p)]) * b[size_t(j * k + p)];
      EXPECT_EQ(c[size_t(i * n + j)], float(sum)) << m << "x" << n << "x" << k;
    }
  }
  return c;
}

// Distinct shapes stay under the cap, each one dropped is counted, and a
// shape dropped from the cache gives the same bits when made again: 100,000
// shapes, as a decode loop over growing key lengths makes them (about 3 s,
// mostly oneDNN creating primitives).
TEST(Limits, PrimitiveCacheStaysUnderItsCapacity) {
  constexpr int64_t kCapacity = 32;
  constexpr int64_t kShapes = 100000;
  const CacheCapacity capacity(kCapacity);
  EXPECT_LE(posenc_primitive_cache_size(), kCapacity);
  const std::vector<float> first = product(1, 1, 1);
  posenc::set_primitive_cache_capacity(1);  // keeps (1, 1, 1), the last used
  posenc::set_primitive_cache_capacity(kCapacity);
  ASSERT_EQ(posenc_primitive_cache_size(), 1);
  const int64_t evictions = posenc_primitive_cache_evictions();
  int64_t largest = 0;
  for (int64_t i = 0; i < kShapes; ++i) {
    // m, n, k of 1 to 40, 1 to 50, 1 to 50: 100,000 distinct shapes.
    const int64_t m = 1 + i / 2500, n = 1 + i / 50 % 50, k = 1 + i % 50;
    product(m, n, k);
    largest = std::max(largest, posenc_primitive_cache_size());
    if (HasFailure()) return;
  }
  EXPECT_LE(largest, kCapacity);
  EXPECT_EQ(posenc_primitive_cache_size(), kCapacity);
  // (1, 1, 1) is made again: every shape but the cache's last 32 was dropped.
  EXPECT_EQ(posenc_primitive_cache_evictions() - evictions, kShapes - kCapacity);
  EXPECT_EQ(product(1, 1, 1), first);
  EXPECT_EQ(posenc_primitive_cache_evictions() - evictions, kShapes - kCapacity + 1);
  posenc::set_primitive_cache_capacity(4);  // lowering it drops entries at once
  EXPECT_EQ(posenc_primitive_cache_size(), 4);
  EXPECT_EQ(posenc_primitive_cache_evictions() - evictions, kShapes - kCapacity + 1 + 28);
}

// Threads running GEMMs of their own shapes through a cache of capacity 2:
// entries are dropped while other threads run them, and every result stays
// exact (a running call keeps its primitive alive).
TEST(Limits, PrimitiveCacheEvictsUnderConcurrentUse) {
  const CacheCapacity capacity(2);
  std::vector<std::thread> threads;
  for (int t = 0; t < 4; ++t) {
    threads.emplace_back([t] {
      for (int64_t i = 0; i < 200; ++i) product(1 + t, 1 + i % 20, 1 + i / 20);
    });
  }
  for (std::thread& thread : threads) thread.join();
  EXPECT_LE(posenc_primitive_cache_size(), 2);
}

// Threads calling an attention with no workspace (the op's own, kept by
// each), each releasing its memory every other call while the others run:
// every call gives the bits of the first.
TEST(Limits, ThreadsReleaseTheirMemoryWhileOthersRun) {
  posenc_context* context = nullptr;
  ASSERT_EQ(posenc_context_create(POSENC_ISA_AUTO, 2, &context), POSENC_OK);
  posenc_attention_desc d;
  posenc_attention_desc_init(&d, 1, 2, 150, 150, 16);
  d.causal = 1;
  std::vector<float> qkv(size_t(2 * 150 * 16));
  for (size_t i = 0; i < qkv.size(); ++i) qkv[i] = float(int(i % 13) - 6) / 8;
  const auto call = [&](std::vector<float>& out) {
    posenc_attention_tensors t{};
    t.q = t.k = t.v = qkv.data();
    t.out = out.data();
    return posenc_attention(context, &d, &t, nullptr, 0);
  };
  std::vector<float> first(qkv.size());
  ASSERT_EQ(call(first), POSENC_OK) << posenc_last_error();
  std::vector<int> mismatches(4, 0);
  std::vector<std::thread> threads;
  for (size_t t = 0; t < mismatches.size(); ++t) {
    threads.emplace_back([&, t] {
      std::vector<float> out(qkv.size());
      for (int i = 0; i < 20; ++i) {
        if (call(out) != POSENC_OK || out != first) ++mismatches[t];
        if (i % 2 == 1) posenc_release_thread_memory();
      }
    });
  }
  for (std::thread& thread : threads) thread.join();
  for (size_t t = 0; t < mismatches.size(); ++t) EXPECT_EQ(mismatches[t], 0) << "thread " << t;
  posenc_context_destroy(context);
}

}  // namespace
}  // namespace posenc::test
