/* A small C program: sinusoidal encodings added to a batch of embeddings,
 * one decoding step with a position offset, and what a bad call reports. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>

#include <posenc/posenc.h>

enum { BATCH = 2, TOKENS = 6, DIM = 8 };

static int check(posenc_status status) {
  if (status != POSENC_OK) {
    fprintf(stderr, "posenc: %s: %s\n", posenc_status_string(status), posenc_last_error());
    return 0;
  }
  return 1;
}

int main(void) {
  float x[BATCH * TOKENS * DIM];
  for (int i = 0; i < BATCH * TOKENS * DIM; ++i) x[i] = 0.0f;

  /* Whole prompt: positions 0..TOKENS-1, in place. */
  if (!check(posenc_add_sinusoid(NULL, BATCH, TOKENS, DIM, 0, 10000.0,
                                 POSENC_SINCOS_INTERLEAVED, x, x))) {
    return EXIT_FAILURE;
  }
  printf("posenc %s on the %s path\n", posenc_version(), posenc_isa_name(posenc_best_isa()));
  for (int t = 0; t < TOKENS; ++t) {
    printf("token %d:", t);
    for (int c = 0; c < DIM; ++c) printf(" %6.3f", x[t * DIM + c]);
    printf("\n");
  }

  /* One decoding step at position TOKENS equals the next row of a table. */
  float step[DIM] = {0}, table[(TOKENS + 1) * DIM];
  if (!check(posenc_add_sinusoid(NULL, 1, 1, DIM, TOKENS, 10000.0, POSENC_SINCOS_INTERLEAVED,
                                 step, step)) ||
      !check(posenc_sinusoid_table(NULL, TOKENS + 1, DIM, 0, 10000.0,
                                   POSENC_SINCOS_INTERLEAVED, POSENC_F32, table))) {
    return EXIT_FAILURE;
  }
  float worst = 0.0f;
  for (int c = 0; c < DIM; ++c) worst = fmaxf(worst, fabsf(step[c] - table[TOKENS * DIM + c]));
  printf("decode step vs table row: max difference %g\n", worst);

  /* A bad call: nothing is written and the message names the argument. */
  const posenc_status status =
      posenc_add_sinusoid(NULL, BATCH, TOKENS, 0, 0, 10000.0, POSENC_SINCOS_INTERLEAVED, x, x);
  printf("dim = 0 gives \"%s\": %s\n", posenc_status_string(status), posenc_last_error());
  return status == POSENC_ERROR_INVALID_ARGUMENT && worst == 0.0f ? EXIT_SUCCESS : EXIT_FAILURE;
}
