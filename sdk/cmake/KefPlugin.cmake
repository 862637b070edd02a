# kef_add_plugin(<name> SOURCES <files...> [LIBRARIES <targets...>] [OUTPUT_DIRECTORY <dir>])
#
# Builds the plugin library kef_<name>.so against kef::sdk with hidden visibility (only the two
# symbols KEF_PLUGIN declares are exported), the host's C++ standard, and no "lib" prefix.
function(kef_add_plugin name)
  cmake_parse_arguments(ARG "NO_INSTALL" "OUTPUT_DIRECTORY" "SOURCES;LIBRARIES" ${ARGN})
  if(NOT ARG_SOURCES)
    message(FATAL_ERROR "kef_add_plugin(${name}): SOURCES is required")
  endif()
  set(target kef_plugin_${name})
  add_library(${target} MODULE ${ARG_SOURCES})
  set_property(GLOBAL APPEND PROPERTY KEF_ALL_PLUGIN_TARGETS ${target})
  if(TARGET kef::sdk)
    target_link_libraries(${target} PRIVATE kef::sdk ${ARG_LIBRARIES})
  else()
    target_link_libraries(${target} PRIVATE kef_sdk ${ARG_LIBRARIES})
  endif()
  set_target_properties(${target} PROPERTIES
    PREFIX ""
    OUTPUT_NAME "kef_${name}"
    CXX_STANDARD 20
    CXX_STANDARD_REQUIRED ON
    CXX_VISIBILITY_PRESET hidden
    VISIBILITY_INLINES_HIDDEN ON)
  if(ARG_OUTPUT_DIRECTORY)
    set_target_properties(${target} PROPERTIES LIBRARY_OUTPUT_DIRECTORY "${ARG_OUTPUT_DIRECTORY}")
  elseif(DEFINED KEF_PLUGIN_OUTPUT_DIR)
    set_target_properties(${target} PROPERTIES LIBRARY_OUTPUT_DIRECTORY "${KEF_PLUGIN_OUTPUT_DIR}")
  endif()
  if(DEFINED KEF_PLUGIN_INSTALL_DIR AND NOT ARG_NO_INSTALL)
    install(TARGETS ${target} LIBRARY DESTINATION "${KEF_PLUGIN_INSTALL_DIR}")
  endif()
endfunction()
