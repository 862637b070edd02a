# Builds a tree with one installed layer that has a private header (src/secret.hpp) and one plugin,
# and runs the checker on it: a plugin that includes the private header, and an installed header that
# includes it, must each fail naming the file and line; the same tree with the plugin including only
# the installed header and its own must pass.
file(REMOVE_RECURSE "${WORK}")
file(WRITE "${WORK}/framework/CMakeLists.txt" "set(KEF_LAYERS low)\nset(KEF_PUBLIC_LAYERS low)\n")
file(WRITE "${WORK}/framework/low/include/kef/low.hpp" "#pragma once\n#include <vector>\n")
file(WRITE "${WORK}/framework/low/src/secret.hpp" "#pragma once\n#include \"kef/low.hpp\"\n")
file(WRITE "${WORK}/framework/low/src/low.cpp" "#include \"kef/low.hpp\"\n#include \"secret.hpp\"\n")
file(WRITE "${WORK}/plugins/p/own.hpp" "#pragma once\n#include \"kef/low.hpp\"\n")

function(expect_failure what pattern)
  execute_process(COMMAND "${PYTHON}" "${CHECKER}" "${WORK}" RESULT_VARIABLE rc OUTPUT_VARIABLE out)
  if(rc EQUAL 0)
    message(FATAL_ERROR "the checker passed ${what}:\n${out}")
  endif()
  if(NOT out MATCHES "${pattern}")
    message(FATAL_ERROR "the checker's message for ${what} does not name the file and line:\n${out}")
  endif()
endfunction()

file(WRITE "${WORK}/plugins/p/p.cpp" "#include \"own.hpp\"\n#include \"secret.hpp\"\n")
expect_failure("a plugin including a private header"
               "plugins/p/p.cpp:2: plugin `p` includes \"secret.hpp\", which is private to `low`")
file(WRITE "${WORK}/plugins/p/p.cpp" "#include \"own.hpp\"\n")
file(WRITE "${WORK}/framework/low/include/kef/low.hpp" "#pragma once\n#include \"secret.hpp\"\n")
expect_failure("an installed header including a private one"
               "framework/low/include/kef/low.hpp:2: the installed header includes \"secret.hpp\", which is not installed")
file(WRITE "${WORK}/framework/low/include/kef/low.hpp" "#pragma once\n#include <vector>\n")
execute_process(COMMAND "${PYTHON}" "${CHECKER}" "${WORK}" RESULT_VARIABLE rc OUTPUT_VARIABLE out)
if(NOT rc EQUAL 0)
  message(FATAL_ERROR "the checker failed a tree that keeps the rule:\n${out}")
endif()
