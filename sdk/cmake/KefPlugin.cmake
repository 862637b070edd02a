# kef_add_plugin(<name> SOURCES <files...> [TESTED_SOURCES <files...>] [LIBRARIES <targets...>]
#                [OUTPUT_DIRECTORY <dir>] [NO_INSTALL])
#
# Builds the plugin library kef_<name>.so against kef::sdk with hidden visibility (only the two
# symbols KEF_PLUGIN declares are exported), the host's C++ standard, and no "lib" prefix.
#
# TESTED_SOURCES are sources that the plugin's own unit tests also link, to reach the classes behind
# the registration directly. They are compiled once, into the object library
# kef_plugin_<name>_objects, which the plugin links and a test links with
# target_link_libraries(<test> PRIVATE kef_plugin_<name>_objects) (the plugin's folder comes with it on
# the include path). Compiling them a second time in every test that needs them cost kef's CI several
# minutes, twice (once per build).
function(kef_add_plugin name)
  cmake_parse_arguments(ARG "NO_INSTALL" "OUTPUT_DIRECTORY" "SOURCES;TESTED_SOURCES;LIBRARIES" ${ARGN})
  if(NOT ARG_SOURCES)
    message(FATAL_ERROR "kef_add_plugin(${name}): SOURCES is required")
  endif()
  set(target kef_plugin_${name})
  if(TARGET kef::sdk)
    set(sdk kef::sdk)
  else()
    set(sdk kef_sdk)
  endif()
  set(properties
    CXX_STANDARD 20
    CXX_STANDARD_REQUIRED ON
    CXX_VISIBILITY_PRESET hidden
    VISIBILITY_INLINES_HIDDEN ON)
  add_library(${target} MODULE ${ARG_SOURCES})
  set_property(GLOBAL APPEND PROPERTY KEF_ALL_PLUGIN_TARGETS ${target})
  target_link_libraries(${target} PRIVATE ${sdk} ${ARG_LIBRARIES})
  if(ARG_TESTED_SOURCES)
    set(objects ${target}_objects)
    add_library(${objects} OBJECT ${ARG_TESTED_SOURCES})
    target_link_libraries(${objects} PUBLIC ${sdk} ${ARG_LIBRARIES})
    target_include_directories(${objects} INTERFACE "${CMAKE_CURRENT_SOURCE_DIR}")
    set_target_properties(${objects} PROPERTIES ${properties} POSITION_INDEPENDENT_CODE ON)
    target_link_libraries(${target} PRIVATE ${objects})
  endif()
  set_target_properties(${target} PROPERTIES
    PREFIX ""
    OUTPUT_NAME "kef_${name}"
    ${properties})
  if(ARG_OUTPUT_DIRECTORY)
    set_target_properties(${target} PROPERTIES LIBRARY_OUTPUT_DIRECTORY "${ARG_OUTPUT_DIRECTORY}")
  elseif(DEFINED KEF_PLUGIN_OUTPUT_DIR)
    set_target_properties(${target} PROPERTIES LIBRARY_OUTPUT_DIRECTORY "${KEF_PLUGIN_OUTPUT_DIR}")
  endif()
  if(DEFINED KEF_PLUGIN_INSTALL_DIR AND NOT ARG_NO_INSTALL)
    install(TARGETS ${target} LIBRARY DESTINATION "${KEF_PLUGIN_INSTALL_DIR}")
  endif()
endfunction()
