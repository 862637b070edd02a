# Builds a two-layer tree in which the lower layer includes the upper one's header, runs the checker on
# it and requires it to fail naming the file, line and both layers; and the same tree without the
# upward include must pass.
file(REMOVE_RECURSE "${WORK}")
file(WRITE "${WORK}/framework/CMakeLists.txt" "set(KEF_LAYERS low high)\nset(KEF_PUBLIC_LAYERS low high)\n")
file(WRITE "${WORK}/framework/low/include/kef/low.hpp" "#pragma once\n#include \"kef/high.hpp\"\n")
file(WRITE "${WORK}/framework/high/include/kef/high.hpp" "#pragma once\n#include \"kef/low.hpp\"\n")
execute_process(COMMAND "${PYTHON}" "${CHECKER}" "${WORK}" RESULT_VARIABLE rc OUTPUT_VARIABLE out)
if(rc EQUAL 0)
  message(FATAL_ERROR "the checker passed a lower layer including a higher one:\n${out}")
endif()
if(NOT out MATCHES "framework/low/include/kef/low.hpp:2: layer `low` includes \"kef/high.hpp\" of the higher layer `high`")
  message(FATAL_ERROR "the checker's message does not name the file, line and layers:\n${out}")
endif()
file(WRITE "${WORK}/framework/low/include/kef/low.hpp" "#pragma once\n#include <vector>\n")
execute_process(COMMAND "${PYTHON}" "${CHECKER}" "${WORK}" RESULT_VARIABLE rc OUTPUT_VARIABLE out)
if(NOT rc EQUAL 0)
  message(FATAL_ERROR "the checker failed a tree that keeps the rule:\n${out}")
endif()
