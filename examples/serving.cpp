// A serving-style program: one posenc context shared by worker threads, each
// with a workspace preallocated once, answering 2D relative-attention
// requests (BoTNet-style, a 14x14 feature map) and reporting throughput and
// latency percentiles. Usage: serving [workers] [requests]
#include <algorithm>
#include <atomic>
#include <chrono>
#include <cerrno>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <random>
#include <thread>
#include <vector>

#include <posenc/posenc.hpp>

namespace {

constexpr int64_t kHeads = 4, kHeight = 14, kWidth = 14, kHeadDim = 64;
constexpr int64_t kTokens = kHeight * kWidth;

// The model's weights: 2D relative tables shared by every request.
struct Model {
  std::vector<float> rel_h, rel_w;
};

// One request's activations and its answer.
struct Request {
  std::vector<float> q, k, v, out;
};

std::vector<float> random_values(size_t count, std::mt19937& rng, float scale) {
  std::normal_distribution<float> normal(0.0f, scale);
  std::vector<float> values(count);
  for (float& v : values) v = normal(rng);
  return values;
}

posenc_attention_desc request_desc() {
  posenc_attention_desc desc = posenc::attention_desc(1, kHeads, kTokens, kTokens, kHeadDim);
  desc.bias = POSENC_BIAS_RELATIVE_2D;
  desc.map_height = kHeight;
  desc.map_width = kWidth;
  return desc;
}

double percentile(std::vector<double> values, double p) {
  std::sort(values.begin(), values.end());
  const size_t at = std::min(values.size() - 1, size_t(p / 100.0 * double(values.size())));
  return values[at];
}

// argv[i] as a whole number in [1, most], fallback where it is not given;
// -1 (with a message) where it is not such a number.
int count_argument(int argc, char** argv, int i, const char* name, int fallback, long most) {
  if (i >= argc) return fallback;
  char* end = nullptr;
  errno = 0;
  const long value = std::strtol(argv[i], &end, 10);
  if (errno != 0 || end == argv[i] || *end != '\0' || value < 1 || value > most) {
    std::fprintf(stderr, "serving: %s: expected a whole number in 1..%ld, got '%s'\n", name, most,
                 argv[i]);
    return -1;
  }
  return int(value);
}

}  // namespace

int main(int argc, char** argv) {
  const int workers = count_argument(argc, argv, 1, "workers", 2, 1024);
  const int requests = count_argument(argc, argv, 2, "requests", 400, 10000000);
  if (workers < 0 || requests < 0 || argc > 3) {
    std::fprintf(stderr, "usage: serving [workers] [requests]\n");
    return 2;
  }

  // One context for the process: each request runs on one thread, and the
  // workers give the parallelism, as a server with many small requests does.
  const posenc::Context context(posenc::Isa::automatic, 1);
  const posenc_attention_desc desc = request_desc();

  std::mt19937 rng(7);
  const float table_scale = 1.0f / std::sqrt(float(kHeadDim));
  const Model model{random_values(size_t((2 * kHeight - 1) * kHeadDim), rng, table_scale),
                    random_values(size_t((2 * kWidth - 1) * kHeadDim), rng, table_scale)};
  const size_t tensor = size_t(kHeads * kTokens * kHeadDim);
  std::vector<Request> pool(static_cast<size_t>(workers));
  for (Request& r : pool) {
    r = Request{random_values(tensor, rng, 1.0f), random_values(tensor, rng, 1.0f),
                random_values(tensor, rng, 1.0f), std::vector<float>(tensor)};
  }

  std::atomic<int> next{0};
  std::atomic<bool> failed{false};
  std::vector<std::vector<double>> latencies(static_cast<size_t>(workers));
  const auto start = std::chrono::steady_clock::now();
  std::vector<std::thread> threads;
  for (int w = 0; w < workers; ++w) {
    threads.emplace_back([&, w] {
      posenc::AttentionWorkspace workspace(context, desc);  // allocated once per worker
      Request& r = pool[size_t(w)];
      posenc_attention_tensors tensors{};  // the pointers this call does not use stay NULL
      tensors.q = r.q.data();
      tensors.k = r.k.data();
      tensors.v = r.v.data();
      tensors.table_h = model.rel_h.data();
      tensors.table_w = model.rel_w.data();
      tensors.out = r.out.data();
      while (next.fetch_add(1) < requests) {
        const auto t0 = std::chrono::steady_clock::now();
        try {
          workspace.run(tensors);
        } catch (const posenc::Error& e) {
          std::fprintf(stderr, "request failed: %s\n", e.what());
          failed = true;
          return;
        }
        latencies[size_t(w)].push_back(
            std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0)
                .count());
      }
    });
  }
  for (auto& t : threads) t.join();
  const double seconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  if (failed) return EXIT_FAILURE;

  std::vector<double> all;
  for (const auto& l : latencies) all.insert(all.end(), l.begin(), l.end());
  for (const Request& r : pool) {
    for (float v : r.out) {
      if (!std::isfinite(v)) {
        std::fprintf(stderr, "non-finite output\n");
        return EXIT_FAILURE;
      }
    }
  }
  std::printf("posenc %s, %s path: %d requests of 2D relative attention (H=%lld, %lldx%lld, "
              "d=%lld) on %d workers\n",
              posenc_version(), posenc::isa_name(context.isa()), requests, (long long)kHeads,
              (long long)kHeight, (long long)kWidth, (long long)kHeadDim, workers);
  std::printf("workspace per worker: %zu KiB\n",
              posenc::attention_workspace_size(context, desc) / 1024);
  std::printf("throughput: %.1f requests/s\n", double(all.size()) / seconds);
  std::printf("latency ms: p50 %.3f  p90 %.3f  p99 %.3f  max %.3f\n", percentile(all, 50),
              percentile(all, 90), percentile(all, 99), percentile(all, 100));
  return EXIT_SUCCESS;
}
