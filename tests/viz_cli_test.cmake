# ctest script: `posenc viz --out DIR` writes every figure as a valid PNG and
# prints its path; a bad option exits with status 2.
# Variables: POSENC (the CLI), PNG_CHECK (posenc_png_check), OUT (a folder),
# EXPECTED_FILES (the file names it must write, separated by commas),
# SANITIZE (POSENC_SANITIZE: the sanitizers the CLI was built with).
file(REMOVE_RECURSE ${OUT})
file(MAKE_DIRECTORY ${OUT})
# A learned table of 3 rows of 2 float32 values, written as text: the bytes
# "????" are the float 0x3F3F3F3F (0.747), "@@@@" 0x40404040 (3.004).
file(WRITE ${OUT}/table.f32 "????@@@@@@@@????????????")
execute_process(COMMAND ${POSENC} viz --out ${OUT} --length 24 --dim 20 --height 5 --width 7
                        --pixel 1,6 --table ${OUT}/table.f32 --table-dim 2
                RESULT_VARIABLE status OUTPUT_VARIABLE printed ERROR_VARIABLE error)
if(NOT status EQUAL 0)
  message(FATAL_ERROR "posenc viz failed (${status}): ${printed}${error}")
endif()
string(REPLACE "," ";" expected "${EXPECTED_FILES}")
set(paths "")
foreach(name IN LISTS expected)
  if(NOT EXISTS ${OUT}/${name})
    message(FATAL_ERROR "posenc viz did not write ${name}; it printed:\n${printed}")
  endif()
  string(FIND "${printed}" "${OUT}/${name}" at)
  if(at EQUAL -1)
    message(FATAL_ERROR "posenc viz did not print the path of ${name}:\n${printed}")
  endif()
  list(APPEND paths ${OUT}/${name})
endforeach()
file(GLOB partial ${OUT}/*.partial)
if(partial)
  message(FATAL_ERROR "partial files left: ${partial}")
endif()
execute_process(COMMAND ${PNG_CHECK} ${paths} RESULT_VARIABLE status)
if(NOT status EQUAL 0)
  message(FATAL_ERROR "invalid PNG files")
endif()
execute_process(COMMAND ${POSENC} viz --out ${OUT} --length zero
                RESULT_VARIABLE status ERROR_VARIABLE error)
if(NOT status EQUAL 2 OR NOT error MATCHES "--length")
  message(FATAL_ERROR "a bad option gave status ${status} and '${error}'")
endif()

# The title gives --base as it reads back: two bases that %g prints alike
# ("1"), with tables too alike to tell apart in colour, give two figures.
foreach(base IN ITEMS 1.0000000001 1.0000000002)
  execute_process(COMMAND ${POSENC} viz --out ${OUT}/base_${base} --only table --length 4 --dim 4
                          --base ${base}
                  RESULT_VARIABLE status ERROR_VARIABLE error)
  if(NOT status EQUAL 0)
    message(FATAL_ERROR "posenc viz --base ${base} failed (${status}): ${error}")
  endif()
endforeach()
execute_process(COMMAND ${CMAKE_COMMAND} -E compare_files
                        ${OUT}/base_1.0000000001/sinusoid_table.png
                        ${OUT}/base_1.0000000002/sinusoid_table.png
                RESULT_VARIABLE same)
if(same EQUAL 0)
  message(FATAL_ERROR "--base 1.0000000001 and 1.0000000002 drew the same figure (title)")
endif()

# OpenMP's default past POSENC_MAX_THREADS (here a million; it crashed
# libgomp): the similarity figure asks no more threads than the ops do.
execute_process(COMMAND ${CMAKE_COMMAND} -E env OMP_NUM_THREADS=1000000
                        ${POSENC} viz --out ${OUT}/threads --only similarity --length 8 --dim 8
                TIMEOUT 20 RESULT_VARIABLE status ERROR_VARIABLE error)
if(NOT status EQUAL 0 OR NOT EXISTS ${OUT}/threads/sinusoid_similarity.png)
  message(FATAL_ERROR "viz with OMP_NUM_THREADS=1000000 gave status ${status}, '${error}'")
endif()

# A --table of more rows than the figure takes (4096) is refused before it is
# read, and before the output folder is made.
set(big ${OUT}/big)
string(REPEAT "????" 4097 rows)
file(WRITE ${OUT}/rows4097.f32 "${rows}")
execute_process(COMMAND ${POSENC} viz --out ${big} --table ${OUT}/rows4097.f32 --table-dim 1
                RESULT_VARIABLE status ERROR_VARIABLE error)
if(NOT status EQUAL 2 OR NOT error MATCHES "--table: .*4097 rows.*more than 4096" OR
   EXISTS ${big})
  message(FATAL_ERROR "a table of 4097 rows gave status ${status} and '${error}'")
endif()

# A --table that cannot be read is refused before any figure is computed
# (the similarity of 4096 positions of 8192 dimensions takes over a minute).
execute_process(COMMAND ${POSENC} viz --out ${OUT}/unread --only similarity --length 4096
                        --dim 8192 --table ${OUT}/missing.f32 --table-dim 4
                TIMEOUT 20 RESULT_VARIABLE status ERROR_VARIABLE error)
if(NOT status EQUAL 2 OR NOT error MATCHES "--table: .*missing.f32")
  message(FATAL_ERROR "an unreadable --table gave status ${status} and '${error}'")
endif()

# Every figure or none: a folder where the last figure goes fails the run
# before any file is put in place, and an old figure stays as it was.
set(taken ${OUT}/taken)
file(MAKE_DIRECTORY ${taken}/relative_bias_cols.png)
file(WRITE ${taken}/sinusoid_table.png "old")
execute_process(COMMAND ${POSENC} viz --out ${taken} RESULT_VARIABLE status
                OUTPUT_VARIABLE printed ERROR_VARIABLE error)
file(READ ${taken}/sinusoid_table.png kept)
file(GLOB written ${taken}/*.png ${taken}/*.partial)
list(LENGTH written count)
if(NOT status EQUAL 1 OR NOT error MATCHES "relative_bias_cols.png: a folder is there" OR
   NOT printed STREQUAL "" OR NOT kept STREQUAL "old" OR NOT count EQUAL 2)
  message(FATAL_ERROR "a folder in a figure's place gave status ${status}, '${error}', "
                      "printed '${printed}', left ${written}")
endif()

# Paths that cannot reach stdout (a full disk): status 1 with the system's
# reason, the old figure stays as it was and no partial file is left.
if(EXISTS /dev/full)
  set(unprinted ${OUT}/unprinted)
  file(MAKE_DIRECTORY ${unprinted})
  file(WRITE ${unprinted}/sinusoid_table.png "old")
  execute_process(COMMAND ${POSENC} viz --out ${unprinted} --only table OUTPUT_FILE /dev/full
                  RESULT_VARIABLE status ERROR_VARIABLE error)
  file(READ ${unprinted}/sinusoid_table.png kept)
  file(GLOB written ${unprinted}/*)
  list(LENGTH written count)
  if(NOT status EQUAL 1 OR NOT error MATCHES "cannot write the standard output: No space left" OR
     NOT kept STREQUAL "old" OR NOT count EQUAL 1)
    message(FATAL_ERROR "viz >/dev/full gave status ${status}, '${error}', left ${written}")
  endif()
endif()

# A write that fails (files limited to 512 bytes) names the system's reason
# and leaves nothing behind.
set(limited ${OUT}/limited)
file(MAKE_DIRECTORY ${limited})
execute_process(COMMAND sh -c "trap '' XFSZ; ulimit -f 1; exec \"$0\" viz --out \"$1\" --only table"
                        ${POSENC} ${limited}
                RESULT_VARIABLE status ERROR_VARIABLE error)
file(GLOB written ${limited}/*)
if(NOT status EQUAL 1 OR NOT error MATCHES "File too large" OR written)
  message(FATAL_ERROR "a write past the file size limit gave status ${status}, '${error}', "
                      "left ${written}")
endif()

# The same failure in folders the run made removes them again.
set(made ${OUT}/made)
execute_process(COMMAND sh -c "trap '' XFSZ; ulimit -f 1; exec \"$0\" viz --out \"$1\" --only table"
                        ${POSENC} ${made}/deeper
                RESULT_VARIABLE status ERROR_VARIABLE error)
if(NOT status EQUAL 1 OR NOT error MATCHES "File too large" OR EXISTS ${made})
  message(FATAL_ERROR "a failed write into new folders gave status ${status}, '${error}', "
                      "and left ${made}: exists")
endif()

# A prefix that makes the longest figure name 255 bytes, the system's limit,
# is written (the partial files' names do not grow with it).
set(longest "")
foreach(name IN LISTS expected)
  string(LENGTH "${name}" length)
  string(LENGTH "${longest}" longest_length)
  if(length GREATER longest_length)
    set(longest ${name})
  endif()
endforeach()
string(LENGTH "${longest}" longest_length)
math(EXPR prefix_length "255 - ${longest_length}")
string(REPEAT "p" ${prefix_length} prefix)
set(long ${OUT}/long)
execute_process(COMMAND ${POSENC} viz --out ${long} --prefix ${prefix} --length 8 --dim 4
                        --height 3 --width 3
                RESULT_VARIABLE status OUTPUT_VARIABLE printed ERROR_VARIABLE error)
if(NOT status EQUAL 0 OR NOT EXISTS ${long}/${prefix}${longest})
  message(FATAL_ERROR "a 255-byte figure name gave status ${status}, '${error}'")
endif()

# One byte more: that name is refused before any figure is put in place
# (the others' names fit, and their partial files were written), and an
# old figure stays as it was.
string(APPEND prefix "p")
set(too_long ${OUT}/too_long)
file(MAKE_DIRECTORY ${too_long})
file(WRITE ${too_long}/${prefix}sinusoid_table.png "old")
execute_process(COMMAND ${POSENC} viz --out ${too_long} --prefix ${prefix} --length 8 --dim 4
                        --height 3 --width 3
                RESULT_VARIABLE status OUTPUT_VARIABLE printed ERROR_VARIABLE error)
file(READ ${too_long}/${prefix}sinusoid_table.png kept)
file(GLOB written ${too_long}/*)
list(LENGTH written count)
if(NOT status EQUAL 1 OR NOT error MATCHES "File name too long" OR NOT printed STREQUAL "" OR
   NOT kept STREQUAL "old" OR NOT count EQUAL 1)
  message(FATAL_ERROR "a 256-byte figure name gave status ${status}, '${error}', printed "
                      "'${printed}', left ${written}")
endif()

# Sizes the memory cannot hold (the address space limited to 400 MB): the
# run says so, with status 1, and makes no folder. (Not under the
# sanitizers, which reserve more address space than that.)
if(SANITIZE)
  return()
endif()
set(no_memory ${OUT}/no_memory)
string(CONCAT limited "ulimit -v 400000; "
              "exec \"$0\" viz --out \"$1\" --length 4096 --rel-dim 8192 --only logits")
execute_process(COMMAND sh -c "${limited}" ${POSENC} ${no_memory}
                RESULT_VARIABLE status ERROR_VARIABLE error)
if(NOT status EQUAL 1 OR NOT error MATCHES "out of memory for the sizes asked for" OR
   EXISTS ${no_memory})
  message(FATAL_ERROR "sizes past the memory gave status ${status}, '${error}'")
endif()
