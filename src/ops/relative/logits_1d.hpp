// 1D relative logits (posenc_relative_logits_1d) by query-tile GEMMs and
// gathers; arguments validated by api/relative.cpp.
#pragma once

#include <cstdint>

#include "ops/relative/tile_1d.hpp"
#include "runtime/context.hpp"

namespace posenc::ops {

// geometry describes one head; table has table_heads (1 or heads) tables of
// relative_1d_table_rows(geometry) rows.
void relative_logits_1d(const ExecContext& ctx, int64_t batch, int64_t heads,
                        const Relative1dGeometry& geometry, const float* q, const float* table,
                        int64_t table_heads, float* out);

}  // namespace posenc::ops
