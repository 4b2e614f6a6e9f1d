/* posenc_position_bias_desc_init called from C with any int as the kind, as
 * a C caller may (see c_enum_calls.h), then posenc_position_bias on a 1-head
 * 2 x 2 problem into out[4]. */
#include "posenc/bias.h"

posenc_status c_position_bias_of_kind(int32_t kind, const float* table, float* out) {
  posenc_position_bias_desc desc;
  posenc_position_bias_desc_init(&desc, (posenc_position_bias_kind)kind, 1, 2, 2);
  return posenc_position_bias(NULL, &desc, table, out);
}
