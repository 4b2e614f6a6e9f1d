# shellcheck shell=bash disable=SC2034  # the lists are read by the scripts that source this
# Rows of `posenc bench` (comma-separated substrings of "op shape") that the
# many-core targets are measured by; sourced by targets.sh and
# compare_builds.sh.
# Every target's row at all threads, the 1-thread targets at 1 thread.
all_threads="padded,1D B8 H8 T512,plain B1 H8 T2048,kv8 Tq1,kv8 Tq4,T2048 d128,attention_family"
all_threads+=",2D B1 H4 64x64 d64,H12 64x64,C512 14x14"
one_thread="T2048 d128,2D B1 H4 64x64 d64,H12 64x64,C512 14x14"
# The rows the scaling stage times at other thread counts.
scaling="attention_bf16 plain B1 H32 T2048 d128,attention_f32 plain B1 H32 T2048 d128"
scaling+=",attention_2d_bf16 2D B1 H4 64x64 d64,attention_2d_bf16 2D B1 H12 64x64"
