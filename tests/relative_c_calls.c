/* posenc_relative_2d_desc_init called from C, then posenc_relative_logits_2d_maps
 * on the desc it fills: the defaults a C caller gets. */
#include "posenc/relative.h"

posenc_status c_relative_2d_maps_with_defaults(int64_t batch, int64_t heads, int64_t height,
                                               int64_t width, int64_t dim, const float* q,
                                               const float* row_table,
                                               const float* column_table, float* rel_h,
                                               float* rel_w) {
  posenc_relative_2d_desc desc;
  posenc_relative_2d_desc_init(&desc, batch, heads, height, width, dim);
  return posenc_relative_logits_2d_maps(NULL, &desc, q, row_table, column_table, rel_h, rel_w);
}
