# Runs PROGRAM with ARGS (a list) and fails unless it exits with status EXPECTED and prints an
# error message on stderr (used by the tools.cli.exit_2.* tests).
execute_process(COMMAND ${PROGRAM} ${ARGS} RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE err)
if(NOT rc STREQUAL "${EXPECTED}")
  message(FATAL_ERROR "${PROGRAM} ${ARGS}: exit status ${rc}, expected ${EXPECTED}\nstdout: ${out}\nstderr: ${err}")
endif()
if(err STREQUAL "")
  message(FATAL_ERROR "${PROGRAM} ${ARGS}: exit status ${rc} but no message on stderr")
endif()
message(STATUS "exit ${rc}: ${err}")
