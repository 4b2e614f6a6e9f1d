#include "c_enum_calls.h"

const char* c_status_string(int32_t status) { return posenc_status_string((posenc_status)status); }

const char* c_isa_name(int32_t isa) { return posenc_isa_name((posenc_isa)isa); }

posenc_status c_isa_available(int32_t isa, int* available) {
  return posenc_isa_available((posenc_isa)isa, available);
}

posenc_status c_set_max_isa(int32_t isa) { return posenc_set_max_isa((posenc_isa)isa); }

posenc_status c_context_create(int32_t isa, posenc_context** context) {
  return posenc_context_create((posenc_isa)isa, 1, context);
}

posenc_status c_sinusoid_table(int32_t layout, int32_t out_dtype, void* out) {
  return posenc_sinusoid_table(NULL, 4, 4, 0, 1e4, (posenc_sincos_layout)layout,
                               (posenc_dtype)out_dtype, out);
}

posenc_status c_sinusoid_table_2d(int32_t layout, int32_t out_dtype, void* out) {
  return posenc_sinusoid_table_2d(NULL, 2, 2, 4, 1e4, (posenc_sincos_layout)layout,
                                  (posenc_dtype)out_dtype, out);
}

posenc_status c_add_sinusoid(int32_t layout, const float* x, float* out) {
  return posenc_add_sinusoid(NULL, 1, 4, 4, 0, 1e4, (posenc_sincos_layout)layout, x, out);
}

posenc_status c_concat_sinusoid(int32_t layout, const float* x, float* out) {
  return posenc_concat_sinusoid(NULL, 1, 4, 2, 2, 0, 1e4, (posenc_sincos_layout)layout, x, out);
}

posenc_status c_rope(const posenc_rope_config* config, int32_t layout, int32_t dtype,
                     const void* x, void* out) {
  return posenc_rope(NULL, config, NULL, NULL, (posenc_rope_layout)layout, (posenc_dtype)dtype,
                     1, 4, 1, config->rotary_dim, x, out);
}

posenc_status c_rope_qk(const posenc_rope_config* config, int32_t layout, int32_t dtype,
                        const void* q, void* q_out, const void* k, void* k_out) {
  return posenc_rope_qk(NULL, config, NULL, NULL, (posenc_rope_layout)layout,
                        (posenc_dtype)dtype, 1, 4, 1, 1, config->rotary_dim, q, q_out, k, k_out);
}

posenc_status c_rope_cache_create_from_tables(int64_t rotary_dim, int32_t pairing,
                                              int64_t max_positions, const float* cos,
                                              const float* sin, posenc_rope_cache** cache) {
  return posenc_rope_cache_create_from_tables(NULL, rotary_dim, (posenc_rope_pairing)pairing,
                                              max_positions, cos, sin, cache);
}
