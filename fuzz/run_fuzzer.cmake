# Runs a libFuzzer binary for a bounded time on a scratch copy of a corpus.
# Arguments (-D): FUZZER, CORPUS, SCRATCH, ARTIFACTS, SECONDS, DICT (optional).
file(REMOVE_RECURSE ${SCRATCH})
file(MAKE_DIRECTORY ${SCRATCH} ${ARTIFACTS})
file(GLOB seeds ${CORPUS}/*)
file(COPY ${seeds} DESTINATION ${SCRATCH})
set(extra)
if(DICT AND EXISTS ${DICT})
  list(APPEND extra -dict=${DICT})
endif()
execute_process(
  COMMAND ${FUZZER} -max_total_time=${SECONDS} -timeout=20 -rss_limit_mb=2560
          -print_final_stats=1 -artifact_prefix=${ARTIFACTS}/ ${extra} ${SCRATCH}
  RESULT_VARIABLE rc)
if(NOT rc EQUAL 0)
  message(FATAL_ERROR "${FUZZER} exited with ${rc}: a finding; its input is in ${ARTIFACTS}")
endif()
