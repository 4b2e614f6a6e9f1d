// RoPE: every config field (scalings, 2D grids), frequencies, caches, offsets
// or position ids of either type, one tensor or q and k together, f32 and bf16.
#include <vector>

#include "checks.hpp"
#include "families.hpp"

namespace posenc::fuzz {
namespace {

// Every field of a config, each sometimes out of range. `bad` counts the
// values any call must refuse; the scalings' own parameters are left to the
// library (a call may refuse them, see expect_refusal_if).
posenc_rope_config draw_config(FuzzInput& in, int& bad) {
  posenc_rope_config c;
  require(posenc_rope_config_init(&c, 2 * (1 + in.byte() % 24)) == POSENC_OK,
          "posenc_rope_config_init");
  if (in.flag()) c.rotary_dim += in.flag() ? 1 : 2;  // odd, or not a multiple of 4
  c.pairing = posenc_rope_pairing(in.choice(3));
  const int bad_reals = in.invalid_reals();
  c.base = in.real(10000.0);
  bad += in.invalid_reals() > bad_reals;  // the scalings' reals are checked by posenc
  c.grid_width = in.choice(4) == 0 ? int64_t(in.byte() % 9) - 1 : 0;
  c.scaling = posenc_rope_scaling(in.choice(6));
  c.factor = in.real(2.0);
  c.original_max_positions = in.byte() % 64;
  c.sequence_length = in.byte() % 64;
  c.extrapolation_factor = double(in.byte() % 8) / 6.0 - 0.2;
  c.attention_factor = double(in.byte() % 6) - 1.0;
  c.beta_fast = double(in.byte() % 40);
  c.beta_slow = double(in.byte() % 4);
  c.low_freq_factor = double(in.byte() % 4);
  c.high_freq_factor = double(in.byte() % 8);
  c.fractional_correction_range = in.choice(3);  // 2: refused under YARN
  c.column_first = in.choice(3);                 // 2: refused
  bad += c.rotary_dim % 2 != 0 || c.pairing > POSENC_ROPE_HALF_SPLIT || c.grid_width < 0 ||
         c.column_first > 1 ||
         (c.grid_width > 0 && c.rotary_dim % 4 != 0) || c.scaling > POSENC_ROPE_SCALING_LLAMA3;
  return c;
}

// Whether the frequencies of `config` are accepted, checked against
// posenc_rope_inverse_frequencies's own contract.
bool config_accepted(const posenc_rope_config& config) {
  std::vector<double> inv_freq(64, 77.0);
  double attention_factor = 77.0;
  const posenc_status status =
      posenc_rope_inverse_frequencies(&config, inv_freq.data(), &attention_factor);
  if (status != POSENC_OK) {
    require(posenc_last_error()[0] != '\0', "a refused config left no message");
    for (double v : inv_freq) require(v == 77.0, "a refused config wrote inv_freq");
    require(attention_factor == 77.0, "a refused config wrote attention_factor");
    return false;
  }
  require(posenc_rope_inverse_frequencies(&config, inv_freq.data(), nullptr) == POSENC_OK,
          "posenc_rope_inverse_frequencies without attention_factor");
  return true;
}

}  // namespace

void fuzz_rope(FuzzInput& in) {
  FuzzContext context(in);
  int invalid = 0;
  const int64_t batch = in.count(3, invalid), tokens = in.count(24, invalid),
                heads = in.count(4, invalid), head_dim = in.size(40, invalid);
  int k_invalid = invalid;  // k_heads is only passed to posenc_rope_qk
  const int64_t k_heads = in.count(3, k_invalid);
  int bad_config = 0;
  const posenc_rope_config config = draw_config(in, bad_config);
  const bool accepted = config_accepted(config);
  if (bad_config > 0) require(!accepted, "a bad config accepted");

  // The angles from the config, a cache built from it, both or neither.
  const int source = in.choice(8);  // 0: neither, 1: both, 2-4: cache, else config
  posenc_rope_cache* cache = nullptr;
  int64_t max_positions = 0;
  if (source >= 1 && source <= 4) {
    int bad_max = 0;
    max_positions = in.size(96, bad_max);
    const posenc_status status =
        posenc_rope_cache_create(context.get(), &config, max_positions, &cache);
    if (bad_max == 0 && accepted) require(status == POSENC_OK, "a valid cache refused");
    if (status != POSENC_OK) {
      require(cache == nullptr, "a refused cache was returned");
    } else {
      posenc_rope_config copy;
      require(posenc_rope_cache_config(cache, &copy) == POSENC_OK &&
                  copy.rotary_dim == config.rotary_dim && copy.scaling == config.scaling &&
                  posenc_rope_cache_max_positions(cache) == max_positions,
              "the cache's config");
      if (in.flag()) {  // the same angles as the caller's tables
        const size_t n = size_t(max_positions * (config.rotary_dim / 2));
        std::vector<float> cos(n), sin(n);
        posenc_rope_cache* tables = nullptr;
        require(posenc_rope_cache_rotary_dim(cache) == config.rotary_dim &&
                    posenc_rope_cache_tables(cache, cos.data(), sin.data()) == POSENC_OK &&
                    posenc_rope_cache_create_from_tables(context.get(), config.rotary_dim,
                                                         config.pairing, max_positions,
                                                         cos.data(), sin.data(),
                                                         &tables) == POSENC_OK,
                "a cache of a cache's tables");
        posenc_rope_cache_destroy(cache);
        cache = tables;
      }
    }
  }
  const bool use_config = source == 1 || source >= 5;
  const bool bad_source = (use_config == (cache != nullptr));
  const bool config_refused = use_config && !accepted;

  // Positions: an offset, or ids of either type (NULL positions: offset 0).
  const int64_t limit = cache ? max_positions : int64_t(1) << 53;
  const int kind = in.choice(8);  // 0: NULL, 1: int32 ids, 2: int64 ids, 3: bad type
  posenc_rope_positions positions{kind == 0 ? 0 : int64_t(in.byte()) - 8, nullptr,
                                  POSENC_ROPE_POSITIONS_INT64};
  bool bad_positions = positions.offset < 0 || (invalid == 0 && positions.offset + tokens > limit);
  const size_t n_ids = elements({batch, tokens}, invalid);
  std::vector<int32_t> ids32(n_ids);
  std::vector<int64_t> ids64(n_ids);
  if (kind >= 1 && kind <= 3) {
    if (in.flag()) positions.offset = 0;  // ids need offset 0
    bad_positions = positions.offset != 0 || kind == 3;
    for (size_t i = 0; i < n_ids; ++i) {
      ids64[i] = in.choice(32) == 0 ? -1 - in.byte() : in.byte();
      ids32[i] = int32_t(ids64[i]);
      if (ids64[i] < 0 || ids64[i] >= limit) bad_positions = true;
    }
    positions.ids = kind == 1 ? static_cast<const void*>(ids32.data()) : ids64.data();
    positions.ids_type = posenc_rope_position_type(kind - 1);  // 2 is no type
    // No tokens: an empty vector's ids may be NULL, which means an offset.
    if (positions.ids == nullptr) {
      bad_positions = positions.offset < 0 || (invalid == 0 && positions.offset + tokens > limit);
    }
  }
  const auto layout = posenc_rope_layout(in.choice(3));
  const auto dtype = posenc_dtype(in.choice(5) % 3);
  const bool must_fail = invalid > 0 || bad_source || config_refused || bad_positions ||
                         config.rotary_dim > head_dim || layout > POSENC_ROPE_BHTD ||
                         dtype > POSENC_BF16;

  const size_t nq = elements({batch, tokens, heads, head_dim}, invalid);
  const size_t nk = elements({batch, tokens, k_heads, head_dim}, k_invalid);
  std::vector<float> x(nq + nk, 0.5f), out(nq + nk, kUntouched);
  const posenc_rope_config* config_ptr = use_config ? &config : nullptr;
  const posenc_rope_positions* positions_ptr = kind == 0 ? nullptr : &positions;
  const int pointers = in.choice(8);  // 0: in place, 1: outputs overlap
  const bool in_place = pointers == 0;
  void* q_out = in_place ? x.data() : out.data();
  void* k_out = in_place ? x.data() + nq : out.data() + nq;
  if (in.flag()) {
    const posenc_status status =
        posenc_rope(context.get(), config_ptr, cache, positions_ptr, layout, dtype, batch, tokens,
                    heads, head_dim, x.data(), q_out);
    expect_refusal_if(status, must_fail, in_place ? x : out, in_place ? 0.5f : kUntouched);
  } else {
    // q_out's last element and k_out's first the same (bf16 has 2 bytes each);
    // empty ranges overlap nothing.
    const size_t element = dtype == POSENC_BF16 ? 2 : 4;
    const bool overlap = pointers == 1 && nq > 0 && nk > 0;
    if (overlap) k_out = static_cast<char*>(q_out) + (nq - 1) * element;
    const posenc_status status = posenc_rope_qk(
        context.get(), config_ptr, cache, positions_ptr, layout, dtype, batch, tokens, heads,
        k_heads, head_dim, x.data(), q_out, x.data() + nq, k_out);
    expect_refusal_if(status, must_fail || k_invalid > 0 || overlap, in_place ? x : out,
                      in_place ? 0.5f : kUntouched);
  }
  posenc_rope_cache_destroy(cache);
}

}  // namespace posenc::fuzz
