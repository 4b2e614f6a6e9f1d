# ctest script: every posenc command refuses a bad argument with status 2 and
# a message naming it, before doing any work (bench measures nothing first),
# and prints its usage with status 0 for -h and --help; --version prints the
# version.
# Variables: POSENC (the CLI).
# Each case: the arguments (separated by "|"), then "=>", then text the
# message must contain.
set(cases
  "info|extra=>'extra'"
  "demo|--x=>'--x'"
  "check|--x=>'--x'"
  "bench|--repeats|0=>--repeats"
  "bench|--repeats|-1=>--repeats"
  "bench|--repeats|1e3=>--repeats"
  "bench|--repeats| 5=>--repeats"
  "bench|--repeats|+5=>--repeats"
  "bench|--repeats|99999999999999999999=>--repeats"
  "bench|--repeats=>--repeats: missing value"
  "bench|--filter|--json=>--filter: missing value"
  "viz|--out|--prefix=x=>--out: missing value"
  "bench|--tag|benchmark=>--tag"
  "bench|--filter|no case has this=>--filter"
  "bench|--tag|check|--filter|T2048 d128=>--filter"
  "bench|--filter|T2048 d128,=>--filter: an empty part"
  "bench|--filter|,T2048=>--filter: an empty part"
  "bench|--filter|rope,,skew=>--filter: an empty part"
  "bench|--filter==>--filter: an empty part"
  "bench|--filter| =>--filter: an empty part"
  "bench|--filter|rope, no case has this=>--filter: 'no case has this' matches no case"
  "bench|--tag|check|--filter|rel_to_abs,T2048=>--filter: 'T2048' matches no case tagged 'check'"
  "bench|--repeats=0=>--repeats"
  "bench|--jsn=1=>'--jsn=1'"
  "bench|--isa|avx3=>--isa"
  "bench|--jsn=>'--jsn'"
  "bench|--phases|--json=>--phases: not with --json"
  "viz|--length|zero=>--length"
  "viz|--bogus=>unknown option '--bogus'"
  "viz|--bogus=1=>unknown option '--bogus'"
  "viz|extra=>unexpected argument 'extra'"
  "viz|--length=>--length: missing value"
  "viz|--seed|1|--seed=2=>--seed: given twice"
  "viz|--only|table|--only|bias=>--only: given twice"
  "viz|--out==>--out: expected a folder"
  "viz|--base|0x10=>--base"
  "viz|--base| 5=>--base"
  "viz|--base|+5=>--base"
  "viz|--base|inf=>--base"
  "viz|--only|table|--table|t.f32|--table-dim|2=>--table: drawn in the similarity figure"
  "viz|--only|similarity|--table|/nonexistent/t.f32|--table-dim|2=>--table: /nonexistent"
  "viz|--only|similarity|--table|.|--table-dim|2=>--table: .: not a regular file"
  "info|-h|extra=>'extra'"
  "info|--help|--help=>'--help'"
  "info|-h|-h|extra=>'extra'"
  "viz|--help|--bogus=>unknown option '--bogus'"
  "viz|-h|--length|0=>--length"
  "bench|--help|--bogus=>'--bogus'"
  "bench|--isa==>--isa: expected a path name"
  "--version|extra=>'extra'"
  "--help|extra=>'extra'"
  "-h|info=>'info'"
  "viz|--table=|--table-dim|2=>--table: expected a file"
  "viz|--prefix|../no such folder/x_=>--prefix"
  "viz|--prefix|sub/=>--prefix"
  "viz|--out|${POSENC}=>--out: '${POSENC}' is not a folder"
  "viz|--out|${POSENC}/sub=>--out: '${POSENC}' is not a folder"
  "bench|--filter|rope|--filter=skew=>--filter: given twice"
  "bench|--isa|baseline|--isa|baseline=>--isa: given twice"
  "bench|--tag=check|--tag|demo=>--tag: given twice"
  "bench|--repeats|1|--repeats|2=>--repeats: given twice"
  "nosuch=>'nosuch'")
foreach(case IN LISTS cases)
  string(FIND "${case}" "=>" arrow)
  string(SUBSTRING "${case}" 0 ${arrow} arguments)
  math(EXPR after "${arrow} + 2")
  string(SUBSTRING "${case}" ${after} -1 expected)
  string(REPLACE "|" ";" arguments "${arguments}")
  execute_process(COMMAND ${POSENC} ${arguments} TIMEOUT 20
                  RESULT_VARIABLE status OUTPUT_VARIABLE printed ERROR_VARIABLE error)
  string(FIND "${error}" "${expected}" at)
  if(NOT status EQUAL 2 OR at EQUAL -1 OR NOT printed STREQUAL "")
    message(FATAL_ERROR "posenc ${arguments}: status ${status}, stderr '${error}', "
                        "stdout '${printed}' (expected status 2, nothing printed, and "
                        "'${expected}' in the message)")
  endif()
endforeach()

foreach(command IN ITEMS info demo check bench viz)
  foreach(flag IN ITEMS -h --help)
    execute_process(COMMAND ${POSENC} ${command} ${flag} TIMEOUT 20
                    RESULT_VARIABLE status OUTPUT_VARIABLE printed ERROR_VARIABLE error)
    string(FIND "${printed}" "usage: posenc ${command}" at)
    if(NOT status EQUAL 0 OR at EQUAL -1)
      message(FATAL_ERROR "posenc ${command} ${flag}: status ${status}, stdout '${printed}', "
                          "stderr '${error}' (expected status 0 and its usage on stdout)")
    endif()
  endforeach()
endforeach()

execute_process(COMMAND ${POSENC} --version TIMEOUT 20
                RESULT_VARIABLE status OUTPUT_VARIABLE printed ERROR_VARIABLE error)
if(NOT status EQUAL 0 OR NOT printed MATCHES "^posenc [0-9]+\\.[0-9]+\\.[0-9]+\n$")
  message(FATAL_ERROR "posenc --version: status ${status}, stdout '${printed}', "
                      "stderr '${error}' (expected status 0 and 'posenc X.Y.Z')")
endif()

# Output that does not reach stdout (here a full disk) fails the command.
if(EXISTS /dev/full)
  execute_process(COMMAND ${POSENC} info OUTPUT_FILE /dev/full TIMEOUT 20
                  RESULT_VARIABLE status ERROR_VARIABLE error)
  if(NOT status EQUAL 1 OR NOT error MATCHES "cannot write the standard output")
    message(FATAL_ERROR "posenc info >/dev/full: status ${status}, stderr '${error}' "
                        "(expected status 1 and a message)")
  endif()
endif()

# info says whether the cap or the CPU limits the path: a cap at the top is
# never the reason; one at baseline is wherever the CPU has a better path.
execute_process(COMMAND ${CMAKE_COMMAND} -E env POSENC_MAX_ISA=avx512 ${POSENC} info
                TIMEOUT 20 OUTPUT_VARIABLE top)
execute_process(COMMAND ${POSENC} info TIMEOUT 20 OUTPUT_VARIABLE uncapped)
execute_process(COMMAND ${CMAKE_COMMAND} -E env POSENC_MAX_ISA=baseline ${POSENC} info
                TIMEOUT 20 OUTPUT_VARIABLE bottom)
if(NOT top MATCHES "why: the best path the CPU supports \\(the cap avx512 set by POSENC_MAX_ISA")
  message(FATAL_ERROR "info under a cap at avx512 said:\n${top}")
endif()
if(NOT uncapped MATCHES "path in use: baseline" AND
   NOT bottom MATCHES "why: capped at baseline by POSENC_MAX_ISA")
  message(FATAL_ERROR "info under a cap at baseline said:\n${bottom}")
endif()

# bench takes --name=VALUE as well as --name VALUE (as viz does).
execute_process(COMMAND ${POSENC} bench --tag=check --filter=rel_to_abs --isa=baseline
                        --repeats=1 --json
                TIMEOUT 60 RESULT_VARIABLE status OUTPUT_VARIABLE printed ERROR_VARIABLE error)
if(NOT status EQUAL 0 OR NOT printed MATCHES "\"op\": *\"rel_to_abs\"" OR
   NOT printed MATCHES "baseline")
  message(FATAL_ERROR "posenc bench --name=VALUE: status ${status}, stdout '${printed}', "
                      "stderr '${error}'")
endif()

# A POSENC_MAX_ISA the library does not take (it would only warn and run
# uncapped) fails every command before it runs; an empty one caps nothing.
execute_process(COMMAND ${CMAKE_COMMAND} -E env POSENC_MAX_ISA=avx-2 ${POSENC} check TIMEOUT 20
                RESULT_VARIABLE status OUTPUT_VARIABLE printed ERROR_VARIABLE error)
if(NOT status EQUAL 2 OR NOT error MATCHES "POSENC_MAX_ISA=avx-2" OR NOT printed STREQUAL "")
  message(FATAL_ERROR "posenc check under POSENC_MAX_ISA=avx-2: status ${status}, "
                      "stderr '${error}', stdout '${printed}'")
endif()
# "-h" as an option's value is no request for help.
foreach(command IN ITEMS "bench;--filter;-h" "viz;--prefix;-h;--only;table")
  execute_process(COMMAND ${CMAKE_COMMAND} -E env POSENC_MAX_ISA=avx-2 ${POSENC} ${command}
                  TIMEOUT 20 RESULT_VARIABLE status OUTPUT_VARIABLE printed ERROR_VARIABLE error)
  if(NOT status EQUAL 2 OR NOT error MATCHES "POSENC_MAX_ISA=avx-2" OR NOT printed STREQUAL "")
    message(FATAL_ERROR "posenc ${command} under POSENC_MAX_ISA=avx-2: status ${status}, "
                        "stderr '${error}', stdout '${printed}'")
  endif()
endforeach()
foreach(command IN ITEMS "bench;--help" "viz;-h")
  execute_process(COMMAND ${CMAKE_COMMAND} -E env POSENC_MAX_ISA=avx-2 ${POSENC} ${command}
                  TIMEOUT 20 RESULT_VARIABLE status OUTPUT_VARIABLE printed)
  if(NOT status EQUAL 0 OR NOT printed MATCHES "usage")
    message(FATAL_ERROR "posenc ${command} under POSENC_MAX_ISA=avx-2: status ${status}")
  endif()
endforeach()
execute_process(COMMAND ${CMAKE_COMMAND} -E env POSENC_MAX_ISA=avx-2 ${POSENC} info --help
                TIMEOUT 20 RESULT_VARIABLE status OUTPUT_VARIABLE printed)
if(NOT status EQUAL 0 OR NOT printed MATCHES "usage: posenc info")
  message(FATAL_ERROR "posenc info --help under POSENC_MAX_ISA=avx-2: status ${status}")
endif()
foreach(value IN ITEMS "" BASELINE auto)
  execute_process(COMMAND ${CMAKE_COMMAND} -E env POSENC_MAX_ISA=${value} ${POSENC} info
                  TIMEOUT 20 RESULT_VARIABLE status ERROR_VARIABLE error)
  if(NOT status EQUAL 0)
    message(FATAL_ERROR "posenc info under POSENC_MAX_ISA='${value}': status ${status}, "
                        "stderr '${error}'")
  endif()
endforeach()

# Above POSENC_MAX_THREADS (1024) info gives the threads the ops run on, and
# says OpenMP's default was capped.
execute_process(COMMAND ${CMAKE_COMMAND} -E env OMP_NUM_THREADS=2000 ${POSENC} info TIMEOUT 20
                RESULT_VARIABLE status OUTPUT_VARIABLE printed)
if(NOT status EQUAL 0 OR NOT printed MATCHES "threads: 1024 " OR
   NOT printed MATCHES "2000, capped at POSENC_MAX_THREADS")
  message(FATAL_ERROR "posenc info with OMP_NUM_THREADS=2000: status ${status}, said:\n${printed}")
endif()
