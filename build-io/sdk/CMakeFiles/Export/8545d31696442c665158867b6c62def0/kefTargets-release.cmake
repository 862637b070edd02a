#----------------------------------------------------------------
# Generated CMake target import file for configuration "Release".
#----------------------------------------------------------------

# Commands may need to know the format version.
set(CMAKE_IMPORT_FILE_VERSION 1)

# Import target "kef::framework" for configuration "Release"
set_property(TARGET kef::framework APPEND PROPERTY IMPORTED_CONFIGURATIONS RELEASE)
set_target_properties(kef::framework PROPERTIES
  IMPORTED_LOCATION_RELEASE "${_IMPORT_PREFIX}/lib/libkef.so.0.1.0"
  IMPORTED_SONAME_RELEASE "libkef.so.0.1"
  )

list(APPEND _cmake_import_check_targets kef::framework )
list(APPEND _cmake_import_check_files_for_kef::framework "${_IMPORT_PREFIX}/lib/libkef.so.0.1.0" )

# Commands beyond this point should not need to know the version.
set(CMAKE_IMPORT_FILE_VERSION)
