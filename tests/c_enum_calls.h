/* The C ABI's entry points that take enums by value, called from C with the
 * enums given as int32_t. In C an enum value is an integer, so a caller may
 * pass any int, e.g. -1; in C++ a value outside the enum's range cannot even
 * be passed without undefined behaviour, so the tests pass them here. */
#ifndef POSENC_TESTS_C_ENUM_CALLS_H
#define POSENC_TESTS_C_ENUM_CALLS_H

#include "posenc/posenc.h"

#ifdef __cplusplus
extern "C" {
#endif

const char* c_status_string(int32_t status);
const char* c_isa_name(int32_t isa);
posenc_status c_isa_available(int32_t isa, int* available);
posenc_status c_set_max_isa(int32_t isa);
posenc_status c_context_create(int32_t isa, posenc_context** context);
/* A 4 x 4 table, 4 positions of 4 columns, base 10000. */
posenc_status c_sinusoid_table(int32_t layout, int32_t out_dtype, void* out);
/* A 2 x 2 map of 4 columns. */
posenc_status c_sinusoid_table_2d(int32_t layout, int32_t out_dtype, void* out);
/* x and out of [1, 4, 4]; concat: x of [1, 4, 2], out of [1, 4, 4]. */
posenc_status c_add_sinusoid(int32_t layout, const float* x, float* out);
posenc_status c_concat_sinusoid(int32_t layout, const float* x, float* out);
/* x, q, k and the outputs of [1, 4, 1, config->rotary_dim], offsets 0. */
posenc_status c_rope(const posenc_rope_config* config, int32_t layout, int32_t dtype,
                     const void* x, void* out);
posenc_status c_rope_qk(const posenc_rope_config* config, int32_t layout, int32_t dtype,
                        const void* q, void* q_out, const void* k, void* k_out);
posenc_status c_rope_cache_create_from_tables(int64_t rotary_dim, int32_t pairing,
                                              int64_t max_positions, const float* cos,
                                              const float* sin, posenc_rope_cache** cache);

#ifdef __cplusplus
}
#endif

#endif /* POSENC_TESTS_C_ENUM_CALLS_H */
