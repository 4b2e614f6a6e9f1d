// The core of the C ABI: strings, ISA names and the cap, the primitive
// cache's capacity, bf16 conversions, releasing the thread's memory.
// Contexts are exercised by every family through FuzzContext.
#include <strings.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <string>

#include "checks.hpp"
#include "families.hpp"

namespace posenc::fuzz {

void fuzz_core(FuzzInput& in) {
  require(posenc_status_string(posenc_status(in.choice(10))) != nullptr, "a status string");
  require(std::strcmp(posenc_version(), "") != 0, "posenc_version");

  // A name from the input's bytes: the names back, and what else parses.
  const auto isa = posenc_isa(in.choice(6));
  const char* name = posenc_isa_name(isa);
  require((name != nullptr) == (isa <= POSENC_ISA_NEON), "posenc_isa_name");
  std::string text = in.flag() && name ? name : "";
  for (int n = in.choice(8); n > 0; --n) text += char(in.byte());
  posenc_isa parsed = POSENC_ISA_MAX_ENUM;
  const posenc_status status = posenc_isa_from_name(in.flag() ? text.c_str() : nullptr, &parsed);
  if (status == POSENC_OK) {
    require(parsed <= POSENC_ISA_NEON && strcasecmp(posenc_isa_name(parsed), text.c_str()) == 0,
            "posenc_isa_from_name parsed a name that is not one");
  } else {
    require(parsed == POSENC_ISA_MAX_ENUM, "a failed posenc_isa_from_name wrote its output");
  }

  // The cap is process-wide: only values that leave it as it is.
  const posenc_isa cap = posenc_max_isa();
  require(posenc_set_max_isa(cap) == POSENC_OK, "setting the cap to itself");
  require(posenc_set_max_isa(posenc_isa(5 + in.byte())) != POSENC_OK, "an unknown cap");
  require(posenc_max_isa() == cap && posenc_best_isa() != POSENC_ISA_AUTO, "the cap changed");

  // The primitive cache, process-wide: a capacity below 1 is refused and
  // leaves it as it was; a lower one drops (and counts) the entries above
  // it; the size never exceeds it.
  const int64_t capacity = int64_t(in.byte()) - 8;
  const int64_t before = posenc_primitive_cache_capacity();
  const int64_t size = posenc_primitive_cache_size();
  const int64_t evictions = posenc_primitive_cache_evictions();
  if (capacity >= 1) {
    require(posenc_set_primitive_cache_capacity(capacity) == POSENC_OK &&
                posenc_primitive_cache_capacity() == capacity,
            "a positive cache capacity");
    require(posenc_primitive_cache_evictions() - evictions == std::max<int64_t>(size - capacity, 0),
            "the entries dropped by a lower capacity, counted");
  } else {
    require(posenc_set_primitive_cache_capacity(capacity) == POSENC_ERROR_INVALID_ARGUMENT &&
                posenc_primitive_cache_capacity() == before &&
                posenc_primitive_cache_evictions() == evictions,
            "a cache capacity below 1");
  }
  require(posenc_primitive_cache_size() <= posenc_primitive_cache_capacity(),
          "the cache holds more than its capacity");

  // bf16: an exact round trip for a bf16 value, NaN stays NaN.
  const uint8_t low = in.byte();
  const uint16_t bits = uint16_t(low | in.byte() << 8);
  const float value = posenc_bf16_to_f32(bits);
  if (std::isnan(value)) {
    require(std::isnan(posenc_bf16_to_f32(posenc_f32_to_bf16(value))), "bf16 NaN");
  } else {
    require(posenc_f32_to_bf16(value) == bits, "a bf16 round trip");
  }

  // The thread's kept state, freed: the next inputs' calls make it again.
  if (in.flag()) posenc_release_thread_memory();
}

}  // namespace posenc::fuzz
