# Warnings for posenc's own targets (never -march=native: ISA flags are only
# given to the per-ISA kernel objects, see PosencIsa.cmake).
function(posenc_warnings target)
  target_compile_options(${target} PRIVATE -Wall -Wextra -Wpedantic
    -Wno-psabi)  # -Wno-psabi: GCC's note on vector argument ABI across ISAs
endfunction()
