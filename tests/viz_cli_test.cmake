# ctest script: `posenc viz --out DIR` writes every figure as a valid PNG and
# prints its path; a bad option exits with status 2.
# Variables: POSENC (the CLI), PNG_CHECK (posenc_png_check), OUT (a folder),
# EXPECTED_FILES (the file names it must write, separated by commas).
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
